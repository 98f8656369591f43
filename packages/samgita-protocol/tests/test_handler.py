"""The Handler base class and the contexts its callbacks get."""

from __future__ import annotations

from typing import Any

import pytest

from samgita_protocol import (
    CancelResult,
    ErrorCode,
    Handler,
    ItemDeltaParams,
    Notification,
    NotificationContext,
    ProtocolError,
    Request,
    RequestContext,
    request_methods,
)
from samgita_protocol._handler import (
    implements_notifications,
    implements_responses,
)
from samgita_protocol.testing import FakeHost


class Minimal(Handler):
    methods = request_methods("cancellation.v1")

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )


def test_a_dispatch_form_handler_lists_its_methods_and_a_bare_one_has_none() -> None:
    # Nothing is abstract any more: methods is derived from the operation
    # methods a class defines (none here), unless the class lists them.
    assert set(Minimal().methods) == {"request/cancel"}
    assert set(Handler().methods) == set()


def test_optional_callbacks_are_detectably_not_implemented() -> None:
    minimal = Minimal()
    assert not implements_notifications(minimal)
    assert not implements_responses(minimal)
    fake = FakeHost()
    assert implements_notifications(fake) and implements_responses(fake)

    context = NotificationContext(
        method="item/delta",
        connection_id="c",
        notification=Notification(
            method="item/delta",
            params=ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d"),
        ),
    )
    with pytest.raises(ProtocolError) as exc:
        minimal.handle_notification("item/delta", None, context)
    assert exc.value.code == ErrorCode.UNSUPPORTED
    request = Request(
        id="s1-1", correlation_id="s1-1", method="request/cancel", params=None
    )
    with pytest.raises(ProtocolError) as exc:
        minimal.handle_response(
            request, CancelResult(request_id="x", cancel_status="requested")
        )
    assert exc.value.code == ErrorCode.NO_RESPONSE_CALLBACK


def test_contexts_are_frozen_values_with_none_for_absent_fields() -> None:
    context = RequestContext(
        id="r1", correlation_id="r1", method="m", connection_id="c"
    )
    assert (
        context.command_id,
        context.causation_id,
        context.project_ref,
        context.task_ref,
    ) == (
        None,
        None,
        None,
        None,
    )
    assert context == RequestContext(
        id="r1", correlation_id="r1", method="m", connection_id="c"
    )
    with pytest.raises(AttributeError):
        context.id = "r2"  # type: ignore[misc]
    assert "_emit" not in repr(context)


def test_a_context_made_outside_a_server_cannot_emit() -> None:
    context = RequestContext(
        id="r1", correlation_id="r1", method="m", connection_id="c"
    )
    with pytest.raises(RuntimeError):
        context.notify("thread/closed", {"thread_id": "t"})
