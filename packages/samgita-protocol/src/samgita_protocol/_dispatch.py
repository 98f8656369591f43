"""Calling the host's `Handler`, and reporting the callbacks that fail.

A `Server` owns one `Dispatch`, which calls the handler's three callbacks
(``handle_request``, ``handle_notification``, ``handle_response``) with
their contexts, turns what they return or raise into what the Server sends,
and reports each failed callback: counted (`Server.callback_failures`),
logged on ``samgita_protocol.server`` (ERROR, with the traceback; the
method and identities, never params or results) and offered to the
``on_callback_error`` hook. Which failures are the host's is said in
`Handler`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from ._codec import encode, encode_unchecked
from ._contract import RULES
from ._errors import ErrorCode, ProtocolError
from ._handler import (
    CallbackFailure,
    CallbackName,
    Handler,
    NotificationContext,
    RequestContext,
    _closed_emitter,
    implements_responses,
)
from ._outgoing import Outgoing, error_response, to_send
from ._plans import RESPONSE_PLANS
from ._replies import proven_result
from ._results import decode_result
from ._schema import UNSET, Notification, Request, Response, response_to

__all__ = ["Dispatch"]

#: Where a failed handler callback is logged (ERROR, with its traceback),
#: and what of it is logged: the method and identities, never params or
#: results (``%r``: an identity is printed quoted, never as raw text).
_log: Final = logging.getLogger("samgita_protocol.server")
_IDENTITY: Final = "method %r, request id %r, correlation id %r, connection id %r"

_REQUEST_FAILED: Final = "the host failed to handle the request"
_NOTIFICATION_FAILED: Final = "the host failed to handle the notification"

#: The error object of every response the Server substitutes for a failed
#: callback.
_INTERNAL_WIRE: Final = ProtocolError(
    ErrorCode.INTERNAL_ERROR, _REQUEST_FAILED
).to_wire()


class _Emitter(list[Outgoing]):
    """The notifications one callback emitted, in order; calling it
    validates and queues one more while the callback runs (``_build`` is
    `Server.notify`; ``None`` once the callback returned).

    A list itself, built with no Python ``__init__``: one is made for
    every request handled (0.06 us; an object holding a list cost 0.2)."""

    __slots__ = ("_build", "refused")

    _build: Callable[..., Outgoing] | None
    #: The last `ProtocolError` it raised (unset until one): the callback
    #: letting that very error propagate is the host's own failure, not a
    #: typed error meant for the peer (`_notify_refused`).
    refused: ProtocolError

    def __call__(self, method: str, params: Any, **options: Any) -> Notification:
        build = self._build
        if build is None:
            _closed_emitter()
        assert build is not None
        try:
            outgoing = build(method, params, **options)
        except ProtocolError as error:
            self.refused = error
            raise
        self.append(outgoing)
        message = outgoing.message
        assert type(message) is Notification
        return message


def _notify_refused(emitter: _Emitter, error: ProtocolError) -> bool:
    """Whether ``error`` is the one ``context.notify`` raised in the callback."""
    return getattr(emitter, "refused", None) is error


class Dispatch:
    """Calls one Server's handler and reports its failed callbacks.

    ``build`` is what ``context.notify`` builds a notification with
    (`Server.notify`); ``max_bytes`` bounds every response; ``durable`` and
    ``on_callback_error`` are the Server's options of those names, checked
    by it. ``failures`` counts the failed callbacks.
    """

    __slots__ = (
        "_build",
        "_connection_id",
        "_hook",
        "_max_bytes",
        "durable",
        "failures",
        "handler",
    )

    def __init__(
        self,
        handler: Handler,
        *,
        connection_id: str,
        durable: bool,
        max_bytes: int,
        build: Callable[..., Outgoing],
        on_callback_error: Callable[[CallbackFailure], object] | None,
    ) -> None:
        self.handler = handler
        self.durable = durable
        self.failures = 0
        self._connection_id = connection_id
        self._max_bytes = max_bytes
        self._build = build
        self._hook = on_callback_error

    def check_responses(self) -> None:
        """Raise ``no_response_callback`` unless the handler implements
        `Handler.handle_response` (a request is sent only then)."""
        if not implements_responses(self.handler):
            raise ProtocolError(
                ErrorCode.NO_RESPONSE_CALLBACK,
                "the handler does not implement handle_response",
            )

    # -- handle_request -----------------------------------------------------------

    def request(
        self, request: Request, negotiated: frozenset[str], now: datetime | None
    ) -> list[Outgoing]:
        """Calls ``handle_request``: its response (carrying a decoded copy of
        the handler's result, never the handler's own object), then the
        notifications the handler emitted.

        A typed error goes out as the handler raised it when it is sendable
        (`_own_error`); a result is checked by `_answer`. Anything else is
        the host's failure: reported, and answered with a fixed
        ``internal_error`` (the handler's bug is not the peer's business)."""
        emitter = _Emitter()
        emitter._build = self._build
        # The RequestContext (built here: one call less on every request); None for
        # each absent optional field.
        unset = UNSET
        command_id = request.command_id
        causation_id = request.causation_id
        project_ref = request.project_ref
        task_ref = request.task_ref
        context = RequestContext(
            id=request.id,
            correlation_id=request.correlation_id,
            method=request.method,
            connection_id=self._connection_id,
            capabilities=negotiated,
            command_id=None if command_id is unset else command_id,
            causation_id=None if causation_id is unset else causation_id,
            project_ref=None if project_ref is unset else project_ref,
            task_ref=None if task_ref is unset else task_ref,
            _emit=emitter,
        )
        failed: Response | None = None
        try:
            outcome: Any = self.handler.handle_request(
                request.method, request.params, context
            )
        except ProtocolError as error:
            # What context.notify refused is the host's mistake, not a
            # typed error the handler meant for the peer.
            if not _notify_refused(emitter, error):
                answer = self._own_error(request, error)
                if answer is not None:
                    return [answer, *emitter]
            failed = self._request_failed(request, error)
        except Exception as error:
            failed = self._request_failed(request, error)
        finally:
            emitter._build = None
        if failed is not None:
            return [to_send(failed, self._max_bytes)]
        return self._answer(request, outcome, now, emitter)

    def _answer(
        self,
        request: Request,
        outcome: Any,
        now: datetime | None,
        emitter: _Emitter,
    ) -> list[Outgoing]:
        """The response carrying the handler's result, then what it emitted.

        The result must be a valid, bound result for this request that fits
        in one message; otherwise the host failed. Approving at or after the
        deadline is answered with ``approval_expired``: that is a fact about
        the request, not a bug."""
        plan = RESPONSE_PLANS.get(request.method)
        response: Response | None = None
        queued: list[Outgoing]
        try:
            proven = None if plan is None else proven_result(plan, request, outcome)
            if proven is not None:
                # The common case: the response's own bytes validated in one
                # decode (see _replies.proven_result).
                wire, typed = proven
                result = typed.result
            else:  # not the shortcut's case: the general check
                result = decode_result(request.method, outcome)
                response = response_to(request, result=result)
                # The envelope echoes a validated request and decode_result
                # validated the result: only the size is left to check.
                wire = encode_unchecked(response)
            # Every result carrying acceptance (event.receive, event.status).
            if not self.durable and getattr(result, "acceptance", None) == "durable":
                raise ProtocolError(
                    ErrorCode.INVALID_RESULT,
                    "acceptance durable from a Server not created with durable=True",
                )
            rule = RULES.get(request.method)
            if rule is not None:
                rule(request.params, result, now, "local")
            if len(wire) > self._max_bytes:
                raise ProtocolError(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    "the response is too large to send",
                    data={"bytes": len(wire), "max": self._max_bytes},
                )
        except ProtocolError as error:
            if error.code == ErrorCode.APPROVAL_EXPIRED:
                answer, queued = error_response(request, error), emitter
            else:
                # The handler's own result: a local error whatever check
                # found it.
                local = error.with_origin("local").with_traceback(error.__traceback__)
                answer, queued = self._request_failed(request, local), []
        except Exception as error:
            answer, queued = self._request_failed(request, error), []
        else:
            if response is None:
                # What the caller is handed must not share the handler's objects.
                response = response_to(request, result=result)
            return [Outgoing(response, wire), *emitter]
        return [to_send(answer, self._max_bytes), *queued]

    def _own_error(self, request: Request, error: ProtocolError) -> Outgoing | None:
        """The handler's typed error as built, if it is sendable (a defined
        code, object data, within the size bound), else ``None``."""
        try:
            if not isinstance(error.code, ErrorCode):
                raise TypeError
            if error.data is not None and not isinstance(error.data, dict):
                raise TypeError
            response = error_response(request, error)
            wire = encode(response, max_message_bytes=self._max_bytes)
        except Exception:
            return None
        return Outgoing(response, wire)

    def _request_failed(self, request: Request, error: Exception) -> Response:
        """The answer to a failed ``handle_request``, reported first:
        ``internal_error``, sent without the queued notifications (nothing
        of a failed callback leaves the host)."""
        self._report(
            "handle_request", request.method, request.id, request.correlation_id, error
        )
        return response_to(request, error=_INTERNAL_WIRE)

    # -- handle_notification and handle_response ------------------------------------

    def notification(
        self, notification: Notification, negotiated: frozenset[str]
    ) -> list[Outgoing]:
        """Calls ``handle_notification``: the notifications it emitted.

        Raises:
            ProtocolError: origin ``local``: the callback's own
                `ProtocolError`, or ``internal_error`` for anything else it
                raised (reported, as is a refused ``context.notify`` it let
                through).
        """
        emitter = _Emitter()
        emitter._build = self._build
        stream_id, cursor = notification.stream_id, notification.cursor
        context = NotificationContext(
            method=notification.method,
            connection_id=self._connection_id,
            notification=notification,
            capabilities=negotiated,
            stream_id=None if stream_id is UNSET else stream_id,
            cursor=None if cursor is UNSET else cursor,
            _emit=emitter,
        )
        try:
            self.handler.handle_notification(
                notification.method, notification.params, context
            )
        except ProtocolError as error:
            if _notify_refused(emitter, error):
                self._notification_failed(notification, error)
            raise error.with_origin("local") from None
        except Exception as exc:
            self._notification_failed(notification, exc)
            raise ProtocolError(ErrorCode.INTERNAL_ERROR, _NOTIFICATION_FAILED) from exc
        finally:
            emitter._build = None
        return list(emitter)

    def _notification_failed(
        self, notification: Notification, error: Exception
    ) -> None:
        correlation_id = notification.correlation_id
        self._report(
            "handle_notification",
            notification.method,
            None,
            None if correlation_id is UNSET else correlation_id,
            error,
        )

    def response(self, request: Request, outcome: Any) -> None:
        """Hands ``outcome`` to ``handle_response``; a failure is reported."""
        try:
            self.handler.handle_response(request, outcome)
        except Exception as error:
            # The request is settled either way (never delivered twice); the
            # failure is reported, not lost (Server.callback_failures).
            self._report(
                "handle_response",
                request.method,
                request.id,
                request.correlation_id,
                error,
            )

    # -- reporting ------------------------------------------------------------------

    def _report(
        self,
        callback: CallbackName,
        method: str,
        request_id: str | None,
        correlation_id: str | None,
        error: Exception,
    ) -> None:
        """Count, log and offer to the hook one failed callback. Only the
        method and identities are logged, never params or results; a
        raising hook is logged too, and changes nothing else."""
        self.failures += 1
        ids = (method, request_id, correlation_id, self._connection_id)
        _log.error("%s failed: " + _IDENTITY, callback, *ids, exc_info=error)
        hook = self._hook
        if hook is None:
            return
        failure = CallbackFailure(
            callback=callback,
            method=method,
            connection_id=self._connection_id,
            request_id=request_id,
            correlation_id=correlation_id,
            error=error,
        )
        try:
            hook(failure)
        except Exception as hook_error:
            _log.error(
                "on_callback_error raised while reporting a failed %s: " + _IDENTITY,
                callback,
                *ids,
                exc_info=hook_error,
            )
