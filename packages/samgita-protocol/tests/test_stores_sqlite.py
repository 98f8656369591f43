"""What only the SQLite backend has: its settings, its schema version,
several store objects on one file, and its lifecycle (close, a busy
writer lock). The contracts it shares with every backend are in
test_stores_conformance.py and test_stores_durable.py; its message bound,
transactions shared with the host's own rows and a forked child in
test_stores_sql.py (with the PostgreSQL backend)."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from samgita_protocol.stores.sqlite import (
    DEFAULT_BUSY_TIMEOUT,
    STORE_SCHEMA_VERSION,
    SqliteStore,
)
from stores_backends import PRELOAD, digest, open_worker


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "stores.db")


@pytest.fixture
def store(path: str) -> Iterator[SqliteStore]:
    with SqliteStore(path) as opened:
        yield opened


class TestOpen:
    def test_settings(self, store: SqliteStore, path: str) -> None:
        assert store.durable is True and store.path == path
        assert repr(store) == f"SqliteStore({path!r})"
        assert DEFAULT_BUSY_TIMEOUT == 5.0
        with store.transaction() as tx:
            pragma = tx.connection.execute
            assert pragma("PRAGMA journal_mode").fetchone() == ("wal",)
            assert pragma("PRAGMA synchronous").fetchone() == (2,)  # FULL
            assert pragma("PRAGMA busy_timeout").fetchone() == (5000,)
            # The schema version is a table of ours; user_version is the host's.
            assert pragma("SELECT version FROM samgita_schema").fetchall() == [
                (STORE_SCHEMA_VERSION,)
            ]
            assert pragma("PRAGMA user_version").fetchone() == (0,)

    def test_a_newer_schema_is_refused(self, path: str) -> None:
        SqliteStore(path).close()
        with sqlite3.connect(path) as raw:
            raw.execute(
                "UPDATE samgita_schema SET version = ?", (STORE_SCHEMA_VERSION + 1,)
            )
        raw.close()
        with pytest.raises(ValueError, match="newer release"):
            SqliteStore(path)

    def test_a_host_table_in_the_file_is_left_alone(self, path: str) -> None:
        with sqlite3.connect(path) as raw:
            raw.execute("PRAGMA user_version = 7")
            raw.execute("CREATE TABLE orders (id TEXT)")
            raw.execute("INSERT INTO orders VALUES ('o1')")
        raw.close()
        with SqliteStore(path) as store, store.transaction() as tx:
            assert tx.connection.execute("SELECT id FROM orders").fetchall() == [
                ("o1",)
            ]
            assert tx.connection.execute("PRAGMA user_version").fetchone() == (7,)

    def test_wrong_arguments(self, path: str, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="WAL"):
            SqliteStore(":memory:")
        with pytest.raises(TypeError, match="path"):
            SqliteStore(3)  # type: ignore[arg-type]
        for timeout in (0, -1, float("nan")):
            with pytest.raises(ValueError, match="busy_timeout"):
                SqliteStore(path, busy_timeout=timeout)
        with pytest.raises(ValueError, match="max_message_bytes"):
            SqliteStore(path, max_message_bytes=0)
        (tmp_path / "junk.db").write_bytes(b"not a database" * 100)
        with pytest.raises(sqlite3.DatabaseError):
            SqliteStore(str(tmp_path / "junk.db"))

    def test_a_path_like(self, tmp_path: Path) -> None:
        with SqliteStore(tmp_path / "p.db") as store:
            assert store.path == str(tmp_path / "p.db")


def test_processes_creating_one_file_at_once(tmp_path: Path) -> None:
    # Switching a new file to WAL does not wait for a busy lock by itself:
    # the store retries it, so simultaneous first opens all succeed. The
    # processes create the same new files, each at the same moment.
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    locations = [str(tmp_path / str(n)) for n in range(10)]
    for location in locations:
        os.mkdir(location)
    count = 8
    together = ctx.Barrier(count)
    out = ctx.Queue()
    openers = [
        ctx.Process(target=open_worker, args=("sqlite", locations, together, out))
        for _ in range(count)
    ]
    for opener in openers:
        opener.start()
    assert [out.get(timeout=60) for _ in openers] == ["ok"] * len(openers)
    for opener in openers:
        opener.join()


def test_the_switch_to_wal_waits_for_a_writer(path: str) -> None:
    # Another connection writing to a file not yet in WAL: SQLite refuses
    # the switch at once, without its busy handler. The store retries for
    # up to busy_timeout.
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("CREATE TABLE host_rows (a)")
    raw.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        SqliteStore(path, busy_timeout=0.05)
    opened: list[SqliteStore] = []
    opener = threading.Thread(target=lambda: opened.append(SqliteStore(path)))
    opener.start()
    time.sleep(0.05)  # let the opener find the lock taken
    raw.execute("ROLLBACK")
    opener.join()
    raw.close()
    assert opened[0].checkpoints.advance("h", "s", 1) == 1
    opened[0].close()


class TestLifecycle:
    def test_close(self, path: str) -> None:
        store = SqliteStore(path)
        store.checkpoints.advance("h", "s", 1)
        store.close()
        store.close()
        with pytest.raises(sqlite3.ProgrammingError):
            store.checkpoints.load("h")
        with SqliteStore(path) as again:
            assert again.checkpoints.load("h") == {"s": 1}
        with pytest.raises(sqlite3.ProgrammingError):
            again.checkpoints.load("h")

    def test_several_store_objects_on_one_file(self, path: str) -> None:
        stores = [SqliteStore(path) for _ in range(3)]
        won: list[list[str]] = [[] for _ in stores]
        start = threading.Barrier(len(stores))

        def claimer(store: SqliteStore, mine: list[str]) -> None:
            start.wait()
            for n in range(30):
                if (
                    store.inbox.claim("h", f"c{n}", digest(str(n)), lease=60).status
                    == "new"
                ):
                    mine.append(f"c{n}")

        threads = [
            threading.Thread(target=claimer, args=(s, mine))
            for s, mine in zip(stores, won, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(c for mine in won for c in mine) == sorted(
            f"c{n}" for n in range(30)
        )
        assert stores[2].replay_log.append("s", lambda c: b"a") == 1
        assert stores[0].replay_log.append("s", lambda c: b"b") == 2
        for store in stores:
            store.close()

    def test_a_busy_writer_lock_fails_after_busy_timeout(self, path: str) -> None:
        with SqliteStore(path) as holder, SqliteStore(path, busy_timeout=0.05) as other:
            with holder.transaction() as tx:
                tx.checkpoints.advance("h", "s", 5)
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.checkpoints.advance("h", "s", 9)
                assert other.checkpoints.load("h") == {}  # readers are not blocked
            assert other.checkpoints.load("h") == {"s": 5}
            assert other.checkpoints.advance("h", "s", 9) == 9
