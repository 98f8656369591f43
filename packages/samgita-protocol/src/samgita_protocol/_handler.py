"""The host side's callbacks: `Handler`, and what each callback is told.

`Handler` is a base class, not a `typing.Protocol`: every callback and
operation has a default ("not implemented"), and the `Server` must be able
to tell a default from an override (a host without `handle_notification`
answers notifications with `unsupported`; `Server.request` without
`handle_response` is `no_response_callback`; an operation method not
overridden is not implemented). A base class gives both the defaults and
that test (`implements_notifications` / `implements_responses` /
`defined_operations`) in one place; a structural Protocol could give
neither. Nothing in it is abstract: a subclass overrides what it implements.

Emitting notifications is sans-IO too. A callback never sends anything: it
calls `context.notify(...)`, which validates the notification at once (raising
`ProtocolError` to the callback when it cannot be sent) and queues it. When
the callback's outcome goes out as the handler built it, `Server.receive`
returns the response first and then the queued notifications, in the order
they were emitted (also after the handler's own typed error, and after an
``approval_expired`` answer to an approval given too late). When the Server
substitutes ``internal_error`` for the outcome (the callback failed: see
`Handler`), the queued notifications are dropped with it: nothing of a failed
callback leaves the host. A replayable notification the
host also appended to its `Replay` log stays there and is served by
`stream/resume`. Outside a callback, the host sends notifications with
`Server.notify(...)`.

`Handler` describes the two forms a handler is written in (one method per
operation, or one `handle_request` for all) and which failures of a
callback are the host's. One method per operation, named after the wire
method, rather than a registration decorator: the mapping is a pure
function of the wire name (readable both ways, no registry, nothing done at
import), `Handler` declares every operation with its params and result
types (so a type checker checks each override, and ``help(Handler)`` lists
them all), and "implemented" is one test, the same one as for the optional
callbacks: the subclass overrides the base's method.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from ._errors import ErrorCode, ProtocolError
from ._methods import (
    METHODS,
    request_methods,
)
from ._params import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    CancelParams,
    CancelResult,
    EventReceiveParams,
    EventReceiveResult,
    EventReportParams,
    EventReportResult,
    EventStatusParams,
    EventStatusResult,
    StreamResumeParams,
    StreamResumeResult,
    ThreadReadParams,
    ThreadReadResult,
    ThreadResumeParams,
    ThreadResumeResult,
    ThreadStartParams,
    ThreadStartResult,
    TurnInterruptParams,
    TurnInterruptResult,
    TurnStartParams,
    TurnStartResult,
    TurnSteerParams,
    TurnSteerResult,
)

# Imported at run time, not under TYPE_CHECKING: msgspec resolves a Struct's
# annotations for ``inspect.signature`` and ``help()`` (RequestContext's
# ``_emit`` names Notification), and both must work on every public name.
from ._schema import (
    Notification,
    Request,
)

__all__ = [
    "CallbackFailure",
    "Handler",
    "NotificationContext",
    "RequestContext",
]

# (method, params, stream_id, cursor, correlation_id, causation_id,
#  project_ref, task_ref) -> the queued Notification. Built by the Server.
_Emit = Callable[..., Notification]


def operation_name(method: str) -> str:
    """The name of the `Handler` method that implements request ``method``
    in the operation form: ``/`` and ``.`` become ``_``
    (``project/event.receive`` -> ``project_event_receive``,
    ``thread/start`` -> ``thread_start``, ``request/cancel`` ->
    ``request_cancel``). Raises nothing."""
    return method.replace("/", "_").replace(".", "_")


#: Every request method a handler can implement (those of a capability
#: group; the Server answers ``connection/initialize`` itself) -> the name
#: of the method implementing it, in documentation order. A private dict,
#: not a read-only proxy: `Handler.handle_request` looks it up on every
#: request (the dispatch costs about 90 ns; a proxy's ``get`` added 15).
_OPERATIONS: Final[dict[str, str]] = {
    name: operation_name(name)
    for name, spec in METHODS.items()
    if spec.kind == "request" and spec.group is not None
}


def _closed_emitter(*_args: Any, **_kwargs: Any) -> Notification:
    raise RuntimeError("this context's callback has returned; use Server.notify")


class _Context:
    """What both contexts share: `notify` (each context holds ``_emit``,
    the Server's emitter for the callback it was made for)."""

    __slots__ = ()

    _emit: _Emit

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
        """Queue a notification: it goes out after the request's response
        (`RequestContext`), or is returned by this `Server.receive` call
        (`NotificationContext`).

        Validated exactly like `Server.notify` (which see), and returned. A
        `ProtocolError` it raises (origin ``local``) that the callback lets
        propagate is the host's failure, not a typed error for the peer
        (see `Handler`).

        Raises:
            TypeError, ValueError: a wrong argument, as `Server.notify`
                (``ValueError`` for a method that is not a notification
                method).
            ProtocolError: ``unsupported`` (its group was not negotiated), a
                params or envelope schema code (``invalid_field``,
                ``unknown_field``, ``unpaired_stream_position``, ...),
                ``message_too_large``.
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


class RequestContext(msgspec.Struct, _Context, frozen=True, kw_only=True):
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


@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationContext(_Context):
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


#: The callbacks whose failures are reported (`CallbackFailure.callback`).
CallbackName = Literal["handle_request", "handle_notification", "handle_response"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallbackFailure:
    """One failed `Handler` callback, as the Server reports it to the host.

    ``callback`` names the callback, ``method`` the request, notification or
    server-initiated request it was called for; ``request_id`` and
    ``correlation_id`` are that message's (``None`` where it has none: a
    notification has no request id). ``error`` is what the callback raised,
    or, for a result that could not be sent, a `ProtocolError` (origin
    ``local``) saying why: ``invalid_result`` (schema, contextual rules, a
    ``durable`` acceptance from a Server not created with ``durable=True``)
    or ``message_too_large``. Nothing of the params or the result is in it
    beyond what ``error`` itself says.
    """

    callback: CallbackName
    method: str
    connection_id: str
    request_id: str | None
    correlation_id: str | None
    error: Exception


class Handler:
    """The host's callbacks for one `Server` (one connection).

    Host state lives in the handler object itself; the library never copies
    or restores it. Callbacks are only called for well-formed input of
    negotiated groups: malformed input never reaches them. The library never
    retries a callback and cannot undo an effect a callback already
    performed; the host owns persistence, authorization, idempotency (by
    ``command_id``), session lifecycle legality and tools. Repeating a
    completed incoming mutation may call `handle_request` again: the host's
    inbox must deduplicate it.

    **Operation form** (the usual one): define one method per request
    method, named after it with ``/`` and ``.`` turned into ``_``, taking the
    method's params Struct and the `RequestContext`::

        class Host(Handler):
            def thread_start(
                self, params: ThreadStartParams, context: RequestContext
            ) -> ThreadStartResult: ...

    ``project/event.receive`` -> ``project_event_receive``,
    ``project/event.status`` -> ``project_event_status``,
    ``project/event.report`` -> ``project_event_report``, ``thread/start``,
    ``thread/read``, ``thread/resume``, ``turn/start``, ``turn/steer``,
    ``turn/interrupt``, ``stream/resume``, ``approval/request`` and
    ``request/cancel`` likewise (``thread_start`` ... ``request_cancel``);
    each is declared below with its types. `methods` is derived from the
    ones the class defines, so it is not spelled out. A host implements
    every request method of each group it advertises and no other:
    `Server(...)` raises `ValueError` naming each missing one and the
    method to define.

    **Dispatch form**: override `handle_request` (one entry point for every
    request) and list `methods` (a class attribute is fine). This is the
    form of handlers written before the operation form existed, and it
    keeps working unchanged.

    `handle_notification` and `handle_response` are optional in both forms.

    Failures: raise `ProtocolError` from an operation for a typed error
    meant for the peer (``not_found``, ``conflict``, ...); it is sent as
    built (code, message, data: keep secrets out of it). The host's
    failures are: anything else raised; a `ProtocolError` raised by
    ``context.notify`` that the operation lets propagate (the host's own
    mistake, such as emitting a notification of a group that was not
    negotiated); a typed error that cannot be sent (data not a ``dict``,
    too large); a result that fails its schema or contextual rules, a
    ``durable`` acceptance from a Server not created with ``durable=True``,
    or a response too large to send. For each the peer gets
    ``internal_error`` with a fixed message, and the Server logs it (logger
    ``samgita_protocol.server``, ERROR, with the traceback), counts it in
    `Server.callback_failures` and offers it to its ``on_callback_error``
    hook. To send a notification failure to the peer deliberately, catch it
    and raise your own `ProtocolError`. An approval given at or after its
    deadline is no failure: it is answered with ``approval_expired``.
    """

    @property
    def methods(self) -> Collection[str]:
        """The request methods this handler implements.

        By default derived from the class: every request method whose
        operation method (``thread_start`` for ``thread/start``) the
        subclass defines. A handler in the dispatch form overrides it.
        `Server(...)` raises `ValueError` unless they equal exactly the
        request methods of the capability groups it advertises.
        """
        return defined_operations(type(self))

    def handle_request(
        self, method: str, params: Any, context: RequestContext
    ) -> msgspec.Struct | Any:
        """Answer one request.

        By default, calls the operation method of ``method``
        (``self.thread_start(params, context)`` for ``thread/start``) and
        returns what it returns; a handler in the dispatch form overrides
        this.

        ``params`` is the method's params Struct (for example
        `ThreadReadParams`). Return the method's result Struct (or a mapping
        that converts to it). Raise `ProtocolError` for a typed error meant
        for the peer; what else fails is the host's failure (see `Handler`).

        Raises:
            ProtocolError: what the operation raises; ``unknown_method``
                when ``method`` is not a request method a handler
                implements; ``unsupported`` when the class does not define
                its operation (the Server never calls it so: see `methods`).
        """
        name = _OPERATIONS.get(method)
        if name is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_METHOD,
                "not a request method a handler implements",
                data={"method": method},
            )
        operation: Callable[[Any, RequestContext], Any] = getattr(self, name)
        return operation(params, context)

    def handle_notification(
        self, method: str, params: Any, context: NotificationContext
    ) -> None:
        """Process one validated notification from the peer (optional).

        Sequenced notifications arrive once each, in cursor order; the
        Server marks the cursor processed only after this returns. Raising
        leaves the position where it was (the same cursor may be delivered
        again) and makes `Server.receive` raise: a `ProtocolError` as
        raised, anything else as ``internal_error``. Anything but a
        deliberate `ProtocolError` (a refused ``context.notify`` let through
        included) is also reported like a failed request callback (see
        `Handler`). The Server itself keeps working either way.

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
        request. An exception raised here is reported as a callback failure
        (see `Handler`) and otherwise dropped: the request is settled either
        way, and the peer will not answer it again.

        The default is "not implemented": `Server.request` raises
        ``no_response_callback``.
        """
        raise ProtocolError(
            ErrorCode.NO_RESPONSE_CALLBACK, "this host does not accept responses"
        )

    # -- operations (the operation form): defined here, so that a type checker
    # checks each override; not implemented until a subclass overrides one.

    def project_event_receive(
        self, params: EventReceiveParams, context: RequestContext
    ) -> EventReceiveResult | Mapping[str, Any]:
        """``project/event.receive`` (``project_events.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def project_event_status(
        self, params: EventStatusParams, context: RequestContext
    ) -> EventStatusResult | Mapping[str, Any]:
        """``project/event.status`` (``project_events.v1``)."""
        raise _not_implemented(context.method)

    def project_event_report(
        self, params: EventReportParams, context: RequestContext
    ) -> EventReportResult | Mapping[str, Any]:
        """``project/event.report`` (``project_events.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def thread_start(
        self, params: ThreadStartParams, context: RequestContext
    ) -> ThreadStartResult | Mapping[str, Any]:
        """``thread/start`` (``sessions.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def thread_read(
        self, params: ThreadReadParams, context: RequestContext
    ) -> ThreadReadResult | Mapping[str, Any]:
        """``thread/read`` (``sessions.v1``)."""
        raise _not_implemented(context.method)

    def thread_resume(
        self, params: ThreadResumeParams, context: RequestContext
    ) -> ThreadResumeResult | Mapping[str, Any]:
        """``thread/resume`` (``sessions.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def turn_start(
        self, params: TurnStartParams, context: RequestContext
    ) -> TurnStartResult | Mapping[str, Any]:
        """``turn/start`` (``sessions.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def turn_steer(
        self, params: TurnSteerParams, context: RequestContext
    ) -> TurnSteerResult | Mapping[str, Any]:
        """``turn/steer`` (``sessions.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def turn_interrupt(
        self, params: TurnInterruptParams, context: RequestContext
    ) -> TurnInterruptResult | Mapping[str, Any]:
        """``turn/interrupt`` (``sessions.v1``, a mutation)."""
        raise _not_implemented(context.method)

    def stream_resume(
        self, params: StreamResumeParams, context: RequestContext
    ) -> StreamResumeResult | Mapping[str, Any]:
        """``stream/resume`` (``streaming.v1``): a page of the host's `Replay`."""
        raise _not_implemented(context.method)

    def approval_request(
        self, params: ApprovalRequestParams, context: RequestContext
    ) -> ApprovalRequestResult | Mapping[str, Any]:
        """``approval/request`` from the peer (``approvals.v1``); never approve by default."""
        raise _not_implemented(context.method)

    def request_cancel(
        self, params: CancelParams, context: RequestContext
    ) -> CancelResult | Mapping[str, Any]:
        """``request/cancel`` from the peer (``cancellation.v1``)."""
        raise _not_implemented(context.method)


def implements_notifications(handler: Handler) -> bool:
    """Whether ``handler`` overrides `Handler.handle_notification`."""
    return type(handler).handle_notification is not Handler.handle_notification


def implements_responses(handler: Handler) -> bool:
    """Whether ``handler`` overrides `Handler.handle_response`."""
    return type(handler).handle_response is not Handler.handle_response


def _not_implemented(method: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED,
        "this host does not implement the method",
        data={"method": method},
    )


def defined_operations(cls: type[Handler]) -> frozenset[str]:
    """The request methods whose operation method ``cls`` defines (overrides
    from `Handler`)."""
    return frozenset(
        method
        for method, name in _OPERATIONS.items()
        if callable(operation := getattr(cls, name, None))
        and operation is not getattr(Handler, name)
    )


def check_methods(handler: Handler, groups: Iterable[str]) -> None:
    """Check that ``handler`` implements exactly the request methods of
    ``groups``: its `Handler.methods`, and with the default
    `Handler.handle_request` only those whose operation its class defines.

    Raises:
        TypeError: ``handler.methods`` is not a collection of strings.
        ValueError: a request method of ``groups`` is missing, or one of
            another group is implemented; the message names each, with the
            Python method of each missing one.
    """
    groups = list(groups)
    expected = frozenset().union(*(request_methods(g) for g in groups))
    methods = handler.methods
    if isinstance(methods, str) or not isinstance(methods, Iterable):
        raise TypeError(
            f"expected handler.methods to be a collection of str, got: {methods!r}"
        )
    implemented = set(methods)
    dispatch = type(handler).handle_request is not Handler.handle_request
    if not dispatch:
        implemented &= defined_operations(type(handler))
    missing = [m for m in _OPERATIONS if m in expected and m not in implemented]
    extra = sorted(implemented - expected, key=str)
    if not missing and not extra:
        return
    cls = type(handler).__name__
    problems = []
    if missing:
        named = ", ".join(
            f"{m} (list it in methods)"
            if dispatch
            else f"{m} (define {cls}.{operation_name(m)}(self, params, context))"
            for m in missing
        )
        problems.append(f"missing {named}")
    if extra:
        named = ", ".join(
            f"{m} (its group {METHODS[m].group} is not advertised)"
            if m in _OPERATIONS
            else f"{m!r} (not a request method a handler implements)"
            for m in extra
        )
        problems.append(f"extra {named}")
    raise ValueError(
        f"handler.methods must equal the request methods of {groups}: "
        + "; ".join(problems)
    )
