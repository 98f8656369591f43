"""Writing a Handler: one method per operation with ``methods`` derived, the
construction error naming each missing operation, and a failing callback
reported to the host (logged, counted, offered to ``on_callback_error``)
while the peer gets the fixed ``internal_error``. Public names only."""

from __future__ import annotations

import inspect
import logging
import pydoc
from collections.abc import Callable
from typing import Any

import pytest

import samgita_protocol as sp
from helpers import EVENT, ConnectionPair

EVENTS = "project_events.v1"
INTERNAL = ("internal_error", "the host failed to handle the request")
#: A value only the params carry: it must never reach a log line.
SECRET = "payload-secret-1234"


class Events(sp.Handler):
    """project_events.v1 in the operation form; ``fail`` breaks receive."""

    def __init__(self, fail: Callable[[sp.RequestContext], Any] | None = None) -> None:
        self.events: dict[str, sp.Event] = {}
        self.fail = fail

    def project_event_receive(
        self, params: sp.EventReceiveParams, context: sp.RequestContext
    ) -> sp.EventReceiveResult:
        if self.fail is not None:
            return self.fail(context)  # type: ignore[no-any-return]
        event = params.event
        self.events.setdefault(event.event_id, event)
        return sp.EventReceiveResult(
            event_id=event.event_id,
            delivery_attempt_id=event.delivery_attempt_id,
            acceptance="received",
            processing_status="pending",
        )

    def project_event_status(
        self, params: sp.EventStatusParams, context: sp.RequestContext
    ) -> sp.EventStatusResult:
        if params.event_id not in self.events:
            raise sp.ProtocolError(
                sp.ErrorCode.NOT_FOUND,
                "unknown event",
                data={"event_id": params.event_id},
            )
        return sp.EventStatusResult(
            event_id=params.event_id,
            acceptance="received",
            processing_status="pending",
        )

    def project_event_report(
        self, params: sp.EventReportParams, context: sp.RequestContext
    ) -> sp.EventReportResult:
        return sp.EventReportResult(
            event_id=params.event_id,
            report_status="recorded",
            management_acceptance="not_requested",
        )


def pair_with(
    handler: sp.Handler,
    failures: list[sp.CallbackFailure] | None = None,
    **options: Any,
) -> ConnectionPair:
    server_options: dict[str, Any] = {"connection_id": "conn-1", **options}
    if failures is not None:
        server_options["on_callback_error"] = failures.append
    return ConnectionPair(handler, capabilities=[EVENTS], server_options=server_options)


def receive(pair: ConnectionPair) -> list[sp.Effect]:
    event = {**EVENT, "payload": {"text": SECRET}}
    return pair.call(
        "project/event.receive",
        {"event": event},
        id="r1",
        correlation_id="flow-1",
        command_id="cmd-1",
    )


def wire_error(effects: list[sp.Effect]) -> tuple[str, str]:
    [effect] = effects
    assert isinstance(effect, sp.ErrorReceived), effects
    return (effect.error.code.value, effect.error.message)


def library_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("samgita_protocol")]


# -- one method per operation ------------------------------------------------------------


def test_methods_are_derived_from_the_operations_a_class_defines() -> None:
    assert set(Events().methods) == sp.request_methods(EVENTS)
    assert set(sp.Handler().methods) == set()

    class Canceller(sp.Handler):
        def request_cancel(
            self, params: sp.CancelParams, context: sp.RequestContext
        ) -> sp.CancelResult:
            return sp.CancelResult(
                request_id=params.request_id, cancel_status="already_finished"
            )

    assert set(Canceller().methods) == {"request/cancel"}


def test_an_operation_form_handler_serves_its_group() -> None:
    pair = pair_with(Events())
    assert pair.result("project/event.receive", {"event": EVENT}, command_id="c1")
    status = pair.result("project/event.status", {"event_id": EVENT["event_id"]})
    assert status.processing_status == "pending"
    # A deliberate typed error goes to the peer as built, and is no failure.
    error = pair.error("project/event.status", {"event_id": "nope"})
    assert (error.code, error.data) == (sp.ErrorCode.NOT_FOUND, {"event_id": "nope"})
    assert pair.server.callback_failures == 0


def test_every_request_method_of_a_group_has_its_documented_operation() -> None:
    for name, spec in sp.METHODS.items():
        if spec.kind == "request" and spec.group is not None:
            operation = name.replace("/", "_").replace(".", "_")
            assert callable(getattr(sp.Handler, operation, None)), name


# -- the construction error --------------------------------------------------------------


def test_construction_names_each_missing_operation_and_its_method() -> None:
    class Half(sp.Handler):
        def project_event_receive(
            self, params: sp.EventReceiveParams, context: sp.RequestContext
        ) -> sp.EventReceiveResult:
            raise NotImplementedError

    with pytest.raises(ValueError) as exc:
        sp.Server(Half(), capabilities=[EVENTS])
    message = str(exc.value)
    assert "project/event.status (define Half.project_event_status(" in message
    assert "project/event.report (define Half.project_event_report(" in message
    assert "project/event.receive" not in message


def test_construction_names_an_operation_of_a_group_not_advertised() -> None:
    class Wider(Events):
        def thread_read(
            self, params: sp.ThreadReadParams, context: sp.RequestContext
        ) -> sp.ThreadReadResult:
            raise NotImplementedError

    with pytest.raises(ValueError, match=r"extra thread/read \(its group sessions.v1"):
        sp.Server(Wider(), capabilities=[EVENTS])


def test_construction_of_a_dispatch_form_handler_names_what_methods_lacks() -> None:
    class Dispatch(sp.Handler):
        methods = frozenset({"project/event.receive"})

        def handle_request(
            self, method: str, params: Any, context: sp.RequestContext
        ) -> Any:
            raise NotImplementedError

    with pytest.raises(
        ValueError, match=r"project/event.status \(list it in methods\)"
    ):
        sp.Server(Dispatch(), capabilities=[EVENTS])

    class Listed(sp.Handler):  # lists an operation it does not define
        methods = sp.request_methods(EVENTS)

    with pytest.raises(ValueError, match=r"define Listed.project_event_receive\("):
        sp.Server(Listed(), capabilities=[EVENTS])


# -- a failing callback is reported to the host ------------------------------------------


def test_a_raising_operation_is_logged_counted_and_offered_to_the_hook(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(context: sp.RequestContext) -> Any:
        return {}["missing"]  # a host bug: KeyError

    failures: list[sp.CallbackFailure] = []
    pair = pair_with(Events(fail), failures)
    caplog.set_level(logging.ERROR, logger="samgita_protocol")
    assert wire_error(receive(pair)) == INTERNAL

    [record] = library_records(caplog)
    assert record.name == "samgita_protocol.server"
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    line = record.getMessage()
    for fact in ("handle_request", "project/event.receive", "r1", "flow-1", "conn-1"):
        assert fact in line
    assert SECRET not in caplog.text
    assert pair.server.callback_failures == 1

    [failure] = failures
    assert isinstance(failure.error, KeyError)
    assert (
        failure.callback,
        failure.method,
        failure.request_id,
        failure.correlation_id,
        failure.connection_id,
    ) == ("handle_request", "project/event.receive", "r1", "flow-1", "conn-1")


def test_a_raising_hook_is_logged_and_the_server_keeps_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[sp.CallbackFailure] = []

    def hook(failure: sp.CallbackFailure) -> None:
        calls.append(failure)
        raise RuntimeError("the monitor is down")

    host = Events(lambda context: 1 / 0)
    pair = pair_with(host, on_callback_error=hook)
    caplog.set_level(logging.ERROR, logger="samgita_protocol")
    assert wire_error(receive(pair)) == INTERNAL
    assert len(calls) == 1 and pair.server.callback_failures == 1
    failed, hook_failed = library_records(caplog)
    assert failed.exc_info is not None and failed.exc_info[0] is ZeroDivisionError
    assert hook_failed.exc_info is not None and hook_failed.exc_info[0] is RuntimeError
    assert "on_callback_error" in hook_failed.getMessage()

    host.fail = None
    assert pair.result("project/event.receive", {"event": EVENT}, command_id="c2")


def test_the_library_adds_no_log_handler() -> None:
    for name in ("samgita_protocol", "samgita_protocol.server"):
        logger = logging.getLogger(name)
        assert logger.handlers == [] and logger.propagate


def test_a_notify_the_host_may_not_send_is_its_own_failure_not_the_peers_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    raised: list[sp.ProtocolError] = []

    def emit_outside_the_groups(context: sp.RequestContext) -> Any:
        try:
            context.notify("thread/closed", {"thread_id": "t"})  # not negotiated
        except sp.ProtocolError as error:
            raised.append(error)
            raise

    failures: list[sp.CallbackFailure] = []
    pair = pair_with(Events(emit_outside_the_groups), failures)
    caplog.set_level(logging.ERROR, logger="samgita_protocol")
    assert wire_error(receive(pair)) == INTERNAL  # not "unsupported"

    [error] = raised
    assert (error.code, error.origin) == (sp.ErrorCode.UNSUPPORTED, "local")
    assert pair.server.callback_failures == 1
    assert [f.error for f in failures] == raised
    assert len(library_records(caplog)) == 1


def test_a_result_failing_its_schema_is_the_hosts_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[sp.CallbackFailure] = []
    pair = pair_with(Events(lambda context: {"event_id": "e1"}), failures)
    caplog.set_level(logging.ERROR, logger="samgita_protocol")
    assert wire_error(receive(pair)) == INTERNAL
    assert pair.server.callback_failures == 1
    [failure] = failures
    assert isinstance(failure.error, sp.ProtocolError)
    assert (failure.error.code, failure.error.origin) == (
        sp.ErrorCode.INVALID_RESULT,
        "local",
    )
    assert len(library_records(caplog)) == 1


def test_a_durable_acceptance_from_a_server_that_is_not_durable_is_reported() -> None:
    def durable(context: sp.RequestContext) -> Any:
        return sp.EventReceiveResult(
            event_id="e1",
            delivery_attempt_id="a1",
            acceptance="durable",
            processing_status="pending",
        )

    failures: list[sp.CallbackFailure] = []
    pair = pair_with(Events(durable), failures)
    assert wire_error(receive(pair)) == INTERNAL
    [failure] = failures
    assert isinstance(failure.error, sp.ProtocolError)
    assert failure.error.code == sp.ErrorCode.INVALID_RESULT


class Watcher(Events):
    """Events and cancellation, with notification and response callbacks
    that fail."""

    def request_cancel(
        self, params: sp.CancelParams, context: sp.RequestContext
    ) -> sp.CancelResult:
        raise NotImplementedError

    def stream_resume(
        self, params: sp.StreamResumeParams, context: sp.RequestContext
    ) -> sp.StreamResumeResult:
        raise NotImplementedError

    def handle_notification(self, method: str, params: Any, context: Any) -> None:
        raise LookupError("a host bug")

    def handle_response(self, request: sp.Request, outcome: Any) -> None:
        raise LookupError("a host bug")


def test_failing_notification_and_response_callbacks_are_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[sp.CallbackFailure] = []
    pair = ConnectionPair(
        Watcher(),
        capabilities=[EVENTS, "streaming.v1", "cancellation.v1"],
        server_options={"on_callback_error": failures.append},
    )
    caplog.set_level(logging.ERROR, logger="samgita_protocol")
    note = sp.Notification(
        method="item/delta",
        params=sp.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d"),
    )
    with pytest.raises(sp.ProtocolError) as exc:
        pair.server.receive(sp.encode(note))
    assert (exc.value.code, exc.value.origin) == (sp.ErrorCode.INTERNAL_ERROR, "local")

    request = pair.server.request("request/cancel", {"request_id": "x"}).message
    pair.server.disconnect()  # ends it: handle_response(request, disconnected)

    assert [(f.callback, f.method, f.request_id) for f in failures] == [
        ("handle_notification", "item/delta", None),
        ("handle_response", "request/cancel", request.id),
    ]
    assert all(isinstance(f.error, LookupError) for f in failures)
    assert pair.server.callback_failures == 2
    assert len(library_records(caplog)) == 2


# -- help() and inspect.signature on every public name ----------------------------------


def test_every_public_name_has_a_signature_and_documentation() -> None:
    for name in sp.__all__:
        value = getattr(sp, name)
        if callable(value):
            inspect.signature(value)
        # By path, as help("samgita_protocol.X") does (a str constant's own
        # value would be looked up as a topic).
        assert pydoc.render_doc(f"samgita_protocol.{name}"), name
