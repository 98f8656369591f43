"""Server rules: malformed input never reaches the handler, safe internal
errors, checked handler results and errors, the incoming-id window, every
Server bound, positions, emitted notifications and construction errors."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from helpers import EVENT, ConnectionPair, raw_request, wire
from samgita_protocol import (
    ApprovalRequestResult,
    CancelParams,
    CancelResult,
    ErrorCode,
    ErrorReceived,
    EventReceiveResult,
    EventStatusResult,
    Handler,
    ItemDeltaParams,
    Message,
    Notification,
    NotificationContext,
    Outgoing,
    ProtocolError,
    Request,
    RequestContext,
    Response,
    ResponseReceived,
    Server,
    decode,
    encode,
    request_methods,
)
from samgita_protocol.testing import FakeHost

INTERNAL = {
    "code": "internal_error",
    "message": "the host failed to handle the request",
}
DELTA = ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d")


class Spy(Handler):
    """Serves cancellation.v1 (and optionally more) with a programmable answer."""

    def __init__(
        self,
        answer: Callable[[str, Any, RequestContext], Any] | None = None,
        *,
        groups: Collection[str] = ("cancellation.v1",),
        on_notification: Callable[[Any, NotificationContext], None] | None = None,
    ) -> None:
        self.calls: list[tuple[str, Any, RequestContext]] = []
        self.notes: list[Notification] = []
        self.outcomes: list[tuple[Request, Any]] = []
        self._answer = answer
        self._on_notification = on_notification
        self._methods = frozenset().union(*(request_methods(g) for g in groups))

    @property
    def methods(self) -> Collection[str]:
        return self._methods

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        self.calls.append((method, params, context))
        if self._answer is not None:
            return self._answer(method, params, context)
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )

    def handle_notification(
        self, method: str, params: Any, context: NotificationContext
    ) -> None:
        if self._on_notification is not None:
            self._on_notification(params, context)
        self.notes.append(context.notification)

    def handle_response(self, request: Request, outcome: Any) -> None:
        self.outcomes.append((request, outcome))


class RequestsOnly(Handler):
    """No notification or response callback."""

    methods = request_methods("cancellation.v1")

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )


def messages(outgoing: list[Outgoing]) -> list[Message]:
    """The messages of what a Server returned (each sent as its ``data``)."""
    return [out.message for out in outgoing]


def ready(
    handler: Handler, groups: Collection[str] = ("cancellation.v1",), **options: Any
) -> Server:
    server = Server(handler, capabilities=groups, **options)
    init = raw_request(
        "connection/initialize",
        {"versions": ["1.0"], "capabilities": list(groups)},
        id="init",
    )
    [response] = messages(server.receive(init))
    assert response.result is not msgspec.UNSET
    return server


def cancel(request_id: str = "x", *, id: str = "r1", **extra: Any) -> bytes:  # noqa: A002
    return raw_request("request/cancel", {"request_id": request_id}, id=id, **extra)


def snapshot(server: Server) -> Any:
    """Everything observable about a Server (to prove a failed call changed nothing)."""
    return (
        server.state,
        server.capabilities,
        server.positions(),
        dict(server.outstanding),
        copy.deepcopy(server._requests.outbox.terminal_ids()),
        list(server._seen.keys()),
    )


# -- malformed input ---------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"a": 1, "a": 2}',
        b"[" * 100 + b"]" * 100,
        json.dumps({"type": "notification", "method": "item/delta"}).encode(),
        json.dumps(
            {"schema_version": "1.0", "type": "response", "id": "s1-1"}
        ).encode(),
        json.dumps({"schema_version": "1.0", "type": "request", "id": "r1"}).encode(),
        json.dumps(
            {"schema_version": "1.0", "type": "request", "id": 5, "correlation_id": "c"}
        ).encode(),
        json.dumps(
            {
                "schema_version": "1.0",
                "type": "request",
                "id": "x" * 300,
                "correlation_id": "c",
            }
        ).encode(),
    ],
)
def test_unanswerable_input_raises_peer_error_and_never_reaches_the_handler(
    data: bytes,
) -> None:
    spy = Spy()
    server = ready(spy)
    before = snapshot(server)
    with pytest.raises(ProtocolError) as exc:
        server.receive(data)
    assert exc.value.origin == "peer"
    assert spy.calls == [] and spy.notes == []
    assert snapshot(server) == before


def test_too_large_input_is_refused_before_parsing() -> None:
    spy = Spy()
    # (the bound holds the initialize result, about 230 bytes)
    server = ready(spy, max_message_bytes=300)
    with pytest.raises(ProtocolError) as exc:
        server.receive(cancel("y" * 300))
    assert exc.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert spy.calls == []


def test_an_own_answer_over_the_bound_fails_and_changes_nothing() -> None:
    """The Server builds its own answers (here the initialize result) with
    their bytes inside receive: one over max_message_bytes is the local
    message_too_large, and the Server is as it was (not initialized, the
    request id not remembered)."""
    # The request is 301 bytes, its answer 342.
    server = Server(Spy(), capabilities=["cancellation.v1"], max_message_bytes=320)
    offer = {"versions": ["1.0"], "capabilities": ["cancellation.v1"]}
    init = raw_request("connection/initialize", offer, id="i" * 60)
    with pytest.raises(ProtocolError) as caught:
        server.receive(init)
    assert caught.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert caught.value.origin == "local"
    assert server.state == "new"
    # The id was not remembered: other content under it is no conflict.
    other = raw_request("request/cancel", {"request_id": "x"}, id="i" * 60)
    [answer] = server.receive(other)
    assert isinstance(answer.message, Response)
    assert answer.message.error is not msgspec.UNSET
    assert answer.message.error.code == "not_initialized"


def test_receive_refuses_a_small_request_over_a_small_bound() -> None:
    """A request in this library's own encoding (its method read from the bytes) one
    byte over max_message_bytes is refused like any input, and at exactly
    the bound it is answered."""
    wire = encode(decode(cancel("y" * 240)))
    for bound, answered in ((len(wire), True), (len(wire) - 1, False)):
        spy = Spy()
        server = ready(spy, max_message_bytes=bound)
        if answered:
            assert len(server.receive(wire)) == 1
            assert len(spy.calls) == 1
            continue
        before = snapshot(server)
        with pytest.raises(ProtocolError) as exc:
            server.receive(wire)
        assert exc.value.code == ErrorCode.MESSAGE_TOO_LARGE
        assert spy.calls == []
        assert snapshot(server) == before


def test_receive_checks_now_before_it_changes_anything() -> None:
    spy = Spy()
    server = ready(spy)
    wire = encode(decode(cancel("y")))
    before = snapshot(server)
    with pytest.raises(TypeError):
        server.receive(wire, now="noon")  # type: ignore[arg-type]
    assert spy.calls == []
    assert snapshot(server) == before
    assert len(server.receive(wire)) == 1  # the id is still new


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (
            raw_request("thread/read", {"thread_id": "t", "evil": 1}, id="r1"),
            "unknown_field",
        ),
        (raw_request("request/cancel", {}, id="r1"), "missing_field"),
        (raw_request("request/cancel", {"request_id": 7}, id="r1"), "invalid_field"),
        (raw_request("no/such", {}, id="r1"), "unknown_method"),
        (raw_request("item/delta", {}, id="r1"), "unknown_method"),
        (raw_request("request/cancel", [], id="r1"), "invalid_params"),
        (cancel(command_id="k1"), "unexpected_command_id"),
        (raw_request("thread/start", {}, id="r1"), "missing_command_id"),
        (cancel(task_ref="t1"), "task_ref_without_project_ref"),
        (cancel(schema_version="2.0"), "unsupported_version"),
        (cancel(extra_field=1), "unknown_field"),
    ],
)
def test_malformed_requests_with_a_readable_identity_get_a_typed_error(
    data: bytes, code: str
) -> None:
    spy = Spy(groups=("cancellation.v1", "sessions.v1"))
    server = ready(spy, groups=("cancellation.v1", "sessions.v1"))
    [answer] = server.receive(data)
    response = answer.message
    assert isinstance(response, Response)
    assert (response.id, response.correlation_id) == ("r1", "r1")
    assert response.error.code == code
    assert spy.calls == []
    # The answer is itself a valid message, sent as encode gives it.
    assert answer.data == encode(response)


def test_error_response_to_malformed_input_echoes_the_readable_context() -> None:
    spy = Spy()
    server = ready(spy)
    data = cancel(
        "x",
        id="r2",
        correlation_id="flow",
        causation_id="cause",
        project_ref="p",
        bogus=1,
    )
    [response] = messages(server.receive(data))
    assert (response.id, response.correlation_id) == ("r2", "flow")
    assert (response.causation_id, response.project_ref) == ("cause", "p")
    # An invalid echo field is left out rather than making the answer invalid.
    [response] = messages(server.receive(cancel(id="r3", task_ref="t", bogus=1)))
    assert response.task_ref is msgspec.UNSET
    assert response.error.code == "unknown_field"


def test_a_message_handed_in_decoded_is_validated_like_its_json() -> None:
    spy = Spy()
    server = ready(spy)
    good = Request(
        id="r5",
        correlation_id="r5",
        method="request/cancel",
        params=CancelParams(request_id="z"),
    )
    [response] = messages(server.receive(good))
    assert response.result.request_id == "z"
    bad = Request(
        id="r6",
        correlation_id="r6",
        method="request/cancel",
        params=good.params,
        command_id="k",
    )
    [response] = messages(server.receive(bad))
    assert response.error.code == "unexpected_command_id"
    assert len(spy.calls) == 1


@pytest.mark.parametrize(
    "params", [{"request_id": "z"}, msgspec.Raw(b'{"request_id":"z"}')]
)
def test_a_message_handed_in_with_plain_params_reaches_the_handler_as_a_struct(
    params: Any,
) -> None:
    spy = Spy()
    server = ready(spy)
    message = Request(
        id="r7", correlation_id="r7", method="request/cancel", params=params
    )
    [response] = messages(server.receive(message))
    assert response.result.request_id == "z"
    [(_, got, context)] = spy.calls
    assert got == CancelParams(request_id="z")
    assert context.id == "r7"


@pytest.mark.parametrize(
    "params",
    [
        {"request_id": "z", 1: "x"},
        {"request_id": ("z",)},
        {"request_id": b"z"},
        {"request_id": "\ud800"},
        {"request_id": "z", "extra": float("nan")},
    ],
)
def test_non_json_values_in_a_caller_built_message_are_local_and_unanswered(
    params: Any,
) -> None:
    spy = Spy()
    server = ready(spy)
    before = snapshot(server)
    message = Request(
        id="r8", correlation_id="r8", method="request/cancel", params=params
    )
    with pytest.raises(ProtocolError) as raised:
        server.receive(message)
    assert raised.value.origin == "local"
    assert raised.value.code in (
        ErrorCode.INVALID_KEY,
        ErrorCode.INVALID_FIELD,
        ErrorCode.INVALID_UTF8,
    )
    assert spy.calls == [] and snapshot(server) == before
    # A schema violation stays the peer's and is answered.
    [response] = messages(
        server.receive(
            Request(
                id="r9",
                correlation_id="r9",
                method="request/cancel",
                params={"request_id": "z", "extra": 1},
            )
        )
    )
    assert response.error.code == "unknown_field"


# -- handler failures ----------------------------------------------------------------


def test_a_raising_handler_becomes_a_fixed_internal_error_and_the_connection_keeps_working() -> (
    None
):
    def boom(method: str, params: Any, context: RequestContext) -> Any:
        raise RuntimeError(f"secret-token {params.request_id}")

    spy = Spy(boom)
    server = ready(spy)
    for n in range(3):
        [out] = server.receive(cancel("secret-token", id=f"r{n}"))
        assert msgspec.to_builtins(out.message.error) == INTERNAL
        assert b"secret" not in out.data
    assert server.state == "ready"
    assert len(spy.calls) == 3


def test_a_handler_raising_base_exceptions_is_not_swallowed() -> None:
    def interrupt(method: str, params: Any, context: RequestContext) -> Any:
        raise KeyboardInterrupt

    server = ready(Spy(interrupt))
    with pytest.raises(KeyboardInterrupt):
        server.receive(cancel())


def test_a_handlers_typed_error_goes_out_as_built() -> None:
    def refuse(method: str, params: Any, context: RequestContext) -> Any:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, "no such request", data={"request_id": "x"}
        )

    server = ready(Spy(refuse))
    [response] = messages(server.receive(cancel()))
    assert msgspec.to_builtins(response.error) == {
        "code": "not_found",
        "message": "no such request",
        "data": {"request_id": "x"},
    }


def test_a_handlers_unsendable_typed_error_becomes_internal_error() -> None:
    def bad_data(method: str, params: Any, context: RequestContext) -> Any:
        error = ProtocolError(ErrorCode.NOT_FOUND, "x")
        error.data = ["not", "an", "object"]  # type: ignore[assignment]
        raise error

    def too_large(method: str, params: Any, context: RequestContext) -> Any:
        raise ProtocolError(ErrorCode.NOT_FOUND, "x" * 2000)

    def bad_code(method: str, params: Any, context: RequestContext) -> Any:
        error = ProtocolError(ErrorCode.NOT_FOUND, "x")
        error.code = "made_up"  # type: ignore[assignment]
        raise error

    for answer in (bad_data, too_large, bad_code):
        server = ready(Spy(answer), max_message_bytes=1000)
        [response] = messages(server.receive(cancel()))
        assert msgspec.to_builtins(response.error) == INTERNAL, answer


@pytest.mark.parametrize(
    "result",
    [
        None,
        "text",
        {"request_id": "x"},  # missing cancel_status
        {"request_id": "x", "cancel_status": "maybe"},
        {"request_id": "other", "cancel_status": "requested"},  # contextual rule
        EventReceiveResult(
            event_id="e",
            delivery_attempt_id="a",
            acceptance="received",
            processing_status="pending",
        ),
        CancelResult(request_id="", cancel_status="requested"),  # id too short
    ],
)
def test_invalid_handler_results_become_internal_error(result: Any) -> None:
    server = ready(Spy(lambda m, p, c: result))
    [response] = messages(server.receive(cancel()))
    assert msgspec.to_builtins(response.error) == INTERNAL


def test_a_result_mapping_is_converted() -> None:
    server = ready(
        Spy(lambda m, p, c: {"request_id": p.request_id, "cancel_status": "requested"})
    )
    [response] = messages(server.receive(cancel()))
    assert response.result == CancelResult(request_id="x", cancel_status="requested")


def test_a_too_large_result_becomes_internal_error() -> None:
    class Verbose(Handler):
        methods = request_methods("approvals.v1")

        def handle_request(
            self, method: str, params: Any, context: RequestContext
        ) -> Any:
            return ApprovalRequestResult(
                approval_id=params.approval_id,
                action=params.action,
                decision="deny",
                reason="r" * int(params.action.description),
            )

    server = ready(Verbose(), groups=("approvals.v1",), max_message_bytes=400)
    for size, ok in (("10", True), ("300", False)):
        params = {
            "approval_id": "ap",
            "action": {"kind": "k", "description": size},
            "deadline": "2099-01-01T00:00:00Z",
        }
        [response] = messages(
            server.receive(raw_request("approval/request", params, id="a" + size))
        )
        if ok:
            assert response.result.reason == "r" * 10
        else:
            assert msgspec.to_builtins(response.error) == INTERNAL


class Inbox(Handler):
    methods = request_methods("project_events.v1")

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        return EventReceiveResult(
            event_id=params.event.event_id,
            delivery_attempt_id=params.event.delivery_attempt_id,
            acceptance="durable",
            processing_status="pending",
        )


class StatusInbox(Inbox):
    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        if method == "project/event.status":
            return EventStatusResult(
                event_id=params.event_id,
                acceptance="durable",
                processing_status="pending",
            )
        return super().handle_request(method, params, context)


@pytest.mark.parametrize("durable", [False, True])
def test_only_a_durable_server_may_report_durable_status(durable: bool) -> None:
    pair = ConnectionPair(
        StatusInbox(),
        capabilities=["project_events.v1"],
        server_options={"durable": durable},
    )
    [effect] = pair.call("project/event.status", {"event_id": EVENT["event_id"]})
    if durable:
        assert isinstance(effect, ResponseReceived)
        assert effect.result.acceptance == "durable"
    else:
        assert isinstance(effect, ErrorReceived)
        assert effect.error.code == ErrorCode.INTERNAL_ERROR


@pytest.mark.parametrize("durable", [False, True])
def test_only_a_durable_server_may_emit_durable(durable: bool) -> None:
    pair = ConnectionPair(
        Inbox(), capabilities=["project_events.v1"], server_options={"durable": durable}
    )
    [effect] = pair.call("project/event.receive", {"event": EVENT}, command_id="k1")
    if durable:
        assert (
            isinstance(effect, ResponseReceived)
            and effect.result.acceptance == "durable"
        )
    else:
        assert isinstance(effect, ErrorReceived)
        assert effect.error.code == ErrorCode.INTERNAL_ERROR


class Approver(Handler):
    """Approves everything (a host policy; the library never does this itself)."""

    methods = request_methods("approvals.v1")

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        return ApprovalRequestResult(
            approval_id=params.approval_id, action=params.action, decision="approve"
        )


def test_a_handler_approving_at_or_after_the_deadline_is_answered_approval_expired() -> (
    None
):
    server = ready(Approver(), groups=("approvals.v1",))
    params = {
        "approval_id": "ap1",
        "action": {"kind": "k", "description": "d"},
        "deadline": "2030-01-01T00:00:00Z",
    }
    [early] = messages(
        server.receive(
            raw_request("approval/request", params, id="a1"),
            now=datetime(2029, 1, 1, tzinfo=UTC),
        )
    )
    assert early.result.decision == "approve"
    [late] = messages(
        server.receive(
            raw_request("approval/request", params, id="a2"),
            now=datetime(2030, 1, 1, tzinfo=UTC),
        )
    )
    assert late.error.code == "approval_expired"


def test_receive_refuses_a_monotonic_now() -> None:
    server = ready(Spy())
    with pytest.raises(TypeError):
        server.receive(cancel(), now=5.0)  # type: ignore[arg-type]


# -- the incoming-id window ---------------------------------------------------------


def test_same_id_other_content_is_conflict_and_the_handler_is_not_called() -> None:
    spy = Spy()
    server = ready(spy)
    [first] = messages(server.receive(cancel("a", id="r1")))
    assert first.result.request_id == "a"
    [again] = messages(server.receive(cancel("a", id="r1")))
    assert again.result.request_id == "a"
    assert len(spy.calls) == 2  # identical: handled again (the host deduplicates)
    [conflict] = messages(server.receive(cancel("b", id="r1")))
    assert conflict.error.code == "conflict" and conflict.error.data == {"id": "r1"}
    assert len(spy.calls) == 2
    # Key order and whitespace do not make other content.
    reordered = json.dumps(
        {
            "params": {"request_id": "a"},
            "method": "request/cancel",
            "correlation_id": "r1",
            "id": "r1",
            "type": "request",
            "schema_version": "1.0",
        },
        indent=2,
    ).encode()
    [same] = messages(server.receive(reordered))
    assert same.result.request_id == "a"


def test_the_incoming_window_is_bounded_by_max_completed() -> None:
    spy = Spy()
    server = ready(spy, max_completed=3)
    server.receive(cancel("a", id="old"))
    for n in range(3):
        server.receive(cancel("a", id=f"r{n}"))
    # "old" has been forgotten: other content under it is handled.
    [response] = messages(server.receive(cancel("b", id="old")))
    assert response.result.request_id == "b"
    assert len(list(server._seen.keys())) <= 3


def test_refused_requests_are_remembered_too() -> None:
    server = Server(Spy(), capabilities=["cancellation.v1"])
    [refused] = messages(server.receive(cancel("a", id="r1")))
    assert refused.error.code == "not_initialized"
    init = raw_request(
        "connection/initialize", {"versions": ["1.0"], "capabilities": []}, id="init"
    )
    server.receive(init)
    [conflict] = messages(server.receive(cancel("b", id="r1")))
    assert conflict.error.code == "conflict"


# -- emitted notifications ------------------------------------------------------------


def test_notifications_emitted_by_a_handler_follow_its_response_in_order() -> None:
    def emit(method: str, params: Any, context: RequestContext) -> Any:
        for i in (1, 2):
            context.notify(
                "item/delta",
                {**msgspec.to_builtins(DELTA), "delta": str(i)},
                stream_id="s",
                cursor=i,
            )
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )

    spy = Spy(emit, groups=("cancellation.v1", "streaming.v1"))
    server = ready(spy, groups=("cancellation.v1", "streaming.v1"))
    sent = messages(server.receive(cancel()))
    assert [type(m).__name__ for m in sent] == [
        "Response",
        "Notification",
        "Notification",
    ]
    assert [m.params.delta for m in sent[1:]] == ["1", "2"]


def test_each_outgoing_carries_exactly_the_bytes_encode_gives_its_message() -> None:
    """What a Server sends for a handled request (its response, then the
    notifications the handler emitted) is each message's own ``encode``."""

    def emit(method: str, params: Any, context: RequestContext) -> Any:
        context.notify("item/delta", DELTA, stream_id="s", cursor=1)
        context.notify("item/delta", DELTA, correlation_id="flow")
        return CancelResult(request_id=params.request_id, cancel_status="requested")

    spy = Spy(emit, groups=("cancellation.v1", "streaming.v1"))
    server = ready(spy, groups=("cancellation.v1", "streaming.v1"))
    sent = server.receive(cancel(project_ref="p", task_ref="t"))
    assert [type(out.message).__name__ for out in sent] == [
        "Response",
        "Notification",
        "Notification",
    ]
    for out in sent:
        assert out.data == encode(out.message)


def test_emitting_outside_negotiated_groups_raises_to_the_handler() -> None:
    seen: list[ProtocolError] = []

    def emit(method: str, params: Any, context: RequestContext) -> Any:
        try:
            context.notify("item/delta", DELTA)
        except ProtocolError as error:
            seen.append(error)
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )

    server = ready(Spy(emit))
    [response] = messages(server.receive(cancel()))
    assert response.result is not msgspec.UNSET
    assert [e.code for e in seen] == [ErrorCode.UNSUPPORTED]


def test_emitted_notifications_are_dropped_with_a_failed_callback() -> None:
    def emit_then_fail(method: str, params: Any, context: RequestContext) -> Any:
        context.notify("thread/closed", {"thread_id": "t"})
        raise ValueError("oops")

    spy = Spy(emit_then_fail, groups=("cancellation.v1", "sessions.v1"))
    server = ready(spy, groups=("cancellation.v1", "sessions.v1"))
    sent = messages(server.receive(cancel()))
    assert [type(m).__name__ for m in sent] == ["Response"]


def test_a_context_cannot_emit_after_its_callback_returned() -> None:
    kept: list[RequestContext] = []

    def keep(method: str, params: Any, context: RequestContext) -> Any:
        kept.append(context)
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )

    spy = Spy(keep, groups=("cancellation.v1", "sessions.v1"))
    server = ready(spy, groups=("cancellation.v1", "sessions.v1"))
    server.receive(cancel())
    with pytest.raises(RuntimeError):
        kept[0].notify("thread/closed", {"thread_id": "t"})


def test_request_context_carries_the_identity() -> None:
    spy = Spy()
    server = ready(spy, connection_id="conn-1")
    server.receive(
        cancel(
            id="r9",
            correlation_id="flow",
            causation_id="c",
            project_ref="p",
            task_ref="t",
        )
    )
    [(_, _, context)] = spy.calls
    assert (
        context.id,
        context.correlation_id,
        context.method,
        context.connection_id,
    ) == (
        "r9",
        "flow",
        "request/cancel",
        "conn-1",
    )
    assert (
        context.command_id,
        context.causation_id,
        context.project_ref,
        context.task_ref,
    ) == (
        None,
        "c",
        "p",
        "t",
    )
    assert context.capabilities == {"cancellation.v1"}


def test_server_notify_validates() -> None:
    server = ready(
        Spy(groups=("cancellation.v1", "streaming.v1")),
        groups=("cancellation.v1", "streaming.v1"),
        max_message_bytes=400,
    )
    note = server.notify("item/delta", DELTA, stream_id="s", cursor=1).message
    assert isinstance(note, Notification)
    assert (note.stream_id, note.cursor) == ("s", 1)
    for method in ("nope", "request/cancel"):  # the caller's wrong name
        with pytest.raises(ValueError, match="expected method to be"):
            server.notify(method, DELTA)
    for method, params, options, code in [
        ("thread/closed", {"thread_id": "t"}, {}, ErrorCode.UNSUPPORTED),
        ("item/delta", DELTA, {"stream_id": "s"}, ErrorCode.UNPAIRED_STREAM_POSITION),
        ("item/delta", {"delta": "x"}, {}, ErrorCode.MISSING_FIELD),
        (
            "item/delta",
            {**msgspec.to_builtins(DELTA), "delta": "x" * 500},
            {},
            ErrorCode.MESSAGE_TOO_LARGE,
        ),
    ]:
        with pytest.raises(ProtocolError) as exc:
            server.notify(method, params, **options)
        assert exc.value.code == code, method


# -- incoming notifications and positions ---------------------------------------------


def two_groups(spy: Spy | None = None, **options: Any) -> tuple[Spy, Server]:
    spy = spy if spy is not None else Spy(groups=("cancellation.v1", "streaming.v1"))
    return spy, ready(spy, groups=("cancellation.v1", "streaming.v1"), **options)


def note(cursor: int | None = None, stream: str = "s", delta: str = "d") -> bytes:
    params = msgspec.structs.replace(DELTA, delta=delta)
    if cursor is None:
        return wire(Notification(method="item/delta", params=params))
    return wire(
        Notification(
            method="item/delta", params=params, stream_id=stream, cursor=cursor
        )
    )


def test_sequenced_notifications_are_processed_once_in_cursor_order() -> None:
    spy, server = two_groups()
    assert server.receive(note(1)) == []
    assert server.receive(note(1)) == []  # already processed: ignored
    assert server.receive(note(2)) == []
    assert [n.cursor for n in spy.notes] == [1, 2]
    before = snapshot(server)
    with pytest.raises(ProtocolError) as exc:
        server.receive(note(4))
    assert (exc.value.code, exc.value.origin) == (ErrorCode.CURSOR_GAP, "peer")
    assert snapshot(server) == before
    assert server.receive(note()) == []  # ephemeral: no position
    assert server.positions() == {"s": 2}


def test_a_failing_notification_callback_leaves_the_position_and_the_connection_works() -> (
    None
):
    def fail_on(params: Any, context: NotificationContext) -> None:
        if params.delta == "fail":
            raise RuntimeError("secret")
        if params.delta == "typed":
            raise ProtocolError(ErrorCode.CONFLICT, "refused", origin="remote")

    spy, server = two_groups(
        Spy(groups=("cancellation.v1", "streaming.v1"), on_notification=fail_on)
    )
    server.receive(note(1))
    with pytest.raises(ProtocolError) as exc:
        server.receive(note(2, delta="fail"))
    assert (exc.value.code, exc.value.origin) == (ErrorCode.INTERNAL_ERROR, "local")
    assert "secret" not in str(exc.value)
    assert server.positions() == {"s": 1}
    with pytest.raises(ProtocolError) as typed:
        server.receive(note(2, delta="typed"))
    assert (typed.value.code, typed.value.origin) == (ErrorCode.CONFLICT, "local")
    # The same cursor delivered again is processed; requests still work.
    assert server.receive(note(2)) == []
    assert server.positions() == {"s": 2}
    [response] = messages(server.receive(cancel()))
    assert response.result is not msgspec.UNSET


def test_positions_restore_and_forget() -> None:
    spy, server = two_groups()
    server.receive(note(1))
    server.receive(note(2))
    saved = server.positions()
    saved["tampered"] = 9  # a copy: the Server is not changed by it
    assert server.positions() == {"s": 2}

    spy2, restored = two_groups(positions={"s": 2})
    assert restored.receive(note(2)) == []  # processed before the restart
    assert spy2.notes == []
    restored.receive(note(3))
    assert restored.positions() == {"s": 3}
    restored.forget_stream("s")
    assert restored.positions() == {}
    restored.receive(note(1))  # a forgotten stream starts again at 1
    assert restored.positions() == {"s": 1}
    restored.forget_stream("unknown")


def test_max_streams_bounds_positions() -> None:
    spy, server = two_groups(max_streams=2)
    server.receive(note(1, stream="a"))
    server.receive(note(1, stream="b"))
    before = snapshot(server)
    with pytest.raises(ProtocolError) as exc:
        server.receive(note(1, stream="c"))
    assert (exc.value.code, exc.value.origin) == (ErrorCode.LIMIT_EXCEEDED, "local")
    assert exc.value.data == {"limit": "max_streams", "max": 2}
    assert snapshot(server) == before and len(spy.notes) == 2
    server.forget_stream("a")
    server.receive(note(1, stream="c"))
    with pytest.raises(ValueError):
        two_groups(max_streams=1, positions={"a": 1, "b": 1})


def test_notifications_refused_before_initialization_outside_groups_or_without_callback() -> (
    None
):
    server = Server(
        Spy(groups=("cancellation.v1", "streaming.v1")),
        capabilities=["cancellation.v1", "streaming.v1"],
    )
    with pytest.raises(ProtocolError) as exc:
        server.receive(note(1))
    assert (exc.value.code, exc.value.origin) == (ErrorCode.NOT_INITIALIZED, "peer")

    narrow = ready(Spy())
    with pytest.raises(ProtocolError) as exc:
        narrow.receive(note(1))
    assert exc.value.code == ErrorCode.UNSUPPORTED

    plain = ready(RequestsOnly())
    with pytest.raises(ProtocolError) as exc:
        plain.receive(wire(Notification(method="item/delta", params=DELTA)))
    assert exc.value.code == ErrorCode.UNSUPPORTED


def test_a_notification_callback_may_emit() -> None:
    def echo(params: Any, context: NotificationContext) -> None:
        context.notify("item/delta", params)

    spy, server = two_groups(
        Spy(groups=("cancellation.v1", "streaming.v1"), on_notification=echo)
    )
    [out] = messages(server.receive(note(1)))
    assert isinstance(out, Notification) and out.stream_id is msgspec.UNSET


# -- server-initiated requests -----------------------------------------------------------


def test_server_request_needs_a_response_callback() -> None:
    server = ready(RequestsOnly())
    with pytest.raises(ProtocolError) as exc:
        server.request("request/cancel", {"request_id": "x"})
    assert exc.value.code == ErrorCode.NO_RESPONSE_CALLBACK


def test_server_request_refusals_change_nothing() -> None:
    spy = Spy(groups=("cancellation.v1", "sessions.v1"))
    server = ready(
        spy,
        groups=("cancellation.v1", "sessions.v1"),
        max_outstanding_requests=2,
        max_message_bytes=300,
    )
    first = server.request("request/cancel", {"request_id": "a"}, now=0.0).message
    assert first.id == "s1-1" and first.correlation_id == "s1-1"
    cases = [
        ("request/cancel", {"request_id": "b"}, {"id": "s1-1"}, ErrorCode.CONFLICT),
        ("thread/start", {}, {}, ErrorCode.UNSUPPORTED),  # only a client sends it
        ("approval/request", {}, {}, ErrorCode.UNSUPPORTED),  # not negotiated
        ("connection/initialize", {}, {}, ErrorCode.UNSUPPORTED),  # a client's
        ("request/cancel", {}, {}, ErrorCode.MISSING_FIELD),
        (
            "request/cancel",
            {"request_id": "b"},
            {"task_ref": "t"},
            ErrorCode.TASK_REF_WITHOUT_PROJECT_REF,
        ),
        (
            "request/cancel",
            {"request_id": "b" * 250, "reason": "r" * 100},
            {},
            ErrorCode.MESSAGE_TOO_LARGE,
        ),
    ]
    for method, params, options, code in cases:
        before = snapshot(server)
        with pytest.raises(ProtocolError) as exc:
            server.request(method, params, now=0.0, **options)
        assert exc.value.code == code, (method, options)
        assert snapshot(server) == before
    before = snapshot(server)
    with pytest.raises(ValueError, match="'item/delta'"):  # not a request method
        server.request("item/delta", {}, now=0.0)
    assert snapshot(server) == before
    second = server.request("request/cancel", {"request_id": "b"}, now=0.0).message
    assert second.id == "s1-2"  # failed calls consumed no id
    before = snapshot(server)
    with pytest.raises(ProtocolError) as exc:
        server.request("request/cancel", {"request_id": "c"}, now=0.0)
    assert exc.value.code == ErrorCode.LIMIT_EXCEEDED
    assert exc.value.data == {"limit": "max_outstanding_requests", "max": 2}
    assert snapshot(server) == before


def test_server_request_ids_from_a_generator_and_a_custom_correlation() -> None:
    server = ready(Spy(), id_generator=lambda generation, n: f"host-{generation}-{n}")
    request = server.request(
        "request/cancel", {"request_id": "a"}, correlation_id="flow", now=0.0
    ).message
    assert (request.id, request.correlation_id) == ("host-1-1", "flow")


def test_responses_to_server_requests_are_checked() -> None:
    spy = Spy()
    server = ready(spy)
    request = server.request("request/cancel", {"request_id": "a"}, now=0.0).message

    unknown = Response(
        id="zzz",
        correlation_id="zzz",
        result=CancelResult(request_id="a", cancel_status="requested"),
    )
    mismatched = Response(
        id=request.id,
        correlation_id="other",
        result=CancelResult(request_id="a", cancel_status="requested"),
    )
    for response, code in [
        (unknown, ErrorCode.UNKNOWN_RESPONSE),
        (mismatched, ErrorCode.MISMATCHED_RESPONSE),
    ]:
        before = snapshot(server)
        with pytest.raises(ProtocolError) as exc:
            server.receive(wire(response))
        assert (exc.value.code, exc.value.origin) == (code, "peer")
        assert snapshot(server) == before
    assert spy.outcomes == []

    wrong = Response(
        id=request.id,
        correlation_id=request.id,
        result=CancelResult(request_id="other", cancel_status="requested"),
    )
    assert server.receive(wire(wrong)) == []
    [(_, outcome)] = spy.outcomes
    assert (outcome.code, outcome.origin) == (ErrorCode.INVALID_RESULT, "peer")


def test_a_raising_response_callback_does_not_break_the_server() -> None:
    class Grumpy(Spy):
        def handle_response(self, request: Request, outcome: Any) -> None:
            super().handle_response(request, outcome)
            raise RuntimeError("nope")

    spy = Grumpy()
    server = ready(spy)
    request = server.request("request/cancel", {"request_id": "a"}, now=0.0).message
    reply = Response(
        id=request.id,
        correlation_id=request.id,
        result=CancelResult(request_id="a", cancel_status="requested"),
    )
    assert server.callback_failures == 0
    assert server.receive(wire(reply)) == []
    assert len(spy.outcomes) == 1 and server.outstanding == {}
    assert server.callback_failures == 1  # settled once, the failure counted
    assert server.receive(wire(reply)) == []  # a duplicate: not delivered again
    assert len(spy.outcomes) == 1 and server.callback_failures == 1
    server.request("request/cancel", {"request_id": "b"}, now=0.0)
    assert len(server.disconnect()) == 1
    assert len(spy.outcomes) == 2 and server.callback_failures == 2


def test_expire_and_request_timeout() -> None:
    spy = Spy()
    server = ready(spy, request_timeout_ms=1500)
    a = server.request("request/cancel", {"request_id": "a"}, now=10.0).message
    b = server.request("request/cancel", {"request_id": "b"}, now=11.0).message
    assert server.expire(11.4) == []
    assert server.expire(11.5) == [a]
    assert server.expire(20.0) == [b]
    assert [o.code for _, o in spy.outcomes] == [ErrorCode.TIMEOUT, ErrorCode.TIMEOUT]
    with pytest.raises(TypeError):
        server.expire(None)  # type: ignore[arg-type]


def test_after_disconnect_everything_is_refused() -> None:
    server = ready(
        Spy(groups=("cancellation.v1", "streaming.v1")),
        groups=("cancellation.v1", "streaming.v1"),
    )
    server.disconnect()
    assert server.state == "disconnected"
    for call in (
        lambda: server.receive(cancel()),
        lambda: server.request("request/cancel", {"request_id": "a"}),
        lambda: server.notify("item/delta", DELTA),
    ):
        with pytest.raises(ProtocolError) as exc:
            call()
        assert exc.value.code == ErrorCode.DISCONNECTED


# -- construction -----------------------------------------------------------------------


def test_server_construction_errors() -> None:
    host = FakeHost(capabilities=["sessions.v1"])
    with pytest.raises(ValueError, match="handler.methods"):
        Server(host, capabilities=["sessions.v1", "approvals.v1"])
    with pytest.raises(ValueError, match="capability group"):
        Server(host, capabilities=["nope.v1"])
    with pytest.raises(TypeError):
        Server(object(), capabilities=[])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Server(host, capabilities="sessions.v1")
    with pytest.raises(TypeError, match="max_incoming_requests"):
        Server(host, capabilities=["sessions.v1"], max_incoming_requests=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max_completed"):
        Server(host, capabilities=["sessions.v1"], max_completed=0)
    with pytest.raises(TypeError, match="durable"):
        Server(host, capabilities=["sessions.v1"], durable="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="host_id"):
        Server(host, capabilities=["sessions.v1"], host_id="")
    with pytest.raises(ValueError, match="request_timeout"):
        Server(
            host, capabilities=["sessions.v1"], request_timeout=1, request_timeout_ms=1
        )
    with pytest.raises(ValueError, match="positions"):
        Server(host, capabilities=["sessions.v1"], positions={"s": -1})
    with pytest.raises(ValueError, match="missing request/cancel"):
        Server(Handler(), capabilities=["cancellation.v1"])  # implements nothing


def test_defaults() -> None:
    server = Server(FakeHost(), capabilities=FakeHost().capabilities)
    assert server.host_id.startswith("host-") and server.connection_id.startswith(
        "conn-"
    )
    other = Server(FakeHost(), capabilities=FakeHost().capabilities)
    assert (
        server.host_id != other.host_id and server.connection_id != other.connection_id
    )
    assert server.state == "new" and server.capabilities == frozenset()
    assert server.durable is False
    assert "Server(" in repr(server)


def test_answered_server_requests_are_remembered_in_a_window_of_max_completed() -> None:
    spy = Spy()
    server = ready(spy, max_completed=2)
    replies = []
    for name in ("a", "b", "c"):
        request = server.request(
            "request/cancel", {"request_id": name}, now=0.0
        ).message
        reply = Response(
            id=request.id,
            correlation_id=request.id,
            result=CancelResult(request_id=name, cancel_status="requested"),
        )
        assert server.receive(wire(reply)) == []
        replies.append(reply)
    assert server.receive(wire(replies[2])) == []  # a remembered duplicate: suppressed
    with pytest.raises(ProtocolError) as exc:
        server.receive(wire(replies[0]))  # forgotten: unknown
    assert exc.value.code == ErrorCode.UNKNOWN_RESPONSE
    assert len(spy.outcomes) == 3


def test_text_frames_work_like_bytes() -> None:
    spy = Spy()
    server = ready(spy)
    [response] = messages(server.receive(cancel("a", id="t1").decode()))
    assert response.result.request_id == "a"
    [again] = messages(
        server.receive(cancel("a", id="t1"))
    )  # the same request as bytes
    assert again.result.request_id == "a"
    [conflict] = messages(server.receive(cancel("b", id="t1").decode()))
    assert conflict.error.code == "conflict"
    [memory] = messages(server.receive(memoryview(cancel("a", id="t2"))))
    assert memory.result.request_id == "a"
    with pytest.raises(TypeError):
        server.receive(12)  # type: ignore[arg-type]


def test_initialize_offer_rules() -> None:
    host = FakeHost(capabilities=["sessions.v1", "approvals.v1"])
    server = Server(
        host, capabilities=host.capabilities, host_id="h", connection_id="c"
    )
    offer = {"versions": ["0.9", "1.0"], "capabilities": ["future.v9", "approvals.v1"]}
    bad = {**offer, "required_capabilities": ["sessions.v1"]}
    [refused] = messages(
        server.receive(raw_request("connection/initialize", bad, id="i1"))
    )
    assert refused.error.code == "invalid_params"
    assert server.state == "new"
    [response] = messages(
        server.receive(raw_request("connection/initialize", offer, id="i2"))
    )
    # An unknown optional offer is ignored, not an error.
    assert msgspec.to_builtins(response.result) == {
        "version": "1.0",
        "capabilities": ["approvals.v1"],
        "connection_id": "c",
        "host_id": "h",
    }
    assert server.capabilities == {"approvals.v1"}
    [unsupported] = messages(
        server.receive(raw_request("thread/read", {"thread_id": "t"}, id="i3"))
    )
    assert unsupported.error.code == "unsupported"
    assert host.threads == {}


def test_notifications_emitted_before_a_handlers_own_typed_error_go_out() -> None:
    def emit_then_refuse(method: str, params: Any, context: RequestContext) -> Any:
        context.notify("thread/closed", {"thread_id": "t"})
        raise ProtocolError(ErrorCode.INTERNAL_ERROR, "the host's own words")

    spy = Spy(emit_then_refuse, groups=("cancellation.v1", "sessions.v1"))
    server = ready(spy, groups=("cancellation.v1", "sessions.v1"))
    response, closed = messages(server.receive(cancel()))
    assert response.error.message == "the host's own words"
    assert closed.method == "thread/closed"


def test_oversize_text_and_buffers_are_message_too_large_before_any_copy() -> None:
    server = ready(Spy(), max_message_bytes=1024)
    for data in ("x" * 2000, bytearray(b"x" * 2000), memoryview(b"x" * 2000)):
        with pytest.raises(ProtocolError) as raised:
            server.receive(data)  # type: ignore[arg-type]
        assert (raised.value.code, raised.value.origin) == (
            ErrorCode.MESSAGE_TOO_LARGE,
            "peer",
        )
        assert raised.value.data == {"bytes": 2000, "max": 1024}
    [response] = messages(server.receive(bytearray(cancel())))
    assert response.result.request_id == "x"
