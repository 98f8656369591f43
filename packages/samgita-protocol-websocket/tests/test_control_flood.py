"""Pings whose pongs the peer never reads (issue 18 item 2): each test failed before the fix.

``websockets`` answers every ping at once, outside ``write_limit``; before
``max_write_buffer`` a peer that pinged and never read grew the other side's
write buffer without bound (29 -> 240 MiB in 8 s for the fake Agent).  The
buffer sizes are sampled between the event loop's callbacks, where the bound
holds up to the answers to one read of the socket.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core
from websockets.asyncio.server import serve as ws_serve

from samgita_protocol_websocket import AgentConnection, CloseCode, connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

from conftest import TOKEN
from rawws import CLOSE, GUID, PING, PONG, TEXT, RawClient, frame, upgrade_headers

WRITE_BUFFER_FULL = "peer is not reading (write buffer full)"
CERTS = Path(__file__).resolve().parent / "certs"
READ_SIZE = 256 * 1024
"""``asyncio`` reads at most this much at a time: the answers to one read may
come on top of the bound before the check after it."""
SMALL: dict[str, Any] = {"write_limit": 1024, "max_size": 16_384}
SMALL_BOUND = 2 * (1024 + 16_384)
"""The least ``max_write_buffer`` with the ``SMALL`` limits."""
LEAST_BOUND = 2 * (65_536 + 1_048_576)
"""The least ``max_write_buffer`` with the default limits."""
PINGS = b"".join(frame(PING, os.urandom(125)) for _ in range(1000))
FLOOD_CAP = 256 * 2**20
"""Bytes of pings after which a flood gives up: far above what the socket
buffers and the bound hold, never reached when the bound works."""
INIT = (
    b'{"schema_version":"1.0","type":"request","id":"1","correlation_id":"1",'
    b'"method":"connection/initialize","params":{"versions":["1.0"],'
    b'"capabilities":["sessions.v1","streaming.v1"]}}'
)


def _flood(
    port: int, stop: threading.Event, tls: ssl.SSLContext | None = None
) -> BaseException | None:
    """Upgrade, then send 125-byte pings and never read; what ended it (None: ``stop`` or the cap)."""
    peer = RawClient(port, timeout=60, rcvbuf=4096)
    if tls is not None:
        peer.sock = tls.wrap_socket(peer.sock, server_hostname="127.0.0.1")
    try:
        assert peer.request(headers=upgrade_headers(TOKEN)).status == 101
        sent = 0
        while sent < FLOOD_CAP and not stop.is_set():
            peer.sock.sendall(PINGS)
            sent += len(PINGS)
    except OSError as exc:
        return exc
    finally:
        peer.close()
    return None


async def _peak(
    transport: Any, until: asyncio.Future[Any], stop: threading.Event | None = None
) -> int:
    """The largest write buffer seen until ``until`` is done.

    With ``stop``: a flood bounded by ``SMALL_BOUND``; ``stop`` is set once the
    buffer passes it (and the answers to one read), so a failing run ends soon.
    """
    peak = 0
    while not until.done():
        peak = max(peak, transport.get_write_buffer_size())
        if stop is not None and peak > SMALL_BOUND + READ_SIZE:
            stop.set()
        await asyncio.sleep(0.001)
    return peak


async def _nth(conns: list[AgentConnection], n: int) -> AgentConnection:
    while len(conns) < n:
        await asyncio.sleep(0.01)
    return conns[n - 1]


def _recording(conns: list[AgentConnection]) -> Any:
    agent = FakeAgent.factory(AgentState())

    def make(info: Any) -> Any:
        conns.append(info.connection)
        return agent(info)

    return make


@pytest.mark.parametrize("tls", [False, True], ids=["ws", "wss"])
def test_listener_cuts_a_ping_flood_at_the_bound_1008_and_serves_the_others(
    tls: bool,
) -> None:
    conns: list[AgentConnection] = []
    server_tls = client_tls = None
    if tls:
        # Over TLS the transport counts what waits above the TCP transport's
        # own high-water mark: the same bound holds.
        server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_tls.load_cert_chain(
            CERTS / "test-only-localhost.pem", CERTS / "test-only-localhost.key"
        )
        client_tls = ssl.create_default_context(
            cafile=CERTS / "test-only-localhost.pem"
        )

    async def main() -> None:
        async with serve(
            _recording(conns),
            host="127.0.0.1",
            token=TOKEN,
            ssl=server_tls,
            max_write_buffer=SMALL_BOUND,
            **SMALL,
        ) as lis:
            async with connect(
                lis.url,
                token=TOKEN,
                capabilities=["sessions.v1"],
                ssl=client_tls,
                **SMALL,
            ) as other:
                stop = threading.Event()
                flood = asyncio.ensure_future(
                    asyncio.to_thread(_flood, lis.port, stop, client_tls)
                )
                flooded = await _nth(conns, 2)
                peak, during = await asyncio.gather(
                    _peak(flooded._ws.transport, flood, stop),
                    other.request("thread/start", {}, command_id="during"),
                )
                ended = await flood
                # Cut by the listener (reset, broken pipe, TLS EOF), not a timeout.
                assert isinstance(ended, OSError), ended
                assert not isinstance(ended, TimeoutError), ended
                assert peak <= SMALL_BOUND + READ_SIZE
                await asyncio.wait_for(flooded.wait_closed(), 30)
                assert flooded.close_reason == WRITE_BUFFER_FULL
                # The other client was served during the flood and still is.
                assert during.thread.status == "active"
                after = await other.request("thread/start", {}, command_id="after")
                assert after.thread.status == "active"
                assert other.connected and not conns[0].closed
            async with connect(
                lis.url,
                token=TOKEN,
                capabilities=["sessions.v1"],
                ssl=client_tls,
                **SMALL,
            ) as fresh:
                await fresh.request("thread/start", {}, command_id="fresh")

    asyncio.run(asyncio.wait_for(main(), 120))


async def _read_client_frame(reader: asyncio.StreamReader) -> bytes:
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    key = await reader.readexactly(4)
    data = await reader.readexactly(n)
    return bytes(b ^ key[i % 4] for i, b in enumerate(data))


def _server_text(payload: bytes) -> bytes:
    return frame(TEXT, payload, mask=False)


def _hostile_agent(stop: threading.Event, ended: list[BaseException | None]) -> Any:
    """Upgrades, answers initialize, then floods pings and never reads again."""

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        writer.write(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n".encode()
        )
        init = json.loads(await _read_client_frame(reader))
        result = {
            "version": "1.0",
            "capabilities": init["params"]["capabilities"],
            "connection_id": "c1",
            "host_id": "h",
        }
        response = {
            "schema_version": "1.0",
            "type": "response",
            "id": init["id"],
            "correlation_id": init["correlation_id"],
            "result": result,
        }
        writer.write(_server_text(json.dumps(response).encode()))
        pings = b"".join(frame(PING, os.urandom(125), mask=False) for _ in range(1000))
        sent = 0
        try:
            while sent < FLOOD_CAP and not stop.is_set():
                writer.write(pings)
                sent += len(pings)
                await writer.drain()
        except OSError as exc:
            ended.append(exc)
            return
        ended.append(None)
        writer.transport.abort()

    return handle


def test_session_cuts_a_ping_flood_from_the_agent_at_the_bound_1008() -> None:
    stop = threading.Event()
    ended: list[BaseException | None] = []

    async def main() -> None:
        # A listening socket that reads little: the session's pongs back up.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.bind(("127.0.0.1", 0))
        server = await asyncio.start_server(
            _hostile_agent(stop, ended), sock=sock, limit=4096
        )
        port = sock.getsockname()[1]
        async with server:
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token=TOKEN,
                capabilities=["sessions.v1"],
                max_write_buffer=SMALL_BOUND,
                **SMALL,
            ) as s:
                assert s._ws is not None
                lost = asyncio.ensure_future(s.wait_disconnected())
                peak = await _peak(s._ws.transport, lost, stop)
                assert peak <= SMALL_BOUND + READ_SIZE
                assert s.close_code == CloseCode.POLICY_VIOLATION
                assert s.close_reason == WRITE_BUFFER_FULL
                for _ in range(3000):
                    if ended:
                        break
                    await asyncio.sleep(0.01)
                # The Agent's flood ended because the session dropped TCP.
                assert ended and isinstance(ended[0], OSError), ended

    asyncio.run(asyncio.wait_for(main(), 120))


def _split_frame(buf: bytearray) -> tuple[int, bytes] | None:
    """Take the first whole (unmasked) frame off ``buf``: opcode and payload; None while incomplete."""
    if len(buf) < 2:
        return None
    n, at = buf[1] & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        (n,) = struct.unpack("!H", buf[2:4])
        at = 4
    elif n == 127:
        if len(buf) < 10:
            return None
        (n,) = struct.unpack("!Q", buf[2:10])
        at = 10
    if len(buf) < at + n:
        return None
    opcode, payload = buf[0] & 0x0F, bytes(buf[at : at + n])
    del buf[: at + n]
    return opcode, payload


def _read_slowly(peer: RawClient, count: int) -> tuple[list[int], int]:
    """Read ``count`` text messages 4 KiB at a time, pausing and pinging between reads.

    Returns their sizes and how many pongs came back.
    """
    buf = bytearray(peer.buf)
    sizes: list[int] = []
    pongs = reads = 0
    while len(sizes) < count:
        chunk = peer.sock.recv(4096)
        if not chunk:
            raise EOFError(f"closed after {sizes} and {pongs} pongs")
        buf += chunk
        reads += 1
        if reads % 16 == 0:
            peer.send(frame(PING, b"slow"))
        time.sleep(0.0005)
        while (taken := _split_frame(buf)) is not None:
            opcode, payload = taken
            if opcode == TEXT:
                sizes.append(len(payload))
            elif opcode == PONG:
                pongs += 1
            elif opcode == CLOSE:
                raise AssertionError(f"closed: {payload!r}")
    return sizes, pongs


def test_listener_keeps_a_slow_reader_of_near_max_size_messages_that_pings() -> None:
    conns: list[AgentConnection] = []
    count = 3
    delta = core.ItemDeltaParams(
        thread_id="t", turn_id="u", item_id="i", delta="x" * 1_040_000
    )

    def slow_peer(peer: RawClient, ready: threading.Event) -> tuple[list[int], int]:
        assert peer.request(headers=upgrade_headers(TOKEN)).status == 101
        peer.send(frame(TEXT, INIT))
        assert peer.read_until(TEXT)  # the initialize response
        ready.set()
        return _read_slowly(peer, count)

    async def main() -> None:
        # The least bound the default write_limit and max_size allow.
        async with serve(
            _recording(conns),
            host="127.0.0.1",
            token=TOKEN,
            max_write_buffer=LEAST_BOUND,
        ) as lis:
            ready = threading.Event()
            # Closed only after the checks: its EOF would end the connection.
            peer = RawClient(lis.port, timeout=60, rcvbuf=4096)
            reading = asyncio.ensure_future(asyncio.to_thread(slow_peer, peer, ready))
            conn = await _nth(conns, 1)
            while not ready.is_set():
                await asyncio.sleep(0.01)
            sampling = asyncio.ensure_future(_peak(conn._ws.transport, reading))
            for _ in range(count):
                notification = await conn.notify("item/delta", delta)
            try:
                sizes, pongs = await reading
                peak = await sampling
                size = len(core.encode(notification))
                assert size > 1_040_000 and sizes == [size] * count
                assert pongs > 0
                # The buffer held most of a message while the peer's pings came.
                assert peak > 65_536
                assert not conn.closed and conn.close_reason is None
            finally:
                peer.close()

    asyncio.run(asyncio.wait_for(main(), 120))


def test_session_keeps_sending_near_max_size_requests_to_a_slow_reader_that_pings() -> (
    None
):
    received: list[int] = []

    async def slow_agent(ws: Any) -> None:
        async for raw in ws:
            msg = json.loads(raw)
            if msg["method"] == "connection/initialize":
                result: dict[str, Any] = {
                    "version": "1.0",
                    "capabilities": msg["params"]["capabilities"],
                    "connection_id": "c1",
                    "host_id": "h",
                }
            else:
                received.append(len(raw))
                await asyncio.sleep(0.1)  # reads slowly
                event = msg["params"]["event"]
                result = {
                    "event_id": event["event_id"],
                    "delivery_attempt_id": event["delivery_attempt_id"],
                    "acceptance": "received",
                    "processing_status": "pending",
                }
            # A response echoes the request's identity (id, correlation, command).
            identity = {
                k: v for k, v in msg.items() if k not in ("type", "method", "params")
            }
            await ws.send(
                json.dumps({**identity, "type": "response", "result": result})
            )

    def event(i: int) -> core.Event:
        return core.Event(
            event_id=f"e{i}",
            delivery_attempt_id="a",
            created_at="2026-12-03T10:00:00Z",
            correlation_id="c",
            event_type="t",
            payload={"b": "x" * 1_040_000},
        )

    async def main() -> None:
        # A listening socket that takes little at a time: the session's
        # messages back up in its write buffer.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.bind(("127.0.0.1", 0))
        async with ws_serve(
            slow_agent,
            sock=sock,
            max_size=None,
            max_queue=1,
            ping_interval=0.01,
            ping_timeout=None,
        ):
            port = sock.getsockname()[1]
            # The least bound the default write_limit and max_size allow:
            # room for two sends in flight at once.
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token=TOKEN,
                capabilities=["project_events.v1"],
                max_write_buffer=LEAST_BOUND,
            ) as s:
                assert s._ws is not None
                # A fixed, small kernel send buffer (no autotuning to 4 MiB),
                # so what the Agent does not take waits in the write buffer.
                own = s._ws.transport.get_extra_info("socket")
                own.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
                peak = 0
                for round_ in range(2):
                    sends = asyncio.ensure_future(
                        asyncio.gather(
                            *(
                                s.request(
                                    "project/event.receive",
                                    {"event": event(2 * round_ + i)},
                                    command_id=f"c{2 * round_ + i}",
                                )
                                for i in range(2)
                            )
                        )
                    )
                    peak = max(peak, await _peak(s._ws.transport, sends))
                    results = await sends
                    assert [r.acceptance for r in results] == ["received"] * 2
                assert s.connected and s.close_code is None
                assert len(received) == 4 and min(received) > 1_040_000
                # Two messages were queued at once while the Agent pinged.
                assert peak > 1_048_576

    asyncio.run(asyncio.wait_for(main(), 120))


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (True, TypeError, "max_write_buffer must be an int, not bool"),
        ("65536", TypeError, "max_write_buffer must be an int, not str"),
        (1.5e6, TypeError, "max_write_buffer must be an int, not float"),
        (0, ValueError, "max_write_buffer must be >= "),
    ],
)
def test_max_write_buffer_checked_at_construction_naming_it(
    value: object, error: type[Exception], match: str
) -> None:
    agent = FakeAgent.factory(AgentState())
    url = "ws://127.0.0.1:1/app-server"
    with pytest.raises(error, match=match):
        serve(agent, host="127.0.0.1", token=TOKEN, max_write_buffer=value)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        connect(url, token=TOKEN, capabilities=["sessions.v1"], max_write_buffer=value)  # type: ignore[arg-type]


def test_max_write_buffer_leaves_room_for_write_limit_and_a_message_twice() -> None:
    agent = FakeAgent.factory(AgentState())
    url = "ws://127.0.0.1:1/app-server"
    for least, limits in ((SMALL_BOUND, SMALL), (LEAST_BOUND, {})):
        with pytest.raises(ValueError, match=f"max_write_buffer must be >= {least}"):
            serve(
                agent,
                host="127.0.0.1",
                token=TOKEN,
                max_write_buffer=least - 1,
                **limits,
            )
        with pytest.raises(ValueError, match=f"max_write_buffer must be >= {least}"):
            connect(
                url,
                token=TOKEN,
                capabilities=["sessions.v1"],
                max_write_buffer=least - 1,
                **limits,
            )
        serve(agent, host="127.0.0.1", token=TOKEN, max_write_buffer=least, **limits)
        connect(
            url,
            token=TOKEN,
            capabilities=["sessions.v1"],
            max_write_buffer=least,
            **limits,
        )
