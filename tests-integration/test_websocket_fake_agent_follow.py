"""Two fake Agents on one PostgreSQL database (issue 22): a client that
drops its connection to node A while A streams a turn, connects to node B
and resumes the stream there from its checkpoint keeps receiving the
events A still appends, live (B follows the stream with
``PostgresReplayLog.wait_for``, woken by A's ``NOTIFY``): every cursor
once, in order, through ``turn/completed``. And B stops cleanly (SIGTERM,
exit 0) while it follows a stream.

Two ``samgita-fake-agent --store postgresql://...`` processes; the
database is a private server (the core's test helper,
``packages/samgita-protocol/tests/postgres_server.py``) or
``$SAMGITA_POSTGRES_DSN``; when neither is possible the test fails, never
skips. The same scenario without PostgreSQL (a memory log with a live
tail) is the WebSocket package's ``tests/test_follow.py``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import samgita_protocol as core

ROOT = Path(__file__).resolve().parent.parent
# Appended, not prepended: these helpers' names shadow nothing here.
sys.path.append(str(ROOT / "packages" / "samgita-protocol" / "tests"))
sys.path.append(str(ROOT / "packages" / "samgita-protocol-websocket" / "tests"))

from agent_restart import TOKEN, agent, last_cursor
from postgres_server import Database, Unavailable, database, uri
from samgita_protocol_websocket import Session, connect

HOST = "fake-agent"
# No approvals offered: A's approval/request is refused by the client's
# capabilities and expires after --approval-timeout; the turn goes on.
GROUPS = ["sessions.v1", "streaming.v1"]
DELTAS = 10
# item/started, the deltas, item/completed; the tool item; the second
# message item; turn/completed (about 2.3 s at 0.08 s an event).
EVENTS = 2 * (DELTAS + 2) + 2
TAKEN = 3


@pytest.fixture(scope="module")
def postgres() -> Iterator[Database]:
    """A database for this module (a private server, stopped after it)."""
    try:
        with database() as db:
            yield db
    except Unavailable as missing:
        pytest.fail(str(missing), pytrace=False)


def _session(url: str, checkpoints: dict[str, int] | None = None) -> connect:
    return connect(
        url, token=TOKEN, capabilities=GROUPS, host_id=HOST, checkpoints=checkpoints
    )


async def _take(s: Session, into: list[int]) -> core.Notification:
    """The next notification; a sequenced one is recorded and acknowledged."""
    n = await s.next_notification(timeout=10)
    if n.cursor is not core.UNSET:
        into.append(n.cursor)
        s.ack(n)
    return n


async def _turn(s: Session, command: str) -> str:
    """A thread and a turn on ``s``: the turn's stream id."""
    thread = (await s.request("thread/start", {}, command_id=command + "-t")).thread
    started = await s.request(
        "turn/start",
        {"thread_id": thread.thread_id, "input": [{"type": "text", "text": "x"}]},
        command_id=command + "-u",
    )
    return str(started.turn.turn_id)


async def _move_to_b(url_a: str, url_b: str, spec: str) -> None:
    cursors: list[int] = []
    async with _session(url_a) as first:
        stream = await _turn(first, "c1")
        while len(cursors) < TAKEN:
            await _take(first, cursors)
        checkpoints = first.checkpoints()
        first.abort()  # A streams on, to nobody
        await first.wait_disconnected()
    assert checkpoints == {stream: TAKEN}
    async with _session(url_b, checkpoints) as second:
        count = await second.resume(stream)
        while (await _take(second, cursors)).method != "turn/completed":
            pass
        # Each event once, in order: B's page, then A's new events live.
        assert cursors == list(range(1, EVENTS + 1))
        assert last_cursor(spec, stream) == EVENTS
        assert EVENTS - (TAKEN + count) >= 1  # appended by A after B's page


async def _stop_b_while_following(
    url_a: str, url_b: str, proc_b: subprocess.Popen[str]
) -> None:
    async with _session(url_a) as a:
        stream = await _turn(a, "c2")
        await a.next_notification(timeout=10)  # A has appended to it
        async with _session(url_b) as b:
            cursors: list[int] = []
            count = await b.resume(stream)
            while len(cursors) <= count:  # one event past the page: followed
                await _take(b, cursors)
            assert cursors == list(range(1, count + 2))
            proc_b.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc_b.wait, 10) == 0


def test_a_stream_resumed_on_another_node_keeps_arriving_live(
    postgres: Database, tmp_path: Path
) -> None:
    spec = uri(postgres.fresh())
    options = ("--store", spec, "--deltas", str(DELTAS))
    options += ("--delta-interval", "0.08", "--approval-timeout", "0.3")
    with agent(tmp_path, *options) as (proc_a, url_a):
        with agent(tmp_path, *options) as (proc_b, url_b):
            asyncio.run(asyncio.wait_for(_move_to_b(url_a, url_b, spec), 60))
            asyncio.run(
                asyncio.wait_for(_stop_b_while_following(url_a, url_b, proc_b), 60)
            )
            assert proc_b.stderr is not None
            assert "Traceback" not in proc_b.stderr.read()
        proc_a.send_signal(signal.SIGTERM)
        assert proc_a.wait(10) == 0
        assert proc_a.stderr is not None
        assert "Traceback" not in proc_a.stderr.read()
