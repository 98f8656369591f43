"""A resume page and the live events right behind it (issue 18, item 4): failed before its fix.

An Agent may answer ``stream/resume`` and send the stream's next live event
at once; the client must ingest the page before that event, whatever the
timing, so the event continues the page instead of ending the connection
with ``cursor_gap`` (1002).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from samgita_protocol_websocket import connect

STREAM = "s1"
PAGE = 3
CYCLES = 100


def _event(cursor: int) -> dict[str, Any]:
    return {
        "schema_version": "1.0",
        "type": "notification",
        "method": "thread/closed",
        "params": {"thread_id": "t"},
        "stream_id": STREAM,
        "cursor": cursor,
    }


def _response(msg: dict[str, Any], result: dict[str, Any]) -> str:
    return json.dumps(
        {
            "schema_version": "1.0",
            "type": "response",
            "id": msg["id"],
            "correlation_id": msg["correlation_id"],
            "result": result,
        }
    )


def _initialized(msg: dict[str, Any]) -> str:
    capabilities = msg["params"]["capabilities"]
    return _response(
        msg,
        {
            "version": "1.0",
            "capabilities": capabilities,
            "connection_id": "c1",
            "host_id": "h",
        },
    )


async def _page_then_live(ws: ServerConnection, msg: dict[str, Any]) -> None:
    # The page after the requested cursor, then the stream's next event, with
    # no await that could yield between the two sends: the client's reader
    # finds both messages waiting.
    after = msg["params"]["cursor"]
    events = [_event(after + i) for i in range(1, PAGE + 1)]
    page = {"stream_id": STREAM, "cursor": after + PAGE, "events": events}
    await ws.send(_response(msg, {**page, "has_more": False}))
    await ws.send(json.dumps(_event(after + PAGE + 1)))


async def _agent(ws: ServerConnection) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for text in ws:
            msg = json.loads(text)
            if msg["method"] == "connection/initialize":
                await ws.send(_initialized(msg))
            elif msg["method"] == "stream/resume":
                await _page_then_live(ws, msg)


async def _take(s: Any, count: int) -> list[int]:
    cursors: list[int] = []
    for _ in range(count):
        try:
            notification = await s.next_notification(timeout=5)
        except (TimeoutError, EOFError):
            pytest.fail(f"connection ended: {s.close_code} {s.close_reason}")
        cursors.append(notification.cursor)
        s.ack(notification)
    return cursors


@pytest.mark.parametrize("max_notifications", [1024, 2])
def test_live_event_right_behind_a_resume_page_continues_it(
    max_notifications: int,
) -> None:
    async def main() -> None:
        async with ws_serve(_agent, "127.0.0.1", 0) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["sessions.v1", "streaming.v1"],
                max_notifications=max_notifications,
            ) as s:
                cursors: list[int] = []
                for _ in range(CYCLES):
                    # Resumes from the checkpoint: everything taken is acked.
                    assert await s.resume(STREAM) == PAGE
                    cursors += await _take(s, PAGE + 1)
                assert s.connected and s.close_code is None
                assert s.take_notifications() == []
                assert cursors == list(range(1, CYCLES * (PAGE + 1) + 1))
                assert s.checkpoints() == {STREAM: CYCLES * (PAGE + 1)}

    asyncio.run(asyncio.wait_for(main(), 30))
