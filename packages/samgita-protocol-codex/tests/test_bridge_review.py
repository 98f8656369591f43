"""Review findings (issue 13): malformed Codex input, stranded requests and
approvals, native reconnects, oversized values, bounds. Built on recorded
Codex traffic."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from samgita_protocol import (
    ApprovalRequestParams,
    ErrorCode,
    InitializeParams,
    Notification,
    ProtocolError,
    Request,
    Response,
    StreamResumeParams,
    ThreadReadParams,
    ThreadStartParams,
    encode,
    load_json,
)

from samgita_protocol_codex import (
    MAX_CODEX_DEPTH,
    MAX_CODEX_LINE_BYTES,
    MAX_DELTA_CHARS,
    MAX_ITEM_TEXT_CHARS,
    UNMAPPED_OVERFLOW,
    ApprovalResolved,
    BridgeReport,
    CodexBridge,
    ToCodex,
    ToNative,
)
from test_bridge_recorded import GROUPS, Harness

RECORDINGS = Path(__file__).parent / "recordings"


def _recorded(name: str = "turn") -> list[dict[str, Any]]:
    return [
        json.loads(line)["msg"]
        for line in (RECORDINGS / f"{name}.jsonl").read_text().splitlines()
    ]


def _first(name: str, pred: Any) -> dict[str, Any]:
    return copy.deepcopy(next(m for m in _recorded(name) if pred(m)))


def _method(method: str, name: str = "turn") -> dict[str, Any]:
    return _first(name, lambda m: m.get("method") == method)


def _line(msg: Any) -> bytes:
    return json.dumps(msg).encode()


def _request(
    method: str, params: msgspec.Struct, n: int = 1, mutation: bool = False
) -> Request:
    return Request(
        method=method, id=f"r{n}", correlation_id=f"c{n}", params=params,
        command_id=f"k{n}" if mutation else msgspec.UNSET,
    )  # fmt: skip


def _init(n: int = 0, groups: list[str] | None = None) -> Request:
    caps = GROUPS if groups is None else groups
    return _request(
        "connection/initialize",
        InitializeParams(versions=["1.0"], capabilities=caps),
        n=n,
    )


def _ready(groups: list[str] | None = None) -> CodexBridge:
    bridge = CodexBridge(host_id="unit")
    bridge.native_request(_init(groups=groups))
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    return bridge


def _state(bridge: CodexBridge) -> Any:
    b: Any = bridge
    return (
        b._link.state,
        b._session.groups,
        b._link.next_id,
        b._approvals.asked,
        {k: (p.method, p.native) for k, p in b._link.pending.items()},
        {k: (a.codex_id, a.sent) for k, a in b._approvals.by_id.items()},
        {
            t: (r.stream_id, r.first_cursor, r.last_cursor, len(r))
            for t, r in b._streams.by_thread.items()
        },
        dict(b.unmapped_notifications),
        dict(b.not_forwarded),
        dict(b.undelivered),
    )


def _natives(out: list[Any]) -> list[Any]:
    return [o.message for o in out if isinstance(o, ToNative)]


# -- 1. malformed input: only ProtocolError (origin peer), state unchanged ---------


@pytest.mark.parametrize("created", [10**18, -(10**15), -1, 2**63 - 1])
def test_created_at_out_of_range_is_a_peer_error(created: int) -> None:
    bridge = _ready()
    msg = _method("thread/started")
    msg["params"]["thread"]["createdAt"] = created
    before = _state(bridge)
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(_line(msg))
    assert info.value.origin == "peer"
    assert _state(bridge) == before


@pytest.mark.parametrize("depth", [200, 1000, 5000])
def test_deep_json_is_depth_exceeded_before_decoding(depth: int) -> None:
    bridge = _ready()
    deep = b'{"method":"some/new","params":' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(deep)
    assert (info.value.code, info.value.origin) == (ErrorCode.DEPTH_EXCEEDED, "peer")


def test_repeated_key_is_refused_like_the_core() -> None:
    bridge = _ready()
    line = _line(_method("item/agentMessage/delta"))
    line = line.replace(b'"delta":', b'"delta": "DUP", "delta":')
    before = _state(bridge)
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(line)
    assert (info.value.code, info.value.origin) == (ErrorCode.DUPLICATE_KEY, "peer")
    assert _state(bridge) == before
    # the compact form (as Codex writes it) takes the fast proof, and fails it
    compact = json.dumps(
        _method("item/agentMessage/delta"), separators=(",", ":")
    ).encode()
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(compact.replace(b'"delta":', b'"delta":"DUP","delta":'))
    assert info.value.code == ErrorCode.DUPLICATE_KEY
    assert _natives(bridge.receive_codex(compact))
    for scalar in (b"5", b" 5", b'"x"', b" []"):
        with pytest.raises(ProtocolError) as info:
            bridge.receive_codex(scalar)
        assert info.value.origin == "peer"
    # keys inside strings are not keys
    ok = b'{"method":"x/y","params":{"a":"\\"a\\": 1, \\"a\\":","b":["a","a"]}}'
    assert bridge.receive_codex(ok)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_a_line_may_be_any_bytes_like(kind: Any) -> None:
    line = _line(_method("item/agentMessage/delta"))
    (note,) = _natives(_ready().receive_codex(kind(line)))
    assert note.method == "item/delta"


@pytest.mark.parametrize("line", ['{"method":"x/y"}', None, 5, ["{}"]])
def test_a_line_that_is_not_bytes_is_a_type_error(line: Any) -> None:
    # The caller's wrong argument, not something Codex sent.
    bridge = _ready()
    with pytest.raises(TypeError, match="expected line to be"):
        bridge.receive_codex(line)


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b'{"method":"x/y","params":{"a":"\xff"}}', ErrorCode.INVALID_UTF8),
        (b'{"method":"x/y","params":{"a":1,"\\u0061":2}}', ErrorCode.DUPLICATE_KEY),
        (b'{"method":"x/y"} {}', ErrorCode.INVALID_JSON),
        (b"[" * 128 + b"]" * 128, ErrorCode.INVALID_MESSAGE),  # deep, not too deep
        (b"[" * 129 + b"]" * 129, ErrorCode.DEPTH_EXCEEDED),
    ],
)
def test_byte_level_codes(line: bytes, code: ErrorCode) -> None:
    bridge = _ready()
    before = _state(bridge)
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(line)
    assert (info.value.code, info.value.origin) == (code, "peer")
    assert _state(bridge) == before


def test_translated_values_the_native_schema_cannot_carry_are_peer_errors() -> None:
    bridge = _ready()
    for field, value in (("id", ""), ("id", "x" * 300)):
        msg = _method("thread/started")
        msg["params"]["thread"][field] = value
        with pytest.raises(ProtocolError) as info:
            bridge.receive_codex(_line(msg))
        assert info.value.origin == "peer"
    msg = _method("item/started")
    msg["params"]["item"]["id"] = ""
    before = _state(bridge)
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(_line(msg))
    assert info.value.origin == "peer" and _state(bridge) == before


_ALL_RECV = [
    json.dumps(json.loads(line)["msg"]).encode()
    for name in ("turn", "approval_accept", "interrupt")
    for line in (RECORDINGS / f"{name}.jsonl").read_text().splitlines()
    if json.loads(line)["dir"] == "recv"
]
_ODD_VALUES = [
    10**18, -(10**15), -1, 0, 2**70, 1.5, "", "x" * 300, None, True, [], {},
    json.loads("[" * 40 + "]" * 40),
]  # fmt: skip


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = tree
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return tree


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    line = draw(st.sampled_from(_ALL_RECV))
    if draw(st.booleans()):
        tree = json.loads(line)
        paths = _paths(tree)
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(paths))
            tree = _set(tree, path, copy.deepcopy(draw(st.sampled_from(_ODD_VALUES))))
            paths = _paths(tree)
        return json.dumps(tree).encode()
    data = bytearray(line)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        chunk = draw(
            st.sampled_from([b"[", b"{", b'"', b"\\", b",", b":", b"9", b"\xff"])
        )
        if op == "flip" and data:
            data[at] = chunk[0]
        elif op == "insert":
            data[at:at] = chunk
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[at:]
        else:
            data[at:at] = b'"threadId": "t", '
    return bytes(data)


_FUZZED = Harness()
_FUZZED.play("turn")


@settings(
    derandomize=True,
    max_examples=3000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_mutated())
def test_fuzz_only_peer_protocol_errors_and_no_change_on_error(line: bytes) -> None:
    bridge = _FUZZED.bridge
    before = _state(bridge)
    try:
        out = bridge.receive_codex(line)
    except ProtocolError as exc:
        assert exc.origin == "peer"
        assert _state(bridge) == before
        return
    for message in _natives(out):
        encode(message)


# -- 2. a bad Codex reply never strands the native request ---------------------


def test_bad_reply_answers_the_native_request_and_reports() -> None:
    bridge = _ready()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    assert isinstance(sent, ToCodex)
    cid = json.loads(sent.data)["id"]
    out = bridge.receive_codex(_line({"id": cid, "result": {"thread": {"id": 5}}}))
    (answer,) = _natives(out)
    assert answer.id == "r3" and answer.error.code == ErrorCode.INVALID_RESULT
    assert answer.error.data["codex_method"] == "thread/start"
    assert any(isinstance(o, BridgeReport) and o.kind == "invalid_reply" for o in out)
    assert not bridge._link.pending  # type: ignore[attr-defined]


def test_created_at_out_of_range_in_a_reply_answers_the_native_request() -> None:
    bridge = _ready()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    res = _first("turn", lambda m: m.get("id") == 1 and "result" in m)
    res["id"] = json.loads(sent.data)["id"]  # type: ignore[union-attr]
    res["result"]["thread"]["createdAt"] = 10**17
    (answer,) = _natives(bridge.receive_codex(_line(res)))
    assert answer.error.code == ErrorCode.INVALID_RESULT


def test_bad_initialize_result_does_not_stay_initializing() -> None:
    bridge = CodexBridge(host_id="unit")
    bridge.native_request(_init())
    out = bridge.receive_codex(b'{"id":0,"result":{"userAgent":5}}')
    (answer,) = _natives(out)
    assert answer.error.code == ErrorCode.INVALID_RESULT
    # a retried initialize goes to Codex again
    (again,) = bridge.native_request(_init(n=1))
    assert isinstance(again, ToCodex) and b'"initialize"' in again.data


# -- 3. events during a native reconnect stay replayable --------------------------


def test_events_during_native_reconnect_are_replayed() -> None:
    h = Harness()
    h.play("turn")
    bridge = h.bridge
    sid = bridge.stream_id(h.thread_id)
    last = bridge._streams.by_thread[h.thread_id].last_cursor  # type: ignore[attr-defined]
    bridge.native_connected()
    assert bridge.receive_codex(_line(_method("item/agentMessage/delta"))) == []
    assert bridge.receive_codex(_line(_method("turn/completed"))) == []
    bridge.native_request(_init(n=50))
    assert sid is not None
    (resp,) = _natives(
        bridge.native_request(
            _request(
                "stream/resume", StreamResumeParams(stream_id=sid, cursor=last), n=51
            )
        )
    )
    assert [e.cursor for e in resp.result.events] == [last + 1, last + 2]
    assert [e.method for e in resp.result.events] == ["item/delta", "turn/completed"]


def test_unreplayable_notification_without_session_is_counted_and_reported() -> None:
    bridge = _ready()
    bridge.native_connected()
    (out,) = bridge.receive_codex(_line(_method("thread/started")))
    assert isinstance(out, BridgeReport) and out.kind == "undelivered"
    assert bridge.undelivered["thread/started"] == 1


# -- 4. approvals wait for a native session, are re-sent after re-initialize ----


def _ask() -> dict[str, Any]:
    return _first(
        "approval_accept",
        lambda m: "id" in m and m.get("method", "").endswith("requestApproval"),
    )


def test_approval_before_native_session_waits_and_is_sent_after_initialize() -> None:
    bridge = CodexBridge(host_id="x")
    assert bridge.receive_codex(_line(_ask())) == []  # not answered by the bridge
    bridge.native_request(_init())
    out = bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    asks = [m for m in _natives(out) if isinstance(m, Request)]
    assert [a.method for a in asks] == ["approval/request"]


def test_approval_is_resent_after_native_reconnect() -> None:
    bridge = _ready()
    (first,) = _natives(bridge.receive_codex(_line(_ask())))
    bridge.native_connected()
    out = bridge.native_request(_init(n=9))
    again = [m for m in _natives(out) if isinstance(m, Request)]
    assert again == [first]


def test_approval_refused_only_by_a_session_without_approvals() -> None:
    bridge = CodexBridge(host_id="x")
    assert bridge.receive_codex(_line(_ask())) == []
    bridge.native_request(_init(groups=["sessions.v1"]))
    out = bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    refusals = [json.loads(o.data) for o in out if isinstance(o, ToCodex)]
    assert any("error" in r and r["id"] == _ask()["id"] for r in refusals)
    assert any(isinstance(o, ApprovalResolved) for o in out)


# -- 5. approval ids are the bridge's own ------------------------------------------


def test_long_codex_request_id_does_not_leak_into_approval_id() -> None:
    bridge = _ready()
    ask = _ask()
    ask["id"] = "x" * 300
    (native,) = _natives(bridge.receive_codex(_line(ask)))
    encode(native)
    assert isinstance(native.params, ApprovalRequestParams)
    assert native.params.approval_id == native.id == "codex-approval-1"


# -- 6. oversized values ------------------------------------------------------------


def test_two_mib_delta_becomes_several_contiguous_deltas() -> None:
    bridge = _ready()
    msg = _method("item/agentMessage/delta")
    text = "é" * (2 * 1024 * 1024)
    msg["params"]["delta"] = text
    notes = _natives(bridge.receive_codex(_line(msg)))
    assert len(notes) == -(-len(text) // MAX_DELTA_CHARS) > 1
    assert "".join(n.params.delta for n in notes) == text
    cursors = [n.cursor for n in notes]
    assert cursors == list(range(cursors[0], cursors[0] + len(notes)))
    assert all(len(encode(n)) < 1024 * 1024 for n in notes)


def test_a_split_delta_is_appended_all_or_none() -> None:
    bridge = _ready()
    msg = _method("item/agentMessage/delta")
    bridge.receive_codex(_line(msg))  # the stream exists, cursor 1
    msg["params"]["delta"] = "x" * (3 * MAX_DELTA_CHARS)
    msg["params"]["itemId"] = ""  # every piece is invalid natively
    before = _state(bridge)
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(_line(msg))
    assert info.value.origin == "peer"
    assert _state(bridge) == before
    # a new thread whose first (split) delta fails gets no stream at all
    msg["params"]["threadId"] = "fresh-thread"
    with pytest.raises(ProtocolError):
        bridge.receive_codex(_line(msg))
    assert bridge.stream_id("fresh-thread") is None and _state(bridge) == before


def test_long_item_text_is_cut_with_a_marker() -> None:
    bridge = _ready()
    msg = next(
        m
        for m in _recorded()
        if m.get("method") == "item/completed"
        and m["params"]["item"]["type"] == "agentMessage"
    )
    msg["params"]["item"]["text"] = "a" * (3 * 1024 * 1024)
    (note,) = _natives(bridge.receive_codex(_line(msg)))
    text = note.params.item.text
    assert text.startswith("a" * MAX_ITEM_TEXT_CHARS)
    assert text.endswith(f"{3 * 1024 * 1024} code points in Codex]")


def test_thread_read_keeps_the_newest_256_turns_and_says_so() -> None:
    bridge = _ready()
    (sent,) = bridge.native_request(
        _request("thread/read", ThreadReadParams(thread_id="t"), n=4)
    )
    thread = _first("turn", lambda m: m.get("id") == 1 and "result" in m)["result"][
        "thread"
    ]
    turn = _method("turn/started")["params"]["turn"]
    turns = []
    for i in range(300):
        t = copy.deepcopy(turn)
        t["id"] = f"turn-{i}"
        turns.append(t)
    thread["turns"] = turns
    res = {"id": json.loads(sent.data)["id"], "result": {"thread": thread}}  # type: ignore[union-attr]
    out = bridge.receive_codex(_line(res))
    (answer,) = _natives(out)
    ids = [t.turn_id for t in answer.result.turns]
    assert ids == [f"turn-{i}" for i in range(44, 300)]
    assert any(isinstance(o, BridgeReport) and o.kind == "truncated" for o in out)


# -- 8. thread/status/changed -------------------------------------------------------


def test_thread_status_system_error_becomes_thread_closed() -> None:
    bridge = _ready()
    msg = _method("thread/status/changed")
    msg["params"]["status"] = {"type": "systemError"}
    (note,) = _natives(bridge.receive_codex(_line(msg)))
    assert isinstance(note, Notification) and note.method == "thread/closed"
    msg["params"]["status"] = {"type": "idle"}
    assert bridge.receive_codex(_line(msg)) == []
    assert bridge.not_forwarded["thread/status/changed:idle"] == 1


# -- 9. approval params carried exactly ---------------------------------------------


def test_approval_params_are_carried_as_sent() -> None:
    bridge = _ready()
    ask = _ask()
    ask["params"]["extraBig"] = 2**70
    ask["params"]["extraF"] = 1.0000000000000002e308
    (native,) = _natives(bridge.receive_codex(_line(ask)))
    details = native.params.action.details
    assert details["codex_params"] == ask["params"]
    assert (
        json.loads(encode(native))["params"]["action"]["details"]["codex_params"]
        == ask["params"]
    )


# -- 10. a failed re-initialize is reported ---------------------------------------


def test_failed_reinitialize_is_reported_and_the_link_is_down() -> None:
    bridge = _ready()
    bridge.codex_disconnected()
    (sent,) = bridge.codex_connected()
    cid = json.loads(sent.data)["id"]  # type: ignore[union-attr]
    out = bridge.receive_codex(
        _line({"id": cid, "error": {"code": -32000, "message": "boom"}})
    )
    assert out == [
        BridgeReport(
            kind="reinitialize_failed",
            method="initialize",
            message="Codex initialize failed: boom",
        )
    ]
    (refused,) = _natives(
        bridge.native_request(_request("thread/read", ThreadReadParams(thread_id="t")))
    )
    assert refused.error.code == ErrorCode.DISCONNECTED


# -- 11. reconnects settle what was pending -----------------------------------------


def test_codex_connected_settles_old_pending_requests() -> None:
    bridge = _ready()
    bridge.native_request(_request("thread/read", ThreadReadParams(thread_id="t"), n=7))
    bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=8, mutation=True)
    )
    out = bridge.codex_connected()
    codes = {m.id: m.error.code for m in _natives(out)}
    assert codes == {
        "r7": ErrorCode.DISCONNECTED,
        "r8": ErrorCode.AMBIGUOUS_DISCONNECT,
    }
    assert [p.method for p in bridge._link.pending.values()] == ["initialize"]  # type: ignore[attr-defined]


def test_native_connected_settles_and_absorbs_the_late_answer() -> None:
    bridge = _ready()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=8, mutation=True)
    )
    (settled,) = _natives(bridge.native_connected())
    assert settled.id == "r8" and settled.error.code == ErrorCode.AMBIGUOUS_DISCONNECT
    res = _first("turn", lambda m: m.get("id") == 1 and "result" in m)
    res["id"] = json.loads(sent.data)["id"]  # type: ignore[union-attr]
    assert bridge.receive_codex(_line(res)) == []  # nothing to the new connection


# -- 12. bounds and stable stream ids -----------------------------------------------


def test_pending_bound_is_limit_exceeded() -> None:
    bridge = CodexBridge(host_id="u", max_pending=1)
    bridge.native_request(_init())
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    bridge.native_request(_request("thread/read", ThreadReadParams(thread_id="t"), n=2))
    (refused,) = _natives(
        bridge.native_request(
            _request("thread/read", ThreadReadParams(thread_id="t"), n=3)
        )
    )
    assert refused.error.code == ErrorCode.LIMIT_EXCEEDED


def test_approval_and_stream_bounds_are_limit_exceeded() -> None:
    bridge = CodexBridge(host_id="u", max_approvals=1, max_streams=1)
    bridge.native_request(_init())
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    ask = _ask()
    bridge.receive_codex(_line(ask))
    ask["id"] = 12345
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(_line(ask))
    assert (info.value.code, info.value.origin) == (ErrorCode.LIMIT_EXCEEDED, "peer")
    delta = _method("item/agentMessage/delta")
    bridge.receive_codex(_line(delta))
    delta["params"]["threadId"] = "another"
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(_line(delta))
    assert info.value.code == ErrorCode.LIMIT_EXCEEDED


def test_unmapped_counter_has_bounded_keys() -> None:
    bridge = CodexBridge(host_id="u", max_unmapped_methods=3)
    for i in range(10):
        bridge.receive_codex(_line({"method": f"new/m{i}", "params": {}}))
    assert len(bridge.unmapped_notifications) == 4
    assert bridge.unmapped_notifications[UNMAPPED_OVERFLOW] == 7


def test_response_shape_is_kept() -> None:
    # the answer to a native request keeps its command_id (a Response)
    bridge = _ready()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    res = _first("turn", lambda m: m.get("id") == 1 and "result" in m)
    res["id"] = json.loads(sent.data)["id"]  # type: ignore[union-attr]
    (answer,) = _natives(bridge.receive_codex(_line(res)))
    assert isinstance(answer, Response) and answer.command_id == "k3"


def test_lone_surrogate_escapes_are_invalid_utf8_as_in_the_core() -> None:
    # one rule for both: the core's load_json and decode say invalid_utf8
    line = b'{"method":"x/y","params":{"a":"\\ud800"}}'
    with pytest.raises(ProtocolError) as core:
        load_json(line, max_bytes=MAX_CODEX_LINE_BYTES, max_depth=MAX_CODEX_DEPTH)
    bridge = _ready()
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(line)
    assert (info.value.code, info.value.origin) == (ErrorCode.INVALID_UTF8, "peer")
    assert info.value.code is core.value.code
    assert bridge.unmapped_notifications == Counter()
