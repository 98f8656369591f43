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

The client API with its documented errors lives here; the state it
delegates lives in ``_handshake`` (the offer and what the host's result
negotiated), ``_outbox`` (its requests: pending, terminal and uncertain
ids), ``_inbox`` (the host's requests waiting for a reply), ``_streams``
(stream buffer and checkpoints) and ``_resumes`` (``stream/resume``
results waiting for :meth:`Client.receive_replay`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from ._content import ContentKey
from ._contract import wall_clock
from ._effects import Effect, ErrorReceived, NotificationReceived, ResponseReceived
from ._errors import ErrorCode, ProtocolError
from ._handshake import INITIALIZE, Handshake, check_offer, restored
from ._inbox import Inbox
from ._incoming import received, wire_of
from ._options import Limits, check_id, check_limits, monotonic, wrong_type
from ._outbox import DUPLICATE, Outbox, Pending, held_reason
from ._outgoing import Outgoing, notification_to_send, request_to_send
from ._params import StreamResumeResult
from ._records import RESTART, Records, id_prefix
from ._resumes import Resumes, correlated_page, resume_digest
from ._schema import SCHEMA_VERSION, Message, Notification, Request, Response
from ._state import Activity, ConnectionState, Event, Role, Stateful
from ._streams import ClientStreams

if TYPE_CHECKING:
    from .stores import CheckpointStore, CommandJournal

__all__ = ["Client"]

_UNSET: Final = msgspec.UNSET

_EXCHANGE: Final = Activity.EXCHANGE
_TRAFFIC: Final = Activity.TRAFFIC

Outcome = Literal["applied", "not_applied"]


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
        journal: a ``samgita_protocol.stores.CommandJournal`` (needs
            ``host_id``). Every mutation is recorded in it before
            :meth:`request` hands it out and settled when its response
            arrives or :meth:`resolve_uncertain` clears it; a new Client
            given the same journal holds every unsettled entry in
            :attr:`uncertain` (reason ``"restart"``) and never sends it.
            Default request ids then carry a random part
            (``"c1a2b3c4d.1-7"``) so they never repeat across restarts.
        checkpoint_store: a ``samgita_protocol.stores.CheckpointStore``
            (needs ``host_id``; not with ``checkpoints``): the checkpoints
            are loaded from it, and :meth:`ack_cursor` / :meth:`ack` advance
            it (:meth:`forget_stream` forgets) before the client's own.
            A store that raises leaves the client as it was; the error
            propagates.
        max_outstanding_requests: requests waiting for a response (64).
        max_uncertain_commands: mutations held in ``uncertain`` (64).
        max_incoming_requests: the host's requests waiting for ``reply`` (64).
        max_buffered_notifications: undelivered stream notifications (128).
        max_completed: the window of completed request ids (128).
        max_streams: streams with a position (64).
        max_stream_hashes: received but unprocessed events whose content a
            stream retains (128).
        max_message_bytes: every message in and out (1 MiB). These are the
            bounds of ``docs/protocol.md`` section 9.
        request_timeout: seconds a request waits for its response (default
            30), or ``request_timeout_ms`` in milliseconds (not both).

    Raises:
        TypeError, ValueError: a bad option (the message names it).
    """

    __slots__ = (
        "_handshake",
        "_inbox",
        "_limits",
        "_max_bytes",
        "_outbox",
        "_records",
        "_results",
        "_resumes",
        "_scratch",
        "_streams",
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
        journal: CommandJournal | None = None,
        checkpoint_store: CheckpointStore | None = None,
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
        super().__init__(Role.CLIENT)
        offer = check_offer(capabilities, required_capabilities, versions)
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
        records = None
        if journal is not None or checkpoint_store is not None:
            records = Records(checked_host, journal, checkpoint_store, checkpoints)
            loaded = records.checkpoints()
            if loaded is not None:
                checkpoints = loaded
        self._records = records
        self._streams = ClientStreams(
            max_buffered_notifications=limits.max_buffered_notifications,
            max_streams=limits.max_streams,
            max_stream_hashes=limits.max_stream_hashes,
            checkpoints=restored(checkpoints, checked_host),
            records=records,
        )
        self._handshake = Handshake(offer, checked_host)
        self._limits = limits
        self._max_bytes = limits.max_message_bytes
        self._outbox = Outbox(
            prefix=id_prefix(journal),
            max_outstanding_requests=limits.max_outstanding_requests,
            max_uncertain_commands=limits.max_uncertain_commands,
            max_completed=limits.max_completed,
            request_timeout=limits.request_timeout,
            id_generator=id_generator,
        )
        if records is not None:
            self._outbox.restore(
                records.uncertain(
                    limits.max_uncertain_commands, limits.max_message_bytes
                ),
                RESTART,
            )
        # The codec's re-encoding buffer and result types (see decode_wire),
        # bound once.
        self._scratch = bytearray()
        self._results = self._outbox.pending_method
        self._inbox = Inbox(limits.max_incoming_requests, limits.max_message_bytes)
        self._resumes = Resumes(limits.max_completed)

    def __repr__(self) -> str:
        return (
            f"Client(state={self._state.value!r}, generation={self._outbox.generation}, "
            f"pending={len(self._outbox.pending)}, uncertain={len(self._outbox.uncertain)}, "
            f"incoming={len(self._inbox.requests)}, buffered={self._streams.buffered})"
        )

    # -- read-only state -----------------------------------------------------------

    @property
    def capabilities(self) -> frozenset[str]:
        """The negotiated capability groups (empty before initialization)."""
        return self._handshake.negotiated

    @property
    def offered_capabilities(self) -> tuple[str, ...]:
        """The groups this client offers."""
        return self._handshake.offered.capabilities

    @property
    def version(self) -> str | None:
        """The selected schema version, or ``None`` before initialization."""
        return self._handshake.version

    @property
    def connection_id(self) -> str | None:
        """The ``connection_id`` the host assigned, or ``None``."""
        return self._handshake.connection_id

    @property
    def host_id(self) -> str | None:
        """The configured or (after initialization) the host's ``host_id``:
        persist it beside :meth:`checkpoints` and pass both back as
        ``Client(host_id=..., checkpoints=...)``."""
        return self._handshake.host_id

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
        return MappingProxyType(self._inbox.requests)

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
        return self._outbox.uncertain_reason(request_id)

    @property
    def buffered(self) -> int:
        """Number of buffered, undelivered stream notifications."""
        return self._streams.buffered

    # -- requests --------------------------------------------------------------------

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
            Exception: what the ``journal``'s ``record`` raises (its
                ``StoreConflict`` for an explicit ``id`` it holds with other
                content, a ``limit_exceeded``, an I/O error): nothing is
                handed out.
        """
        # A finite float (now - now is nan for inf and nan) needs no checks.
        moment = now if type(now) is float and now - now == 0.0 else monotonic(now)
        handshake = self._handshake
        converted, mutation, initialize = handshake.sendable(
            method, params, self._state
        )
        outbox = self._outbox
        request_id, counter = outbox.next_id(id, mutation)
        # Proves the envelope (command_id presence, refs, id lengths) and the
        # size: a request that cannot be sent must never become pending.
        sent = request_to_send(
            request_id,
            method,
            converted,
            self._max_bytes,
            correlation_id=correlation_id,
            causation_id=causation_id,
            command_id=command_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )
        request: Any = sent.message  # the Request request_to_send built
        if mutation and self._records is not None:
            self._records.record(request, sent.data)
        # -- no failure below this line --
        outbox.put(request, mutation, moment, counter, id is not None)
        if initialize:
            handshake.offer = converted
            self._move(Event.SEND_INITIALIZE)
        return sent

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
            self._handshake.negotiated,
            self._max_bytes,
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
            Exception: what the ``journal``'s ``settle`` raises for the
                response of a mutation: nothing changed (the request stays
                pending, and a disconnect makes it uncertain).
        """
        clock = None if now is None else wall_clock(now)
        self._check(_TRAFFIC, "receive()")
        max_bytes = self._max_bytes
        # As a Server reads it, with the result types of the pending requests.
        wire = data if type(data) is bytes else wire_of(data, max_bytes)
        message = received(wire, data, max_bytes, self._scratch, self._results)[0]
        if type(message) is Notification:
            if message.method not in self._handshake.notifications:
                self._check(_EXCHANGE, message.method, "peer")
                raise ProtocolError(
                    ErrorCode.UNSUPPORTED,
                    "the notification's capability group was not negotiated",
                    data={"method": message.method},
                    origin="peer",
                )
            if message.stream_id is _UNSET:
                return [NotificationReceived(message)]
            self._streams.ingest(message, wire if isinstance(wire, bytes) else None)
            return []
        if type(message) is Response:
            matched = self._outbox.match(message, wire, clock)
            if matched is DUPLICATE:
                return []
            assert isinstance(matched, tuple)
            return self._matched(*matched)
        assert type(message) is Request
        return self._inbox.receive(message, self._state, self._handshake.negotiated)

    def _matched(self, entry: Pending, outcome: Any, key: ContentKey) -> list[Effect]:
        """Ends a matched request with its outcome (cannot fail but in the
        journal, before anything changed)."""
        request = entry.request
        if (
            entry.mutation
            and self._records is not None
            and held_reason(outcome) is None
        ):
            self._records.settle(request.id, "answered")
        method = request.method
        if method == INITIALIZE:
            return self._initialized(entry, outcome, key)
        if method == "stream/resume" and not isinstance(outcome, ProtocolError):
            digest = resume_digest(outcome)
            self._outbox.settle(entry, outcome, key)
            self._resumes.put(digest, True)
            return [ResponseReceived(request, outcome)]
        self._outbox.settle(entry, outcome, key)
        if isinstance(outcome, ProtocolError):
            return [ErrorReceived(request, outcome)]
        return [ResponseReceived(request, outcome)]

    def _initialized(
        self, entry: Pending, outcome: Any, key: ContentKey
    ) -> list[Effect]:
        outcome = self._handshake.checked(outcome, self._streams)
        # -- no failure below this line --
        self._outbox.settle(entry, outcome, key)
        failed = isinstance(outcome, ProtocolError)
        self._move(Event.INITIALIZE_FAILED if failed else Event.INITIALIZED)
        self._handshake.settle(outcome)
        if failed:
            return [ErrorReceived(entry.request, outcome)]
        return [ResponseReceived(entry.request, outcome)]

    # -- answering incoming requests -----------------------------------------------------

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
        self._check(_TRAFFIC, "a reply")
        return self._inbox.reply(request, result, clock)

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
        self._check(_TRAFFIC, "a reply")
        return self._inbox.reply_error(request, error)

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
        self._inbox.requests = {}
        self._handshake.close()
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
        ended = outbox.abandon(ids, "timeout")
        if self._state is ConnectionState.INITIALIZING and any(
            request.method == INITIALIZE for request, _ in ended
        ):
            self._move(Event.INITIALIZE_FAILED)
            self._handshake.settle(None)
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
        self._handshake.reset()

    def resolve_uncertain(self, request_id: str, outcome: Outcome) -> None:
        """Clears an uncertain command once an authenticated host query or an
        audited reconciliation established its ``outcome`` (``"applied"`` or
        ``"not_applied"``). The only way anything leaves :attr:`uncertain`.

        Raises:
            ProtocolError: ``unknown_uncertain`` (local).
            TypeError: ``request_id`` or ``outcome`` is not a string.
            ValueError: ``outcome`` is neither ``"applied"`` nor ``"not_applied"``.
        """
        outbox = self._outbox
        if self._records is not None:
            outbox.check_resolve(request_id, outcome)
            self._records.settle(request_id, outcome)
        outbox.resolve(request_id, outcome)

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
        result, digest = correlated_page(self._resumes, response_or_result)
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

    def ack(self, notification: Notification) -> None:
        """`ack_cursor` of a sequenced notification :meth:`drain` delivered
        (its ``stream_id`` and ``cursor``), after processing it.

        Raises:
            TypeError: ``notification`` is not a `Notification`.
            ValueError: it is ephemeral (no ``stream_id``/``cursor``).
            ProtocolError: ``invalid_cursor`` (local), as for `ack_cursor`.
        """
        self._streams.ack_notification(notification)

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
