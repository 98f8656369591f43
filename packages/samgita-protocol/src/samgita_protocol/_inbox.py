"""Incoming requests of a `Client` (private): what the host asks of it
(``approval/request``, ``request/cancel``), each held by id until the
caller answers it once with :meth:`Client.reply` or
:meth:`Client.reply_error`; at most ``max_incoming_requests`` at a time
(``docs/protocol.md`` section 9). A request the client cannot take is
answered at once with the client's own error response. The mirror of
``_outbox`` (a side's own requests, waiting for their responses).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from ._contract import validate_result
from ._effects import Effect, RequestReceived, SendMessage
from ._errors import ErrorCode, ProtocolError
from ._methods import METHODS
from ._options import wrong_type
from ._outbox import limit_error
from ._outgoing import Outgoing, error_response, to_send
from ._schema import Request, Response, response_to
from ._state import Activity, ConnectionState, Role, refusal

__all__ = ["Inbox"]

#: Request methods a client accepts from its peer: those whose direction is
#: server-to-client or either (``approval/request``, ``request/cancel``).
_ACCEPTED: Final = frozenset(
    name
    for name, spec in METHODS.items()
    if spec.kind == "request" and spec.direction in ("server", "either")
)


class Inbox:
    """The pending incoming requests of one Client, by id (``requests``:
    replaced, not cleared, when the connection closes, so a view handed
    out before keeps what it showed)."""

    __slots__ = ("_max", "_max_bytes", "requests")

    def __init__(self, max_incoming_requests: int, max_message_bytes: int) -> None:
        self.requests: dict[str, Request] = {}
        self._max = max_incoming_requests
        self._max_bytes = max_message_bytes

    def receive(
        self, request: Request, state: ConnectionState, negotiated: frozenset[str]
    ) -> list[Effect]:
        """Holds a request the peer sent on a connection in ``state`` with
        the ``negotiated`` groups, or answers it with the client's refusal
        (not initialized, unsupported, a conflicting id, over the bound);
        cannot fail."""
        problem = self._refusal(request, state, negotiated)
        if problem is not None:
            response = error_response(request, problem)
            return [SendMessage(response, to_send(response, self._max_bytes).data)]
        self.requests[request.id] = request
        return [RequestReceived(request)]

    def _refusal(
        self, request: Request, state: ConnectionState, negotiated: frozenset[str]
    ) -> ProtocolError | None:
        method = request.method
        problem = refusal(Role.CLIENT, state, Activity.EXCHANGE, method)
        if problem is not None:
            return problem
        if method not in _ACCEPTED or METHODS[method].group not in negotiated:
            return ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the client does not accept this method on this connection",
                data={"method": method},
            )
        if request.id in self.requests:
            return ProtocolError(
                ErrorCode.CONFLICT,
                "a request with this id is already pending",
                data={"id": request.id},
            )
        if len(self.requests) >= self._max:
            return limit_error("max_incoming_requests", self._max)
        return None

    def reply(self, request: object, result: Any, now: datetime | None) -> Outgoing:
        """The response answering the pending ``request`` with ``result``
        (checked against the method's result schema and binding; ``now``
        the wall clock for an approval's deadline); the request is no
        longer pending.

        Raises:
            TypeError: ``request`` is not a `Request`, or ``result`` is
                neither the result Struct nor a mapping.
            ProtocolError (local): ``unknown_request``, ``invalid_result``,
                ``approval_mismatch``, ``approval_expired``,
                ``message_too_large``. Nothing changed.
        """
        pending = self._pending(request)
        checked = validate_result(pending, result, now=now, origin="local")
        return self._answer(response_to(pending, result=checked))

    def reply_error(self, request: object, error: ProtocolError) -> Outgoing:
        """The response answering the pending ``request`` with ``error``;
        the request is no longer pending.

        Raises:
            TypeError: ``request`` is not a `Request`.
            ProtocolError (local): ``unknown_request``,
                ``message_too_large``. Nothing changed.
        """
        pending = self._pending(request)
        return self._answer(error_response(pending, error))

    def _pending(self, request: object) -> Request:
        if not isinstance(request, Request):
            raise wrong_type("request", request, "a Request")
        if self.requests.get(request.id) != request:
            raise ProtocolError(
                ErrorCode.UNKNOWN_REQUEST, "not a pending incoming request"
            )
        return request

    def _answer(self, response: Response) -> Outgoing:
        sent = to_send(response, self._max_bytes)
        del self.requests[response.id]
        return sent
