"""The SQLite backend of the four stores: one file, no server, the standard
library's :mod:`sqlite3` only.

``SqliteStore(path)`` opens (or creates) the file and owns one connection;
its ``journal``, ``inbox``, ``replay_log`` and ``checkpoints`` implement the
interfaces of ``samgita_protocol.stores`` on it, and ``durable`` is
``True``. Several store objects, in one process or several, may open the
same file; each call is one transaction, so claims, cursors and
checkpoints are atomic across all of them.

What it promises, and why each setting is what it is:

* **Durability.** ``journal_mode=WAL`` with ``synchronous=FULL``: a call
  returns only after its transaction is in the write-ahead log and the log
  was fsynced. An acknowledged call survives a crash of the process (also
  ``SIGKILL``) and, on a disk that honours fsync, a power loss.
  (``synchronous=NORMAL``, WAL's usual companion, can lose the last commits
  on power loss.) A path whose journal cannot be WAL (``":memory:"``) is
  refused: use the ``Memory*`` stores for a store that need not last.
* **Atomic writes.** Every write runs in ``BEGIN IMMEDIATE``: it takes the
  file's write lock before it reads, so the read-decide-write of a claim, a
  cursor or a checkpoint cannot interleave with another writer; a waiting
  writer retries for ``busy_timeout`` seconds (default 5) and then raises
  ``sqlite3.OperationalError`` ("database is locked"). So does the switch
  of a new file to WAL, which SQLite itself does not retry: several
  processes may create the same file at once. Reads run in a
  deferred transaction (one snapshot; WAL readers never block writers).
  The connection is in autocommit mode (``isolation_level=None``): the
  module's implicit transactions never mix with these explicit ones.
* **One connection per store object**, opened in the constructor (never at
  import), usable from any thread (``check_same_thread=False``) behind one
  lock. One connection, not one per interface: the four share the lock,
  the file handle and, in :meth:`SqliteStore.transaction`, one transaction.
  A connection does not survive ``fork()`` (SQLite forbids using one in the
  child): a store used in another process than the one that opened it
  raises ``RuntimeError``; open a new one in the child.
* **Your own rows in the same transaction.**
  :meth:`SqliteStore.transaction` yields a :class:`SqliteTransaction`: its
  ``connection`` for your own tables in the same file, and the four stores
  bound to that one ``BEGIN IMMEDIATE``. A host that claims a command,
  writes its effects and commits the receipt there gets all or nothing:
  no lease can expire in between, and a crash leaves no effect without
  its receipt.
* **Schema version.** The table ``samgita_schema`` holds the schema's
  version (:data:`STORE_SCHEMA_VERSION`), for a later release to migrate;
  a file written by a newer release is refused. A table, not ``PRAGMA
  user_version``: the file may hold the host's own tables, and the one
  ``user_version`` of a file belongs to its application's own migrations.
  Every table is named ``samgita_*``.

Needs SQLite 3.25 or newer (upsert, window functions).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Final

from .._options import DEFAULT_MAX_MESSAGE_BYTES, positive_int, wrong_type
from ._backend import T
from ._rules import reentered, seconds
from ._sqlite_stores import (
    SqliteCheckpoints,
    SqliteInbox,
    SqliteJournal,
    SqliteReplayLog,
    Work,
)
from ._types import CheckpointStore, CommandJournal, Inbox, ReplayLog

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "STORE_SCHEMA_VERSION",
    "SqliteStore",
    "SqliteTransaction",
]

#: Seconds a writer waits for another writer's lock before it raises.
DEFAULT_BUSY_TIMEOUT: Final = 5.0

#: The version of the tables this release reads and writes.
STORE_SCHEMA_VERSION: Final = 1


_TABLES: Final = (
    # Record order is seq order; the partial index serves unsettled().
    """CREATE TABLE samgita_journal (
        seq INTEGER PRIMARY KEY,
        host_id TEXT NOT NULL, request_id TEXT NOT NULL,
        command_id TEXT NOT NULL, method TEXT NOT NULL, data BLOB NOT NULL,
        recorded_at REAL NOT NULL, outcome TEXT, settled_at REAL,
        UNIQUE (host_id, request_id))""",
    """CREATE INDEX samgita_journal_unsettled
        ON samgita_journal (host_id, seq) WHERE outcome IS NULL""",
    # A NULL receipt is a held claim, leased until lease_until.
    """CREATE TABLE samgita_commands (
        scope TEXT NOT NULL, command_id TEXT NOT NULL, digest BLOB NOT NULL,
        receipt BLOB, lease_until REAL NOT NULL,
        PRIMARY KEY (scope, command_id))""",
    """CREATE TABLE samgita_events (
        scope TEXT NOT NULL, event_id TEXT NOT NULL, digest BLOB NOT NULL,
        status TEXT NOT NULL,
        PRIMARY KEY (scope, event_id)) WITHOUT ROWID""",
    # A stream's cursors outlive its events: they never restart after a trim.
    """CREATE TABLE samgita_streams (
        stream_id TEXT PRIMARY KEY, first_cursor INTEGER NOT NULL,
        last_cursor INTEGER NOT NULL) WITHOUT ROWID""",
    """CREATE TABLE samgita_replay (
        stream_id TEXT NOT NULL, cursor INTEGER NOT NULL, data BLOB NOT NULL,
        size INTEGER NOT NULL, appended_at REAL NOT NULL,
        PRIMARY KEY (stream_id, cursor))""",
    """CREATE TABLE samgita_checkpoints (
        host_id TEXT NOT NULL, stream_id TEXT NOT NULL, cursor INTEGER NOT NULL,
        PRIMARY KEY (host_id, stream_id)) WITHOUT ROWID""",
)

_NESTED: Final = (
    "this thread is inside a transaction or an append's encode_at of this "
    "store: in a transaction call its stores (tx.inbox, ...), and never call "
    "a store from encode_at"
)


class _Connection:
    """The connection of one `SqliteStore`: one lock, one transaction per call."""

    __slots__ = ("conn", "lock", "pid")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.pid = os.getpid()

    def usable(self) -> sqlite3.Connection:
        # Called with the lock held.
        if os.getpid() != self.pid:
            raise RuntimeError(
                "this SqliteStore was opened in another process (before a fork): "
                "open a new one in this process"
            )
        return self.conn

    def _run(self, begin: str, work: Work[T]) -> T:
        conn = self.conn
        conn.execute(begin)
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        return result

    def write(self, work: Work[T]) -> T:
        with self.lock:
            if self.usable().in_transaction:
                # This thread is inside a transaction or an encode_at.
                raise RuntimeError(_NESTED)
            return self._run("BEGIN IMMEDIATE", work)

    def read(self, work: Work[T]) -> T:
        with self.lock:
            if self.usable().in_transaction:
                return work(self.conn)  # inside this thread's own write: read it
            return self._run("BEGIN", work)


class _Bound:
    """The runner of a `SqliteTransaction`: its calls join the open
    transaction, each write in a savepoint (so a failed call still changes
    nothing), until the transaction ends."""

    __slots__ = ("db", "open", "writing")

    def __init__(self, db: _Connection) -> None:
        self.db = db
        self.open = True
        self.writing = False

    def usable(self) -> sqlite3.Connection:
        # Called with the lock held (which the transaction's thread holds).
        if not self.open:
            raise RuntimeError("the transaction is over")
        return self.db.usable()

    def write(self, work: Work[T]) -> T:
        with self.db.lock:
            conn = self.usable()
            if self.writing:
                raise reentered()
            self.writing = True
            conn.execute("SAVEPOINT samgita_call")
            try:
                result = work(conn)
            except BaseException:
                conn.execute("ROLLBACK TO samgita_call")
                conn.execute("RELEASE samgita_call")
                raise
            finally:
                self.writing = False
            conn.execute("RELEASE samgita_call")
            return result

    def read(self, work: Work[T]) -> T:
        with self.db.lock:
            return work(self.usable())


class SqliteTransaction:
    """One open ``BEGIN IMMEDIATE`` transaction of a `SqliteStore` (from
    :meth:`SqliteStore.transaction`): ``connection`` for your own statements
    and the four stores bound to it. Everything done through them commits
    together when the ``with`` block ends, or not at all when it raises.

    Each store call is atomic inside it too (a savepoint): a call that
    raises changes nothing, and the transaction goes on. Do not ``COMMIT``,
    ``ROLLBACK`` or ``BEGIN`` on ``connection`` yourself; savepoints of your
    own are fine. After the block, every attribute raises ``RuntimeError``.
    """

    __slots__ = ("_bound", "checkpoints", "inbox", "journal", "replay_log")

    #: The client's command journal, in this transaction.
    journal: CommandJournal
    #: The host's inbox, in this transaction.
    inbox: Inbox
    #: The host's replay log, in this transaction.
    replay_log: ReplayLog
    #: The client's checkpoints, in this transaction.
    checkpoints: CheckpointStore

    def __init__(self, bound: _Bound, max_message_bytes: int) -> None:
        self._bound = bound
        self.journal = SqliteJournal(bound, max_message_bytes)
        self.inbox = SqliteInbox(bound, max_message_bytes)
        self.replay_log = SqliteReplayLog(bound, max_message_bytes)
        self.checkpoints = SqliteCheckpoints(bound)

    @property
    def connection(self) -> sqlite3.Connection:
        """The store's connection, inside the open transaction."""
        with self._bound.db.lock:
            return self._bound.usable()


class SqliteStore:
    """The four stores in one SQLite file (see the module docstring for
    what it promises and how).

    Args:
        path: the database file, created when missing (with its tables).
        busy_timeout: seconds a write waits for another writer's lock
            before ``sqlite3.OperationalError`` (5).
        max_message_bytes: the largest request ``data`` and receipt stored,
            and the message budget of a replay page (1 MiB), as in the
            ``Memory*`` stores.

    Raises:
        TypeError, ValueError: a bad argument; ``ValueError`` also when the
            file cannot use WAL (``":memory:"``) or was written by a newer
            release (its schema version is above :data:`STORE_SCHEMA_VERSION`).
        sqlite3.Error: the file cannot be opened or is not a database.
        RuntimeError: the SQLite library is older than 3.25.
    """

    __slots__ = (
        "_db",
        "_max_bytes",
        "_path",
        "checkpoints",
        "inbox",
        "journal",
        "replay_log",
    )

    #: Acknowledged writes survive a process crash (and a power loss on a
    #: disk that honours fsync).
    durable: Final = True
    #: The client's command journal.
    journal: CommandJournal
    #: The host's inbox.
    inbox: Inbox
    #: The host's replay log.
    replay_log: ReplayLog
    #: The client's checkpoints.
    checkpoints: CheckpointStore

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise wrong_type("path", path, "a file path (str or os.PathLike)")
        timeout = seconds("busy_timeout", busy_timeout)
        self._max_bytes = positive_int("max_message_bytes", max_message_bytes)
        if sqlite3.sqlite_version_info < (3, 25, 0):
            raise RuntimeError(
                f"SQLite 3.25 or newer is needed, not {sqlite3.sqlite_version}"
            )
        self._path = os.fspath(path)
        conn = sqlite3.connect(
            self._path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            _prepare(conn, self._path, timeout)
        except BaseException:
            conn.close()
            raise
        self._db = _Connection(conn)
        self.journal = SqliteJournal(self._db, self._max_bytes)
        self.inbox = SqliteInbox(self._db, self._max_bytes)
        self.replay_log = SqliteReplayLog(self._db, self._max_bytes)
        self.checkpoints = SqliteCheckpoints(self._db)

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    @contextlib.contextmanager
    def transaction(self) -> Iterator[SqliteTransaction]:
        """A ``with`` block in one ``BEGIN IMMEDIATE`` transaction: yields a
        :class:`SqliteTransaction`, commits when the block ends and rolls
        back when it raises. Other threads' calls on this store wait for
        it; so do other connections' writes (for up to ``busy_timeout``).

        Raises:
            RuntimeError: this thread already has a transaction open on
                this store.
            sqlite3.OperationalError: the write lock stayed busy.
        """
        db = self._db
        with db.lock:
            conn = db.usable()
            if conn.in_transaction:
                raise RuntimeError(_NESTED)
            conn.execute("BEGIN IMMEDIATE")
            bound = _Bound(db)
            try:
                yield SqliteTransaction(bound, self._max_bytes)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            finally:
                bound.open = False

    def close(self) -> None:
        """Close the connection (again: nothing). Later calls raise
        ``sqlite3.ProgrammingError``. In a process forked from the one that
        opened the store it does nothing: closing there could checkpoint
        and remove the write-ahead log the parent still uses."""
        with self._db.lock:
            if os.getpid() == self._db.pid:
                self._db.conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


#: Seconds between two tries to switch a new file to WAL.
_WAL_RETRY: Final = 0.01


def _journal_mode(conn: sqlite3.Connection, timeout: float) -> str:
    # Switching a file to WAL takes its exclusive lock without SQLite's busy
    # handler: processes that create one file at once collide here, so this
    # one retries, for up to busy_timeout like every other wait.
    deadline = time.monotonic() + timeout
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return str(mode)
        except sqlite3.OperationalError as error:
            if (
                error.sqlite_errorcode != sqlite3.SQLITE_BUSY
                or time.monotonic() > deadline
            ):
                raise
        time.sleep(_WAL_RETRY)


def _prepare(conn: sqlite3.Connection, path: str, timeout: float) -> None:
    # The settings of the module docstring, then the tables (once per file).
    mode = _journal_mode(conn, timeout)
    if mode != "wal":
        raise ValueError(
            f"expected path to be a file that can use WAL, got {path!r} "
            f"(journal_mode {mode!r}); use the Memory* stores for a store that need not last"
        )
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS samgita_schema (version INTEGER NOT NULL)"
        )
        (version,) = conn.execute("SELECT max(version) FROM samgita_schema").fetchone()
        if version is None:
            for statement in _TABLES:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO samgita_schema (version) VALUES (?)",
                (STORE_SCHEMA_VERSION,),
            )
        elif version > STORE_SCHEMA_VERSION:
            raise ValueError(
                f"expected path to hold stores of schema version {STORE_SCHEMA_VERSION} "
                f"or older, got version {version} (written by a newer release)"
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
