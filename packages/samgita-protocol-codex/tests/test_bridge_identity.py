"""Identities a reconnect or restart must not change or reuse (issue 13).

Approvals: every (re-)send of a forwarded Codex approval is the same native
request (``id``, ``approval_id``, ``action``, ``deadline`` fixed when Codex
asked); after its deadline it is declined to Codex, never offered again, and
a late ``approve`` is not an approval.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import msgspec
import pytest
from samgita_protocol import (
    Action,
    ApprovalRequestParams,
    ApprovalRequestResult,
    Client,
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    Notification,
    ProtocolError,
    Request,
    Response,
    ResponseReceived,
    StreamResumeParams,
    decode,
    encode,
)

from samgita_protocol_codex import (
    ApprovalResolved,
    BridgeReport,
    CodexBridge,
    ToCodex,
    ToNative,
)
from test_bridge_recorded import GROUPS
from test_bridge_review import _ask, _first, _init, _line, _method, _natives, _request

T0 = dt.datetime(2026, 12, 3, 12, 0, 0, 250_000, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def _bridge(clock: Clock, *, native: bool = True) -> CodexBridge:
    bridge = CodexBridge(
        host_id="id", now=clock, approval_timeout=dt.timedelta(minutes=5)
    )
    if native:
        bridge.native_request(_init())
        bridge.receive_codex(
            _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
        )
    return bridge


def _asks(out: list[Any]) -> list[Request]:
    return [m for m in _natives(out) if isinstance(m, Request)]


def _codex(out: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(o.data) for o in out if isinstance(o, ToCodex)]


def _reports(out: list[Any]) -> list[BridgeReport]:
    return [o for o in out if isinstance(o, BridgeReport)]


def _answer(ask: Request, decision: str, action: Action | None = None) -> Response:
    params = ask.params
    assert isinstance(params, ApprovalRequestParams)
    result = ApprovalRequestResult(
        approval_id=params.approval_id,
        action=params.action if action is None else action,
        decision=decision,  # type: ignore[arg-type]
    )
    return Response(id=ask.id, correlation_id=ask.correlation_id, result=result)


def _reconnect(bridge: CodexBridge, n: int) -> list[Any]:
    assert not _asks(bridge.native_connected())
    return bridge.native_request(_init(n=n))


# -- re-sent approvals keep their binding ------------------------------------------


def test_resent_approval_is_the_same_request_with_the_original_deadline() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    (first,) = _asks(bridge.receive_codex(_line(_ask())))
    assert isinstance(first.params, ApprovalRequestParams)
    assert first.params.deadline == "2026-12-03T12:05:00Z"  # T0 + 5 min, whole s
    wire = encode(first)
    for n, minutes in ((7, 1), (8, 2), (9, 1.9)):
        clock.advance(minutes=minutes)
        out = _reconnect(bridge, n)
        (again,) = _asks(out)
        # byte-identical: id, correlation_id, approval_id, action, deadline
        assert encode(again) == wire
        assert [o.data for o in out if isinstance(o, ToNative)][-1] == wire
    # and it can still be approved before the deadline
    clock.now = dt.datetime(2026, 12, 3, 12, 4, 59, 999_999, tzinfo=dt.UTC)
    out = bridge.native_response(_answer(first, "approve"))
    assert _codex(out) == [{"id": _ask()["id"], "result": {"decision": "accept"}}]


def test_approval_waiting_for_a_session_keeps_the_deadline_of_the_ask() -> None:
    clock = Clock()
    bridge = _bridge(clock, native=False)
    assert bridge.receive_codex(_line(_ask())) == []
    clock.advance(minutes=3)
    bridge.native_request(_init())
    out = bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    (ask,) = _asks(out)
    assert isinstance(ask.params, ApprovalRequestParams)
    assert ask.params.deadline == "2026-12-03T12:05:00Z"


def test_expired_approval_is_not_reoffered_and_is_declined_to_codex() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    (first,) = _asks(bridge.receive_codex(_line(_ask())))
    bridge.native_connected()
    clock.now = dt.datetime(2026, 12, 3, 12, 5, 0, tzinfo=dt.UTC)  # exactly at it
    out = bridge.native_request(_init(n=9))
    assert _asks(out) == []
    assert _codex(out)[-1] == {"id": _ask()["id"], "result": {"decision": "decline"}}
    assert ApprovalResolved(request_id=first.id) in out
    (report,) = _reports(out)
    assert report.kind == "approval_expired"
    assert report.method == "item/commandExecution/requestApproval"
    # settled: a late native answer is refused, a further reconnect sends nothing
    with pytest.raises(ProtocolError) as info:
        bridge.native_response(_answer(first, "approve"))
    assert info.value.code is ErrorCode.UNKNOWN_REQUEST
    assert _asks(_reconnect(bridge, 10)) == []


def test_approval_that_expired_before_any_session_is_never_offered() -> None:
    clock = Clock()
    bridge = _bridge(clock, native=False)
    bridge.receive_codex(_line(_ask()))
    clock.advance(minutes=6)
    bridge.native_request(_init())
    out = bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    assert _asks(out) == []
    assert {"id": _ask()["id"], "result": {"decision": "decline"}} in _codex(out)
    assert [r.kind for r in _reports(out)] == ["approval_expired"]


def test_only_the_expired_approvals_are_withheld() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    old = _ask()
    (first,) = _asks(bridge.receive_codex(_line(old)))
    clock.advance(minutes=3)
    young = _ask()
    young["id"] = 777
    (second,) = _asks(bridge.receive_codex(_line(young)))
    bridge.native_connected()
    clock.advance(minutes=2, seconds=30)  # first expired, second has 30 s more
    out = bridge.native_request(_init(n=9))
    assert _asks(out) == [second]
    assert _codex(out) == [{"id": old["id"], "result": {"decision": "decline"}}]
    assert [o.request_id for o in out if isinstance(o, ApprovalResolved)] == [first.id]


def test_expire_approvals_declines_only_those_past_their_deadline() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    old = _ask()
    (first,) = _asks(bridge.receive_codex(_line(old)))
    clock.advance(minutes=3)
    young = _ask()
    young["id"] = 778
    (second,) = _asks(bridge.receive_codex(_line(young)))
    assert bridge.expire_approvals() == []  # none is due yet
    clock.now = dt.datetime(2026, 12, 3, 12, 5, 0, tzinfo=dt.UTC)  # first's deadline
    out = bridge.expire_approvals()
    assert _codex(out) == [{"id": old["id"], "result": {"decision": "decline"}}]
    assert [o.request_id for o in out if isinstance(o, ApprovalResolved)] == [first.id]
    assert [r.kind for r in _reports(out)] == ["approval_expired"]
    assert bridge.expire_approvals() == []  # settled once
    with pytest.raises(ProtocolError) as info:
        bridge.native_response(_answer(first, "deny"))
    assert info.value.code is ErrorCode.UNKNOWN_REQUEST
    # the other is still approvable before its own deadline
    out = bridge.native_response(_answer(second, "approve"))
    assert _codex(out) == [{"id": 778, "result": {"decision": "accept"}}]


# -- the answer is checked against the binding -------------------------------------


def test_approve_at_or_after_the_deadline_is_declined() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    (ask,) = _asks(bridge.receive_codex(_line(_ask())))
    clock.now = dt.datetime(2026, 12, 3, 12, 5, 0, tzinfo=dt.UTC)
    out = bridge.native_response(_answer(ask, "approve"))
    assert _codex(out) == [{"id": _ask()["id"], "result": {"decision": "decline"}}]
    assert [r.kind for r in _reports(out)] == ["approval_expired"]
    with pytest.raises(ProtocolError) as info:
        bridge.native_response(_answer(ask, "deny"))
    assert info.value.code is ErrorCode.UNKNOWN_REQUEST


@pytest.mark.parametrize("late", [False, True])
def test_deny_and_native_errors_are_decline_at_any_time(late: bool) -> None:
    for answer in ("deny", "error"):
        clock = Clock()
        bridge = _bridge(clock)
        (ask,) = _asks(bridge.receive_codex(_line(_ask())))
        if late:
            clock.advance(hours=1)
        response = (
            _answer(ask, "deny")
            if answer == "deny"
            else Response(
                id=ask.id,
                correlation_id=ask.correlation_id,
                error=ErrorObject(code="timeout", message="nobody answered"),
            )
        )
        out = bridge.native_response(response)
        assert _codex(out) == [{"id": _ask()["id"], "result": {"decision": "decline"}}]
        assert _reports(out) == []


def test_action_is_bound_as_exact_json() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    asked = _ask()
    asked["params"]["flag"] = True
    (ask,) = _asks(bridge.receive_codex(_line(asked)))
    assert isinstance(ask.params, ApprovalRequestParams)
    action = ask.params.action
    assert isinstance(action.details, dict)
    params = dict(action.details["codex_params"], flag=1)  # True == 1 in Python
    other = Action(
        kind=action.kind,
        description=action.description,
        details={**action.details, "codex_params": params},
    )
    assert other == action  # what a Python comparison would have accepted
    with pytest.raises(ProtocolError) as info:
        bridge.native_response(_answer(ask, "approve", other))
    assert info.value.code is ErrorCode.APPROVAL_MISMATCH
    # still pending: the bound answer goes through
    out = bridge.native_response(_answer(ask, "approve"))
    assert _codex(out) == [{"id": asked["id"], "result": {"decision": "accept"}}]


# -- stream ids are unique per bridge instance ---------------------------------------


def _delta(text: str) -> bytes:
    msg = _method("item/agentMessage/delta")
    msg["params"]["delta"] = text
    return _line(msg)


def _thread_id() -> str:
    thread_id: str = _method("item/agentMessage/delta")["params"]["threadId"]
    return thread_id


class Native:
    """A core Client on the native side of one bridge (bytes both ways)."""

    def __init__(self, bridge: CodexBridge, client: Client) -> None:
        self.bridge, self.client = bridge, client
        self.effects: list[Any] = []

    def take(self, out: list[Any]) -> None:
        for o in _natives(out):
            self.effects += self.client.receive(encode(o))

    def request(self, method: str, params: Any) -> Any:
        request = self.client.request(method, params)
        self.take(self.bridge.native_request(decode(request.data)))
        return self.effects[-1]

    def connect(self) -> None:
        init = self.client.request("connection/initialize", {})
        self.take(self.bridge.native_request(decode(init.data)))
        self.take(
            self.bridge.receive_codex(
                _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
            )
        )
        assert isinstance(self.effects[-1], ResponseReceived)

    def consume(self) -> list[str]:
        seen = []
        for note in self.client.drain():
            seen.append(note.params.delta)  # type: ignore[union-attr]
            self.client.ack_cursor(note.stream_id, note.cursor)  # type: ignore[arg-type]
        return seen


def test_a_checkpoint_from_before_a_bridge_restart_is_not_found() -> None:
    old = Native(CodexBridge(host_id="h"), Client(capabilities=GROUPS))
    old.connect()
    for text in ("a1", "a2", "a3"):
        old.take(old.bridge.receive_codex(_delta(text)))
    assert old.consume() == ["a1", "a2", "a3"]
    saved = old.client.checkpoints()
    old_sid = old.bridge.stream_id(_thread_id())
    assert saved == {old_sid: 3}

    # the bridge restarts (same host_id, same Codex thread): new cursors 1..5
    new_bridge = CodexBridge(host_id="h")
    new = Native(
        new_bridge, Client(capabilities=GROUPS, host_id="h", checkpoints=saved)
    )
    new.connect()  # same host: the restored client is accepted
    for text in ("b1", "b2", "b3", "b4", "b5"):
        new.take(new_bridge.receive_codex(_delta(text)))
    new_sid = new_bridge.stream_id(_thread_id())
    assert new_sid != old_sid
    assert new.consume() == ["b1", "b2", "b3", "b4", "b5"]  # a new stream, from 1
    assert new.client.checkpoints() == {old_sid: 3, new_sid: 5}

    # resuming the old checkpoint: typed not_found, no events of the new stream
    effect = new.request("stream/resume", {"stream_id": old_sid, "cursor": 3})
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (ErrorCode.NOT_FOUND, "remote")
    assert effect.error.data == {"stream_id": old_sid}
    assert new.client.drain() == []
    # the client drops it; the live stream resumes as usual
    new.client.forget_stream(old_sid)
    effect = new.request("stream/resume", {"stream_id": new_sid, "cursor": 3})
    assert isinstance(effect, ResponseReceived)
    assert new.client.receive_replay(effect.result) == 0  # 4, 5 already processed


def test_two_bridges_never_share_a_stream_or_connection_id() -> None:
    ids = set()
    connections = set()
    for _ in range(20):
        bridge = CodexBridge(host_id="h")
        out = bridge.native_request(_init())
        out += bridge.receive_codex(
            _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
        )
        (init,) = [m for m in _natives(out) if isinstance(m, Response)]
        connections.add(init.result.connection_id)  # type: ignore[union-attr]
        (note,) = _natives(bridge.receive_codex(_delta("x")))
        assert isinstance(note, Notification) and note.cursor == 1
        assert note.stream_id == f"codex-{bridge.instance_id}-{_thread_id()}"
        assert len(bridge.instance_id) == 16
        ids.add(note.stream_id)
    assert len(ids) == len(connections) == 20


def test_a_given_instance_id_names_streams_and_connections() -> None:
    bridge = CodexBridge(host_id="h", instance_id="run-7_A")
    assert bridge.instance_id == "run-7_A"
    out = bridge.native_request(_init())
    out += bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    (init,) = [m for m in _natives(out) if isinstance(m, Response)]
    assert init.result.connection_id == "codex-run-7_A-1"  # type: ignore[union-attr]
    (note,) = _natives(bridge.receive_codex(_delta("x")))
    assert note.stream_id == f"codex-run-7_A-{_thread_id()}"


def test_a_long_thread_id_keeps_the_instance_in_its_digest_id() -> None:
    bridge = CodexBridge(host_id="h", instance_id="i" * 32)
    bridge.native_request(_init())
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    msg = _method("item/agentMessage/delta")
    msg["params"]["threadId"] = "t" * 250
    (note,) = _natives(bridge.receive_codex(_line(msg)))
    assert note.stream_id.startswith("codex-" + "i" * 32 + "-sha256-")
    assert len(note.stream_id.encode()) <= 256
    encode(note)


@pytest.mark.parametrize(
    ("value", "exc"),
    [
        ("", ValueError),
        ("x" * 33, ValueError),
        ("a b", ValueError),
        ("a/b", ValueError),
        ("é", ValueError),
        (7, TypeError),
        (b"abc", TypeError),
    ],
)
def test_bad_instance_ids_are_refused(value: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="instance_id"):
        CodexBridge(host_id="h", instance_id=value)


def test_unknown_stream_resume_through_the_bridge_api() -> None:
    clock = Clock()
    bridge = _bridge(clock)
    (answer,) = _natives(
        bridge.native_request(
            _request(
                "stream/resume",
                StreamResumeParams(stream_id=f"codex-{_thread_id()}", cursor=0),
                n=5,
            )
        )
    )
    assert isinstance(answer, Response) and answer.error is not msgspec.UNSET
    assert answer.error.code == ErrorCode.NOT_FOUND
