"""The demo's failover mode (``tools/demo --failover``, issue 22): two fake
Agent nodes on one PostgreSQL database, node A killed with SIGKILL, the
client restarted and carried on by node B.

What it does: gets a PostgreSQL server (``$SAMGITA_POSTGRES_DSN``, else a
private one, as the tests get theirs:
packages/samgita-protocol/tests/postgres_server.py) and a fresh schema;
starts two ``python -m samgita_protocol_websocket.fake_agent --store
postgresql://...`` processes, A and B, with one token file and that one
database (both present ``host_id`` "fake-agent"). The host client keeps its
own records in a SQLite file (``SqliteStore``: its command journal and its
checkpoints). On A it starts a thread and a turn, answers the turn's
approval request (approve, as the plain demo does), and processes and
acknowledges only the first few streamed events (a slow consumer) while A
appends the whole turn to the shared replay log; ``thread/read`` on A
confirms the turn finished. Then it delivers a project event with A frozen
(SIGSTOP, so the request certainly reaches A's socket and is certainly
never answered) and kills A with SIGKILL: the request ends
``ambiguous_disconnect``. The client "restarts": a new session on B with the
same SQLite file restores the unanswered command from the journal as
uncertain (reason "restart"; nothing is re-sent) and the checkpoint of the
last acknowledged event; a status query on B (the shared inbox) reconciles
the command, which is redelivered only because it was not applied, and a
later delivery of the same event is recognised by its ``event_id``; the
stream resumes on B from the checkpoint, out of the shared log, up to
``turn/completed``. Checks: every cursor processed exactly once, in order,
across both nodes and the restart; the event applied exactly once; nothing
left uncertain; A really died of SIGKILL; B exits 0 on SIGTERM.

What it does not show: B carrying on a turn A had not finished. The fake
Agent keeps threads, turns and approvals in its process's memory (only
receipts, events and streams are in the shared store), so B can replay a
finished turn's stream and answer for commands and events, but knows no
thread of A's and runs no turn of A's; the demo lets A finish the turn
before the kill for that reason. Nor does it exercise the other branch of
the reconciliation (the command applied on A, its answer lost): with A
frozen before it read the request, the status query on B always finds the
event unknown. The plain ``tools/demo`` stays on the in-memory default.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import samgita_protocol as core
from samgita_protocol.stores.sqlite import SqliteStore
from samgita_protocol_websocket import Session, connect

# The sibling tools below, also when this module is imported from elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from transcript import Transcript  # the transcript format of every demo

ROOT = Path(__file__).resolve().parent.parent
#: Where postgres_server.py (the core tests' PostgreSQL helper) lives.
CORE_TESTS = ROOT / "packages" / "samgita-protocol" / "tests"
GROUPS = ["project_events.v1", "sessions.v1", "streaming.v1", "approvals.v1"]
#: Both nodes present this host_id; the client's records are kept under it.
HOST_ID = "fake-agent"
DELTAS = 10
#: Sequenced events the slow consumer processes on A before it falls behind.
TAKE_ON_A = 5
EVENT_ID = "evt-failover"
TIMEOUT = 60.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _postgres_helper() -> ModuleType:
    """postgres_server.py, the core tests' helper (a module outside any
    package, so it is found on ``sys.path`` at run time)."""
    sys.path.append(str(CORE_TESTS))
    return importlib.import_module("postgres_server")


@dataclass
class Node:
    """A fake Agent process on the shared database."""

    name: str
    proc: subprocess.Popen[str]
    url: str

    @classmethod
    def start(cls, name: str, spec: str, token_file: str) -> Node:
        proc = subprocess.Popen(
            [sys.executable, "-m", "samgita_protocol_websocket.fake_agent",
             "--host", "127.0.0.1", "--port", "0", "--token-file", token_file,
             "--store", spec, "--deltas", str(DELTAS), "--delta-interval", "0.02",
             # its log would interleave with the transcript on the terminal
             "--log-level", "WARNING"],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            proc.kill()
            raise RuntimeError(f"node {name} printed no URL (exit {proc.wait(10)})")
        return cls(name, proc, url)

    def stop(self) -> int:
        """SIGTERM (SIGKILL after 10 s); the exit status."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(10)


@dataclass
class Stream:
    """What the client processed of the turn's stream, across both nodes."""

    t: Transcript
    stream_id: str = ""
    order: list[int] = field(default_factory=list)  # every cursor processed
    texts: dict[str, str] = field(default_factory=dict)
    items: dict[str, core.Item] = field(default_factory=dict)
    finished: list[core.Turn] = field(default_factory=list)

    def process(self, s: Session, n: core.Notification) -> None:
        """Process one notification; acknowledge it when it is sequenced."""
        if n.stream_id is core.UNSET or n.stream_id != self.stream_id:
            self.t.say("<-", f"{n.method} (ephemeral: no cursor, never replayed)")
            return
        assert isinstance(n.cursor, int)
        self.order.append(n.cursor)
        p: Any = n.params
        line = f"[{n.cursor}] {n.method}"
        if n.method == "item/delta":
            self.texts[p.item_id] = self.texts.get(p.item_id, "") + p.delta
            line += f" {p.delta!r}"
        elif n.method == "item/completed":
            self.items[p.item.item_id] = p.item
            line += f" {p.item.type}: {p.item.text!r}"
        elif n.method == "turn/completed":
            self.finished.append(p.turn)
            line += f": {p.turn.status}"
        self.t.say("<-", line)
        s.ack(n)  # processed: only now may the stored checkpoint advance


class Approver:
    """The ``on_request`` callback: the caller approves the turn's action."""

    def __init__(self, t: Transcript) -> None:
        self.t = t
        self.session: Session | None = None
        self.answered = 0

    async def __call__(self, request: core.Request) -> None:
        p: Any = request.params
        self.t.say("<-", f"approval/request {p.approval_id}: {p.action.kind}")
        result = core.ApprovalRequestResult(
            approval_id=p.approval_id, action=p.action, decision="approve"
        )
        assert self.session is not None
        await self.session.reply(request, result)
        self.answered += 1
        self.t.say("->", f"approve {p.approval_id} (the caller decides)")


def _event() -> core.Event:
    """The project event delivered while A dies (attempt 1; ``retry`` gives
    later attempts the same content)."""
    return core.Event(
        event_id=EVENT_ID,
        delivery_attempt_id="attempt-1",
        created_at=_now(),
        correlation_id=f"corr-{EVENT_ID}",
        event_type="task.updated",
        payload={"summary": "delivered while node A dies"},
        project_ref="project-demo",
    )


def _connect(url: str, token: str, store: SqliteStore, approver: Approver) -> connect:
    """A session keeping its journal and checkpoints in ``store`` under ``HOST_ID``."""
    return connect(
        url,
        token=token,
        capabilities=GROUPS,
        required_capabilities=GROUPS,
        on_request=approver,
        host_id=HOST_ID,
        journal=store.journal,
        checkpoint_store=store.checkpoints,
    )


@dataclass
class Flow:
    """What the steps share: the transcript, the two nodes, the client's
    SQLite file, the stream processed so far and the in-flight command."""

    t: Transcript
    token: str
    a: Node
    b: Node
    records: str
    stream: Stream
    event: core.Event = field(default_factory=_event)
    thread_id: str = ""
    inflight: str = ""  # the request id of the command in flight when A died
    last: int = 0  # the last cursor the shared log holds for the turn


async def _start_on_a(f: Flow, s: Session, approver: Approver) -> None:
    """Thread and turn on A; process a few events, then let A finish the turn."""
    t = f.t
    init = s.initialize_result
    t.say("<-", f"initialized: host {init.host_id}, connection {init.connection_id}")
    t.check(init.host_id == HOST_ID, f"node A presents host_id {HOST_ID!r}")
    th = (await s.request("thread/start", {}, command_id="cmd-thread")).thread
    f.thread_id = th.thread_id
    t.say("<-", f"thread/start (command cmd-thread): {th.thread_id}")
    turn = (
        await s.request(
            "turn/start",
            {"thread_id": th.thread_id, "input": [{"type": "text", "text": "notes"}]},
            command_id="cmd-turn",
        )
    ).turn
    f.stream.stream_id = turn.turn_id
    t.say("<-", f"turn/start (command cmd-turn): {turn.turn_id} ({turn.status})")
    while len(f.stream.order) < TAKE_ON_A:
        f.stream.process(s, await s.next_notification(timeout=20))
    checkpoint = s.checkpoints().get(turn.turn_id)
    t.say("..", f"the client falls behind: processed and acknowledged {TAKE_ON_A}")
    # Node A streams on to nobody who processes it (the turn lives in A's
    # memory only, so A must finish it): wait for that over the connection.
    status = "in_progress"
    for _ in range(400):
        tr = await s.request("thread/read", {"thread_id": th.thread_id})
        status = next(x.status for x in tr.turns if x.turn_id == turn.turn_id)
        if status != "in_progress":
            break
        await asyncio.sleep(0.05)
    t.say("<-", f"thread/read on A: {turn.turn_id} is {status}")
    t.check(status == "completed", "node A finished the turn into the shared log")
    t.check(
        approver.answered == 1, "the turn's approval request was answered (approve)"
    )
    queued = [n.cursor for n in s.take_notifications() if isinstance(n.cursor, int)]
    f.last = max(queued, default=0)
    t.say(
        "..",
        f"cursors {queued[0] if queued else '-'}..{f.last} reached the client's "
        "queue but were not processed: this client will not live to process them",
    )
    stored = SqliteStore(f.records)
    try:
        on_disk = stored.checkpoints.load(HOST_ID)
    finally:
        stored.close()
    t.check(
        checkpoint == TAKE_ON_A == on_disk.get(turn.turn_id),
        f"the client's SQLite file holds checkpoint {TAKE_ON_A}: the last acknowledged cursor",
    )


async def _kill_in_flight(f: Flow, s: Session, store: SqliteStore) -> None:
    """A project event sent to a frozen A, then A killed: the command is uncertain."""
    t = f.t
    os.kill(f.a.proc.pid, signal.SIGSTOP)
    t.say("xx", "node A frozen (SIGSTOP): it reads nothing more, answers nothing")
    inflight = asyncio.create_task(
        s.request("project/event.receive", {"event": f.event}, command_id="cmd-evt")
    )
    await asyncio.sleep(0.1)  # the request leaves; A cannot answer it
    t.say("->", f"project/event.receive {EVENT_ID} (command cmd-evt): no answer")
    entries = store.journal.unsettled(HOST_ID)
    t.check(
        not inflight.done()
        and [(e.method, e.command_id) for e in entries]
        == [("project/event.receive", "cmd-evt")],
        "the command in flight is in the client's journal, unsettled (recorded before it was sent)",
    )
    f.inflight = entries[0].request_id if entries else ""
    os.kill(f.a.proc.pid, signal.SIGKILL)
    code = f.a.proc.wait(10)
    t.say("xx", f"node A killed with SIGKILL mid-stream (exit status {code})")
    t.check(code == -signal.SIGKILL, "node A really died of SIGKILL")
    try:
        await inflight
        outcome = "answered"
    except core.ProtocolError as exc:
        outcome = str(exc.code)
    t.say("..", f"the in-flight event.receive ended with: {outcome}")
    t.check(
        outcome == "ambiguous_disconnect",
        "the unanswered mutation is ambiguous, never assumed lost or done",
    )


async def _on_node_a(f: Flow) -> None:
    """Steps 2 and 3: the first client process, on node A, until A dies."""
    f.t.step(f"2. node A: a thread and a turn; the client processes {TAKE_ON_A} events")
    store = SqliteStore(f.records)
    approver = Approver(f.t)
    try:
        async with _connect(f.a.url, f.token, store, approver) as s:
            approver.session = s
            await _start_on_a(f, s, approver)
            f.t.step("3. a mutation in flight, and node A killed with SIGKILL")
            await _kill_in_flight(f, s, store)
        f.t.say(
            "xx", "the client process ends too (its session and SQLite file closed)"
        )
    finally:
        store.close()


async def _restored(f: Flow, s: Session, store: SqliteStore) -> None:
    """What the restarted client restored from its SQLite file, on B."""
    t = f.t
    init = s.initialize_result
    t.say(
        "<-", f"initialized on B: host {init.host_id}, connection {init.connection_id}"
    )
    t.check(init.host_id == HOST_ID, "node B presents the same host_id")
    uncertain = dict(s.uncertain)
    request = uncertain.get(f.inflight)
    reason = s.client.uncertain_reason(f.inflight)
    t.say("..", f"restored from the journal as uncertain: {list(uncertain)} ({reason})")
    t.check(
        list(uncertain) == [f.inflight]
        and request is not None
        and (request.method, request.command_id) == ("project/event.receive", "cmd-evt")
        and reason == "restart",
        "exactly the command in flight is uncertain again (reason 'restart'); nothing was re-sent",
    )
    stream = f.stream.stream_id
    restored = s.checkpoints()
    t.say("..", f"checkpoints restored from the SQLite file: {restored}")
    t.check(
        restored == {stream: f.stream.order[-1]} == store.checkpoints.load(HOST_ID),
        f"the checkpoint restored is the last acknowledged cursor, {f.stream.order[-1]}",
    )


async def _reconcile(f: Flow, s: Session, store: SqliteStore) -> None:
    """Settle the uncertain command by a status query on B; show it applied once."""
    t = f.t
    try:
        st = await s.request("project/event.status", {"event_id": EVENT_ID})
        applied = True
        t.say("<-", f"event.status {EVENT_ID}: {st.processing_status} -> applied on A")
    except core.ProtocolError as exc:
        if exc.code != core.ErrorCode.NOT_FOUND:
            raise
        applied = False
        t.say("<-", f"event.status {EVENT_ID}: {exc.code} -> never applied")
        t.say("..", "(so the restart did not re-send the restored command either)")
    s.resolve_uncertain(f.inflight, "applied" if applied else "not_applied")
    t.check(
        not s.uncertain and not store.journal.unsettled(HOST_ID),
        "resolve_uncertain cleared it, in the session and in the journal",
    )
    if not applied:
        again = await s.request(
            "project/event.receive",
            {"event": f.event.retry("attempt-2")},
            command_id="cmd-evt-2",
        )
        t.say(
            "->",
            "redelivered as attempt-2 (command cmd-evt-2), since it was not applied",
        )
        t.say("<-", f"{again.acceptance}, {again.processing_status}")
    report = await s.request(
        "project/event.report",
        {"event_id": EVENT_ID, "outcome": "completed", "summary": "handled"},
        command_id="cmd-report",
    )
    t.say("<-", f"event.report completed: {report.report_status}")
    late = await s.request(
        "project/event.receive",
        {"event": f.event.retry("attempt-3")},
        command_id="cmd-evt-3",
    )
    t.say(
        "<-",
        f"a late attempt-3 of {EVENT_ID}: processing_status {late.processing_status}",
    )
    t.check(
        late.processing_status == "completed",
        "the event is recorded once: a later delivery is recognised by its event_id "
        "(a second record would say 'pending')",
    )
    st = await s.request("project/event.status", {"event_id": EVENT_ID})
    t.check(
        (st.acceptance, st.processing_status) == ("durable", "completed"),
        "the shared inbox holds it durably, completed: the mutation applied exactly once",
    )


async def _resume_on_b(f: Flow, s: Session, store: SqliteStore) -> None:
    """Resume the turn's stream on B from the checkpoint, to turn/completed."""
    t = f.t
    stream = f.stream.stream_id
    start = s.checkpoints()[stream]
    t.say("->", f"stream/resume {stream} from cursor {start} (B serves the shared log)")
    mark = len(f.stream.order)
    count = await s.resume(stream)
    while not f.stream.finished:
        f.stream.process(s, await s.next_notification(timeout=20))
    replayed = f.stream.order[mark:]
    t.check(
        count == len(replayed) == f.last - start
        and replayed == list(range(start + 1, f.last + 1)),
        f"the replay is exactly cursors {start + 1}..{f.last}, through turn/completed",
    )
    t.check(
        store.checkpoints.load(HOST_ID) == {stream: f.last},
        f"the SQLite file's checkpoint is {f.last}, the last processed cursor",
    )


async def _on_node_b(f: Flow) -> None:
    """Steps 4 to 6: the restarted client process, on node B."""
    f.t.step("4. the client restarts and connects to node B (same SQLite file)")
    store = SqliteStore(f.records)  # opened anew, as a new process would
    approver = Approver(f.t)
    try:
        async with _connect(f.b.url, f.token, store, approver) as s:
            approver.session = s
            await _restored(f, s, store)
            f.t.step("5. reconcile the uncertain command on B by a status query")
            await _reconcile(f, s, store)
            f.t.step("6. resume the stream on B from the restored checkpoint")
            await _resume_on_b(f, s, store)
    finally:
        store.close()


def _checks(f: Flow) -> None:
    """Step 7: what the whole stream, over both nodes, adds up to."""
    t, st = f.t, f.stream
    t.step("7. checks")
    t.check(
        st.order == list(range(1, f.last + 1)),
        f"cursors 1..{f.last} processed exactly once each, in order, across both "
        "nodes and the restart",
    )
    t.check(
        bool(st.finished) and st.finished[0].status == "completed", "the turn completed"
    )
    for item_id, item in st.items.items():
        if item.type == "message":
            t.check(
                st.texts.get(item_id, "") == item.text,
                f"{item_id}: the deltas add up to the completed text",
            )
    tool = [i for i in st.items.values() if i.type == "tool_call"]
    t.check(
        len(tool) == 1 and tool[0].status == "completed",
        "the approved action ran once",
    )


async def _run(f: Flow) -> None:
    """The flow, after the setup."""
    await _on_node_a(f)
    await _on_node_b(f)
    _checks(f)


def _database(stack: contextlib.ExitStack[bool | None], t: Transcript) -> Any:
    """The helper's ``Database`` (``Any``: the helper is found at run time),
    or ``None`` after a failed check saying why there is none."""
    try:
        pg = _postgres_helper()
    except ImportError as exc:
        t.check(False, f"the PostgreSQL test helper could not be imported: {exc}")
        return None
    try:
        db = stack.enter_context(pg.database())
    except pg.Unavailable as exc:
        t.check(False, f"a PostgreSQL server for both nodes: {exc}")
        return None
    where = f"${pg.ENV}" if os.environ.get(pg.ENV) else "a private server"
    t.say("..", f"PostgreSQL: {where} (postgres_server.py, as the tests get theirs)")
    return db


def main() -> int:
    """Run the flow; 0 only when every check held."""
    t = Transcript()
    began = time.monotonic()
    t.step("1. one PostgreSQL database, two fake Agent nodes on it")
    with contextlib.ExitStack() as stack:
        db = _database(stack, t)
        if db is None:
            return t.finish()
        spec = _postgres_helper().uri(db.fresh())
        t.say(
            "..",
            f"a fresh schema {db.schemas[-1]}; both nodes: --store postgresql://...",
        )
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        token = secrets.token_urlsafe(24)
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w", encoding="utf-8") as out:
            out.write(token + "\n")
        os.chmod(token_file, 0o600)
        nodes: list[Node] = []
        try:
            nodes.append(Node.start("A", spec, token_file))
            nodes.append(Node.start("B", spec, token_file))
            for node in nodes:
                t.say("..", f"node {node.name}: {node.url} (pid {node.proc.pid})")
            records = os.path.join(tmp, "client.sqlite")
            t.say(
                "..", "the client's journal and checkpoints: a SQLite file of its own"
            )
            flow = Flow(t, token, nodes[0], nodes[1], records, Stream(t))
            asyncio.run(asyncio.wait_for(_run(flow), TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - any failure is a failed check
            t.check(False, f"the flow raised {type(exc).__name__}: {exc}")
        finally:
            if nodes and nodes[0].proc.poll() is None:
                nodes[0].proc.kill()  # the flow failed before it killed A
                nodes[0].proc.wait(10)
            if len(nodes) == 2:
                t.check(nodes[1].stop() == 0, "node B exited cleanly on SIGTERM")
    return t.finish(
        " across a SIGKILLed node and a client restart",
        f" ({time.monotonic() - began:.1f} s)",
    )
