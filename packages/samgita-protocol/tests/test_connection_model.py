"""Model-based test of the Client over a lossy, duplicating, reordering
"network" with a scripted peer (built from the codec, independent of the
Server).

Rules: requests (mutations, reads, cancels), deliveries (with duplicates),
responses in any order (with duplicates), conflicting replies, garbage,
drops, disconnects with reconnects, expiries, resolutions, incoming
approvals and stream notifications. After every step the invariants of
docs/protocol.md section 10 are checked: no effect for an id that was not
handed out, no structure past its bound, every handed-out mutation in
exactly one of pending / response / error / uncertain, uncertain commands
cleared only by resolve_uncertain, and a failed call changed nothing.

Runs 1,000 derandomized examples when ``CI`` is set, fewer locally.
"""

from __future__ import annotations

import json
import os
from typing import Any

import msgspec
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from samgita_protocol import (
    Client,
    ConnectionState,
    Effect,
    ErrorCode,
    ErrorReceived,
    NotificationReceived,
    ProtocolError,
    Request,
    RequestReceived,
    ResponseReceived,
    SendMessage,
    Server,
    decode,
    encode,
)
from samgita_protocol.testing import FakeHost

ALL = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]
LIMITS = {
    "max_outstanding_requests": 4,
    "max_uncertain_commands": 3,
    "max_completed": 6,
    "max_incoming_requests": 2,
    "max_buffered_notifications": 4,
    "max_streams": 2,
    "max_stream_hashes": 4,
    "request_timeout": 10.0,
}
THREAD = {"thread_id": "thr-1", "status": "idle", "created_at": "2026-01-15T09:31:00Z"}
ACTION = {"kind": "shell.exec", "description": "Run the tests"}
ECHO = ("command_id", "causation_id", "project_ref", "task_ref")

# Errors a receive of network input may raise (everything else is a bug).
RECEIVE_ERRORS = {
    ErrorCode.UNKNOWN_RESPONSE,
    ErrorCode.CONFLICTING_RESPONSE,
    ErrorCode.MISMATCHED_RESPONSE,
    ErrorCode.INVALID_JSON,
    ErrorCode.INVALID_MESSAGE,
    ErrorCode.CURSOR_GAP,
    ErrorCode.REPLAY_CONFLICT,
    ErrorCode.LIMIT_EXCEEDED,
}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def result_for(request: Request) -> dict[str, Any]:
    """What the scripted peer answers (a valid, bound result)."""
    method = request.method
    params = request.params
    if method == "thread/start":
        return {"thread": THREAD}
    if method == "thread/read":
        return {"thread": {**THREAD, "thread_id": params.thread_id}, "turns": []}
    if method == "request/cancel":
        return {"request_id": params.request_id, "cancel_status": "already_finished"}
    if method == "connection/initialize":
        return {
            "version": "1.0",
            "capabilities": ALL,
            "connection_id": "conn",
            "host_id": "h",
        }
    raise AssertionError(method)


def respond(
    request_bytes: bytes, *, error: bool = False, invalid: bool = False
) -> bytes:
    request = decode(request_bytes)
    assert isinstance(request, Request)
    env: dict[str, Any] = {
        "schema_version": "1.0",
        "type": "response",
        "id": request.id,
        "correlation_id": request.correlation_id,
    }
    for key in ECHO:
        value = getattr(request, key)
        if value is not msgspec.UNSET:
            env[key] = value
    if error:
        env["error"] = {"code": "not_found", "message": "no such thing"}
    elif invalid:
        # Schema-valid for no method: the result check fails.
        env["result"] = {"bogus": True}
    else:
        env["result"] = result_for(request)
    return dumps(env)


def conflicting(response_bytes: bytes) -> bytes:
    env = json.loads(response_bytes)
    if "result" in env:
        del env["result"]
        env["error"] = {"code": "conflict", "message": "other"}
    else:
        env["error"] = {"code": "timeout", "message": "other"}
    return dumps(env)


def snapshot(client: Client) -> tuple[Any, ...]:
    return (
        client.state,
        client.capabilities,
        client.connection_id,
        client.generation,
        dict(client.pending),
        dict(client.uncertain),
        dict(client.incoming),
        client.buffered,
        client.checkpoints(),
        {sid: client._streams.position(sid) for sid in client.checkpoints()},
        [(c, n) for _, c, n in client._streams._buffer],
        client._outbox.terminal_ids(),
        client._outbox._counter,
        dict(client._outbox.uncertain_reasons),
        list(client._resumes),  # correlated stream/resume results, in order
        client.host_id,
        client._handshake.offer,
        client.version,
    )


class ClientModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.client = Client(capabilities=ALL, **LIMITS)  # type: ignore[arg-type]
        self.to_peer: list[bytes] = []
        self.to_client: list[bytes] = []
        self.issued: dict[str, Request] = {}
        self.mutations: set[str] = set()
        # id -> how its wait ended: "response", "error" (remote) or
        # "uncertain" (ambiguous or invalid result, then resolved or not).
        self.ended: dict[str, str] = {}
        self.ever_uncertain: set[str] = set()
        self.resolved: set[str] = set()
        self.now = 0.0
        self.commands = 0
        self.approvals = 0
        self.stream_cursor = 0

    # -- helpers --------------------------------------------------------------------

    def record(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, (ResponseReceived, ErrorReceived)):
                rid = effect.request.id
                # No effect for an id that was not handed out, and one end
                # per id.
                assert self.issued.get(rid) == effect.request, rid
                assert rid not in self.ended, (rid, self.ended[rid], effect)
                if isinstance(effect, ResponseReceived):
                    self.ended[rid] = "response"
                    continue
                # A mutation that ended without a valid result (ambiguous, or
                # an invalid result) must be held.
                if rid in self.mutations and (
                    effect.error.origin == "peer"
                    or effect.error.code == ErrorCode.AMBIGUOUS_DISCONNECT
                ):
                    assert rid in self.client.uncertain, effect
                if rid in self.client.uncertain:
                    assert rid in self.mutations
                    assert effect.error.code in (
                        ErrorCode.AMBIGUOUS_DISCONNECT,
                        ErrorCode.INVALID_RESULT,
                    )
                    self.ended[rid] = "uncertain"
                    self.ever_uncertain.add(rid)
                else:
                    assert effect.error.code != ErrorCode.AMBIGUOUS_DISCONNECT
                    self.ended[rid] = "error"
            elif isinstance(effect, SendMessage):
                assert effect.message.error is not msgspec.UNSET
                assert effect.data == encode(effect.message)  # what is sent
            else:
                assert isinstance(effect, (RequestReceived, NotificationReceived))

    def attempt(
        self, call: Any, *args: Any, allowed: set[ErrorCode], **kwargs: Any
    ) -> Any:
        before = snapshot(self.client)
        try:
            return call(*args, **kwargs)
        except ProtocolError as exc:
            assert exc.code in allowed, exc
            assert snapshot(self.client) == before, exc
            return None

    def answer(self, request_bytes: bytes, kind: str) -> list[bytes]:
        """What the peer sends back for one delivered request."""
        return [
            respond(request_bytes, error=kind == "error", invalid=kind == "invalid")
        ]

    def new_peer(self) -> None:
        """A fresh peer connection (at start and after each reconnect)."""

    def handshake(self) -> None:
        self.new_peer()
        sent = self.client.request("connection/initialize", {}, now=self.now)
        init = sent.message
        self.issued[init.id] = init
        for reply in self.answer(sent.data, "ok"):
            self.record(self.client.receive(reply))
        assert self.client.state is ConnectionState.READY

    @initialize()
    def start(self) -> None:
        self.handshake()

    # -- rules ----------------------------------------------------------------------

    @precondition(lambda self: self.client.state is ConnectionState.READY)
    @rule()
    def mutate(self) -> None:
        self.commands += 1
        sent = self.attempt(
            self.client.request,
            "thread/start",
            {},
            command_id=f"cmd-{self.commands}",
            now=self.now,
            allowed={ErrorCode.LIMIT_EXCEEDED},
        )
        if sent is not None:
            request = sent.message
            self.issued[request.id] = request
            self.mutations.add(request.id)
            self.to_peer.append(sent.data)

    @precondition(lambda self: self.client.state is ConnectionState.READY)
    @rule(explicit=st.booleans())
    def read(self, explicit: bool) -> None:
        kw: dict[str, Any] = {"id": f"x-{len(self.issued)}"} if explicit else {}
        sent = self.attempt(
            self.client.request,
            "thread/read",
            {"thread_id": "thr-1"},
            now=self.now,
            allowed={ErrorCode.LIMIT_EXCEEDED, ErrorCode.CONFLICT},
            **kw,
        )
        if sent is not None:
            self.issued[sent.message.id] = sent.message
            self.to_peer.append(sent.data)

    @precondition(
        lambda self: self.client.state is ConnectionState.READY and self.issued
    )
    @rule(data=st.data())
    def reuse_id(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.issued)))
        sent = self.attempt(
            self.client.request,
            "thread/read",
            {"thread_id": "thr-1"},
            id=rid,
            now=self.now,
            allowed={ErrorCode.CONFLICT, ErrorCode.LIMIT_EXCEEDED},
        )
        # An id from an older generation may be free again (the terminal
        # window is per connection): then it is a fresh request.
        if sent is not None:
            assert rid not in self.client.uncertain
            self.issued[rid] = sent.message
            self.mutations.discard(rid)
            self.ended.pop(rid, None)
            self.resolved.discard(rid)
            self.ever_uncertain.discard(rid)
            self.to_peer.append(sent.data)

    @precondition(
        lambda self: self.client.state is ConnectionState.READY and self.issued
    )
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(sorted(self.issued)))
        sent = self.attempt(
            self.client.request,
            "request/cancel",
            {"request_id": target},
            now=self.now,
            allowed={ErrorCode.LIMIT_EXCEEDED},
        )
        if sent is not None:
            self.issued[sent.message.id] = sent.message
            self.to_peer.append(sent.data)

    @precondition(lambda self: self.to_peer)
    @rule(
        data=st.data(),
        keep=st.booleans(),
        kind=st.sampled_from(["ok", "ok", "error", "invalid"]),
    )
    def deliver(self, data: st.DataObject, keep: bool, kind: str) -> None:
        i = data.draw(st.integers(0, len(self.to_peer) - 1))
        wire = self.to_peer[i] if keep else self.to_peer.pop(i)
        self.to_client.append(
            respond(wire, error=kind == "error", invalid=kind == "invalid")
        )

    @precondition(lambda self: self.to_client)
    @rule(data=st.data(), keep=st.booleans())
    def receive(self, data: st.DataObject, keep: bool) -> None:
        i = data.draw(st.integers(0, len(self.to_client) - 1))
        wire = self.to_client[i] if keep else self.to_client.pop(i)
        effects = self.attempt(self.client.receive, wire, allowed=RECEIVE_ERRORS)
        if effects is not None:
            self.record(effects)

    @precondition(lambda self: self.to_client)
    @rule(data=st.data())
    def receive_conflicting(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.to_client) - 1))
        effects = self.attempt(
            self.client.receive, conflicting(self.to_client[i]), allowed=RECEIVE_ERRORS
        )
        if effects is not None:
            self.record(effects)

    @rule(garbage=st.binary(max_size=40))
    def receive_garbage(self, garbage: bytes) -> None:
        if self.client.state is ConnectionState.DISCONNECTED:
            return
        before = snapshot(self.client)
        try:
            effects = self.client.receive(garbage)
        except ProtocolError as exc:
            assert exc.origin == "peer", exc
            assert snapshot(self.client) == before
        else:  # pragma: no cover - random bytes that form a valid message
            self.record(effects)

    @precondition(lambda self: self.to_peer or self.to_client)
    @rule(from_peer=st.booleans())
    def drop(self, from_peer: bool) -> None:
        queue = (
            self.to_peer
            if from_peer and self.to_peer
            else self.to_client or self.to_peer
        )
        queue.pop(0)

    @rule(data=st.data())
    def reorder(self, data: st.DataObject) -> None:
        self.to_client = data.draw(st.permutations(self.to_client))

    @rule()
    def disconnect_and_reconnect(self) -> None:
        uncertain_before = set(self.client.uncertain)
        self.record(self.client.disconnect())
        assert set(self.client.uncertain) >= uncertain_before
        assert self.client.pending == {}
        assert self.client.incoming == {}
        self.attempt(self.client.receive, b"{}", allowed={ErrorCode.DISCONNECTED})
        self.client.reconnect()
        assert self.client.state is ConnectionState.NEW
        # The old connection's messages are gone with it.
        self.to_peer.clear()
        self.to_client.clear()
        self.handshake()

    @rule(dt=st.sampled_from([0.0, 1.0, 5.0, 10.0, 30.0]))
    def expire(self, dt: float) -> None:
        self.now += dt
        self.record(self.client.expire(self.now))
        assert all(
            self.issued[rid].id == rid and rid in self.client.pending
            for rid in self.client.pending
        )

    @precondition(lambda self: self.client.uncertain)
    @rule(data=st.data(), applied=st.booleans())
    def resolve(self, data: st.DataObject, applied: bool) -> None:
        rid = data.draw(st.sampled_from(sorted(self.client.uncertain)))
        self.client.resolve_uncertain(rid, "applied" if applied else "not_applied")
        self.resolved.add(rid)

    @rule(rid=st.text(min_size=1, max_size=8))
    def resolve_unknown(self, rid: str) -> None:
        if rid not in self.client.uncertain:
            self.attempt(
                self.client.resolve_uncertain,
                rid,
                "applied",
                allowed={ErrorCode.UNKNOWN_UNCERTAIN},
            )

    @precondition(lambda self: self.client.state is ConnectionState.READY)
    @rule(answer=st.sampled_from(["approve", "deny", "none"]))
    def incoming_approval(self, answer: str) -> None:
        self.approvals += 1
        approval = {
            "schema_version": "1.0",
            "type": "request",
            "id": f"s1-{self.approvals}",
            "correlation_id": f"s1-{self.approvals}",
            "method": "approval/request",
            "params": {
                "approval_id": f"apr-{self.approvals}",
                "action": ACTION,
                "deadline": "2099-01-01T00:00:00Z",
            },
        }
        [effect] = self.client.receive(dumps(approval))
        if isinstance(effect, SendMessage):
            assert len(self.client.incoming) == LIMITS["max_incoming_requests"]
            return
        assert isinstance(effect, RequestReceived)
        if answer == "none":
            return
        request = effect.request
        wrong = {"approval_id": "other", "action": ACTION, "decision": answer}
        self.attempt(
            self.client.reply, request, wrong, allowed={ErrorCode.APPROVAL_MISMATCH}
        )
        right = {
            "approval_id": request.params.approval_id,
            "action": ACTION,
            "decision": answer,
        }
        response = self.client.reply(request, right).message
        assert response.id == request.id
        assert request.id not in self.client.incoming

    @precondition(lambda self: self.client.state is ConnectionState.READY)
    @rule(step=st.sampled_from([0, 1, 1, 2]), sequenced=st.booleans())
    def notification(self, step: int, sequenced: bool) -> None:
        message: dict[str, Any] = {
            "schema_version": "1.0",
            "type": "notification",
            "method": "item/delta",
            "params": {
                "thread_id": "thr-1",
                "turn_id": "turn-1",
                "item_id": "i",
                "delta": "x",
            },
        }
        if sequenced:
            cursor = max(1, self.stream_cursor + step)
            message.update(stream_id="s", cursor=cursor)
        effects = self.attempt(
            self.client.receive, dumps(message), allowed=RECEIVE_ERRORS
        )
        if effects is None:
            return
        if sequenced:
            assert effects == []
            self.stream_cursor = max(self.stream_cursor, message["cursor"])
        else:
            assert [type(e) for e in effects] == [NotificationReceived]

    @rule()
    def drain_and_ack(self) -> None:
        last: dict[str, int] = {}
        for notification in self.client.drain():
            assert isinstance(notification.stream_id, str)
            assert isinstance(notification.cursor, int)
            last[notification.stream_id] = notification.cursor
        for stream_id, cursor in last.items():
            self.client.ack_cursor(stream_id, cursor)

    # -- invariants -----------------------------------------------------------------

    @invariant()
    def bounded(self) -> None:
        c = self.client
        assert len(c.pending) <= LIMITS["max_outstanding_requests"]
        assert len(c.uncertain) <= LIMITS["max_uncertain_commands"]
        assert len(c.incoming) <= LIMITS["max_incoming_requests"]
        assert c.buffered <= LIMITS["max_buffered_notifications"]
        assert len(c._outbox.terminal_ids()) <= LIMITS["max_completed"]
        window = c._outbox._completed
        assert (
            len(window._current) + len(window._previous) <= 2 * LIMITS["max_completed"]
        )
        assert len(c._resumes) <= LIMITS["max_completed"]

    @invariant()
    def every_mutation_in_exactly_one_place(self) -> None:
        c = self.client
        for rid in self.mutations:
            pending = rid in c.pending and c.pending[rid] == self.issued[rid]
            places = [
                pending,
                self.ended.get(rid) == "response",
                self.ended.get(rid) == "error",
                self.ended.get(rid) == "uncertain",
            ]
            assert sum(places) == 1, (rid, places)
            if self.ended.get(rid) == "uncertain":
                assert (rid in c.uncertain) != (rid in self.resolved), rid

    @invariant()
    def uncertain_cleared_only_by_resolve(self) -> None:
        assert self.ever_uncertain - self.resolved <= set(self.client.uncertain)
        assert set(self.client.uncertain) <= self.mutations


class ServerPeerModel(ClientModel):
    """The same model with the real Server hosting a FakeHost as the peer:
    its responses, its conflict window and its lifecycle notifications
    (which enter the client's stream buffer) go over the same network."""

    def new_peer(self) -> None:
        if not hasattr(self, "host"):
            self.host = FakeHost()
        self.server = Server(self.host, capabilities=ALL, host_id="h")

    def answer(self, request_bytes: bytes, kind: str) -> list[bytes]:
        return [sent.data for sent in self.server.receive(request_bytes)]


_CI = bool(os.environ.get("CI"))
_SETTINGS = settings(
    max_examples=1000 if _CI else 100,
    stateful_step_count=30,
    derandomize=_CI,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TestClientModel = ClientModel.TestCase
TestClientModel.settings = _SETTINGS
TestServerPeerModel = ServerPeerModel.TestCase
TestServerPeerModel.settings = settings(_SETTINGS, max_examples=300 if _CI else 50)
