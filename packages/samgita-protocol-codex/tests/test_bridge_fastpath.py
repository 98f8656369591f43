"""receive_codex's one-decode paths agree with the two-stage decode; ToCodex.id;
native results are checked against their method's native schema."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from samgita_protocol import (
    ApprovalRequestResult,
    ErrorCode,
    InputItem,
    ProtocolError,
    Request,
    Response,
    ThreadStartParams,
    TurnStartParams,
)

import samgita_protocol_codex._codex_lines as lines_module
from samgita_protocol_codex import BridgeReport, CodexBridge, ToCodex, ToNative
from test_bridge_recorded import NOW, Harness, _load
from test_bridge_review import (
    _first,
    _init,
    _line,
    _natives,
    _ready,
    _request,
    _state,
)


@pytest.fixture
def two_stage(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Runs a callable with the one-decode tables empty (every line in two stages)."""

    def run(fn: Any) -> Any:
        with monkeypatch.context() as m:
            m.setattr(lines_module, "_NOTIFICATION_LINES", {})
            m.setattr(lines_module, "_RESULT_LINES", {})
            m.setattr(lines_module, "_DELTA_LINES", {})
            return fn()

    return run


def _played(name: str, approve: bool | None) -> tuple[list[Any], list[Any]]:
    h = Harness()
    h.bridge = CodexBridge(host_id="codex-test", now=lambda: NOW, instance_id="same")
    h.play(name, approve=approve)
    return h.native, h.codex_sent


@pytest.mark.parametrize(
    ("name", "approve"),
    [
        ("turn", None),
        ("interrupt", None),
        ("approval_accept", True),
        ("approval_decline", False),
    ],
)
def test_recordings_translate_the_same_in_one_decode_and_in_two(
    name: str, approve: bool | None, two_stage: Any
) -> None:
    fast = _played(name, approve)
    slow = two_stage(lambda: _played(name, approve))
    assert fast == slow
    assert any(isinstance(m, ToNative) or hasattr(m, "method") for m in fast[0])


def _ready_same() -> CodexBridge:
    # _ready with a fixed instance id, so two bridges' stream ids are equal
    bridge = CodexBridge(host_id="unit", instance_id="same")
    bridge.native_request(_init())
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    return bridge


def _outcome(bridge: CodexBridge, line: bytes) -> Any:
    try:
        out = bridge.receive_codex(line)
    except ProtocolError as exc:
        return ("raised", exc.code, exc.message, exc.data, exc.origin, _state(bridge))
    return ("out", out, _state(bridge))


def _delta() -> dict[str, Any]:
    return _first("turn", lambda m: m.get("method") == "item/agentMessage/delta")


def _variants() -> list[Any]:
    d = _delta()
    bad_type = copy.deepcopy(d)
    bad_type["params"]["delta"] = 5
    no_params = {k: v for k, v in d.items() if k != "params"}
    bad_error = dict(d, error=5)
    good_error = dict(d, error={"code": 1, "message": "x"})
    with_result = dict(d, result=[1, {"a": None}])
    null_id = dict(d, id=None)
    return [d, bad_type, no_params, bad_error, good_error, with_result, null_id]


@pytest.mark.parametrize("index", range(7))
def test_notification_variants_decode_the_same_in_one_decode_and_in_two(
    index: int, two_stage: Any
) -> None:
    line = _line(_variants()[index])
    fast = _outcome(_ready_same(), line)
    slow = two_stage(lambda: _outcome(_ready_same(), line))
    assert fast == slow


def _answered(result: Any, extra: dict[str, Any] | None = None) -> Any:
    bridge = _ready_same()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    assert isinstance(sent, ToCodex) and isinstance(sent.id, int)
    msg: dict[str, Any] = {"id": sent.id, "result": result, **(extra or {})}
    return _outcome(bridge, _line(msg))


def _thread_result() -> Any:
    res = _first("turn", lambda m: m.get("id") == 1 and "result" in m)
    return res["result"]


@pytest.mark.parametrize(
    ("result", "extra"),
    [
        (_thread_result(), None),
        (_thread_result(), {"params": {"x": [1]}}),
        ({"thread": {"id": 5}}, None),
        (None, None),
        (_thread_result(), {"error": {"code": -1, "message": "boom"}}),
        (_thread_result(), {"error": 5}),
        (_thread_result(), {"method": 5}),
    ],
)
def test_result_variants_decode_the_same_in_one_decode_and_in_two(
    result: Any, extra: dict[str, Any] | None, two_stage: Any
) -> None:
    fast = _answered(copy.deepcopy(result), extra)
    slow = two_stage(lambda: _answered(copy.deepcopy(result), extra))
    assert fast == slow


def test_to_codex_id_is_the_json_rpc_id_of_the_line() -> None:
    bridge = CodexBridge(host_id="unit")
    (init,) = bridge.native_request(_init())
    assert isinstance(init, ToCodex) and init.id == 0
    out = bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    note = next(o for o in out if isinstance(o, ToCodex))
    assert note.id is None and json.loads(note.data) == {"method": "initialized"}
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    assert isinstance(sent, ToCodex) and sent.id == json.loads(sent.data)["id"] == 1
    # an answer to a Codex server request carries Codex's id
    (refused, _) = bridge.receive_codex(b'{"id":"s-7","method":"x/y","params":{}}')
    assert isinstance(refused, ToCodex) and refused.id == "s-7"
    assert json.loads(refused.data)["id"] == "s-7"
    approval = next(
        m
        for m in _load("approval_accept")
        if m["msg"].get("method", "").endswith("requestApproval")
    )["msg"]
    (ask,) = bridge.receive_codex(_line(approval))
    assert isinstance(ask, ToNative) and isinstance(ask.message, Request)
    params: Any = ask.message.params
    answer = Response(
        id=ask.message.id,
        correlation_id=str(ask.message.correlation_id),
        result=ApprovalRequestResult(
            approval_id=params.approval_id, action=params.action, decision="deny"
        ),
    )
    (declined,) = bridge.native_response(answer)
    assert isinstance(declined, ToCodex) and declined.id == approval["id"]


@pytest.mark.parametrize(
    "turn_id", ["x" * 257, "é" * 129, ""], ids=["257 bytes", "258 UTF-8", "empty"]
)
def test_a_codex_result_the_native_schema_cannot_carry_is_an_invalid_reply(
    turn_id: str,
) -> None:
    # before, a 300-byte Codex turn id went out in a native Response that the
    # native peer's decode_result refused: the bridge checks results itself
    bridge = _ready()
    res = _first("turn", lambda m: m.get("id") == 2 and "result" in m)
    thread_id = _thread_result()["thread"]["id"]
    (sent,) = bridge.native_request(
        _request(
            "turn/start",
            TurnStartParams(
                thread_id=thread_id, input=[InputItem(type="text", text="hi")]
            ),
            n=4,
            mutation=True,
        )
    )
    assert isinstance(sent, ToCodex)
    res["id"] = sent.id
    res["result"]["turn"]["id"] = turn_id
    out = bridge.receive_codex(_line(res))
    (answer,) = _natives(out)
    assert answer.id == "r4" and answer.error.code == ErrorCode.INVALID_RESULT
    assert answer.error.data["codex_method"] == "turn/start"
    assert any(isinstance(o, BridgeReport) and o.kind == "invalid_reply" for o in out)
    assert not bridge._link.pending


def test_deltas_and_results_take_the_one_decode_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bridge = _ready_same()
    (sent,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=3, mutation=True)
    )
    assert isinstance(sent, ToCodex)

    class NoEnvelope:
        def decode(self, data: bytes) -> Any:
            raise AssertionError("decoded in two stages")

    monkeypatch.setattr(lines_module, "_ENVELOPE", NoEnvelope())
    (answer,) = _natives(
        bridge.receive_codex(_line({"id": sent.id, "result": _thread_result()}))
    )
    assert answer.id == "r3" and answer.error is msgspec.UNSET
    (delta,) = _natives(bridge.receive_codex(_line(_delta())))
    assert delta.method == "item/delta" and delta.cursor == 1


def test_native_request_refuses_what_is_not_a_request() -> None:
    bridge = _ready_same()
    for value in ({"method": "turn/start"}, "turn/start", None):
        with pytest.raises(TypeError, match="expected request to be"):
            bridge.native_request(value)  # type: ignore[arg-type]


def test_forwarding_follows_the_negotiated_groups_and_the_link() -> None:
    # sessions.v1 not negotiated: unsupported, nothing sent to Codex
    bridge = CodexBridge(host_id="unit", instance_id="same")
    bridge.native_request(_init(groups=["streaming.v1"]))
    bridge.receive_codex(
        _line(_first("turn", lambda m: m.get("id") == 0 and "result" in m))
    )
    (out,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=2, mutation=True)
    )
    assert isinstance(out, ToNative)
    assert out.message.error.code == ErrorCode.UNSUPPORTED  # type: ignore[union-attr]
    # a replaced native connection forwards nothing before its initialize
    bridge = _ready_same()
    bridge.native_connected()
    (out,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=2, mutation=True)
    )
    assert isinstance(out, ToNative)
    assert out.message.error.code == ErrorCode.NOT_INITIALIZED  # type: ignore[union-attr]
    # the Codex link down: disconnected
    bridge = _ready_same()
    bridge.codex_disconnected()
    (out,) = bridge.native_request(
        _request("thread/start", ThreadStartParams(), n=2, mutation=True)
    )
    assert isinstance(out, ToNative)
    assert out.message.error.code == ErrorCode.DISCONNECTED  # type: ignore[union-attr]


def test_the_strict_variant_decoders_agree_with_the_client_request_union() -> None:
    union = lines_module._STRICT_REQUEST
    assert set(lines_module._STRICT_REQUESTS) == set(lines_module._SENT_METHODS)
    seen = set()
    for name, approve in [("turn", None), ("interrupt", None)]:
        _, sent = _played(name, approve)
        for msg in sent:
            if "method" not in msg or "id" not in msg:
                continue
            variant, decoder = lines_module._STRICT_REQUESTS[msg["method"]]
            line = json.dumps(msg).encode()
            assert type(union.decode(line)) is variant
            assert decoder.decode(line) == union.decode(line)
            seen.add(msg["method"])
            # unknown fields are forbidden by both, in params and at the top
            for bad in (
                dict(msg, params=dict(msg["params"], typo=1)),
                dict(msg, typo=1),
            ):
                bad_line = json.dumps(bad).encode()
                with pytest.raises(msgspec.ValidationError):
                    union.decode(bad_line)
                with pytest.raises(msgspec.ValidationError):
                    decoder.decode(bad_line)
            # another method's tag is refused by the variant's decoder
            other = json.dumps(dict(msg, method="thread/list")).encode()
            with pytest.raises(msgspec.ValidationError):
                decoder.decode(other)
    assert {"initialize", "thread/start", "turn/start", "turn/interrupt"} <= seen


# -- the delta line proven by its own encoding (_codex_lines.delta_line) ----------


def _wire(
    d: dict[str, Any], keys: tuple[str, ...] = ("method", "params", "emittedAtMs")
) -> bytes:
    # as codex-cli 0.163.0 writes a delta line (seen on the wire): compact, raw
    # UTF-8, method, params (threadId, turnId, itemId, delta), emittedAtMs
    params = {k: d["params"][k] for k in ("threadId", "turnId", "itemId", "delta")}
    msg = {k: (params if k == "params" else d[k]) for k in keys if k in d}
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode()


def _delta_lines() -> list[bytes]:
    d = _delta()
    assert "emittedAtMs" in d
    text = _wire(d)
    no_stamp = _wire(d, ("method", "params"))
    sorted_keys = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
    spaced = text.replace(b",", b", ")
    return [
        text,  # the proven case
        no_stamp,  # also proven
        sorted_keys,
        spaced,
        text.replace(b'"delta":"', b'"delta":"x","delta":"', 1),  # repeated key
        text.replace(b'"itemId":', b'"extra":1,"itemId":', 1),  # unknown field
        text.replace(b'"delta":"', b'"delta":"\\ud800', 1),  # lone surrogate
        text.replace(b'"delta":"', b'"delta":"\\u00e9', 1),  # escaped letter
        text.replace(b'"delta":"', b'"delta":"\\/', 1),  # escaped slash
        text.replace(b'"delta":"', b'"delta":"\xff', 1),  # not UTF-8
        text.replace(b'"delta":"', '"delta":"caf\u00e9 \u2713 '.encode(), 1),
        text.replace(b'"emittedAtMs":', b'"x":1,"emittedAtMs":', 1),
        text.replace(b'"emittedAtMs":', b'"emittedAtMs":1e3,"y":', 1),
        text.replace(b'"emittedAtMs":', b'"emittedAtMs":' + b"9" * 30 + b',"z":', 1),
        text.replace(b"item/agentMessage/delta", b"item/agentMessage/deltaX", 1),
        text[:-1] + b"",  # truncated
        # proven, but an item id the native schema cannot carry: a peer error
        text.replace(b'"itemId":"', b'"itemId":"' + b"i" * 300, 1),
    ]


@pytest.mark.parametrize("index", range(17))
def test_delta_lines_translate_the_same_with_and_without_the_proof(
    index: int, two_stage: Any
) -> None:
    line = _delta_lines()[index]
    fast = _outcome(_ready_same(), line)
    slow = two_stage(lambda: _outcome(_ready_same(), line))
    assert fast == slow


def test_the_delta_proof_takes_lines_as_codex_writes_them_only() -> None:
    lines = _delta_lines()
    assert lines_module.delta_line(lines[0]) is not None
    assert lines_module.delta_line(lines[1]) is not None
    assert lines_module.delta_line(lines[10]) is not None  # raw UTF-8 text
    assert lines_module.delta_line(lines[16]) is not None  # the ids unchecked yet
    for line in lines[2:10] + lines[11:16]:
        assert lines_module.delta_line(line) is None, line[:120]
    assert lines_module.delta_line(lines[0] + b" ") is None


def test_a_delta_line_over_the_line_bound_is_refused_by_both_paths(
    monkeypatch: pytest.MonkeyPatch, two_stage: Any
) -> None:
    line = _delta_lines()[0]
    fast_bridge = _ready_same()
    slow_bridge = two_stage(_ready_same)
    monkeypatch.setattr(lines_module, "MAX_CODEX_LINE_BYTES", len(line) - 1)
    assert lines_module.delta_line(line) is None
    fast = _outcome(fast_bridge, line)
    slow = two_stage(lambda: _outcome(slow_bridge, line))
    assert fast == slow
    assert fast[0] == "raised" and fast[1] == ErrorCode.MESSAGE_TOO_LARGE


def test_a_proven_delta_line_the_native_schema_refuses_is_a_peer_error() -> None:
    # the proven path raises as every other line does: origin "peer" (it let
    # the core encoder's error out with origin "local" before)
    outcome = _outcome(_ready_same(), _delta_lines()[16])
    assert outcome[:2] == ("raised", ErrorCode.INVALID_FIELD)
    assert outcome[4] == "peer"
