"""The client session: the :class:`Session` that ``connect(...)`` gives, over a core ``Client``.

One reader task per socket feeds every text message to ``Client.receive`` and
acts on the effects: a response or error settles the waiting
:meth:`Session.request` (a page of :meth:`Session.resume` is ingested
first, before the message behind it); an incoming request (an approval)
goes to the ``on_request`` callback, which is answered only by the caller through
:meth:`Session.reply`; notifications (ephemeral ones, and sequenced ones
drained from the core's stream buffer) go to the bounded queue behind
:meth:`Session.notifications` (``_inbox``).  A ticker drives
``Client.expire(now)``.  The socket is opened with the settings ``connect``
checked (``_client_policy``).

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
import time
from collections.abc import AsyncIterator, Awaitable, Collection, Mapping
from typing import Final, Literal, Unpack, cast

import samgita_protocol as core
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from ._client_policy import SessionSettings, open_socket
from ._codes import CloseCode, stream_integrity_reason
from ._inbox import Inbox
from ._types import Fields, NotifyEnvelope, OnRequest, RequestEnvelope, Result

__all__ = ["Session"]

_INITIALIZE: Final = "connection/initialize"


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

    def __init__(self, settings: SessionSettings) -> None:
        self._settings = settings
        self._client = settings.make_client()
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._waiting: dict[str, asyncio.Future[Result]] = {}
        # Ids of resume()'s pending stream/resume requests: the reader
        # ingests their page (_page); each leaves when it is settled.
        self._pages: set[str] = set()
        self._notifications = Inbox(self._client, settings.max_notifications)
        self._callbacks: set[asyncio.Task[None]] = set()
        self._lost = asyncio.Event()
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.connections = 0

    def __repr__(self) -> str:
        return f"Session(url={self._settings.url!r}, connected={self.connected}, client={self._client!r})"

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
        """Clear an uncertain command after reconciling it (``Client.resolve_uncertain``;
        with a ``journal``, its entry is settled with ``outcome`` first).

        Raises ``ProtocolError`` ``unknown_uncertain``, ``ValueError`` for a bad outcome.
        """
        self._client.resolve_uncertain(request_id, outcome)

    def checkpoints(self) -> dict[str, int]:
        """Processed stream positions to persist (``Client.checkpoints()``,
        ``{stream_id: cursor}``); persist ``session.client.host_id`` beside
        them and pass both back as ``host_id=`` and ``checkpoints=``, or
        give ``connect`` a ``checkpoint_store``, which keeps them itself."""
        return self._client.checkpoints()

    async def wait_disconnected(self) -> None:
        """Wait until the current socket has ended."""
        await self._lost.wait()

    # -- opening ---------------------------------------------------------------------------

    async def _open(self) -> None:
        ws = await open_socket(self._settings)
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
            async with asyncio.timeout(self._settings.send_timeout):
                await ws.send(data, text=True)
        except TimeoutError:
            await self._abort_not_reading(ws)
            raise ConnectionError("peer is not reading (send timed out)") from None
        except ConnectionClosed:
            raise ConnectionError("connection closed") from None

    async def _abort_not_reading(self, ws: ClientConnection) -> None:
        self._settings.logger.warning("closing connection: peer is not reading")
        # The close frame is best effort: a peer that does not read will not
        # read it either, so wait no longer than close_timeout, then drop TCP.
        try:
            async with asyncio.timeout(self._settings.close_timeout):
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
        async for item in self._notifications.items():
            yield item

    def take_notifications(self) -> list[core.Notification]:
        """The notifications queued right now, without waiting (for callers that poll)."""
        return self._notifications.take()

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
        return await self._notifications.next(timeout)

    def ack(self, notification: core.Notification) -> None:
        """Mark a sequenced notification processed (``Client.ack``): the
        checkpoint advances, and a resume waiting for room goes on.

        Raises ``ValueError`` naming ``notification`` for an ephemeral one
        (no ``stream_id``/``cursor``: it is never replayed, so there is
        nothing to acknowledge), ``ProtocolError`` ``invalid_cursor`` for a
        cursor not delivered, ``TypeError`` when ``notification`` is not a
        core ``Notification``.
        """
        self._notifications.ack(notification)

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
            await self._notifications.ingest_page(result)
        except core.ProtocolError as exc:
            integrity = stream_integrity_reason(exc.code)
            if integrity is not None:
                self._settings.logger.warning("closing connection: %s", exc)
                with contextlib.suppress(Exception):
                    await ws.close(CloseCode.PROTOCOL_ERROR, integrity)
            if not self._answer(request, exc):
                self._settings.logger.debug("resume page not ingested: %s", exc.code)
            return integrity is None
        self._answer(request, result)
        return True

    # -- reading ---------------------------------------------------------------------------

    async def _read(self, ws: ClientConnection) -> None:
        logger = self._settings.logger
        try:
            while True:
                try:
                    # A text message as str (websockets checked its UTF-8 and
                    # closes 1007 on invalid UTF-8), a binary one as bytes.
                    message = await ws.recv()
                except ConnectionClosed:
                    break
                if type(message) is not str:
                    await ws.close(CloseCode.UNSUPPORTED_DATA, "text frames only")
                    break
                try:
                    effects = self._client.receive(message)
                except core.ProtocolError as exc:
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
                await self._notifications.flush()
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
            await self._notifications.put(effect.notification)
        elif isinstance(effect, core.RequestReceived):
            callback = self._settings.on_request
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
            self._settings.logger.error(
                "on_request callback raised %s", type(exc).__name__
            )

    def _settle(self, effects: Collection[core.Effect]) -> None:
        for effect in effects:
            if isinstance(effect, core.ErrorReceived):
                self._settled_page(effect.request)
                self._answer(effect.request, effect.error)

    async def _tick(self) -> None:
        interval = self._settings.tick
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
        if self._notifications.closing:
            return
        self._notifications.closing = True
        await self._drop()
        self._notifications.end()
