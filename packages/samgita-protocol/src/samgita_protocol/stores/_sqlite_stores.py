"""The four stores of the SQLite backend, on a connection runner (private).

``samgita_protocol.stores.sqlite`` owns the connection and its
transactions; each class here runs its statements through a
:class:`~._backend.Runner`, which makes each call atomic: the store's own
``BEGIN IMMEDIATE`` transaction per call, or a savepoint inside an open
``SqliteStore.transaction``. The rules come from ``_rules``; only the
reading and writing of rows is here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeAlias

from .._schema import Request
from ._backend import RunnerStore, Store, T
from ._rules import (
    InboxRow,
    check_after,
    check_bytes,
    check_callable,
    check_cursor,
    check_digest,
    check_event,
    check_outcome,
    check_status,
    check_trim,
    claim_status,
    command_key,
    commit_needed,
    event_claim,
    event_key,
    journal_entry,
    key,
    next_cursor,
    page_events,
    page_limits,
    record_needed,
    release_needed,
    seconds,
    settle_needed,
    unix_time,
    unknown_event,
    wall_clock,
)
from ._types import Claim, EventStatus, JournalEntry, Outcome, ReplayPage

__all__ = [
    "SqliteCheckpoints",
    "SqliteInbox",
    "SqliteJournal",
    "SqliteReplayLog",
    "Work",
]

#: A unit of work on the connection, run atomically by a `Runner`.
Work: TypeAlias = Callable[[sqlite3.Connection], T]


class SqliteJournal(Store[sqlite3.Connection]):
    """The :class:`CommandJournal` of a `SqliteStore` (durable)."""

    def record(
        self, host_id: str, request: Request, data: bytes, *, now: float | None = None
    ) -> None:
        """As :meth:`CommandJournal.record`."""
        entry = journal_entry(host_id, request, data, now, self._max_bytes)

        def work(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT command_id, method, data, recorded_at FROM samgita_journal"
                " WHERE host_id = ? AND request_id = ?",
                (entry.host_id, entry.request_id),
            ).fetchone()
            existing = None
            if row is not None:
                existing = JournalEntry(
                    host_id=entry.host_id,
                    request_id=entry.request_id,
                    command_id=row[0],
                    method=row[1],
                    data=row[2],
                    recorded_at=row[3],
                )
            if record_needed(existing, entry):
                conn.execute(
                    "INSERT INTO samgita_journal (host_id, request_id, command_id,"
                    " method, data, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        entry.host_id,
                        entry.request_id,
                        entry.command_id,
                        entry.method,
                        entry.data,
                        entry.recorded_at,
                    ),
                )

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
        name = (key("host_id", host_id), key("request_id", request_id))
        outcome = check_outcome(outcome)
        at = wall_clock(now)

        def work(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT outcome FROM samgita_journal WHERE host_id = ? AND request_id = ?",
                name,
            ).fetchone()
            settled = None if row is None else row[0]
            if settle_needed(row is not None, settled, name[1], outcome):
                conn.execute(
                    "UPDATE samgita_journal SET outcome = ?, settled_at = ?"
                    " WHERE host_id = ? AND request_id = ?",
                    (outcome, at, *name),
                )

        self._runner.write(work)

    def unsettled(self, host_id: str) -> list[JournalEntry]:
        """As :meth:`CommandJournal.unsettled`."""
        host_id = key("host_id", host_id)

        def work(conn: sqlite3.Connection) -> list[JournalEntry]:
            rows = conn.execute(
                "SELECT request_id, command_id, method, data, recorded_at"
                " FROM samgita_journal WHERE host_id = ? AND outcome IS NULL"
                " ORDER BY seq",
                (host_id,),
            )
            return [
                JournalEntry(
                    host_id=host_id,
                    request_id=request_id,
                    command_id=command_id,
                    method=method,
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

        def work(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM samgita_journal WHERE host_id = ?"
                " AND outcome IS NOT NULL AND settled_at < ?",
                (host_id, before),
            ).rowcount

        return self._runner.write(work)


def _command(conn: sqlite3.Connection, scope: str, command_id: str) -> InboxRow | None:
    row = conn.execute(
        "SELECT digest, receipt, lease_until FROM samgita_commands"
        " WHERE scope = ? AND command_id = ?",
        (scope, command_id),
    ).fetchone()
    return None if row is None else InboxRow(*row)


class SqliteInbox(Store[sqlite3.Connection]):
    """The :class:`Inbox` of a `SqliteStore` (durable)."""

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
        until = seconds("lease", lease)
        at = wall_clock(now)

        def work(conn: sqlite3.Connection) -> Claim:
            row = _command(conn, scope, command_id)
            status = claim_status(row, digest, at)
            if status == "new":
                conn.execute(
                    "INSERT OR REPLACE INTO samgita_commands"
                    " (scope, command_id, digest, receipt, lease_until)"
                    " VALUES (?, ?, ?, NULL, ?)",
                    (scope, command_id, digest, at + until),
                )
            receipt = row.receipt if status == "duplicate" and row is not None else None
            return Claim(status=status, receipt=receipt)

        return self._runner.write(work)

    def commit(
        self, scope: str, command_id: str, digest: bytes, receipt: bytes
    ) -> None:
        """As :meth:`Inbox.commit`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        receipt = check_bytes("receipt", receipt, self._max_bytes)

        def work(conn: sqlite3.Connection) -> None:
            row = _command(conn, scope, command_id)
            if commit_needed(row, command_id, digest, receipt):
                conn.execute(
                    "UPDATE samgita_commands SET receipt = ?"
                    " WHERE scope = ? AND command_id = ?",
                    (receipt, scope, command_id),
                )

        self._runner.write(work)

    def release(self, scope: str, command_id: str, digest: bytes) -> None:
        """As :meth:`Inbox.release`."""
        scope, command_id, digest = command_key(scope, command_id, digest)

        def work(conn: sqlite3.Connection) -> None:
            if release_needed(_command(conn, scope, command_id), command_id, digest):
                conn.execute(
                    "DELETE FROM samgita_commands WHERE scope = ? AND command_id = ?",
                    (scope, command_id),
                )

        self._runner.write(work)

    def record_event(
        self, scope: str, event_id: str, digest: bytes, *, status: EventStatus
    ) -> Claim:
        """As :meth:`Inbox.record_event`."""
        name = event_key(scope, event_id)
        digest = check_digest(digest)
        status = check_status(status)

        def work(conn: sqlite3.Connection) -> Claim:
            row = conn.execute(
                "SELECT digest FROM samgita_events WHERE scope = ? AND event_id = ?",
                name,
            ).fetchone()
            answer = event_claim(None if row is None else row[0], digest)
            if answer == "new":
                conn.execute(
                    "INSERT INTO samgita_events (scope, event_id, digest, status)"
                    " VALUES (?, ?, ?, ?)",
                    (*name, digest, status),
                )
            return Claim(status=answer)

        return self._runner.write(work)

    def event_status(self, scope: str, event_id: str) -> EventStatus | None:
        """As :meth:`Inbox.event_status`."""
        name = event_key(scope, event_id)

        def work(conn: sqlite3.Connection) -> EventStatus | None:
            row = conn.execute(
                "SELECT status FROM samgita_events WHERE scope = ? AND event_id = ?",
                name,
            ).fetchone()
            return None if row is None else check_status(row[0])

        return self._runner.read(work)

    def set_event_status(self, scope: str, event_id: str, status: EventStatus) -> None:
        """As :meth:`Inbox.set_event_status`."""
        name = event_key(scope, event_id)
        status = check_status(status)

        def work(conn: sqlite3.Connection) -> None:
            changed = conn.execute(
                "UPDATE samgita_events SET status = ? WHERE scope = ? AND event_id = ?",
                (status, *name),
            ).rowcount
            if not changed:
                raise unknown_event(name[1])

        self._runner.write(work)


def _bounds(conn: sqlite3.Connection, stream_id: str) -> tuple[int, int]:
    # (first retained, last assigned) cursor of a stream.
    row = conn.execute(
        "SELECT first_cursor, last_cursor FROM samgita_streams WHERE stream_id = ?",
        (stream_id,),
    ).fetchone()
    return (1, 0) if row is None else (row[0], row[1])


class SqliteReplayLog(Store[sqlite3.Connection]):
    """The :class:`ReplayLog` of a `SqliteStore` (durable)."""

    def append(
        self,
        stream_id: str,
        encode_at: Callable[[int], bytes],
        *,
        now: float | None = None,
    ) -> int:
        """As :meth:`ReplayLog.append`."""
        stream_id = key("stream_id", stream_id)
        encode_at = check_callable(encode_at)
        at = wall_clock(now)

        def work(conn: sqlite3.Connection) -> int:
            first, last = _bounds(conn, stream_id)
            cursor = next_cursor(last)
            data = check_event(encode_at(cursor), self._max_bytes)
            conn.execute(
                "INSERT INTO samgita_replay (stream_id, cursor, data, size, appended_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (stream_id, cursor, data, len(data), at),
            )
            conn.execute(
                "INSERT INTO samgita_streams (stream_id, first_cursor, last_cursor)"
                " VALUES (?, ?, ?) ON CONFLICT (stream_id)"
                " DO UPDATE SET last_cursor = excluded.last_cursor",
                (stream_id, first, cursor),
            )
            return cursor

        return self._runner.write(work)

    def page(
        self,
        stream_id: str,
        after: int,
        *,
        max_events: int | None = None,
        max_bytes: int | None = None,
    ) -> ReplayPage:
        """As :meth:`ReplayLog.page`."""
        stream_id = key("stream_id", stream_id)
        most, budget = page_limits(max_events, max_bytes, self._max_bytes)

        def work(conn: sqlite3.Connection) -> ReplayPage:
            first, last = _bounds(conn, stream_id)
            start = check_after(after, first, last)
            # Read lazily (sqlite3 steps one row ahead of the one it
            # returns): a page cut by the budget reads one or two events
            # beyond it, not the rest of the page; one query, one pass.
            rows = conn.execute(
                "SELECT data FROM samgita_replay WHERE stream_id = ?"
                " AND cursor > ? ORDER BY cursor LIMIT ?",
                (stream_id, start, most),
            )
            try:
                events = page_events(rows, budget, start)
            finally:
                rows.close()  # a page cut by the budget leaves rows unread
            count = len(events)
            return ReplayPage(
                events=events, cursor=start + count, has_more=start + count < last
            )

        return self._runner.read(work)

    def trim(
        self,
        stream_id: str,
        *,
        keep_events: int | None = None,
        keep_bytes: int | None = None,
        older_than: float | None = None,
    ) -> int:
        """As :meth:`ReplayLog.trim`."""
        stream_id = key("stream_id", stream_id)
        most, budget, before = check_trim(keep_events, keep_bytes, older_than)

        def work(conn: sqlite3.Connection) -> int:
            first, last = _bounds(conn, stream_id)
            cuts = [first - 1]  # the last cursor to forget, by each bound
            if most is not None:
                cuts.append(last - most)
            if budget is not None:
                # The newest cursor whose suffix of events passes the budget.
                (cut,) = conn.execute(
                    "SELECT max(cursor) FROM (SELECT cursor, sum(size) OVER"
                    " (ORDER BY cursor DESC) AS kept FROM samgita_replay"
                    " WHERE stream_id = ?) WHERE kept > ?",
                    (stream_id, budget),
                ).fetchone()
                cuts.append(first - 1 if cut is None else cut)
            if before is not None:
                (newer,) = conn.execute(
                    "SELECT min(cursor) FROM samgita_replay"
                    " WHERE stream_id = ? AND appended_at >= ?",
                    (stream_id, before),
                ).fetchone()
                cuts.append(last if newer is None else newer - 1)
            cut = max(cuts)
            if cut < first:
                return 0
            conn.execute(
                "DELETE FROM samgita_replay WHERE stream_id = ? AND cursor <= ?",
                (stream_id, cut),
            )
            conn.execute(
                "UPDATE samgita_streams SET first_cursor = ? WHERE stream_id = ?",
                (cut + 1, stream_id),
            )
            return cut - first + 1

        return self._runner.write(work)

    def first_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.first_cursor`."""
        stream_id = key("stream_id", stream_id)
        return self._runner.read(lambda conn: _bounds(conn, stream_id)[0])

    def last_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.last_cursor`."""
        stream_id = key("stream_id", stream_id)
        return self._runner.read(lambda conn: _bounds(conn, stream_id)[1])


class SqliteCheckpoints(RunnerStore[sqlite3.Connection]):
    """The :class:`CheckpointStore` of a `SqliteStore` (durable)."""

    def load(self, host_id: str) -> dict[str, int]:
        """As :meth:`CheckpointStore.load`."""
        host_id = key("host_id", host_id)

        def work(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                "SELECT stream_id, cursor FROM samgita_checkpoints WHERE host_id = ?",
                (host_id,),
            )
            return dict(rows.fetchall())

        return self._runner.read(work)

    def advance(self, host_id: str, stream_id: str, cursor: int) -> int:
        """As :meth:`CheckpointStore.advance`."""
        name = (key("host_id", host_id), key("stream_id", stream_id))
        cursor = check_cursor("cursor", cursor)

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT cursor FROM samgita_checkpoints WHERE host_id = ? AND stream_id = ?",
                name,
            ).fetchone()
            if row is not None and row[0] >= cursor:
                return int(row[0])
            conn.execute(
                "INSERT OR REPLACE INTO samgita_checkpoints (host_id, stream_id, cursor)"
                " VALUES (?, ?, ?)",
                (*name, cursor),
            )
            return cursor

        return self._runner.write(work)

    def forget(self, host_id: str, stream_id: str) -> None:
        """As :meth:`CheckpointStore.forget`."""
        name = (key("host_id", host_id), key("stream_id", stream_id))
        self._runner.write(
            lambda conn: conn.execute(
                "DELETE FROM samgita_checkpoints WHERE host_id = ? AND stream_id = ?",
                name,
            )
        )
