"""The bridge over real Codex 0.163.0 traffic recorded by tools/record_codex.py."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from samgita_protocol import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    ErrorCode,
    InitializeParams,
    InputItem,
    Notification,
    ProtocolError,
    Request,
    Response,
    StreamResumeParams,
    ThreadStartParams,
    TurnInterruptParams,
    TurnStartParams,
    encode,
)

from samgita_protocol_codex import (
    ApprovalResolved,
    CodexBridge,
    CodexUnmapped,
    ToCodex,
    ToNative,
)

RECORDINGS = Path(__file__).parent / "recordings"
NOW = dt.datetime(2026, 12, 3, 10, 0, tzinfo=dt.UTC)
GROUPS = ["sessions.v1", "streaming.v1", "approvals.v1", "project_events.v1"]


def _load(name: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in (RECORDINGS / f"{name}.jsonl").read_text().splitlines()
    ]


class Harness:
    """Plays a recording's Codex side into the bridge, driving the native side."""

    def __init__(self, **context: str) -> None:
        # context: causation_id, project_ref, task_ref put on every request
        self.context = context
        self.bridge = CodexBridge(host_id="codex-test", now=lambda: NOW)
        self.native: list[
            Any
        ] = []  # ToNative messages, ApprovalResolved, CodexUnmapped
        self.codex_sent: list[dict[str, Any]] = []
        self.thread_id = ""
        self.turn_id = ""
        self.n = 0

    def take(self, outputs: list[Any]) -> None:
        for out in outputs:
            if isinstance(out, ToCodex):
                assert out.data.endswith(b"\n") and out.data.count(b"\n") == 1
                self.codex_sent.append(json.loads(out.data))
            elif isinstance(out, ToNative):
                # every native output is a valid envelope, handed out with
                # exactly the bytes the core encoder gives for it
                assert out.data == encode(out.message)
                self.native.append(out.message)
                self._learn(out.message)
            else:
                self.native.append(out)

    def _learn(self, message: Any) -> None:
        if isinstance(message, Response) and message.result is not msgspec.UNSET:
            result = message.result
            if hasattr(result, "thread"):
                self.thread_id = result.thread.thread_id
            if hasattr(result, "turn"):
                self.turn_id = result.turn.turn_id

    def request(
        self, method: str, params: msgspec.Struct, *, mutation: bool
    ) -> Request:
        self.n += 1
        req = Request(
            method=method,
            id=f"n{self.n}",
            correlation_id=f"c{self.n}",
            params=params,
            command_id=f"cmd{self.n}" if mutation else msgspec.UNSET,
            **self.context,
        )
        self.take(self.bridge.native_request(req))
        return req

    def play(self, name: str, *, approve: bool | None = None) -> None:
        for entry in _load(name):
            msg = entry["msg"]
            if entry["dir"] == "recv":
                self.take(self.bridge.receive_codex(json.dumps(msg).encode()))
            elif entry["dir"] == "send" and "method" in msg and "id" in msg:
                self._native_for(msg)
            elif entry["dir"] == "send" and "result" in msg:
                ask = next(m for m in reversed(self.native) if isinstance(m, Request))
                assert approve is not None
                self._answer(ask, approve)

    def _native_for(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        text = [InputItem(type="text", text="hi")]
        if method == "initialize":
            self.request(
                "connection/initialize",
                InitializeParams(versions=["1.0"], capabilities=GROUPS),
                mutation=False,
            )
        elif method == "thread/start":
            self.request("thread/start", ThreadStartParams(), mutation=True)
        elif method == "turn/start":
            self.request(
                "turn/start",
                TurnStartParams(thread_id=self.thread_id, input=text),
                mutation=True,
            )
        elif method == "turn/interrupt":
            self.request(
                "turn/interrupt",
                TurnInterruptParams(thread_id=self.thread_id, turn_id=self.turn_id),
                mutation=True,
            )
        else:  # pragma: no cover - a new scenario needs a driver line
            raise AssertionError(method)

    def _answer(self, ask: Request, approve: bool) -> None:
        params = ask.params
        assert isinstance(params, ApprovalRequestParams)
        result = ApprovalRequestResult(
            approval_id=params.approval_id,
            action=params.action,
            decision="approve" if approve else "deny",
        )
        self.take(
            self.bridge.native_response(
                Response(id=ask.id, correlation_id=ask.correlation_id, result=result)
            )
        )

    def notifications(self, method: str) -> list[Notification]:
        return [
            m for m in self.native if isinstance(m, Notification) and m.method == method
        ]


def _sequenced(h: Harness) -> list[Notification]:
    return [
        m
        for m in h.native
        if isinstance(m, Notification) and m.cursor is not msgspec.UNSET
    ]


def test_turn_streams_native_deltas_with_contiguous_cursors() -> None:
    h = Harness()
    h.play("turn")
    sent = [m.get("method") for m in h.codex_sent]
    assert sent == ["initialize", "initialized", "thread/start", "turn/start"]
    assert [m["id"] for m in h.codex_sent if "id" in m] == [0, 1, 2]
    assert "jsonrpc" not in h.codex_sent[0]
    init = h.native[0]
    assert isinstance(init, Response)
    assert sorted(init.result.capabilities) == [
        "approvals.v1",
        "sessions.v1",
        "streaming.v1",
    ]
    deltas = h.notifications("item/delta")
    assert "".join(d.params.delta for d in deltas) == "Hello from the scripted model."
    sequenced = _sequenced(h)
    assert [n.cursor for n in sequenced] == list(range(1, len(sequenced) + 1))
    # the bridge instance's id and the Codex thread id
    sid = f"codex-{h.bridge.instance_id}-{h.thread_id}"
    assert {n.stream_id for n in sequenced} == {sid}
    assert h.bridge.stream_id(h.thread_id) == sid
    completed = [
        n
        for n in h.notifications("item/completed")
        if n.params.item.type == "agentMessage"
    ]
    assert completed[-1].params.item.text == "Hello from the scripted model."
    assert completed[-1].params.item.status == "completed"
    assert h.notifications("turn/completed")[-1].params.turn.status == "completed"
    # thread/status/changed has a row: idle/active are counted, not forwarded
    assert h.bridge.unmapped_notifications["thread/status/changed"] == 0
    assert sum(
        n for k, n in h.bridge.not_forwarded.items()
        if k.startswith("thread/status/changed:")
    ) >= 1  # fmt: skip
    assert any(isinstance(m, CodexUnmapped) for m in h.native)


@pytest.mark.parametrize(("name", "approve", "decision"), [
    ("approval_accept", True, "accept"),
    ("approval_decline", False, "decline"),
])  # fmt: skip
def test_approval_round_trip(name: str, approve: bool, decision: str) -> None:
    h = Harness()
    h.play(name, approve=approve)
    asks = [m for m in h.native if isinstance(m, Request)]
    assert len(asks) == 1 and asks[0].method == "approval/request"
    params = asks[0].params
    assert params.action.kind == "command_execution"
    assert "touch" in params.action.description
    assert params.deadline == "2026-12-03T10:05:00Z"
    answer = [m for m in h.codex_sent if "result" in m]
    assert answer == [{"id": 0, "result": {"decision": decision}}]
    # Codex's server-request id 0 coexisted with the bridge's own request id 0
    assert h.codex_sent[0]["id"] == 0
    recorded_note = [e["msg"] for e in _load(name) if e["dir"] == "note"]
    assert recorded_note == [{"marker_exists": approve}]


def test_interrupt_ends_in_an_interrupted_turn() -> None:
    h = Harness()
    h.play("interrupt")
    responses = [
        m for m in h.native if isinstance(m, Response) and m.result is not msgspec.UNSET
    ]
    assert responses[-1].result.interrupt_status == "requested"
    assert h.notifications("turn/completed")[-1].params.turn.status == "interrupted"


def test_stream_resume_from_the_bridge_replay() -> None:
    h = Harness()
    h.play("turn")
    total = len(_sequenced(h))
    h.bridge.native_connected()  # the native side reconnects ...
    h.request(
        "connection/initialize",
        InitializeParams(versions=["1.0"], capabilities=GROUPS),
        mutation=False,
    )
    assert [m.get("method") for m in h.codex_sent].count(
        "initialize"
    ) == 1  # Codex not re-initialized
    h.request(
        "stream/resume",
        StreamResumeParams(
            stream_id=f"codex-{h.bridge.instance_id}-{h.thread_id}", cursor=2
        ),
        mutation=False,
    )
    page = h.native[-1].result
    assert [e.cursor for e in page.events] == list(range(3, total + 1))
    assert page.has_more is False


def test_refused_methods_name_the_method() -> None:
    h = Harness()
    h.play("turn")
    from samgita_protocol import CancelParams

    h.request("request/cancel", CancelParams(request_id="x"), mutation=False)
    error = h.native[-1].error
    assert error.code == ErrorCode.UNSUPPORTED and "request/cancel" in error.message
    h.request("thread/start", ThreadStartParams(metadata={"k": 1}), mutation=True)
    assert h.native[-1].error.data["field"] == "metadata"


def test_unsupported_codex_server_request_gets_an_error_naming_it() -> None:
    h = Harness()
    h.play("turn")
    line = b'{"id":7,"method":"item/tool/requestUserInput","params":{}}'
    out = h.bridge.receive_codex(line)
    reply = json.loads(out[0].data)
    assert (
        reply["id"] == 7 and "item/tool/requestUserInput" in reply["error"]["message"]
    )
    assert out[1] == CodexUnmapped(kind="request", method="item/tool/requestUserInput")


def test_codex_link_cut_mid_turn_is_ambiguous_and_nothing_is_resent() -> None:
    h = Harness()
    entries = _load("turn")
    cut = next(
        i
        for i, e in enumerate(entries)
        if e["dir"] == "send" and e["msg"].get("method") == "turn/start"
    )
    for entry in entries[: cut + 1]:
        msg = entry["msg"]
        if entry["dir"] == "recv":
            h.take(h.bridge.receive_codex(json.dumps(msg).encode()))
        elif "method" in msg and "id" in msg:
            h._native_for(msg)
    sent_before = len(h.codex_sent)
    h.take(h.bridge.codex_disconnected())
    assert h.native[-1].error.code == ErrorCode.AMBIGUOUS_DISCONNECT
    assert len(h.codex_sent) == sent_before
    h.take(h.bridge.codex_connected())
    assert [m.get("method") for m in h.codex_sent[sent_before:]] == ["initialize"]
    assert h.codex_sent[-1]["id"] == 3  # ids keep counting, never reused


def test_approval_settled_by_codex_refuses_a_late_native_answer() -> None:
    h = Harness()
    entries = _load("approval_accept")
    stop = next(
        i for i, e in enumerate(entries) if e["dir"] == "send" and "result" in e["msg"]
    )
    for entry in entries[:stop]:
        msg = entry["msg"]
        if entry["dir"] == "recv":
            h.take(h.bridge.receive_codex(json.dumps(msg).encode()))
        elif "method" in msg and "id" in msg:
            h._native_for(msg)
    ask = next(m for m in h.native if isinstance(m, Request))
    out = h.bridge.receive_codex(
        b'{"method":"serverRequest/resolved","params":{"requestId":0,"threadId":"t"}}'
    )
    assert out == [ApprovalResolved(request_id=ask.id)]
    with pytest.raises(ProtocolError) as info:
        h._answer(ask, True)
    assert info.value.code == ErrorCode.UNKNOWN_REQUEST
    assert not [
        m for m in h.codex_sent if "result" in m
    ]  # the bridge never answered itself


def test_every_response_echoes_the_whole_request_identity() -> None:
    # A native client refuses a response that does not echo correlation_id,
    # command_id, causation_id, project_ref and task_ref exactly.
    h = Harness(causation_id="why-1", project_ref="proj-1", task_ref="task-1")
    h.play("turn")
    responses = [m for m in h.native if isinstance(m, Response)]
    assert len(responses) >= 3
    requests = {f"n{i}": None for i in range(1, h.n + 1)}
    for response in responses:
        assert response.id in requests
        assert (response.causation_id, response.project_ref, response.task_ref) == (
            "why-1",
            "proj-1",
            "task-1",
        )
        assert response.correlation_id == "c" + response.id[1:]
