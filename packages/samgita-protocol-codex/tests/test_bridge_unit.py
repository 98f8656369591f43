"""CodexBridge rules on synthetic input built from recorded Codex values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from samgita_protocol import (
    ErrorCode,
    InitializeParams,
    InputItem,
    ProtocolError,
    Request,
    Response,
    ThreadReadParams,
    TurnSteerParams,
)

from samgita_protocol_codex import CodexBridge, CodexUnmapped, ToCodex, ToNative

RECORDING = Path(__file__).parent / "recordings" / "turn.jsonl"


def _recorded() -> list[dict[str, Any]]:
    return [json.loads(line)["msg"] for line in RECORDING.read_text().splitlines()]


def _request(
    method: str, params: msgspec.Struct, n: int = 1, mutation: bool = False
) -> Request:
    return Request(
        method=method, id=f"r{n}", correlation_id=f"c{n}", params=params,
        command_id=f"k{n}" if mutation else msgspec.UNSET,
    )  # fmt: skip


def _ready(groups: list[str] | None = None) -> CodexBridge:
    bridge = CodexBridge(host_id="unit")
    caps = (
        groups
        if groups is not None
        else ["sessions.v1", "streaming.v1", "approvals.v1"]
    )
    out = bridge.native_request(
        _request(
            "connection/initialize",
            InitializeParams(versions=["1.0"], capabilities=caps),
        )
    )
    assert isinstance(out[0], ToCodex)
    init = next(m for m in _recorded() if m.get("id") == 0 and "result" in m)
    bridge.receive_codex(json.dumps(init).encode())
    return bridge


def _sent(out: list[Any]) -> dict[str, Any]:
    assert isinstance(out[0], ToCodex)
    return json.loads(out[0].data)  # type: ignore[no-any-return]


def test_requests_before_initialize_are_refused() -> None:
    bridge = CodexBridge(host_id="unit")
    (out,) = bridge.native_request(
        _request("thread/read", ThreadReadParams(thread_id="t"))
    )
    assert (
        isinstance(out, ToNative)
        and out.message.error.code == ErrorCode.NOT_INITIALIZED
    )


def test_group_not_negotiated_is_unsupported() -> None:
    bridge = _ready(["sessions.v1"])
    line = b'{"id":5,"method":"item/commandExecution/requestApproval","params":{}}'
    out = bridge.receive_codex(line)
    assert json.loads(out[0].data)["error"]["message"].endswith("not negotiated")  # type: ignore[union-attr]
    assert out[1] == CodexUnmapped(
        kind="request", method="item/commandExecution/requestApproval"
    )


def test_missing_required_capability() -> None:
    bridge = CodexBridge(host_id="unit")
    params = InitializeParams(
        versions=["1.0"],
        capabilities=["project_events.v1"],
        required_capabilities=["project_events.v1"],
    )
    (out,) = bridge.native_request(_request("connection/initialize", params))
    assert out.message.error.code == ErrorCode.MISSING_REQUIRED_CAPABILITY  # type: ignore[union-attr]
    assert out.message.error.data == {"missing": ["project_events.v1"]}  # type: ignore[union-attr]


def test_steer_sends_expected_turn_id() -> None:
    bridge = _ready()
    steer = TurnSteerParams(
        thread_id="t", turn_id="u", input=[InputItem(type="text", text="more")]
    )
    sent = _sent(bridge.native_request(_request("turn/steer", steer, mutation=True)))
    assert sent["method"] == "turn/steer"
    assert sent["params"]["expectedTurnId"] == "u" and sent["params"]["threadId"] == "t"
    (out,) = bridge.receive_codex(
        json.dumps({"id": sent["id"], "result": {"turnId": "u"}}).encode()
    )
    assert isinstance(out, ToNative)
    assert out.message.result.turn.turn_id == "u"  # type: ignore[union-attr]


def test_thread_read_maps_thread_and_turns() -> None:
    bridge = _ready()
    msgs = _recorded()
    thread = next(
        m["result"]["thread"] for m in msgs if m.get("id") == 1 and "result" in m
    )
    turn = next(
        m["params"]["turn"] for m in msgs if m.get("method") == "turn/completed"
    )
    sent = _sent(
        bridge.native_request(
            _request("thread/read", ThreadReadParams(thread_id=thread["id"]))
        )
    )
    assert sent["params"] == {"threadId": thread["id"], "includeTurns": True}
    reply = {"id": sent["id"], "result": {"thread": {**thread, "turns": [turn]}}}
    (out,) = bridge.receive_codex(json.dumps(reply).encode())
    result = out.message.result  # type: ignore[union-attr]
    assert result.thread.thread_id == thread["id"]
    assert [t.status for t in result.turns] == ["completed"]


def test_codex_error_becomes_a_native_error_naming_the_method() -> None:
    bridge = _ready()
    sent = _sent(
        bridge.native_request(
            _request("thread/read", ThreadReadParams(thread_id="nope"))
        )
    )
    line = json.dumps(
        {"id": sent["id"], "error": {"code": -32600, "message": "thread not found"}}
    )
    (out,) = bridge.receive_codex(line.encode())
    error = out.message.error  # type: ignore[union-attr]
    assert error.code == ErrorCode.INTERNAL_ERROR and "thread/read" in error.message
    assert error.data == {"codex_code": -32600, "codex_method": "thread/read"}


def test_response_to_nothing_and_garbage_are_protocol_errors() -> None:
    bridge = _ready()
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(b'{"id":99,"result":{}}')
    assert info.value.code == ErrorCode.UNKNOWN_RESPONSE
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(b"not json")
    assert info.value.code == ErrorCode.INVALID_JSON
    with pytest.raises(ProtocolError) as info:
        bridge.receive_codex(b'{"method":"turn/started","params":{"threadId":1}}')
    assert info.value.code == ErrorCode.INVALID_MESSAGE


def test_unknown_notification_is_counted_and_surfaced() -> None:
    bridge = _ready()
    out = bridge.receive_codex(b'{"method":"someday/new","params":{"x":1}}')
    assert out == [CodexUnmapped(kind="notification", method="someday/new")]
    assert bridge.unmapped_notifications["someday/new"] == 1


def test_answer_to_unknown_approval_is_refused() -> None:
    bridge = _ready()
    with pytest.raises(ProtocolError) as info:
        bridge.native_response(Response(id="nope", correlation_id="nope", result={}))
    assert info.value.code == ErrorCode.UNKNOWN_REQUEST
