"""The fake Agent killed with SIGKILL and restarted on the same store (a test
helper, not a test module): ``kill_and_restart(tmp_path, spec)`` runs the
whole scenario against ``samgita-fake-agent --store SPEC`` and asserts
that nothing was lost and nothing done twice. Run on SQLite by
``test_fake_agent_store.py``, and on PostgreSQL by
``tests-integration/test_websocket_fake_agent_postgres.py``."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import samgita_protocol as core

from samgita_protocol_websocket import Session, connect
from samgita_protocol_websocket.fake_agent import open_store

TOKEN = "restart-token-3c5d7a"
GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]
EVENT = core.Event(
    event_id="evt-1",
    delivery_attempt_id="attempt-1",
    created_at="2026-12-03T10:00:00Z",
    correlation_id="flow-1",
    event_type="task.created",
    payload={"title": "one"},
)
# Enough that the client, cut after cursor 3, misses many (a resume has work).
DELTAS = 20
# The first item: item/started, the deltas, item/completed; then the turn
# waits for an approval no one answers.
FIRST_ITEM = DELTAS + 2


def ignore_requests(request: Any) -> None:
    """``on_request`` leaving the Agent's approval requests unanswered."""


@contextlib.contextmanager
def agent(
    tmp_path: Path, *options: str, port: int = 0, token: str = TOKEN
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The console script on ``port`` of loopback, and the URL it printed."""
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "samgita_protocol_websocket.fake_agent", "--port", str(port),
         "--token-file", str(token_file), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url, proc.stderr.read() if proc.stderr else "no URL"
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def take_all(s: Session, into: list[int]) -> None:
    """Take the queued notifications; record and acknowledge the sequenced ones."""
    for n in s.take_notifications():
        if n.cursor is not core.UNSET:
            into.append(n.cursor)
            s.ack(n)


def last_cursor(spec: str, stream_id: str) -> int:
    """The last cursor of ``stream_id`` in the store ``spec`` names."""
    store = open_store(spec)
    try:
        return store.replay_log.last_cursor(stream_id)
    finally:
        store.close()


async def _first(s: Session, proc: subprocess.Popen[str], spec: str) -> dict[str, Any]:
    # A thread, an event and a turn; cut after cursor 3, then SIGKILL once
    # the Agent appended the rest of the first item to nobody.
    started = await s.request("thread/start", {}, command_id="c-thread")
    received = await s.request(
        "project/event.receive", {"event": EVENT}, command_id="c-event"
    )
    assert received.acceptance == "durable"
    turn = (
        await s.request(
            "turn/start",
            {
                "thread_id": started.thread.thread_id,
                "input": [{"type": "text", "text": "x"}],
            },
            command_id="c-turn",
        )
    ).turn
    cursors: list[int] = []
    while not cursors or cursors[-1] < 3:
        await asyncio.sleep(0.02)
        take_all(s, cursors)
    s.abort()
    await s.wait_disconnected()
    while last_cursor(spec, turn.turn_id) < FIRST_ITEM:
        await asyncio.sleep(0.02)
    proc.kill()
    assert proc.wait(10) == -signal.SIGKILL
    return {"started": started, "received": received, "turn": turn, "cursors": cursors}


async def _second(s: Session, spec: str, before: dict[str, Any]) -> None:
    turn_id = before["turn"].turn_id
    cursors: list[int] = before["cursors"]
    take_all(s, cursors)  # what arrived before the cut
    # The same commands again: the first process's receipts, not new
    # effects (this process would name a thread with a tag of its own).
    again = await s.request("thread/start", {}, command_id="c-thread")
    assert again == before["started"]
    assert (
        await s.request("project/event.receive", {"event": EVENT}, command_id="c-event")
        == before["received"]
    )
    turn = await s.request(
        "turn/start",
        {
            "thread_id": again.thread.thread_id,
            "input": [{"type": "text", "text": "x"}],
        },
        command_id="c-turn",
    )
    assert turn.turn == before["turn"]
    # The event the first process received, answered from the store.
    status = await s.request("project/event.status", {"event_id": "evt-1"})
    assert (status.acceptance, status.processing_status) == ("durable", "pending")
    # Resumed from the checkpoint: exactly the events not yet processed.
    checkpoint = s.checkpoints()[turn_id]
    assert checkpoint == cursors[-1] >= 3
    last = last_cursor(spec, turn_id)
    assert last >= FIRST_ITEM > checkpoint
    assert await s.resume(turn_id) == last - checkpoint
    take_all(s, cursors)
    assert cursors == list(range(1, last + 1))
    assert last_cursor(spec, turn_id) == last  # no turn was run again


def kill_and_restart(tmp_path: Path, spec: str) -> None:
    """The scenario: a client of ``samgita-fake-agent --store SPEC`` starts a
    thread, delivers an event, starts a turn and processes a few events;
    the connection is cut, the Agent killed with SIGKILL once it appended
    more, and restarted with the same command line on the same port. The
    client reconnects: the same commands get the first receipts, the
    event's status is answered, and the stream resumes from the checkpoint
    with the events the first process appended, each once, in order."""
    options = ("--store", spec, "--deltas", str(DELTAS), "--delta-interval", "0.02")

    async def run(proc: subprocess.Popen[str], url: str) -> None:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        async with connect(
            url, token=TOKEN, capabilities=GROUPS, on_request=ignore_requests
        ) as s:
            before = await _first(s, proc, spec)
            with agent(tmp_path, *options, port=port) as (restarted, again):
                assert again == url
                init = await s.reconnect()
                assert init.host_id == "fake-agent"
                await _second(s, spec, before)
                await s.aclose()
                restarted.send_signal(signal.SIGTERM)
                assert restarted.wait(10) == 0

    with agent(tmp_path, *options) as (proc, url):
        asyncio.run(asyncio.wait_for(run(proc, url), 60))
