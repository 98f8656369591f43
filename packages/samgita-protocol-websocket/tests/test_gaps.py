"""Gaps a review found (issue 12): each test failed before its fix."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import samgita_protocol as core
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from samgita_protocol_websocket import (
    CloseCode,
    HandshakeRejected,
    HandshakeRequest,
    connect,
    serve,
)
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def factory() -> Any:
    return FakeAgent.factory(AgentState(message_deltas=2, delta_interval=0.0))


async def _status(url: str, token: str) -> int | None:
    try:
        async with connect(url, token=token, capabilities=["sessions.v1"]):
            return None
    except HandshakeRejected as exc:
        return exc.status


@pytest.mark.parametrize("refusal", [False, None, 0, "", {}])
def test_authenticator_returning_false_or_falsy_refuses_401(refusal: object) -> None:
    def predicate(request: HandshakeRequest) -> object:
        return True if request.authorization == ("Bearer right",) else refusal

    async def main() -> None:
        async with serve(factory(), host="127.0.0.1", authenticator=predicate) as lis:
            assert await _status(lis.url, "WRONG") == 401
            assert await _status(lis.url, "right") is None

    asyncio.run(asyncio.wait_for(main(), 20))


def _init_response(msg: dict[str, Any]) -> str:
    return json.dumps(
        {
            "schema_version": "1.0",
            "type": "response",
            "id": msg["id"],
            "correlation_id": msg["correlation_id"],
            "result": {
                "version": "1.0",
                "capabilities": msg["params"]["capabilities"],
                "connection_id": "c1",
                "host_id": "h",
            },
        }
    )


def _closed_notification(cursor: int) -> str:
    return json.dumps(
        {
            "schema_version": "1.0",
            "type": "notification",
            "method": "thread/closed",
            "params": {"thread_id": "t"},
            "stream_id": "s1",
            "cursor": cursor,
        }
    )


def test_cursor_gap_from_the_peer_closes_1002_and_the_mutation_turns_uncertain() -> (
    None
):
    seen_close: list[int | None] = []

    async def raw_server(ws: Any) -> None:
        try:
            async for text in ws:
                msg = json.loads(text)
                if msg["method"] == "connection/initialize":
                    await ws.send(_init_response(msg))
                elif msg["method"] == "thread/start":
                    for cursor in (1, 3):  # cursor 2 skipped
                        await ws.send(_closed_notification(cursor))
        except ConnectionClosed:
            pass
        seen_close.append(ws.close_code)

    async def main() -> None:
        async with ws_serve(raw_server, "127.0.0.1", 0) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["sessions.v1", "streaming.v1"],
            ) as s:
                with pytest.raises(core.ProtocolError) as err:
                    await s.request("thread/start", {}, command_id="cmd-1")
                assert err.value.code == core.ErrorCode.AMBIGUOUS_DISCONNECT
                assert [r.command_id for r in s.uncertain.values()] == ["cmd-1"]
                await s.wait_disconnected()
                assert not s.connected
                assert s.close_code == CloseCode.PROTOCOL_ERROR
                assert s.close_reason is not None and "cursor_gap" in s.close_reason
                delivered = [n.cursor for n in s.take_notifications()]
                assert delivered == [1]  # 3 was never handed out
        assert seen_close == [CloseCode.PROTOCOL_ERROR]

    asyncio.run(asyncio.wait_for(main(), 20))
