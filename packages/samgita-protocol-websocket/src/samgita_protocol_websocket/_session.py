"""The client: ``connect(url, *, token, capabilities, ...)`` gives a :class:`Session` over a core ``Client``.

One reader task per socket feeds every text message to ``Client.receive`` and
acts on the effects: a response or error settles the waiting
:meth:`Session.request` (a page of :meth:`Session.resume` is ingested
first, before the message behind it); an incoming request (an approval)
goes to the ``on_request`` callback, which is answered only by the caller through
:meth:`Session.reply`; notifications (ephemeral ones, and sequenced ones
drained from the core's stream buffer) go to the bounded queue behind
:meth:`Session.notifications`.  A ticker drives ``Client.expire(now)``.

When the socket ends, ``Client.disconnect()`` settles every waiting request
(mutations become ``ambiguous_disconnect`` and stay in :attr:`Session.uncertain`,
reads get ``disconnected``).  Nothing is re-sent: :meth:`Session.reconnect`
opens a new socket (authenticating again), calls ``Client.reconnect()`` and
initializes again; the caller reconciles uncertain commands and resumes
streams from their checkpoints (:meth:`Session.resume`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import ssl as ssl_module
import time
from collections.abc import AsyncIterator, Awaitable, Collection, Mapping
from typing import Final, Literal, Unpack, cast

import samgita_protocol as core
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from ._checks import (
    check_bool,
    check_callable,
    check_int,
    check_optional_seconds,
    check_seconds,
    check_ssl,
    check_strings,
    check_write_buffer,
    pick_alias,
)
from ._client_policy import NoRedirectConnect, check_url
from ._codes import CloseCode, stream_integrity_reason
from ._defaults import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_INBOUND_FRAMES,
    DEFAULT_MAX_SIZE,
    DEFAULT_OPEN_TIMEOUT,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    DEFAULT_TICK,
    DEFAULT_WRITE_LIMIT,
)
from ._errors import connect_errors
from ._redact import RedactingLogger, Secret, as_secret
from ._textconn import TextClientConnection, bounded
from ._types import (
    Fields,
    NotifyEnvelope,
    OnRequest,
    Options,
    RequestEnvelope,
    Result,
)

__all__ = ["Session", "connect"]

DEFAULT_MAX_NOTIFICATIONS: Final = 1024
_INITIALIZE: Final = "connection/initialize"
#: The end-of-session marker in the notification queue.
_CLOSED: Final = None


async def _discard(ws: ClientConnection) -> None:
    with contextlib.suppress(Exception):
        async for _ in ws:
            pass


class Session:
    """A connected, initialized client session (given by ``async with connect(...)``).

    Not thread-safe: use it from the event loop that opened it.
    """

    initialize_result: core.InitializeResult
    """The ``connection/initialize`` result of the current connection."""

    def __init__(self, owner: connect) -> None:
        self._owner = owner
        self._client = owner._make_client()
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._waiting: dict[str, asyncio.Future[Result]] = {}
        # Ids of resume()'s pending stream/resume requests: the reader
        # ingests their page (_page); each leaves when it is settled.
        self._pages: set[str] = set()
        # Unbounded as a container, bounded by _put (max_notifications), so the
        # end-of-session marker always fits.
        self._notifications: asyncio.Queue[core.Notification | None] = asyncio.Queue()
        self._room = asyncio.Event()
        # Set whenever the caller takes or acknowledges a notification.
        self._progress = asyncio.Event()
        self._callbacks: set[asyncio.Task[None]] = set()
        self._lost = asyncio.Event()
        self._closing = False
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.connections = 0

    def __repr__(self) -> str:
        return f"Session(url={self._owner._url!r}, connected={self.connected}, client={self._client!r})"

    # -- state ------------------------------------------------------------------------

    @property
    def client(self) -> core.Client:
        """The core ``Client`` (its state: pending, uncertain, checkpoints)."""
        return self._client

    @property
    def connected(self) -> bool:
        """Whether a socket is open and the reader runs."""
        return self._ws is not None and not self._lost.is_set()

    @property
    def uncertain(self) -> Mapping[str, core.Request]:
        """Mutations whose outcome is unknown (``Client.uncertain``)."""
        return self._client.uncertain

    def resolve_uncertain(
        self, request_id: str, outcome: Literal["applied", "not_applied"]
    ) -> None:
        """Clear an uncertain command after reconciling it (``Client.resolve_uncertain``).

        Raises ``ProtocolError`` ``unknown_uncertain``, ``ValueError`` for a bad outcome.
        """
        self._client.resolve_uncertain(request_id, outcome)

    def checkpoints(self) -> dict[str, int]:
        """Processed stream positions to persist (``Client.checkpoints()``,
        ``{stream_id: cursor}``); persist ``session.client.host_id`` beside
        them and pass both back as ``host_id=`` and ``checkpoints=``."""
        return self._client.checkpoints()

    async def wait_disconnected(self) -> None:
        """Wait until the current socket has ended."""
        await self._lost.wait()

    # -- opening ---------------------------------------------------------------------------

    async def _open(self) -> None:
        owner = self._owner
        with connect_errors(owner._url):
            ws = await NoRedirectConnect(
                owner._url,
                additional_headers=[
                    ("Authorization", f"Bearer {owner._token.reveal()}")
                ],
                user_agent_header=None,
                origin=owner._origin,  # type: ignore[arg-type]
                compression=None,
                proxy=None,
                open_timeout=owner._open_timeout,
                ping_interval=owner._ping_interval,
                ping_timeout=owner._ping_timeout,
                close_timeout=owner._close_timeout,
                max_size=owner._max_message_bytes,
                max_queue=owner._max_inbound_frames,
                write_limit=owner._write_limit,
                logger=owner._logger,
                ssl=owner._ssl,
                create_connection=bounded(
                    TextClientConnection, owner._max_write_buffer
                ),
            )
        self._ws = ws
        self._lost = asyncio.Event()
        self.close_code = self.close_reason = None
        self.connections += 1
        self._reader = asyncio.create_task(self._read(ws))
        self._ticker = asyncio.create_task(self._tick())
        try:
            self.initialize_result = await self.request(_INITIALIZE, {})
        except BaseException:
            await self._drop()
            raise

    # -- requests and replies ----------------------------------------------------------

    async def request(
        self, method: str, params: Fields, **envelope: Unpack[RequestEnvelope]
    ) -> Result:
        """Send a request and wait for its outcome; returns the result Struct.

        ``envelope`` takes the core ``Client.request`` keywords (``command_id``
        for mutations, ``correlation_id``, ``project_ref``, ...).  Raises
        ``ProtocolError``: the peer's typed error (origin ``remote``), a
        refusal of the core (origin ``local``), ``ambiguous_disconnect`` when
        the socket ends or the wait times out on a mutation (it stays in
        :attr:`uncertain`), ``disconnected`` / ``timeout`` for reads.  That
        holds when the send itself fails too (the peer is not reading, the
        socket closed): the connection is ended and the error the core's
        disconnect gives this request is raised, never a bare
        ``ConnectionError``.
        """
        outgoing = self._client.request(
            method, params, now=time.monotonic(), **envelope
        )
        return await self._call(outgoing)

    async def _call(self, outgoing: core.Outgoing) -> Result:
        # outgoing: the Client's Request with its validated bytes.
        request = cast(core.Request, outgoing.message)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = future
        lost = self._lost
        try:
            try:
                await self._send(outgoing.data)
            except ConnectionError:
                # The message may have reached the peer in part or whole: the
                # outcome is the core's to say.  End the socket; the reader's
                # disconnect settles the future (ambiguous_disconnect for a
                # mutation, disconnected for a read).
                if not future.done():
                    self._cut()
                    if self._reader is None or self._reader.done():
                        if self._client.state.value != "disconnected":
                            self._settle(self._client.disconnect())
                    else:
                        await lost.wait()
                if not future.done():
                    raise
            return await future
        finally:
            self._waiting.pop(request.id, None)

    def _cut(self) -> None:
        ws = self._ws
        if ws is not None and ws.transport is not None:
            ws.transport.abort()

    async def notify(
        self, method: str, params: Fields, **envelope: Unpack[NotifyEnvelope]
    ) -> core.Notification:
        """Send a notification (``Client.notify``); returns it. Raises ``ProtocolError``, ``ConnectionError``."""
        outgoing = self._client.notify(method, params, **envelope)
        await self._send(outgoing.data)
        return cast(core.Notification, outgoing.message)

    async def reply(self, request: core.Request, result: Fields) -> None:
        """Answer an incoming request (an approval) with ``result``. Raises ``ProtocolError``, ``ConnectionError``."""
        await self._send(self._client.reply(request, result).data)

    async def reply_error(
        self, request: core.Request, error: core.ProtocolError
    ) -> None:
        """Answer an incoming request with a typed error. Raises ``ProtocolError``, ``ConnectionError``."""
        await self._send(self._client.reply_error(request, error).data)

    async def _send(self, data: bytes) -> None:
        # data: wire bytes the Client validated when it built the message
        # (an Outgoing's or a SendMessage's data), sent as they are.
        ws = self._ws
        if ws is None or self._lost.is_set():
            raise ConnectionError("not connected")
        try:
            async with asyncio.timeout(self._owner._send_timeout):
                await ws.send(data, text=True)
        except TimeoutError:
            await self._abort_not_reading(ws)
            raise ConnectionError("peer is not reading (send timed out)") from None
        except ConnectionClosed:
            raise ConnectionError("connection closed") from None

    async def _abort_not_reading(self, ws: ClientConnection) -> None:
        self._owner._logger.warning("closing connection: peer is not reading")
        # The close frame is best effort: a peer that does not read will not
        # read it either, so wait no longer than close_timeout, then drop TCP.
        try:
            async with asyncio.timeout(self._owner._close_timeout):
                await ws.close(CloseCode.POLICY_VIOLATION, "peer is not reading")
        except Exception:
            if ws.transport is not None:
                ws.transport.abort()

    # -- notifications -------------------------------------------------------------------

    async def notifications(self) -> AsyncIterator[core.Notification]:
        """Notifications in arrival order, across reconnects, until the session closes.

        Sequenced ones (``stream_id`` + ``cursor``) come from the core's stream
        buffer; call :meth:`ack` after processing each of them, so the
        checkpoint advances (ephemeral ones have no cursor and are not acked).  The queue holds at most ``max_notifications``; while it is
        full the reader stops reading the socket (backpressure to the Agent).
        """
        while True:
            item = await self._notifications.get()
            if item is _CLOSED:
                self._notifications.put_nowait(_CLOSED)
                return
            self._taken()
            yield item

    def take_notifications(self) -> list[core.Notification]:
        """The notifications queued right now, without waiting (for callers that poll)."""
        taken: list[core.Notification] = []
        while not self._notifications.empty():
            item = self._notifications.get_nowait()
            if item is _CLOSED:
                self._notifications.put_nowait(_CLOSED)
                break
            self._taken()
            taken.append(item)
        return taken

    async def next_notification(
        self, timeout: float | None = None
    ) -> core.Notification:
        """Wait for the next notification (``TimeoutError`` after ``timeout`` seconds; ``EOFError`` once closed).

        Raises ``TypeError`` when ``timeout`` is neither ``None`` nor a number
        of seconds.
        """
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float))
        ):
            raise TypeError(
                f"timeout must be a number of seconds or None, not {type(timeout).__name__}"
            )
        async with asyncio.timeout(timeout):
            item = await self._notifications.get()
        if item is _CLOSED:
            self._notifications.put_nowait(_CLOSED)
            raise EOFError("session closed")
        self._taken()
        return item

    def ack(self, notification: core.Notification) -> None:
        """Mark a sequenced notification processed (``Client.ack_cursor``): the checkpoint advances.

        Only sequenced notifications (with ``stream_id`` and ``cursor``) are
        acknowledged; test ``notification.cursor is not samgita_protocol.UNSET``
        before calling it.  Raises ``ValueError`` naming ``notification`` for
        an ephemeral one (nothing to acknowledge: it is never replayed),
        ``ProtocolError`` ``invalid_cursor`` for a cursor not delivered,
        ``TypeError`` when ``notification`` is not a core ``Notification``.
        """
        if not isinstance(notification, core.Notification):
            raise TypeError(
                "notification must be a samgita_protocol.Notification, "
                f"not {type(notification).__name__}"
            )
        stream_id = notification.stream_id
        cursor = notification.cursor
        if not isinstance(stream_id, str) or not isinstance(cursor, int):
            raise ValueError(
                f"notification must be a sequenced notification (stream_id and "
                f"cursor); {notification.method} is ephemeral and has nothing "
                "to acknowledge"
            )
        self._client.ack_cursor(stream_id, cursor)
        self._progress.set()

    async def resume(self, stream_id: str, *, cursor: int | None = None) -> int:
        """Resume ``stream_id`` from its checkpoint (or ``cursor``) page by page; returns the events the pages held.

        Each page is a ``stream/resume`` request whose result the reader
        puts through ``Client.receive_replay`` (duplicate and gap checks)
        into the core's bounded stream buffer as it arrives, before the
        message behind it, so live events the Agent sends right after the
        page continue it; the events arrive on :meth:`notifications`.
        Only what fits in the notification queue is taken out of the core;
        the rest stays in the core's buffer and moves to the queue as the
        caller takes notifications, so ``resume`` returns without waiting for
        the caller to consume a page that fits the core's buffer.  When the
        next page does not fit (``max_buffered_notifications``), the reader
        stops reading until the caller takes notifications, and ``resume``
        waits with it.  Cancelling it loses nothing: a page that arrives
        is ingested all the same, what the core still buffers stays there,
        and a later ``resume`` from the checkpoint continues.  Raises
        ``ProtocolError`` (``replay_gap`` when the Agent no longer retains the checkpoint; the
        stream-integrity codes ``cursor_gap``, ``replay_conflict`` and
        ``foreign_stream`` after closing the connection with 1002);
        ``TypeError`` when ``stream_id`` is not a ``str`` or ``cursor`` not an
        ``int`` or ``None``.
        """
        if not isinstance(stream_id, str):
            raise TypeError(f"stream_id must be a str, not {type(stream_id).__name__}")
        if cursor is None:
            cursor = self._checkpoint(stream_id)
        elif isinstance(cursor, bool) or not isinstance(cursor, int):
            raise TypeError(
                f"cursor must be an int or None, not {type(cursor).__name__}"
            )
        total = 0
        while True:
            outgoing = self._client.request(
                "stream/resume",
                {"stream_id": stream_id, "cursor": cursor},
                now=time.monotonic(),
            )
            self._pages.add(cast(core.Request, outgoing.message).id)
            # Settled by the reader once it ingested the page (see _page).
            result = await self._call(outgoing)
            total += len(result.events)
            if not result.has_more:
                return total
            cursor = result.cursor

    def _checkpoint(self, stream_id: str) -> int:
        cursor = self._client.checkpoints().get(stream_id, 0)
        return cursor if isinstance(cursor, int) else 0

    async def _page(
        self,
        ws: ClientConnection,
        request: core.Request,
        result: core.StreamResumeResult,
    ) -> bool:
        # The reader ingests a page of resume() before it takes the message
        # behind it: an event the Agent sends right after the page must find
        # the page ingested (otherwise it is a cursor_gap).  Then resume()
        # gets the page, or the error ingesting it raised.  False when the
        # connection was closed (1002): the reader reads no further.
        # A page whose resume() was cancelled is ingested all the same.
        try:
            await self._ingest_page(ws, result)
        except core.ProtocolError as exc:
            if not self._answer(request, exc):
                self._owner._logger.debug("resume page not ingested: %s", exc.code)
            return stream_integrity_reason(exc.code) is None
        self._answer(request, result)
        return True

    async def _ingest_page(
        self, ws: ClientConnection, result: core.StreamResumeResult
    ) -> None:
        while True:
            self._progress.clear()
            try:
                self._client.receive_replay(result)
                return
            except core.ProtocolError as exc:
                if self._must_wait(exc, result):
                    # The page does not fit the core's bounds yet (nothing
                    # was buffered: receive_replay is atomic): wait until
                    # the caller takes or acknowledges notifications, then
                    # offer the same page again.  The reader waits here,
                    # as it does for queue room: backpressure to the Agent.
                    await self._progress.wait()
                    self._move()
                    continue
                integrity = stream_integrity_reason(exc.code)
                if integrity is not None:
                    self._owner._logger.warning("closing connection: %s", exc)
                    with contextlib.suppress(Exception):
                        await ws.close(CloseCode.PROTOCOL_ERROR, integrity)
                raise

    def _must_wait(
        self, exc: core.ProtocolError, result: core.StreamResumeResult
    ) -> bool:
        if exc.code != core.ErrorCode.LIMIT_EXCEEDED:
            return False
        data = exc.data or {}
        limit = data.get("limit")
        if limit == "max_buffered_notifications":
            # Room comes only from handing buffered events to the caller.
            return bool(self._client.buffered)
        if limit == "max_stream_hashes":
            # Room comes from the caller acknowledging what it received; a
            # page larger than the bound never fits.
            bound = data.get("max")
            return not isinstance(bound, int) or len(result.events) <= bound
        return False

    def _move(self) -> None:
        # Hand the caller as many buffered stream events as the queue has
        # room for; the rest stay in the core's bounded buffer.  Never take
        # out of the core what cannot be queued at once.
        if self._closing or not self._client.buffered:
            return
        room = self._owner._max_notifications - self._notifications.qsize()
        if room > 0:
            for notification in self._client.drain(max=room):
                self._notifications.put_nowait(notification)

    def _taken(self) -> None:
        # The caller took one notification: refill from the core, wake waiters.
        self._move()
        self._room.set()
        self._progress.set()

    async def _wait_room(self) -> None:
        while self._notifications.qsize() >= self._owner._max_notifications:
            self._room.clear()
            await self._room.wait()

    async def _put(self, notification: core.Notification) -> None:
        # While max_notifications wait, the reader stops here, so the socket
        # is not read and TCP slows the Agent down; nothing is dropped.
        await self._flush()
        await self._wait_room()
        self._notifications.put_nowait(notification)

    async def _flush(self) -> None:
        # Everything the core buffers goes to the queue before the reader
        # reads on (arrival order; backpressure while the queue is full).
        while True:
            self._move()
            if self._closing or not self._client.buffered:
                return
            await self._wait_room()

    # -- reading ---------------------------------------------------------------------------

    async def _read(self, ws: ClientConnection) -> None:
        logger = self._owner._logger
        # Messages are taken as bytes, text or binary alike: no str decode for
        # the core to encode again (its decode checks the UTF-8, 1007 below);
        # the connection class notes which message was binary (1003).
        notes = ws if isinstance(ws, TextClientConnection) else None
        received = 0
        try:
            while True:
                try:
                    message = await ws.recv(decode=False)
                except ConnectionClosed:
                    break
                received += 1
                if notes is not None and received == notes.first_binary:
                    await ws.close(CloseCode.UNSUPPORTED_DATA, "text frames only")
                    break
                try:
                    effects = self._client.receive(message)
                except core.ProtocolError as exc:
                    if exc.code == core.ErrorCode.INVALID_UTF8 and exc.origin == "peer":
                        # RFC 6455 section 8.1 (websockets' own check when it
                        # decodes, now the core's decode of the bytes).
                        await ws.close(
                            CloseCode.INVALID_PAYLOAD, "invalid UTF-8 in a text message"
                        )
                        break
                    if exc.code == core.ErrorCode.LIMIT_EXCEEDED:
                        # A state event cannot be buffered and must not be dropped.
                        logger.warning("closing connection: %s", exc)
                        await ws.close(
                            CloseCode.POLICY_VIOLATION, "notification buffer full"
                        )
                        break
                    integrity = stream_integrity_reason(exc.code)
                    if integrity is not None:
                        # A skipped, reordered or conflicting stream event is
                        # never swallowed: the connection ends, the core's
                        # disconnect semantics apply, and the caller resumes
                        # from its checkpoint after reconnecting.
                        logger.warning("closing connection: %s", exc)
                        await ws.close(CloseCode.PROTOCOL_ERROR, integrity)
                        break
                    logger.debug("ignored peer input: %s", exc.code)
                    continue
                if not await self._act(ws, effects):
                    break
                await self._flush()
        except (ConnectionClosed, ConnectionError):
            # ConnectionError: a reply the reader sent itself failed (the
            # socket is ending); either way this is the disconnect.
            pass
        finally:
            self.close_code = ws.close_code
            self.close_reason = ws.close_reason
            self._settle(self._client.disconnect())
            self._lost.set()

    async def _act(self, ws: ClientConnection, effects: list[core.Effect]) -> bool:
        # False when a page of resume() broke the stream (closed 1002).
        for effect in effects:
            if isinstance(effect, core.ResponseReceived) and self._settled_page(
                effect.request
            ):
                if not await self._page(ws, effect.request, effect.result):
                    return False
            else:
                await self._dispatch(effect)
        return True

    def _settled_page(self, request: core.Request) -> bool:
        # A request was settled: whether it was a page of resume() (then it
        # is one no longer).
        if request.id not in self._pages:
            return False
        self._pages.discard(request.id)
        return True

    def _answer(self, request: core.Request, outcome: object) -> bool:
        # Settle the caller waiting for request with its result or its
        # ProtocolError; whether one was waiting.
        future = self._waiting.get(request.id)
        if future is None or future.done():
            return False
        if isinstance(outcome, core.ProtocolError):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
        return True

    async def _dispatch(self, effect: core.Effect) -> None:
        if isinstance(effect, core.ResponseReceived):
            self._answer(effect.request, effect.result)
        elif isinstance(effect, core.ErrorReceived):
            self._settle([effect])
        elif isinstance(effect, core.NotificationReceived):
            await self._put(effect.notification)
        elif isinstance(effect, core.RequestReceived):
            callback = self._owner._on_request
            if callback is None:
                # Unreachable in practice: connect() requires on_request for
                # every group with incoming requests, and the core refuses
                # requests of groups not negotiated.  Refuse, never decide.
                await self._send(
                    self._client.reply_error(
                        effect.request,
                        core.ProtocolError(
                            core.ErrorCode.UNSUPPORTED, "this client takes no requests"
                        ),
                    ).data
                )
                return
            # Run apart from the reader: a callback that waits for a human
            # must not stop responses and notifications from arriving.
            task = asyncio.create_task(self._call_back(callback, effect.request))
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)
        elif isinstance(effect, core.SendMessage):
            await self._send(effect.data)

    async def _call_back(self, callback: OnRequest, request: core.Request) -> None:
        try:
            outcome = callback(request)
            if isinstance(outcome, Awaitable):
                await outcome
        except (
            Exception
        ) as exc:  # the request stays pending; the caller may still reply
            self._owner._logger.error(
                "on_request callback raised %s", type(exc).__name__
            )

    def _settle(self, effects: Collection[core.Effect]) -> None:
        for effect in effects:
            if isinstance(effect, core.ErrorReceived):
                self._settled_page(effect.request)
                self._answer(effect.request, effect.error)

    async def _tick(self) -> None:
        interval = self._owner._tick
        while not self._lost.is_set():
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                self._settle(self._client.expire(time.monotonic()))

    # -- ending and reconnecting --------------------------------------------------------------

    async def _drop(self) -> None:
        ws, self._ws = self._ws, None
        # Stop the reader first: one blocked on a full notification queue
        # would otherwise keep the socket paused and the close handshake
        # would wait for close_timeout.
        for task in (self._reader, self._ticker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._reader = self._ticker = None
        if ws is not None:
            # Messages still in flight are read and discarded (never given to
            # the core, so no state or checkpoint moves), so the peer's close
            # frame behind them arrives without waiting for close_timeout.
            discard = asyncio.create_task(_discard(ws))
            with contextlib.suppress(Exception):
                await ws.close()
            discard.cancel()
        if self._client.state.value != "disconnected":
            self._settle(self._client.disconnect())
        self._lost.set()

    def abort(self) -> None:
        """Cut the TCP connection without a close handshake (simulates a network failure; for tests and demos)."""
        if self._ws is not None:
            self._ws.transport.abort()

    async def reconnect(self) -> core.InitializeResult:
        """Open a new socket (authenticating again), ``Client.reconnect()``, initialize again.

        Returns the new initialize result.  Uncertain commands and stream
        checkpoints are kept; nothing is re-sent.  Raises
        ``HandshakeRejected`` (the listener refused: ``.status``),
        ``ConnectError`` (not reachable), ``ssl.SSLError``, ``TimeoutError``,
        ``ProtocolError``.
        """
        await self._drop()
        self._client.reconnect()
        await self._open()
        return self.initialize_result

    async def aclose(self) -> None:
        """Close the socket (1000) and end :meth:`notifications`."""
        if self._closing:
            return
        self._closing = True
        await self._drop()
        self._notifications.put_nowait(_CLOSED)


#: The core Client options connect(...) sets itself (from its own arguments).
_SET_BY_CONNECT: Final = frozenset(
    {
        "capabilities",
        "required_capabilities",
        "host_id",
        "checkpoints",
        "max_message_bytes",
    }
)


def _client_options(value: object) -> Options:
    """``client_options`` checked: a mapping of core ``Client`` keyword
    arguments that connect(...) does not set itself (``TypeError`` naming
    ``client_options`` and each other key)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(
            "client_options must be a mapping of core Client keyword arguments, "
            f"not {type(value).__name__}"
        )
    options = dict(value)
    known = inspect.signature(core.Client).parameters
    other = sorted(repr(k) for k in options if k not in known or k in _SET_BY_CONNECT)
    if other:
        raise TypeError(
            "client_options must hold only core Client keyword arguments that "
            f"connect(...) does not set itself, not {', '.join(other)}"
        )
    return options


class connect:  # noqa: N801 - used like a function: ``async with connect(...) as session``
    """Open a client session: ``async with connect(url, token=..., capabilities=[...]) as session``.

    Connects, authenticates with ``Authorization: Bearer <token>`` in the
    handshake, and initializes.  Every argument is documented in the package
    README with its default.  Raises ``TypeError`` / ``ValueError`` naming the
    argument (at construction); at ``__aenter__``: ``HandshakeRejected`` (an
    HTTP refusal or any redirect; ``.status``, and a message such as
    ``authentication failed (HTTP 401)``), ``ConnectError`` (nothing
    listening, unknown host, not a WebSocket answer; the ``host:port`` in the
    message, chained from the ``OSError``), ``ssl.SSLError`` (certificate),
    ``TimeoutError`` (``open_timeout``) and ``ProtocolError`` (initialize).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | Secret,
        capabilities: Collection[str],
        required_capabilities: Collection[str] = (),
        on_request: OnRequest | None = None,
        host_id: str | None = None,
        checkpoints: Mapping[str, int] | None = None,
        ssl: ssl_module.SSLContext | None = None,
        allow_insecure_non_loopback: bool = False,
        origin: str | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        max_size: int | None = None,
        max_inbound_frames: int = DEFAULT_MAX_INBOUND_FRAMES,
        max_notifications: int = DEFAULT_MAX_NOTIFICATIONS,
        write_limit: int = DEFAULT_WRITE_LIMIT,
        max_write_buffer: int | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        tick: float = DEFAULT_TICK,
        client_options: Options | None = None,
        logger: logging.Logger | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        self._allow_insecure = check_bool(
            "allow_insecure_non_loopback", allow_insecure_non_loopback
        )
        self._url = check_url(url, allow_insecure_non_loopback=self._allow_insecure)
        self._token = as_secret("token", token)
        self._capabilities = check_strings("capabilities", capabilities)
        self._required = check_strings("required_capabilities", required_capabilities)
        self._on_request = (
            None if on_request is None else check_callable("on_request", on_request)
        )
        # Groups whose requests the peer may send to this client (approvals,
        # cancellation of them): only the caller answers those, so a caller
        # offering them must say how it takes them.  No automatic answer.
        incoming = sorted(
            {
                spec.group
                for spec in core.METHODS.values()
                if spec.kind == "request"
                and spec.direction in ("server", "either")
                and spec.group in self._capabilities
            }
        )
        if incoming and self._on_request is None:
            raise ValueError(
                f"on_request is required when offering {', '.join(incoming)}: the "
                "peer may send requests there that only the caller answers "
                "(Session.reply / Session.reply_error)"
            )
        self._host_id = host_id
        self._checkpoints = checkpoints
        self._ssl = check_ssl("ssl", ssl)
        secure = self._url.startswith("wss:")
        if self._ssl is not None and not secure:
            raise ValueError("ssl is given but url is not wss://")
        if secure and self._ssl is None:
            # Peer certificate and host name verified (CERT_REQUIRED, check_hostname).
            self._ssl = ssl_module.create_default_context()
        if origin is not None and not isinstance(origin, str):
            raise TypeError("origin must be a str or None")
        self._origin = origin
        self._open_timeout = check_seconds("open_timeout", open_timeout)
        self._ping_interval = check_optional_seconds("ping_interval", ping_interval)
        self._ping_timeout = check_optional_seconds("ping_timeout", ping_timeout)
        self._close_timeout = check_seconds("close_timeout", close_timeout)
        # max_size is websockets' name (and the listener's);
        # max_message_bytes is kept as an alias.
        name, value = pick_alias(
            "max_size",
            max_size,
            "max_message_bytes",
            max_message_bytes,
            DEFAULT_MAX_SIZE,
        )
        self._max_message_bytes = check_int(name, value, minimum=1)
        self._max_inbound_frames = check_int(
            "max_inbound_frames", max_inbound_frames, minimum=1
        )
        self._max_notifications = check_int(
            "max_notifications", max_notifications, minimum=1
        )
        self._write_limit = check_int("write_limit", write_limit, minimum=1)
        self._max_write_buffer = check_write_buffer(
            max_write_buffer,
            write_limit=self._write_limit,
            max_size=self._max_message_bytes,
        )
        self._send_timeout = check_seconds("send_timeout", send_timeout)
        self._tick = check_seconds("tick", tick)
        self._client_options = _client_options(client_options)
        if logger is not None and not isinstance(logger, logging.Logger):
            raise TypeError("logger must be a logging.Logger")
        self._logger = RedactingLogger(
            logger or logging.getLogger("websockets.client"), (self._token.reveal(),)
        )
        # Fail now, not at __aenter__, on bad core options.
        self._make_client()
        self._session: Session | None = None

    def __repr__(self) -> str:
        return f"connect(url={self._url!r}, token={self._token!r})"

    def _make_client(self) -> core.Client:
        return core.Client(
            capabilities=self._capabilities,
            required_capabilities=self._required,
            host_id=self._host_id,
            checkpoints=self._checkpoints,
            max_message_bytes=self._max_message_bytes,
            **self._client_options,
        )

    async def __aenter__(self) -> Session:
        session = Session(self)
        await session._open()
        self._session = session
        return session

    async def __aexit__(self, *exc: object) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()
