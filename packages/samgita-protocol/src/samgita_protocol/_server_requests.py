"""The requests a `Server` sends its peer (``approval/request``,
``request/cancel``): built, pending in an `Outbox` until the peer's
response, a timeout or the disconnect ends them, and each outcome handed
to `Handler.handle_response` exactly once (through the Server's
`Dispatch`, which reports a callback that fails).

They are all reads (`Server.request` sends no mutation), so none ever
becomes uncertain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from ._dispatch import Dispatch
from ._options import Limits
from ._outbox import DUPLICATE, Outbox
from ._outgoing import Outgoing, request_to_send
from ._results import params_of
from ._schema import Request, Response

__all__ = ["ServerRequests"]


class ServerRequests:
    """One Server's own requests: `send` builds one and records it as
    pending, `receive` settles one with the peer's response, `expire` and
    `disconnect` end them otherwise. ``outbox`` holds them."""

    __slots__ = ("_dispatch", "_max_bytes", "outbox")

    def __init__(
        self,
        dispatch: Dispatch,
        limits: Limits,
        id_generator: Callable[[int, int], str] | None,
    ) -> None:
        self._dispatch = dispatch
        self._max_bytes = limits.max_message_bytes
        # The requests are reads (see send), so the uncertain bound is
        # never reached; 1 keeps the Outbox's check honest.
        self.outbox = Outbox(
            prefix="s",
            max_outstanding_requests=limits.max_outstanding_requests,
            max_uncertain_commands=1,
            max_completed=limits.max_completed,
            request_timeout=limits.request_timeout,
            id_generator=id_generator,
        )

    def outstanding(self) -> Mapping[str, Request]:
        """The requests waiting for a response, by id (read-only)."""
        return MappingProxyType({k: v.request for k, v in self.outbox.pending.items()})

    def send(
        self,
        method: str,
        params: object,
        moment: float,
        id: str | None,  # noqa: A002 (the wire's name)
        **envelope: str | None,
    ) -> Outgoing:
        """`Server.request` (which see) once the Server checked it may send
        ``method``: the request built and recorded as pending, its deadline
        ``moment`` plus the request timeout. Nothing is recorded when it
        raises."""
        converted = params_of(method, params, "params")
        outbox = self.outbox
        request_id, counter = outbox.next_id(id, False)
        outgoing = request_to_send(
            request_id, method, converted, self._max_bytes, **envelope
        )
        request = outgoing.message
        assert type(request) is Request
        # -- no failure below this line --
        outbox.put(request, False, moment, counter, id is not None)
        return outgoing

    def receive(
        self, response: Response, wire: bytes | str | None, now: datetime | None
    ) -> None:
        """Settle the request ``response`` answers and hand its outcome to
        the handler; an identical duplicate is suppressed.

        Raises:
            ProtocolError: origin ``peer``: ``unknown_response``,
                ``conflicting_response``, ``mismatched_response``.
        """
        matched = self.outbox.match(response, wire, now)
        if matched is DUPLICATE:
            return  # an identical duplicate: suppressed
        assert isinstance(matched, tuple)
        entry, outcome, key = matched
        self.outbox.settle(entry, outcome, key)
        self._dispatch.response(entry.request, outcome)

    def expire(self, now: float) -> list[Request]:
        """End the requests whose deadline is at or before ``now``, each
        with ``timeout``; returns them."""
        return self._end(self.outbox.expired_ids(now), "timeout")

    def disconnect(self) -> list[Request]:
        """End every pending request with ``disconnected``; returns them."""
        return self._end(list(self.outbox.pending), "disconnect")

    def _end(
        self, ids: list[str], reason: Literal["disconnect", "timeout"]
    ) -> list[Request]:
        """End the pending requests ``ids``, handing each outcome to the
        handler, in hand-out order."""
        ended = self.outbox.abandon(ids, reason)
        for request, error in ended:
            self._dispatch.response(request, error)
        return [request for request, _ in ended]
