"""The PostgreSQL backend of the four stores, for hosts on several processes
or machines: psycopg 3, installed by the ``postgres`` extra
(``pip install 'samgita-protocol[postgres]'``).

``PostgresStore(dsn)`` connects to the database (a libpq connection string
or ``postgresql://`` URI), creates its tables when they are missing, and
owns one connection; its ``journal``, ``inbox``, ``replay_log`` and
``checkpoints`` implement the interfaces of ``samgita_protocol.stores``
with the same rules as the memory and SQLite stores, and ``durable`` is
``True``. Any number of store objects, in any number of processes on any
number of machines, may use the same database: every call is atomic on
the server, so claims, cursors and checkpoints are decided once for all
of them. What only this backend has: a live tail across nodes,
:meth:`PostgresReplayLog.wait_for <samgita_protocol.stores.postgres.PostgresReplayLog.wait_for>`.

What it promises, and how:

* **Durability.** Each connection sets ``synchronous_commit = on``: a call
  returns after the server flushed its commit to the write-ahead log (and,
  with synchronous replication, to the standbys it names). An
  acknowledged call survives a crash of the calling process (also
  ``SIGKILL``) and of the server; it survives a power loss when the
  server runs with ``fsync = on`` (the default) on a disk that honours
  fsync. ``fsync`` is the server's setting, not the session's.
* **Atomic writes** (see ``_postgres_stores``): a new row by ``INSERT ...
  ON CONFLICT``, a change by one compare-and-set statement, a checkpoint
  by an upsert keeping ``GREATEST``; a stream's cursors are assigned under
  a lock on the stream's row, so they are contiguous whichever node
  appends. A write waiting for another's row lock raises
  ``psycopg.errors.LockNotAvailable`` after ``lock_timeout`` seconds (5).
* **One connection per store object** in autocommit mode, opened in the
  constructor (never at import), usable from any thread behind one lock,
  and a second one for the live tail, opened by the first
  :meth:`~PostgresReplayLog.wait_for`. A call whose connection was lost
  raises ``psycopg.OperationalError`` (whether it took effect is unknown,
  as with any lost answer); the next call opens a new connection. A
  connection does not survive ``fork()``: a store used in another process
  than the one that opened it raises ``RuntimeError``.
* **Your own rows in the same transaction.**
  :meth:`PostgresStore.transaction` yields a :class:`PostgresTransaction`:
  its ``connection`` for your own tables in the same database, and the
  four stores bound to that one transaction, so an effect and its receipt
  commit together or not at all.
* **Where the tables are.** In the connection's current schema (the first
  existing schema of its ``search_path``, normally ``public``): give
  another with ``options=-csearch_path=NAME`` in the connection string.
  Every table is named ``samgita_*``; ``samgita_schema`` holds the
  version of the tables (:data:`STORE_SCHEMA_VERSION`), for a later
  release to migrate, and a database written by a newer release is
  refused. Keys are stored as their UTF-8 bytes (``bytea``).

Tested against PostgreSQL 16; any release from 10 has what it uses.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Final

try:
    import psycopg
    from psycopg import sql
    from psycopg.pq import TransactionStatus
except ImportError as missing:  # pragma: no cover - tested in a fresh interpreter
    raise ImportError(
        "samgita_protocol.stores.postgres needs psycopg 3: install the postgres "
        "extra, pip install 'samgita-protocol[postgres]'"
    ) from missing

from .._options import DEFAULT_MAX_MESSAGE_BYTES, positive_int, wrong_type
from ._backend import T
from ._postgres_replay import CHANNEL, PostgresReplayLog
from ._postgres_stores import (
    Conn,
    PostgresCheckpoints,
    PostgresInbox,
    PostgresJournal,
    Work,
)
from ._rules import reentered, seconds
from ._types import CheckpointStore, CommandJournal, Inbox

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "STORE_SCHEMA_VERSION",
    "PostgresReplayLog",
    "PostgresStore",
    "PostgresTransaction",
]

#: Seconds a write waits for another's row lock before it raises.
DEFAULT_LOCK_TIMEOUT: Final = 5.0

#: The version of the tables this release reads and writes.
STORE_SCHEMA_VERSION: Final = 1

#: The advisory lock that serializes creating the tables ("samgit").
_SCHEMA_LOCK: Final = 0x73616D676974

_TABLES: Final = (
    "CREATE TABLE samgita_schema (version INTEGER NOT NULL)",
    # Record order is seq order; the partial index serves unsettled().
    """CREATE TABLE samgita_journal (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        host_id BYTEA NOT NULL, request_id BYTEA NOT NULL,
        command_id BYTEA NOT NULL, method BYTEA NOT NULL, data BYTEA NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL, outcome TEXT,
        settled_at DOUBLE PRECISION,
        UNIQUE (host_id, request_id))""",
    """CREATE INDEX samgita_journal_unsettled
        ON samgita_journal (host_id, seq) WHERE outcome IS NULL""",
    # A NULL receipt is a held claim, leased until lease_until.
    """CREATE TABLE samgita_commands (
        scope BYTEA NOT NULL, command_id BYTEA NOT NULL, digest BYTEA NOT NULL,
        receipt BYTEA, lease_until DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (scope, command_id))""",
    """CREATE TABLE samgita_events (
        scope BYTEA NOT NULL, event_id BYTEA NOT NULL, digest BYTEA NOT NULL,
        status TEXT NOT NULL,
        PRIMARY KEY (scope, event_id))""",
    # A stream's cursors outlive its events: they never restart after a
    # trim. Its row is the lock its cursors are assigned under.
    """CREATE TABLE samgita_streams (
        stream_id BYTEA PRIMARY KEY, first_cursor BIGINT NOT NULL,
        last_cursor BIGINT NOT NULL)""",
    """CREATE TABLE samgita_replay (
        stream_id BYTEA NOT NULL, cursor BIGINT NOT NULL, data BYTEA NOT NULL,
        size INTEGER NOT NULL, appended_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (stream_id, cursor))""",
    """CREATE TABLE samgita_checkpoints (
        host_id BYTEA NOT NULL, stream_id BYTEA NOT NULL, cursor BIGINT NOT NULL,
        PRIMARY KEY (host_id, stream_id))""",
)

_NESTED: Final = (
    "this thread is inside a transaction or an append's encode_at of this "
    "store: in a transaction call its stores (tx.inbox, ...), and never call "
    "a store from encode_at"
)

#: A connection in these states is in a transaction (a closed or lost one
#: is UNKNOWN: its next statement raises psycopg's own error).
_BUSY: Final = frozenset(
    {TransactionStatus.ACTIVE, TransactionStatus.INTRANS, TransactionStatus.INERROR}
)

#: Seconds the listening thread waits for notifications before it looks
#: whether its store was closed.
_POLL: Final = 0.2
#: Seconds before the first new try to open a lost listening connection;
#: doubled at each failure, up to _RETRY_MAX.
_RETRY: Final = 0.05
_RETRY_MAX: Final = 2.0


class _Connection:
    """The connection of one `PostgresStore`: one lock; a lost connection
    is replaced at the next call made outside a transaction."""

    __slots__ = ("bound", "closed", "conn", "connect", "lock", "pid")

    def __init__(self, conn: Conn, connect: Callable[[], Conn]) -> None:
        self.conn = conn
        self.connect = connect
        self.lock = threading.RLock()
        self.pid = os.getpid()
        self.closed = False
        self.bound = False  # a transaction() is open (on the lock's thread)

    def usable(self) -> Conn:
        # Called with the lock held.
        if os.getpid() != self.pid:
            raise RuntimeError(
                "this PostgresStore was opened in another process (before a fork): "
                "open a new one in this process"
            )
        if self.conn.broken and not self.closed and not self.bound:
            self.conn = self.connect()
        return self.conn

    def write(self, work: Work[T]) -> T:
        with self.lock:
            conn = self.usable()
            if self.bound or conn.info.transaction_status in _BUSY:
                # This thread is inside a transaction or an encode_at.
                raise RuntimeError(_NESTED)
            return work(conn)

    def read(self, work: Work[T]) -> T:
        with self.lock:
            return work(self.usable())


class _Bound:
    """The runner of a `PostgresTransaction`: its calls join the open
    transaction, each in a savepoint (so a failed call still changes
    nothing), until the transaction ends."""

    __slots__ = ("conn", "db", "open", "writing")

    def __init__(self, db: _Connection, conn: Conn) -> None:
        self.db = db
        self.conn = conn
        self.open = True
        self.writing = False

    def usable(self) -> Conn:
        # Called with the lock held (which the transaction's thread holds).
        if not self.open:
            raise RuntimeError("the transaction is over")
        return self.conn

    def write(self, work: Work[T]) -> T:
        with self.db.lock:
            conn = self.usable()
            if self.writing:
                raise reentered()
            self.writing = True
            try:
                with conn.transaction():
                    return work(conn)
            finally:
                self.writing = False

    def read(self, work: Work[T]) -> T:
        with self.db.lock:
            conn = self.usable()
            with conn.transaction():
                return work(conn)


class _Tail:
    """The live tail of one `PostgresStore`: a thread of its own listens
    (``LISTEN``) on a connection of its own and wakes the waiters of each
    stream notified; after the connection was lost, it opens another and
    wakes every waiter, which checks again."""

    def __init__(self, connect: Callable[[], Conn]) -> None:
        self._connect = connect
        self._cond = threading.Condition()
        self._waiting: Counter[str] = Counter()  # payload -> waiters
        self._seen: dict[str, int] = {}  # payload -> notifications while waited on
        self._epoch = 0  # each (re)connection: every waiter checks again
        self._listening = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def _mark(self, payload: str) -> tuple[int, int]:
        # With the condition held: what changes when a waiter must check.
        return self._epoch, self._seen.get(payload, 0)

    def wait(
        self, payload: str, after: int, timeout: float, last: Callable[[], int]
    ) -> int:
        """Wait until ``last()`` passes ``after``, checking it again at each
        notification with ``payload``; ``last()`` when ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._listen, name="samgita-postgres-tail", daemon=True
                )
                self._thread.start()
            self._waiting[payload] += 1
            # Listening before the first check: no append falls in between.
            self._cond.wait_for(
                lambda: self._listening or self._closed, deadline - time.monotonic()
            )
        try:
            while True:
                with self._cond:
                    mark = self._mark(payload)
                cursor = last()
                remaining = deadline - time.monotonic()
                if cursor > after or remaining <= 0:
                    return cursor
                self._wait_change(payload, mark, remaining)
        finally:
            with self._cond:
                self._waiting[payload] -= 1
                if not self._waiting[payload]:
                    del self._waiting[payload]
                    self._seen.pop(payload, None)

    def _wait_change(self, payload: str, mark: tuple[int, int], timeout: float) -> None:
        with self._cond:
            self._cond.wait_for(
                lambda: self._closed or self._mark(payload) != mark, timeout
            )

    def _notified(self, payload: str) -> bool:
        # Wake the waiters of payload's stream; False once closed.
        with self._cond:
            if payload in self._waiting:
                self._seen[payload] = self._seen.get(payload, 0) + 1
                self._cond.notify_all()
            return not self._closed

    def _state(self, listening: bool) -> None:
        with self._cond:
            self._listening = listening
            self._epoch += 1
            self._cond.notify_all()

    def _listen(self) -> None:
        retry = _RETRY
        while not self._closed:
            try:
                conn = self._connect()
            except psycopg.Error:
                with self._cond:
                    self._cond.wait_for(lambda: self._closed, retry)
                retry = min(retry * 2, _RETRY_MAX)
                continue
            retry = _RETRY
            try:
                with conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                    self._state(True)
                    while not self._closed:
                        for note in conn.notifies(timeout=_POLL):
                            if not self._notified(note.payload):
                                break
            except psycopg.Error:
                pass  # lost: connect again
            finally:
                self._state(False)

    def close(self, wake: Callable[[], None]) -> None:
        """Stop the thread: ``wake()`` sends it a notification, so that it
        need not wait for the end of its poll."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            wake()
            thread.join(_POLL * 5)


class PostgresTransaction:
    """One open transaction of a `PostgresStore` (from
    :meth:`PostgresStore.transaction`): ``connection`` for your own
    statements and the four stores bound to it. Everything done through
    them commits together when the ``with`` block ends, or not at all when
    it raises.

    Each store call is atomic inside it too (a savepoint): a call that
    raises changes nothing, and the transaction goes on. A statement of
    your own that fails aborts the whole transaction, as PostgreSQL does:
    run it in ``with tx.connection.transaction():`` (a savepoint) to go on
    after it. Do not ``COMMIT``, ``ROLLBACK`` or ``BEGIN`` yourself. After
    the block, every attribute raises ``RuntimeError``.
    """

    __slots__ = ("_bound", "checkpoints", "inbox", "journal", "replay_log")

    #: The client's command journal, in this transaction.
    journal: CommandJournal
    #: The host's inbox, in this transaction.
    inbox: Inbox
    #: The host's replay log, in this transaction (its ``wait_for`` raises:
    #: wait on the store's own ``replay_log``).
    replay_log: PostgresReplayLog
    #: The client's checkpoints, in this transaction.
    checkpoints: CheckpointStore

    def __init__(self, bound: _Bound, max_message_bytes: int) -> None:
        self._bound = bound
        self.journal = PostgresJournal(bound, max_message_bytes)
        self.inbox = PostgresInbox(bound, max_message_bytes)
        self.replay_log = PostgresReplayLog(bound, max_message_bytes, None)
        self.checkpoints = PostgresCheckpoints(bound)

    @property
    def connection(self) -> Conn:
        """The store's connection (``psycopg.Connection``), inside the open
        transaction; placeholders are ``%s``."""
        with self._bound.db.lock:
            return self._bound.usable()


def _connect(dsn: str, lock_timeout: float) -> Conn:
    conn = psycopg.connect(dsn, autocommit=True)
    try:
        conn.execute(
            "SELECT set_config('synchronous_commit', 'on', false),"
            " set_config('lock_timeout', %s, false)",
            (f"{max(1, round(lock_timeout * 1000))}ms",),
        )
    except BaseException:
        conn.close()
        raise
    return conn


def _prepare(conn: Conn) -> None:
    # The tables, once per schema; one creator at a time.
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        found = conn.execute("SELECT to_regclass('samgita_schema')").fetchone()
        if found is None or found[0] is None:
            for statement in _TABLES:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO samgita_schema (version) VALUES (%s)",
                (STORE_SCHEMA_VERSION,),
            )
            return
        row = conn.execute("SELECT max(version) FROM samgita_schema").fetchone()
        version = None if row is None else row[0]
        if version is not None and version > STORE_SCHEMA_VERSION:
            raise ValueError(
                f"expected dsn to hold stores of schema version {STORE_SCHEMA_VERSION} "
                f"or older, got version {version} (written by a newer release)"
            )


class PostgresStore:
    """The four stores in one PostgreSQL database (see the module docstring
    for what it promises and how).

    Args:
        dsn: where to connect: a libpq connection string
            (``"host=/run/postgresql dbname=agent"``) or URI
            (``"postgresql://user@host:5432/agent"``); the tables are
            created when missing.
        lock_timeout: seconds a write waits for another's row lock before
            ``psycopg.errors.LockNotAvailable`` (5).
        max_message_bytes: the largest request ``data`` and receipt stored,
            and the message budget of a replay page (1 MiB), as in the
            ``Memory*`` stores.

    Raises:
        TypeError, ValueError: a bad argument; ``ValueError`` also when the
            database holds tables of a newer release (their schema version
            is above :data:`STORE_SCHEMA_VERSION`).
        psycopg.Error: the connection string is wrong, or the server cannot
            be reached or refuses the connection.
    """

    __slots__ = (
        "_db",
        "_max_bytes",
        "_shown",
        "_tail",
        "checkpoints",
        "inbox",
        "journal",
        "replay_log",
    )

    #: Acknowledged writes survive a process crash (and a power loss when
    #: the server runs with fsync on a disk that honours it).
    durable: Final = True
    #: The client's command journal.
    journal: CommandJournal
    #: The host's inbox.
    inbox: Inbox
    #: The host's replay log, with its live tail
    #: (:meth:`PostgresReplayLog.wait_for`).
    replay_log: PostgresReplayLog
    #: The client's checkpoints.
    checkpoints: CheckpointStore

    def __init__(
        self,
        dsn: str,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not isinstance(dsn, str):
            raise wrong_type("dsn", dsn, "a connection string or postgresql:// URI")
        timeout = seconds("lock_timeout", lock_timeout)
        self._max_bytes = positive_int("max_message_bytes", max_message_bytes)
        conn = _connect(dsn, timeout)
        try:
            _prepare(conn)
        except BaseException:
            conn.close()
            raise
        info = conn.info
        self._shown = f"dbname={info.dbname} user={info.user} host={info.host}"
        self._db = _Connection(conn, lambda: _connect(dsn, timeout))
        self._tail = _Tail(lambda: psycopg.connect(dsn, autocommit=True))
        self.journal = PostgresJournal(self._db, self._max_bytes)
        self.inbox = PostgresInbox(self._db, self._max_bytes)
        self.replay_log = PostgresReplayLog(self._db, self._max_bytes, self._tail)
        self.checkpoints = PostgresCheckpoints(self._db)

    def __repr__(self) -> str:
        return f"PostgresStore({self._shown!r})"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PostgresTransaction]:
        """A ``with`` block in one transaction: yields a
        :class:`PostgresTransaction`, commits when the block ends and rolls
        back when it raises. Other threads' calls on this store wait for
        it; other connections wait only for the rows it locked (for up to
        ``lock_timeout``): keep it short.

        Raises:
            RuntimeError: this thread already has a transaction open on
                this store.
        """
        db = self._db
        with db.lock:
            conn = db.usable()
            if db.bound or conn.info.transaction_status in _BUSY:
                raise RuntimeError(_NESTED)
            bound = _Bound(db, conn)
            db.bound = True
            try:
                with conn.transaction():
                    yield PostgresTransaction(bound, self._max_bytes)
            finally:
                bound.open = False
                db.bound = False

    def close(self) -> None:
        """Close the connections and stop the live tail (again: nothing).
        Later calls raise ``psycopg.OperationalError``. In a process forked
        from the one that opened the store it does nothing: the
        connections are the parent's."""
        with self._db.lock:
            if os.getpid() != self._db.pid:
                return
            self._tail.close(self._wake)
            self._db.closed = True
            self._db.conn.close()

    def _wake(self) -> None:
        # An empty payload: no stream's (every listener ignores it).
        with contextlib.suppress(psycopg.Error):
            self._db.write(
                lambda conn: conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            )

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


if TYPE_CHECKING:  # mypy checks that the replay log implements its interface.
    from ._types import ReplayLog

    def _implements(store: PostgresStore) -> ReplayLog:
        return store.replay_log
