"""The fake Agent across nodes sharing one store (issue 22): a client that
resumes, on node B, a stream node A still appends to keeps receiving A's
events live, when the store has a live tail (``wait_for``); on a store
without one (memory, SQLite) B serves pages only, as before. And
``--approval-timeout``, which lets such a turn go on when nobody answers
its approval.

The live tail here is :class:`TailedLog`, a memory replay log with a
``wait_for`` (this package's tests run without PostgreSQL); the same
scenario on a real PostgreSQL database, with two ``samgita-fake-agent``
processes, is ``tests-integration/test_websocket_fake_agent_follow.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core
from samgita_protocol.stores import MemoryInbox, MemoryReplayLog
from samgita_protocol.stores.sqlite import SqliteStore

from agent_restart import TOKEN, agent, ignore_requests
from samgita_protocol_websocket import Session, connect, serve
from samgita_protocol_websocket.fake_agent import (
    AgentState,
    AgentStore,
    FakeAgent,
    OpenedStore,
    main,
)

HOST = "fake-agent"
# No approvals offered: node A's approval/request finds no one, expires
# after APPROVAL seconds, and the turn goes on.
GROUPS = ["sessions.v1", "streaming.v1"]
DELTAS = 8
INTERVAL = 0.05
APPROVAL = 0.2
# item/started, the deltas, item/completed; the tool item; the second
# message item; turn/completed (about 1.3 s of streaming).
EVENTS = 2 * (DELTAS + 2) + 2
TAKEN = 3


class TailedLog(MemoryReplayLog):
    """A memory replay log with a live tail, as ``PostgresReplayLog`` has:
    ``wait_for`` blocks its thread until the stream passes ``after``."""

    def __init__(self) -> None:
        super().__init__()
        self._appended = threading.Condition()

    def append(
        self,
        stream_id: str,
        encode_at: Callable[[int], bytes],
        *,
        now: float | None = None,
    ) -> int:
        cursor = super().append(stream_id, encode_at, now=now)
        with self._appended:
            self._appended.notify_all()
        return cursor

    def wait_for(self, stream_id: str, after: int, *, timeout: float) -> int:
        with self._appended:
            self._appended.wait_for(
                lambda: self.last_cursor(stream_id) > after, timeout
            )
        return self.last_cursor(stream_id)


@contextlib.asynccontextmanager
async def node(
    store: AgentStore,
    agents: list[FakeAgent] | None = None,
    *,
    deltas: int = DELTAS,
    approval: float = APPROVAL,
) -> AsyncIterator[str]:
    """A fake Agent on ``store`` (one node); its URL. ``agents`` collects
    the handler of each connection it accepts."""
    state = AgentState(
        message_deltas=deltas,
        delta_interval=INTERVAL,
        approval_timeout=approval,
        store=store,
    )
    factory = FakeAgent.factory(state)

    def handler(info: Any) -> FakeAgent:
        made = factory(info)
        if agents is not None:
            agents.append(made)
        return made

    async with serve(handler, host="127.0.0.1", token=TOKEN, host_id=HOST) as lis:
        yield lis.url


def session(url: str, checkpoints: dict[str, int] | None = None) -> connect:
    return connect(
        url, token=TOKEN, capabilities=GROUPS, host_id=HOST, checkpoints=checkpoints
    )


async def take(s: Session, into: list[int]) -> core.Notification:
    """The next notification; a sequenced one is recorded and acknowledged."""
    n = await s.next_notification(timeout=5)
    if n.cursor is not core.UNSET:
        into.append(n.cursor)
        s.ack(n)
    return n


async def start_on_a(url_a: str, cursors: list[int]) -> tuple[str, dict[str, int]]:
    """On node A: a thread and a turn, ``TAKEN`` events processed, then the
    connection dropped while A streams on. The turn (its stream id) and
    the client's checkpoints."""
    async with session(url_a) as first:
        thread = (await first.request("thread/start", {}, command_id="t")).thread
        turn = (
            await first.request(
                "turn/start",
                {
                    "thread_id": thread.thread_id,
                    "input": [{"type": "text", "text": "x"}],
                },
                command_id="u",
            )
        ).turn
        while len(cursors) < TAKEN:
            await take(first, cursors)
        checkpoints = first.checkpoints()
        first.abort()
        await first.wait_disconnected()
    assert checkpoints == {turn.turn_id: TAKEN}
    return turn.turn_id, checkpoints


def record_live(agent: FakeAgent) -> list[int]:
    """The cursors of the events the Agent sends on ``agent``'s connection
    from now on outside a response (``send_encoded``: its live events)."""
    conn = agent.connection
    sent: list[int] = []
    send = conn.send_encoded

    async def recording(data: bytes) -> None:
        sent.append(json.loads(data)["cursor"])
        await send(data)

    conn.send_encoded = recording  # type: ignore[method-assign]
    return sent


def followed(agent: FakeAgent) -> set[str]:
    """The streams a follower serves on the connection of ``agent``."""
    return set(agent._followers._tasks)


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_a_stream_resumed_on_another_node_keeps_arriving_live() -> None:
    async def main_() -> None:
        store = OpenedStore("tailed", MemoryInbox(), TailedLog())
        agents: list[FakeAgent] = []
        async with node(store) as url_a, node(store, agents) as url_b:
            cursors: list[int] = []
            stream, checkpoints = await start_on_a(url_a, cursors)
            async with session(url_b, checkpoints) as second:
                live = record_live(agents[-1])
                count = await second.resume(stream)
                # Served by B's page: the events A appended up to then.
                paged = TAKEN + count
                assert paged < EVENTS
                while (await take(second, cursors)).method != "turn/completed":
                    pass
                # Each event once, in order: the page, then A's new ones live
                # (sent by B, each once, after the page).
                assert cursors == list(range(1, EVENTS + 1))
                assert store.replay_log.last_cursor(stream) == EVENTS
                assert live == list(range(paged + 1, EVENTS + 1))
                assert len(live) >= 1  # appended by A after B's page
                await until(lambda: not followed(agents[-1]))  # stopped at the end
                assert second.take_notifications() == []
                # The stream has ended: resuming it again starts no follower.
                assert await second.resume(stream) == 0
                assert followed(agents[-1]) == set()

    asyncio.run(asyncio.wait_for(main_(), 30))


def test_a_second_resume_replaces_the_follower() -> None:
    async def main_() -> None:
        store = OpenedStore("tailed", MemoryInbox(), TailedLog())
        agents: list[FakeAgent] = []
        async with node(store) as url_a, node(store, agents) as url_b:
            cursors: list[int] = []
            stream, checkpoints = await start_on_a(url_a, cursors)
            async with session(url_b, checkpoints) as second:
                live = record_live(agents[-1])
                await second.resume(stream)
                first = agents[-1]._followers._tasks[stream]
                await take(second, cursors)
                # The same stream again on the same connection, from the
                # checkpoint: one follower still, the new one.
                await second.resume(stream)
                assert followed(agents[-1]) == {stream}
                assert agents[-1]._followers._tasks[stream] is not first
                await until(first.done)
                while (await take(second, cursors)).method != "turn/completed":
                    pass
                assert cursors == list(range(1, EVENTS + 1))
                # Never an event twice, never out of order, on the wire.
                assert live == sorted(set(live)) and live[-1] == EVENTS

    asyncio.run(asyncio.wait_for(main_(), 30))


def test_a_closed_connection_ends_its_follower_at_once() -> None:
    async def main_() -> None:
        store = OpenedStore("tailed", MemoryInbox(), TailedLog())
        agents: list[FakeAgent] = []
        # Node A streams its first item (3 events) and then waits for an
        # approval for a long time: the stream is idle.
        async with (
            node(store, deltas=1, approval=10) as url_a,
            node(store, agents) as url_b,
        ):
            cursors: list[int] = []
            stream, checkpoints = await start_on_a(url_a, cursors)
            async with session(url_b, checkpoints) as second:
                assert await second.resume(stream) == 0
                assert followed(agents[-1]) == {stream}
                task = agents[-1]._followers._tasks[stream]
                second.abort()
                await second.wait_disconnected()
                # Well within the follower's own FOLLOW_WAIT (1 s).
                await until(task.done, 0.3)
                assert task.cancelled()
                assert followed(agents[-1]) == set()

    asyncio.run(asyncio.wait_for(main_(), 30))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_without_a_live_tail_another_nodes_stream_is_served_page_by_page(
    tmp_path: Path, kind: str
) -> None:
    async def main_() -> None:
        if kind == "memory":
            shared = OpenedStore("memory", MemoryInbox(), MemoryReplayLog())
            store_a: AgentStore = shared
            store_b: AgentStore = shared
        else:  # two nodes, each with its own connection to one file
            store_a = SqliteStore(tmp_path / "agent.db")
            store_b = SqliteStore(tmp_path / "agent.db")
        log = store_a.replay_log
        agents: list[FakeAgent] = []
        async with node(store_a) as url_a, node(store_b, agents) as url_b:
            cursors: list[int] = []
            stream, checkpoints = await start_on_a(url_a, cursors)
            async with session(url_b, checkpoints) as second:
                count = await second.resume(stream)
                assert followed(agents[-1]) == set()
                while len(cursors) < TAKEN + count:
                    await take(second, cursors)
                await until(lambda: log.last_cursor(stream) == EVENTS)
                await asyncio.sleep(0.3)  # a follower would have sent by now
                assert second.take_notifications() == []
                # The old behaviour: the rest on the next resume.
                assert await second.resume(stream) == EVENTS - TAKEN - count > 0
                while len(cursors) < EVENTS:
                    await take(second, cursors)
                assert cursors == list(range(1, EVENTS + 1))
        if isinstance(store_a, SqliteStore) and isinstance(store_b, SqliteStore):
            store_a.close()
            store_b.close()

    asyncio.run(asyncio.wait_for(main_(), 30))


# -- --approval-timeout ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e10"])
def test_approval_timeout_out_of_range_exits_2_naming_the_flag(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    argv = ["--token-file", str(token_file), f"--approval-timeout={value}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--approval-timeout must be a positive number of seconds" in err
    assert f"got {float(value)}" in err


def test_approval_timeout_not_a_number_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with pytest.raises(SystemExit) as exited:
        main(["--token-file", str(token_file), "--approval-timeout", "soon"])
    assert exited.value.code == 2
    assert "--approval-timeout: invalid float value: 'soon'" in capsys.readouterr().err


def test_approval_timeout_lets_an_unanswered_turn_go_on_expired(
    tmp_path: Path,
) -> None:
    options = ("--deltas", "1", "--delta-interval", "0", "--approval-timeout", "0.3")

    async def run(url: str) -> tuple[float, list[core.Notification]]:
        groups = [*GROUPS, "approvals.v1"]
        async with connect(
            url, token=TOKEN, capabilities=groups, on_request=ignore_requests
        ) as s:
            thread = (await s.request("thread/start", {}, command_id="t")).thread
            started = time.monotonic()
            await s.request(
                "turn/start",
                {
                    "thread_id": thread.thread_id,
                    "input": [{"type": "text", "text": "x"}],
                },
                command_id="u",
            )
            seen = [await s.next_notification(timeout=10)]
            while seen[-1].method != "turn/completed":
                seen.append(await s.next_notification(timeout=10))
            return time.monotonic() - started, seen

    with agent(tmp_path, *options) as (proc, url):
        took, seen = asyncio.run(asyncio.wait_for(run(url), 30))
    tools = [
        n.params.item
        for n in seen
        if n.method == "item/completed" and n.params.item.type == "tool_call"
    ]
    assert [(t.text, t.status) for t in tools] == [
        ("write_file: skipped (expired)", "failed")
    ]
    assert 0.3 <= took < 10  # the flag's 0.3 s, not the default 30 s
