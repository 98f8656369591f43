"""The journal, inbox and checkpoints of the PostgreSQL backend, and the
row helpers its stores share (private).

``samgita_protocol.stores.postgres`` owns the connection, its transactions
and the live tail; each store runs its statements through a
:class:`~._backend.Runner` (the replay log is in ``_postgres_replay``). The rules
come from ``_rules``; only the reading and writing of rows is here, in one
of three shapes:

* **Insert or read.** A new row is written by ``INSERT ... ON CONFLICT DO
  NOTHING``: the unique key decides between concurrent writers (a
  claim, a journal record, an event). The same statement reads the row
  it conflicted with, and the rule decides (``duplicate``,
  ``in_progress``, ``conflict``, :class:`StoreConflict`, or nothing to
  do); a row committed by another after the statement began is not
  visible to it yet, and the statement runs again.
* **Compare and set.** A change of an existing row is one ``UPDATE`` or
  ``DELETE`` whose ``WHERE`` names the state the rule writes from (held
  with this digest and no receipt; not settled; a lease as it was read).
  When it matched no row, the row is read and the rule decides: an answer,
  an error, or, when the row changed in between, another try.
  A checkpoint is one upsert keeping ``GREATEST(stored, new)``.
* **Under the stream's lock** (``_postgres_replay``): appending and
  trimming lock the stream's row, so a stream's cursors are assigned one
  at a time across every connection.

So the common path of a claim, a commit, a settle or an advance is one
statement, one round trip, in the connection's autocommit mode, and every
write is atomic on its own, also across processes and machines.

Keys are stored as their UTF-8 bytes (``bytea``): a wire id may hold
U+0000, which PostgreSQL ``text`` cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from .._schema import Request
from ._backend import RunnerStore, Store, T
from ._rules import (
    InboxRow,
    check_bytes,
    check_cursor,
    check_digest,
    check_outcome,
    check_status,
    claim_status,
    command_key,
    commit_needed,
    event_claim,
    event_key,
    journal_entry,
    key,
    record_needed,
    release_needed,
    seconds,
    settle_needed,
    unix_time,
    unknown_event,
    wall_clock,
)
from ._types import Claim, EventStatus, JournalEntry, Outcome

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = [
    "Conn",
    "PostgresCheckpoints",
    "PostgresInbox",
    "PostgresJournal",
    "Work",
    "one_row",
    "utf8",
]

#: A connection of the backend (rows as tuples).
Conn: TypeAlias = "psycopg.Connection[TupleRow]"
#: A unit of work on the connection, run atomically by a `Runner`.
Work: TypeAlias = Callable[["psycopg.Connection[TupleRow]"], T]


def utf8(text: str) -> bytes:
    """A key as it is stored: its UTF-8 bytes."""
    return text.encode()


def one_row(conn: Conn, sql: str, params: tuple[Any, ...]) -> TupleRow | None:
    """The first row of a statement (its parameters: Any, as psycopg
    adapts values of any type)."""
    return conn.execute(sql, params).fetchone()


def _inserted_or_found(
    conn: Conn, sql: str, params: tuple[Any, ...]
) -> TupleRow | None:
    # An "insert or read" statement: None when it inserted the row, else
    # the row it found, all None when the row is not visible to the
    # statement (committed by another after it began, or deleted since).
    row = conn.execute(sql, params).fetchone()
    assert row is not None  # a left join on one row: one row
    return None if row[0] else row[1:]


def _matched(conn: Conn, sql: str, params: tuple[Any, ...]) -> bool:
    """Whether a compare-and-set statement matched a row."""
    return conn.execute(sql, params).rowcount > 0


class PostgresJournal(Store[Conn]):
    """The :class:`CommandJournal` of a `PostgresStore` (durable)."""

    def record(
        self, host_id: str, request: Request, data: bytes, *, now: float | None = None
    ) -> None:
        """As :meth:`CommandJournal.record`."""
        entry = journal_entry(host_id, request, data, now, self._max_bytes)
        name = (utf8(entry.host_id), utf8(entry.request_id))
        row = (*name, utf8(entry.command_id), utf8(entry.method), entry.data)

        def work(conn: Conn) -> None:
            while True:
                found = _inserted_or_found(
                    conn,
                    "WITH new AS (INSERT INTO samgita_journal (host_id, request_id,"
                    " command_id, method, data, recorded_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (host_id, request_id) DO NOTHING RETURNING 1)"
                    " SELECT EXISTS (SELECT FROM new), j.command_id, j.method, j.data,"
                    " j.recorded_at FROM (VALUES (1)) AS one LEFT JOIN samgita_journal"
                    " AS j ON j.host_id = %s AND j.request_id = %s",
                    (*row, entry.recorded_at, *name),
                )
                if found is None:
                    return
                existing = None
                if found[0] is not None:
                    existing = JournalEntry(
                        host_id=entry.host_id,
                        request_id=entry.request_id,
                        command_id=found[0].decode(),
                        method=found[1].decode(),
                        data=found[2],
                        recorded_at=found[3],
                    )
                if not record_needed(existing, entry):
                    return

        self._runner.write(work)

    def settle(
        self,
        host_id: str,
        request_id: str,
        outcome: Outcome,
        *,
        now: float | None = None,
    ) -> None:
        """As :meth:`CommandJournal.settle`."""
        name = (utf8(key("host_id", host_id)), utf8(key("request_id", request_id)))
        outcome = check_outcome(outcome)
        at = wall_clock(now)

        def work(conn: Conn) -> None:
            while not _matched(
                conn,
                "UPDATE samgita_journal SET outcome = %s, settled_at = %s"
                " WHERE host_id = %s AND request_id = %s AND outcome IS NULL",
                (outcome, at, *name),
            ):
                row = one_row(
                    conn,
                    "SELECT outcome FROM samgita_journal"
                    " WHERE host_id = %s AND request_id = %s",
                    name,
                )
                settled = None if row is None else row[0]
                if not settle_needed(row is not None, settled, request_id, outcome):
                    return

        self._runner.write(work)

    def unsettled(self, host_id: str) -> list[JournalEntry]:
        """As :meth:`CommandJournal.unsettled`."""
        host_id = key("host_id", host_id)

        def work(conn: Conn) -> list[JournalEntry]:
            rows = conn.execute(
                "SELECT request_id, command_id, method, data, recorded_at"
                " FROM samgita_journal WHERE host_id = %s AND outcome IS NULL"
                " ORDER BY seq",
                (utf8(host_id),),
            )
            return [
                JournalEntry(
                    host_id=host_id,
                    request_id=request_id.decode(),
                    command_id=command_id.decode(),
                    method=method.decode(),
                    data=data,
                    recorded_at=recorded_at,
                )
                for request_id, command_id, method, data, recorded_at in rows
            ]

        return self._runner.read(work)

    def forget_settled(self, host_id: str, older_than: float) -> int:
        """As :meth:`CommandJournal.forget_settled`."""
        host_id = key("host_id", host_id)
        before = unix_time("older_than", older_than)

        def work(conn: Conn) -> int:
            return conn.execute(
                "DELETE FROM samgita_journal WHERE host_id = %s"
                " AND outcome IS NOT NULL AND settled_at < %s",
                (utf8(host_id), before),
            ).rowcount

        return self._runner.write(work)


def _command(conn: Conn, name: tuple[bytes, bytes]) -> InboxRow | None:
    row = one_row(
        conn,
        "SELECT digest, receipt, lease_until FROM samgita_commands"
        " WHERE scope = %s AND command_id = %s",
        name,
    )
    return None if row is None else InboxRow(*row)


class PostgresInbox(Store[Conn]):
    """The :class:`Inbox` of a `PostgresStore` (durable)."""

    def claim(
        self,
        scope: str,
        command_id: str,
        digest: bytes,
        *,
        lease: float,
        now: float | None = None,
    ) -> Claim:
        """As :meth:`Inbox.claim`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        lease = seconds("lease", lease)
        at = wall_clock(now)
        until = at + lease
        name = (utf8(scope), utf8(command_id))

        def work(conn: Conn) -> Claim:
            while True:
                found = _inserted_or_found(
                    conn,
                    "WITH new AS (INSERT INTO samgita_commands"
                    " (scope, command_id, digest, receipt, lease_until)"
                    " VALUES (%s, %s, %s, NULL, %s)"
                    " ON CONFLICT (scope, command_id) DO NOTHING RETURNING 1)"
                    " SELECT EXISTS (SELECT FROM new), c.digest, c.receipt,"
                    " c.lease_until FROM (VALUES (1)) AS one LEFT JOIN"
                    " samgita_commands AS c ON c.scope = %s AND c.command_id = %s",
                    (*name, digest, until, *name),
                )
                if found is None:
                    return Claim(status="new")
                if found[0] is None:
                    continue  # not yet visible, or released: again
                row = InboxRow(*found)
                status = claim_status(row, digest, at)
                if status != "new":
                    receipt = row.receipt if status == "duplicate" else None
                    return Claim(status=status, receipt=receipt)
                # The lease expired: take it over, if it is still as read.
                if _matched(
                    conn,
                    "UPDATE samgita_commands SET lease_until = %s"
                    " WHERE scope = %s AND command_id = %s AND digest = %s"
                    " AND receipt IS NULL AND lease_until = %s",
                    (until, *name, digest, row.lease_until),
                ):
                    return Claim(status="new")

        return self._runner.write(work)

    def commit(
        self, scope: str, command_id: str, digest: bytes, receipt: bytes
    ) -> None:
        """As :meth:`Inbox.commit`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        receipt = check_bytes("receipt", receipt, self._max_bytes)
        name = (utf8(scope), utf8(command_id))

        def work(conn: Conn) -> None:
            while not _matched(
                conn,
                "UPDATE samgita_commands SET receipt = %s"
                " WHERE scope = %s AND command_id = %s AND digest = %s"
                " AND receipt IS NULL",
                (receipt, *name, digest),
            ):
                if not commit_needed(_command(conn, name), command_id, digest, receipt):
                    return

        self._runner.write(work)

    def release(self, scope: str, command_id: str, digest: bytes) -> None:
        """As :meth:`Inbox.release`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        name = (utf8(scope), utf8(command_id))

        def work(conn: Conn) -> None:
            while not _matched(
                conn,
                "DELETE FROM samgita_commands WHERE scope = %s AND command_id = %s"
                " AND digest = %s AND receipt IS NULL",
                (*name, digest),
            ):
                if not release_needed(_command(conn, name), command_id, digest):
                    return

        self._runner.write(work)

    def record_event(
        self, scope: str, event_id: str, digest: bytes, *, status: EventStatus
    ) -> Claim:
        """As :meth:`Inbox.record_event`."""
        scope, event_id = event_key(scope, event_id)
        digest = check_digest(digest)
        status = check_status(status)
        name = (utf8(scope), utf8(event_id))

        def work(conn: Conn) -> Claim:
            while True:
                found = _inserted_or_found(
                    conn,
                    "WITH new AS (INSERT INTO samgita_events"
                    " (scope, event_id, digest, status) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (scope, event_id) DO NOTHING RETURNING 1)"
                    " SELECT EXISTS (SELECT FROM new), e.digest FROM (VALUES (1))"
                    " AS one LEFT JOIN samgita_events AS e"
                    " ON e.scope = %s AND e.event_id = %s",
                    (*name, digest, status, *name),
                )
                if found is None:
                    return Claim(status="new")
                answer = event_claim(found[0], digest)
                if answer != "new":
                    return Claim(status=answer)

        return self._runner.write(work)

    def event_status(self, scope: str, event_id: str) -> EventStatus | None:
        """As :meth:`Inbox.event_status`."""
        scope, event_id = event_key(scope, event_id)

        def work(conn: Conn) -> EventStatus | None:
            row = one_row(
                conn,
                "SELECT status FROM samgita_events WHERE scope = %s AND event_id = %s",
                (utf8(scope), utf8(event_id)),
            )
            return None if row is None else check_status(row[0])

        return self._runner.read(work)

    def set_event_status(self, scope: str, event_id: str, status: EventStatus) -> None:
        """As :meth:`Inbox.set_event_status`."""
        scope, event_id = event_key(scope, event_id)
        status = check_status(status)

        def work(conn: Conn) -> None:
            if not _matched(
                conn,
                "UPDATE samgita_events SET status = %s"
                " WHERE scope = %s AND event_id = %s",
                (status, utf8(scope), utf8(event_id)),
            ):
                raise unknown_event(event_id)

        self._runner.write(work)


class PostgresCheckpoints(RunnerStore[Conn]):
    """The :class:`CheckpointStore` of a `PostgresStore` (durable)."""

    def load(self, host_id: str) -> dict[str, int]:
        """As :meth:`CheckpointStore.load`."""
        host = utf8(key("host_id", host_id))

        def work(conn: Conn) -> dict[str, int]:
            rows = conn.execute(
                "SELECT stream_id, cursor FROM samgita_checkpoints WHERE host_id = %s",
                (host,),
            )
            return {stream.decode(): cursor for stream, cursor in rows}

        return self._runner.read(work)

    def advance(self, host_id: str, stream_id: str, cursor: int) -> int:
        """As :meth:`CheckpointStore.advance`: one upsert that keeps the
        greater of the two."""
        name = (utf8(key("host_id", host_id)), utf8(key("stream_id", stream_id)))
        cursor = check_cursor("cursor", cursor)

        def work(conn: Conn) -> int:
            row = one_row(
                conn,
                "INSERT INTO samgita_checkpoints (host_id, stream_id, cursor)"
                " VALUES (%s, %s, %s) ON CONFLICT (host_id, stream_id) DO UPDATE"
                " SET cursor = GREATEST(samgita_checkpoints.cursor, excluded.cursor)"
                " RETURNING cursor",
                (*name, cursor),
            )
            assert row is not None  # RETURNING of an upsert: one row
            return int(row[0])

        return self._runner.write(work)

    def forget(self, host_id: str, stream_id: str) -> None:
        """As :meth:`CheckpointStore.forget`."""
        name = (utf8(key("host_id", host_id)), utf8(key("stream_id", stream_id)))
        self._runner.write(
            lambda conn: conn.execute(
                "DELETE FROM samgita_checkpoints WHERE host_id = %s AND stream_id = %s",
                name,
            )
        )
