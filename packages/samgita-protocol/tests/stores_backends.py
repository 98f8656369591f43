"""The store backends the conformance suite runs against, and what its
child processes run.

``BACKENDS`` is the one list: a backend is one entry (how to open its four
stores at a location, whether they outlive the process, and whether its
locations are on the session's PostgreSQL server). Every test of
``test_stores_conformance.py`` runs against every entry, the durable ones
also across processes, reopens and SIGKILL. A location is a string, so a
child process gets it as an argument: a directory for a file backend, a
connection string for a server backend (``conftest.py``'s ``locate``
makes one). A child process imports this module by name
(``multiprocessing`` pickles a function by module and name), which is why
it is not a test module.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NamedTuple, Protocol

from samgita_protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    InputItem,
    Request,
    TurnStartParams,
    encode,
)
from samgita_protocol.stores import (
    CheckpointStore,
    CommandJournal,
    Inbox,
    MemoryCheckpoints,
    MemoryInbox,
    MemoryJournal,
    MemoryReplayLog,
    ReplayLog,
)
from samgita_protocol.stores.postgres import PostgresStore
from samgita_protocol.stores.sqlite import SqliteStore

#: What a forkserver loads once for all its children: the backends (and
#: their drivers), so that each child starts in milliseconds.
PRELOAD = ["samgita_protocol.stores.sqlite", "samgita_protocol.stores.postgres"]


class Stores(NamedTuple):
    """The four stores of one backend, opened at one location."""

    journal: CommandJournal
    inbox: Inbox
    replay_log: ReplayLog
    checkpoints: CheckpointStore
    close: Callable[[], None]


class OpenStore(Protocol):
    """Opens a backend's store object at a location."""

    def __call__(
        self, location: str, /, *, max_message_bytes: int = ...
    ) -> SqliteStore | PostgresStore: ...


class Backend(NamedTuple):
    """How to open a backend's stores at a location, whether what they
    acknowledged outlives the process, and whether a location is a schema
    on the session's PostgreSQL server (a connection string) rather than a
    directory the test owns."""

    open: Callable[[str], Stores]
    durable: bool
    server: bool = False
    #: The backend's store object at a location, for a backend whose store
    #: has ``transaction()`` (shared with the host's own rows).
    store: OpenStore | None = None


def _memory(location: str) -> Stores:
    return Stores(
        MemoryJournal(),
        MemoryInbox(),
        MemoryReplayLog(),
        MemoryCheckpoints(),
        lambda: None,
    )


def _sqlite_store(
    location: str, /, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> SqliteStore:
    return SqliteStore(f"{location}/stores.db", max_message_bytes=max_message_bytes)


def _stores_of(store: SqliteStore | PostgresStore) -> Stores:
    return Stores(
        store.journal, store.inbox, store.replay_log, store.checkpoints, store.close
    )


def _sqlite(location: str) -> Stores:
    return _stores_of(_sqlite_store(location))


def _postgres(location: str) -> Stores:
    return _stores_of(PostgresStore(location))


BACKENDS: dict[str, Backend] = {
    "memory": Backend(_memory, durable=False),
    "sqlite": Backend(_sqlite, durable=True, store=_sqlite_store),
    "postgres": Backend(_postgres, durable=True, server=True, store=PostgresStore),
}
DURABLE = [name for name, backend in BACKENDS.items() if backend.durable]
#: The backends whose store has ``transaction()``.
TRANSACTIONAL = [name for name, backend in BACKENDS.items() if backend.store]


def open_stores(backend: str, location: str) -> Stores:
    """The stores of ``backend`` at ``location``."""
    return BACKENDS[backend].open(location)


def digest(text: str) -> bytes:
    """A content digest for tests: SHA-256 of ``text``."""
    return hashlib.sha256(text.encode()).digest()


def mutation(
    request_id: str, command_id: str | None = None, text: str = "go"
) -> Request:
    """A ``turn/start`` request (a mutation) with ids derived from
    ``request_id``."""
    return Request(
        method="turn/start",
        id=request_id,
        correlation_id=f"corr-{request_id}",
        command_id=command_id or f"cmd-{request_id}",
        params=TurnStartParams(
            thread_id="thread-1", input=[InputItem(type="text", text=text)]
        ),
    )


# -- child processes ---------------------------------------------------------------------


def claim_worker(
    backend: str, location: str, ids: list[str], start: Any, out: Any
) -> None:
    """Claim every id of ``ids`` once ``start`` is set, commit the ones this
    process won, and put ``(won, answers)`` on ``out``."""
    stores = open_stores(backend, location)
    start.wait()
    won = []
    answers = []
    for command_id in ids:
        claim = stores.inbox.claim("host", command_id, digest(command_id), lease=600.0)
        answers.append(claim.status)
        if claim.status == "new":
            won.append(command_id)
            stores.inbox.commit(
                "host", command_id, digest(command_id), command_id.encode()
            )
    stores.close()
    out.put((won, answers))


#: The stream, host and checkpoint the crash trials write to.
CRASH_STREAM = "crash-stream"
CRASH_HOST = "crash-host"


def crash_event(trial: int, op: int, cursor: int) -> bytes:
    """The event a crash trial's child appends for operation ``op``."""
    return f"{trial}:{op}:{cursor}".encode()


def crash_worker(backend: str, location: str, trial: int, acks: Connection) -> None:
    """Write in a loop until killed, sending each acknowledged operation on
    ``acks`` after the store returned (never before)."""
    stores = open_stores(backend, location)
    acks.send(("ready",))
    rng = random.Random(trial)
    op = 0
    while True:
        cursor = stores.replay_log.append(
            CRASH_STREAM, lambda at, op=op: crash_event(trial, op, at)
        )
        acks.send(("append", op, cursor))
        command_id = f"{trial}-{op}"
        claim = stores.inbox.claim(
            CRASH_HOST, command_id, digest(command_id), lease=600.0
        )
        assert claim.status == "new", claim
        stores.inbox.commit(
            CRASH_HOST, command_id, digest(command_id), command_id.encode()
        )
        acks.send(("commit", command_id))
        position = trial * 1_000_000 + op
        stores.checkpoints.advance(CRASH_HOST, CRASH_STREAM, position)
        acks.send(("advance", position))
        request = mutation(command_id)
        stores.journal.record(CRASH_HOST, request, encode(request))
        acks.send(("record", command_id))
        if rng.random() < 0.5:
            stores.journal.settle(CRASH_HOST, command_id, "answered")
            acks.send(("settle", command_id))
        op += 1


def open_worker(backend: str, locations: list[str], together: Any, out: Any) -> None:
    """Open the stores at each of ``locations`` in turn, all processes at
    once (``together`` is their barrier), and write once; put ``"ok"`` or
    the first error on ``out``."""
    error = None
    for location in locations:
        together.wait()
        if error is None:
            try:
                stores = open_stores(backend, location)
                stores.checkpoints.advance("host", "stream", 1)
                stores.close()
            except Exception as failed:  # reported to the parent, which fails
                error = repr(failed)
    out.put(error or "ok")
