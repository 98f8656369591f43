"""One accepted connection: a fresh core ``Server`` driven by the socket.

The loop is short on purpose (the style of ``websockets.asyncio.connection``):
a reader feeds each text message to ``Server.receive`` and sends the
``data`` of each ``Outgoing`` that comes back; a writer drains the bounded outbound queue into the socket; a
ticker drives the core's timers with ``expire(now)``.  Nothing here
interprets the protocol: the core decides, this module moves bytes and
applies the transport's bounds.

Per message the reader does as little as it can (bench/transport.py measures
it): it takes the message with ``recv()`` (a ``str`` for a text message, whose
UTF-8 ``websockets`` checked: invalid UTF-8 is closed 1007 there, RFC 6455
section 8.1; ``bytes`` for a binary one, closed 1003 after the text messages
before it), hands it to ``Server.receive``, and sends the bytes the core
validated when it built the reply (each ``Outgoing.data``), from the
reader's own task when nothing else is queued or being sent (no hop through
the writer task).

Backpressure: the outbound queue holds at most ``max_outbound_messages``
encoded messages, and ``websockets`` buffers at most ``write_limit`` bytes
more, and one message at a time is inside ``websockets``' send (a lock
shared by direct sends and the writer).  A producer (the reader answering
requests, an Agent pushing notifications) waits for room; when it has waited
``send_timeout``, or one send (direct or the writer's) has taken that long,
the peer is not reading, and the connection is closed with 1008 and the
reason ``"peer is not reading (outbound queue full)"``.  Nothing is dropped
while the connection is up; after the close the core's disconnect semantics
apply on both sides.  Inbound, ``websockets`` stops reading the socket once
``max_inbound_frames`` frames wait, and the reader handles one message at a
time, so a peer that floods us with messages is slowed by TCP, not buffered.
Control frames are not queued: ``websockets`` answers each ping at once,
outside ``write_limit``, so a peer that pings and never reads is bounded by
``max_write_buffer`` instead: the connection class closes 1008
``"peer is not reading (write buffer full)"`` and drops TCP
(``_boundedconn``), and :attr:`AgentConnection.close_reason` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Unpack, cast

import samgita_protocol as core
from websockets.exceptions import ConnectionClosed

from ._boundedconn import WRITE_BUFFER_FULL, BoundedConnection
from ._checks import check_close
from ._codes import CloseCode, stream_integrity_reason
from ._redact import RedactingLogger
from ._types import (
    Fields,
    NotifyEnvelope,
    Options,
    ServerRequestEnvelope,
    SocketAddress,
)

__all__ = ["AgentConnection", "ConnectionInfo", "run_connection"]

NOT_READING = "peer is not reading (outbound queue full)"


class AgentConnection:
    """The Agent's side of one accepted connection, given in ``ConnectionInfo.connection``.

    A handler keeps it to push notifications and server-initiated requests
    (approvals) outside a request callback.  Every method raises
    ``ConnectionError`` once the connection is closed and ``ProtocolError``
    when the core refuses the message.
    """

    def __init__(
        self,
        ws: BoundedConnection,
        *,
        max_outbound_messages: int,
        send_timeout: float,
        logger: RedactingLogger,
        max_message_bytes: int = core.DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._ws = ws
        self._max_message_bytes = max_message_bytes
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(max_outbound_messages)
        # Senders waiting for room in _queue, in line (see _enqueue).
        self._blocked = 0
        self._in_line = asyncio.Lock()
        self._send_timeout = send_timeout
        self._logger = logger
        self._server: core.Server | None = None
        self._closed = asyncio.Event()
        # Messages taken for sending and not yet sent (by the writer or a
        # direct sender); a producer sends directly only when it is 0 and
        # the queue is empty, so order is kept.
        self._inflight = 0
        # Held by whoever is inside ws.send: one message at a time beyond
        # the queue, so at most max_outbound_messages + 1 wait in this
        # process (plus write_limit bytes in websockets).
        self._send_lock = asyncio.Lock()
        self._close_reason: str | None = None

    def __repr__(self) -> str:
        return f"AgentConnection(remote_address={self._ws.remote_address!r}, closed={self.closed})"

    @property
    def server(self) -> core.Server:
        """The core ``Server`` of this connection (its state: positions, pending requests)."""
        if self._server is None:
            raise RuntimeError(
                "the core Server is not built yet (handler_factory is still running)"
            )
        return self._server

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (or is closing)."""
        return self._closed.is_set()

    @property
    def close_reason(self) -> str | None:
        """Why this side closed, when it did (for example a not-reading reason)."""
        if self._close_reason is None and self._ws.write_buffer_full:
            return WRITE_BUFFER_FULL  # the connection class failed it (_boundedconn)
        return self._close_reason

    async def wait_closed(self) -> None:
        """Wait until the connection has ended."""
        await self._closed.wait()

    async def notify(
        self, method: str, params: Fields, **envelope: Unpack[NotifyEnvelope]
    ) -> core.Notification:
        """Send a notification (``Server.notify`` then the socket); returns the ``Notification``.

        Waits for room in the outbound queue (backpressure).  Raises
        ``ProtocolError`` from the core, ``ConnectionError`` when closed.
        """
        self._check_open()
        outgoing = self.server.notify(method, params, **envelope)
        await self._enqueue(outgoing.data)
        return cast(core.Notification, outgoing.message)

    async def request(
        self,
        method: str,
        params: Fields,
        **envelope: Unpack[ServerRequestEnvelope],
    ) -> core.Request:
        """Send a server-initiated request (``Server.request``); returns the ``Request``.

        Its outcome arrives at the handler's ``handle_response``.  Raises
        ``ProtocolError`` from the core, ``ConnectionError`` when closed.
        """
        self._check_open()
        outgoing = self.server.request(method, params, **envelope)
        await self._enqueue(outgoing.data)
        return cast(core.Request, outgoing.message)

    async def send_message(self, message: core.Message) -> None:
        """Encode and send (or queue) one core message the caller built.

        The message is encoded and validated (``samgita_protocol.encode``
        with the listener's ``max_size``); for one the core built, send the
        ``data`` of its ``Outgoing`` with :meth:`send_encoded` instead.
        Raises ``ProtocolError`` when it cannot be encoded,
        ``ConnectionError`` when the connection is closed or the peer is not
        reading.
        """
        data = core.encode(message, max_message_bytes=self._max_message_bytes)
        await self._enqueue(data)

    async def send_encoded(self, data: bytes) -> None:
        """Send (or queue) one message given as the wire bytes the core validated.

        For bytes the core already validated when it built the message (the
        ``data`` of an ``Outgoing``: ``Replay.append``, ``Server.notify``,
        ``Server.request``), so they are not encoded and validated again;
        they are sent as they are, so pass nothing else.  Raises ``TypeError`` for
        anything but ``bytes``, ``ProtocolError`` (``message_too_large``,
        origin ``local``) above the listener's ``max_size``,
        ``ConnectionError`` when the connection is closed or the peer is not
        reading.
        """
        if type(data) is not bytes:
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) > self._max_message_bytes:
            raise core.ProtocolError(
                core.ErrorCode.MESSAGE_TOO_LARGE,
                f"message is larger than {self._max_message_bytes} bytes",
                data={"bytes": len(data), "max": self._max_message_bytes},
                origin="local",
            )
        await self._enqueue(data)

    async def close(self, code: int = CloseCode.NORMAL, reason: str = "") -> None:
        """Close the connection with ``code`` and ``reason`` (RFC 6455 section 7.4).

        Raises ``TypeError`` / ``ValueError`` (nothing is closed) for a code
        one may not send (a defined code or 3000-4999) or a reason that is
        not a ``str`` of at most 123 UTF-8 bytes.
        """
        code, reason = check_close(code, reason)
        if self._close_reason is None:
            self._close_reason = self.close_reason or reason or None
        self._closed.set()
        with contextlib.suppress(Exception):
            await self._ws.close(code, reason)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise ConnectionError("connection closed")

    async def _enqueue(self, data: bytes) -> None:
        if self._closed.is_set():
            raise ConnectionError("connection closed")
        if self._inflight == 0 and self._queue.empty():
            # Nothing is waiting and nobody is writing: send from this task and
            # save the hop through the writer task (order is kept, since the
            # queue is empty and this producer waits for its own send).
            self._inflight += 1
            try:
                await self._send(data)
            finally:
                self._inflight -= 1
            return
        if not self._blocked:
            try:
                self._queue.put_nowait(data)
                return
            except asyncio.QueueFull:
                pass
        # The queue is full, or others wait for room: wait in line, first
        # come, first served (asyncio.Lock wakes its waiters in order, and
        # only its holder puts). A put beside them could take the slot freed
        # for the first of them and overtake it (a live event before the
        # stream/resume response ahead of it: a cursor_gap at the client).
        self._blocked += 1
        try:
            async with asyncio.timeout(self._send_timeout), self._in_line:
                await self._queue.put(data)
        except TimeoutError:
            await self._not_reading()
        finally:
            self._blocked -= 1

    async def _send(self, data: bytes) -> None:
        # One message in ws.send at a time (the lock), bounded by
        # send_timeout: ws.send waits only when the write buffer is above
        # write_limit, and a peer that does not read keeps it there.
        self._check_open()
        async with self._send_lock:
            self._check_open()
            try:
                async with asyncio.timeout(self._send_timeout):
                    await self._ws.send(data, text=True)
            except TimeoutError:
                await self._not_reading()
            except ConnectionClosed:
                self._closed.set()
                raise ConnectionError("connection closed") from None

    async def _not_reading(self) -> None:
        if self._close_reason == NOT_READING:
            raise ConnectionError(NOT_READING)  # another sender closed it already
        self._logger.warning("closing connection: %s", NOT_READING)
        self._close_reason = NOT_READING
        self._closed.set()
        # The close frame is best effort: a peer that does not read will not
        # read it either, so wait no longer than send_timeout, then drop TCP.
        try:
            async with asyncio.timeout(self._send_timeout):
                await self._ws.close(CloseCode.POLICY_VIOLATION, NOT_READING)
        except TimeoutError:
            self._ws.transport.abort()
        raise ConnectionError(NOT_READING)

    async def _writer(self) -> None:
        while True:
            data = await self._queue.get()
            if data is None:
                return
            self._inflight += 1
            try:
                # Bounded like a direct send: a peer that does not read is
                # closed with the not-reading reason after send_timeout.
                await self._send(data)
            except ConnectionError:
                return
            finally:
                self._inflight -= 1


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionInfo:
    """What ``handler_factory`` learns about an accepted, authenticated connection.

    ``principal`` is what the authenticator returned; ``headers`` exclude
    credential headers.  ``serial`` counts connections accepted by this
    listener.  ``connection`` is the Agent's handle for pushing notifications
    and server-initiated requests on this connection.
    """

    connection: AgentConnection
    serial: int
    remote_address: SocketAddress
    origin: str | None
    principal: object
    headers: Mapping[str, str]


def default_capabilities(handler: core.Handler) -> tuple[str, ...]:
    """The groups whose request methods the handler implements (used when ``capabilities`` is None)."""
    explicit = getattr(handler, "capabilities", None)
    if explicit is not None:
        return tuple(explicit)
    methods = set(handler.methods)
    return tuple(
        sorted(
            group
            for group in core.CAPABILITY_GROUPS
            if core.request_methods(group) and core.request_methods(group) <= methods
        )
    )


def _now() -> float:
    return time.monotonic()


async def run_connection(
    ws: BoundedConnection,
    *,
    handler_factory: Callable[[ConnectionInfo], core.Handler],
    make_info: Callable[[AgentConnection], ConnectionInfo],
    capabilities: Sequence[str] | None,
    server_options: Options,
    max_message_bytes: int,
    max_outbound_messages: int,
    send_timeout: float,
    tick: float,
    logger: RedactingLogger,
) -> None:
    """Serve one upgraded connection until it closes (internal)."""
    conn = AgentConnection(
        ws,
        max_outbound_messages=max_outbound_messages,
        send_timeout=send_timeout,
        logger=logger,
        max_message_bytes=max_message_bytes,
    )
    try:
        handler = handler_factory(make_info(conn))
        caps = (
            capabilities if capabilities is not None else default_capabilities(handler)
        )
        options = {"max_message_bytes": max_message_bytes, **server_options}
        server = conn._server = core.Server(handler, capabilities=list(caps), **options)
    except Exception as exc:
        logger.error(
            "handler_factory or Server construction failed: %s",
            type(exc).__name__,
            exc_info=exc,
        )
        await ws.close(CloseCode.INTERNAL_ERROR, "server setup failed")
        return
    writer = asyncio.create_task(conn._writer())
    ticker = asyncio.create_task(_tick(server, tick))
    # Bound once: this runs for every message.
    recv = ws.recv
    receive = server.receive
    enqueue = conn._enqueue
    protocol_error = core.ProtocolError
    try:
        while True:
            try:
                # A text message as str (its UTF-8 checked), a binary one as bytes.
                data = await recv()
            except ConnectionClosed:
                break
            if type(data) is not str:
                await conn.close(CloseCode.UNSUPPORTED_DATA, "text frames only")
                break
            try:
                replies = receive(data)
            except protocol_error as exc:
                code = exc.code
                integrity = stream_integrity_reason(code)
                if integrity is not None:
                    # A stream event the peer skipped or changed: never
                    # swallowed; the connection ends (disconnect semantics).
                    logger.warning("closing connection: %s", code)
                    await conn.close(CloseCode.PROTOCOL_ERROR, integrity)
                    break
                # Input the core could not attribute to a request: nothing to answer.
                logger.debug("dropped unanswerable input: %s", code)
                continue
            for reply in replies:
                await enqueue(reply.data)
    except (ConnectionClosed, ConnectionError):
        pass
    finally:
        await _wind_down(conn, writer, ticker)


async def _wind_down(
    conn: AgentConnection, writer: asyncio.Task[None], ticker: asyncio.Task[None]
) -> None:
    # The connection has ended: stop the ticker, let the writer finish what
    # is queued (at most a second), then the core's disconnect semantics.
    conn._closed.set()
    ticker.cancel()
    if not writer.done():
        with contextlib.suppress(asyncio.QueueFull):
            conn._queue.put_nowait(None)
    with contextlib.suppress(asyncio.TimeoutError, Exception):
        async with asyncio.timeout(1.0):
            await writer
    writer.cancel()
    with contextlib.suppress(Exception):
        conn.server.disconnect()


async def _tick(server: core.Server, interval: float) -> None:
    expire = server.expire
    while True:
        await asyncio.sleep(interval)
        try:
            expire(_now())
        except Exception:  # a timer must not take the connection down
            pass
