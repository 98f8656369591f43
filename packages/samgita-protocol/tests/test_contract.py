"""Contextual result rules as pure functions (docs/protocol.md sections 3, 4, 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest

from samgita_protocol import (
    ApprovalRequestParams,
    ErrorCode,
    InitializeParams,
    InitializeResult,
    ProtocolError,
    Request,
    Response,
    StreamResumeParams,
    StreamResumeResult,
    convert_params,
)
from samgita_protocol._contract import (
    approval_expired,
    check_echo,
    check_initialize,
    check_page,
    check_result,
    timestamp_ns,
    validate_result,
    wall_clock,
)

ACTION = {"kind": "shell.exec", "description": "Run"}


def request(method: str, params: dict[str, Any], **kw: Any) -> Request:
    return Request(
        id="r1",
        correlation_id="r1",
        method=method,
        params=convert_params(method, params),
        **kw,
    )


def test_timestamps() -> None:
    assert timestamp_ns("1970-01-01T00:00:01Z") == 1_000_000_000
    assert timestamp_ns("1970-01-01T00:00:00.000000001Z") == 1
    assert timestamp_ns("1970-01-01T00:00:00.5Z") == 500_000_000
    assert timestamp_ns("2026-02-30T00:00:00Z") is None
    assert timestamp_ns("2026-01-01 00:00:00Z") is None
    assert timestamp_ns("2026-01-01T00:00:00+01:00") is None


def test_approval_deadline_is_exclusive_and_nanosecond_exact() -> None:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    assert approval_expired("2030-01-01T00:00:00Z", at)
    assert not approval_expired("2030-01-01T00:00:00.000000001Z", at)
    assert approval_expired(
        "2030-01-01T00:00:00.000000001Z", at + timedelta(microseconds=1)
    )
    # Any aware clock works; the comparison is in UTC.
    plus_one = timezone(timedelta(hours=1))
    assert not approval_expired(
        "2030-01-01T00:00:01Z", datetime(2030, 1, 1, 1, tzinfo=plus_one)
    )
    assert approval_expired("garbage", at)
    assert not approval_expired("2999-01-01T00:00:00Z")  # default: the real clock


def test_wall_clock_argument() -> None:
    assert wall_clock(None) is None
    with pytest.raises(TypeError):
        wall_clock(12.5)
    with pytest.raises(ValueError):
        wall_clock(datetime(2030, 1, 1))


def test_check_echo() -> None:
    req = request("thread/start", {}, command_id="cmd", project_ref="p")
    ok = Response(
        id="r1",
        correlation_id="r1",
        command_id="cmd",
        project_ref="p",
        result=msgspec.Raw(b"{}"),
    )
    check_echo(req, ok)
    for bad in (
        msgspec.structs.replace(ok, correlation_id="x"),
        msgspec.structs.replace(ok, command_id=msgspec.UNSET),
        msgspec.structs.replace(ok, task_ref="t"),
    ):
        with pytest.raises(ProtocolError) as info:
            check_echo(req, bad)
        assert (info.value.code, info.value.origin) == (
            ErrorCode.MISMATCHED_RESPONSE,
            "peer",
        )


def test_origin_is_the_callers_choice() -> None:
    req = request("request/cancel", {"request_id": "a"})
    with pytest.raises(ProtocolError) as info:
        validate_result(
            req, {"request_id": "b", "cancel_status": "requested"}, origin="local"
        )
    assert (info.value.code, info.value.origin) == (ErrorCode.INVALID_RESULT, "local")
    with pytest.raises(ProtocolError) as info:
        validate_result(req, {"request_id": "a"}, origin="local")
    assert (info.value.code, info.value.origin) == (ErrorCode.INVALID_RESULT, "local")
    assert (
        validate_result(
            req, {"request_id": "a", "cancel_status": "requested"}
        ).request_id
        == "a"
    )


def test_approval_binding() -> None:
    params = {"approval_id": "a", "action": ACTION, "deadline": "2030-01-01T00:00:00Z"}
    req = request("approval/request", params)
    before = datetime(2029, 1, 1, tzinfo=UTC)
    after = datetime(2031, 1, 1, tzinfo=UTC)
    good = {"approval_id": "a", "action": ACTION, "decision": "approve"}
    validate_result(req, good, now=before)
    for result, now, code in [
        ({**good, "approval_id": "b"}, before, ErrorCode.APPROVAL_MISMATCH),
        (
            {**good, "action": {**ACTION, "details": {"x": 1}}},
            before,
            ErrorCode.APPROVAL_MISMATCH,
        ),
        (good, after, ErrorCode.APPROVAL_EXPIRED),
    ]:
        with pytest.raises(ProtocolError) as info:
            validate_result(req, result, now=now)
        assert info.value.code == code
    validate_result(req, {**good, "decision": "deny"}, now=after)
    assert isinstance(req.params, ApprovalRequestParams)
    # Exact JSON content: true, 1 and 1.0 are different actions.
    for bound, other in [(True, 1), (1, 1.0), (1.0, True), (False, 0)]:
        flagged = {**ACTION, "details": {"recursive": bound}}
        req = request(
            "approval/request",
            {"approval_id": "a", "action": flagged, "deadline": "2030-01-01T00:00:00Z"},
        )
        validate_result(req, {**good, "action": flagged}, now=before)
        result = {**good, "action": {**ACTION, "details": {"recursive": other}}}
        with pytest.raises(ProtocolError) as info:
            validate_result(req, result, now=before)
        assert info.value.code == ErrorCode.APPROVAL_MISMATCH


def _page(
    stream: str, cursors: list[int], cursor: int, has_more: bool = False
) -> StreamResumeResult:
    events = [
        {
            "schema_version": "1.0",
            "type": "notification",
            "method": "thread/closed",
            "stream_id": stream,
            "cursor": c,
            "params": {"thread_id": "t"},
        }
        for c in cursors
    ]
    raw = msgspec.json.encode(
        {"stream_id": "s", "cursor": cursor, "events": events, "has_more": has_more}
    )
    from samgita_protocol import decode_result

    result = decode_result("stream/resume", msgspec.Raw(raw))
    assert isinstance(result, StreamResumeResult)
    return result


@pytest.mark.parametrize(
    ("page", "code"),
    [
        (_page("s", [5, 6], 6), None),
        (_page("s", [], 4), None),
        (_page("s", [5, 6], 6, has_more=True), None),
        (_page("x", [5], 5), ErrorCode.FOREIGN_STREAM),
        (_page("s", [6], 6), ErrorCode.CURSOR_GAP),
        (_page("s", [5, 7], 7), ErrorCode.CURSOR_GAP),
        (_page("s", [5, 6], 5), ErrorCode.INVALID_RESULT),
        (_page("s", [], 4, has_more=True), ErrorCode.INVALID_RESULT),
        (_page("s", [], 9), ErrorCode.INVALID_RESULT),
    ],
)
def test_check_page(page: StreamResumeResult, code: ErrorCode | None) -> None:
    params = StreamResumeParams(stream_id="s", cursor=4)
    if code is None:
        check_page(params, page)
        return
    with pytest.raises(ProtocolError) as info:
        check_page(params, page)
    assert info.value.code == code


def test_check_page_of_another_stream_id() -> None:
    with pytest.raises(ProtocolError) as info:
        check_page(
            StreamResumeParams(stream_id="other", cursor=4), _page("other", [5], 5)
        )
    assert info.value.code == ErrorCode.INVALID_RESULT


def test_check_initialize() -> None:
    offer = InitializeParams(
        versions=["1.0"],
        capabilities=["sessions.v1"],
        required_capabilities=["sessions.v1"],
    )
    good = InitializeResult(
        version="1.0", capabilities=["sessions.v1"], connection_id="c", host_id="h"
    )
    check_initialize(offer, good, host_id="h")
    check_initialize(offer, good)
    for result, host, code in [
        (msgspec.structs.replace(good, version="0.9"), None, ErrorCode.INVALID_RESULT),
        (
            msgspec.structs.replace(good, capabilities=["sessions.v1", "approvals.v1"]),
            None,
            ErrorCode.INVALID_RESULT,
        ),
        (
            msgspec.structs.replace(good, capabilities=[]),
            None,
            ErrorCode.MISSING_REQUIRED_CAPABILITY,
        ),
        (good, "other", ErrorCode.HOST_MISMATCH),
    ]:
        with pytest.raises(ProtocolError) as info:
            check_initialize(offer, result, host_id=host)
        assert info.value.code == code
        assert info.value.origin == "peer"


def test_methods_without_rules() -> None:
    req = request("thread/start", {}, command_id="c")
    check_result(req, object())
