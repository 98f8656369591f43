"""The sans-IO client: connection state of the side that opens a connection
and sends ``connection/initialize`` (``docs/protocol.md`` sections 3, 4, 9,
10 and 11).

A :class:`Client` never touches a socket, a thread or an event loop. It
takes messages in (:meth:`Client.receive`) and hands out what to send
(:meth:`Client.request`, :meth:`Client.reply`, :meth:`Client.notify`: each
an `Outgoing`, the message with its validated bytes) and effects
(:mod:`samgita_protocol._effects`); the caller sends each ``data`` and acts
on the effects. Every public method either completes
or raises :class:`ProtocolError` and leaves the client exactly as it was:
each one runs all of its checks first and changes state only after them.

Clocks: request deadlines use caller-supplied ``now`` seconds (any
monotonic clock; default ``time.monotonic()``), the same clock
:meth:`Client.expire` is given. Approval deadlines use the wall clock, an
aware :class:`datetime.datetime` (``now=`` of :meth:`Client.receive` and
:meth:`Client.reply`; default ``datetime.now(timezone.utc)``, read only when
an approval is checked). The two are different types on purpose, so one
cannot be passed for the other.

The module is long because it is the whole client API with its documented
errors; the state it delegates lives in ``_outbox`` (pending, terminal and
uncertain ids), ``_streams`` (stream buffer and checkpoints), ``_windows``
and ``_contract`` (result rules).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Literal

import msgspec

from samgita_protocol._codec import decode, decode_checked, encode
from samgita_protocol._contract import (
    check_initialize,
    validate_result,
    wall_clock,
)
from samgita_protocol._effects import (
    Effect,
    ErrorReceived,
    NotificationReceived,
    RequestReceived,
    ResponseReceived,
    SendMessage,
)
from samgita_protocol._errors import ErrorCode, ProtocolError
from samgita_protocol._given import given_message
from samgita_protocol._methods import (
    CAPABILITY_GROUPS,
    METHODS,
    method_spec,
)
from samgita_protocol._outbox import DUPLICATE, Outbox, Pending, limit_error
from samgita_protocol._params import (
    InitializeParams,
    InitializeResult,
    StreamResumeResult,
)
from samgita_protocol._plans import PLANS, Plan
from samgita_protocol._results import decode_result, params_of
from samgita_protocol._schema import (
    SCHEMA_VERSION,
    Message,
    Notification,
    Request,
    Response,
    response_to,
)
from samgita_protocol._streams import ClientStreams
from samgita_protocol._windows import (
    ContentKey,
    FifoWindow,
    content_digest,
)

from ._options import (
    Limits,
    check_id,
    check_limits,
    envelope_types,
    known_names,
    monotonic,
    wrong_type,
)
from ._outgoing import Outgoing, notification_to_send
from ._state import (
    Activity,
    ConnectionState,
    Event,
    Role,
    Stateful,
    refusal,
)

__all__ = ["Client"]

_UNSET: Final = msgspec.UNSET
_INITIALIZE: Final = "connection/initialize"


_CLIENT: Final = Role.CLIENT
_DISCONNECTED: Final = ConnectionState.DISCONNECTED
_EXCHANGE: Final = Activity.EXCHANGE
_TRAFFIC: Final = Activity.TRAFFIC
_INITIALIZE_ACTIVITY: Final = Activity.INITIALIZE

#: Request methods a client accepts from its peer: those whose direction is
#: server-to-client or either (``approval/request``, ``request/cancel``).
_INCOMING: Final = frozenset(
    name
    for name, spec in METHODS.items()
    if spec.kind == "request" and spec.direction in ("server", "either")
)

_GROUPS: Final = frozenset(CAPABILITY_GROUPS)

Outcome = Literal["applied", "not_applied"]


def _groups(name: str, value: object) -> tuple[str, ...]:
    groups = known_names(name, value, _GROUPS, "capability group")
    if len(set(groups)) != len(groups):
        raise ValueError(f"expected {name} without repeated groups, got: {groups!r}")
    return groups


class Client(Stateful):
    """Connection state of the side that sends ``connection/initialize``.

    Args:
        capabilities: groups to offer (defined groups only).
        required_capabilities: groups the host must support (a subset of
            ``capabilities``).
        versions: schema versions to offer (only ``"1.0"`` is defined).
        id_generator: ``id_generator(generation, n) -> str`` for request ids
            instead of ``f"c{generation}-{n}"``; an id it returns that is in
            use is ``conflict`` (it is not asked again).
        host_id: the authenticated host; every initialize result's
            ``host_id`` must equal it (``host_mismatch``). Required with
            ``checkpoints``. Without it the first host's ``host_id`` is
            learned and enforced only while the client holds stream
            positions or buffered events from that host; otherwise a new
            connection may reach a host with another ``host_id``.
        checkpoints: the ``dict[str, int]`` of :meth:`checkpoints` (stream id
            to processed cursor) to restore after a process restart; they
            belong to ``host_id``, which must be given.
        max_outstanding_requests, max_uncertain_commands,
        max_incoming_requests, max_buffered_notifications, max_completed,
        max_streams, max_stream_hashes, max_message_bytes: the bounds of
            ``docs/protocol.md`` section 9 (defaults 64, 64, 64, 128, 128, 64,
            128, 1 MiB).
        request_timeout: seconds a request waits for its response (default
            30), or ``request_timeout_ms`` in milliseconds (not both).

    Raises:
        TypeError, ValueError: a bad option (the message names it).
    """

    __slots__ = (
        "_capabilities",
        "_connection_id",
        "_configured_host",
        "_host_id",
        "_incoming",
        "_lanes",
        "_limits",
        "_max_bytes",
        "_negotiated",
        "_notifications",
        "_offer",
        "_outbox",
        "_required",
        "_resumes",
        "_results",
        "_scratch",
        "_streams",
        "_version",
        "_versions",
    )

    def __init__(
        self,
        *,
        capabilities: Collection[str],
        required_capabilities: Collection[str] = (),
        versions: Collection[str] = (SCHEMA_VERSION,),
        id_generator: Callable[[int, int], str] | None = None,
        host_id: str | None = None,
        checkpoints: Mapping[str, int] | None = None,
        max_outstanding_requests: int | None = None,
        max_uncertain_commands: int | None = None,
        max_incoming_requests: int | None = None,
        max_buffered_notifications: int | None = None,
        max_completed: int | None = None,
        max_streams: int | None = None,
        max_stream_hashes: int | None = None,
        max_message_bytes: int | None = None,
        request_timeout: float | None = None,
        request_timeout_ms: int | None = None,
    ) -> None:
        super().__init__(_CLIENT)
        offered = _groups("capabilities", capabilities)
        required = _groups("required_capabilities", required_capabilities)
        if not set(required) <= set(offered):
            raise ValueError(
                "expected required_capabilities to be a subset of capabilities, "
                f"got: {list(required)!r}"
            )
        version_list = known_names(
            "versions", versions, (SCHEMA_VERSION,), "schema version"
        )
        if not version_list:
            raise ValueError(
                f"expected versions to list supported schema versions ([{SCHEMA_VERSION!r}]), "
                f"got: {list(version_list)!r}"
            )
        if id_generator is not None and not callable(id_generator):
            raise TypeError(
                f"expected id_generator to be callable, got: {id_generator!r}"
            )
        checked_host = check_id("host_id", host_id)
        limits = check_limits(
            {
                "max_outstanding_requests": max_outstanding_requests,
                "max_uncertain_commands": max_uncertain_commands,
                "max_incoming_requests": max_incoming_requests,
                "max_buffered_notifications": max_buffered_notifications,
                "max_completed": max_completed,
                "max_streams": max_streams,
                "max_stream_hashes": max_stream_hashes,
                "max_message_bytes": max_message_bytes,
                "request_timeout": request_timeout,
                "request_timeout_ms": request_timeout_ms,
            }
        )
        restored = self._restore(checkpoints, checked_host)
        self._streams = ClientStreams(
            max_buffered_notifications=limits.max_buffered_notifications,
            max_streams=limits.max_streams,
            max_stream_hashes=limits.max_stream_hashes,
            checkpoints=restored,
        )
        self._capabilities = offered
        self._required = required
        self._versions = version_list
        self._host_id = checked_host
        self._configured_host = checked_host
        self._limits = limits
        self._max_bytes = limits.max_message_bytes
        # The codec's re-encoding buffer and result types (see decode_checked),
        # bound once.
        self._scratch = bytearray()
        self._results = self._pending_method
        self._outbox = Outbox(
            prefix="c",
            max_outstanding_requests=limits.max_outstanding_requests,
            max_uncertain_commands=limits.max_uncertain_commands,
            max_completed=limits.max_completed,
            request_timeout=limits.request_timeout,
            id_generator=id_generator,
        )
        self._negotiated: frozenset[str] = frozenset()
        # The request methods sendable while ready (of the negotiated groups,
        # not server-only), with their send plans: set when initialization
        # succeeds and emptied on disconnect, so filled only while ready.
        self._lanes: dict[str, Plan] = {}
        # Notification methods of the negotiated groups (empty unless ready).
        self._notifications: frozenset[str] = frozenset()
        self._version: str | None = None
        self._connection_id: str | None = None
        self._offer: InitializeParams | None = None
        self._incoming: dict[str, Request] = {}
        # Correlated stream/resume results waiting for receive_replay, by
        # content digest; the oldest is forgotten first.
        self._resumes: FifoWindow[bytes, bool] = FifoWindow(limits.max_completed)

    @staticmethod
    def _restore(checkpoints: object, host_id: str | None) -> Mapping[str, int] | None:
        if checkpoints is None:
            return None
        if not isinstance(checkpoints, Mapping):
            raise TypeError(
                "expected checkpoints to be the dict[str, int] of "
                f"Client.checkpoints(), got: {checkpoints!r}"
            )
        if host_id is None:
            raise ValueError("expected host_id to be given with checkpoints, got: None")
        return checkpoints

    def __repr__(self) -> str:
        return (
            f"Client(state={self._state.value!r}, generation={self._outbox.generation}, "
            f"pending={len(self._outbox.pending)}, uncertain={len(self._outbox.uncertain)}, "
            f"incoming={len(self._incoming)}, buffered={self._streams.buffered})"
        )

    # -- read-only state -----------------------------------------------------------

    @property
    def capabilities(self) -> frozenset[str]:
        """The negotiated capability groups (empty before initialization)."""
        return self._negotiated

    @property
    def offered_capabilities(self) -> tuple[str, ...]:
        """The groups this client offers."""
        return self._capabilities

    @property
    def version(self) -> str | None:
        """The selected schema version, or ``None`` before initialization."""
        return self._version

    @property
    def connection_id(self) -> str | None:
        """The ``connection_id`` the host assigned, or ``None``."""
        return self._connection_id

    @property
    def host_id(self) -> str | None:
        """The configured or (after initialization) the host's ``host_id``:
        persist it beside :meth:`checkpoints` and pass both back as
        ``Client(host_id=..., checkpoints=...)``."""
        return self._host_id

    @property
    def generation(self) -> int:
        """The connection generation: 1, then one more per :meth:`reconnect`."""
        return self._outbox.generation

    @property
    def limits(self) -> Limits:
        """The bounds this client enforces."""
        return self._limits

    @property
    def pending(self) -> Mapping[str, Request]:
        """Outgoing requests waiting for a response, by id (a read-only copy)."""
        return MappingProxyType({k: e.request for k, e in self._outbox.pending.items()})

    @property
    def incoming(self) -> Mapping[str, Request]:
        """Incoming requests waiting for :meth:`reply`, by id (read-only view)."""
        return MappingProxyType(self._incoming)

    @property
    def uncertain(self) -> Mapping[str, Request]:
        """Mutations whose outcome is unknown, by request id (read-only view).

        Only :meth:`resolve_uncertain` removes an entry."""
        return MappingProxyType(self._outbox.uncertain)

    def uncertain_reason(self, request_id: str) -> str | None:
        """Why ``request_id`` is uncertain (``"disconnect"``, ``"timeout"``,
        ``"invalid_result"`` or ``"internal_error"``: a remote internal error
        answered the mutation), or ``None`` when it is not.

        Raises:
            TypeError: ``request_id`` is not a string.
        """
        if not isinstance(request_id, str):
            raise wrong_type("request_id", request_id, "a string")
        return self._outbox.uncertain_reasons.get(request_id)

    @property
    def buffered(self) -> int:
        """Number of buffered, undelivered stream notifications."""
        return self._streams.buffered

    # -- state machine ---------------------------------------------------------------

    # -- requests --------------------------------------------------------------------

    def _sendable(self, method: str) -> Any:
        spec = METHODS.get(method) if isinstance(method, str) else None
        activity = _INITIALIZE_ACTIVITY if method == _INITIALIZE else _EXCHANGE
        if self._state is _DISCONNECTED:
            self._check(activity, method)  # disconnected before unknown_method
        if spec is None or spec.kind != "request":
            spec = method_spec("method", method, "request")
        self._check(activity, method)
        if activity is _INITIALIZE_ACTIVITY:
            return spec
        if spec.group not in self._negotiated:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the method's capability group was not negotiated",
                data={"method": method, "group": spec.group},
            )
        if spec.direction == "server":
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the method is sent by the server only",
                data={"method": method},
            )
        return spec

    def _initialize_params(self, params: object) -> InitializeParams:
        if isinstance(params, Mapping):
            filled = dict(params)
            filled.setdefault("versions", list(self._versions))
            filled.setdefault("capabilities", list(self._capabilities))
            if self._required:
                filled.setdefault("required_capabilities", list(self._required))
            converted = params_of(_INITIALIZE, filled, "params")
        else:
            converted = params_of(_INITIALIZE, params, "params")
        assert isinstance(converted, InitializeParams)
        offer = converted
        caps = list(offer.capabilities)
        if any(c not in _GROUPS for c in caps):
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "only defined capability groups may be advertised",
                data={"capabilities": caps},
            )
        required = (
            []
            if offer.required_capabilities is _UNSET
            else list(offer.required_capabilities)
        )
        if any(r not in caps for r in required):
            raise ProtocolError(
                ErrorCode.INVALID_PARAMS,
                "required_capabilities must be among the offered capabilities",
                data={"required_capabilities": required},
            )
        return offer

    def request(
        self,
        method: str,
        params: Any,
        *,
        id: str | None = None,  # noqa: A002 - the wire's name
        correlation_id: str | None = None,
        causation_id: str | None = None,
        command_id: str | None = None,
        project_ref: str | None = None,
        task_ref: str | None = None,
        now: float | None = None,
    ) -> Outgoing:
        """Builds a request and records it as pending ("handed out": from now
        on a disconnect or timeout makes a mutation's outcome ambiguous). Send
        the returned `Outgoing`'s ``data`` (the request's validated bytes);
        its ``message`` is the `Request`.

        ``params`` is the method's params Struct or a mapping (converted to
        it). For ``connection/initialize``, a mapping's missing ``versions``,
        ``capabilities`` and ``required_capabilities`` are filled from the
        client's options. ``correlation_id`` defaults to the id;
        ``command_id`` is required on mutations. ``now`` is seconds on the
        clock given to :meth:`expire` (default ``time.monotonic()``); the
        deadline is ``now + request_timeout``.

        Raises:
            TypeError: ``method`` is not a string, ``params`` is neither
                the method's params Struct nor a mapping, an id or ref is
                not a string, or a custom ``id_generator`` returned a
                non-string (the message names it).
            ValueError: ``method`` is not a defined request method.
            ProtocolError: ``disconnected``,
                ``already_initialized``, ``not_initialized``, ``unsupported``
                (group not negotiated, a server-only method, or an offer of an
                undefined group), ``invalid_params`` (an offer requiring what
                it does not offer), ``conflict`` (id in use), ``limit_exceeded``
                (``max_outstanding_requests``, ``max_uncertain_commands``),
                ``message_too_large``, and any validation code of the params
                or envelope (``missing_command_id``, ``invalid_field``, ...);
                all ``local``. Nothing is recorded.
            TypeError, ValueError: a bad ``now``.
        """
        # A finite float (now - now is nan for inf and nan) needs no checks.
        moment = now if type(now) is float and now - now == 0.0 else monotonic(now)
        # The methods sendable now (only while ready), each with its
        # plan (see _lanes); anything else is refused or handled
        # by _sendable.
        try:
            plan = self._lanes.get(method)
        except TypeError:  # unhashable: refused by _sendable
            plan = None
        if plan is not None:
            mutation = plan.mutation
            # A params Struct is validated with the envelope by encode
            # below (converting it first would validate it twice).
            converted: Any = (
                params
                if type(params) is plan.payload_type
                else params_of(method, params, "params")
            )
        else:
            spec = self._sendable(method)
            mutation = spec.mutation
            if method == _INITIALIZE:
                converted = self._initialize_params(params)
            elif type(params) is spec.params:
                converted = params
            else:
                converted = params_of(method, params, "params")
        outbox = self._outbox
        request_id, counter = outbox.next_id(id, mutation)
        request = Request(
            id=request_id,
            correlation_id=request_id if correlation_id is None else correlation_id,
            method=method,
            params=converted,
            command_id=_UNSET if command_id is None else command_id,
            causation_id=_UNSET if causation_id is None else causation_id,
            project_ref=_UNSET if project_ref is None else project_ref,
            task_ref=_UNSET if task_ref is None else task_ref,
        )
        # Validates the envelope (command_id presence, refs, id lengths) and
        # the size: a request that cannot be sent must never become pending.
        max_bytes = self._max_bytes
        try:
            wire = encode(request, max_message_bytes=max_bytes)
        except ProtocolError:
            envelope_types(
                correlation_id=correlation_id,
                causation_id=causation_id,
                command_id=command_id,
                project_ref=project_ref,
                task_ref=task_ref,
            )
            raise
        # -- no failure below this line --
        outbox.put(request, mutation, moment, counter, id is not None)
        if plan is None and method == _INITIALIZE:
            self._offer = converted
            self._move(Event.SEND_INITIALIZE)
        return Outgoing(request, wire)

    def notify(
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
        """Builds a notification to send (ephemeral unless ``stream_id`` and
        ``cursor`` are both given): send the returned `Outgoing`'s ``data``.
        Nothing is recorded.

        Raises:
            TypeError: ``method`` is not a string, ``params`` is neither
                the method's params Struct nor a mapping, or an envelope
                keyword has the wrong type (the message names it).
            ValueError: ``method`` is not a defined notification method.
            ProtocolError (local): ``disconnected``, ``not_initialized``,
                ``unsupported`` (group not negotiated),
                ``unpaired_stream_position``, ``message_too_large`` and any
                validation code of the params or envelope.
        """
        self._check(_EXCHANGE, "a notification")
        return notification_to_send(
            method,
            params,
            self._negotiated,
            self._limits.max_message_bytes,
            only_from=None,
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )

    # -- receiving ---------------------------------------------------------------------

    def receive(
        self,
        data: bytes | bytearray | memoryview | str | Message,
        *,
        now: datetime | None = None,
    ) -> list[Effect]:
        """Receives one message from the peer: JSON bytes or text (decoded with
        ``max_message_bytes``) or an already decoded message (validated).

        ``now`` is the wall clock for approval deadlines (see the module
        docstring). Sequenced notifications are buffered, not returned: take
        them with :meth:`drain`.

        Returns:
            The effects, in order: ``ResponseReceived``, ``ErrorReceived``,
            ``RequestReceived``, ``NotificationReceived`` or ``SendMessage``
            (an error response this client produced for a request it refused;
            send it). A suppressed duplicate response gives none.

        Raises:
            ProtocolError: ``disconnected`` (local); the codec's codes for
                invalid input, ``unknown_response``, ``conflicting_response``,
                ``mismatched_response``, ``not_initialized`` and
                ``unsupported`` (a notification), ``replay_conflict`` and
                ``cursor_gap`` (all ``peer``); ``limit_exceeded`` (local: the
                stream buffer is full). Nothing changed.
            TypeError: ``data`` is none of bytes, bytearray, memoryview, str
                or a message (nothing changed).
            TypeError, ValueError: ``now`` is not an aware datetime.
        """
        clock = None if now is None else wall_clock(now)
        self._check(_TRAFFIC, "receive()")
        wire: bytes | str | None
        max_bytes = self._max_bytes
        if type(data) is not bytes and type(data) is str and len(data) <= max_bytes:
            # A text frame: its UTF-8 bytes take the bytes path (sizes count
            # UTF-8 bytes either way); a lone surrogate stays text, for
            # decode to name it. Text over the bound by code points goes to
            # decode as it is, which refuses it without encoding it.
            try:
                data = data.encode("utf-8")
            except UnicodeEncodeError:
                pass
        if type(data) is bytes and len(data) <= max_bytes:
            # The codec's fast path for bytes within the bound (what decode
            # does after its argument checks); every failure is the peer's.
            wire = data
            message = decode_checked(data, scratch=self._scratch, results=self._results)
        elif isinstance(data, (bytes, bytearray, memoryview, str)):
            source: bytes | bytearray | memoryview | str = data
            if (
                isinstance(data, (bytearray, memoryview))
                and (data.nbytes if isinstance(data, memoryview) else len(data))
                <= max_bytes
            ):
                source = bytes(data)  # an oversize buffer is refused uncopied
            try:
                message = decode(source, max_message_bytes=max_bytes)
            except ProtocolError as exc:
                raise exc if exc.origin == "peer" else exc.with_origin("peer") from None
            wire = source  # type: ignore[assignment]  # bytes or str once decoded
        elif isinstance(data, (Request, Response, Notification)):
            # Validated as if it had arrived as its JSON and decoded from it
            # (params the method's Struct); values no JSON decoder produces
            # are the caller's own bug (local), the rest the peer's.
            wire = None
            message = given_message(data, max_bytes)
        else:
            raise wrong_type(
                "data", data, "bytes, bytearray, memoryview, str or a Message"
            )
        if type(message) is Notification:
            # The common case inline: an ephemeral notification of a
            # negotiated group.
            if message.stream_id is _UNSET and message.method in self._notifications:
                return [NotificationReceived(message)]
            return self._receive_notification(message, wire)
        if type(message) is Response:
            return self._receive_response(message, wire, clock)
        assert type(message) is Request
        return self._receive_request(message)

    def _pending_method(self, request_id: str) -> str | None:
        # The codec's ``results``: the method a result is decoded by.
        entry = self._outbox.pending.get(request_id)
        return None if entry is None else entry.request.method

    def _receive_response(
        self, response: Response, wire: bytes | str | None, now: datetime | None
    ) -> list[Effect]:
        matched = self._outbox.match(response, wire, now)
        if matched is DUPLICATE:
            return []
        assert isinstance(matched, tuple)
        return self._matched(*matched)

    def _matched(self, entry: Pending, outcome: Any, key: ContentKey) -> list[Effect]:
        """Ends a matched request with its outcome (cannot fail)."""
        outbox = self._outbox
        request = entry.request
        method = request.method
        if method == _INITIALIZE:
            return self._initialized(entry, outcome, key)
        if method == "stream/resume" and not isinstance(outcome, ProtocolError):
            digest = content_digest(msgspec.json.encode(outcome))
            outbox.settle(entry, outcome, key)
            self._resumes.put(digest, True)
            return [ResponseReceived(request, outcome)]
        outbox.settle(entry, outcome, key)
        if isinstance(outcome, ProtocolError):
            return [ErrorReceived(request, outcome)]
        return [ResponseReceived(request, outcome)]

    def _initialized(self, entry: Pending, outcome: Any, key: Any) -> list[Effect]:
        request = entry.request
        if not isinstance(outcome, ProtocolError):
            offer = self._offer
            assert offer is not None
            try:
                check_initialize(offer, outcome, host_id=self._expected_host())
            except ProtocolError as exc:
                outcome = exc
        # -- no failure below this line --
        self._outbox.settle(entry, outcome, key)
        if isinstance(outcome, ProtocolError):
            self._move(Event.INITIALIZE_FAILED)
            self._offer = None
            return [ErrorReceived(request, outcome)]
        result: InitializeResult = outcome
        self._move(Event.INITIALIZED)
        self._negotiated = frozenset(result.capabilities)
        self._lanes = {
            name: PLANS[name]
            for name, spec in METHODS.items()
            if spec.kind == "request"
            and spec.group in self._negotiated
            and spec.direction != "server"
        }
        self._notifications = frozenset(
            name
            for group in self._negotiated
            for name in CAPABILITY_GROUPS[group]
            if METHODS[name].kind == "notification"
        )
        self._version = result.version
        self._connection_id = result.connection_id
        self._host_id = result.host_id
        return [ResponseReceived(request, result)]

    def _expected_host(self) -> str | None:
        # The host_id an initialize result must carry: the configured one,
        # else the learned one while positions or buffered events from that
        # host are held; otherwise any host is accepted.
        if self._configured_host is not None:
            return self._configured_host
        if self._streams.buffered or self._streams.checkpoints():
            return self._host_id
        return None

    def _refusal(self, request: Request) -> ProtocolError | None:
        method = request.method
        if _EXCHANGE not in self._accepts:
            return refusal(_CLIENT, self._state, _EXCHANGE, method)
        spec = METHODS[method]
        if method not in _INCOMING or spec.group not in self._negotiated:
            return ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the client does not accept this method on this connection",
                data={"method": method},
            )
        if request.id in self._incoming:
            return ProtocolError(
                ErrorCode.CONFLICT,
                "a request with this id is already pending",
                data={"id": request.id},
            )
        if len(self._incoming) >= self._limits.max_incoming_requests:
            return limit_error(
                "max_incoming_requests", self._limits.max_incoming_requests
            )
        return None

    def _receive_request(self, request: Request) -> list[Effect]:
        refusal = self._refusal(request)
        if refusal is not None:
            response = response_to(request, error=refusal.to_wire())
            return [SendMessage(response, self._encoded(response))]
        self._incoming[request.id] = request
        return [RequestReceived(request)]

    def _receive_notification(
        self, notification: Notification, wire: bytes | str | None
    ) -> list[Effect]:
        if notification.method not in self._notifications:
            self._check(_EXCHANGE, notification.method, "peer")
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the notification's capability group was not negotiated",
                data={"method": notification.method},
                origin="peer",
            )
        if notification.stream_id is _UNSET:
            return [NotificationReceived(notification)]
        self._streams.ingest(notification, wire if isinstance(wire, bytes) else None)
        return []

    # -- answering incoming requests -----------------------------------------------------

    def _pending_incoming(self, request: object) -> Request:
        self._check(_TRAFFIC, "a reply")
        if not isinstance(request, Request):
            raise wrong_type("request", request, "a Request")
        if self._incoming.get(request.id) != request:
            raise ProtocolError(
                ErrorCode.UNKNOWN_REQUEST, "not a pending incoming request"
            )
        return request

    def reply(
        self, request: Request, result: Any, *, now: datetime | None = None
    ) -> Outgoing:
        """Answers the pending incoming ``request`` with ``result`` (the
        method's result Struct or a mapping), checked against the method's
        result schema and binding. The request stays pending until this
        succeeds. The library never approves anything itself: an approval is
        bound to the request's ``approval_id`` and ``action`` and refused at
        or after its deadline (``now``: the wall clock, see the module
        docstring). Send the returned `Outgoing`'s ``data``.

        Raises:
            ProtocolError (local): ``disconnected``, ``unknown_request`` (not
                this exact pending request), ``invalid_result``,
                ``approval_mismatch``, ``approval_expired`` (approving at or
                after the deadline; denying is always allowed),
                ``message_too_large``.
            TypeError: ``request`` is not a `Request`, or ``result`` is
                neither the result Struct nor a mapping.
            TypeError, ValueError: ``now`` is not an aware datetime.
        """
        clock = wall_clock(now)
        pending = self._pending_incoming(request)
        checked = validate_result(pending, result, now=clock, origin="local")
        response = response_to(pending, result=checked)
        wire = self._encoded(response)
        del self._incoming[pending.id]
        return Outgoing(response, wire)

    def reply_error(self, request: Request, error: ProtocolError) -> Outgoing:
        """Answers the pending incoming ``request`` with a typed error (send
        the returned `Outgoing`'s ``data``). The error goes out as given
        (code, message, data): keep secrets out of it.

        Raises:
            ProtocolError (local): ``disconnected``, ``unknown_request``,
                ``message_too_large``.
            TypeError: ``request`` is not a `Request` or ``error`` not a
                :class:`ProtocolError`.
        """
        if not isinstance(error, ProtocolError):
            raise wrong_type("error", error, "a ProtocolError")
        pending = self._pending_incoming(request)
        response = response_to(pending, error=error.to_wire())
        wire = self._encoded(response)
        del self._incoming[pending.id]
        return Outgoing(response, wire)

    def _encoded(self, response: Response) -> bytes:
        return encode(response, max_message_bytes=self._limits.max_message_bytes)

    # -- ending the connection ------------------------------------------------------------

    def disconnect(self) -> list[Effect]:
        """The transport closed. Every pending mutation yields
        ``ErrorReceived`` with ``ambiguous_disconnect`` (``data.command_id``)
        and is held in :attr:`uncertain`; every pending read yields
        ``disconnected``. Pending incoming requests can no longer be answered
        and are dropped. Nothing is re-sent, now or later. Calling it again
        is a no-op. Never raises."""
        outbox = self._outbox
        ended = outbox.abandon(list(outbox.pending), "disconnect")
        self._incoming = {}
        self._notifications = frozenset()
        self._lanes = {}  # filled only while ready
        self._move(Event.DISCONNECT)
        return [ErrorReceived(request, error) for request, error in ended]

    def expire(self, now: float) -> list[Effect]:
        """Ends pending requests whose deadline (``now`` at :meth:`request`
        plus ``request_timeout``) is at or before ``now``: mutations yield
        ``ambiguous_disconnect`` (``data.reason == "timeout"``) and are held
        in :attr:`uncertain`; reads yield ``timeout``. An expired
        ``connection/initialize`` returns the client to ``new``. Core timers
        advance only when this is called.

        Raises:
            TypeError, ValueError: ``now`` is not a finite number.
        """
        if now is None:
            raise TypeError("expected now to be a number of seconds, got: None")
        moment = monotonic(now)
        outbox = self._outbox
        ids = outbox.expired_ids(moment)
        if not ids:
            return []
        initializing = self._state is ConnectionState.INITIALIZING and any(
            outbox.pending[i].request.method == _INITIALIZE for i in ids
        )
        ended = outbox.abandon(ids, "timeout")
        if initializing:
            self._move(Event.INITIALIZE_FAILED)
            self._offer = None
        return [ErrorReceived(request, error) for request, error in ended]

    def reconnect(self) -> None:
        """Starts a new connection after :meth:`disconnect`: initialization is
        required again, the terminal-id window and waiting ``stream/resume``
        results are cleared, generated ids use the next generation; uncertain
        commands and stream positions are kept. Sends nothing.

        Raises:
            ProtocolError: ``not_initialized`` (local) when the client is not
                disconnected.
        """
        self._check(Activity.RECONNECT, "reconnect()")
        self._move(Event.RECONNECT)
        self._outbox.reset()
        self._streams.reconnect()
        self._resumes.clear()
        self._negotiated = frozenset()
        self._notifications = frozenset()
        self._version = None
        self._connection_id = None
        self._offer = None

    def resolve_uncertain(self, request_id: str, outcome: Outcome) -> None:
        """Clears an uncertain command once an authenticated host query or an
        audited reconciliation established its ``outcome`` (``"applied"`` or
        ``"not_applied"``). The only way anything leaves :attr:`uncertain`.

        Raises:
            ProtocolError: ``unknown_uncertain`` (local).
            TypeError: ``request_id`` or ``outcome`` is not a string.
            ValueError: ``outcome`` is neither ``"applied"`` nor ``"not_applied"``.
        """
        if not isinstance(outcome, str):
            raise wrong_type("outcome", outcome, "'applied' or 'not_applied'")
        if outcome not in ("applied", "not_applied"):
            raise ValueError(
                f"expected outcome to be 'applied' or 'not_applied', got: {outcome!r}"
            )
        self._outbox.resolve(request_id)

    # -- streams ------------------------------------------------------------------------

    def receive_replay(self, response_or_result: Response | StreamResumeResult) -> int:
        """Ingests the events of a correlated ``stream/resume`` result (one
        this client returned as ``ResponseReceived``, or the ``Response``
        that carried it) through the same
        buffer, duplicate and gap checks as live notifications. Atomic: on
        error nothing is buffered (drain, acknowledge and call again with the
        same result). Each result is ingested once. Continue with the next
        page from ``result.cursor`` while ``result.has_more``.

        Returns:
            How many events were newly buffered.

        Raises:
            ProtocolError: ``uncorrelated_replay`` (local), ``replay_conflict``
                and ``cursor_gap`` (peer), ``limit_exceeded`` (local).
            TypeError: ``response_or_result`` is neither a `Response` nor a
                `StreamResumeResult`.
        """
        result: object = response_or_result
        if isinstance(result, Response):
            try:
                result = (
                    None
                    if result.result is _UNSET
                    else decode_result("stream/resume", result.result)
                )
            except (ProtocolError, TypeError):
                result = None  # not a page at all
        elif not isinstance(result, StreamResumeResult):
            raise wrong_type(
                "response_or_result", result, "a Response or a StreamResumeResult"
            )
        if not isinstance(result, StreamResumeResult):
            raise ProtocolError(
                ErrorCode.UNCORRELATED_REPLAY,
                "not a stream/resume result on this connection",
            )
        digest = content_digest(msgspec.json.encode(result))
        if digest not in self._resumes:
            raise ProtocolError(
                ErrorCode.UNCORRELATED_REPLAY,
                "not the result of a stream/resume response on this connection",
            )
        count = self._streams.ingest_page(result.stream_id, result.events)
        self._resumes.delete(digest)
        return count

    def drain(self, max: int | None = None) -> list[Notification]:  # noqa: A002
        """Delivers up to ``max`` (all when ``None``) buffered stream
        notifications in arrival order. Delivery does not advance a
        checkpoint: call :meth:`ack_cursor` after processing.

        Raises:
            TypeError, ValueError: ``max`` is not a non-negative int.
        """
        return self._streams.drain(max)

    def ack_cursor(self, stream_id: str, cursor: int) -> None:
        """Marks ``stream_id`` processed through ``cursor`` (at most the last
        delivered cursor). Acknowledging an already processed cursor is a no-op.

        Raises:
            ProtocolError: ``invalid_cursor`` (local): an unknown stream, or a
                cursor that was not delivered.
            TypeError: ``stream_id`` is not a string or ``cursor`` not an int.
        """
        self._streams.ack(stream_id, cursor)

    def forget_stream(self, stream_id: str) -> None:
        """Releases a finished stream: its position and retained content are
        dropped, so it no longer counts against ``max_streams``. A later
        notification of the same ``stream_id`` starts again from cursor 1.
        Forgetting an unknown stream is a no-op.

        Raises:
            ProtocolError: ``unacknowledged_events`` (local) while any of its
                events is buffered, or delivered but not acknowledged.
            TypeError: ``stream_id`` is not a string.
        """
        self._streams.forget(stream_id)

    def checkpoints(self) -> dict[str, int]:
        """The processed position of every tracked stream, to persist:
        ``{stream_id: cursor}``. They belong to :attr:`host_id`: persist it
        beside them and restore with ``Client(host_id=..., checkpoints=...)``;
        never restore another host's map."""
        return self._streams.checkpoints()
