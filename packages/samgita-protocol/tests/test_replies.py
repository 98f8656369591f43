"""``_replies``: the Server's proof of its handler's result and
``encode_response`` against ``decode_result`` + ``encode``; what a Server
sends (each `Outgoing`'s bytes) against ``samgita_protocol.encode``; and a
connection's answer to bytes against its answer to the decoded message."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from helpers import EVENT, ConnectionPair
from samgita_protocol import (
    MAX_DEPTH,
    Action,
    ApprovalRequestResult,
    CancelResult,
    ErrorCode,
    EventReceiveResult,
    Notification,
    ProtocolError,
    Request,
    Response,
    decode,
    decode_result,
    encode,
    encode_response,
)
from samgita_protocol._plans import RESPONSE_PLANS
from samgita_protocol._replies import checked_response, proven_result

INPUT = [{"type": "text", "text": "hello world"}]


def _responses() -> list[tuple[str, bytes]]:
    """(method, response bytes) of a session over several groups, as the
    Server encodes them."""
    pair = ConnectionPair()
    out: list[tuple[str, bytes]] = []
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("project/event.receive", {"event": EVENT}, {"command_id": "k1"}),
        ("project/event.status", {"event_id": "e1"}, {}),
        ("thread/start", {}, {"command_id": "k2"}),
        ("thread/read", {"thread_id": "thread-1"}, {}),
        (
            "turn/start",
            {"thread_id": "thread-1", "input": INPUT},
            {"command_id": "k3", "project_ref": "p", "task_ref": "t"},
        ),
        ("request/cancel", {"request_id": "c1-1"}, {"causation_id": "why"}),
    ]
    for method, params, options in calls:
        request = pair.client.request(method, params, **options)
        replies = [sent.data for sent in pair.server.receive(request.data)]
        out.append((method, replies[0]))
        for reply in replies:
            pair.client.receive(reply)
    return out


RESPONSES = _responses()


def _general(method: str, wire: bytes) -> tuple[Response, Any]:
    message = decode(wire)
    assert isinstance(message, Response)
    return message, decode_result(method, message.result)


def _checked(method: str, value: Any) -> Any | None:
    """The result ``checked_response`` proves for ``value`` in a response
    envelope as the Server builds it (and the bytes must be ``encode``'s)."""
    response = Response(id="r1", correlation_id="r1", result=value)
    checked = checked_response(RESPONSE_PLANS[method], response)
    # the Server's mode (its envelope echoes a validated request) agrees
    proven = proven_result(RESPONSE_PLANS[method], response, value)
    assert (None if proven is None else (proven[0], proven[1].result)) == checked
    if checked is None:
        return None
    wire, result = checked
    assert wire == encode(response)
    return result


def _accepted(fn: Any) -> bool:
    try:
        fn()
    except ProtocolError:
        return False
    return True


@pytest.mark.parametrize(
    ("method", "value"),
    [
        ("request/cancel", CancelResult(request_id="", cancel_status="requested")),
        ("request/cancel", CancelResult(request_id=5, cancel_status="requested")),  # type: ignore[arg-type]
        ("request/cancel", CancelResult(request_id="r", cancel_status="nope")),  # type: ignore[arg-type]
        ("request/cancel", {"request_id": "r", "cancel_status": "requested"}),
        (
            "thread/start",
            CancelResult(request_id="r", cancel_status="requested"),
        ),
    ],
)
def test_checked_response_refuses_what_it_cannot_prove(method: str, value: Any) -> None:
    assert _checked(method, value) is None


def test_checked_response_equals_decode_result_for_valid_structs() -> None:
    for method, wire in RESPONSES:
        _, result = _general(method, wire)
        assert _checked(method, result) == decode_result(method, result)
    value = EventReceiveResult(
        event_id="e1",
        delivery_attempt_id="a1",
        acceptance="received",
        processing_status="pending",
    )
    assert _checked("project/event.receive", value) == value


def test_checked_response_refuses_a_deep_free_form_result() -> None:
    def nested(levels: int) -> Any:
        value: Any = "x"
        for _ in range(levels):
            value = [value]
        return value

    def result(details: Any) -> ApprovalRequestResult:
        return ApprovalRequestResult(
            approval_id="a1",
            action=Action(kind="exec", description="run", details={"v": details}),
            decision="deny",
        )

    # The deepest details decode_result accepts, and one level more: the
    # shortcut agrees at both (the result is one level inside the envelope).
    levels = next(
        n
        for n in range(MAX_DEPTH, 0, -1)
        if _accepted(lambda n=n: decode_result("approval/request", result(nested(n))))
    )
    ok = result(nested(levels))
    assert _checked("approval/request", ok) == decode_result("approval/request", ok)
    deep = result(nested(levels + 1))
    assert _checked("approval/request", deep) is None
    assert not _accepted(lambda: decode_result("approval/request", deep))


def test_a_server_sends_exactly_the_bytes_encode_gives_each_message() -> None:
    pair = ConnectionPair()
    request = pair.client.request("thread/start", {}, command_id="k1")
    sent = pair.server.receive(request.data)
    assert len(sent) == 2  # the response and the thread/started it emitted
    assert [out.data for out in sent] == [encode(out.message) for out in sent]


_FIXTURES = Path(__file__).parent / "schemas" / "1.0" / "fixtures" / "accepted"


def _built_messages() -> list[Request | Notification]:
    """Every accepted request and notification fixture, decoded: what a
    side builds around its method's params Struct."""
    found: list[Request | Notification] = []
    for path in sorted(_FIXTURES.glob("*.json")):
        message = decode(path.read_bytes())
        if isinstance(message, Request | Notification):
            found.append(message)
    assert len(found) >= 20
    return found


BUILT = _built_messages()


class _Text(str):
    """A str subclass (encodes as a string, decodes as str)."""


_BAD_VALUES: list[Any] = [
    "",
    "x" * 300,
    "é" * 200,  # 400 UTF-8 bytes in a 200-character identity
    "\ud800",
    5,
    None,
    True,
    1.5,
    float("nan"),
    ("a",),
    ["a"],
    b"bytes",
    uuid.UUID(int=7),
    _Text("t"),
    {"k": 1},
    {1: "int key"},
    datetime(2026, 1, 1, tzinfo=UTC),
]


@pytest.mark.parametrize(("method", "wire"), RESPONSES)
def test_checked_response_never_accepts_what_decode_result_refuses(
    method: str, wire: bytes
) -> None:
    _, result = _general(method, wire)
    for field in msgspec.structs.fields(type(result)):
        for value in [*_BAD_VALUES, msgspec.UNSET]:
            try:
                mutated = msgspec.structs.replace(result, **{field.name: value})
            except (TypeError, ValueError):
                continue
            proven = _checked(method, mutated)
            try:
                expected = decode_result(method, mutated)
            except ProtocolError:
                assert proven is None, mutated
                continue
            assert proven is None or proven == expected, mutated


# -- encode_response ---------------------------------------------------------------


@pytest.mark.parametrize(("method", "wire"), RESPONSES)
def test_encode_response_is_encode_for_valid_results(method: str, wire: bytes) -> None:
    general, result = _general(method, wire)
    response = msgspec.structs.replace(general, result=result)
    assert encode_response(response, method) == encode(response)


@pytest.mark.parametrize(("method", "wire"), RESPONSES)
def test_encode_response_refuses_what_decode_result_refuses(
    method: str, wire: bytes
) -> None:
    general, result = _general(method, wire)
    for field in msgspec.structs.fields(type(result)):
        for value in [*_BAD_VALUES, msgspec.UNSET]:
            try:
                mutated = msgspec.structs.replace(result, **{field.name: value})
            except (TypeError, ValueError):
                continue
            response = msgspec.structs.replace(general, result=mutated)
            try:
                expected: bytes | ErrorCode = encode(response)
                decode_result(method, mutated)
            except ProtocolError as exc:
                expected = exc.code
            try:
                got: bytes | ErrorCode = encode_response(response, method)
            except ProtocolError as exc:
                assert exc.origin == "local"
                got = exc.code
            assert got == expected, mutated
    # the envelope is the caller's too: checked as encode checks it
    for changes in [
        {"correlation_id": ""},
        {"correlation_id": uuid.UUID(int=1)},
        {"task_ref": "t", "project_ref": msgspec.UNSET},
    ]:
        bad = msgspec.structs.replace(general, result=result, **changes)
        with pytest.raises(ProtocolError) as info:
            encode(bad)
        with pytest.raises(ProtocolError) as again:
            encode_response(bad, method)
        assert again.value.code == info.value.code


def test_encode_response_of_errors_sizes_and_methods() -> None:
    error = Response(
        id="r1",
        correlation_id="r1",
        error=ProtocolError(ErrorCode.NOT_FOUND, "no").to_wire(),
    )
    assert encode_response(error, "thread/read") == encode(error)
    ok = Response(
        id="r1",
        correlation_id="r1",
        result=CancelResult(request_id="x", cancel_status="requested"),
    )
    size = len(encode(ok))
    assert encode_response(ok, "request/cancel", max_message_bytes=size) == encode(ok)
    with pytest.raises(ProtocolError) as info:
        encode_response(ok, "request/cancel", max_message_bytes=size - 1)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(ProtocolError) as info:
        encode_response(ok, "thread/read")  # a CancelResult is not a read result
    assert info.value.code == ErrorCode.INVALID_RESULT
    assert info.value.origin == "local"
    for method in ("no/such", "item/delta"):
        with pytest.raises(ValueError, match="expected method to be"):
            encode_response(ok, method)
    with pytest.raises(TypeError):
        encode_response(ok, "request/cancel", max_message_bytes="1")  # type: ignore[arg-type]


# -- review findings ------------------------------------------------------------------


def test_request_context_subclasses_compare_and_print_as_themselves() -> None:
    from samgita_protocol import RequestContext

    class Sub(RequestContext):
        pass

    fields = {"id": "r1", "correlation_id": "r1", "method": "m", "connection_id": "c"}
    assert Sub(**fields) == Sub(**fields)
    assert hash(Sub(**fields)) == hash(Sub(**fields))
    assert Sub(**fields) != RequestContext(**fields)
    assert RequestContext(**fields) != Sub(**fields)
    assert repr(Sub(**fields)).startswith("Sub(id='r1'")


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'"\xff"', ErrorCode.INVALID_UTF8),
        (b'{"a":1,"a":2}', ErrorCode.DUPLICATE_KEY),
        (b'{"a":1', ErrorCode.INVALID_JSON),
        (b"[" * 40 + b"]" * 40, ErrorCode.DEPTH_EXCEEDED),
    ],
)
def test_raw_json_inside_free_form_params_is_checked_like_input(
    raw: bytes, code: ErrorCode
) -> None:
    from samgita_protocol import Action, ApprovalRequestParams, convert_params

    params = ApprovalRequestParams(
        approval_id="a1",
        action=Action(kind="exec", description="run", details={"x": msgspec.Raw(raw)}),
        deadline="2026-12-03T10:00:00Z",
    )
    with pytest.raises(ProtocolError) as info:
        convert_params("approval/request", params)
    assert info.value.code == code
    assert info.value.origin == "local"
    # Server.request builds its params the same way: only ProtocolError.
    with pytest.raises(ProtocolError) as info:
        ConnectionPair().server.request("approval/request", params)
    assert info.value.code == code


def test_response_to_echoes_the_whole_identity_and_a_client_accepts_it() -> None:
    from samgita_protocol import Client, ResponseReceived, response_to

    client = Client(capabilities=["cancellation.v1"])
    init = client.request("connection/initialize", {}).message
    client.receive(
        encode(
            response_to(
                init,
                result=msgspec.convert(
                    {
                        "version": "1.0",
                        "capabilities": ["cancellation.v1"],
                        "connection_id": "conn-1",
                        "host_id": "host-1",
                    },
                    type=RESPONSE_PLANS["connection/initialize"].payload_type,
                ),
            )
        )
    )
    request = client.request(
        "request/cancel",
        {"request_id": "x"},
        causation_id="why",
        project_ref="p",
        task_ref="t",
    ).message
    answer = response_to(
        request, result=CancelResult(request_id="x", cancel_status="requested")
    )
    assert (
        answer.id,
        answer.correlation_id,
        answer.command_id,
        answer.causation_id,
        answer.project_ref,
        answer.task_ref,
    ) == (
        request.id,
        request.correlation_id,
        request.command_id,
        "why",
        "p",
        "t",
    )
    [effect] = client.receive(encode_response(answer, "request/cancel"))
    assert isinstance(effect, ResponseReceived)
    error = response_to(
        request, error=ProtocolError(ErrorCode.NOT_FOUND, "no").to_wire()
    )
    assert error.result is msgspec.UNSET and error.error.code == "not_found"


# -- bytes and decoded messages give the same answers ---------------------------------


NOTIFICATIONS = [encode(m) for m in BUILT if isinstance(m, Notification)]


def test_a_server_answers_a_typed_request_as_it_answers_the_decoded_one() -> None:
    """Bytes and the decoded message given to ``receive`` give the same bytes
    to send, and the handler sees the same params and context."""
    seen: list[tuple[Any, Any]] = []
    lane_pair, general_pair = ConnectionPair(), ConnectionPair()
    for pair in (lane_pair, general_pair):
        handler = pair.server.handler
        original = handler.handle_request

        def spy(method: str, params: Any, context: Any, _o: Any = original) -> Any:
            seen.append((params, context))
            return _o(method, params, context)

        handler.handle_request = spy  # type: ignore[method-assign]
    for method, params, options in [
        ("project/event.receive", {"event": EVENT}, {"command_id": "k1"}),
        ("thread/start", {}, {"command_id": "k2", "project_ref": "p", "task_ref": "t"}),
        ("request/cancel", {"request_id": "c1-1"}, {"causation_id": "why"}),
    ]:
        wires = []
        for pair in (lane_pair, general_pair):
            request = pair.client.request(method, params, **options)
            wires.append(request.data)
        assert wires[0] == wires[1]
        lane = [out.data for out in lane_pair.server.receive(wires[0])]
        general = [out.data for out in general_pair.server.receive(decode(wires[1]))]
        assert lane == general
        (p1, c1), (p2, c2) = seen[-2:]
        assert type(p1) is type(p2) and p1 == p2
        # (each pair's Server has its own random connection_id)
        c1 = msgspec.structs.replace(c1, connection_id=c2.connection_id)
        assert c1 == c2 and repr(c1) == repr(c2)


def test_a_client_receives_a_typed_notification_as_the_decoded_one() -> None:
    """Given the bytes or the decoded message, a client gives the same effects, buffers sequenced notifications the
    same way, and refuses a group it did not negotiate the same way."""
    for groups in (None, ["cancellation.v1"]):
        lane, general = (
            ConnectionPair(capabilities=groups),
            ConnectionPair(capabilities=groups),
        )
        for wire in NOTIFICATIONS:
            results: list[Any] = []
            for pair, data in ((general, decode(wire)), (lane, wire)):
                try:
                    results.append(pair.client.receive(data))
                except ProtocolError as exc:
                    results.append((exc.code, exc.origin))
            assert results[0] == results[1], wire
            assert lane.client.buffered == general.client.buffered
            assert lane.client.drain() == general.client.drain()


def test_subclassed_messages_are_refused_as_encode_refuses_them() -> None:
    from samgita_protocol import ItemDeltaParams, Replay

    class MyNote(Notification):
        pass

    note = MyNote(
        method="item/delta",
        params=ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d"),
    )
    with pytest.raises(TypeError, match="expected message to be"):
        encode(note)
    replay = Replay("s1")
    with pytest.raises(TypeError, match="expected notification to be"):
        replay.append(note)
    assert replay.last_cursor == 0
