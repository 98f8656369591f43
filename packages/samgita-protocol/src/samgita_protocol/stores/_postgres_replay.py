"""The replay log of the PostgreSQL backend, and its live tail (private).

Public as ``samgita_protocol.stores.postgres.PostgresReplayLog``. A
stream's row in ``samgita_streams`` is the lock its cursors are assigned
under: an append increments ``last_cursor`` in an upsert, which locks the
row until the append commits, so cursors stay contiguous whichever
connection appends; a trim locks it with ``SELECT ... FOR UPDATE``. A
page is read without a lock and checked: when a trim removed part of it
between two statements, it is read again. Each append sends a
``NOTIFY`` on :data:`CHANNEL` when it commits, for
:meth:`PostgresReplayLog.wait_for`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from ._backend import Runner, Store
from ._postgres_stores import Conn, one_row, utf8
from ._rules import (
    check_after,
    check_callable,
    check_cursor,
    check_event,
    check_trim,
    key,
    next_cursor,
    page_count,
    page_limits,
    seconds,
    wall_clock,
)
from ._types import ReplayPage

__all__ = ["CHANNEL", "PostgresReplayLog", "Waiter", "notice"]

#: The ``NOTIFY`` channel an append signals on (payload: :func:`notice`).
CHANNEL: Final = "samgita_replay"


def notice(stream_id: str) -> str:
    """The ``NOTIFY`` payload of an append to ``stream_id``: its UTF-8 bytes
    in hex (a payload is text, and cannot hold U+0000)."""
    return stream_id.encode().hex()


class Waiter(Protocol):
    """The live tail of a `PostgresStore` (``LISTEN`` on :data:`CHANNEL`)."""

    def wait(
        self, payload: str, after: int, timeout: float, last: Callable[[], int]
    ) -> int: ...


def _bounds(conn: Conn, stream: bytes) -> tuple[int, int]:
    # (first retained, last assigned) cursor of a stream.
    row = one_row(
        conn,
        "SELECT first_cursor, last_cursor FROM samgita_streams WHERE stream_id = %s",
        (stream,),
    )
    return (1, 0) if row is None else (row[0], row[1])


def _cut(conn: Conn, stream: bytes, budget: int | None, before: float | None) -> int:
    # The newest cursor to forget by keep_bytes and older_than (0: none):
    # the newest whose suffix of events passes the budget, and the one
    # before the first appended at or after `before` (all when none is).
    row = one_row(
        conn,
        "SELECT max(cursor) FILTER (WHERE kept > %s),"
        " min(cursor) FILTER (WHERE appended_at >= %s), max(cursor)"
        " FROM (SELECT cursor, appended_at,"
        " sum(size) OVER (ORDER BY cursor DESC) AS kept"
        " FROM samgita_replay WHERE stream_id = %s) AS retained",
        (budget, before, stream),
    )
    assert row is not None  # an aggregate: one row
    over, newer, last = row
    cuts = [0]
    if budget is not None and over is not None:
        cuts.append(over)
    if before is not None and last is not None:
        cuts.append(last if newer is None else newer - 1)
    return max(cuts)


class PostgresReplayLog(Store[Conn]):
    """The :class:`~samgita_protocol.stores.ReplayLog` of a
    ``PostgresStore`` (durable), with a live tail across nodes:
    :meth:`wait_for`."""

    def __init__(
        self, runner: Runner[Conn], max_message_bytes: int, waiter: Waiter | None
    ) -> None:
        super().__init__(runner, max_message_bytes)
        self._waiter = waiter

    def append(
        self,
        stream_id: str,
        encode_at: Callable[[int], bytes],
        *,
        now: float | None = None,
    ) -> int:
        """As :meth:`ReplayLog.append`; the append also notifies every
        :meth:`wait_for` on the stream, on any node, when it commits."""
        stream_id = key("stream_id", stream_id)
        encode_at = check_callable(encode_at)
        at = wall_clock(now)
        stream = utf8(stream_id)

        def work(conn: Conn) -> int:
            with conn.transaction():
                # The stream's row, locked until the commit: cursors are
                # assigned one at a time, on every connection.
                row = one_row(
                    conn,
                    "INSERT INTO samgita_streams (stream_id, first_cursor, last_cursor)"
                    " VALUES (%s, 1, 1) ON CONFLICT (stream_id) DO UPDATE"
                    " SET last_cursor = samgita_streams.last_cursor + 1"
                    " RETURNING last_cursor",
                    (stream,),
                )
                assert row is not None  # RETURNING of an upsert: one row
                cursor = next_cursor(row[0] - 1)
                data = check_event(encode_at(cursor), self._max_bytes)
                conn.execute(
                    "WITH event AS (INSERT INTO samgita_replay"
                    " (stream_id, cursor, data, size, appended_at)"
                    " VALUES (%s, %s, %s, %s, %s)) SELECT pg_notify(%s, %s)",
                    (stream, cursor, data, len(data), at, CHANNEL, notice(stream_id)),
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
        stream = utf8(stream_id)

        def work(conn: Conn) -> ReplayPage | None:
            first, last = _bounds(conn, stream)
            start = check_after(after, first, last)
            # Sizes first, so that no event beyond the page is read.
            sizes = [
                size
                for (size,) in conn.execute(
                    "SELECT size FROM samgita_replay WHERE stream_id = %s"
                    " AND cursor > %s AND cursor <= %s ORDER BY cursor LIMIT %s",
                    (stream, start, last, most),
                )
            ]
            if len(sizes) < min(most, last - start):
                return None  # trimmed in between
            count = page_count(sizes, budget, start)
            events = [
                data
                for (data,) in conn.execute(
                    "SELECT data FROM samgita_replay WHERE stream_id = %s"
                    " AND cursor > %s AND cursor <= %s ORDER BY cursor",
                    (stream, start, start + count),
                )
            ]
            if len(events) < count:
                return None  # trimmed in between
            return ReplayPage(
                events=events, cursor=start + count, has_more=start + count < last
            )

        while True:
            page = self._runner.read(work)
            if page is not None:
                return page

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
        stream = utf8(stream_id)

        def work(conn: Conn) -> int:
            with conn.transaction():
                row = one_row(
                    conn,
                    "SELECT first_cursor, last_cursor FROM samgita_streams"
                    " WHERE stream_id = %s FOR UPDATE",
                    (stream,),
                )
                if row is None:
                    return 0
                first, last = row
                cut = max(first - 1, -1 if most is None else last - most)
                if budget is not None or before is not None:
                    cut = max(cut, _cut(conn, stream, budget, before))
                if cut < first:
                    return 0
                conn.execute(
                    "WITH gone AS (DELETE FROM samgita_replay"
                    " WHERE stream_id = %s AND cursor <= %s)"
                    " UPDATE samgita_streams SET first_cursor = %s WHERE stream_id = %s",
                    (stream, cut, cut + 1, stream),
                )
                return int(cut - first + 1)

        return self._runner.write(work)

    def first_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.first_cursor`."""
        stream = utf8(key("stream_id", stream_id))
        return self._runner.read(lambda conn: _bounds(conn, stream)[0])

    def last_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.last_cursor`."""
        stream = utf8(key("stream_id", stream_id))
        return self._runner.read(lambda conn: _bounds(conn, stream)[1])

    def wait_for(self, stream_id: str, after: int, *, timeout: float) -> int:
        """Wait until ``stream_id`` has an event after cursor ``after``,
        appended by any store object on the database (any process, any
        machine), or until ``timeout`` seconds passed; return the stream's
        last cursor then: greater than ``after`` when an event after it
        exists. Returns at once when one exists already.

        A live tail across nodes: a client that reconnects to another node
        resumes from its checkpoint with :meth:`page`, then calls this to
        learn of what the first node still appends. Each append notifies
        (``NOTIFY``) when it commits; the store listens (``LISTEN``) on its
        own connection, opened by the first call, from a thread of its
        own, which :meth:`PostgresStore.close` stops. Several threads may
        wait at once. After the listening connection was lost, every
        waiter checks again once it is back, so no append is missed.

        Raises:
            TypeError, ValueError: a wrong argument (``after`` an int from
                0 to ``MAX_CURSOR``, ``timeout`` a positive number).
            RuntimeError: called on the ``replay_log`` of a transaction
                (waiting there would hold the transaction open).
            psycopg.OperationalError: the database cannot be reached.
        """
        stream_id = key("stream_id", stream_id)
        after = check_cursor("after", after)
        limit = seconds("timeout", timeout)
        if self._waiter is None:
            raise RuntimeError(
                "wait_for waits outside a transaction: call it on store.replay_log"
            )
        return self._waiter.wait(
            notice(stream_id), after, limit, lambda: self.last_cursor(stream_id)
        )
