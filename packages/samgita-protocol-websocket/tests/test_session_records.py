"""A session given the caller's stores, ``connect(..., host_id=...,
journal=..., checkpoint_store=...)``: a client process that restarts holds
its unsettled mutations as uncertain (never re-sent) and resumes its
streams from the stored checkpoints."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core
from samgita_protocol.stores import MemoryCheckpoints, MemoryJournal
from samgita_protocol.stores.sqlite import SqliteStore

from samgita_protocol_websocket import connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

from conftest import TOKEN

GROUPS = ["project_events.v1", "sessions.v1", "streaming.v1"]
HOST = "fake-agent"


def test_a_restarted_client_reconciles_and_resumes_from_its_stores(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        # No approvals offered: the Agent's approval expires and the turn goes on.
        state = AgentState(message_deltas=4, delta_interval=0.0, approval_timeout=0.2)
        path = tmp_path / "client.db"
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN, host_id=HOST
        ) as listener:

            def session(store: SqliteStore) -> Any:
                return connect(
                    listener.url,
                    token=TOKEN,
                    capabilities=GROUPS,
                    host_id=HOST,
                    journal=store.journal,
                    checkpoint_store=store.checkpoints,
                )

            store = SqliteStore(path)
            processed: list[int] = []
            async with session(store) as s:
                thread = (await s.request("thread/start", {}, command_id="a")).thread
                assert store.journal.unsettled(HOST) == []  # answered: settled
                turn = (
                    await s.request(
                        "turn/start",
                        {
                            "thread_id": thread.thread_id,
                            "input": [{"type": "text", "text": "x"}],
                        },
                        command_id="b",
                    )
                ).turn
                for _ in range(3):
                    n = await s.next_notification(timeout=5)
                    if n.cursor is not core.UNSET:
                        processed.append(n.cursor)
                        s.ack(n)
                # A mutation in flight when the process dies.
                event = core.Event(
                    event_id="evt-1",
                    delivery_attempt_id="att-1",
                    created_at="2026-12-06T00:00:00Z",
                    correlation_id="corr-1",
                    event_type="task.created",
                    payload={},
                    project_ref="p",
                )
                s.client.request(
                    "project/event.receive", {"event": event}, command_id="c"
                )
            store.close()
            # The restarted process: the same file, a new session.
            store = SqliteStore(path)
            async with session(store) as s:
                [(request_id, request)] = s.uncertain.items()
                assert request.command_id == "c"
                assert s.client.uncertain_reason(request_id) == "restart"
                assert s.checkpoints() == {turn.turn_id: processed[-1]}
                # The status query on the Agent: it never saw the event
                # (handed out, never sent).
                with pytest.raises(core.ProtocolError) as unknown:
                    await s.request("project/event.status", {"event_id": "evt-1"})
                assert unknown.value.code == core.ErrorCode.NOT_FOUND
                s.resolve_uncertain(request_id, "not_applied")
                assert store.journal.unsettled(HOST) == []
                await s.resume(turn.turn_id)
                while True:
                    n = await s.next_notification(timeout=5)
                    if n.cursor is core.UNSET:
                        continue
                    processed.append(n.cursor)
                    s.ack(n)
                    if n.method == "turn/completed":
                        break
            assert processed == list(range(1, len(processed) + 1))
            assert store.checkpoints.load(HOST) == {turn.turn_id: processed[-1]}
            store.close()

    asyncio.run(asyncio.wait_for(main(), 30))


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"journal": MemoryJournal()}, ValueError, "host_id"),
        ({"checkpoint_store": MemoryCheckpoints()}, ValueError, "host_id"),
        ({"host_id": HOST, "journal": "journal.db"}, TypeError, "journal"),
        (
            {"client_options": {"journal": MemoryJournal()}},
            TypeError,
            "client_options",
        ),
    ],
)
def test_store_arguments_are_checked_at_construction(
    kwargs: dict[str, Any], exc: type[Exception], name: str
) -> None:
    with pytest.raises(exc, match=name):
        connect(
            "ws://127.0.0.1:1/app-server", token=TOKEN, capabilities=GROUPS, **kwargs
        )
