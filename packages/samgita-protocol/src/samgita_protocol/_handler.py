"""The host side's callbacks: `Handler`, and what each callback is told.

`Handler` is an abstract base class, not a `typing.Protocol`: the two
optional callbacks (`handle_notification`, `handle_response`) have default
implementations, and the `Server` must be able to tell a default from an
override (a host without `handle_notification` answers notifications with
`unsupported`; `Server.request` without `handle_response` is
`no_response_callback`). A base class gives both the defaults and that test
(`implements_notifications` / `implements_responses`) in one place; a
structural Protocol could give neither.

Emitting notifications is sans-IO too. A callback never sends anything: it
calls `context.notify(...)`, which validates the notification at once (raising
`ProtocolError` to the callback when it cannot be sent) and queues it. When
the callback's outcome goes out as the handler built it, `Server.receive`
returns the response first and then the queued notifications, in the order
they were emitted (also after the handler's own typed error, and after an
``approval_expired`` answer to an approval given too late). When the Server
substitutes ``internal_error`` for the outcome (the callback raised
something other than `ProtocolError`, or its result or error failed the
checks), the queued notifications are dropped with it: nothing of a failed
callback leaves the host. A replayable notification the
host also appended to its `Replay` log stays there and is served by
`stream/resume`. Outside a callback, the host sends notifications with
`Server.notify(...)`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ._errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from ._schema import Notification, Request

__all__ = [
    "Handler",
    "NotificationContext",
    "RequestContext",
]

# (method, params, stream_id, cursor, correlation_id, causation_id,
#  project_ref, task_ref) -> the queued Notification. Built by the Server.
_Emit = Callable[..., "Notification"]


def _closed_emitter(*_args: Any, **_kwargs: Any) -> Notification:
    raise RuntimeError("this context's callback has returned; use Server.notify")


class RequestContext(msgspec.Struct, frozen=True, kw_only=True):
    """The identity of the request a `Handler.handle_request` call answers.

    Optional fields are ``None`` when the request did not carry them
    (``command_id`` is present exactly on mutations). ``connection_id`` is
    the Server's identity of this connection (the one sent in the
    initialize result); ``capabilities`` the groups negotiated on it (what
    ``notify`` may emit).

    A frozen ``msgspec.Struct`` (like the effects), not a frozen dataclass:
    one is built for every request handled, and a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (about 0.9
    us, a tenth of handling a small request; this costs 0.2 us). It
    compares, hashes and prints like one whose emitter is not a field.
    """

    id: str
    correlation_id: str
    method: str
    connection_id: str
    capabilities: frozenset[str] = frozenset()
    command_id: str | None = None
    causation_id: str | None = None
    project_ref: str | None = None
    task_ref: str | None = None
    _emit: _Emit = _closed_emitter

    def _identity(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.correlation_id,
            self.method,
            self.connection_id,
            self.capabilities,
            self.command_id,
            self.causation_id,
            self.project_ref,
            self.task_ref,
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, RequestContext)
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        names = (
            "id",
            "correlation_id",
            "method",
            "connection_id",
            "capabilities",
            "command_id",
            "causation_id",
            "project_ref",
            "task_ref",
        )
        shown = ", ".join(
            f"{n}={v!r}" for n, v in zip(names, self._identity(), strict=True)
        )
        return f"{type(self).__name__}({shown})"

    def notify(
        self,
        method: str,
        params: msgspec.Struct | Any,
        *,
        stream_id: str | None = None,
        cursor: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
    ) -> Notification:
        """Queue a notification to go out after this request's response.

        Validated exactly like `Server.notify` (which see), and returned.

        Raises:
            ProtocolError: ``unknown_method`` (not a notification method),
                ``unsupported`` (its group was not negotiated), a params or
                envelope schema code (``invalid_field``, ``unknown_field``,
                ``unpaired_stream_position``, ...), ``message_too_large``.
            RuntimeError: the callback this context was made for has
                already returned.
        """
        return self._emit(
            method,
            params,
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationContext:
    """What a `Handler.handle_notification` call is told besides the params.

    ``notification`` is the whole validated envelope; ``stream_id`` and
    ``cursor`` are ``None`` for an ephemeral notification. ``notify`` queues
    notifications exactly like `RequestContext.notify`; `Server.receive`
    returns them once the callback returned.
    """

    method: str
    connection_id: str
    notification: Notification
    capabilities: frozenset[str] = frozenset()
    stream_id: str | None = None
    cursor: int | None = None
    _emit: _Emit = field(default=_closed_emitter, repr=False, compare=False)

    def notify(
        self,
        method: str,
        params: msgspec.Struct | Any,
        *,
        stream_id: str | None = None,
        cursor: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
    ) -> Notification:
        """Queue a notification to be returned by this `Server.receive` call.

        Raises:
            ProtocolError: as `RequestContext.notify`.
            RuntimeError: the callback has already returned.
        """
        return self._emit(
            method,
            params,
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )


class Handler(abc.ABC):
    """The host's callbacks for one `Server` (one connection).

    Host state lives in the handler object itself; the library never copies
    or restores it. Callbacks are only called for well-formed input of
    negotiated groups: malformed input never reaches them. The library never
    retries a callback and cannot undo an effect a callback already
    performed; the host owns persistence, authorization, idempotency (by
    ``command_id``), session lifecycle legality and tools. Repeating a
    completed incoming mutation may call `handle_request` again: the host's
    inbox must deduplicate it.

    Subclasses define `methods` (a class attribute is fine) and
    `handle_request`; `handle_notification` and `handle_response` are
    optional.
    """

    @property
    @abc.abstractmethod
    def methods(self) -> Collection[str]:
        """The request methods this handler implements.

        `Server(...)` raises `ValueError` unless they equal exactly the
        request methods of the capability groups it advertises.
        """

    @abc.abstractmethod
    def handle_request(
        self, method: str, params: Any, context: RequestContext
    ) -> msgspec.Struct | Any:
        """Answer one request.

        ``params`` is the method's params Struct (for example
        `ThreadReadParams`). Return the method's result Struct (or a mapping
        that converts to it). Raise `ProtocolError` for a typed error: it is
        sent as built (code, message, data), so keep secrets out of it.

        Anything else raised becomes ``internal_error`` with a fixed message,
        as does a result that fails its schema or contextual rules, a
        ``durable`` acceptance from a Server not created with
        ``durable=True``, or a response too large to send; an approval given
        at or after its deadline is answered with ``approval_expired``.
        """

    def handle_notification(
        self, method: str, params: Any, context: NotificationContext
    ) -> None:
        """Process one validated notification from the peer (optional).

        Sequenced notifications arrive once each, in cursor order; the
        Server marks the cursor processed only after this returns. Raising
        leaves the position where it was (the same cursor may be delivered
        again) and makes `Server.receive` raise: a `ProtocolError` as
        raised, anything else as ``internal_error``. The Server itself keeps
        working either way.

        The default is "not implemented": the Server answers notifications
        with ``unsupported`` and never calls it.
        """
        raise ProtocolError(
            ErrorCode.UNSUPPORTED, "this host does not accept notifications"
        )

    def handle_response(
        self, request: Request, outcome: msgspec.Struct | ProtocolError
    ) -> None:
        """Receive the outcome of a server-initiated request (optional).

        ``outcome`` is the validated result Struct, the peer's typed error
        (origin ``remote``), a result that failed its checks
        (``invalid_result``, ``approval_mismatch``, ``approval_expired``,
        origin ``peer``) or the end of the wait (``timeout``,
        ``disconnected``, origin ``local``). Called exactly once per
        request. An exception raised here is discarded: the request is
        settled either way, and the peer will not answer it again.

        The default is "not implemented": `Server.request` raises
        ``no_response_callback``.
        """
        raise ProtocolError(
            ErrorCode.NO_RESPONSE_CALLBACK, "this host does not accept responses"
        )


def implements_notifications(handler: Handler) -> bool:
    """Whether ``handler`` overrides `Handler.handle_notification`."""
    return type(handler).handle_notification is not Handler.handle_notification


def implements_responses(handler: Handler) -> bool:
    """Whether ``handler`` overrides `Handler.handle_response`."""
    return type(handler).handle_response is not Handler.handle_response
