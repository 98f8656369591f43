"""The main job of issue 12, end to end over a real socket (run by tools/demo).

Starts the fake Agent (``python -m samgita_protocol_websocket.fake_agent``) on
loopback with a fresh token, then a host client that: is refused without the
token; authenticates and initializes; delivers a project event and queries its
status and report; starts a thread and a turn; receives streamed items and
acknowledges each; answers the Agent's approval request; cuts the connection
mid-stream with a mutation in flight; reconnects (authenticating and
initializing again); reconciles the uncertain command with an authenticated
status query; resumes the stream from its checkpoint; and checks that every
streamed event was processed exactly once, in cursor order.  Prints a
transcript and exits 0 only when every check held.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from typing import Any

import demo_codex  # `--codex`: the same kind of flow against the real Codex
import demo_failover  # `--failover`: two fake Agent nodes on one PostgreSQL
import samgita_protocol as core
from samgita_protocol_websocket import HandshakeRejected, connect
from transcript import Transcript

GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _event(event_id: str, attempt: str, kind: str) -> Any:
    return core.Event(
        event_id=event_id,
        delivery_attempt_id=attempt,
        created_at=_now(),
        correlation_id=f"corr-{event_id}",
        event_type=kind,
        payload={"summary": f"{kind} for the demo"},
        project_ref="project-demo",
    )


async def run_flow(url: str, token: str, t: Transcript) -> None:
    t.step("1. authentication happens before the upgrade")
    try:
        async with connect(url, token="not-the-token", capabilities=["sessions.v1"]):
            t.check(False, "a wrong token was refused")
    except HandshakeRejected as exc:
        t.say("<-", f"HTTP {exc.status} (no upgrade, no core Server saw us)")
        t.check(
            exc.status == 401,
            "a wrong token is answered 401 before any WebSocket frame",
        )

    approvals: list[Any] = []
    session_box: list[Any] = []

    async def on_request(request: Any) -> None:
        # The library never answers for us: this callback is the caller deciding.
        approvals.append(request)
        p = request.params
        t.say(
            "<-",
            f"approval/request {p.approval_id}: {p.action.kind} ({p.action.description}), deadline {p.deadline}",
        )
        result = core.ApprovalRequestResult(
            approval_id=p.approval_id, action=p.action, decision="approve"
        )
        await session_box[0].reply(request, result)
        t.say(
            "->",
            f"response approve for {p.approval_id} (bound to its approval_id and action)",
        )

    async with connect(
        url,
        token=token,
        capabilities=GROUPS,
        required_capabilities=GROUPS,
        on_request=on_request,
    ) as s:
        session_box.append(s)
        init = s.initialize_result
        t.step("2. initialized")
        t.say(
            "<-",
            f"version {init.version}, capabilities {sorted(init.capabilities)}, connection {init.connection_id}, host {init.host_id}",
        )
        t.check(
            set(init.capabilities) == set(GROUPS), "every offered group was negotiated"
        )
        host_id = init.host_id
        first_connection = init.connection_id

        t.step("3. a project event: receipt is not completion")
        ev = _event("evt-1", "attempt-1", "task.created")
        r = await s.request(
            "project/event.receive", {"event": ev}, command_id="cmd-evt-1"
        )
        t.say(
            "<-",
            f"event.receive: acceptance={r.acceptance}, processing_status={r.processing_status}",
        )
        t.check(
            r.acceptance == "received",
            "acceptance 'received' proves receipt (possibly in memory), not durability",
        )
        st = await s.request("project/event.status", {"event_id": "evt-1"})
        t.say("<-", f"event.status: processing_status={st.processing_status}")
        t.check(
            st.processing_status == "pending",
            "status query shows it is not processed yet",
        )
        rep = await s.request(
            "project/event.report",
            {
                "event_id": "evt-1",
                "outcome": "completed",
                "summary": "handled by the demo",
            },
            command_id="cmd-report-1",
        )
        t.say(
            "<-",
            f"event.report: report_status={rep.report_status}, management_acceptance={rep.management_acceptance}",
        )
        t.check(
            rep.report_status == "recorded",
            "'recorded' proves the host recorded the report",
        )
        t.check(
            rep.management_acceptance == "not_requested",
            "no Project/Task transition was requested or implied",
        )
        st = await s.request("project/event.status", {"event_id": "evt-1"})
        t.check(
            st.processing_status == "completed",
            "status is 'completed' only after the report",
        )

        t.step("4. thread and turn, streamed items")
        th = (
            await s.request(
                "thread/start", {"instructions": "demo"}, command_id="cmd-thread-1"
            )
        ).thread
        t.say("<-", f"thread/start: {th.thread_id} ({th.status})")
        turn = (
            await s.request(
                "turn/start",
                {
                    "thread_id": th.thread_id,
                    "input": [{"type": "text", "text": "write the notes"}],
                },
                command_id="cmd-turn-1",
            )
        ).turn
        t.say("<-", f"turn/start: {turn.turn_id} ({turn.status})")
        stream = turn.turn_id
        seen: dict[int, Any] = {}
        order: list[int] = []  # every stream cursor handed to us, in order
        duplicates = 0
        texts: dict[str, str] = {}
        completed_items: dict[str, Any] = {}
        finished: list[Any] = []

        def process(n: Any) -> None:
            nonlocal duplicates
            if n.stream_id is core.UNSET or n.stream_id != stream:
                t.say("<-", f"{n.method} (ephemeral)")
                return
            if n.cursor in seen:
                duplicates += 1
            seen[n.cursor] = n
            order.append(n.cursor)
            p = n.params
            if n.method == "item/delta":
                texts[p.item_id] = texts.get(p.item_id, "") + p.delta
            elif n.method == "item/completed":
                completed_items[p.item.item_id] = p.item
                t.say(
                    "<-",
                    f"[{n.cursor}] item/completed {p.item.item_id} {p.item.type}: {p.item.text!r}",
                )
            elif n.method == "turn/completed":
                finished.append(p.turn)
                t.say(
                    "<-",
                    f"[{n.cursor}] turn/completed {p.turn.turn_id}: {p.turn.status}",
                )
            else:
                t.say("<-", f"[{n.cursor}] {n.method}")
            s.ack(n)  # processed: only now may the checkpoint advance

        cut_after = "-item-3"
        while True:
            n = await s.next_notification(timeout=20)
            process(n)
            if (
                n.method == "item/delta"
                and n.params.item_id.endswith(cut_after)
                and len(texts[n.params.item_id]) > 12
            ):
                break
        t.check(
            len(approvals) == 1,
            "the Agent's approval request reached the callback and was answered by the caller",
        )
        checkpoint = s.checkpoints().get(stream)
        t.say("..", f"checkpoint before the cut: {stream} at cursor {checkpoint}")

        t.step("5. cut the connection mid-stream with a mutation in flight")
        ev2 = _event("evt-2", "attempt-1", "task.updated")
        inflight = asyncio.create_task(
            s.request("project/event.receive", {"event": ev2}, command_id="cmd-evt-2")
        )
        await asyncio.sleep(0)
        s.abort()
        t.say("xx", "TCP connection aborted (no close handshake)")
        try:
            await inflight
            outcome = "answered"
        except core.ProtocolError as exc:
            outcome = str(exc.code)
        t.say("..", f"in-flight event.receive ended with: {outcome}")
        t.check(
            outcome == "ambiguous_disconnect",
            "a mutation cut off in flight is ambiguous, never assumed lost or done",
        )
        uncertain = dict(s.uncertain)
        t.check(
            len(uncertain) == 1,
            f"exactly one uncertain command held: {list(uncertain)}",
        )

        t.step("6. reconnect: authenticate and initialize again")
        init2 = await s.reconnect()
        t.say(
            "<-",
            f"connection {init2.connection_id} (was {first_connection}), host {init2.host_id}",
        )
        t.check(
            init2.host_id == host_id and init2.connection_id != first_connection,
            "same host, new connection",
        )
        t.check(
            len(s.uncertain) == 1,
            "the uncertain command survived reconnect; nothing was re-sent",
        )

        t.step("7. reconcile the uncertain command with an authenticated query")
        ((rid, _request),) = uncertain.items()
        try:
            st2 = await s.request("project/event.status", {"event_id": "evt-2"})
            applied = True
            t.say(
                "<-",
                f"event.status evt-2: {st2.processing_status} -> the delivery was applied",
            )
        except core.ProtocolError as exc:
            applied = False
            t.say("<-", f"event.status evt-2: {exc.code} -> not applied")
        s.resolve_uncertain(rid, "applied" if applied else "not_applied")
        if not applied:
            retry = await s.request(
                "project/event.receive",
                {"event": ev2.retry("attempt-2")},
                command_id="cmd-evt-2-retry",
            )
            t.say("<-", f"redelivered as attempt-2: {retry.acceptance}")
        st2 = await s.request("project/event.status", {"event_id": "evt-2"})
        t.check(
            not s.uncertain,
            "uncertain cleared only by resolve_uncertain after the query",
        )
        t.check(
            st2.acceptance == "received",
            "evt-2 is known to the host by its event_id (the status query proves receipt, once reconciled)",
        )

        t.step("8. resume the stream from the checkpoint")
        early = s.take_notifications()  # anything that arrived before the cut
        t.say(
            "..",
            f"{len(early)} notifications had arrived before the cut and were still queued: processing them first",
        )
        for n in early:
            process(n)
        start = s.checkpoints().get(stream, 0)
        # The Agent kept streaming while we were away, to nobody: wait (over
        # the new, authenticated connection) until it has certainly passed
        # the checkpoint, so the resume has something to replay.
        status = "in_progress"
        for _ in range(400):
            tr = await s.request("thread/read", {"thread_id": th.thread_id})
            status = next(x.status for x in tr.turns if x.turn_id == stream)
            if status != "in_progress":
                break
            await asyncio.sleep(0.05)
        t.say(
            "<-",
            f"thread/read: {stream} is {status} on the Agent: it streamed past cursor {start} while we were away",
        )
        t.check(status == "completed", "the Agent finished the turn while we were away")
        t.say("->", f"stream/resume {stream} from cursor {start}")
        mark = len(order)
        count = await s.resume(stream)
        while not finished:
            process(await s.next_notification(timeout=20))
        replayed = order[mark:]
        t.say(
            "<-",
            f"{count} events in the replay pages (duplicate/gap-checked by the core): "
            f"cursors {replayed[0] if replayed else '-'}..{replayed[-1] if replayed else '-'}",
        )
        t.check(
            count >= 1,
            "the replay returned at least one event (nothing of it had arrived live)",
        )
        t.check(
            len(replayed) == count
            and replayed == list(range(start + 1, start + 1 + count)),
            f"the replayed events are exactly cursor {start + 1} (checkpoint + 1) onward, in order",
        )

        t.step("9. checks")
        cursors = sorted(seen)
        t.check(duplicates == 0, "no streamed event was handed to the caller twice")
        t.check(
            order == list(range(1, len(order) + 1)),
            f"the delivered cursors are 1..{len(order)} in order, each exactly once: nothing lost or duplicated",
        )
        t.check(
            s.checkpoints()[stream] == cursors[-1],
            "checkpoint = last processed cursor",
        )
        for item_id, item in completed_items.items():
            if item.type == "message":
                t.check(
                    texts.get(item_id, "") == item.text,
                    f"{item_id}: the deltas add up to the completed text",
                )
        t.check(finished[0].status == "completed", "the turn completed")
        tool = [i for i in completed_items.values() if i.type == "tool_call"]
        t.check(
            bool(tool) and tool[0].status == "completed",
            "the approved action ran (approval decided by the caller)",
        )


async def main() -> int:
    t = Transcript()
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as tmp:
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w", encoding="utf-8") as f:  # noqa: ASYNC230 - before anything runs
            f.write(token + "\n")
        os.chmod(token_file, 0o600)
        agent = subprocess.Popen(  # noqa: ASYNC220 - started once, read line by line below
            [
                sys.executable,
                "-m",
                "samgita_protocol_websocket.fake_agent",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--token-file",
                token_file,
                "--deltas",
                "10",
                "--delta-interval",
                "0.02",
                # its INFO log (connections, refusals, closes) would interleave
                # with the transcript on the terminal
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert agent.stdout is not None
            url = agent.stdout.readline().strip()
            print(
                f"fake Agent listening at {url} (token in a 0600 file, never printed)"
            )
            await asyncio.wait_for(run_flow(url, token, t), 60)
        except Exception as exc:  # noqa: BLE001 - any failure is a failed check in the transcript
            t.check(False, f"flow raised {type(exc).__name__}: {exc}")
        finally:
            agent.terminate()
            code = agent.wait(10)
            t.check(code == 0, "the fake Agent exited cleanly on SIGTERM")
    return t.finish()


if __name__ == "__main__":
    if sys.argv[1:] == ["--codex"]:
        # The Codex mode (tools/demo_codex.py): the real codex app-server.
        raise SystemExit(asyncio.run(demo_codex.main()))
    if sys.argv[1:] == ["--failover"]:
        # The failover mode (tools/demo_failover.py): node A killed, node B
        # carries on, both on one PostgreSQL database.
        raise SystemExit(demo_failover.main())
    if sys.argv[1:]:
        print("usage: tools/demo [--codex|--failover]", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(asyncio.run(main()))
