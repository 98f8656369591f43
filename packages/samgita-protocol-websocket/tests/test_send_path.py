"""The per message paths: the listener's send (a send that does not wait, one
that does and is cancelled, send_encoded) and both sides taking text messages
as ``str`` (invalid UTF-8 closed 1007 by ``websockets``, with that code in
the listener's close record and on the session; a binary message 1003)."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
import samgita_protocol as core
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from samgita_protocol_websocket import CloseCode, connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

GROUPS = ["sessions.v1", "streaming.v1"]


async def _raw_peer(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw-socket client that upgrades and initializes, then reads only when told."""
    import socket

    from rawws import TEXT, frame, upgrade_headers

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    lines = ["GET /app-server HTTP/1.1", "Host: x"]
    lines += [f"{k}: {v}" for k, v in upgrade_headers("tok")]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
    init = (
        '{"schema_version":"1.0","type":"request","id":"1","correlation_id":"1",'
        '"method":"connection/initialize","params":{"versions":["1.0"],'
        '"capabilities":["sessions.v1","streaming.v1"]}}'
    )
    writer.write(frame(TEXT, init.encode()))
    return reader, writer


async def _read_on(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass


def test_a_cancelled_waiting_send_leaves_the_connection_usable() -> None:
    conns: list[Any] = []

    def make(info: Any) -> Any:
        conns.append(info.connection)
        return FakeAgent(AgentState(), info.connection)

    big = core.ItemDeltaParams(
        thread_id="t", turn_id="u", item_id="i", delta="x" * 200_000
    )
    small = core.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="y")

    async def main() -> None:
        async with serve(
            make,
            host="127.0.0.1",
            token="tok",
            write_limit=1024,
            send_timeout=10,
            ping_interval=None,
        ) as lis:
            reader, writer = await _raw_peer(lis.port)
            for _ in range(300):
                if conns and conns[0]._server is not None:
                    if conns[0].server.state != "new":
                        break
                await asyncio.sleep(0.01)
            conn = conns[0]
            # The peer does not read: a direct send of a large message waits
            # (above write_limit), within send_timeout.
            waiting = asyncio.create_task(conn.notify("item/delta", big))
            for _ in range(100):
                await asyncio.sleep(0.02)
                if waiting.done():
                    waiting.result()  # it fit the buffers: try a larger pile
                    waiting = asyncio.create_task(conn.notify("item/delta", big))
                    continue
                break
            assert not waiting.done()
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert not conn.closed and conn.close_reason is None
            # Once the peer reads, the next send goes through on the same connection.
            drain = asyncio.create_task(_read_on(reader))
            sent = await asyncio.wait_for(conn.notify("item/delta", small), 5)
            assert sent.params.delta == "y"
            assert not conn.closed
            drain.cancel()
            writer.close()

    asyncio.run(asyncio.wait_for(main(), 20))


def test_listener_closes_invalid_utf8_1007_and_logs_that_code(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from rawws import TEXT, RawClient, frame, upgrade_headers

    caplog.set_level(logging.INFO)

    async def main() -> None:
        async with serve(
            lambda info: FakeAgent(AgentState(), info.connection),
            host="127.0.0.1",
            token="tok",
        ) as lis:

            def peer() -> int | None:
                raw = RawClient(lis.port)
                try:
                    assert raw.request(headers=upgrade_headers("tok")).status == 101
                    raw.send(frame(TEXT, b'{"x":"\xc0\xaf"}'))
                    return raw.read_close()
                finally:
                    raw.close()

            assert await asyncio.to_thread(peer) == CloseCode.INVALID_PAYLOAD
            for _ in range(200):
                if lis.active_connections == 0:
                    break
                await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(main(), 20))
    closed = [
        r.getMessage()
        for r in caplog.records
        if r.name == "samgita_protocol_websocket.server"
        and " closed: " in r.getMessage()
    ]
    assert len(closed) == 1 and " closed: code 1007 (" in closed[0], closed


def test_send_encoded_checks_type_and_size_and_sends() -> None:
    conns: list[Any] = []

    def make(info: Any) -> Any:
        conns.append(info.connection)
        return FakeAgent(AgentState(), info.connection)

    async def main() -> None:
        async with serve(make, host="127.0.0.1", token="tok", max_size=4096) as lis:
            async with connect(lis.url, token="tok", capabilities=GROUPS) as s:
                conn = conns[0]
                replay = core.Replay("st-1")
                outgoing = replay.append(
                    core.Notification(
                        method="item/delta",
                        params=core.ItemDeltaParams(
                            thread_id="t", turn_id="u", item_id="i", delta="d"
                        ),
                    )
                )
                await conn.send_encoded(outgoing.data)
                got = await s.next_notification(5)
                assert got is not None
                assert got.cursor == 1 and got.params.delta == "d"
                with pytest.raises(TypeError):
                    await conn.send_encoded("text")
                with pytest.raises(core.ProtocolError) as info:
                    await conn.send_encoded(b"x" * 4097)
                assert info.value.code == "message_too_large"
                assert info.value.origin == "local"

    asyncio.run(asyncio.wait_for(main(), 20))


_GOOD = (
    b'{"schema_version":"1.0","type":"notification","method":"thread/closed",'
    b'"params":{"thread_id":"t"}}'
)


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        # Invalid UTF-8 where a JSON parser could skip it: in a string value
        # and in an unknown member, each after a valid message.
        ([_GOOD, _GOOD.replace(b'"t"', b'"t\xed\xa0\x80"')], CloseCode.INVALID_PAYLOAD),
        (
            [_GOOD, _GOOD.replace(b'"params"', b'"x":"\xff","params"')],
            CloseCode.INVALID_PAYLOAD,
        ),
        ([b"\xc0\xaf"], CloseCode.INVALID_PAYLOAD),
        # A binary message after a text one: the text is still delivered.
        ([_GOOD, "binary"], CloseCode.UNSUPPORTED_DATA),
    ],
    ids=["surrogate-in-string", "ff-in-unknown-member", "overlong", "binary"],
)
def test_client_takes_bytes_and_closes_1007_or_1003(
    frames: list[Any], code: int
) -> None:
    seen: list[int | None] = []

    async def raw_server(ws: Any) -> None:
        try:
            async for text in ws:
                msg = json.loads(text)
                if msg["method"] == "connection/initialize":
                    await ws.send(
                        json.dumps(
                            {
                                "schema_version": "1.0",
                                "type": "response",
                                "id": msg["id"],
                                "correlation_id": msg["correlation_id"],
                                "result": {
                                    "version": "1.0",
                                    "capabilities": ["sessions.v1"],
                                    "connection_id": "c",
                                    "host_id": "h",
                                },
                            }
                        )
                    )
                    for f in frames:
                        if f == "binary":
                            await ws.send(b"{}")
                        else:
                            # websockets sends bytes as text without checking them.
                            await ws.send(f, text=True)
        except ConnectionClosed:
            pass
        seen.append(ws.close_code)

    async def main() -> None:
        async with ws_serve(raw_server, "127.0.0.1", 0) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["sessions.v1"],
            ) as s:
                await asyncio.wait_for(s.wait_disconnected(), 5)
                assert s.close_code == code
                got = s.take_notifications()
                assert [n.method for n in got] == ["thread/closed"] * (len(frames) - 1)
        assert seen == [code]

    asyncio.run(asyncio.wait_for(main(), 20))
