"""Client unit tests: one test (or a few) per rule of docs/protocol.md
sections 3, 4, 7, 9, 10 and 12, against a scripted peer that writes its
replies as plain JSON (so the tests do not depend on how the Server builds
them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from samgita_protocol import (
    Client,
    ConnectionState,
    ErrorCode,
    ErrorReceived,
    NotificationReceived,
    ProtocolError,
    Request,
    RequestReceived,
    Response,
    ResponseReceived,
    SendMessage,
    StreamResumeResult,
    decode,
    encode,
)

ALL = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]
ECHO = ("command_id", "causation_id", "project_ref", "task_ref")
THREAD = {"thread_id": "thr-1", "status": "idle", "created_at": "2026-01-15T09:31:00Z"}
TURN = {"turn_id": "turn-1", "thread_id": "thr-1", "status": "in_progress"}
ACTION = {"kind": "shell.exec", "description": "Run the tests"}
FUTURE = "2099-01-01T00:00:00Z"
EVENT = {
    "event_id": "evt-1",
    "delivery_attempt_id": "dlv-1",
    "created_at": "2026-01-15T09:30:00Z",
    "correlation_id": "corr-evt-1",
    "event_type": "task.assigned",
    "payload": {"title": "Fix the build"},
}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def answer(
    request: Request, *, result: Any = None, error: Any = None, **override: Any
) -> bytes:
    """The peer's response to `request`, echoing its identity (override
    fields with keywords; a value of None drops the field)."""
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
    if error is not None:
        env["error"] = error
    else:
        env["result"] = result
    for key, value in override.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return dumps(env)


def init_result(**changes: Any) -> dict[str, Any]:
    result = {
        "version": "1.0",
        "capabilities": ALL,
        "connection_id": "conn-1",
        "host_id": "h",
    }
    result.update(changes)
    return result


def ready(**options: Any) -> Client:
    caps = options.pop("capabilities", ALL)
    client = Client(capabilities=caps, **options)
    init = client.request("connection/initialize", {}, now=0).message
    effects = client.receive(answer(init, result=init_result(capabilities=caps)))
    assert isinstance(effects[0], ResponseReceived)
    assert client.state is ConnectionState.READY
    return client


def snapshot(client: Client) -> tuple[Any, ...]:
    """Everything observable, to prove a failed call changed nothing."""
    return (
        client.state,
        client.capabilities,
        client.connection_id,
        client.host_id,
        client.generation,
        dict(client.pending),
        dict(client.uncertain),
        dict(client.incoming),
        client.buffered,
        client.checkpoints(),
        client._outbox.terminal_ids(),
        client._outbox._counter,
        len(client._resumes),
    )


def fails(
    client: Client, code: ErrorCode, call: Any, *args: Any, **kwargs: Any
) -> ProtocolError:
    before = snapshot(client)
    with pytest.raises(ProtocolError) as info:
        call(*args, **kwargs)
    assert info.value.code == code, info.value
    assert snapshot(client) == before
    return info.value


def refuses(
    client: Client, error: type[Exception], call: Any, *args: Any, **kwargs: Any
) -> None:
    """``call`` raises ``error`` (a caller's wrong argument) and changes nothing."""
    before = snapshot(client)
    with pytest.raises(error):
        call(*args, **kwargs)
    assert snapshot(client) == before


def start_thread(client: Client, n: int = 1, **kw: Any) -> Request:
    sent = client.request(
        "thread/start", {}, command_id=f"cmd-{n}", now=kw.pop("now", 0), **kw
    )
    assert isinstance(sent.message, Request)
    return sent.message


def thread_result() -> dict[str, Any]:
    return {"thread": THREAD}


def incoming(
    method: str, params: dict[str, Any], rid: str = "s1-1", **extra: Any
) -> bytes:
    return dumps(
        {
            "schema_version": "1.0",
            "type": "request",
            "id": rid,
            "correlation_id": rid,
            "method": method,
            "params": params,
            **extra,
        }
    )


def approval_params(**changes: Any) -> dict[str, Any]:
    params = {"approval_id": "apr-1", "action": ACTION, "deadline": FUTURE}
    params.update(changes)
    return params


# -- construction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "exc", "name"),
    [
        ({"capabilities": ["nope.v1"]}, ValueError, "capabilities"),
        ({"capabilities": "sessions.v1"}, TypeError, "capabilities"),
        (
            {"capabilities": ALL, "required_capabilities": ["nope.v1"]},
            ValueError,
            "required",
        ),
        (
            {
                "capabilities": ["sessions.v1"],
                "required_capabilities": ["streaming.v1"],
            },
            ValueError,
            "required_capabilities",
        ),
        ({"capabilities": ALL, "versions": ["2.0"]}, ValueError, "versions"),
        ({"capabilities": ALL, "max_completed": 0}, ValueError, "max_completed"),
        ({"capabilities": ALL, "max_completed": True}, TypeError, "max_completed"),
        (
            {"capabilities": ALL, "max_message_bytes": "1"},
            TypeError,
            "max_message_bytes",
        ),
        ({"capabilities": ALL, "request_timeout": -1}, ValueError, "request_timeout"),
        (
            {"capabilities": ALL, "request_timeout_ms": 1.5},
            TypeError,
            "request_timeout_ms",
        ),
        (
            {"capabilities": ALL, "request_timeout": 1, "request_timeout_ms": 1},
            ValueError,
            "request_timeout",
        ),
        ({"capabilities": ALL, "host_id": ""}, ValueError, "host_id"),
        ({"capabilities": ALL, "id_generator": 3}, TypeError, "id_generator"),
        (
            {"capabilities": ALL, "checkpoints": {"s": 1}},
            ValueError,
            "host_id",
        ),
        (
            {"capabilities": ALL, "host_id": "h", "checkpoints": [("s", 1)]},
            TypeError,
            "checkpoints",
        ),
        (
            {"capabilities": ALL, "host_id": "h", "checkpoints": {"s": -1}},
            ValueError,
            "checkpoints",
        ),
    ],
)
def test_bad_options_name_the_option(
    options: dict[str, Any], exc: type, name: str
) -> None:
    with pytest.raises(exc, match=name):
        Client(**options)


def test_defaults() -> None:
    limits = Client(capabilities=ALL).limits
    assert (
        limits.max_outstanding_requests,
        limits.max_uncertain_commands,
        limits.max_incoming_requests,
        limits.max_buffered_notifications,
        limits.max_completed,
        limits.max_streams,
        limits.max_stream_hashes,
        limits.max_message_bytes,
        limits.request_timeout,
    ) == (64, 64, 64, 128, 128, 64, 128, 1_048_576, 30.0)
    assert (
        Client(capabilities=ALL, request_timeout_ms=1500).limits.request_timeout == 1.5
    )


# -- initialization -------------------------------------------------------------------


def test_initialize_fills_the_offer_and_negotiates() -> None:
    client = Client(capabilities=["sessions.v1", "streaming.v1"], host_id="h")
    assert client.state is ConnectionState.NEW
    init = client.request("connection/initialize", {}, now=0).message
    assert init.id == "c1-1" and init.correlation_id == "c1-1"
    assert list(init.params.versions) == ["1.0"]
    assert list(init.params.capabilities) == ["sessions.v1", "streaming.v1"]
    assert client.state is ConnectionState.INITIALIZING
    fails(
        client,
        ErrorCode.ALREADY_INITIALIZED,
        client.request,
        "connection/initialize",
        {},
    )
    fails(
        client,
        ErrorCode.NOT_INITIALIZED,
        client.request,
        "thread/read",
        {"thread_id": "t"},
    )
    [effect] = client.receive(
        answer(init, result=init_result(capabilities=["sessions.v1"]))
    )
    assert isinstance(effect, ResponseReceived)
    assert effect.result.connection_id == "conn-1"
    assert client.state is ConnectionState.READY
    assert client.capabilities == frozenset({"sessions.v1"})
    assert (client.connection_id, client.host_id, client.version) == (
        "conn-1",
        "h",
        "1.0",
    )
    fails(
        client,
        ErrorCode.ALREADY_INITIALIZED,
        client.request,
        "connection/initialize",
        {},
    )
    # streaming.v1 was offered but not selected: unsupported before sending.
    fails(
        client,
        ErrorCode.UNSUPPORTED,
        client.request,
        "stream/resume",
        {"stream_id": "s", "cursor": 0},
    )


def test_required_capabilities_are_sent() -> None:
    client = Client(capabilities=ALL, required_capabilities=["sessions.v1"])
    init = client.request("connection/initialize", {}, now=0).message
    assert list(init.params.required_capabilities) == ["sessions.v1"]


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (init_result(version="2.0"), ErrorCode.INVALID_RESULT),
        (
            init_result(capabilities=["sessions.v1", "approvals.v1"]),
            ErrorCode.INVALID_RESULT,
        ),
        (init_result(capabilities=[]), ErrorCode.MISSING_REQUIRED_CAPABILITY),
        (
            init_result(capabilities=["sessions.v1"], host_id="other"),
            ErrorCode.HOST_MISMATCH,
        ),
        ({"version": "1.0"}, ErrorCode.INVALID_RESULT),
    ],
)
def test_initialize_result_checks(result: dict[str, Any], code: ErrorCode) -> None:
    client = Client(
        capabilities=["sessions.v1"], required_capabilities=["sessions.v1"], host_id="h"
    )
    init = client.request("connection/initialize", {}, now=0).message
    [effect] = client.receive(answer(init, result=result))
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (code, "peer")
    assert client.state is ConnectionState.NEW
    assert client.capabilities == frozenset()
    # A failed initialize returns to new: a fresh one is accepted.
    client.request("connection/initialize", {}, now=0)
    assert client.state is ConnectionState.INITIALIZING


def test_initialize_error_response_returns_to_new() -> None:
    client = Client(capabilities=ALL)
    init = client.request("connection/initialize", {}, now=0).message
    error = {"code": "no_common_version", "message": "no"}
    [effect] = client.receive(answer(init, error=error))
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (
        ErrorCode.NO_COMMON_VERSION,
        "remote",
    )
    assert client.state is ConnectionState.NEW


def test_offer_checks() -> None:
    client = Client(capabilities=ALL)
    fails(
        client,
        ErrorCode.UNSUPPORTED,
        client.request,
        "connection/initialize",
        {"versions": ["1.0"], "capabilities": ["nope.v1"]},
    )
    fails(
        client,
        ErrorCode.INVALID_PARAMS,
        client.request,
        "connection/initialize",
        {
            "versions": ["1.0"],
            "capabilities": [],
            "required_capabilities": ["sessions.v1"],
        },
    )


def test_unknown_method_and_params_fail_before_sending() -> None:
    client = ready()
    refuses(client, ValueError, client.request, "thread/nope", {})
    refuses(client, ValueError, client.request, "item/delta", {})
    fails(client, ErrorCode.MISSING_COMMAND_ID, client.request, "thread/start", {})
    fails(
        client,
        ErrorCode.UNEXPECTED_COMMAND_ID,
        client.request,
        "thread/read",
        {"thread_id": "t"},
        command_id="x",
    )
    fails(
        client,
        ErrorCode.TASK_REF_WITHOUT_PROJECT_REF,
        client.request,
        "thread/read",
        {"thread_id": "t"},
        task_ref="task",
    )
    with pytest.raises(ProtocolError) as info:
        client.request("thread/read", {"thread_id": "t", "extra": 1})
    assert info.value.code in (ErrorCode.UNKNOWN_FIELD, ErrorCode.INVALID_PARAMS)
    with pytest.raises(TypeError, match="now"):
        client.request("thread/read", {"thread_id": "t"}, now="soon")  # type: ignore[arg-type]


def test_message_too_large_is_refused_before_recording() -> None:
    client = ready(max_message_bytes=2048)
    fails(
        client,
        ErrorCode.MESSAGE_TOO_LARGE,
        client.request,
        "thread/start",
        {"instructions": "x" * 4096},
        command_id="cmd",
    )


# -- ids --------------------------------------------------------------------------------


def test_generated_ids_and_conflicts() -> None:
    client = ready()
    first = start_thread(client, 1)
    assert first.id == "c1-2"
    explicit = start_thread(client, 2, id="c1-3")
    assert explicit.id == "c1-3"
    # The default id skips the one the explicit id took.
    assert start_thread(client, 3).id == "c1-4"
    fails(client, ErrorCode.CONFLICT, start_thread, client, 4, id="c1-3")
    client.receive(answer(first, result=thread_result()))
    # A completed id is still retained: reusing it is conflict.
    fails(client, ErrorCode.CONFLICT, start_thread, client, 5, id="c1-2")


def test_custom_id_generator_is_not_retried() -> None:
    client = Client(
        capabilities=ALL, id_generator=lambda generation, n: f"fixed-{generation}"
    )
    init = client.request("connection/initialize", {}, now=0).message
    assert init.id == "fixed-1"
    client.receive(answer(init, result=init_result()))
    fails(client, ErrorCode.CONFLICT, start_thread, client)
    bad = Client(capabilities=ALL, id_generator=lambda g, n: 7)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="id_generator"):
        bad.request("connection/initialize", {})


def test_generated_ids_carry_the_generation() -> None:
    client = ready()
    client.disconnect()
    client.reconnect()
    assert client.generation == 2
    assert client.request("connection/initialize", {}, now=0).message.id == "c2-1"


# -- responses ------------------------------------------------------------------------


def test_result_is_validated_and_effects_carry_the_request() -> None:
    client = ready()
    request = start_thread(client)
    [effect] = client.receive(answer(request, result=thread_result()))
    assert isinstance(effect, ResponseReceived)
    assert effect.request == request
    assert effect.result.thread.thread_id == "thr-1"
    assert request.id not in client.pending


def test_duplicate_identical_response_is_suppressed() -> None:
    client = ready()
    request = start_thread(client)
    reply = answer(request, result=thread_result())
    assert len(client.receive(reply)) == 1
    assert client.receive(reply) == []
    # Other bytes, same content (key order, whitespace): still a duplicate.
    reordered = json.dumps(json.loads(reply), indent=2, sort_keys=True)
    assert client.receive(reordered) == []


def test_conflicting_duplicate_fails() -> None:
    client = ready()
    request = start_thread(client)
    client.receive(answer(request, result=thread_result()))
    other = answer(request, result={"thread": {**THREAD, "status": "active"}})
    error = fails(client, ErrorCode.CONFLICTING_RESPONSE, client.receive, other)
    assert error.origin == "peer"
    numeric = answer(request, error={"code": "not_found", "message": "x"})
    fails(client, ErrorCode.CONFLICTING_RESPONSE, client.receive, numeric)


def test_large_duplicates_compare_by_digest() -> None:
    client = ready()
    request = start_thread(client)
    thread = {**THREAD, "thread_id": "thr-1"}
    big = answer(request, result={"thread": thread}, causation_id=None)
    big = big[:-1] + b" " * 2000 + b"}"
    client.receive(big)
    assert client.receive(big.strip()) == []
    other = answer(request, result={"thread": {**thread, "status": "closed"}})
    fails(client, ErrorCode.CONFLICTING_RESPONSE, client.receive, other)


def test_unknown_response() -> None:
    client = ready()
    stray = dumps(
        {
            "schema_version": "1.0",
            "type": "response",
            "id": "nope",
            "correlation_id": "nope",
            "result": {},
        }
    )
    error = fails(client, ErrorCode.UNKNOWN_RESPONSE, client.receive, stray)
    assert error.origin == "peer"


@pytest.mark.parametrize(
    "override",
    [
        {"correlation_id": "other"},
        {"command_id": None},
        {"command_id": "cmd-other"},
        {"causation_id": "cause"},
        {"project_ref": "p"},
    ],
)
def test_mismatched_echo_keeps_the_request_pending(override: dict[str, Any]) -> None:
    client = ready()
    request = start_thread(client)
    bad = answer(request, result=thread_result(), **override)
    fails(client, ErrorCode.MISMATCHED_RESPONSE, client.receive, bad)
    assert request.id in client.pending
    assert len(client.receive(answer(request, result=thread_result()))) == 1


def test_echo_of_context_fields() -> None:
    client = ready()
    request = client.request(
        "thread/read",
        {"thread_id": "thr-1"},
        correlation_id="flow",
        causation_id="cause",
        project_ref="p",
        task_ref="t",
    ).message
    reply = answer(request, result={"thread": THREAD, "turns": []})
    assert isinstance(client.receive(reply)[0], ResponseReceived)


def test_invalid_result_of_a_mutation_is_held_uncertain() -> None:
    client = ready()
    request = start_thread(client)
    [effect] = client.receive(answer(request, result={"thread": {"thread_id": "t"}}))
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (
        ErrorCode.INVALID_RESULT,
        "peer",
    )
    assert client.uncertain == {request.id: request}
    assert client.uncertain_reason(request.id) == "invalid_result"
    # The same bytes again: a suppressed duplicate.
    assert client.receive(answer(request, result={"thread": {"thread_id": "t"}})) == []


def test_remote_internal_error_of_a_mutation_is_held_uncertain() -> None:
    client = ready()
    request = start_thread(client)
    error = {"code": "internal_error", "message": "internal error"}
    [effect] = client.receive(answer(request, error=error))
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (
        ErrorCode.INTERNAL_ERROR,
        "remote",
    )
    assert client.uncertain == {request.id: request}
    assert client.uncertain_reason(request.id) == "internal_error"
    client.resolve_uncertain(request.id, "applied")
    assert client.uncertain == {}
    # Another remote error settles a mutation plainly; a read is never held.
    other = start_thread(client, 2)
    [effect] = client.receive(
        answer(other, error={"code": "conflict", "message": "changed"})
    )
    assert isinstance(effect, ErrorReceived) and client.uncertain == {}
    read = client.request("request/cancel", {"request_id": "x"}).message
    [effect] = client.receive(answer(read, error=error))
    assert isinstance(effect, ErrorReceived) and client.uncertain == {}


def test_invalid_result_of_a_read_is_not_uncertain() -> None:
    client = ready()
    request = client.request("thread/read", {"thread_id": "thr-1"}).message
    [effect] = client.receive(answer(request, result={"thread": THREAD}))
    assert (
        isinstance(effect, ErrorReceived)
        and effect.error.code == ErrorCode.INVALID_RESULT
    )
    assert client.uncertain == {}


def test_typed_error_response_is_remote_and_settles() -> None:
    client = ready()
    request = start_thread(client)
    [effect] = client.receive(
        answer(request, error={"code": "not_found", "message": "gone"})
    )
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (ErrorCode.NOT_FOUND, "remote")
    assert client.uncertain == {}


def _settle(
    client: Client, method: str, params: dict[str, Any], result: Any, **kw: Any
) -> Any:
    request = client.request(method, params, **kw).message
    [effect] = client.receive(answer(request, result=result))
    return effect


@pytest.mark.parametrize(
    ("method", "params", "result", "code"),
    [
        (
            "project/event.receive",
            {"event": EVENT},
            {
                "event_id": "evt-2",
                "delivery_attempt_id": "dlv-1",
                "acceptance": "received",
                "processing_status": "pending",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "project/event.receive",
            {"event": EVENT},
            {
                "event_id": "evt-1",
                "delivery_attempt_id": "dlv-2",
                "acceptance": "received",
                "processing_status": "pending",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "project/event.status",
            {"event_id": "evt-1"},
            {
                "event_id": "evt-9",
                "acceptance": "durable",
                "processing_status": "completed",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "project/event.report",
            {"event_id": "evt-1", "outcome": "completed", "summary": "done"},
            {
                "event_id": "evt-1",
                "report_status": "recorded",
                "management_acceptance": "accepted",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "project/event.report",
            {
                "event_id": "evt-1",
                "outcome": "completed",
                "summary": "done",
                "management_request": {"transition": "close"},
            },
            {
                "event_id": "evt-1",
                "report_status": "recorded",
                "management_acceptance": "not_requested",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "thread/read",
            {"thread_id": "thr-2"},
            {"thread": THREAD, "turns": []},
            ErrorCode.INVALID_RESULT,
        ),
        (
            "thread/resume",
            {"thread_id": "thr-2"},
            {"thread": THREAD},
            ErrorCode.INVALID_RESULT,
        ),
        (
            "turn/start",
            {"thread_id": "thr-2", "input": [{"type": "text", "text": "hi"}]},
            {"turn": TURN},
            ErrorCode.INVALID_RESULT,
        ),
        (
            "turn/steer",
            {
                "thread_id": "thr-1",
                "turn_id": "turn-2",
                "input": [{"type": "text", "text": "x"}],
            },
            {"turn": TURN},
            ErrorCode.INVALID_RESULT,
        ),
        (
            "turn/interrupt",
            {"thread_id": "thr-1", "turn_id": "turn-2"},
            {
                "thread_id": "thr-1",
                "turn_id": "turn-1",
                "interrupt_status": "requested",
            },
            ErrorCode.INVALID_RESULT,
        ),
        (
            "request/cancel",
            {"request_id": "c1-9"},
            {"request_id": "c1-8", "cancel_status": "requested"},
            ErrorCode.INVALID_RESULT,
        ),
        (
            "approval/request",
            approval_params(),
            {"approval_id": "apr-2", "action": ACTION, "decision": "deny"},
            ErrorCode.APPROVAL_MISMATCH,
        ),
        (
            "approval/request",
            approval_params(),
            {
                "approval_id": "apr-1",
                "action": {**ACTION, "kind": "rm"},
                "decision": "deny",
            },
            ErrorCode.APPROVAL_MISMATCH,
        ),
        (
            "approval/request",
            approval_params(deadline="2020-01-01T00:00:00Z"),
            {"approval_id": "apr-1", "action": ACTION, "decision": "approve"},
            ErrorCode.APPROVAL_EXPIRED,
        ),
    ],
)
def test_contextual_rules(
    method: str, params: dict[str, Any], result: dict[str, Any], code: ErrorCode
) -> None:
    client = ready()
    mutation = method in {
        "project/event.receive",
        "project/event.report",
        "thread/resume",
        "turn/start",
        "turn/steer",
        "turn/interrupt",
    }
    kw = {"command_id": "cmd-x"} if mutation else {}
    effect = _settle(client, method, params, result, **kw)
    assert isinstance(effect, ErrorReceived), effect
    assert (effect.error.code, effect.error.origin) == (code, "peer")
    assert (effect.request.id in client.uncertain) == mutation


@pytest.mark.parametrize(
    ("method", "params", "result"),
    [
        (
            "project/event.receive",
            {"event": EVENT},
            {
                "event_id": "evt-1",
                "delivery_attempt_id": "dlv-1",
                "acceptance": "durable",
                "processing_status": "completed",
            },
        ),
        (
            "project/event.report",
            {"event_id": "evt-1", "outcome": "completed", "summary": "done"},
            {
                "event_id": "evt-1",
                "report_status": "recorded",
                "management_acceptance": "not_requested",
            },
        ),
        (
            "project/event.report",
            {
                "event_id": "evt-1",
                "outcome": "failed",
                "summary": "no",
                "management_request": {"transition": "close"},
            },
            {
                "event_id": "evt-1",
                "report_status": "recorded",
                "management_acceptance": "rejected",
            },
        ),
        (
            "turn/interrupt",
            {"thread_id": "thr-1", "turn_id": "turn-1"},
            {
                "thread_id": "thr-1",
                "turn_id": "turn-1",
                "interrupt_status": "already_finished",
            },
        ),
        (
            "request/cancel",
            {"request_id": "c1-9"},
            {"request_id": "c1-9", "cancel_status": "already_finished"},
        ),
        (
            "approval/request",
            approval_params(deadline="2020-01-01T00:00:00Z"),
            {"approval_id": "apr-1", "action": ACTION, "decision": "deny"},
        ),
        (
            "approval/request",
            approval_params(),
            {"approval_id": "apr-1", "action": ACTION, "decision": "approve"},
        ),
    ],
)
def test_results_that_satisfy_the_rules(
    method: str, params: dict[str, Any], result: dict[str, Any]
) -> None:
    client = ready()
    kw = (
        {"command_id": "cmd-x"}
        if method.startswith(("project/event.r", "turn/"))
        else {}
    )
    if method == "project/event.status":
        kw = {}
    effect = _settle(client, method, params, result, **kw)
    assert isinstance(effect, ResponseReceived), effect


def test_approval_deadline_uses_the_given_clock() -> None:
    client = ready()
    deadline = "2030-06-01T12:00:00.5Z"
    request = client.request(
        "approval/request", approval_params(deadline=deadline)
    ).message
    reply = answer(
        request,
        result={"approval_id": "apr-1", "action": ACTION, "decision": "approve"},
    )
    at = datetime(2030, 6, 1, 12, 0, 0, 500_000, tzinfo=UTC)
    with pytest.raises(TypeError):
        client.receive(reply, now=1.0)  # type: ignore[arg-type]
    [effect] = client.receive(reply, now=at)
    assert (
        isinstance(effect, ErrorReceived)
        and effect.error.code == ErrorCode.APPROVAL_EXPIRED
    )
    request = client.request(
        "approval/request", approval_params(deadline=deadline)
    ).message
    reply = answer(
        request,
        result={"approval_id": "apr-1", "action": ACTION, "decision": "approve"},
    )
    [effect] = client.receive(reply, now=at - timedelta(microseconds=1))
    assert isinstance(effect, ResponseReceived)


def page(stream: str, cursors: list[int], **changes: Any) -> dict[str, Any]:
    events = [
        {
            "schema_version": "1.0",
            "type": "notification",
            "method": "item/delta",
            "stream_id": stream,
            "cursor": c,
            "params": {
                "thread_id": "thr-1",
                "turn_id": "turn-1",
                "item_id": "i",
                "delta": "x",
            },
        }
        for c in cursors
    ]
    result = {
        "stream_id": stream,
        "cursor": cursors[-1] if cursors else 0,
        "events": events,
        "has_more": False,
    }
    result.update(changes)
    return result


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (page("other", [1, 2]), ErrorCode.INVALID_RESULT),
        (
            {**page("s", [1, 2]), "stream_id": "s"}
            | {"events": page("t", [1])["events"]},
            None,
        ),
        (page("s", [1, 3]), ErrorCode.CURSOR_GAP),
        (page("s", [2, 3]), ErrorCode.CURSOR_GAP),
        (page("s", [1, 2], cursor=5), ErrorCode.INVALID_RESULT),
        (page("s", [], has_more=True), ErrorCode.INVALID_RESULT),
        (page("s", [], cursor=3), ErrorCode.INVALID_RESULT),
    ],
)
def test_resume_page_rules(result: dict[str, Any], code: ErrorCode | None) -> None:
    client = ready()
    request = client.request("stream/resume", {"stream_id": "s", "cursor": 0}).message
    [effect] = client.receive(answer(request, result=result))
    assert isinstance(effect, ErrorReceived)
    assert effect.error.code == (code or ErrorCode.FOREIGN_STREAM)


def test_receive_replay_ingests_a_correlated_page_once() -> None:
    client = ready()
    request = client.request("stream/resume", {"stream_id": "s", "cursor": 0}).message
    [effect] = client.receive(answer(request, result=page("s", [1, 2])))
    assert isinstance(effect, ResponseReceived)
    assert client.receive_replay(effect.result) == 2
    assert client.buffered == 2
    fails(client, ErrorCode.UNCORRELATED_REPLAY, client.receive_replay, effect.result)
    delivered = client.drain()
    assert [n.cursor for n in delivered] == [1, 2]
    client.ack_cursor("s", 2)
    assert client.checkpoints() == {"s": 2}


def test_receive_replay_of_an_uncorrelated_result() -> None:
    client = ready()
    page = StreamResumeResult(stream_id="s", cursor=0, events=[], has_more=False)
    fails(client, ErrorCode.UNCORRELATED_REPLAY, client.receive_replay, page)
    refuses(client, TypeError, client.receive_replay, "nope")


# -- disconnect, expiry, reconnect --------------------------------------------------------


def test_disconnect_makes_mutations_ambiguous_and_reads_disconnected() -> None:
    client = ready()
    mutation = start_thread(client)
    read = client.request("thread/read", {"thread_id": "thr-1"}).message
    effects = client.disconnect()
    assert [type(e) for e in effects] == [ErrorReceived, ErrorReceived]
    first, second = effects
    assert isinstance(first, ErrorReceived) and isinstance(second, ErrorReceived)
    assert (
        first.request == mutation and first.error.code == ErrorCode.AMBIGUOUS_DISCONNECT
    )
    assert first.error.data is not None and first.error.data["command_id"] == "cmd-1"
    assert second.request == read and second.error.code == ErrorCode.DISCONNECTED
    assert client.uncertain == {mutation.id: mutation}
    assert client.state is ConnectionState.DISCONNECTED
    assert client.disconnect() == []
    fails(client, ErrorCode.DISCONNECTED, client.receive, answer(read, result={}))
    fails(
        client,
        ErrorCode.DISCONNECTED,
        client.request,
        "thread/read",
        {"thread_id": "t"},
    )
    client.reconnect()
    assert client.state is ConnectionState.NEW
    assert client.uncertain == {mutation.id: mutation}
    fails(
        client,
        ErrorCode.NOT_INITIALIZED,
        client.request,
        "thread/read",
        {"thread_id": "t"},
    )
    # The old connection's ids are forgotten after reconnect.
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    fails(client, ErrorCode.UNKNOWN_RESPONSE, client.receive, answer(read, result={}))


def test_reconnect_requires_a_disconnected_client() -> None:
    client = ready()
    fails(client, ErrorCode.NOT_INITIALIZED, client.reconnect)


def test_expire_uses_the_request_clock() -> None:
    client = ready(request_timeout=10)
    mutation = start_thread(client, now=100.0)
    read = client.request("thread/read", {"thread_id": "thr-1"}, now=105.0).message
    assert client.expire(109.9) == []
    [effect] = client.expire(110.0)
    assert isinstance(effect, ErrorReceived) and effect.request == mutation
    assert effect.error.code == ErrorCode.AMBIGUOUS_DISCONNECT
    assert effect.error.data is not None and effect.error.data["reason"] == "timeout"
    assert client.uncertain_reason(mutation.id) == "timeout"
    [effect] = client.expire(1000)
    assert isinstance(effect, ErrorReceived) and effect.error.code == ErrorCode.TIMEOUT
    assert effect.request == read
    # Late replies to expired ids: conflicting_response, no effect.
    late = answer(mutation, result=thread_result())
    fails(client, ErrorCode.CONFLICTING_RESPONSE, client.receive, late)
    fails(client, ErrorCode.CONFLICT, start_thread, client, 9, id=mutation.id)
    assert mutation.id in client.uncertain
    with pytest.raises(TypeError):
        client.expire("later")  # type: ignore[arg-type]


def test_expired_initialize_returns_to_new() -> None:
    client = Client(capabilities=ALL, request_timeout_ms=1000)
    client.request("connection/initialize", {}, now=0)
    [effect] = client.expire(1.0)
    assert isinstance(effect, ErrorReceived) and effect.error.code == ErrorCode.TIMEOUT
    assert client.state is ConnectionState.NEW


def test_resolve_uncertain() -> None:
    client = ready()
    mutation = start_thread(client)
    client.disconnect()
    with pytest.raises(ValueError):
        client.resolve_uncertain(mutation.id, "maybe")  # type: ignore[arg-type]
    client.resolve_uncertain(mutation.id, "applied")
    assert client.uncertain == {}
    fails(
        client,
        ErrorCode.UNKNOWN_UNCERTAIN,
        client.resolve_uncertain,
        mutation.id,
        "applied",
    )
    view = client.uncertain
    with pytest.raises(TypeError):
        view["x"] = mutation  # type: ignore[index]


# -- bounds -----------------------------------------------------------------------------


def test_max_outstanding_requests() -> None:
    client = ready(max_outstanding_requests=2)
    client.request("thread/read", {"thread_id": "a"})
    client.request("thread/read", {"thread_id": "b"})
    error = fails(
        client,
        ErrorCode.LIMIT_EXCEEDED,
        client.request,
        "thread/read",
        {"thread_id": "c"},
    )
    assert error.data == {"limit": "max_outstanding_requests", "max": 2}


def test_pending_mutations_count_against_max_uncertain_commands() -> None:
    client = ready(max_uncertain_commands=2)
    start_thread(client, 1)
    start_thread(client, 2)
    error = fails(client, ErrorCode.LIMIT_EXCEEDED, start_thread, client, 3)
    assert error.data == {"limit": "max_uncertain_commands", "max": 2}
    client.request("thread/read", {"thread_id": "a"})  # reads are not limited by it
    client.disconnect()
    assert len(client.uncertain) == 2
    client.reconnect()
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    fails(client, ErrorCode.LIMIT_EXCEEDED, start_thread, client, 4)


def test_max_completed_window_is_exactly_the_newest() -> None:
    client = ready(max_completed=3)
    requests = [
        client.request("thread/read", {"thread_id": "thr-1"}).message for _ in range(4)
    ]
    replies = [answer(r, result={"thread": THREAD, "turns": []}) for r in requests]
    for reply in replies:
        client.receive(reply)
    # The window holds the newest 3 of 5 terminal ids (initialize included).
    assert client._outbox.terminal_ids() == [r.id for r in requests[1:]]
    fails(client, ErrorCode.UNKNOWN_RESPONSE, client.receive, replies[0])
    assert client.receive(replies[1]) == []


def test_max_incoming_requests_is_answered_by_the_client() -> None:
    client = ready(max_incoming_requests=1)
    [first] = client.receive(incoming("approval/request", approval_params(), "s1-1"))
    assert isinstance(first, RequestReceived)
    [refusal] = client.receive(incoming("approval/request", approval_params(), "s1-2"))
    assert isinstance(refusal, SendMessage)
    message = refusal.message
    assert isinstance(message, Response) and message.id == "s1-2"
    assert message.error.code == "limit_exceeded"
    assert refusal.data == encode(message)  # its bytes, ready to send
    assert list(client.incoming) == ["s1-1"]


def test_malformed_input_is_a_peer_error() -> None:
    client = ready(max_message_bytes=1024)
    for data, code in [
        (b"{", ErrorCode.INVALID_JSON),
        (b"[]", ErrorCode.INVALID_MESSAGE),
        (b"x" * 2000, ErrorCode.MESSAGE_TOO_LARGE),
    ]:
        error = fails(client, code, client.receive, data)
        assert error.origin == "peer"


# -- incoming requests --------------------------------------------------------------------


def test_incoming_approval_waits_for_a_bound_reply() -> None:
    client = ready()
    [effect] = client.receive(incoming("approval/request", approval_params()))
    assert isinstance(effect, RequestReceived)
    request = effect.request
    assert client.incoming == {"s1-1": request}
    wrong = {"approval_id": "apr-2", "action": ACTION, "decision": "approve"}
    error = fails(client, ErrorCode.APPROVAL_MISMATCH, client.reply, request, wrong)
    assert error.origin == "local"
    fails(
        client, ErrorCode.INVALID_RESULT, client.reply, request, {"decision": "approve"}
    )
    sent = client.reply(
        request, {"approval_id": "apr-1", "action": ACTION, "decision": "approve"}
    )
    response = sent.message
    assert sent.data == encode(response)
    assert (response.id, response.correlation_id) == ("s1-1", "s1-1")
    assert response.result.decision == "approve"
    assert client.incoming == {}
    fails(client, ErrorCode.UNKNOWN_REQUEST, client.reply, request, {})


def test_reply_refuses_to_approve_after_the_deadline() -> None:
    client = ready()
    params = approval_params(deadline="2030-01-01T00:00:00Z")
    [effect] = client.receive(incoming("approval/request", params))
    assert isinstance(effect, RequestReceived)
    late = datetime(2030, 1, 1, tzinfo=UTC)
    approve = {"approval_id": "apr-1", "action": ACTION, "decision": "approve"}
    fails(
        client,
        ErrorCode.APPROVAL_EXPIRED,
        client.reply,
        effect.request,
        approve,
        now=late,
    )
    deny = {"approval_id": "apr-1", "action": ACTION, "decision": "deny"}
    sent = client.reply(effect.request, deny, now=late)
    assert sent.message.result.decision == "deny"


def test_reply_to_another_request_object_is_unknown_request() -> None:
    client = ready()
    [effect] = client.receive(incoming("approval/request", approval_params()))
    assert isinstance(effect, RequestReceived)
    impostor = msgspec.structs.replace(effect.request, correlation_id="other")
    deny = {"approval_id": "apr-1", "action": ACTION, "decision": "deny"}
    fails(client, ErrorCode.UNKNOWN_REQUEST, client.reply, impostor, deny)


def test_reply_error_and_cancel() -> None:
    client = ready()
    [effect] = client.receive(incoming("request/cancel", {"request_id": "c1-9"}))
    assert isinstance(effect, RequestReceived)
    fails(
        client,
        ErrorCode.INVALID_RESULT,
        client.reply,
        effect.request,
        {"request_id": "c1-8", "cancel_status": "requested"},
    )
    sent = client.reply_error(
        effect.request, ProtocolError(ErrorCode.NOT_FOUND, "unknown")
    )
    assert sent.message.error.code == "not_found"
    assert sent.data == encode(sent.message)
    assert client.incoming == {}
    with pytest.raises(TypeError):
        client.reply_error(effect.request, "no")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("capabilities", "method", "params", "code"),
    [
        (["sessions.v1"], "approval/request", approval_params(), "unsupported"),
        (ALL, "thread/start", {}, "unsupported"),
        (
            ALL,
            "connection/initialize",
            {"versions": ["1.0"], "capabilities": []},
            "unsupported",
        ),
    ],
)
def test_incoming_requests_the_client_refuses(
    capabilities: list[str], method: str, params: dict[str, Any], code: str
) -> None:
    client = ready(capabilities=capabilities)
    before = snapshot(client)
    extra = {"command_id": "cmd"} if method == "thread/start" else {}
    [effect] = client.receive(incoming(method, params, **extra))
    assert isinstance(effect, SendMessage) and effect.message.error.code == code
    assert snapshot(client) == before


def test_incoming_request_before_initialization_and_duplicate_id() -> None:
    client = Client(capabilities=ALL)
    [effect] = client.receive(incoming("request/cancel", {"request_id": "x"}))
    assert isinstance(effect, SendMessage)
    assert effect.message.error.code == "not_initialized"
    client = ready()
    client.receive(incoming("request/cancel", {"request_id": "x"}))
    [effect] = client.receive(incoming("request/cancel", {"request_id": "y"}))
    assert isinstance(effect, SendMessage) and effect.message.error.code == "conflict"


def test_disconnect_drops_incoming_requests() -> None:
    client = ready()
    [effect] = client.receive(incoming("request/cancel", {"request_id": "x"}))
    assert isinstance(effect, RequestReceived)
    client.disconnect()
    assert client.incoming == {}
    fails(
        client,
        ErrorCode.DISCONNECTED,
        client.reply,
        effect.request,
        {"request_id": "x", "cancel_status": "requested"},
    )


# -- notifications ------------------------------------------------------------------------


def delta(**changes: Any) -> bytes:
    message = {
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
    message.update(changes)
    return dumps(message)


def test_ephemeral_notifications_are_effects_and_sequenced_ones_are_buffered() -> None:
    client = ready()
    [effect] = client.receive(delta())
    assert isinstance(effect, NotificationReceived)
    assert effect.notification.params.delta == "x"
    assert client.receive(delta(stream_id="s", cursor=1)) == []
    assert client.receive(delta(stream_id="s", cursor=1)) == []  # duplicate
    fails(
        client,
        ErrorCode.REPLAY_CONFLICT,
        client.receive,
        delta(
            stream_id="s",
            cursor=1,
            params={
                "thread_id": "thr-1",
                "turn_id": "turn-1",
                "item_id": "i",
                "delta": "y",
            },
        ),
    )
    fails(client, ErrorCode.CURSOR_GAP, client.receive, delta(stream_id="s", cursor=3))
    assert client.buffered == 1
    assert [n.cursor for n in client.drain()] == [1]
    client.ack_cursor("s", 1)
    fails(client, ErrorCode.INVALID_CURSOR, client.ack_cursor, "s", 2)
    assert client.checkpoints() == {"s": 1}
    client.forget_stream("s")
    assert client.checkpoints() == {}


def test_buffer_overflow_is_limit_exceeded() -> None:
    client = ready(max_buffered_notifications=1)
    client.receive(delta(stream_id="s", cursor=1))
    error = fails(
        client, ErrorCode.LIMIT_EXCEEDED, client.receive, delta(stream_id="s", cursor=2)
    )
    assert error.origin == "local"


def test_notifications_before_initialization_or_outside_groups() -> None:
    client = Client(capabilities=ALL)
    error = fails(client, ErrorCode.NOT_INITIALIZED, client.receive, delta())
    assert error.origin == "peer"
    client = ready(capabilities=["sessions.v1"])
    error = fails(client, ErrorCode.UNSUPPORTED, client.receive, delta())
    assert error.origin == "peer"


def test_notify() -> None:
    client = Client(capabilities=ALL)
    params = {"thread_id": "thr-1", "turn_id": "turn-1", "item_id": "i", "delta": "x"}
    fails(client, ErrorCode.NOT_INITIALIZED, client.notify, "item/delta", params)
    client = ready(capabilities=["sessions.v1", "streaming.v1"])
    sent = client.notify("item/delta", params, stream_id="s", cursor=1)
    notification = sent.message
    assert (notification.stream_id, notification.cursor) == ("s", 1)
    assert sent.data == encode(notification)
    refuses(client, ValueError, client.notify, "thread/start", params)
    fails(
        client,
        ErrorCode.UNPAIRED_STREAM_POSITION,
        client.notify,
        "item/delta",
        params,
        cursor=1,
    )
    client = ready(capabilities=["sessions.v1"])
    fails(client, ErrorCode.UNSUPPORTED, client.notify, "item/delta", params)


def test_checkpoints_restore_requires_the_same_host() -> None:
    client = Client(capabilities=ALL, host_id="h", checkpoints={"s": 4})
    assert client.checkpoints() == {"s": 4}
    assert client.host_id == "h"
    init = client.request("connection/initialize", {}, now=0).message
    [effect] = client.receive(answer(init, result=init_result(host_id="other")))
    assert (
        isinstance(effect, ErrorReceived)
        and effect.error.code == ErrorCode.HOST_MISMATCH
    )
    # An event at or below the restored checkpoint is an ignored duplicate.
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    assert client.receive(delta(stream_id="s", cursor=4)) == []
    assert client.buffered == 0


def test_receive_accepts_str_buffers_and_messages() -> None:
    client = ready()
    first = start_thread(client, 1)
    reply = answer(first, result=thread_result())
    assert isinstance(client.receive(reply.decode())[0], ResponseReceived)
    second = start_thread(client, 2)
    assert isinstance(
        client.receive(bytearray(answer(second, result=thread_result())))[0],
        ResponseReceived,
    )
    third = client.request("request/cancel", {"request_id": "x"}).message
    message = Response(
        id=third.id,
        correlation_id=third.correlation_id,
        result=msgspec.Raw(b'{"request_id":"x","cancel_status":"requested"}'),
    )
    [effect] = client.receive(message)
    assert isinstance(effect, ResponseReceived)
    assert effect.result.cancel_status == "requested"
    assert client.receive(message) == []  # duplicate, compared by digest
    with pytest.raises(TypeError):
        client.receive(42)  # type: ignore[arg-type]


def test_state_views_are_read_only() -> None:
    client = ready()
    request = start_thread(client)
    for view in (client.pending, client.incoming, client.uncertain):
        with pytest.raises(TypeError):
            view["x"] = request  # type: ignore[index]
    assert client.pending == {request.id: request}


def _reinitialize(client: Client, host_id: str) -> Any:
    client.disconnect()
    client.reconnect()
    init = client.request("connection/initialize", {}, now=0).message
    [effect] = client.receive(answer(init, result=init_result(host_id=host_id)))
    return effect


def test_reconnect_to_a_new_host_id_without_configured_host_or_positions() -> None:
    # Default Servers draw a fresh host_id each: reconnecting must work.
    client = ready()
    assert client.host_id == "h"
    effect = _reinitialize(client, "h2")
    assert isinstance(effect, ResponseReceived)
    assert client.host_id == "h2"
    # A stream forgotten releases the learned host as well.
    client.receive(delta(stream_id="s", cursor=1))
    client.ack_cursor("s", client.drain()[0].cursor)
    client.forget_stream("s")
    assert isinstance(_reinitialize(client, "h3"), ResponseReceived)
    assert client.host_id == "h3"


def test_learned_host_id_is_enforced_while_positions_or_events_are_held() -> None:
    client = ready()
    client.receive(delta(stream_id="s", cursor=1))  # buffered, from host "h"
    effect = _reinitialize(client, "h2")
    assert isinstance(effect, ErrorReceived)
    assert effect.error.code == ErrorCode.HOST_MISMATCH
    assert client.host_id == "h"
    client.ack_cursor("s", client.drain()[0].cursor)  # a position, no buffer
    effect = _reinitialize(client, "h2")
    assert isinstance(effect, ErrorReceived)
    assert effect.error.code == ErrorCode.HOST_MISMATCH
    assert isinstance(_reinitialize(client, "h"), ResponseReceived)


def test_configured_host_id_is_always_enforced() -> None:
    client = ready(host_id="h")
    effect = _reinitialize(client, "h2")
    assert isinstance(effect, ErrorReceived)
    assert effect.error.code == ErrorCode.HOST_MISMATCH
    assert client.host_id == "h"


@pytest.mark.parametrize("form", ["dict", "raw"])
def test_a_message_handed_in_with_plain_params_is_decoded_to_the_struct(
    form: str,
) -> None:
    from samgita_protocol import ApprovalRequestParams, ItemDeltaParams, Notification

    client = ready()
    params: Any = approval_params()
    if form == "raw":
        params = msgspec.Raw(json.dumps(params).encode())
    message = Request(
        id="s1-1", correlation_id="s1-1", method="approval/request", params=params
    )
    [effect] = client.receive(message)
    assert isinstance(effect, RequestReceived)
    assert isinstance(effect.request.params, ApprovalRequestParams)
    response = client.reply(
        effect.request,
        {"approval_id": "apr-1", "action": ACTION, "decision": "deny"},
    ).message
    assert response.id == "s1-1" and client.incoming == {}
    delta_params: Any = {"thread_id": "t", "turn_id": "u", "item_id": "i", "delta": "x"}
    if form == "raw":
        delta_params = msgspec.Raw(json.dumps(delta_params).encode())
    [effect] = client.receive(Notification(method="item/delta", params=delta_params))
    assert isinstance(effect, NotificationReceived)
    assert isinstance(effect.notification.params, ItemDeltaParams)


@pytest.mark.parametrize(
    "action",
    [
        {**ACTION, "details": {1: "x"}},
        {**ACTION, "details": {"x": ("a",)}},
        {**ACTION, "details": {"x": b"a"}},
        {**ACTION, "details": {"x": float("nan")}},
        {**ACTION, "description": "\ud800"},
    ],
)
def test_non_json_values_in_a_handed_in_message_are_local(action: Any) -> None:
    client = ready()
    before = snapshot(client)
    message = Request(
        id="s1-1",
        correlation_id="s1-1",
        method="approval/request",
        params=approval_params(action=action),
    )
    with pytest.raises(ProtocolError) as raised:
        client.receive(message)
    error = raised.value
    assert error.code in (
        ErrorCode.INVALID_KEY,
        ErrorCode.INVALID_FIELD,
        ErrorCode.INVALID_UTF8,
    )
    assert error.origin == "local"
    assert snapshot(client) == before


def test_receive_replay_accepts_the_response_as_well_as_the_result() -> None:
    client = ready()
    request = client.request("stream/resume", {"stream_id": "s", "cursor": 0}).message
    data = answer(request, result=page("s", [1, 2]))
    [effect] = client.receive(data)
    assert isinstance(effect, ResponseReceived)
    response = msgspec.json.decode(data, type=Response)
    assert client.receive_replay(response) == 2
    # Ingested once, whichever form named it.
    fails(client, ErrorCode.UNCORRELATED_REPLAY, client.receive_replay, response)
    fails(client, ErrorCode.UNCORRELATED_REPLAY, client.receive_replay, effect.result)
    assert [n.cursor for n in client.drain()] == [1, 2]
    error = Response(
        id="x", correlation_id="x", error={"code": "not_found", "message": "no"}
    )
    fails(client, ErrorCode.UNCORRELATED_REPLAY, client.receive_replay, error)


def test_oversize_text_and_buffers_are_message_too_large() -> None:
    client = ready(max_message_bytes=1024)
    for data in ("x" * 2000, bytearray(b"x" * 2000), memoryview(b"x" * 2000)):
        error = fails(client, ErrorCode.MESSAGE_TOO_LARGE, client.receive, data)
        assert error.origin == "peer" and error.data == {"bytes": 2000, "max": 1024}


def _answer_bytes(result_json: bytes) -> tuple[Any, bytes]:
    """A connected client with a pending ``thread/read`` and the bytes of a
    response to it whose result is ``result_json`` (in this library's key
    order, so the client's typed decode is tried first)."""
    from helpers import ConnectionPair

    pair = ConnectionPair()
    request = pair.client.request("thread/read", {"thread_id": "thread-1"}).message
    wire = (
        b'{"type":"response","schema_version":"1.0","id":"'
        + request.id.encode()
        + b'","correlation_id":"'
        + request.correlation_id.encode()
        + b'","result":'
        + result_json
        + b"}"
    )
    return pair.client, wire


THREAD_JSON = (
    b'{"thread":{"thread_id":"thread-1","status":"idle",'
    b'"created_at":"2026-01-01T00:00:00Z"},"turns":[]}'
)


@pytest.mark.parametrize(
    ("result_json", "code"),
    [
        # A repeated key inside the result: the byte-level rule, as decode says.
        (
            THREAD_JSON.replace(b'"status":"idle"', b'"status":"idle","status":"idle"'),
            ErrorCode.DUPLICATE_KEY,
        ),
        (THREAD_JSON[:-1] + b',"turns":[]}', ErrorCode.DUPLICATE_KEY),
        # Valid JSON, wrong nesting for its bytes: 33 levels deep.
        (
            THREAD_JSON[:-1] + b',"x":' + b"[" * 32 + b"]" * 32 + b"}",
            ErrorCode.DEPTH_EXCEEDED,
        ),
    ],
)
def test_a_pending_response_is_refused_as_decode_refuses_its_bytes(
    result_json: bytes, code: ErrorCode
) -> None:
    client, wire = _answer_bytes(result_json)
    with pytest.raises(ProtocolError) as caught:
        decode(wire)
    assert caught.value.code is code
    pending = dict(client.pending)
    with pytest.raises(ProtocolError) as raised:
        client.receive(wire)
    assert raised.value.code is code
    assert dict(client.pending) == pending  # nothing changed


def test_a_pending_response_in_any_key_order_gives_the_same_result() -> None:
    client, wire = _answer_bytes(THREAD_JSON)
    [effect] = client.receive(wire)
    other, spaced = _answer_bytes(
        b'{ "turns" : [ ], "thread" : { "status" : "idle", '
        b'"created_at" : "2026-01-01T00:00:00Z", "thread_id" : "thread-1" } }'
    )
    [same] = other.receive(spaced)
    assert isinstance(effect, ResponseReceived)
    assert isinstance(same, ResponseReceived)
    assert effect.result == same.result
    assert effect.result.thread.thread_id == "thread-1"
