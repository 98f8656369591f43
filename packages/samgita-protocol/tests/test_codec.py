"""Codec behaviour: each check's code, the order of the checks, encode's
validation, and the schema helpers convert_params / decode_result / validate."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import samgita_protocol as sp
from samgita_protocol import ErrorCode as C
from samgita_protocol._validate import explain

DELTA: dict[str, Any] = {
    "schema_version": "1.0",
    "type": "notification",
    "method": "item/delta",
    "params": {"thread_id": "t", "turn_id": "u", "item_id": "i", "delta": "d"},
}


def _code(
    data: bytes | str, **options: Any
) -> tuple[sp.ErrorCode, dict[str, Any] | None]:
    with pytest.raises(sp.ProtocolError) as caught:
        sp.decode(data, **options)
    error = caught.value
    assert error.origin == "peer"
    if isinstance(data, bytes) and len(data) <= options.get(
        "max_message_bytes", 1 << 20
    ):
        with pytest.raises(sp.ProtocolError) as exact:
            explain(data)
        assert exact.value == error
    return error.code, error.data


def _with(**changes: Any) -> bytes:
    value = json.loads(json.dumps(DELTA))
    for key, new in changes.items():
        if new is None:
            value.pop(key, None)
        else:
            value[key] = new
    return json.dumps(value).encode()


# -- order of checks -----------------------------------------------------------------------


def test_size_comes_before_everything() -> None:
    assert _code(b"\xff" * 11, max_message_bytes=10)[0] == C.MESSAGE_TOO_LARGE
    assert (
        _code("é" * 6, max_message_bytes=11)[0] == C.MESSAGE_TOO_LARGE
    )  # 12 UTF-8 bytes


def test_oversize_text_and_buffers_are_refused_before_encoding_or_copying() -> None:
    from samgita_protocol import decode

    encoded: list[str] = []

    class Text(str):
        def encode(self, *args: Any, **kwargs: Any) -> bytes:
            encoded.append("called")
            return super().encode(*args, **kwargs)

    with pytest.raises(sp.ProtocolError) as raised:
        decode(Text("x" * 11), max_message_bytes=10)
    assert raised.value.code == C.MESSAGE_TOO_LARGE
    assert raised.value.data == {"bytes": 11, "max": 10}
    assert encoded == []  # len() already proves it too large
    # Within the bound by code points, over it in UTF-8: sized after encoding.
    with pytest.raises(sp.ProtocolError) as raised:
        decode(Text("é" * 6), max_message_bytes=11)
    assert raised.value.data == {"bytes": 12, "max": 11}
    assert encoded == ["called"]
    for buffer in (bytearray(b"x" * 11), memoryview(b"x" * 11)):
        with pytest.raises(sp.ProtocolError) as raised:
            decode(buffer, max_message_bytes=10)
        assert raised.value.data == {"bytes": 11, "max": 10}
    words = memoryview(bytearray(12)).cast("I")  # 3 items, 12 bytes
    with pytest.raises(sp.ProtocolError) as raised:
        decode(words, max_message_bytes=10)
    assert raised.value.data == {"bytes": 12, "max": 10}
    good = json.dumps(DELTA).encode()
    assert decode(bytearray(good)) == decode(good) == decode(memoryview(good))


def test_utf8_comes_before_depth_and_syntax() -> None:
    assert _code(b"[" * 40 + b"\xff")[0] == C.INVALID_UTF8
    assert _code("\ud800")[0] == C.INVALID_UTF8  # a str that no UTF-8 can hold


def test_syntax_comes_before_depth() -> None:
    # invalid JSON is refused by msgspec's one pass before any depth analysis
    # (a depth scan of invalid input has no meaning, and cost quadratic time)
    assert _code(b"[" * 33)[0] == C.INVALID_JSON
    assert _code(b"[" * 33 + b'"' + b'\\"' * 100)[0] == C.INVALID_JSON
    assert _code(b"[" * 33 + b"]" * 33)[0] == C.DEPTH_EXCEEDED


def test_depth_comes_before_duplicates_and_schema() -> None:
    assert _code(b'{"a":1,"a":' + b"[" * 33 + b"]" * 33 + b"}")[0] == C.DEPTH_EXCEEDED
    deep = b'{"schema_version":"2.0","x":' + b"[" * 32 + b"]" * 32 + b"}"
    assert _code(deep)[0] == C.DEPTH_EXCEEDED
    # Brackets inside strings are not nesting.
    value = json.loads(_with())
    value["params"]["delta"] = "[" * 100
    assert isinstance(sp.decode(json.dumps(value)), sp.Notification)


def test_very_deep_input_is_depth_exceeded_without_recursion() -> None:
    for opener in (b"[", b'{"a":'):
        assert _code(opener * 200_000)[0] == C.DEPTH_EXCEEDED


def test_syntax_errors_are_invalid_json() -> None:
    for data in (b"", b"{", b'{"a":1} {}', b"{}x", b"nul", b'{"a":01}', b"{'a':1}"):
        assert _code(data)[0] == C.INVALID_JSON, data


def test_duplicates_come_before_schema() -> None:
    code, data = _code(b'{"schema_version":"9","schema_version":"9"}')
    assert code == C.DUPLICATE_KEY
    assert data == {"key": "schema_version", "path": "/schema_version"}


def test_duplicate_key_paths_name_array_indices() -> None:
    data = b'{"a":[{"b":1},{"c":1,"c":2}]}'
    assert _code(data) == (C.DUPLICATE_KEY, {"key": "c", "path": "/a/1/c"})


def test_duplicate_keys_in_every_spelling() -> None:
    for raw in (
        b'{"schema_version":"1.0","type":"notification","method":"thread/closed","params":{"thread_id":"a","thread_id":"a"}}',
        b'{"schema_version":"1.0","type":"notification","method":"thread/closed","params":{"thread_id":"a", "thread_id" :"b"}}',
        b'{"schema_version":"1.0","type":"notification","method":"thread/closed","params":{"thread_id":"a","thread\\u005fid":"b"}}',
        b'{"schema_version":"1.0","type":"notification","type":"notification","method":"thread/closed","params":{"thread_id":"a"}}',
        b'{"type":"notification","schema_version":"1.0","type":"request","method":"thread/closed","params":{"thread_id":"a"}}',
        b'{"type":"request","schema_version":"1.0","method":"thread/read","id":"1","correlation_id":"1","params":{"thread_id":"a"},"type":"request"}',
    ):
        assert _code(raw)[0] == C.DUPLICATE_KEY, raw


def test_a_duplicate_cannot_hide_a_missing_schema_version() -> None:
    # Decoding fills schema_version with its default: one key too many
    # (the duplicate) and one too few (schema_version) must not cancel out.
    data = b'{"type":"notification","method":"thread/closed","params":{"thread_id":"a","thread_id":"b"}}'
    assert _code(data)[0] == C.DUPLICATE_KEY
    data = (
        b'{"type":"notification","method":"thread/closed","params":{"thread_id":"a"}}'
    )
    assert _code(data) == (C.MISSING_FIELD, {"path": "/schema_version"})


def test_response_result_duplicates_are_found() -> None:
    data = b'{"schema_version":"1.0","type":"response","id":"r","correlation_id":"c","result":{"a":1,"a":1}}'
    assert _code(data) == (C.DUPLICATE_KEY, {"key": "a", "path": "/result/a"})


def test_schema_checks_in_reference_order() -> None:
    assert _code(b"[]")[0] == C.INVALID_MESSAGE
    assert _code(b'"x"')[0] == C.INVALID_MESSAGE
    assert _code(_with(schema_version="2.0", type="bogus"))[0] == C.UNSUPPORTED_VERSION
    assert _code(_with(schema_version=1.0))[0] == C.UNSUPPORTED_VERSION
    assert _code(_with(type=None))[0] == C.MISSING_FIELD
    assert _code(_with(type="bogus", method="nope"))[0] == C.INVALID_TYPE
    assert _code(_with(method="nope", params=[]))[0] == C.UNKNOWN_METHOD
    assert _code(_with(method=7))[0] == C.INVALID_FIELD
    assert _code(_with(method=None))[0] == C.MISSING_FIELD
    assert _code(_with(params=None))[0] == C.MISSING_FIELD
    assert _code(_with(params="x", stream_id="s"))[0] == C.UNPAIRED_STREAM_POSITION
    assert _code(_with(params="x"))[0] == C.INVALID_PARAMS
    assert _code(_with(extra=1)) == (
        C.UNKNOWN_FIELD,
        {"field": "extra", "path": "/extra"},
    )
    assert _code(_with(task_ref="t")) == (
        C.TASK_REF_WITHOUT_PROJECT_REF,
        {"path": "/task_ref"},
    )
    assert _code(_with(stream_id="s", cursor=0))[0] == C.INVALID_FIELD
    assert _code(_with(stream_id="s", cursor=True))[0] == C.INVALID_FIELD
    assert _code(_with(stream_id="s", cursor=1.0))[0] == C.INVALID_FIELD
    assert _code(_with(correlation_id=""))[0] == C.INVALID_FIELD


def test_a_request_command_id_is_checked_before_its_params() -> None:
    value = {
        "schema_version": "1.0",
        "type": "request",
        "id": "1",
        "correlation_id": "1",
        "method": "turn/interrupt",
        "params": {"bogus": 1},
    }
    assert _code(json.dumps(value))[0] == C.MISSING_COMMAND_ID
    value["method"] = "thread/read"
    value["command_id"] = "c"
    assert _code(json.dumps(value))[0] == C.UNEXPECTED_COMMAND_ID
    value["method"] = "item/delta"
    assert _code(json.dumps(value)) == (C.UNKNOWN_METHOD, {"path": "/method"})


def test_ids_count_utf8_bytes() -> None:
    for good in ("é" * 128, "x" * 256, "😀" * 64):
        assert isinstance(sp.decode(_with(correlation_id=good)), sp.Notification)
    for bad in ("é" * 129, "x" * 257, "😀" * 65):
        assert _code(_with(correlation_id=bad))[0] == C.INVALID_FIELD
        # The same string spelled with \u escapes (pure ASCII on the wire).
        escaped = json.dumps(
            {**DELTA, "correlation_id": bad}, ensure_ascii=True
        ).encode()
        assert escaped.isascii()
        code, data = _code(escaped)
        assert (code, data and data["path"]) == (C.INVALID_FIELD, "/correlation_id")
    # Within 256 code points but over 256 bytes: only the byte rule sees it.
    assert _code(_with(correlation_id="é" * 129)) == (
        C.INVALID_FIELD,
        {"path": "/correlation_id", "bytes": 258},
    )


@pytest.mark.parametrize(
    ("stamp", "ok"),
    [
        ("2024-02-29T23:59:59Z", True),
        ("2023-02-29T00:00:00Z", False),
        ("1900-02-29T00:00:00Z", False),
        ("2000-02-29T00:00:00Z", True),
        ("2026-04-31T00:00:00Z", False),
        ("2026-01-01T24:00:00Z", False),
        ("2026-01-01T00:60:00Z", False),
        ("2026-01-01T00:00:60Z", False),
        ("2026-01-01T00:00:00.123456789Z", True),
        ("2026-01-01T00:00:00.1234567890Z", False),
        ("2026-01-01T00:00:00.Z", False),
        ("2026-01-01T00:00:00+00:00", False),
        ("2026-01-01T00:00:00z", False),
        ("2026-01-01T00:00:00Z\n", False),
        ("２０２６-01-01T00:00:00Z", False),
        ("2026-00-01T00:00:00Z", False),
        ("0000-01-01T00:00:00Z", False),
        ("0000-02-29T00:00:00Z", False),
        ("0001-01-01T00:00:00Z", True),
        ("9999-12-31T23:59:59Z", True),
    ],
)
def test_timestamps_are_real_utc_calendar_times(stamp: str, ok: bool) -> None:
    value = {
        "schema_version": "1.0",
        "type": "notification",
        "method": "thread/started",
        "params": {"thread": {"thread_id": "t", "status": "idle", "created_at": stamp}},
    }
    data = json.dumps(value).encode()
    if ok:
        assert isinstance(sp.decode(data), sp.Notification)
    else:
        assert _code(data) == (C.INVALID_FIELD, {"path": "/params/thread/created_at"})


def test_responses() -> None:
    base = {
        "schema_version": "1.0",
        "type": "response",
        "id": "r",
        "correlation_id": "c",
    }
    assert _code(json.dumps(base))[0] == C.INVALID_RESPONSE
    assert _code(json.dumps({**base, "result": []}))[0] == C.INVALID_RESPONSE
    assert _code(json.dumps({**base, "result": None}))[0] == C.INVALID_RESPONSE
    error = {"code": "timeout", "message": "m"}
    assert (
        _code(json.dumps({**base, "result": {}, "error": error}))[0]
        == C.INVALID_RESPONSE
    )
    assert _code(json.dumps({**base, "error": {"code": "nope", "message": "m"}})) == (
        C.INVALID_FIELD,
        {"path": "/error/code"},
    )
    assert _code(json.dumps({**base, "error": {**error, "x": 1}}))[0] == C.UNKNOWN_FIELD
    assert (
        _code(json.dumps({**base, "error": {**error, "data": []}}))[0]
        == C.INVALID_FIELD
    )
    # message (1), error (2), data (3) + 30 more levels = 33.
    deep = {**error, "data": json.loads('{"a":' * 31 + "1" + "}" * 31)}
    assert _code(json.dumps({**base, "error": deep}))[0] == C.DEPTH_EXCEEDED
    ok = sp.decode(json.dumps({**base, "error": error}))
    assert isinstance(ok, sp.Response)
    assert ok.error == sp.ErrorObject(code=C.TIMEOUT, message="m")
    assert sp.ProtocolError.from_wire(ok.error) == sp.ProtocolError(
        "timeout", "m", origin="remote"
    )


def test_error_messages_never_echo_input_values() -> None:
    secret = "hunter2-secret-value"
    for data in (
        _with(schema_version=secret),
        _with(type=secret),
        _with(method=secret),
        json.dumps({**DELTA, "params": {**DELTA["params"], "delta": 5, secret * 4: 1}}),
        json.dumps({**DELTA, "cursor": secret}),
        b'{"a":"'
        + secret.encode()
        + b'",'
        + b'"'
        + secret.encode() * 4
        + b'":1,"'
        + secret.encode() * 4
        + b'":2}',
    ):
        with pytest.raises(sp.ProtocolError) as caught:
            sp.decode(data)
        assert secret not in str(caught.value)
        assert secret not in json.dumps(caught.value.data)


# -- fast path and exact path agree on equivalent spellings ------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        lambda v: json.dumps(v),
        lambda v: json.dumps(v, indent=2),
        lambda v: json.dumps(dict(reversed(list(v.items())))),
        lambda v: json.dumps(v, ensure_ascii=True).replace("d", "\\u0064"),
        lambda v: " \n" + json.dumps(v) + "\r\n\t",
    ],
)
def test_equivalent_spellings_decode_alike(spelling: Any) -> None:
    value = {**DELTA, "params": {**DELTA["params"], "delta": 'dé\n"q"'}}
    expected = sp.decode(sp.encode(sp.decode(json.dumps(value))))
    data = spelling(value).encode()
    assert sp.decode(data) == expected
    assert explain(data) == expected


# -- encode -----------------------------------------------------------------------------------


def _encode_error(message: Any, **options: Any) -> sp.ProtocolError:
    with pytest.raises(sp.ProtocolError) as caught:
        sp.encode(message, **options)
    assert caught.value.origin == "local"
    return caught.value


def test_encode_is_canonical_and_decodes_back() -> None:
    message = sp.Notification(
        method="item/delta",
        params=sp.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d"),
        stream_id="s",
        cursor=3,
    )
    wire = sp.encode(message)
    assert wire.startswith(
        b'{"type":"notification","schema_version":"1.0","method":"item/delta"'
    )
    assert b"null" not in wire  # unset optional fields are absent
    assert sp.decode(wire) == message


@pytest.mark.parametrize(
    "value",
    [
        None,
        1,
        "x",
        b"{}",
        {"type": "request"},
        sp.ErrorObject(code=C.TIMEOUT, message="m"),
    ],
)
def test_encode_rejects_what_is_not_a_message(value: Any) -> None:
    for call in (sp.encode, sp.validate):
        with pytest.raises(TypeError, match="expected message to be"):
            call(value)


def test_encode_validates_content() -> None:
    params = sp.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d")
    n = sp.Notification(method="item/delta", params=params)
    assert (
        _encode_error(msgspec.structs.replace(n, method="nope")).code
        == C.UNKNOWN_METHOD
    )
    assert (
        _encode_error(msgspec.structs.replace(n, cursor=1)).code
        == C.UNPAIRED_STREAM_POSITION
    )
    assert _encode_error(msgspec.structs.replace(n, task_ref="t")).code == (
        C.TASK_REF_WITHOUT_PROJECT_REF
    )
    assert (
        _encode_error(msgspec.structs.replace(n, params=[1])).code == C.INVALID_PARAMS
    )
    bad = msgspec.structs.replace(params, thread_id=5)
    assert _encode_error(msgspec.structs.replace(n, params=bad)).code == C.INVALID_FIELD
    assert (
        _encode_error(msgspec.structs.replace(n, params=object())).code
        == C.INVALID_FIELD
    )
    lone = msgspec.structs.replace(params, delta="\ud800")
    assert _encode_error(msgspec.structs.replace(n, params=lone)).code == C.INVALID_UTF8
    assert _encode_error(n, max_message_bytes=10).code == C.MESSAGE_TOO_LARGE
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    event = sp.Event(
        event_id="e",
        delivery_attempt_id="a",
        created_at="2026-01-01T00:00:00Z",
        correlation_id="c",
        event_type="t",
        payload={"x": deep},
    )
    request = sp.Request(
        id="1",
        correlation_id="1",
        method="project/event.receive",
        command_id="c",
        params=sp.EventReceiveParams(event=event),
    )
    assert _encode_error(request).code == C.DEPTH_EXCEEDED
    with pytest.raises(ValueError):
        sp.encode(n, max_message_bytes=0)


@pytest.mark.parametrize(
    ("payload", "code", "path"),
    [
        ({1: "x"}, C.INVALID_KEY, "/params/event/payload"),
        ({"a": (1, 2)}, C.INVALID_FIELD, "/params/event/payload/a"),
        ({"a": float("nan")}, C.INVALID_FIELD, "/params/event/payload/a"),
        ({"a": [float("inf")]}, C.INVALID_FIELD, "/params/event/payload/a/0"),
        ({"a": b"x"}, C.INVALID_FIELD, "/params/event/payload/a"),
        ({"a": {1, 2}}, C.INVALID_FIELD, "/params/event/payload/a"),
    ],
)
def test_encode_refuses_values_json_would_change(
    payload: Any, code: C, path: str
) -> None:
    event = sp.Event(
        event_id="e",
        delivery_attempt_id="a",
        created_at="2026-01-01T00:00:00Z",
        correlation_id="c",
        event_type="t",
        payload=payload,
    )
    request = sp.Request(
        id="1",
        correlation_id="1",
        method="project/event.receive",
        command_id="c",
        params=sp.EventReceiveParams(event=event),
    )
    error = _encode_error(request)
    assert (error.code, error.data) == (code, {"path": path})
    response = sp.Response(id="1", correlation_id="1", result={"a": payload})
    assert _encode_error(response).code == code


def test_validate_returns_the_message_or_raises_local() -> None:
    params = sp.ThreadClosedParams(thread_id="t")
    n = sp.Notification(method="thread/closed", params=params)
    assert sp.validate(n) is n
    with pytest.raises(sp.ProtocolError) as caught:
        sp.validate(msgspec.structs.replace(n, method="thread/start"))
    assert (caught.value.code, caught.value.origin) == (C.UNKNOWN_METHOD, "local")


# -- convert_params / decode_result -----------------------------------------------------------


def test_convert_params_from_mappings_and_structs() -> None:
    params = sp.convert_params("thread/read", {"thread_id": "t"})
    assert params == sp.ThreadReadParams(thread_id="t")
    assert sp.convert_params("thread/read", params) == params
    for value, code in (
        ({"thread_id": 1}, C.INVALID_FIELD),
        ({}, C.MISSING_FIELD),
        ({"thread_id": "t", "x": 1}, C.UNKNOWN_FIELD),
        ({"thread_id": "é" * 129}, C.INVALID_FIELD),
    ):
        with pytest.raises(sp.ProtocolError) as caught:
            sp.convert_params("thread/read", value)
        assert (caught.value.code, caught.value.origin) == (code, "local"), value
    # Not a params value at all, or an undefined method: the caller's mistake.
    for wrong in (sp.ThreadClosedParams(thread_id="t"), [("thread_id", "t")]):
        with pytest.raises(TypeError, match="expected value to be"):
            sp.convert_params("thread/read", wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'nope'"):
        sp.convert_params("nope", {})
    event = {
        "event_id": "e",
        "delivery_attempt_id": "a",
        "created_at": "2026-02-30T00:00:00Z",
        "correlation_id": "c",
        "event_type": "t",
        "payload": {},
    }
    with pytest.raises(sp.ProtocolError) as caught:
        sp.convert_params("project/event.receive", {"event": event})
    assert caught.value.data == {"path": "/params/event/created_at"}


def test_helpers_refuse_values_json_would_change() -> None:
    with pytest.raises(sp.ProtocolError) as caught:
        sp.convert_params("thread/start", {"metadata": {1: 2}})
    assert (caught.value.code, caught.value.origin) == (C.INVALID_KEY, "local")
    assert caught.value.data == {"path": "/params/metadata"}
    action = {"kind": "k", "description": "d", "details": {"x": (1,)}}
    result = {"approval_id": "a", "decision": "deny", "action": action}
    with pytest.raises(sp.ProtocolError) as caught:
        sp.decode_result("approval/request", result)
    assert caught.value.code == C.INVALID_RESULT
    assert caught.value.data == {
        "path": "/result/action/details/x",
        "reason": "invalid_field",
    }


def test_decode_result() -> None:
    raw = msgspec.Raw(b'{"thread_id":"t","turn_id":"u","interrupt_status":"requested"}')
    expected = sp.TurnInterruptResult(
        thread_id="t", turn_id="u", interrupt_status="requested"
    )
    assert sp.decode_result("turn/interrupt", raw) == expected
    assert sp.decode_result("turn/interrupt", expected) == expected
    assert (
        sp.decode_result("turn/interrupt", msgspec.structs.asdict(expected)) == expected
    )
    for bad, reason, path in (
        (b'{"thread_id":"t"}', "missing_field", "/result/turn_id"),
        (
            b'{"thread_id":"t","turn_id":"u","interrupt_status":"x"}',
            "invalid_field",
            "/result/interrupt_status",
        ),
        (
            b'{"thread_id":"t","thread_id":"t","turn_id":"u","interrupt_status":"requested"}',
            "duplicate_key",
            "/result/thread_id",
        ),
        (
            b'{"thread_id":"t","turn_id":"u","interrupt_status":"requested","x":1}',
            "unknown_field",
            "/result/x",
        ),
    ):
        with pytest.raises(sp.ProtocolError) as caught:
            sp.decode_result("turn/interrupt", msgspec.Raw(bad))
        error = caught.value
        assert (error.code, error.origin) == (C.INVALID_RESULT, "peer")
        assert error.data is not None
        assert (error.data["reason"], error.data["path"]) == (reason, path)
    with pytest.raises(ValueError, match="'item/delta'"):
        sp.decode_result("item/delta", raw)


def test_stream_resume_result_holds_full_notifications() -> None:
    event = sp.encode(
        sp.Notification(
            method="turn/completed",
            params=sp.TurnCompletedParams(
                turn=sp.Turn(turn_id="u", thread_id="t", status="completed")
            ),
            stream_id="s",
            cursor=1,
        )
    )
    good = b'{"stream_id":"s","cursor":1,"has_more":false,"events":[' + event + b"]}"
    result = sp.decode_result("stream/resume", msgspec.Raw(good))
    assert isinstance(result, sp.StreamResumeResult)
    assert result.events[0] == sp.decode(event)
    for bad, reason in (
        (event.replace(b',"cursor":1', b""), "unpaired_stream_position"),
        (event.replace(b'"schema_version":"1.0",', b""), "missing_field"),
        (event.replace(b'"type":"notification",', b""), "missing_field"),
        (event.replace(b'"params":{', b'"params":{"x":1,'), "unknown_field"),
        (event.replace(b'"turn/completed"', b'"turn/start"'), "unknown_method"),
        (event.replace(b'"1.0"', b'"2.0"'), "invalid_field"),
        (
            event.replace(
                b'"stream_id":"s"', b'"stream_id":"s","project_ref":"p","task_ref":"x"'
            ).replace(b'"project_ref":"p",', b""),
            "task_ref_without_project_ref",
        ),
    ):
        raw = msgspec.Raw(
            b'{"stream_id":"s","cursor":1,"has_more":false,"events":[' + bad + b"]}"
        )
        with pytest.raises(sp.ProtocolError) as caught:
            sp.decode_result("stream/resume", raw)
        assert caught.value.data is not None
        assert caught.value.data["reason"] == reason, bad
        assert caught.value.data["path"].startswith("/result/events/0")


def test_msgspec_escapes_only_control_characters() -> None:
    # The fast path relies on it: canonical ASCII bytes decode to ASCII
    # strings only if the encoder never spells other characters as \u.
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    escaped = re.findall(rb"\\u([0-9a-fA-F]{4})", msgspec.json.encode(every))
    assert escaped
    assert all(int(code, 16) < 0x20 for code in escaped)


def test_encode_checks_raw_json_spliced_in() -> None:
    raw = msgspec.Raw(b'{"thread_id":"a","thread_id":"b"}')
    n = sp.Notification(method="thread/closed", params=raw)
    assert _encode_error(n).code == C.DUPLICATE_KEY
    ok = sp.Notification(method="thread/closed", params={"thread_id": "a"})
    assert sp.decode(sp.encode(ok)) == sp.Notification(
        method="thread/closed", params=sp.ThreadClosedParams(thread_id="a")
    )
    event = sp.Event(
        event_id="e",
        delivery_attempt_id="a",
        created_at="2026-01-01T00:00:00Z",
        correlation_id="c",
        event_type="t",
        payload={"x": msgspec.Raw(b'{"k":1,"k":2}')},
    )
    request = sp.Request(
        id="1",
        correlation_id="1",
        method="project/event.receive",
        command_id="c",
        params=sp.EventReceiveParams(event=event),
    )
    assert _encode_error(request).code == C.DUPLICATE_KEY


def test_encode_checks_raw_json_in_a_struct_field() -> None:
    turn: Any = msgspec.Raw(
        b'{"turn_id":"u","turn_id":"v","thread_id":"t","status":"completed"}'
    )
    n = sp.Notification(method="turn/started", params=sp.TurnStartedParams(turn=turn))
    assert _encode_error(n).code == C.DUPLICATE_KEY


@pytest.mark.parametrize("bound", ["1024", 1.5, None, True])
def test_max_message_bytes_of_the_wrong_type_is_a_type_error(bound: object) -> None:
    for call in (
        lambda: sp.decode(b"{}", max_message_bytes=bound),  # type: ignore[arg-type]
        lambda: sp.encode(object(), max_message_bytes=bound),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match="max_message_bytes"):
            call()


@pytest.mark.parametrize("bound", [0, -1])
def test_max_message_bytes_out_of_range_is_a_value_error(bound: int) -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        sp.decode(b"{}", max_message_bytes=bound)


# -- the depth pre-check on long input ---------------------------------------------


@given(
    st.lists(
        st.sampled_from([b"{", b"[", b"}", b"]", b'"', b"x" * 700, b",", b":"]),
        max_size=60,
    ),
    st.integers(min_value=0, max_value=40),
)
@settings(max_examples=300, derandomize=True, deadline=None)
def test_the_bracket_pre_check_counts_exactly(parts: list[bytes], limit: int) -> None:
    from samgita_protocol._jsonscan import few_brackets

    data = b"".join(parts)
    assert few_brackets(data, limit) is (data.count(b"{") + data.count(b"[") <= limit)


@pytest.mark.parametrize("pad", [0, 5000, 70000])
def test_depth_at_the_limit_and_one_over_in_long_messages(pad: int) -> None:
    def delta(depth: int) -> bytes:
        payload = "[" * depth + "]" * depth
        return (
            '{"type":"request","schema_version":"1.0","method":"project/event.receive",'
            '"id":"r1","correlation_id":"r1","command_id":"k1","params":{"event":'
            '{"event_id":"e1","delivery_attempt_id":"a1","created_at":'
            '"2026-12-03T10:00:00Z","correlation_id":"c1","event_type":"t",'
            '"payload":{"pad":"' + "x" * pad + '","deep":' + payload + "}}}}"
        ).encode()

    # envelope, params, event, payload: 4 levels before the nested arrays
    sp.decode(delta(28))
    with pytest.raises(sp.ProtocolError) as info:
        sp.decode(delta(29))
    assert info.value.code == C.DEPTH_EXCEEDED


@given(
    st.lists(st.sampled_from([b":", b"x" * 100, b"::", b'"']), max_size=400),
)
@settings(max_examples=200, derandomize=True, deadline=None)
def test_the_colon_count_is_exact(parts: list[bytes]) -> None:
    from samgita_protocol._jsonscan import colon_count

    data = b"".join(parts)
    assert colon_count(data) == data.count(b":")
