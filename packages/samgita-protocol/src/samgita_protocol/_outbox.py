"""Outgoing requests of one connection side (private; Client, and the
Server's own requests): pending requests with deadlines, the bounded window
of terminal identities (completed or expired ids) and mutations whose
outcome is uncertain.

Invariant: a handed-out mutation is in exactly one of ``pending``,
``uncertain`` or (after a valid response) nowhere but the terminal window.
Nothing here ever re-sends a request.

Every method either raises before changing anything or cannot fail: checks
(:meth:`Outbox.next_id`, :meth:`Outbox.match`) are
separate from the mutations that follow them (:meth:`Outbox.put`,
:meth:`Outbox.settle`, :meth:`Outbox.abandon`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from samgita_protocol._content import ContentKey, content_key, same_content
from samgita_protocol._contract import check_echo, check_result, validate_result
from samgita_protocol._errors import ErrorCode, ProtocolError
from samgita_protocol._options import wrong_type
from samgita_protocol._schema import (
    Request,
    Response,
)
from samgita_protocol._windows import RecentIds

__all__ = ["DUPLICATE", "Outbox", "Pending", "held_reason", "limit_error"]

IdGenerator = Callable[[int, int], str]

#: :meth:`Outbox.match` result for a suppressed duplicate response.
DUPLICATE: Final = object()

# Marker of an expired id in the terminal window.
_EXPIRED: Final = ("expired", b"")


def limit_error(
    name: str, maximum: int, origin: Literal["local", "peer"] = "local"
) -> ProtocolError:
    """The ``limit_exceeded`` error of bound ``name``."""
    return ProtocolError(
        ErrorCode.LIMIT_EXCEEDED,
        f"{name} ({maximum}) reached",
        data={"limit": name, "max": maximum},
        origin=origin,
    )


class Pending(msgspec.Struct, frozen=True):
    """One handed-out request waiting for its response (a Struct: one is
    built per request, in C)."""

    request: Request
    mutation: bool
    deadline: float


def held_reason(outcome: object) -> str | None:
    """Why a mutation answered with ``outcome`` stays uncertain, or ``None``
    when the answer settles it: a result that was invalid (a ``peer``
    error: the peer may have performed it) and a remote ``internal_error``
    (the host may have applied the effect before failing) keep it held."""
    if isinstance(outcome, ProtocolError):
        if outcome.origin == "peer":
            return "invalid_result"
        if outcome.code == ErrorCode.INTERNAL_ERROR:
            return "internal_error"
    return None


class Outbox:
    """Pending, terminal and uncertain request identities of one side.

    Args:
        prefix: default ids are ``f"{prefix}{generation}-{n}"`` (``c`` for the
            client, ``s`` for server-initiated requests).
        id_generator: ``id_generator(generation, n) -> str`` instead of the
            default ids; an id it returns that is in use is ``conflict``
            (never retried).
    """

    __slots__ = (
        "_completed",
        "_counter",
        "_explicit_ids",
        "_generation",
        "_id_generator",
        "_id_prefix",
        "_max_outstanding",
        "_max_uncertain",
        "_pending_mutations",
        "_prefix",
        "_timeout",
        "pending",
        "uncertain",
        "uncertain_reasons",
    )

    def __init__(
        self,
        *,
        prefix: str,
        max_outstanding_requests: int,
        max_uncertain_commands: int,
        max_completed: int,
        request_timeout: float,
        id_generator: IdGenerator | None = None,
    ) -> None:
        self.pending: dict[str, Pending] = {}
        self.uncertain: dict[str, Request] = {}
        self.uncertain_reasons: dict[str, str] = {}
        self._completed: RecentIds[str, ContentKey] = RecentIds(max_completed)
        self._pending_mutations = 0
        self._generation = 1
        self._counter = 0
        self._prefix = prefix
        self._id_prefix = f"{prefix}1-"
        self._explicit_ids = False
        self._id_generator = id_generator
        self._max_outstanding = max_outstanding_requests
        self._max_uncertain = max_uncertain_commands
        self._timeout = request_timeout

    # -- read-only facts ---------------------------------------------------------

    @property
    def generation(self) -> int:
        """The connection generation (1, then +1 per :meth:`reset`)."""
        return self._generation

    @property
    def completed_size(self) -> int:
        """Ids the terminal window can find (at most ``max_completed``)."""
        return len(self._completed)

    def terminal_ids(self) -> list[str]:
        """The ids in the terminal window, oldest first."""
        return list(self._completed.keys())

    def pending_method(self, request_id: str) -> str | None:
        """The method of the pending request ``request_id`` (the codec's
        ``results``: a result is decoded by it), or ``None``."""
        entry = self.pending.get(request_id)
        return None if entry is None else entry.request.method

    def uncertain_reason(self, request_id: str) -> str | None:
        """Why ``request_id`` is uncertain, or ``None`` when it is not.

        Raises:
            TypeError: ``request_id`` is not a string.
        """
        if not isinstance(request_id, str):
            raise wrong_type("request_id", request_id, "a string")
        return self.uncertain_reasons.get(request_id)

    def in_use(self, request_id: str) -> bool:
        """True when ``request_id`` is pending, windowed or uncertain."""
        return (
            request_id in self.pending
            or request_id in self._completed
            or request_id in self.uncertain
        )

    # -- handing out ---------------------------------------------------------------

    def next_id(self, explicit: str | None, mutation: bool) -> tuple[str, int]:
        """The id for the next request and the id counter after it, checked
        for reuse and bounds before anything is recorded (nothing is
        changed: :meth:`put` commits the counter).

        A default id (``"c2-17"``) is new by construction while no explicit
        or custom id was used (the counter only grows and the generation is
        in the id); otherwise it skips ids an explicit id already took (ids
        in use are bounded, and default ids never repeat, so this ends). An
        explicit id, or a custom generator's, is taken as it is and refused
        when in use.

        Raises:
            TypeError: ``explicit`` (the caller's ``id``) is not a string, or
                a custom generator returned a non-string.
            ProtocolError: ``conflict`` (an explicit or generated id that is
                pending, windowed or uncertain), ``limit_exceeded``
                (``max_outstanding_requests``; ``max_uncertain_commands``,
                counting pending mutations so a later disconnect can never
                overflow ``uncertain``).
        """
        counter = self._counter
        if explicit is None and self._id_generator is None:
            counter += 1
            request_id = self._id_prefix + str(counter)
            if self._explicit_ids:
                while self.in_use(request_id):
                    counter += 1
                    request_id = self._id_prefix + str(counter)
        else:
            if explicit is not None:
                if not isinstance(explicit, str):
                    raise wrong_type("id", explicit, "a string or None")
                request_id = explicit
            else:
                assert self._id_generator is not None
                counter += 1
                request_id = self._id_generator(self._generation, counter)
                if not isinstance(request_id, str):
                    raise TypeError(
                        f"expected id_generator to return a string, got: {request_id!r}"
                    )
            if self.in_use(request_id):
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    "request id is already in use on this connection",
                    data={"id": request_id},
                )
        if len(self.pending) >= self._max_outstanding:
            raise limit_error("max_outstanding_requests", self._max_outstanding)
        if (
            mutation
            and self._pending_mutations + len(self.uncertain) >= self._max_uncertain
        ):
            raise limit_error("max_uncertain_commands", self._max_uncertain)
        return request_id, counter

    def put(
        self,
        request: Request,
        mutation: bool,
        now: float,
        counter: int,
        explicit: bool,
    ) -> None:
        """Records a checked request as pending (cannot fail). ``explicit``:
        its id was given, not generated."""
        self.pending[request.id] = Pending(request, mutation, now + self._timeout)
        if mutation:
            self._pending_mutations += 1
        self._counter = counter
        if explicit:
            self._explicit_ids = True

    # -- responses -------------------------------------------------------------------

    def match(
        self,
        response: Response,
        wire: bytes | str | None,
        now: datetime | None,
    ) -> object | tuple[Pending, Any, ContentKey]:
        """Matches an envelope-valid response without changing anything.

        Returns :data:`DUPLICATE` for a suppressed duplicate, else
        ``(pending, outcome, key)`` where ``outcome`` is the validated result
        Struct or a :class:`ProtocolError` (a typed error response,
        ``remote``; an invalid result, ``peer``) and ``key`` what the
        terminal window will keep; pass them to :meth:`settle`.

        Raises:
            ProtocolError (peer): ``mismatched_response``,
                ``conflicting_response`` (other content than the completed
                response, or a reply to an expired id), ``unknown_response``.
        """
        request_id = response.id
        entry = self.pending.get(request_id)
        if entry is None:
            kept = self._completed.get(request_id)
            if kept is None:
                code, why = (
                    ErrorCode.UNKNOWN_RESPONSE,
                    "response to an unknown or forgotten request id",
                )
            elif kept is _EXPIRED:
                code, why = (
                    ErrorCode.CONFLICTING_RESPONSE,
                    "response arrived after the request expired",
                )
            elif same_content(kept, response, wire):
                return DUPLICATE
            else:
                code, why = (
                    ErrorCode.CONFLICTING_RESPONSE,
                    "response differs from the response already received",
                )
            raise ProtocolError(code, why, data={"id": request_id}, origin="peer")
        request = entry.request
        check_echo(request, response)
        outcome: Any
        if response.error is not msgspec.UNSET:
            outcome = ProtocolError.from_wire(response.error, origin="remote")
        else:
            result = response.result
            try:
                if isinstance(result, msgspec.Raw):
                    outcome = validate_result(request, result, now=now)
                else:
                    # Decoded by the method's result type already (the
                    # codec's ``results``): only the contextual rules remain.
                    check_result(request, result, now=now, origin="peer")
                    outcome = result
            except ProtocolError as exc:
                outcome = exc
        return entry, outcome, content_key(response, wire)

    def settle(self, entry: Pending, outcome: Any, key: ContentKey) -> None:
        """Ends a matched request (cannot fail). A mutation whose result was
        invalid (a ``peer`` error) is held in ``uncertain``: the peer may have
        performed it; so is one answered with a remote ``internal_error``
        (the host may have applied the effect before failing)."""
        request_id = entry.request.id
        # _finish inline (this ends every answered request).
        del self.pending[request_id]
        self._completed.add(request_id, key)
        if not entry.mutation:
            return
        self._pending_mutations -= 1
        reason = held_reason(outcome)
        if reason is not None:
            self._hold(request_id, entry.request, reason)

    def restore(self, requests: Iterable[Request], reason: str) -> None:
        """Holds mutations a previous process handed out (its journal's
        unsettled entries) in ``uncertain`` (cannot fail: the caller checked
        them against ``max_uncertain_commands``). Default ids skip theirs."""
        for request in requests:
            self._hold(request.id, request, reason)
            self._explicit_ids = True

    def _finish(self, request_id: str, entry: Pending, key: ContentKey) -> None:
        del self.pending[request_id]
        if entry.mutation:
            self._pending_mutations -= 1
        # check() refused the id while it was remembered, and it has been
        # pending since: it is not in the window.
        self._completed.add(request_id, key)

    def _hold(self, request_id: str, request: Request, reason: str) -> None:
        self.uncertain[request_id] = request
        self.uncertain_reasons[request_id] = reason

    # -- ending without a response ---------------------------------------------------

    def expired_ids(self, now: float) -> list[str]:
        """Pending ids whose deadline is at or before ``now``, in hand-out order."""
        return [rid for rid, entry in self.pending.items() if entry.deadline <= now]

    def abandon(
        self, ids: Iterable[str], reason: Literal["disconnect", "timeout"]
    ) -> list[tuple[Request, ProtocolError]]:
        """Ends pending requests without a response (cannot fail): mutations
        become uncertain (``ambiguous_disconnect``), reads fail with
        ``disconnected`` or ``timeout``. Their ids stay in the terminal window
        as expired, so late replies are ``conflicting_response``."""
        ended: list[tuple[Request, ProtocolError]] = []
        for request_id in list(ids):
            entry = self.pending[request_id]
            request = entry.request
            self._finish(request_id, entry, _EXPIRED)
            if entry.mutation:
                self._hold(request_id, request, reason)
                error = ProtocolError(
                    ErrorCode.AMBIGUOUS_DISCONNECT,
                    "the mutation's outcome is unknown; reconcile with the host before retrying",
                    data={
                        "id": request_id,
                        "command_id": request.command_id,
                        "reason": reason,
                    },
                )
            elif reason == "timeout":
                error = ProtocolError(
                    ErrorCode.TIMEOUT, "the request timed out", data={"id": request_id}
                )
            else:
                error = ProtocolError(
                    ErrorCode.DISCONNECTED,
                    "the connection closed before a response",
                    data={"id": request_id},
                )
            ended.append((request, error))
        return ended

    def reset(self) -> None:
        """A new connection generation: pending requests and the terminal
        window are forgotten, uncertain commands kept."""
        self.pending = {}
        self._pending_mutations = 0
        self._completed.clear()
        self._generation += 1
        self._id_prefix = f"{self._prefix}{self._generation}-"
        self._counter = 0

    def resolve(self, request_id: str, outcome: str) -> None:
        """Clears an uncertain command whose ``outcome`` (``"applied"`` or
        ``"not_applied"``) was established (after :meth:`check_resolve`)."""
        self.check_resolve(request_id, outcome)
        del self.uncertain[request_id]
        del self.uncertain_reasons[request_id]

    def check_resolve(self, request_id: str, outcome: str) -> None:
        """Checks that :meth:`resolve` can clear ``request_id`` with ``outcome``.

        Raises:
            TypeError: ``outcome`` or ``request_id`` is not a string.
            ValueError: ``outcome`` is neither ``"applied"`` nor
                ``"not_applied"``.
            ProtocolError: ``unknown_uncertain``.
        """
        if not isinstance(outcome, str):
            raise wrong_type("outcome", outcome, "'applied' or 'not_applied'")
        if outcome not in ("applied", "not_applied"):
            raise ValueError(
                f"expected outcome to be 'applied' or 'not_applied', got: {outcome!r}"
            )
        if not isinstance(request_id, str):
            raise wrong_type("request_id", request_id, "a string")
        if request_id not in self.uncertain:
            raise ProtocolError(
                ErrorCode.UNKNOWN_UNCERTAIN,
                "no uncertain command with this request id",
                data={"id": request_id},
            )
