"""The listener's send path: a send that does not wait, one that does, and send_encoded."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import samgita_protocol as core

from samgita_protocol_websocket import connect, serve
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
                event = replay.append(
                    core.Notification(
                        method="item/delta",
                        params=core.ItemDeltaParams(
                            thread_id="t", turn_id="u", item_id="i", delta="d"
                        ),
                    )
                )
                await conn.send_encoded(replay.encode(event))
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
