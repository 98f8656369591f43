"""Load: 1,000 concurrent authenticated loopback connections, each a full session with streamed items.

Every connection is open at the same time (a barrier), then each runs
initialize, thread/start, turn/start, answers the Agent's approval and
receives the turn's streamed items; every sequenced event is accounted for
(cursors 1..N exactly once per stream).  Bounded in time.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

import samgita_protocol as core
from samgita_protocol_websocket import connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

CONNECTIONS = 1000
TOKEN = "load-token-8d1e"
GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]
DELTAS = 2
# item/started, deltas, item/completed; tool item/completed; the second item; turn/completed
EVENTS_PER_TURN = (2 + DELTAS) * 2 + 1 + 1
BUDGET_SECONDS = 240


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= needed


async def _session(
    url: str, all_open: asyncio.Event, opened: list[int], n: int
) -> dict[str, Any]:
    box: list[Any] = []

    async def approve(request: Any) -> None:
        p = request.params
        await box[0].reply(
            request,
            core.ApprovalRequestResult(
                approval_id=p.approval_id, action=p.action, decision="approve"
            ),
        )

    async with connect(
        url,
        token=TOKEN,
        capabilities=GROUPS,
        on_request=approve,
        open_timeout=120,
        ping_interval=None,
    ) as s:
        box.append(s)
        opened[0] += 1
        if opened[0] == CONNECTIONS:
            all_open.set()
        await all_open.wait()
        thread = (await s.request("thread/start", {}, command_id=f"t{n}")).thread
        turn = (
            await s.request(
                "turn/start",
                {
                    "thread_id": thread.thread_id,
                    "input": [{"type": "text", "text": "go"}],
                },
                command_id=f"u{n}",
            )
        ).turn
        cursors: list[int] = []
        ephemeral = 0
        while True:
            n = await s.next_notification(timeout=120)
            if n.stream_id is core.UNSET:
                ephemeral += 1
                continue
            assert n.stream_id == turn.turn_id
            cursors.append(n.cursor)
            s.ack(n)
            if n.method == "turn/completed":
                assert n.params.turn.status == "completed"
                break
        return {
            "cursors": cursors,
            "ephemeral": ephemeral,
            "checkpoint": s.checkpoints()[turn.turn_id],
        }


def test_thousand_concurrent_sessions() -> None:
    _raise_fd_limit(2 * CONNECTIONS + 256)

    async def main() -> list[dict[str, Any]]:
        state = AgentState(message_deltas=DELTAS, delta_interval=0.0)
        async with serve(
            FakeAgent.factory(state),
            host="127.0.0.1",
            token=TOKEN,
            max_connections=CONNECTIONS + 10,
            handshake_timeout=120,
            ping_interval=None,
            backlog=CONNECTIONS + 10,
        ) as listener:
            all_open = asyncio.Event()
            opened = [0]
            results = await asyncio.wait_for(
                asyncio.gather(
                    *(
                        _session(listener.url, all_open, opened, n)
                        for n in range(CONNECTIONS)
                    )
                ),
                BUDGET_SECONDS,
            )
            assert listener.active_connections <= CONNECTIONS
            return list(results)

    start = time.monotonic()
    results = asyncio.run(main())
    elapsed = time.monotonic() - start
    assert len(results) == CONNECTIONS
    for r in results:
        assert r["cursors"] == list(range(1, EVENTS_PER_TURN + 1)), r
        assert r["checkpoint"] == EVENTS_PER_TURN
        assert r["ephemeral"] == 2  # thread/started, turn/started
    assert elapsed < BUDGET_SECONDS
    print(
        f"{CONNECTIONS} sessions, {CONNECTIONS * (EVENTS_PER_TURN + 2)} notifications, {elapsed:.1f} s"
    )
