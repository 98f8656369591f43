"""Gaps a review found (issue 12): each test failed before its fix."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from samgita_protocol_websocket import (
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
