"""What only the PostgreSQL backend has: its settings and schema version,
several nodes (store objects, each with its own connections) on one
database, the live tail across nodes (``replay_log.wait_for``), another
node waiting for a transaction's rows, and its lifecycle (close, a lost
connection). The contracts it shares with every backend are in
test_stores_conformance.py, test_stores_reference.py and
test_stores_durable.py; its message bound, transactions shared with the
host's own rows and a forked child in test_stores_sql.py (with the SQLite
backend); the server is the session's (conftest.py)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from postgres_server import Database
from samgita_protocol import ErrorCode, ProtocolError
from samgita_protocol.stores import ReplayLog, _postgres_replay
from samgita_protocol.stores.postgres import (
    DEFAULT_LOCK_TIMEOUT,
    STORE_SCHEMA_VERSION,
    PostgresReplayLog,
    PostgresStore,
)
from stores_backends import digest, mutation

#: Hang guard only: how long a waiter that must wake may take.
WAKE_TIMEOUT = 60.0
#: What a waiter that must be woken waits for at most (longer than the guard).
LONG_WAIT = 300.0

TABLES = {
    "samgita_schema",
    "samgita_journal",
    "samgita_commands",
    "samgita_events",
    "samgita_streams",
    "samgita_replay",
    "samgita_checkpoints",
}


@pytest.fixture
def dsn(postgres: Database) -> str:
    """A fresh, empty schema of the session's server."""
    return postgres.fresh()


@pytest.fixture
def store(dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore(dsn) as opened:
        yield opened


@pytest.fixture
def nodes(dsn: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """Two nodes on one database: two store objects, each with its own
    connections (named node-a and node-b on the server)."""
    a = PostgresStore(make_conninfo(dsn, application_name="node-a"))
    b = PostgresStore(make_conninfo(dsn, application_name="node-b"))
    yield a, b
    a.close()
    b.close()


def _admin(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(dsn, autocommit=True)


class TestOpen:
    def test_settings(self, store: PostgresStore, dsn: str) -> None:
        assert store.durable is True
        assert repr(store).startswith("PostgresStore('dbname=postgres ")
        assert DEFAULT_LOCK_TIMEOUT == 5.0
        with store.transaction() as tx:
            run = tx.connection.execute
            assert run("SHOW synchronous_commit").fetchone() == ("on",)
            assert run("SHOW lock_timeout").fetchone() == ("5s",)
            assert run("SELECT version FROM samgita_schema").fetchall() == [
                (STORE_SCHEMA_VERSION,)
            ]
            tables = run(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            ).fetchall()
        assert {name for (name,) in tables} == TABLES
        with PostgresStore(dsn, lock_timeout=0.25) as other, other.transaction() as tx:
            assert tx.connection.execute("SHOW lock_timeout").fetchone() == ("250ms",)

    def test_a_newer_schema_is_refused(self, dsn: str) -> None:
        PostgresStore(dsn).close()
        with _admin(dsn) as raw:
            raw.execute(
                "UPDATE samgita_schema SET version = %s", (STORE_SCHEMA_VERSION + 1,)
            )
        with pytest.raises(ValueError, match="newer release"):
            PostgresStore(dsn)

    def test_a_host_table_in_the_schema_is_left_alone(self, dsn: str) -> None:
        with _admin(dsn) as raw:
            raw.execute("CREATE TABLE orders (id TEXT)")
            raw.execute("INSERT INTO orders VALUES ('o1')")
        with PostgresStore(dsn) as store, store.transaction() as tx:
            assert tx.connection.execute("SELECT id FROM orders").fetchall() == [
                ("o1",)
            ]

    def test_wrong_arguments(self, dsn: str) -> None:
        with pytest.raises(TypeError, match="dsn"):
            PostgresStore(3)  # type: ignore[arg-type]
        for timeout in (0, -1, float("nan")):
            with pytest.raises(ValueError, match="lock_timeout"):
                PostgresStore(dsn, lock_timeout=timeout)
        with pytest.raises(ValueError, match="max_message_bytes"):
            PostgresStore(dsn, max_message_bytes=0)
        with pytest.raises(psycopg.ProgrammingError):
            PostgresStore("not a connection string")
        with pytest.raises(psycopg.OperationalError):
            PostgresStore("host=/nonexistent/socket/dir dbname=postgres")

    def test_keys_may_hold_any_wire_id(self, store: PostgresStore) -> None:
        # PostgreSQL text cannot hold U+0000; a wire id can, and keys are
        # stored as bytes.
        odd = "a\x00é"
        assert store.inbox.claim(odd, odd, digest(odd), lease=60).status == "new"
        assert store.replay_log.append(odd, lambda c: b"x") == 1
        assert store.checkpoints.advance(odd, odd, 3) == 3
        assert store.checkpoints.load(odd) == {odd: 3}
        store.journal.record(odd, mutation(odd, command_id=odd), b"data")
        [entry] = store.journal.unsettled(odd)
        assert (entry.request_id, entry.command_id) == (odd, odd)

    def test_nodes_creating_the_tables_at_once(self, dsn: str) -> None:
        opened: list[PostgresStore] = []
        together = threading.Barrier(8)

        def opener() -> None:
            together.wait()
            opened.append(PostgresStore(dsn))

        threads = [threading.Thread(target=opener) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(opened) == 8
        assert [s.checkpoints.advance("h", "s", n) for n, s in enumerate(opened)] == [
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
        ]
        for store in opened:
            store.close()


def _run_threads(targets: list[Callable[[], None]]) -> None:
    start = threading.Barrier(len(targets))

    def run(target: Callable[[], None]) -> None:
        start.wait()
        target()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class TestTwoNodes:
    def test_concurrent_claims_give_exactly_one_new(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        ids = [f"c{n}" for n in range(80)]
        won: list[list[str]] = [[] for _ in range(6)]
        answers: set[str] = set()

        def claimer(node: PostgresStore, mine: list[str]) -> Callable[[], None]:
            def claim_all() -> None:
                for command_id in ids:
                    claim = node.inbox.claim(
                        "h", command_id, digest(command_id), lease=60
                    )
                    answers.add(claim.status)
                    if claim.status == "new":
                        mine.append(command_id)
                        node.inbox.commit("h", command_id, digest(command_id), b"r")

            return claim_all

        _run_threads([claimer(nodes[n % 2], mine) for n, mine in enumerate(won)])
        assert sorted(c for mine in won for c in mine) == sorted(ids)
        assert answers <= {"new", "in_progress", "duplicate"}
        assert all(mine for mine in won[:2])  # both nodes took part

    def test_an_expired_lease_is_taken_over_once(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        ids = [f"c{n}" for n in range(40)]
        for command_id in ids:
            nodes[0].inbox.claim("h", command_id, digest(command_id), lease=1, now=100)
        won: list[list[str]] = [[] for _ in range(4)]

        def claimer(node: PostgresStore, mine: list[str]) -> Callable[[], None]:
            def claim_all() -> None:
                for command_id in ids:
                    claim = node.inbox.claim(
                        "h", command_id, digest(command_id), lease=60, now=200
                    )
                    if claim.status == "new":
                        mine.append(command_id)
                    else:
                        assert claim.status == "in_progress", claim

            return claim_all

        _run_threads([claimer(nodes[n % 2], mine) for n, mine in enumerate(won)])
        assert sorted(c for mine in won for c in mine) == sorted(ids)

    def test_cursors_stay_contiguous_under_appends_from_both(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        cursors: list[int] = []
        count = 40

        def appender(node: PostgresStore, name: str) -> Callable[[], None]:
            def append_all() -> None:
                for n in range(count):
                    cursors.append(
                        node.replay_log.append(
                            "s", lambda cursor, n=n: f"{name}:{n}:{cursor}".encode()
                        )
                    )

            return append_all

        writers = [appender(nodes[n % 2], f"w{n}") for n in range(6)]
        _run_threads(writers)
        total = count * len(writers)
        assert sorted(cursors) == list(range(1, total + 1))
        log = nodes[1].replay_log
        assert log.last_cursor("s") == total
        events: list[bytes] = []
        after = 0
        while after < total:
            page = log.page("s", after)
            events += page.events
            after = page.cursor
        written = set()
        for cursor, event in enumerate(events, 1):
            name, n, at = event.decode().split(":")
            assert int(at) == cursor  # encoded at the cursor it is stored at
            written.add((name, n))
        assert len(written) == total  # each append exactly once

    def test_checkpoints_race_to_the_maximum(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        def advancer(node: PostgresStore, offset: int) -> Callable[[], None]:
            def advance_all() -> None:
                for cursor in range(offset, 400, 4):
                    stored = node.checkpoints.advance("h", "s", cursor)
                    assert stored >= cursor

            return advance_all

        _run_threads([advancer(nodes[n % 2], n) for n in range(4)])
        assert nodes[0].checkpoints.load("h") == {"s": 399}

    def test_alternating_nodes_each_lose_the_cursor_they_guessed(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        # Each node guesses the cursor after the last one it assigned; when
        # the nodes take turns, the other node took it every time.
        calls: list[tuple[str, int]] = []

        def event(name: str, n: int) -> Callable[[int], bytes]:
            def encode_at(cursor: int) -> bytes:
                calls.append((name, cursor))
                return f"{name}:{n}:{cursor}".encode()

            return encode_at

        turns = [("a", nodes[0]), ("b", nodes[1])] * 6
        cursors = [
            node.replay_log.append("s", event(name, n))
            for n, (name, node) in enumerate(turns)
        ]
        assert cursors == list(range(1, 13))
        expected: list[tuple[str, int]] = []
        for cursor, (name, _) in enumerate(turns, 1):
            if cursor > 2:  # the guess first (encoded, not stored), then the cursor
                expected.append((name, cursor - 1))
            expected.append((name, cursor))
        assert calls == expected
        page = nodes[1].replay_log.page("s", 0)
        assert page.events == [
            f"{name}:{n}:{n + 1}".encode() for n, (name, _) in enumerate(turns)
        ]
        # A node appending again after its own append guesses right: once.
        calls.clear()
        assert nodes[1].replay_log.append("s", event("b", 12)) == 13
        assert calls == [("b", 13)]
        assert nodes[0].replay_log.page("s", 12).events == [b"b:12:13"]
        assert nodes[0].replay_log.last_cursor("s") == 13

    def test_pages_stay_whole_while_another_node_trims(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        a, b = nodes
        for _ in range(200):
            a.replay_log.append("s", lambda cursor: b"e%d" % cursor)
        gaps = 0

        def trim_all() -> None:
            for keep in range(199, -1, -1):
                a.replay_log.trim("s", keep_events=keep)

        trimmer = threading.Thread(target=trim_all)
        trimmer.start()
        done = False
        while not done:  # the last round after the last trim: all gaps
            done = not trimmer.is_alive()
            for after in (0, 50, 150):
                try:
                    page = b.replay_log.page("s", after, max_events=40)
                except ProtocolError as error:
                    assert error.code == ErrorCode.REPLAY_GAP
                    gaps += 1
                    continue
                # One snapshot: never a page with a hole, or cut short.
                count = min(40, 200 - after)
                assert page.events == [
                    b"e%d" % c for c in range(after + 1, after + count + 1)
                ]
                assert page.cursor == after + count
        trimmer.join()
        assert gaps > 0
        assert b.replay_log.first_cursor("s") == 201


def _listening(dsn: str, node: str) -> None:
    # Wait until node's tail listens (its LISTEN connection is up).
    deadline = time.monotonic() + WAKE_TIMEOUT
    with _admin(dsn) as admin:
        while not admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            " AND query LIKE 'LISTEN %%'",
            (node,),
        ).fetchone() == (1,):
            assert time.monotonic() < deadline, "the tail never listened"
            time.sleep(0.01)


class _Waiter:
    """A thread waiting on ``log.wait_for(stream_id, after)``."""

    def __init__(self, log: PostgresReplayLog, stream_id: str, after: int) -> None:
        self.result: queue.Queue[int] = queue.Queue()
        self.thread = threading.Thread(
            target=lambda: self.result.put(
                log.wait_for(stream_id, after, timeout=LONG_WAIT)
            )
        )
        self.thread.start()

    def woken(self) -> int:
        return self.result.get(timeout=WAKE_TIMEOUT)


class TestLiveTail:
    def test_a_waiter_on_one_node_wakes_when_another_appends(
        self, nodes: tuple[PostgresStore, PostgresStore], dsn: str
    ) -> None:
        a, b = nodes
        assert isinstance(b.replay_log, ReplayLog)
        a.replay_log.append("s", lambda c: b"first")
        waiter = _Waiter(b.replay_log, "s", 1)
        _listening(dsn, "node-b")
        time.sleep(0.05)  # let the waiter find nothing after cursor 1 yet
        assert a.replay_log.append("s", lambda c: b"second") == 2
        assert waiter.woken() == 2
        assert b.replay_log.page("s", 1).events == [b"second"]

    def test_a_client_resumes_on_another_node_and_keeps_receiving(
        self, nodes: tuple[PostgresStore, PostgresStore]
    ) -> None:
        # Node A serves the stream; the client moved to node B with its
        # checkpoint 2, reads what it missed, then tails what A appends.
        a, b = nodes
        for word in ["one", "two", "three"]:
            a.replay_log.append("s", lambda c, w=word: w.encode())
        received: list[bytes] = []
        checkpoint = 2
        page = b.replay_log.page("s", checkpoint)  # what it missed
        received += page.events
        checkpoint = page.cursor
        appender = threading.Thread(
            target=lambda: [
                a.replay_log.append("s", lambda c, w=w: w.encode())
                for w in ["four", "five", "six"]
            ]
        )
        appender.start()
        for _ in range(10):  # at most one wake per event, and then some
            if len(received) == 4:
                break
            b.replay_log.wait_for("s", checkpoint, timeout=WAKE_TIMEOUT)
            page = b.replay_log.page("s", checkpoint)
            received += page.events
            checkpoint = page.cursor
        appender.join()
        assert received == [b"three", b"four", b"five", b"six"]

    def test_a_timeout_returns_the_last_cursor(self, store: PostgresStore) -> None:
        log = store.replay_log
        assert log.wait_for("s", 0, timeout=0.01) == 0
        for _ in range(3):
            log.append("s", lambda c: b"x")
        assert log.wait_for("s", 3, timeout=0.01) == 3
        assert log.wait_for("s", 1, timeout=LONG_WAIT) == 3  # there already
        assert log.wait_for("other", 0, timeout=0.01) == 0

    def test_waiters_of_several_streams(
        self, nodes: tuple[PostgresStore, PostgresStore], dsn: str
    ) -> None:
        a, b = nodes
        first = _Waiter(b.replay_log, "s1", 0)
        second = _Waiter(b.replay_log, "s2", 0)
        also_first = _Waiter(b.replay_log, "s1", 0)
        _listening(dsn, "node-b")
        a.replay_log.append("s1", lambda c: b"x")
        assert first.woken() == 1 and also_first.woken() == 1
        assert second.thread.is_alive()
        a.replay_log.append("s2", lambda c: b"y")
        assert second.woken() == 1

    def test_a_lost_listening_connection_misses_nothing(
        self, nodes: tuple[PostgresStore, PostgresStore], dsn: str
    ) -> None:
        a, b = nodes
        b.replay_log.wait_for("s", 0, timeout=0.01)  # the tail is up
        _listening(dsn, "node-b")
        with _admin(dsn) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'node-b' AND query LIKE 'LISTEN %'"
            )
        waiter = _Waiter(b.replay_log, "s", 0)
        a.replay_log.append("s", lambda c: b"while it reconnects")
        assert waiter.woken() == 1
        _listening(dsn, "node-b")  # listening again

    def test_wrong_arguments(self, store: PostgresStore) -> None:
        log = store.replay_log
        with pytest.raises(ValueError, match="stream_id"):
            log.wait_for("", 0, timeout=1)
        with pytest.raises(TypeError, match="after"):
            log.wait_for("s", True, timeout=1)
        with pytest.raises(ValueError, match="after"):
            log.wait_for("s", -1, timeout=1)
        with pytest.raises(ValueError, match="timeout"):
            log.wait_for("s", 0, timeout=0)
        with store.transaction() as tx, pytest.raises(RuntimeError, match="outside"):
            tx.replay_log.wait_for("s", 0, timeout=1)

    def test_no_thread_before_the_first_wait_and_none_after_close(
        self, dsn: str
    ) -> None:
        def tails() -> int:
            return sum(t.name == "samgita-postgres-tail" for t in threading.enumerate())

        before = tails()
        store = PostgresStore(dsn)
        store.replay_log.append("s", lambda c: b"x")
        assert tails() == before
        store.replay_log.wait_for("s", 1, timeout=0.01)
        assert tails() == before + 1
        store.close()
        assert tails() == before


class TestTransaction:
    def test_another_node_waits_for_its_rows_up_to_lock_timeout(self, dsn: str) -> None:
        with PostgresStore(dsn) as a, PostgresStore(dsn, lock_timeout=0.05) as b:
            with a.transaction() as tx:
                tx.inbox.claim("h", "c1", digest("c1"), lease=60)
                with pytest.raises(psycopg.errors.LockNotAvailable):
                    b.inbox.claim("h", "c1", digest("c1"), lease=60)
                assert b.inbox.claim("h", "c2", digest("c2"), lease=60).status == "new"
                tx.inbox.commit("h", "c1", digest("c1"), b"r")
            assert b.inbox.claim("h", "c1", digest("c1"), lease=60).receipt == b"r"

    def test_appends_in_a_transaction_commit_or_roll_back_with_it(
        self, store: PostgresStore
    ) -> None:
        log = store.replay_log
        assert log.append("s", lambda c: b"e%d" % c) == 1
        with pytest.raises(KeyError), store.transaction() as tx:
            assert tx.replay_log.append("s", lambda c: b"e%d" % c) == 2
            assert tx.replay_log.append("s", lambda c: b"e%d" % c) == 3
            raise KeyError("roll back")
        assert log.last_cursor("s") == 1
        assert log.append("s", lambda c: b"e%d" % c) == 2
        with store.transaction() as tx:
            assert tx.replay_log.append("s", lambda c: b"e%d" % c) == 3
            assert tx.replay_log.append("s", lambda c: b"e%d" % c) == 4
        assert log.append("s", lambda c: b"e%d" % c) == 5
        assert log.page("s", 0).events == [b"e%d" % c for c in range(1, 6)]

    def test_a_store_remembers_a_bounded_number_of_streams(
        self, store: PostgresStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_postgres_replay, "_REMEMBERED", 3)
        log = store.replay_log
        for round_ in range(1, 3):
            for n in range(5):
                assert log.append(f"s{n}", lambda c: b"e%d" % c) == round_
        assert len(log._last) == 3  # the last three streams appended to
        assert [log.last_cursor(f"s{n}") for n in range(5)] == [2] * 5


class TestLifecycle:
    def test_close(self, dsn: str) -> None:
        store = PostgresStore(dsn)
        store.checkpoints.advance("h", "s", 1)
        store.close()
        store.close()
        with pytest.raises(psycopg.OperationalError):
            store.checkpoints.load("h")
        with pytest.raises(psycopg.OperationalError):
            store.checkpoints.advance("h", "s", 2)
        with PostgresStore(dsn) as again:
            assert again.checkpoints.load("h") == {"s": 1}

    def test_a_lost_connection_is_replaced_at_the_next_call(
        self, store: PostgresStore, dsn: str
    ) -> None:
        store.checkpoints.advance("h", "s", 1)
        with store.transaction() as tx:
            pid = tx.connection.info.backend_pid
        with _admin(dsn) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            store.checkpoints.advance("h", "s", 2)  # its outcome is unknown
        assert store.checkpoints.advance("h", "s", 3) == 3
        with store.transaction() as tx:
            assert tx.connection.info.backend_pid != pid


def test_without_psycopg_the_import_names_the_extra() -> None:
    probe = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if it were not installed\n"
        "import samgita_protocol.stores\n"
        "try:\n"
        "    import samgita_protocol.stores.postgres\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert "pip install 'samgita-protocol[postgres]'" in out.stdout
