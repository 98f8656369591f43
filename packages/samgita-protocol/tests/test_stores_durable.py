"""What a durable store backend promises beyond the conformance suite, run
against every durable backend of ``stores_backends.BACKENDS``: what it
acknowledged survives a reopen and a SIGKILL of the writer, and claims are
atomic across processes."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable

import pytest

from samgita_protocol import encode
from samgita_protocol.stores import Claim, ReplayLog
from stores_backends import (
    CRASH_HOST,
    CRASH_STREAM,
    DURABLE,
    PRELOAD,
    claim_worker,
    crash_event,
    crash_worker,
    digest,
    mutation,
    open_stores,
)

#: SIGKILL trials (the issue asks for at least 200).
TRIALS = 200
#: A writer is killed at a random moment up to this many seconds after it
#: opened its stores.
MAX_KILL_DELAY = 0.020
#: Hang guard only: how long a child may take to open its stores.
START_TIMEOUT = 60.0


@pytest.fixture(params=DURABLE)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_everything_survives_a_reopen(
    backend: str, locate: Callable[[str], str]
) -> None:
    location = locate(backend)
    stores = open_stores(backend, location)
    request = mutation("r1")
    stores.journal.record("h", request, encode(request), now=7.0)
    stores.journal.record("h", mutation("r2"), encode(mutation("r2")))
    stores.journal.settle("h", "r2", "applied")
    stores.inbox.claim("h", "c1", digest("c1"), lease=600)
    stores.inbox.commit("h", "c1", digest("c1"), b"receipt")
    stores.inbox.claim("h", "c2", digest("c2"), lease=600)
    stores.inbox.record_event("h", "e1", digest("e1"), status="processing")
    for _ in range(5):
        stores.replay_log.append("s", lambda c: b"e%d" % c)
    stores.replay_log.trim("s", keep_events=2)
    stores.checkpoints.advance("h", "s", 9)
    stores.close()

    again = open_stores(backend, location)
    [entry] = again.journal.unsettled("h")
    assert (entry.request_id, entry.data, entry.recorded_at) == (
        "r1",
        encode(request),
        7.0,
    )
    again.journal.settle("h", "r2", "applied")  # still settled as applied
    assert again.inbox.claim("h", "c1", digest("c1"), lease=1) == Claim(
        status="duplicate", receipt=b"receipt"
    )
    assert again.inbox.claim("h", "c2", digest("c2"), lease=1).status == "in_progress"
    assert again.inbox.event_status("h", "e1") == "processing"
    assert again.inbox.record_event(
        "h", "e1", digest("x"), status="pending"
    ).status == ("conflict")
    log: ReplayLog = again.replay_log
    assert (log.first_cursor("s"), log.last_cursor("s")) == (4, 5)
    assert log.page("s", 3).events == [b"e4", b"e5"]
    assert log.append("s", lambda c: b"e%d" % c) == 6
    assert again.checkpoints.load("h") == {"s": 9}
    again.close()


def test_concurrent_claims_from_processes(
    backend: str, locate: Callable[[str], str]
) -> None:
    # Four fresh interpreters (spawn: nothing inherited) open the same
    # fresh location together and claim the same ids.
    location = locate(backend)
    ctx = multiprocessing.get_context("spawn")
    ids = [f"cmd-{n}" for n in range(150)]
    start = ctx.Event()
    out = ctx.Queue()
    workers = [
        ctx.Process(target=claim_worker, args=(backend, location, ids, start, out))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    start.set()
    results = [out.get(timeout=START_TIMEOUT * 2) for _ in workers]
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    won = [command_id for mine, _ in results for command_id in mine]
    assert sorted(won) == sorted(ids)  # each exactly once
    for _, answers in results:
        assert set(answers) <= {"new", "in_progress", "duplicate"}
    stores = open_stores(backend, location)
    for command_id in ids:
        claim = stores.inbox.claim("host", command_id, digest(command_id), lease=1)
        assert claim == Claim(status="duplicate", receipt=command_id.encode())
    stores.close()


class _Acked:
    """What the children of all trials acknowledged."""

    def __init__(self) -> None:
        self.appends: dict[int, bytes] = {}  # cursor -> event
        self.commits: set[str] = set()
        self.records: set[str] = set()
        self.settled: set[str] = set()
        self.position = -1

    def take(self, message: tuple[object, ...], trial: int) -> None:
        kind = message[0]
        if kind == "append":
            op, cursor = message[1], message[2]
            assert isinstance(op, int) and isinstance(cursor, int)
            self.appends[cursor] = crash_event(trial, op, cursor)
        elif kind == "commit":
            self.commits.add(str(message[1]))
        elif kind == "advance":
            assert isinstance(message[1], int)
            self.position = max(self.position, message[1])
        elif kind == "record":
            self.records.add(str(message[1]))
        elif kind == "settle":
            self.settled.add(str(message[1]))


def _run_trial(
    backend: str, location: str, trial: int, rng: random.Random, acked: _Acked
) -> None:
    ctx = multiprocessing.get_context("forkserver")
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=crash_worker, args=(backend, location, trial, writer))
    child.start()
    writer.close()
    # Most trials kill a writer that is writing; one in ten may kill it
    # while it opens the store (and recovers the file).
    if trial % 10:
        assert reader.poll(START_TIMEOUT), "the child did not start"
        assert reader.recv() == ("ready",)
    time.sleep(rng.uniform(0, MAX_KILL_DELAY))
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    assert child.exitcode == -signal.SIGKILL
    while True:
        try:
            message = reader.recv()
        except EOFError:
            break
        if message != ("ready",):
            acked.take(message, trial)
    reader.close()


def _check(backend: str, location: str, acked: _Acked, last_position: int) -> int:
    stores = open_stores(backend, location)
    log = stores.replay_log
    # Every cursor 1..last holds exactly one event, each of one operation
    # of one trial at that very cursor: contiguous, none lost, none twice.
    events: list[bytes] = []
    after = 0
    while after < log.last_cursor(CRASH_STREAM):
        page = log.page(CRASH_STREAM, after)
        events += page.events
        after = page.cursor
    operations = []
    for cursor, event in enumerate(events, 1):
        trial, op, at = event.decode().split(":")
        assert int(at) == cursor
        operations.append((int(trial), int(op)))
    assert len(set(operations)) == len(operations)
    for cursor, event in acked.appends.items():
        assert events[cursor - 1] == event
    for command_id in acked.commits:
        claim = stores.inbox.claim(
            CRASH_HOST, command_id, digest(command_id), lease=600
        )
        assert claim == Claim(status="duplicate", receipt=command_id.encode())
    position = stores.checkpoints.load(CRASH_HOST).get(CRASH_STREAM, -1)
    assert position >= acked.position and position >= last_position
    unsettled = {e.request_id for e in stores.journal.unsettled(CRASH_HOST)}
    assert acked.settled.isdisjoint(unsettled)
    # Every acknowledged record is there (settling an unknown one raises);
    # the last one may have been settled before the kill, unacknowledged.
    for request_id in acked.records - acked.settled:
        stores.journal.settle(CRASH_HOST, request_id, "answered")
        acked.settled.add(request_id)
    stores.close()
    return position


def test_sigkill_loses_nothing_acknowledged(
    backend: str, locate: Callable[[str], str]
) -> None:
    # forkserver: each child is forked from a clean server process that
    # imported the library already, so 200 starts take seconds, not half a
    # minute. (The server does not get the tests' sys.path on Python 3.11:
    # each child imports stores_backends itself, which is quick.)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    rng = random.Random(22)
    location = locate(backend)
    acked = _Acked()
    position = -1
    for trial in range(TRIALS):
        _run_trial(backend, location, trial, rng, acked)
        position = _check(backend, location, acked, position)
    # The trials did write (about one acknowledged append per trial on an
    # idle machine; fewer when the machine is loaded, as kills come sooner
    # relative to the writer's progress).
    assert len(acked.appends) >= TRIALS // 2
