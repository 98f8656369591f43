"""Wrong Python values (docs/protocol.md section 7, "Wrong Python values").

Every public function and method of the package, given an argument of the
wrong Python type, raises ``TypeError`` naming the argument; given an
unknown capability group or method name, ``ValueError`` naming the argument
and the name. Never ``AttributeError``, ``KeyError``, a ``ProtocolError``
for the caller's own mistake, or a silent no-op. A stateful object that
refused a call is unchanged and keeps working.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import samgita_protocol as sp
from samgita_protocol.testing import ALL_GROUPS, FakeHost

ACTION = {"kind": "shell.exec", "description": "Run the tests"}
DELTA = sp.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d")
NOTE = sp.Notification(method="item/delta", params=DELTA)
REQUEST = sp.Request(
    id="r1",
    correlation_id="r1",
    method="thread/read",
    params=sp.ThreadReadParams(thread_id="t"),
)
RESPONSE = sp.response_to(REQUEST, result={"thread": {}, "turns": []})
ERROR_OBJECT = sp.ProtocolError(sp.ErrorCode.CONFLICT, "m").to_wire()


class Env:
    """An initialized Client and Server (every group), an approval request
    the Client holds for its reply, and a Replay."""

    def __init__(self) -> None:
        self.client = sp.Client(capabilities=ALL_GROUPS)
        self.server = sp.Server(
            FakeHost(capabilities=ALL_GROUPS), capabilities=ALL_GROUPS, host_id="h"
        )
        self.replay = sp.Replay("s")
        initialize = self.client.request("connection/initialize", {})
        self.deliver(initialize.data)
        self.approval = self._incoming()

    def deliver(self, data: bytes) -> list[sp.Effect]:
        """Client bytes to the Server, its answers back to the Client."""
        effects: list[sp.Effect] = []
        for answer in self.server.receive(data):
            effects.extend(self.client.receive(answer.data))
        return effects

    def _incoming(self) -> sp.Request:
        """An approval request the Client holds, waiting for its reply."""
        request = self.server.request(
            "approval/request",
            {
                "approval_id": "a1",
                "action": ACTION,
                "deadline": "2099-01-01T00:00:00Z",
            },
        )
        (effect,) = self.client.receive(request.data)
        assert isinstance(effect, sp.RequestReceived)
        return effect.request

    def state(self) -> tuple[Any, ...]:
        """Everything a caller can see of the three objects."""
        client, server, replay = self.client, self.server, self.replay
        return (
            client.state,
            client.generation,
            dict(client.pending),
            dict(client.incoming),
            dict(client.uncertain),
            client.buffered,
            client.checkpoints(),
            server.state,
            dict(server.outstanding),
            server.positions(),
            server.callback_failures,
            replay.first_cursor,
            replay.last_cursor,
            replay.retained_bytes,
        )

    def works(self) -> None:
        """A mutation round trip, a server notification and a replay append
        all still succeed."""
        request = self.client.request("thread/start", {}, command_id="cmd-works")
        (effect,) = self.deliver(request.data)
        assert isinstance(effect, sp.ResponseReceived), effect
        note = self.server.notify("item/delta", DELTA)
        assert self.client.receive(note.data)
        assert self.replay.append(NOTE).message.cursor == self.replay.last_cursor


@dataclass(frozen=True)
class Case:
    call: Callable[[Env], object]
    error: type[Exception]
    argument: str
    shows: str | None = None  # the refused name, for a ValueError


def _cases() -> dict[str, Case]:
    t, v = TypeError, ValueError
    return {
        # -- codec ---------------------------------------------------------------
        "decode(None)": Case(lambda e: sp.decode(None), t, "data"),  # type: ignore[arg-type]
        "decode(int)": Case(lambda e: sp.decode(5), t, "data"),  # type: ignore[arg-type]
        "decode(list)": Case(lambda e: sp.decode(["{}"]), t, "data"),  # type: ignore[arg-type]
        "decode(bound str)": Case(
            lambda e: sp.decode(b"{}", max_message_bytes="1"),  # type: ignore[arg-type]
            t,
            "max_message_bytes",
        ),
        "encode(None)": Case(lambda e: sp.encode(None), t, "message"),  # type: ignore[arg-type]
        "encode(dict)": Case(lambda e: sp.encode({"type": "request"}), t, "message"),  # type: ignore[arg-type]
        "encode(ErrorObject)": Case(lambda e: sp.encode(ERROR_OBJECT), t, "message"),  # type: ignore[arg-type]
        "encode(bound None)": Case(
            lambda e: sp.encode(NOTE, max_message_bytes=None),  # type: ignore[arg-type]
            t,
            "max_message_bytes",
        ),
        "validate(str)": Case(lambda e: sp.validate("x"), t, "message"),  # type: ignore[arg-type]
        "encode_response(None)": Case(
            lambda e: sp.encode_response(None, "thread/read"),  # type: ignore[arg-type]
            t,
            "response",
        ),
        "encode_response(method None)": Case(
            lambda e: sp.encode_response(RESPONSE, None),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "encode_response(method list)": Case(
            lambda e: sp.encode_response(RESPONSE, ["thread/read"]),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "encode_response(unknown method)": Case(
            lambda e: sp.encode_response(RESPONSE, "nope/x"), v, "method", "'nope/x'"
        ),
        "encode_response(notification method)": Case(
            lambda e: sp.encode_response(RESPONSE, "item/delta"),
            v,
            "method",
            "'item/delta'",
        ),
        "load_json(None)": Case(
            lambda e: sp.load_json(None, max_bytes=9),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "load_json(str)": Case(
            lambda e: sp.load_json("{}", max_bytes=9),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "load_json(max_bytes str)": Case(
            lambda e: sp.load_json(b"{}", max_bytes="9"),  # type: ignore[arg-type]
            t,
            "max_bytes",
        ),
        "load_json(max_depth None)": Case(
            lambda e: sp.load_json(b"{}", max_bytes=9, max_depth=None),  # type: ignore[arg-type]
            t,
            "max_depth",
        ),
        # -- schema helpers -------------------------------------------------------
        "convert_params(method None)": Case(
            lambda e: sp.convert_params(None, {}),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "convert_params(unknown method)": Case(
            lambda e: sp.convert_params("nope/x", {}), v, "method", "'nope/x'"
        ),
        "convert_params(value None)": Case(
            lambda e: sp.convert_params("thread/read", None),  # type: ignore[arg-type]
            t,
            "value",
        ),
        "convert_params(other Struct)": Case(
            lambda e: sp.convert_params("thread/read", sp.ThreadStartParams()),
            t,
            "value",
        ),
        "decode_result(method None)": Case(
            lambda e: sp.decode_result(None, {}),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "decode_result(unknown method)": Case(
            lambda e: sp.decode_result("nope/x", {}), v, "method", "'nope/x'"
        ),
        "decode_result(notification method)": Case(
            lambda e: sp.decode_result("item/delta", {}), v, "method", "'item/delta'"
        ),
        "decode_result(raw None)": Case(
            lambda e: sp.decode_result("thread/read", None),  # type: ignore[arg-type]
            t,
            "raw",
        ),
        "decode_result(raw bytes)": Case(
            lambda e: sp.decode_result("thread/read", b"{}"),  # type: ignore[arg-type]
            t,
            "raw",
        ),
        "request_methods(None)": Case(
            lambda e: sp.request_methods(None),  # type: ignore[arg-type]
            t,
            "group",
        ),
        "request_methods(list)": Case(
            lambda e: sp.request_methods(["sessions.v1"]),  # type: ignore[arg-type]
            t,
            "group",
        ),
        "request_methods(typo)": Case(
            lambda e: sp.request_methods("sessions"), v, "group", "'sessions'"
        ),
        "response_to(None)": Case(
            lambda e: sp.response_to(None, result={}),  # type: ignore[arg-type]
            t,
            "request",
        ),
        "response_to(dict)": Case(
            lambda e: sp.response_to({"id": "r1"}, result={}),  # type: ignore[arg-type]
            t,
            "request",
        ),
        "response_to(Notification)": Case(
            lambda e: sp.response_to(NOTE, result={}),  # type: ignore[arg-type]
            t,
            "request",
        ),
        # -- errors ---------------------------------------------------------------
        "ProtocolError(code None)": Case(
            lambda e: sp.ProtocolError(None, "m"),  # type: ignore[arg-type]
            t,
            "code",
        ),
        "ProtocolError(unknown code)": Case(
            lambda e: sp.ProtocolError("nope", "m"), v, "code", "'nope'"
        ),
        "ProtocolError(message None)": Case(
            lambda e: sp.ProtocolError("conflict", None),  # type: ignore[arg-type]
            t,
            "message",
        ),
        "ProtocolError(data list)": Case(
            lambda e: sp.ProtocolError("conflict", "m", data=[]),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "ProtocolError(origin None)": Case(
            lambda e: sp.ProtocolError("conflict", "m", origin=None),  # type: ignore[arg-type]
            t,
            "origin",
        ),
        "ProtocolError(origin unknown)": Case(
            lambda e: sp.ProtocolError("conflict", "m", origin="here"),  # type: ignore[arg-type]
            v,
            "origin",
            "'here'",
        ),
        "ProtocolError.from_wire(None)": Case(
            lambda e: sp.ProtocolError.from_wire(None),  # type: ignore[arg-type]
            t,
            "obj",
        ),
        "ProtocolError.from_wire(dict)": Case(
            lambda e: sp.ProtocolError.from_wire({"code": "conflict"}),  # type: ignore[arg-type]
            t,
            "obj",
        ),
        "ProtocolError.with_origin(None)": Case(
            lambda e: sp.ProtocolError("conflict", "m").with_origin(None),  # type: ignore[arg-type]
            t,
            "origin",
        ),
        # -- Client(...) ----------------------------------------------------------
        "Client(capabilities None)": Case(
            lambda e: sp.Client(capabilities=None),  # type: ignore[arg-type]
            t,
            "capabilities",
        ),
        "Client(capabilities str)": Case(
            lambda e: sp.Client(capabilities="sessions.v1"), t, "capabilities"
        ),
        "Client(capabilities int item)": Case(
            lambda e: sp.Client(capabilities=[5]),  # type: ignore[list-item]
            t,
            "capabilities",
        ),
        "Client(capabilities typo)": Case(
            lambda e: sp.Client(capabilities=["sessions"]),
            v,
            "capabilities",
            "'sessions'",
        ),
        "Client(required_capabilities typo)": Case(
            lambda e: sp.Client(capabilities=[], required_capabilities=["x"]),
            v,
            "required_capabilities",
            "'x'",
        ),
        "Client(versions None)": Case(
            lambda e: sp.Client(capabilities=[], versions=None),  # type: ignore[arg-type]
            t,
            "versions",
        ),
        "Client(versions int item)": Case(
            lambda e: sp.Client(capabilities=[], versions=[1]),  # type: ignore[list-item]
            t,
            "versions",
        ),
        "Client(versions unknown)": Case(
            lambda e: sp.Client(capabilities=[], versions=["2.0"]),
            v,
            "versions",
            "'2.0'",
        ),
        "Client(id_generator int)": Case(
            lambda e: sp.Client(capabilities=[], id_generator=5),  # type: ignore[arg-type]
            t,
            "id_generator",
        ),
        "Client(host_id int)": Case(
            lambda e: sp.Client(capabilities=[], host_id=5),  # type: ignore[arg-type]
            t,
            "host_id",
        ),
        "Client(checkpoints int)": Case(
            lambda e: sp.Client(capabilities=[], host_id="h", checkpoints=5),  # type: ignore[arg-type]
            t,
            "checkpoints",
        ),
        "Client(max_streams str)": Case(
            lambda e: sp.Client(capabilities=[], max_streams="1"),  # type: ignore[arg-type]
            t,
            "max_streams",
        ),
        "Client(request_timeout str)": Case(
            lambda e: sp.Client(capabilities=[], request_timeout="1"),  # type: ignore[arg-type]
            t,
            "request_timeout",
        ),
        # -- Client methods -------------------------------------------------------
        "client.request(method None)": Case(
            lambda e: e.client.request(None, {}),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "client.request(method list)": Case(
            lambda e: e.client.request(["thread/read"], {}),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "client.request(unknown method)": Case(
            lambda e: e.client.request("nope/x", {}), v, "method", "'nope/x'"
        ),
        "client.request(notification method)": Case(
            lambda e: e.client.request("item/delta", {}),
            v,
            "method",
            "'item/delta'",
        ),
        "client.request(params None)": Case(
            lambda e: e.client.request("thread/read", None), t, "params"
        ),
        "client.request(params other Struct)": Case(
            lambda e: e.client.request("thread/read", sp.ThreadStartParams()),
            t,
            "params",
        ),
        "client.request(initialize params None)": Case(
            lambda e: sp.Client(capabilities=[]).request("connection/initialize", None),
            t,
            "params",
        ),
        "client.request(id int)": Case(
            lambda e: e.client.request("thread/read", {"thread_id": "t"}, id=5),  # type: ignore[arg-type]
            t,
            "id",
        ),
        "client.request(correlation_id int)": Case(
            lambda e: e.client.request(
                "thread/read",
                {"thread_id": "t"},
                correlation_id=5,  # type: ignore[arg-type]
            ),
            t,
            "correlation_id",
        ),
        "client.request(causation_id int)": Case(
            lambda e: e.client.request(
                "thread/read",
                {"thread_id": "t"},
                causation_id=5,  # type: ignore[arg-type]
            ),
            t,
            "causation_id",
        ),
        "client.request(command_id int)": Case(
            lambda e: e.client.request("thread/start", {}, command_id=5),  # type: ignore[arg-type]
            t,
            "command_id",
        ),
        "client.request(project_ref int)": Case(
            lambda e: e.client.request(
                "thread/read",
                {"thread_id": "t"},
                project_ref=5,  # type: ignore[arg-type]
            ),
            t,
            "project_ref",
        ),
        "client.request(task_ref int)": Case(
            lambda e: e.client.request(
                "thread/read",
                {"thread_id": "t"},
                project_ref="p",
                task_ref=5,  # type: ignore[arg-type]
            ),
            t,
            "task_ref",
        ),
        "client.request(now str)": Case(
            lambda e: e.client.request("thread/read", {"thread_id": "t"}, now="x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "client.notify(method None)": Case(
            lambda e: e.client.notify(None, DELTA),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "client.notify(unknown method)": Case(
            lambda e: e.client.notify("nope", DELTA), v, "method", "'nope'"
        ),
        "client.notify(request method)": Case(
            lambda e: e.client.notify("thread/start", {}),
            v,
            "method",
            "'thread/start'",
        ),
        "client.notify(params None)": Case(
            lambda e: e.client.notify("item/delta", None), t, "params"
        ),
        "client.notify(stream_id int)": Case(
            lambda e: e.client.notify("item/delta", DELTA, stream_id=5, cursor=1),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "client.notify(cursor str)": Case(
            lambda e: e.client.notify("item/delta", DELTA, stream_id="s", cursor="1"),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
        "client.notify(correlation_id int)": Case(
            lambda e: e.client.notify("item/delta", DELTA, correlation_id=5),  # type: ignore[arg-type]
            t,
            "correlation_id",
        ),
        "client.receive(None)": Case(
            lambda e: e.client.receive(None),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "client.receive(int)": Case(
            lambda e: e.client.receive(5),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "client.receive(dict)": Case(
            lambda e: e.client.receive({"type": "response"}),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "client.receive(now str)": Case(
            lambda e: e.client.receive(b"{}", now="x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "client.reply(request None)": Case(
            lambda e: e.client.reply(None, {}),  # type: ignore[arg-type]
            t,
            "request",
        ),
        "client.reply(result None)": Case(
            lambda e: e.client.reply(e.approval, None), t, "result"
        ),
        "client.reply(now str)": Case(
            lambda e: e.client.reply(e.approval, {}, now="x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "client.reply_error(request None)": Case(
            lambda e: e.client.reply_error(None, sp.ProtocolError("conflict", "m")),  # type: ignore[arg-type]
            t,
            "request",
        ),
        "client.reply_error(error None)": Case(
            lambda e: e.client.reply_error(e.approval, None),  # type: ignore[arg-type]
            t,
            "error",
        ),
        "client.expire(None)": Case(
            lambda e: e.client.expire(None),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "client.expire(str)": Case(
            lambda e: e.client.expire("x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "client.resolve_uncertain(request_id None)": Case(
            lambda e: e.client.resolve_uncertain(None, "applied"),  # type: ignore[arg-type]
            t,
            "request_id",
        ),
        "client.resolve_uncertain(outcome None)": Case(
            lambda e: e.client.resolve_uncertain("x", None),  # type: ignore[arg-type]
            t,
            "outcome",
        ),
        "client.resolve_uncertain(outcome unknown)": Case(
            lambda e: e.client.resolve_uncertain("x", "maybe"),  # type: ignore[arg-type]
            v,
            "outcome",
            "'maybe'",
        ),
        "client.uncertain_reason(None)": Case(
            lambda e: e.client.uncertain_reason(None),  # type: ignore[arg-type]
            t,
            "request_id",
        ),
        "client.uncertain_reason(list)": Case(
            lambda e: e.client.uncertain_reason([]),  # type: ignore[arg-type]
            t,
            "request_id",
        ),
        "client.receive_replay(None)": Case(
            lambda e: e.client.receive_replay(None),  # type: ignore[arg-type]
            t,
            "response_or_result",
        ),
        "client.receive_replay(dict)": Case(
            lambda e: e.client.receive_replay({"events": []}),  # type: ignore[arg-type]
            t,
            "response_or_result",
        ),
        "client.drain(str)": Case(
            lambda e: e.client.drain("1"),  # type: ignore[arg-type]
            t,
            "max",
        ),
        "client.ack_cursor(stream_id None)": Case(
            lambda e: e.client.ack_cursor(None, 1),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "client.ack_cursor(stream_id list)": Case(
            lambda e: e.client.ack_cursor([], 1),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "client.ack_cursor(cursor str)": Case(
            lambda e: e.client.ack_cursor("s", "1"),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
        "client.ack(None)": Case(
            lambda e: e.client.ack(None),  # type: ignore[arg-type]
            t,
            "notification",
        ),
        "client.ack(a tuple)": Case(
            lambda e: e.client.ack(("s", 1)),  # type: ignore[arg-type]
            t,
            "notification",
        ),
        "client.ack(ephemeral)": Case(
            lambda e: e.client.ack(
                sp.Notification(
                    method="item/delta",
                    params=sp.ItemDeltaParams(
                        thread_id="t", turn_id="u", item_id="i", delta="d"
                    ),
                )
            ),
            v,
            "notification",
        ),
        "client.forget_stream(None)": Case(
            lambda e: e.client.forget_stream(None),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "client.forget_stream(int)": Case(
            lambda e: e.client.forget_stream(5),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        # -- Server(...) ----------------------------------------------------------
        "Server(handler None)": Case(
            lambda e: sp.Server(None, capabilities=[]),  # type: ignore[arg-type]
            t,
            "handler",
        ),
        "Server(capabilities None)": Case(
            lambda e: sp.Server(FakeHost(capabilities=[]), capabilities=None),  # type: ignore[arg-type]
            t,
            "capabilities",
        ),
        "Server(capabilities int item)": Case(
            lambda e: sp.Server(FakeHost(capabilities=[]), capabilities=[5]),  # type: ignore[list-item]
            t,
            "capabilities",
        ),
        "Server(capabilities typo)": Case(
            lambda e: sp.Server(FakeHost(capabilities=[]), capabilities=["sessions"]),
            v,
            "capabilities",
            "'sessions'",
        ),
        "Server(host_id int)": Case(
            lambda e: sp.Server(FakeHost(capabilities=[]), capabilities=[], host_id=5),  # type: ignore[arg-type]
            t,
            "host_id",
        ),
        "Server(connection_id int)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                connection_id=5,  # type: ignore[arg-type]
            ),
            t,
            "connection_id",
        ),
        "Server(durable None)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                durable=None,  # type: ignore[arg-type]
            ),
            t,
            "durable",
        ),
        "Server(positions int)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                positions=5,  # type: ignore[arg-type]
            ),
            t,
            "positions",
        ),
        "Server(id_generator int)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                id_generator=5,  # type: ignore[arg-type]
            ),
            t,
            "id_generator",
        ),
        "Server(on_callback_error int)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                on_callback_error=5,  # type: ignore[arg-type]
            ),
            t,
            "on_callback_error",
        ),
        "Server(max_streams str)": Case(
            lambda e: sp.Server(
                FakeHost(capabilities=[]),
                capabilities=[],
                max_streams="1",  # type: ignore[arg-type]
            ),
            t,
            "max_streams",
        ),
        # -- Server methods -------------------------------------------------------
        "server.receive(None)": Case(
            lambda e: e.server.receive(None),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "server.receive(int)": Case(
            lambda e: e.server.receive(5),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "server.receive(now str)": Case(
            lambda e: e.server.receive(b"{}", now="x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "server.receive(dict)": Case(
            lambda e: e.server.receive({}),  # type: ignore[arg-type]
            t,
            "data",
        ),
        "server.notify(method None)": Case(
            lambda e: e.server.notify(None, DELTA),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "server.notify(unknown method)": Case(
            lambda e: e.server.notify("nope", DELTA), v, "method", "'nope'"
        ),
        "server.notify(request method)": Case(
            lambda e: e.server.notify("thread/start", {}),
            v,
            "method",
            "'thread/start'",
        ),
        "server.notify(params None)": Case(
            lambda e: e.server.notify("item/delta", None),  # type: ignore[arg-type]
            t,
            "params",
        ),
        "server.notify(stream_id int)": Case(
            lambda e: e.server.notify("item/delta", DELTA, stream_id=5, cursor=1),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "server.notify(cursor str)": Case(
            lambda e: e.server.notify("item/delta", DELTA, stream_id="s", cursor="1"),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
        "server.request(method None)": Case(
            lambda e: e.server.request(None, {}),  # type: ignore[arg-type]
            t,
            "method",
        ),
        "server.request(unknown method)": Case(
            lambda e: e.server.request("nope", {}), v, "method", "'nope'"
        ),
        "server.request(notification method)": Case(
            lambda e: e.server.request("item/delta", {}),
            v,
            "method",
            "'item/delta'",
        ),
        "server.request(params None)": Case(
            lambda e: e.server.request("request/cancel", None),  # type: ignore[arg-type]
            t,
            "params",
        ),
        "server.request(id int)": Case(
            lambda e: e.server.request("request/cancel", {"request_id": "x"}, id=5),  # type: ignore[arg-type]
            t,
            "id",
        ),
        "server.request(correlation_id int)": Case(
            lambda e: e.server.request(
                "request/cancel",
                {"request_id": "x"},
                correlation_id=5,  # type: ignore[arg-type]
            ),
            t,
            "correlation_id",
        ),
        "server.request(now str)": Case(
            lambda e: e.server.request("request/cancel", {"request_id": "x"}, now="x"),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "server.expire(None)": Case(
            lambda e: e.server.expire(None),  # type: ignore[arg-type]
            t,
            "now",
        ),
        "server.forget_stream(None)": Case(
            lambda e: e.server.forget_stream(None),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "server.forget_stream(list)": Case(
            lambda e: e.server.forget_stream([]),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        # -- Replay ---------------------------------------------------------------
        "Replay(stream_id None)": Case(
            lambda e: sp.Replay(None),  # type: ignore[arg-type]
            t,
            "stream_id",
        ),
        "Replay(stream_id empty)": Case(lambda e: sp.Replay(""), v, "stream_id"),
        "Replay(max_events str)": Case(
            lambda e: sp.Replay("s", max_events="1"),  # type: ignore[arg-type]
            t,
            "max_events",
        ),
        "Replay(max_bytes None)": Case(
            lambda e: sp.Replay("s", max_bytes=None),  # type: ignore[arg-type]
            t,
            "max_bytes",
        ),
        "Replay(max_message_bytes str)": Case(
            lambda e: sp.Replay("s", max_message_bytes="1"),  # type: ignore[arg-type]
            t,
            "max_message_bytes",
        ),
        "replay.append(None)": Case(
            lambda e: e.replay.append(None),  # type: ignore[arg-type]
            t,
            "notification",
        ),
        "replay.append(Request)": Case(
            lambda e: e.replay.append(REQUEST),  # type: ignore[arg-type]
            t,
            "notification",
        ),
        "replay.append(dict)": Case(
            lambda e: e.replay.append({"method": "item/delta"}),  # type: ignore[arg-type]
            t,
            "notification",
        ),
        "replay.since(str)": Case(
            lambda e: e.replay.since("x"),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
        "replay.since(None)": Case(
            lambda e: e.replay.since(None),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
        "replay.since(max_bytes str)": Case(
            lambda e: e.replay.since(0, max_bytes="1"),  # type: ignore[arg-type]
            t,
            "max_bytes",
        ),
        "replay.page(str)": Case(
            lambda e: e.replay.page("x"),  # type: ignore[arg-type]
            t,
            "cursor",
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_a_wrong_value_is_named_and_changes_nothing(name: str) -> None:
    case = CASES[name]
    env = Env()
    before = env.state()
    with pytest.raises(case.error) as info:
        case.call(env)
    assert type(info.value) is case.error, info.value
    message = str(info.value)
    assert f"expected {case.argument} " in message, message
    if case.shows is not None:
        assert case.shows in message, message
    assert env.state() == before
    env.works()


def test_a_context_notify_names_the_wrong_argument() -> None:
    """``RequestContext.notify`` raises what `Server.notify` raises; let
    through, the host failed (``internal_error``), and the Server is fine."""
    seen: list[Exception] = []

    class Host(FakeHost):
        def thread_start(
            self, params: sp.ThreadStartParams, context: sp.RequestContext
        ) -> Any:
            for method, notify_params in ((None, DELTA), ("nope", DELTA)):
                try:
                    context.notify(method, notify_params)  # type: ignore[arg-type]
                except Exception as exc:  # noqa: BLE001 - what it raised is the test
                    seen.append(exc)
            try:
                context.notify("item/delta", None)
            except Exception as exc:  # noqa: BLE001
                seen.append(exc)
            return super().thread_start(params, context)

    client = sp.Client(capabilities=ALL_GROUPS)
    server = sp.Server(Host(capabilities=ALL_GROUPS), capabilities=ALL_GROUPS)
    for method, command_id in (("connection/initialize", None), ("thread/start", "c1")):
        message = client.request(method, {}, command_id=command_id)
        for answer in server.receive(message.data):
            client.receive(answer.data)
    assert [type(e) for e in seen] == [TypeError, ValueError, TypeError]
    assert [str(e).split(" to be")[0] for e in seen] == [
        "expected method",
        "expected method",
        "expected params",
    ]
    assert server.callback_failures == 0


def test_every_public_callable_is_covered() -> None:
    """Each public function and each public method of a public class of
    ``samgita_protocol`` that takes an argument has a case above (so a new
    one cannot skip the policy)."""
    covered = {name.split("(")[0] for name in CASES}
    exempt = {
        # no arguments
        "json_schema",
        "client.disconnect",
        "client.reconnect",
        "client.checkpoints",
        "server.disconnect",
        "server.positions",
        "ProtocolError.to_wire",
    }
    expected: set[str] = set()
    for export in sp.__all__:
        value = getattr(sp, export)
        if inspect.isroutine(value) and export not in exempt:
            expected.add(export)
    for cls, prefix in (
        (sp.Client, "client"),
        (sp.Server, "server"),
        (sp.Replay, "replay"),
        (sp.ProtocolError, "ProtocolError"),
    ):
        for attr in vars(cls):
            if not attr.startswith("_") and callable(getattr(cls, attr)):
                expected.add(f"{prefix}.{attr}")
    expected -= exempt
    missing = sorted(expected - covered)
    assert not missing, missing
