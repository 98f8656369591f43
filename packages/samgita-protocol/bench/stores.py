"""Store benchmark: each durable backend against its own bare-SQL floor and
against the in-memory reference, in one run.

    python bench/stores.py [--rounds N] [--quick] [--only sqlite|postgres]
                           [--dir DIR] [--profile sqlite|postgres]

For each backend (SQLite, PostgreSQL) and operation, three contenders in
alternating rounds: the backend's store, the same rows written or read by
bare SQL on the same backend (the backend's own floor), and the in-memory
reference store (``Memory*``). A round times one batch of operations per
contender, each operation on fresh keys; the table shows the median µs per
operation and the median of the per-round ratios store / floor (target: at
most 1.5x) and store / memory. Figures are printed, never asserted.

The operations, and the floor each one is compared with (the floor makes
as many commits as the store's calls do):

* ``journal``: ``CommandJournal.record`` + ``settle(..., "answered")`` of
  one mutation (two store transactions); floor: ``INSERT`` of the same
  row, then ``UPDATE`` of its outcome and settled_at by key (two commits).
* ``inbox``: ``Inbox.claim`` + ``commit`` of one command (two store
  transactions); floor: ``INSERT`` of the held claim, then ``UPDATE`` of
  its receipt by key (two commits).
* ``append``: ``ReplayLog.append`` of one event; floor: one ``INSERT`` of
  the same row (one commit).
* ``page``: ``ReplayLog.page`` of 128 events after a random cursor of a
  stream of 4,096 (1,024 with ``--quick``); floor: one ``SELECT`` of the
  same 128 events' data. On PostgreSQL both tables are ``ANALYZE``d once
  filled, so that the plans do not depend on when autovacuum ran.

The floor has the store's durability, on a connection of its own: for
SQLite a file in the same directory, ``journal_mode=WAL`` and
``synchronous=FULL``; for PostgreSQL the same server and database with
``synchronous_commit = on``. Both in autocommit, each statement its own
transaction: the cheapest durable write of one row (psycopg with
autocommit off would add ``BEGIN`` and ``COMMIT`` round trips, a floor the
store's one-statement calls would beat). Its tables have the store's
columns and types and only the primary key its statements look rows
up by: none of the store's other indexes, no stream table.

PostgreSQL: the server of ``$SAMGITA_POSTGRES_DSN``, else a private one
started and removed by ``tests/postgres_server.py`` (the tests' own
helper: pgserver's binaries, or initdb and postgres on PATH). When none
can be had, the rest is measured and the script exits with status 1.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from samgita_protocol import (
    InputItem,
    ItemDeltaParams,
    Notification,
    Request,
    TurnStartParams,
    encode,
)
from samgita_protocol.stores import (
    CommandJournal,
    Inbox,
    MemoryInbox,
    MemoryJournal,
    MemoryReplayLog,
    ReplayLog,
    command_digest,
)
from samgita_protocol.stores.sqlite import SqliteStore

#: tests/, where the PostgreSQL helper of the store tests lives.
TESTS = Path(__file__).resolve().parents[1] / "tests"
HOST = "bench-host"
PAGE = 128
#: Appends per store transaction when filling the page stream: appends to
#: one stream in one PostgresStore transaction grow superlinear (each one
#: updates the stream's row again, in a savepoint of its own).
FILL_CHUNK = 256
LEASE = 600.0
TARGET = 1.5
#: The legend under the table: what each row's floor is.
FLOORS = (
    "floor = bare SQL of the same rows on the same backend, on a connection of its",
    "own with the store's durability, in autocommit (each statement one commit):",
    "  journal record + settle  INSERT the entry; UPDATE its outcome by key (2 commits)",
    "  inbox claim + commit     INSERT the held claim; UPDATE its receipt by key (2 commits)",
    "  replay append            INSERT the event (1 commit)",
    f"  replay page              one SELECT of the {PAGE} events' data (no commit)",
    "memory = MemoryJournal / MemoryInbox / MemoryReplayLog, in the same rounds",
)
EVENT = encode(
    Notification(
        method="item/delta",
        stream_id="bench-stream",
        cursor=1042,
        params=ItemDeltaParams(
            thread_id="thr-5c1d9e2a",
            turn_id="turn-81f0b3c4",
            item_id="item-3e7a0d95",
            delta="The quick brown fox jumps over the lazy dog. " * 2,
        ),
    )
)
#: A host's answer to a turn/start, as the inbox stores it.
RECEIPT = (
    b'{"schema_version":"1.0","type":"response","id":"req-1",'
    b'"correlation_id":"corr-req-1","result":{"turn_id":"turn-81f0b3c4",'
    b'"status":"in_progress"}}'
)

X = TypeVar("X")


class Mutation(NamedTuple):
    """One command: the request, its bytes and its content digest."""

    request: Request
    data: bytes
    digest: bytes


def mutations(tag: str, n: int) -> list[Mutation]:
    """``n`` turn/start mutations with ids unique to ``tag``."""
    out = []
    for i in range(n):
        request = Request(
            method="turn/start",
            id=f"{tag}-{i}",
            correlation_id=f"corr-{tag}-{i}",
            command_id=f"cmd-{tag}-{i}",
            params=TurnStartParams(
                thread_id="thr-5c1d9e2a",
                input=[InputItem(type="text", text="Run the tests and fix them.")],
            ),
        )
        out.append(Mutation(request, encode(request), command_digest(request)))
    return out


class Op(NamedTuple, Generic[X]):
    """An operation: its three contenders, each running one batch of
    ``n`` operations (``inputs(tag, n)``, ``tag`` unique to the batch)."""

    name: str
    inputs: Callable[[str, int], X]
    contenders: dict[str, Callable[[X], object]]


# -- the contenders ----------------------------------------------------------------------


class Stores(NamedTuple):
    """The stores of one backend (durable, or the memory reference)."""

    journal: CommandJournal
    inbox: Inbox
    replay_log: ReplayLog


def journal_batch(stores: Stores) -> Callable[[list[Mutation]], object]:
    journal = stores.journal

    def run(batch: list[Mutation]) -> None:
        for m in batch:
            journal.record(HOST, m.request, m.data)
            journal.settle(HOST, m.request.id, "answered")

    return run


def inbox_batch(stores: Stores) -> Callable[[list[Mutation]], object]:
    inbox = stores.inbox

    def run(batch: list[Mutation]) -> None:
        for m in batch:
            command_id = str(m.request.command_id)
            assert inbox.claim(HOST, command_id, m.digest, lease=LEASE).status == "new"
            inbox.commit(HOST, command_id, m.digest, RECEIPT)

    return run


def append_batch(stores: Stores) -> Callable[[tuple[str, int]], object]:
    replay_log = stores.replay_log

    def run(batch: tuple[str, int]) -> None:
        stream, n = batch
        for _ in range(n):
            replay_log.append(stream, lambda cursor: EVENT)

    return run


def page_batch(stores: Stores) -> Callable[[list[int]], object]:
    replay_log = stores.replay_log

    def run(afters: list[int]) -> None:
        for after in afters:
            assert len(replay_log.page("page-stream", after).events) == PAGE

    return run


class Cursor(Protocol):
    """What the floor needs of a DB-API cursor (sqlite3's or psycopg's)."""

    def execute(self, query: str, params: Sequence[Any], /) -> object: ...

    def executemany(self, query: str, params: Sequence[Sequence[Any]], /) -> object: ...

    def fetchall(self) -> list[Any]: ...


class Floor:
    """The bare SQL of each operation on one connection in autocommit mode
    (every statement its own transaction), on tables of the store's shape.
    ``ddl``: the backend's ``CREATE TABLE`` statements; ``mark``: its
    placeholder; ``key``: a key as the store keeps it (text or UTF-8)."""

    def __init__(
        self, cursor: Cursor, ddl: Sequence[str], mark: str, key: Callable[[str], Any]
    ) -> None:
        self._cur = cursor
        self._key = key
        self._cursors: dict[str, int] = {}
        for statement in ddl:
            cursor.execute(statement, ())

        def q(text: str) -> str:
            return text.replace("?", mark)

        self._record = q(
            "INSERT INTO bench_journal (host_id, request_id, command_id, method,"
            " data, recorded_at) VALUES (?, ?, ?, ?, ?, ?)"
        )
        self._settle = q(
            "UPDATE bench_journal SET outcome = ?, settled_at = ?"
            " WHERE host_id = ? AND request_id = ?"
        )
        self._claim = q(
            "INSERT INTO bench_commands (scope, command_id, digest, receipt,"
            " lease_until) VALUES (?, ?, ?, NULL, ?)"
        )
        self._commit = q(
            "UPDATE bench_commands SET receipt = ? WHERE scope = ? AND command_id = ?"
        )
        self._append = q(
            "INSERT INTO bench_replay (stream_id, cursor, data, size, appended_at)"
            " VALUES (?, ?, ?, ?, ?)"
        )
        self._page = q(
            "SELECT data FROM bench_replay WHERE stream_id = ? AND cursor > ?"
            " ORDER BY cursor LIMIT ?"
        )

    def journal(self, batch: list[Mutation]) -> None:
        execute, k = self._cur.execute, self._key
        host = k(HOST)
        for m in batch:
            r = m.request
            request_id = k(r.id)
            row = (host, request_id, k(str(r.command_id)), k(r.method), m.data)
            execute(self._record, (*row, time.time()))
            execute(self._settle, ("answered", time.time(), host, request_id))

    def inbox(self, batch: list[Mutation]) -> None:
        execute, k = self._cur.execute, self._key
        host = k(HOST)
        for m in batch:
            command_id = k(str(m.request.command_id))
            execute(self._claim, (host, command_id, m.digest, time.time() + LEASE))
            execute(self._commit, (RECEIPT, host, command_id))

    def append(self, batch: tuple[str, int]) -> None:
        stream, n = batch
        execute, stored = self._cur.execute, self._key(stream)
        last = self._cursors.get(stream, 0)
        for cursor in range(last + 1, last + n + 1):
            execute(self._append, (stored, cursor, EVENT, len(EVENT), time.time()))
        self._cursors[stream] = last + n

    def page(self, afters: list[int]) -> None:
        cur, stream = self._cur, self._key("page-stream")
        for after in afters:
            cur.execute(self._page, (stream, after, PAGE))
            assert len(cur.fetchall()) == PAGE

    def execute(self, statement: str) -> None:
        """Run one statement without parameters."""
        self._cur.execute(statement, ())

    def fill(self, stream: str, n: int) -> None:
        """``n`` events in ``stream``, in one transaction."""
        at, stored = time.time(), self._key(stream)
        rows = [(stored, c, EVENT, len(EVENT), at) for c in range(1, n + 1)]
        self._cur.execute("BEGIN", ())
        self._cur.executemany(self._append, rows)
        self._cur.execute("COMMIT", ())
        self._cursors[stream] = n


def operations(
    store: Stores, floor: Floor, memory: Stores, retained: int
) -> list[Op[Any]]:
    """The four operations, their contenders in the order store, floor,
    memory (pages read from a stream of ``retained`` events)."""
    rng = random.Random(7)

    def afters(tag: str, n: int) -> list[int]:
        return [rng.randint(0, retained - PAGE) for _ in range(n)]

    def appends(tag: str, n: int) -> tuple[str, int]:
        return ("append-stream", n)

    def trio(
        batch: Callable[[Stores], Callable[[X], object]], bare: Callable[[X], object]
    ) -> dict[str, Callable[[X], object]]:
        return {"store": batch(store), "floor": bare, "memory": batch(memory)}

    return [
        Op("journal record + settle", mutations, trio(journal_batch, floor.journal)),
        Op("inbox claim + commit", mutations, trio(inbox_batch, floor.inbox)),
        Op("replay append", appends, trio(append_batch, floor.append)),
        Op(f"replay page ({PAGE} events)", afters, trio(page_batch, floor.page)),
    ]


# -- measuring ---------------------------------------------------------------------------


class Counts(NamedTuple):
    rounds: int
    writes: int  # operations per batch of a write
    reads: int  # pages per batch
    retained: int  # events in the stream pages are read from


def measure(op: Op[Any], counts: Counts, label: str) -> dict[str, list[float]]:
    """µs per operation of each contender, one figure per round; the order
    of the contenders alternates between rounds."""
    n = counts.reads if op.name.startswith("replay page") else counts.writes
    names = list(op.contenders)
    for name in names:  # warm up: caches, prepared statements
        op.contenders[name](op.inputs(f"{label}-warm-{name}", max(1, n // 5)))
    times: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    for r in range(counts.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            batch = op.inputs(f"{label}-{r}-{name}", n)
            start = time.perf_counter()
            op.contenders[name](batch)
            times[name].append((time.perf_counter() - start) / n * 1e6)
    return times


def report(backend: str, op: Op[Any], times: dict[str, list[float]]) -> None:
    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    store, floor, memory = (
        statistics.median(times[k]) for k in ("store", "floor", "memory")
    )
    vs_floor = ratio("store", "floor")
    verdict = "met" if vs_floor <= TARGET else "NOT met"
    print(
        f"  {backend:10}{op.name:27}{store:10.1f}{floor:10.1f}{memory:10.2f}"
        f"{vs_floor:9.2f}x  {verdict:7}{ratio('store', 'memory'):10.0f}x"
    )


def profiled(backend: str, op: Op[Any], counts: Counts) -> None:
    """cProfile one batch of the store's operation."""
    n = counts.reads if op.name.startswith("replay page") else counts.writes
    batch = op.inputs(f"profile-{op.name}", n)
    profiler = cProfile.Profile()
    profiler.runcall(op.contenders["store"], batch)
    print(f"\n{backend} store, {op.name}, {n} operations:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


# -- the backends ------------------------------------------------------------------------

#: The floor's tables: the store's columns, types by backend, the primary
#: key the statements look rows up by and no other index.
DDL = (
    """CREATE TABLE bench_journal (
        host_id {key} NOT NULL, request_id {key} NOT NULL, command_id {key} NOT NULL,
        method {key} NOT NULL, data {blob} NOT NULL, recorded_at {real} NOT NULL,
        outcome TEXT, settled_at {real}, PRIMARY KEY (host_id, request_id))""",
    """CREATE TABLE bench_commands (
        scope {key} NOT NULL, command_id {key} NOT NULL, digest {blob} NOT NULL,
        receipt {blob}, lease_until {real} NOT NULL, PRIMARY KEY (scope, command_id))""",
    """CREATE TABLE bench_replay (
        stream_id {key} NOT NULL, cursor {int} NOT NULL, data {blob} NOT NULL,
        size INTEGER NOT NULL, appended_at {real} NOT NULL,
        PRIMARY KEY (stream_id, cursor))""",
)
SQLITE_TYPES = {"key": "TEXT", "blob": "BLOB", "real": "REAL", "int": "INTEGER"}
# FLOAT8, INT8: the store's DOUBLE PRECISION and BIGINT, under their aliases.
POSTGRES_TYPES = {"key": "BYTEA", "blob": "BYTEA", "real": "FLOAT8", "int": "INT8"}


class Transaction(Protocol):
    """What the fill needs of a store's transaction."""

    @property
    def replay_log(self) -> ReplayLog: ...


class Durable(Protocol):
    """A `SqliteStore` or a `PostgresStore`."""

    journal: CommandJournal
    inbox: Inbox

    @property
    def replay_log(self) -> ReplayLog: ...

    def transaction(self) -> AbstractContextManager[Transaction]: ...


def run_durable(
    backend: str,
    store: Durable,
    floor: Floor,
    counts: Counts,
    profile: bool,
    analyze: str | None = None,
) -> None:
    """Measure (or profile) one durable store against its floor and a new
    set of memory stores; ``analyze``: the statement that gathers the
    planner's statistics once the page streams are filled."""
    memory = Stores(MemoryJournal(), MemoryInbox(), MemoryReplayLog())
    # The stream every page reads, in each contender's store (the store's
    # in transactions of FILL_CHUNK appends).
    retained = counts.retained
    for start in range(0, retained, FILL_CHUNK):
        with store.transaction() as tx:
            for _ in range(min(FILL_CHUNK, retained - start)):
                tx.replay_log.append("page-stream", lambda cursor: EVENT)
    floor.fill("page-stream", retained)
    if analyze is not None:
        floor.execute(analyze)
    for _ in range(retained):
        memory.replay_log.append("page-stream", lambda cursor: EVENT)
    durable = Stores(store.journal, store.inbox, store.replay_log)
    for op in operations(durable, floor, memory, retained):
        if profile:
            profiled(backend, op, counts)
        else:
            report(backend, op, measure(op, counts, backend))


def sqlite_backend(directory: Path, counts: Counts, profile: bool) -> str:
    """The SQLite store and its floor, each in its own file in ``directory``;
    returns a note on the settings."""
    store = SqliteStore(directory / "stores.db")
    conn = sqlite3.connect(directory / "floor.db", isolation_level=None)
    try:
        # The store's settings (sqlite.py): WAL, fsync at every commit.
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        assert mode == "wal", mode
        conn.execute("PRAGMA synchronous = FULL")
        ddl = [statement.format(**SQLITE_TYPES) for statement in DDL]
        floor = Floor(conn.cursor(), ddl, "?", str)
        run_durable("sqlite", store, floor, counts, profile)
    finally:
        conn.close()
        store.close()
    return f"sqlite: WAL, synchronous=FULL, files in {directory.parent}"


def postgres_backend(counts: Counts, profile: bool) -> str:
    """The PostgreSQL store and its floor, in one fresh schema; returns a
    note on the server.

    Raises:
        LookupError: no server can be had (the message says why).
    """
    try:
        import psycopg

        from samgita_protocol.stores.postgres import PostgresStore
    except ImportError as missing:
        raise LookupError(
            f"{missing}: install psycopg[binary]==3.3.9 and pgserver==0.1.4"
        ) from None
    sys.path.insert(0, str(TESTS))
    from postgres_server import ENV, Unavailable, database  # type: ignore[import-not-found]

    try:
        with database() as db:
            dsn: str = db.fresh()
            with (
                PostgresStore(dsn) as store,
                psycopg.connect(dsn, autocommit=True) as conn,
            ):
                # The store's session settings (postgres.py): autocommit,
                # each commit flushed before it returns.
                conn.execute("SELECT set_config('synchronous_commit', 'on', false)")
                ddl = [statement.format(**POSTGRES_TYPES) for statement in DDL]
                floor = Floor(conn.cursor(), ddl, "%s", str.encode)
                # Without statistics the planner may sort every event after
                # the cursor for a page, store and floor alike (autovacuum
                # gathers them, at a time of its own): gather them once.
                analyze = "ANALYZE bench_replay, samgita_replay, samgita_streams"
                run_durable("postgres", store, floor, counts, profile, analyze)
                shown = conn.execute(
                    "SELECT current_setting('server_version'),"
                    " current_setting('fsync'), current_setting('wal_sync_method')"
                ).fetchone()
    except Unavailable as missing:
        raise LookupError(str(missing)) from None
    server = f"${ENV}" if os.environ.get(ENV) else "a private server (tests/)"
    version, fsync, sync_method = shown or ("?", "?", "?")
    return (
        f"postgres: PostgreSQL {version}, {server}; fsync {fsync},"
        f" wal_sync_method {sync_method}, synchronous_commit on"
    )


@contextmanager
def scratch(parent: str | None) -> Iterator[Path]:
    """A new directory for the SQLite files (under ``parent``), removed after."""
    path = Path(tempfile.mkdtemp(prefix="samgita-bench-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, help="rounds (15; 5 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a few seconds")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--dir", help="where the SQLite files go (the temp dir)")
    parser.add_argument(
        "--profile",
        choices=["sqlite", "postgres"],
        help="cProfile the store's operations on one backend instead",
    )
    args = parser.parse_args()
    counts = Counts(
        rounds=args.rounds or (5 if args.quick else 15),
        writes=20 if args.quick else 100,
        reads=40 if args.quick else 200,
        retained=1_024 if args.quick else 4_096,
    )
    only = args.profile or args.only
    profile = args.profile is not None
    print(
        f"samgita_protocol store bench (Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {platform.machine()}; {counts.rounds} "
        f"rounds of {counts.writes} writes / {counts.reads} pages per contender,\n"
        f"pages from a stream of {counts.retained:,} events; "
        f"medians of µs per operation and of the per-round ratios, target "
        f"store / floor <= {TARGET}x)"
    )
    if not profile:
        print(
            f"  {'backend':10}{'operation':27}{'store µs':>10}{'floor µs':>10}"
            f"{'memory µs':>10}{'/ floor':>10}{'':8}{'/ memory':>11}"
        )
    notes, missing = [], None
    if only in (None, "sqlite"):
        with scratch(args.dir) as directory:
            notes.append(sqlite_backend(directory, counts, profile))
    if only in (None, "postgres"):
        try:
            notes.append(postgres_backend(counts, profile))
        except LookupError as error:
            missing = str(error)
    print("\n".join(["", *FLOORS, *notes]))
    if missing is not None:
        print(f"PostgreSQL not measured: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
