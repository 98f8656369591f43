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

import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Literal

import msgspec

from ._codec import decode, decode_checked, encode, encode_unchecked
from ._contract import RULES, negotiate, wall_clock
from ._errors import ErrorCode, ProtocolError
from ._given import given_message
from ._handler import (
    CallbackFailure,
    CallbackName,
    Handler,
    NotificationContext,
    RequestContext,
    _closed_emitter,
    check_methods,
    implements_notifications,
    implements_responses,
)
from ._methods import (
    CAPABILITY_GROUPS,
    METHODS,
    MethodSpec,
    method_spec,
)
from ._options import (
    DEFAULT_MAX_STREAMS,
    check_id,
    check_limits,
    envelope_types,
    is_id,
    known_names,
    monotonic,
    wrong_type,
)
from ._outbox import DUPLICATE, Outbox
from ._outgoing import Outgoing, notification_to_send
from ._params import InitializeResult
from ._plans import RESPONSE_PLANS, Plan
from ._replies import proven_result
from ._results import decode_result, params_of
from ._schema import (
    UNSET,
    Message,
    Notification,
    Request,
    Response,
    response_to,
)
from ._state import (
    Activity,
    ConnectionState,
    Event,
    Role,
    Stateful,
    refusal,
)
from ._streams import ServerPositions
from ._windows import (
    ContentKey,
    RecentIds,
    content_key,
    same_content,
)

__all__ = ["Server"]

_SERVER: Final = Role.SERVER
_READY: Final = ConnectionState.READY
_EXCHANGE: Final = Activity.EXCHANGE


class _Identity(msgspec.Struct):
    """The members of a message that name a request (any JSON value each:
    `Server._recover` checks them)."""

    type: Any = None
    id: Any = None
    correlation_id: Any = None
    command_id: Any = None
    causation_id: Any = None
    project_ref: Any = None
    task_ref: Any = None


_IDENTITY_DECODER: Final = msgspec.json.Decoder(_Identity)

#: Codes of input that is never parsed again to recover a request identity:
#: too large, not text, not JSON or too deep.
_UNRECOVERABLE: Final = frozenset(
    {
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.INVALID_UTF8,
        ErrorCode.INVALID_JSON,
        ErrorCode.DEPTH_EXCEEDED,
        ErrorCode.DUPLICATE_KEY,
    }
)


#: Where a failed handler callback is logged (ERROR, with its traceback),
#: and what of it is logged: the method and identities, never params or
#: results (``%r``: an identity is printed quoted, never as raw text).
_log: Final = logging.getLogger("samgita_protocol.server")
_IDENTITY: Final = "method %r, request id %r, correlation id %r, connection id %r"

_REQUEST_FAILED: Final = "the host failed to handle the request"
_NOTIFICATION_FAILED: Final = "the host failed to handle the notification"

#: The only bounds a Server enforces. It answers every request before
#: ``receive`` returns and hands every notification to its handler at once,
#: so the client's buffer bounds have nothing to bound here; server-initiated
#: requests are reads (see ``Server.request``), so nothing becomes uncertain.
_SERVER_LIMITS: Final = frozenset(
    {"max_outstanding_requests", "max_completed", "max_streams", "max_message_bytes"}
)


def _opt(value: Any) -> Any:
    """UNSET -> None, for what handlers are told."""
    return None if value is UNSET else value


def _unset(value: Any) -> Any:
    """None -> UNSET, for building messages from keyword options."""
    return UNSET if value is None else value


def _error_response(request: Request, error: ProtocolError) -> Response:
    return response_to(request, error=error.to_wire())


#: The error object of every response the Server substitutes for a failed
#: callback (compared by identity: a handler's own internal_error is not one).
_INTERNAL_WIRE: Final = ProtocolError(
    ErrorCode.INTERNAL_ERROR, _REQUEST_FAILED
).to_wire()


def _internal(request: Request) -> Response:
    return response_to(request, error=_INTERNAL_WIRE)


class _Emitter(list[Outgoing]):
    """The notifications one callback emitted, in order; calling it
    validates and queues one more while the callback runs (``_build`` is
    the Server's builder; ``None`` once the callback returned).

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
        "_builder",
        "_callback_failures",
        "_capabilities",
        "_connection_id",
        "_durable",
        "_handler",
        "_host_id",
        "_limits",
        "_max_bytes",
        "_negotiated",
        "_on_callback_error",
        "_outbox",
        "_positions",
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
        groups = list(
            dict.fromkeys(
                known_names(
                    "capabilities", capabilities, CAPABILITY_GROUPS, "capability group"
                )
            )
        )
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
        self._handler = handler
        self._capabilities: tuple[str, ...] = tuple(groups)
        self._host_id = check_id("host_id", host_id) or "host-" + secrets.token_hex(12)
        self._connection_id = check_id(
            "connection_id", connection_id
        ) or "conn-" + secrets.token_hex(12)
        self._durable = durable
        self._callback_failures = 0
        self._on_callback_error = on_callback_error
        self._limits = limits
        self._max_bytes = limits.max_message_bytes
        # The codec's re-encoding buffer (see decode_checked).
        self._scratch = bytearray()
        self._positions = ServerPositions(
            max_streams=limits.max_streams
            if max_streams is not None
            else DEFAULT_MAX_STREAMS,
            positions=positions,
        )
        self._negotiated: frozenset[str] = frozenset()
        self._seen: RecentIds[str, ContentKey] = RecentIds(limits.max_completed)
        # Server-initiated requests are reads (see request()), so the
        # uncertain bound is never reached; 1 keeps the Outbox's check honest.
        self._outbox = Outbox(
            prefix="s",
            max_outstanding_requests=limits.max_outstanding_requests,
            max_uncertain_commands=1,
            max_completed=limits.max_completed,
            request_timeout=limits.request_timeout,
            id_generator=id_generator,
        )
        # What each callback's emitter builds notifications with (bound once).
        self._builder = self._build_notification

    def __repr__(self) -> str:
        return (
            f"Server(state={self._state.value!r}, connection_id={self._connection_id!r}, "
            f"host_id={self._host_id!r}, capabilities={sorted(self._negotiated)!r})"
        )

    # -- read-only state ----------------------------------------------------------

    @property
    def handler(self) -> Handler:
        """The host's handler (which holds the host state)."""
        return self._handler

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
        return self._callback_failures

    @property
    def durable(self) -> bool:
        """Whether the handler may answer ``acceptance: durable``."""
        return self._durable

    @property
    def outstanding(self) -> Mapping[str, Request]:
        """Server-initiated requests waiting for a response, by id (read-only)."""
        return MappingProxyType({k: v.request for k, v in self._outbox.pending.items()})

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
        wire: bytes | str | None
        max_bytes = self._limits.max_message_bytes
        if type(data) is str and len(data) <= max_bytes:
            # A text frame: its UTF-8 bytes take the bytes path (sizes count
            # UTF-8 bytes either way); a lone surrogate stays text, for
            # decode to name it. Text over the bound by code points goes to
            # decode as it is, which refuses it without encoding it.
            try:
                data = data.encode("utf-8")
            except UnicodeEncodeError:
                pass
        if type(data) is bytes or isinstance(data, (bytes, str)):
            wire = data
        elif isinstance(data, bytearray | memoryview):
            if (data.nbytes if isinstance(data, memoryview) else len(data)) > max_bytes:
                # message_too_large (peer), raised before the buffer is copied.
                decode(data, max_message_bytes=max_bytes)
            wire = bytes(data)
        elif isinstance(data, Request | Response | Notification):
            wire = None
        else:
            raise wrong_type(
                "data", data, "bytes, bytearray, memoryview, str or a Message"
            )
        if wire is not None:
            try:
                # Bytes within the bound go straight to the codec's fast path
                # (what decode does after its argument checks).
                message = (
                    decode_checked(wire, scratch=self._scratch)
                    if type(wire) is bytes and len(wire) <= max_bytes
                    else decode(wire, max_message_bytes=max_bytes)
                )
            except ProtocolError as error:
                error = error if error.origin == "peer" else error.with_origin("peer")
                answer = self._recover(wire, error)
                if answer is None:
                    raise error from None
                return [answer]
        else:
            # A Message the caller decoded: validated as if it had arrived as
            # its JSON (size included) and decoded from it (params the
            # method's Struct); its schema violations are the peer's, values
            # no JSON decoder produces the caller's own (local, unanswered).
            assert isinstance(data, Request | Response | Notification)
            try:
                message = given_message(data, max_bytes)
            except ProtocolError as error:
                if error.origin == "local":
                    raise
                answer = self._recover(data, error)
                if answer is None:
                    raise error from None
                return [answer]
        if type(message) is Request:
            return self._receive_request(message, wire, now)
        if type(message) is Response:
            self._receive_response(message, wire, now)
            return []
        assert type(message) is Notification
        return self._receive_notification(message)

    def _recover(
        self, source: bytes | str | Message, error: ProtocolError
    ) -> Outgoing | None:
        """The error response to invalid input that still names a request
        identity (so the peer's request does not wait for a timeout), or None.
        Input that is too large, not UTF-8, not JSON or too deep is never
        parsed again."""
        if error.code in _UNRECOVERABLE:
            return None
        try:
            # Only the identity members are built (msgspec skips the rest):
            # a large invalid message is not parsed into objects twice.
            term: Any = (
                msgspec.structs.asdict(_IDENTITY_DECODER.decode(source))
                if isinstance(source, bytes | str)
                else msgspec.to_builtins(source)
            )
        except Exception:
            return None
        if not isinstance(term, dict) or term.get("type") != "request":
            return None
        id_, correlation_id = term.get("id"), term.get("correlation_id")
        if not (is_id(id_) and is_id(correlation_id)):
            return None
        # Echo what the client will compare (its request carried valid ids
        # there); whatever is itself invalid is left out.
        echo = {
            k: term[k]
            for k in ("command_id", "causation_id", "project_ref", "task_ref")
            if is_id(term.get(k))
        }
        if "task_ref" in echo and "project_ref" not in echo:
            del echo["task_ref"]
        assert isinstance(id_, str) and isinstance(correlation_id, str)
        response = Response(
            id=id_, correlation_id=correlation_id, error=error.to_wire(), **echo
        )
        try:
            return self._out(response)
        except ProtocolError:
            return None

    # -- incoming requests ------------------------------------------------------------

    def _out(self, response: Response) -> Outgoing:
        """A response the Server built itself (a refusal, the initialize
        result, an error it substituted) with its validated bytes."""
        return Outgoing(
            response, encode(response, max_message_bytes=self._limits.max_message_bytes)
        )

    def _receive_request(
        self, request: Request, wire: bytes | str | None, now: datetime | None
    ) -> list[Outgoing]:
        # Identity reuse: the same id with other content is a conflict and the
        # handler is not called; the same request again is handled again (the
        # host deduplicates by command_id). Remembered once, at first arrival.
        kept = self._seen.get(request.id)
        if kept is not None:
            if not same_content(kept, request, wire):
                error = ProtocolError(
                    ErrorCode.CONFLICT,
                    "request id reused with different content",
                    data={"id": request.id},
                )
                return [self._out(_error_response(request, error))]
        spec = METHODS[request.method]
        refusal = self._refusal(spec)
        # The Server's own answers are built (and sized) before the id is
        # remembered: one that cannot be sent changes nothing.
        answer: Outgoing | None = None
        if refusal is not None:
            answer = self._out(_error_response(request, refusal))
        elif spec.group is None:
            answer = self._initialize(request)
        if kept is None:
            self._seen.add(request.id, content_key(request, wire))
        if answer is not None:
            return [answer]
        return self._call_handler(request, now)

    def _refusal(self, spec: MethodSpec) -> ProtocolError | None:
        # connection/initialize is the one request of no group
        activity = Activity.INITIALIZE if spec.group is None else _EXCHANGE
        if activity not in self._accepts:
            return refusal(_SERVER, self._state, activity, spec.name)
        if activity is Activity.INITIALIZE:
            return None
        if spec.group not in self._negotiated:
            return ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the method's capability group was not negotiated",
                data={"method": spec.name},
            )
        return None

    def _initialize(self, request: Request) -> Outgoing:
        try:
            version, supported = negotiate(request.params, self._capabilities)
        except ProtocolError as error:
            return self._out(_error_response(request, error))
        result = InitializeResult(
            version=version,
            capabilities=supported,
            connection_id=self._connection_id,
            host_id=self._host_id,
        )
        outgoing = self._out(response_to(request, result=result))
        self._move(Event.INITIALIZED)
        self._negotiated = frozenset(supported)
        return outgoing

    def _call_handler(self, request: Request, now: datetime | None) -> list[Outgoing]:
        response, wire, queued = self._handled(
            request, RESPONSE_PLANS.get(request.method), now
        )
        answer = self._out(response) if wire is None else Outgoing(response, wire)
        return [answer, *queued]

    def _handled(
        self,
        request: Any,
        plan: Plan | None,
        now: datetime | None,
    ) -> tuple[Response, bytes | None, list[Outgoing]]:
        """Calls the handler: its response (carrying a decoded copy of the
        handler's result, never the handler's own object), that response's
        validated bytes (``None`` when it must be encoded: a substituted
        internal error), and the notifications the handler emitted.

        The handler's result must be a valid, bound result for this request
        that fits in one message; otherwise the peer gets a fixed internal
        error (the handler's bug is not the peer's business). Approving at or
        after the deadline is answered with ``approval_expired``: that is a
        fact about the request, not a bug. A typed error goes out as the
        handler raised it when it is sendable (`_own_error`)."""
        emitter = _Emitter()
        emitter._build = self._builder
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
            capabilities=self._negotiated,
            command_id=None if command_id is unset else command_id,
            causation_id=None if causation_id is unset else causation_id,
            project_ref=None if project_ref is unset else project_ref,
            task_ref=None if task_ref is unset else task_ref,
            _emit=emitter,
        )
        try:
            outcome: Any = self._handler.handle_request(
                request.method, request.params, context
            )
        except ProtocolError as error:
            # What context.notify refused is the host's mistake, not a
            # typed error the handler meant for the peer.
            if _notify_refused(emitter, error):
                return self._request_failed(request, error)
            refusal, wire = self._own_error(request, error)
            if refusal.error is _INTERNAL_WIRE:
                return self._request_failed(request, error)
            return refusal, wire, emitter
        except Exception as error:
            return self._request_failed(request, error)
        finally:
            emitter._build = None
        response: Response | None = None
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
            if not self._durable and getattr(result, "acceptance", None) == "durable":
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
                return _error_response(request, error), None, emitter
            # The handler's own result: a local error whatever check found it.
            local = error.with_origin("local").with_traceback(error.__traceback__)
            return self._request_failed(request, local)
        except Exception as error:
            return self._request_failed(request, error)
        if response is None:
            # What the caller is handed must not share the handler's objects.
            response = response_to(request, result=result)
        return response, wire, emitter

    def _request_failed(
        self, request: Any, error: Exception
    ) -> tuple[Response, None, list[Outgoing]]:
        """What `_handled` returns for a failed ``handle_request``, reported
        first: ``internal_error`` without the queued notifications (nothing
        of a failed callback leaves the host)."""
        self._report(
            "handle_request", request.method, request.id, request.correlation_id, error
        )
        return _internal(request), None, []

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
        self._callback_failures += 1
        ids = (method, request_id, correlation_id, self._connection_id)
        _log.error("%s failed: " + _IDENTITY, callback, *ids, exc_info=error)
        hook = self._on_callback_error
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

    def _own_error(
        self, request: Request, error: ProtocolError
    ) -> tuple[Response, bytes | None]:
        """The handler's typed error goes out as built, if it is sendable: a
        defined code, object data, within the size bound."""
        try:
            if not isinstance(error.code, ErrorCode):
                raise TypeError
            if error.data is not None and not isinstance(error.data, dict):
                raise TypeError
            response = _error_response(request, error)
            wire = encode(response, max_message_bytes=self._limits.max_message_bytes)
        except Exception:
            return _internal(request), None
        return response, wire

    # -- responses to server-initiated requests ---------------------------------------

    def _receive_response(
        self, response: Response, wire: bytes | str | None, now: datetime | None
    ) -> None:
        matched = self._outbox.match(response, wire, now)
        if matched is DUPLICATE:
            return  # an identical duplicate: suppressed
        assert isinstance(matched, tuple)
        entry, outcome, key = matched
        self._outbox.settle(entry, outcome, key)
        self._respond(entry.request, outcome)

    def _respond(self, request: Request, outcome: Any) -> None:
        try:
            self._handler.handle_response(request, outcome)
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

    # -- incoming notifications -------------------------------------------------------

    def _receive_notification(self, notification: Notification) -> list[Outgoing]:
        self._check(_EXCHANGE, notification.method, "peer")
        spec = METHODS[notification.method]
        if spec.group not in self._negotiated or not implements_notifications(
            self._handler
        ):
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "this host does not accept this notification",
                data={"method": notification.method},
                origin="peer",
            )
        # Cursor checks before the callback; processed only after it succeeded.
        if not self._positions.check(notification):
            return []  # already processed
        emitter = _Emitter()
        emitter._build = self._builder
        context = NotificationContext(
            method=notification.method,
            connection_id=self._connection_id,
            notification=notification,
            capabilities=self._negotiated,
            stream_id=_opt(notification.stream_id),
            cursor=_opt(notification.cursor),
            _emit=emitter,
        )
        try:
            self._handler.handle_notification(
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
        stream_id, cursor = notification.stream_id, notification.cursor
        if stream_id is not UNSET and cursor is not UNSET:
            self._positions.mark(stream_id, cursor)
        return list(emitter)

    def _notification_failed(
        self, notification: Notification, error: Exception
    ) -> None:
        self._report(
            "handle_notification",
            notification.method,
            None,
            _opt(notification.correlation_id),
            error,
        )

    # -- outgoing -----------------------------------------------------------------------

    def _build_notification(
        self,
        method: str,
        params: Any,
        *,
        stream_id: str | None = None,
        cursor: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
    ) -> Outgoing:
        self._check(_EXCHANGE, "a notification")
        return notification_to_send(
            method,
            params,
            self._negotiated,
            self._limits.max_message_bytes,
            only_from="client",
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )

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
        return self._build_notification(
            method,
            params,
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
        if not implements_responses(self._handler):
            raise ProtocolError(
                ErrorCode.NO_RESPONSE_CALLBACK,
                "the handler does not implement handle_response",
            )
        self._check(_EXCHANGE, "a request")
        spec = METHODS.get(method) if isinstance(method, str) else None
        if spec is None or spec.kind != "request":
            spec = method_spec("method", method, "request")
        if spec.group is not None and spec.group not in self._negotiated:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the method's capability group was not negotiated",
                data={"method": method},
            )
        if spec.group is None or spec.direction == "client" or spec.mutation:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "a Server does not send this method",
                data={"method": method},
            )
        converted = params_of(method, params, "params")
        outbox = self._outbox
        request_id, counter = outbox.next_id(id, False)
        request = Request(
            id=request_id,
            correlation_id=request_id if correlation_id is None else correlation_id,
            method=method,
            params=converted,
            causation_id=_unset(causation_id),
            project_ref=_unset(project_ref),
            task_ref=_unset(task_ref),
        )
        try:
            wire = encode(request, max_message_bytes=self._limits.max_message_bytes)
        except ProtocolError:
            envelope_types(
                correlation_id=correlation_id,
                causation_id=causation_id,
                project_ref=project_ref,
                task_ref=task_ref,
            )
            raise
        # -- no failure below this line --
        outbox.put(request, False, moment, counter, id is not None)
        return Outgoing(request, wire)

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
        moment = monotonic(now)
        return self._abandon(self._outbox.expired_ids(moment), "timeout")

    def disconnect(self) -> list[Request]:
        """The transport closed: every pending server-initiated request ends
        with ``disconnected`` (origin ``local``) through
        `Handler.handle_response`, in hand-out order, and the Server refuses
        everything after (``disconnected``). Returns the requests that ended.
        Calling it again does nothing. A new connection needs a new Server
        (restore `positions` into it)."""
        self._move(Event.DISCONNECT)
        return self._abandon(list(self._outbox.pending), "disconnect")

    def _abandon(
        self, ids: list[str], reason: Literal["disconnect", "timeout"]
    ) -> list[Request]:
        ended = self._outbox.abandon(ids, reason)
        for request, error in ended:
            self._respond(request, error)
        return [request for request, _ in ended]
