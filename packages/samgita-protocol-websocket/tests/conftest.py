"""Fixtures: listeners running on an event loop in a background thread, for blocking raw sockets."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

TOKEN = "test-token-5b0f1c9e7a"


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.contexts: list[Any] = []

    def run(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start_listener(self, **kwargs: Any) -> Any:
        from samgita_protocol_websocket import serve
        from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

        kwargs.setdefault("host", "127.0.0.1")
        kwargs.setdefault("token", TOKEN)
        factory = kwargs.pop("handler_factory", None) or FakeAgent.factory(AgentState())

        async def enter() -> Any:
            ctx = serve(factory, **kwargs)
            listener = await ctx.__aenter__()
            self.contexts.append(ctx)
            return listener

        return self.run(enter())

    def stop(self) -> None:
        async def leave() -> None:
            for ctx in reversed(self.contexts):
                await ctx.__aexit__(None, None, None)

        self.run(leave(), timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[LoopThread]:
    lt = LoopThread()
    yield lt
    lt.stop()


@pytest.fixture(scope="session")
def start_listener(loop_thread: LoopThread) -> Callable[..., Any]:
    return loop_thread.start_listener
