"""The per message paths: the listener's send (a send that does not wait, one
that does, send_encoded) and the client session taking messages as bytes
(the core's UTF-8 check closes 1007, a binary message 1003)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import samgita_protocol as core
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from samgita_protocol_websocket import CloseCode, connect, serve
from samgita_protocol_websocket._server_loop import _Resume
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

GROUPS = ["sessions.v1", "streaming.v1"]


async def _waits(fut: asyncio.Future[int], log: list[str]) -> int:
    try:
        value = await fut
        log.append(f"got {value}")
        await asyncio.sleep(0)  # a bare yield is passed on too
        return value
    except asyncio.CancelledError:
        log.append("cancelled")
        raise
    finally:
        log.append("finally")


def test_resume_finishes_a_started_coroutine_like_await() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        log: list[str] = []
        coro = _waits(fut, log)
        step = coro.send(None)
        assert step is fut
        loop.call_soon(fut.set_result, 7)
        await _Resume(coro, step)
        assert log == ["got 7", "finally"]

    asyncio.run(main())


def test_resume_passes_cancellation_and_timeout_on() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        log: list[str] = []
        coro = _waits(fut, log)
        step = coro.send(None)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await _Resume(coro, step)
        assert log == ["cancelled", "finally"]
        assert fut.cancelled()

    asyncio.run(main())


def test_resume_passes_exceptions_on() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        log: list[str] = []
        coro = _waits(fut, log)
        step = coro.send(None)
        loop.call_soon(fut.set_exception, ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            await _Resume(coro, step)
        assert log == ["finally"]

    asyncio.run(main())


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
