"""What the store objects of the SQL backends share, on every backend
whose store has ``transaction()`` (``stores_backends.TRANSACTIONAL``):
their message bound; transactions shared with the host's own rows (the
claim, the host's effects and the receipt commit or roll back together; a
failed call inside changes nothing; misuse is refused; other threads
wait); and that a forked child must open its own. What only one backend
has is in test_stores_sqlite.py and test_stores_postgres.py."""

from __future__ import annotations

import functools
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Protocol, TypeAlias

import pytest

from samgita_protocol import ProtocolError, encode
from samgita_protocol.stores import Claim, StoreConflict
from samgita_protocol.stores.postgres import PostgresStore, PostgresTransaction
from samgita_protocol.stores.sqlite import SqliteStore, SqliteTransaction
from stores_backends import BACKENDS, TRANSACTIONAL, digest, mutation

Store: TypeAlias = SqliteStore | PostgresStore

#: The transaction class of each store class.
TRANSACTIONS: dict[type[Store], type[SqliteTransaction | PostgresTransaction]] = {
    SqliteStore: SqliteTransaction,
    PostgresStore: PostgresTransaction,
}


class Opener(Protocol):
    """Opens the store of the backend under test at the test's location."""

    def __call__(self, *, max_message_bytes: int = ...) -> Store: ...


@pytest.fixture(params=TRANSACTIONAL)
def opener(request: pytest.FixtureRequest, locate: Callable[[str], str]) -> Opener:
    backend: str = request.param
    open_store = BACKENDS[backend].store
    assert open_store is not None  # TRANSACTIONAL: a backend with a store object
    return functools.partial(open_store, locate(backend))


@pytest.fixture
def store(opener: Opener) -> Iterator[Store]:
    with opener() as opened:
        yield opened


def test_max_message_bytes(opener: Opener) -> None:
    with opener(max_message_bytes=20_000) as store:
        store.inbox.claim("h", "c1", digest("c1"), lease=60)
        with pytest.raises(ProtocolError, match="max_message_bytes"):
            store.inbox.commit("h", "c1", digest("c1"), bytes(20_001))
        store.inbox.commit("h", "c1", digest("c1"), bytes(20_000))


class TestTransaction:
    def test_claim_effects_and_receipt_commit_together(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.connection.execute("CREATE TABLE orders (command_id TEXT PRIMARY KEY)")
        with store.transaction() as tx:
            assert isinstance(tx, TRANSACTIONS[type(store)])
            assert tx.inbox.claim("h", "c1", digest("c1"), lease=60).status == "new"
            tx.connection.execute("INSERT INTO orders VALUES ('c1')")
            tx.inbox.commit("h", "c1", digest("c1"), b"done")
            tx.replay_log.append("s", lambda c: b"order placed")
            tx.checkpoints.advance("h", "s", 1)
            tx.journal.record("h", mutation("r1"), encode(mutation("r1")))
        assert store.inbox.claim("h", "c1", digest("c1"), lease=60) == Claim(
            status="duplicate", receipt=b"done"
        )
        assert store.replay_log.last_cursor("s") == 1
        assert store.checkpoints.load("h") == {"s": 1}
        assert [e.request_id for e in store.journal.unsettled("h")] == ["r1"]

    def test_an_error_rolls_everything_back(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.connection.execute("CREATE TABLE orders (command_id TEXT PRIMARY KEY)")
        with pytest.raises(KeyError), store.transaction() as tx:
            tx.inbox.claim("h", "c1", digest("c1"), lease=60)
            tx.connection.execute("INSERT INTO orders VALUES ('c1')")
            tx.inbox.commit("h", "c1", digest("c1"), b"done")
            tx.replay_log.append("s", lambda c: b"order placed")
            raise KeyError("the host failed")
        assert store.inbox.claim("h", "c1", digest("c1"), lease=60).status == "new"
        assert store.replay_log.last_cursor("s") == 0
        with store.transaction() as tx:
            assert tx.connection.execute("SELECT * FROM orders").fetchall() == []

    def test_a_failed_call_inside_changes_nothing_and_the_rest_commits(
        self, store: Store
    ) -> None:
        with store.transaction() as tx:
            tx.inbox.claim("h", "c1", digest("c1"), lease=60)
            with pytest.raises(StoreConflict):
                tx.inbox.commit("h", "c1", digest("other"), b"x")

            def boom(cursor: int) -> bytes:
                raise ValueError(cursor)

            tx.replay_log.append("s", lambda c: b"one")
            with pytest.raises(ValueError):
                tx.replay_log.append("s", boom)
            assert tx.replay_log.last_cursor("s") == 1
            tx.inbox.commit("h", "c1", digest("c1"), b"r")
        assert store.inbox.claim("h", "c1", digest("c1"), lease=1).receipt == b"r"
        assert store.replay_log.append("s", lambda c: b"two") == 2

    def test_misuse(self, store: Store) -> None:
        with store.transaction() as tx:
            with pytest.raises(RuntimeError, match="transaction"):
                store.inbox.claim("h", "c1", digest("c1"), lease=60)
            with pytest.raises(RuntimeError, match="transaction"), store.transaction():
                pass  # pragma: no cover - never entered
            assert store.checkpoints.load("h") == {}  # reads see the transaction

            def nested(cursor: int) -> bytes:
                tx.replay_log.append("s", lambda c: b"inner")
                return b"outer"

            with pytest.raises(RuntimeError, match="encode_at"):
                tx.replay_log.append("s", nested)
        with pytest.raises(RuntimeError, match="over"):
            tx.inbox.claim("h", "c1", digest("c1"), lease=60)
        with pytest.raises(RuntimeError, match="over"):
            tx.connection  # noqa: B018
        assert store.replay_log.last_cursor("s") == 0
        assert store.inbox.claim("h", "c1", digest("c1"), lease=60).status == "new"

    def test_other_threads_wait_for_it(self, store: Store) -> None:
        results: list[str] = []
        entered = threading.Event()

        def other() -> None:
            entered.wait()
            results.append(store.inbox.claim("h", "c1", digest("c1"), lease=60).status)

        thread = threading.Thread(target=other)
        thread.start()
        with store.transaction() as tx:
            entered.set()
            tx.inbox.claim("h", "c1", digest("c1"), lease=60)
            tx.inbox.commit("h", "c1", digest("c1"), b"r")
        thread.join()
        assert results == ["duplicate"]


def test_a_forked_child_must_open_its_own(store: Store) -> None:
    store.checkpoints.advance("h", "s", 1)
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_use_inherited, args=(store, writer))
    child.start()
    writer.close()
    assert "another process" in reader.recv()
    child.join()
    assert child.exitcode == 0
    assert store.checkpoints.load("h") == {"s": 1}  # the parent's is fine
    assert store.checkpoints.advance("h", "s", 2) == 2


def _use_inherited(store: Store, out: Connection) -> None:
    try:
        store.checkpoints.load("h")
    except RuntimeError as error:
        out.send(str(error))
    else:
        out.send("no error")
    store.close()  # does nothing here: its connections are the parent's
