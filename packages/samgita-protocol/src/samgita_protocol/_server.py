"""The sans-IO connection state of the side that hosts a `Handler`.

One `Server` per authenticated connection. `Server.receive` takes the bytes
of one message and returns what to send back, in order (each an
`Outgoing`: the message and its validated bytes); it answers
``connection/initialize`` itself, refuses anything outside the negotiated
groups without calling the handler, and calls the handler for everything
else. It never touches a socket or a thread, writes to a logger only when
a handler callback fails (``samgita_protocol.server``, see `Server`; it
configures no logging), reads a clock only
when the caller gives no ``now`` (``receive``: the wall clock, only when an
approval deadline is checked; ``request``: ``time.monotonic()``), and never
retries anything.

Every public method completes or raises and leaves the Server as it was.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

import msgspec

from ._content import ContentKey, content_key, same_content
from ._contract import negotiate, wall_clock
from ._dispatch import Dispatch
from ._errors import ErrorCode, Origin, ProtocolError
from ._handler import (
    CallbackFailure,
    Handler,
    check_methods,
    implements_notifications,
)
from ._incoming import read, wire_of
from ._methods import CAPABILITY_GROUPS, METHODS, MethodSpec, method_spec
from ._options import check_id, check_limits, known_names, monotonic
from ._outgoing import Outgoing, error_response, notification_to_send, to_send
from ._params import InitializeResult
from ._positions import ServerPositions
from ._schema import UNSET, Message, Notification, Request, Response, response_to
from ._server_requests import ServerRequests
from ._state import Activity, Event, Role, Stateful, refusal
from ._windows import RecentIds

__all__ = ["Server"]

_SERVER: Final = Role.SERVER
_EXCHANGE: Final = Activity.EXCHANGE

#: The only bounds a Server enforces. It answers every request before
#: ``receive`` returns and hands every notification to its handler at once,
#: so the client's buffer bounds have nothing to bound here; server-initiated
#: requests are reads (see ``Server.request``), so nothing becomes uncertain.
_SERVER_LIMITS: Final = frozenset(
    {"max_outstanding_requests", "max_completed", "max_streams", "max_message_bytes"}
)

_NOT_NEGOTIATED: Final = "the method's capability group was not negotiated"


def _unsupported(method: str, message: str, origin: Origin = "local") -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED, message, data={"method": method}, origin=origin
    )


class Server(Stateful):
    """Connection state of the host side (sans-IO).

    Args:
        handler: the host's `Handler`; it must implement exactly the
            request methods of ``capabilities`` (`Handler.methods`; in the
            operation form, one method per operation).
        capabilities: the capability groups this host advertises (defined
            groups only).
        host_id: this host's stable identity, sent in the initialize result
            so clients keep stream checkpoints per host. Random when not
            given; a host that serves replay across connections should set
            it.
        connection_id: this connection's identity (random when not given).
        durable: whether this host's inbox commits events; only then may the
            handler answer ``acceptance: durable`` (``project/event.receive``
            and ``project/event.status``).
        positions: processed positions of sequenced notifications from the
            peer (from `positions`), restored after a restart.
        id_generator: ``f(generation, n) -> id`` for server-initiated
            request ids (the generation is always 1: a Server serves one
            connection); defaults to ``"s1-<n>"``. An id it returns that is
            in use is ``conflict``.
        max_outstanding_requests: server-initiated requests waiting for a
            response (64).
        max_completed: the window of incoming request ids (content kept to
            detect reuse) and of answered server-initiated request ids (128).
        max_streams: streams of sequenced notifications from the peer with a
            position (64).
        max_message_bytes: every message in and out (1 MiB).
        request_timeout / request_timeout_ms: how long a server-initiated
            request may wait, applied by `expire` (30 s).
        on_callback_error: called with a `CallbackFailure` for each failed
            handler callback (see `callback_failures`), after it was logged
            and counted; what it returns is ignored, and an exception it
            raises is logged and dropped (the Server keeps working). A
            keyword of the Server, not a `Handler` method: the hook watches
            the handler, so it should not live in the object that failed,
            and whoever embeds the Server (a transport's
            ``server_options``, a supervisor) can attach one monitor to any
            handler class without subclassing it. It runs inside the call
            that ran the callback (`receive`, `expire`, `disconnect`), so
            it must not call back into this Server.

    A failed handler callback is logged on the ``samgita_protocol.server``
    logger at ERROR with its traceback, naming the callback, the method and
    the request id, correlation id and connection id (never params or
    results). The library adds no log handler and configures no logging.

    Raises:
        TypeError: ``handler`` is not a `Handler`, or an option has the wrong
            type (the message names it); a client-only bound such as
            ``max_incoming_requests`` is not an option of a Server.
        ValueError: an undefined capability group, the handler not
            implementing exactly the groups' request methods (the message
            names each missing one, with the method to define, and each
            extra one), or a bad option value.
    """

    __slots__ = (
        "_capabilities",
        "_connection_id",
        "_dispatch",
        "_host_id",
        "_max_bytes",
        "_negotiated",
        "_positions",
        "_requests",
        "_scratch",
        "_seen",
    )

    def __init__(
        self,
        handler: Handler,
        *,
        capabilities: Iterable[str],
        host_id: str | None = None,
        connection_id: str | None = None,
        durable: bool = False,
        positions: Mapping[str, int] | None = None,
        id_generator: Callable[[int, int], str] | None = None,
        max_outstanding_requests: int | None = None,
        max_completed: int | None = None,
        max_streams: int | None = None,
        max_message_bytes: int | None = None,
        request_timeout: float | None = None,
        request_timeout_ms: int | None = None,
        on_callback_error: Callable[[CallbackFailure], object] | None = None,
    ) -> None:
        super().__init__(_SERVER)
        if not isinstance(handler, Handler):
            raise TypeError(
                f"expected handler to be a samgita_protocol.Handler, got: {handler!r}"
            )
        named = known_names(
            "capabilities", capabilities, CAPABILITY_GROUPS, "capability group"
        )
        groups = list(dict.fromkeys(named))
        check_methods(handler, groups)
        if on_callback_error is not None and not callable(on_callback_error):
            raise TypeError(
                f"expected on_callback_error to be callable, got: {on_callback_error!r}"
            )
        if not isinstance(durable, bool):
            raise TypeError(f"expected durable to be a bool, got: {durable!r}")
        if id_generator is not None and not callable(id_generator):
            raise TypeError(
                f"expected id_generator to be callable, got: {id_generator!r}"
            )
        limits = check_limits(
            {
                "max_outstanding_requests": max_outstanding_requests,
                "max_completed": max_completed,
                "max_streams": max_streams,
                "max_message_bytes": max_message_bytes,
                "request_timeout": request_timeout,
                "request_timeout_ms": request_timeout_ms,
            },
            allowed=_SERVER_LIMITS,
        )
        self._capabilities: tuple[str, ...] = tuple(groups)
        self._host_id = check_id("host_id", host_id) or "host-" + secrets.token_hex(12)
        self._connection_id = check_id(
            "connection_id", connection_id
        ) or "conn-" + secrets.token_hex(12)
        self._max_bytes = limits.max_message_bytes
        # The codec's re-encoding buffer (see decode_wire).
        self._scratch = bytearray()
        self._positions = ServerPositions(
            max_streams=limits.max_streams, positions=positions
        )
        self._negotiated: frozenset[str] = frozenset()
        self._seen: RecentIds[str, ContentKey] = RecentIds(limits.max_completed)
        self._dispatch = Dispatch(
            handler,
            connection_id=self._connection_id,
            durable=durable,
            max_bytes=limits.max_message_bytes,
            build=self.notify,
            on_callback_error=on_callback_error,
        )
        self._requests = ServerRequests(self._dispatch, limits, id_generator)

    def __repr__(self) -> str:
        return (
            f"Server(state={self._state.value!r}, connection_id={self._connection_id!r}, "
            f"host_id={self._host_id!r}, capabilities={sorted(self._negotiated)!r})"
        )

    # -- read-only state ----------------------------------------------------------

    @property
    def handler(self) -> Handler:
        """The host's handler (which holds the host state)."""
        return self._dispatch.handler

    @property
    def capabilities(self) -> frozenset[str]:
        """The negotiated capability groups (empty before initialization)."""
        return self._negotiated

    @property
    def advertised_capabilities(self) -> tuple[str, ...]:
        """The groups this Server advertises."""
        return self._capabilities

    @property
    def connection_id(self) -> str:
        """This connection's identity, sent in the initialize result."""
        return self._connection_id

    @property
    def host_id(self) -> str:
        """This host's identity, sent in the initialize result."""
        return self._host_id

    @property
    def callback_failures(self) -> int:
        """How many handler callbacks failed on this Server.

        Counted: a ``handle_request`` that raised anything but a deliberate
        `ProtocolError` (a `ProtocolError` raised by ``context.notify`` and
        let through counts), or a typed error or result that could not be
        sent (the peer got ``internal_error``); a ``handle_notification``
        that raised anything but a deliberate `ProtocolError` (same rule;
        `receive` raises it too); a ``handle_response`` that raised anything
        (its request is settled all the same: the outcome is handed to the
        callback once, never again). An approval given too late
        (``approval_expired``) is not a failure. Each is also logged and
        offered to ``on_callback_error``; the exception is not kept."""
        return self._dispatch.failures

    @property
    def durable(self) -> bool:
        """Whether the handler may answer ``acceptance: durable``."""
        return self._dispatch.durable

    @property
    def outstanding(self) -> Mapping[str, Request]:
        """Server-initiated requests waiting for a response, by id (read-only)."""
        return self._requests.outstanding()

    def positions(self) -> dict[str, int]:
        """Processed positions of sequenced notifications from the peer.

        Persist them after each successful notification callback and pass
        them as ``Server(positions=...)`` after a restart.
        """
        return self._positions.positions()

    def forget_stream(self, stream_id: str) -> None:
        """Release a finished stream received from the peer.

        Its processed position is dropped, so it stops counting against
        ``max_streams``; a later notification of the same ``stream_id`` must
        start again at cursor 1. The Server holds no unprocessed events, so
        this always succeeds (an unknown ``stream_id`` is a no-op).

        Raises:
            TypeError: ``stream_id`` is not a string.
        """
        self._positions.forget(stream_id)

    # -- receive ---------------------------------------------------------------------

    def receive(
        self,
        data: bytes | bytearray | memoryview | str | Message,
        *,
        now: datetime | None = None,
    ) -> list[Outgoing]:
        """Receive one message from the peer; return what to send, in order:
        each an `Outgoing`, a message with its validated wire bytes (send
        each ``data`` as it is).

        ``data`` is one message's bytes (or text), or a `Message` the caller
        decoded itself (validated as if it had arrived as its JSON).
        ``now`` is the wall clock (an aware `datetime`) for approval
        deadlines: the handler's own approvals and the peer's; when
        ``None`` the clock is read only when a deadline is checked.

        A request is answered with exactly one response, followed by the
        notifications its handler emitted: the handler's result, its typed
        error, or the Server's own refusal (``not_initialized``,
        ``already_initialized``, ``no_common_version``,
        ``missing_required_capability``, ``unsupported``, ``conflict`` for a
        reused id with other content, ``internal_error``). A malformed
        request whose ``id`` and ``correlation_id`` can still be read is
        answered with its typed error (the handler is not called); input
        that is too large, not UTF-8 (anywhere, also inside a member the
        schema would skip), not JSON, too deep or repeating a key is never
        answered (``message_too_large``, ``invalid_utf8``, ...: a transport
        closes on them, RFC 6455's 1007 for ``invalid_utf8``). A
        response to a server-initiated request goes to
        `Handler.handle_response`; a notification to
        `Handler.handle_notification` (sequenced ones once each, in cursor
        order). Both return no messages, or the notifications the callback
        emitted.

        Raises:
            TypeError: ``now`` is not ``None`` or an aware datetime.
            ProtocolError: origin ``peer`` for input that cannot be answered
                (a malformed message without a readable request identity;
                ``unknown_response``, ``conflicting_response``,
                ``mismatched_response``; a notification before
                initialization or of a group not negotiated or not accepted:
                ``not_initialized``, ``unsupported``; ``cursor_gap``);
                origin ``local`` for ``disconnected`` (after `disconnect`),
                ``limit_exceeded`` (a new stream over ``max_streams``),
                ``message_too_large`` (an answer the Server builds itself,
                such as the initialize result, over ``max_message_bytes``)
                and a
                failed notification callback (its own `ProtocolError`, or
                ``internal_error`` for anything else it raised). The Server
                is unchanged and keeps working after every one of them.
        """
        now = wall_clock(now)
        self._check(Activity.TRAFFIC, "receive()")
        max_bytes = self._max_bytes
        wire = data if type(data) is bytes else wire_of(data, max_bytes)
        message, canonical = read(wire, data, max_bytes, self._scratch)
        if type(message) is Request:
            return self._receive_request(message, wire, canonical, now)
        if type(message) is Response:
            self._requests.receive(message, wire, now)
            return []
        if type(message) is Notification:
            return self._receive_notification(message)
        # The error response to invalid input that names a request (the
        # peer's request does not wait for a timeout).
        assert type(message) is Outgoing
        return [message]

    # -- incoming requests ------------------------------------------------------------

    def _receive_request(
        self,
        request: Request,
        wire: bytes | str | None,
        canonical: bool,
        now: datetime | None,
    ) -> list[Outgoing]:
        # Identity reuse: the same id with other content is a conflict and the
        # handler is not called; the same request again is handled again (the
        # host deduplicates by command_id). Remembered once, at first arrival,
        # in the typed form (a request's params are always its Struct).
        kept = self._seen.get(request.id)
        if kept is not None and not same_content(kept, request, wire, typed=True):
            error = ProtocolError(
                ErrorCode.CONFLICT,
                "request id reused with different content",
                data={"id": request.id},
            )
            return [to_send(error_response(request, error), self._max_bytes)]
        spec = METHODS[request.method]
        refusal = self._refusal(spec)
        # The Server's own answers are built (and sized) before the id is
        # remembered: one that cannot be sent changes nothing.
        answer: Outgoing | None = None
        if refusal is not None:
            answer = to_send(error_response(request, refusal), self._max_bytes)
        elif spec.group is None:
            answer = self._initialize(request)
        if kept is None:
            self._seen.add(
                request.id,
                content_key(request, wire, typed=True, wire_canonical=canonical),
            )
        if answer is not None:
            return [answer]
        return self._dispatch.request(request, self._negotiated, now)

    def _refusal(self, spec: MethodSpec) -> ProtocolError | None:
        # connection/initialize is the one request of no group
        activity = Activity.INITIALIZE if spec.group is None else _EXCHANGE
        if activity not in self._accepts:
            return refusal(_SERVER, self._state, activity, spec.name)
        if activity is Activity.INITIALIZE:
            return None
        if spec.group not in self._negotiated:
            return _unsupported(spec.name, _NOT_NEGOTIATED)
        return None

    def _initialize(self, request: Request) -> Outgoing:
        try:
            version, supported = negotiate(request.params, self._capabilities)
        except ProtocolError as error:
            return to_send(error_response(request, error), self._max_bytes)
        result = InitializeResult(
            version=version,
            capabilities=supported,
            connection_id=self._connection_id,
            host_id=self._host_id,
        )
        outgoing = to_send(response_to(request, result=result), self._max_bytes)
        self._move(Event.INITIALIZED)
        self._negotiated = frozenset(supported)
        return outgoing

    # -- incoming notifications -------------------------------------------------------

    def _receive_notification(self, notification: Notification) -> list[Outgoing]:
        self._check(_EXCHANGE, notification.method, "peer")
        spec = METHODS[notification.method]
        if spec.group not in self._negotiated or not implements_notifications(
            self._dispatch.handler
        ):
            raise _unsupported(
                notification.method,
                "this host does not accept this notification",
                "peer",
            )
        # Cursor checks before the callback; processed only after it succeeded.
        if not self._positions.check(notification):
            return []  # already processed
        emitted = self._dispatch.notification(notification, self._negotiated)
        stream_id, cursor = notification.stream_id, notification.cursor
        if stream_id is not UNSET and cursor is not UNSET:
            self._positions.mark(stream_id, cursor)
        return emitted

    # -- outgoing -----------------------------------------------------------------------

    def notify(
        self,
        method: str,
        params: msgspec.Struct | Mapping[str, Any],
        *,
        stream_id: str | None = None,
        cursor: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
    ) -> Outgoing:
        """Build a notification to send: send the returned `Outgoing`'s
        ``data``.

        ``params`` is the method's params Struct or a mapping converted to
        it. A replayable notification carries both ``stream_id`` and
        ``cursor`` (take them from the host's `Replay.append`). Inside a
        handler callback use ``context.notify`` instead, so the notification
        goes out after the response. Nothing is recorded.

        Raises:
            TypeError: ``method`` is not a string, ``params`` is neither
                the method's params Struct nor a mapping, or an envelope
                keyword has the wrong type (the message names it).
            ValueError: ``method`` is not a defined notification method.
            ProtocolError: ``not_initialized``, ``disconnected``,
                ``unsupported`` (its group was not negotiated), a params or
                envelope schema code (``invalid_field``, ``missing_field``,
                ``unknown_field``, ``unpaired_stream_position``, ...),
                ``message_too_large``.
        """
        self._check(_EXCHANGE, "a notification")
        return notification_to_send(
            method,
            params,
            self._negotiated,
            self._max_bytes,
            only_from="client",
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )

    def request(
        self,
        method: str,
        params: msgspec.Struct | Mapping[str, Any],
        *,
        id: str | None = None,  # noqa: A002 (the wire's name)
        correlation_id: str | None = None,
        causation_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
        now: float | None = None,
    ) -> Outgoing:
        """Build a server-initiated request (``approval/request``,
        ``request/cancel``) and record it as pending.

        Send the returned `Outgoing`'s ``data``. The response (or the end of the wait,
        see `expire` and `disconnect`) goes to `Handler.handle_response`,
        which the handler must implement. Only methods a Server may send are
        accepted; they are all reads, so a server-initiated request never
        becomes uncertain. ``now`` is seconds on the clock later given to
        `expire` (default ``time.monotonic()``); the deadline is ``now`` plus
        the request timeout. ``correlation_id`` defaults to the id; default
        ids are ``"s1-<n>"``.

        Raises:
            TypeError: ``method`` is not a string, ``params`` is neither
                the method's params Struct nor a mapping, an id or ref is not
                a string, or a custom ``id_generator`` returned a non-string
                (the message names it).
            ValueError: ``method`` is not a defined request method.
            TypeError, ValueError: a bad ``now``.
            ProtocolError: ``no_response_callback``, ``disconnected``,
                ``not_initialized``, ``unsupported`` (group not negotiated,
                or a method only a Client sends), ``conflict`` (id in use),
                ``limit_exceeded`` (``max_outstanding_requests``), a params or
                envelope schema code, ``message_too_large``; all ``local``.
                Nothing is recorded then.
        """
        moment = monotonic(now)
        self._dispatch.check_responses()
        self._check(_EXCHANGE, "a request")
        spec = method_spec("method", method, "request")
        if spec.group is not None and spec.group not in self._negotiated:
            raise _unsupported(method, _NOT_NEGOTIATED)
        if spec.group is None or spec.direction == "client" or spec.mutation:
            raise _unsupported(method, "a Server does not send this method")
        return self._requests.send(
            method,
            params,
            moment,
            id,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )

    # -- ending waits -------------------------------------------------------------------

    def expire(self, now: float) -> list[Request]:
        """End the server-initiated requests whose deadline is at or before
        ``now`` (seconds on the clock given to `request`).

        Each gets ``timeout`` (origin ``local``) through
        `Handler.handle_response`, in hand-out order; a late reply to it is
        ``conflicting_response``. Returns the requests that ended.

        Raises:
            TypeError, ValueError: ``now`` is not a finite number.
        """
        if now is None:
            raise TypeError("expected now to be a number of seconds, got: None")
        return self._requests.expire(monotonic(now))

    def disconnect(self) -> list[Request]:
        """The transport closed: every pending server-initiated request ends
        with ``disconnected`` (origin ``local``) through
        `Handler.handle_response`, in hand-out order, and the Server refuses
        everything after (``disconnected``). Returns the requests that ended.
        Calling it again does nothing. A new connection needs a new Server
        (restore `positions` into it)."""
        self._move(Event.DISCONNECT)
        return self._requests.disconnect()
