"""The replay log of the PostgreSQL backend, and its live tail (private).

Public as ``samgita_protocol.stores.postgres.PostgresReplayLog``. A
stream's row in ``samgita_streams`` is the lock its cursors are assigned
under: an append moves ``last_cursor`` on by one, which locks the row
until the append commits, so cursors stay contiguous whichever
connection appends. The move is a compare-and-set from the cursor the
store object last assigned on the stream (one statement, which also
inserts the event), or, when that is not the stream's last cursor (first
append here, or another connection appended since), an upsert that
reads the cursor in a transaction. A trim locks the row with ``SELECT
... FOR UPDATE``. A page is one statement, so one snapshot: a trim never
removes part of it. Each append sends a ``NOTIFY`` on :data:`CHANNEL`
when it commits, for :meth:`PostgresReplayLog.wait_for`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from .._schema import MAX_CURSOR
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
    reentered,
    seconds,
    wall_clock,
)
from ._types import ReplayPage

__all__ = ["CHANNEL", "PostgresReplayLog", "Waiter", "notice"]

#: The ``NOTIFY`` channel an append signals on (payload: :func:`notice`).
CHANNEL: Final = "samgita_replay"

#: Streams whose last cursor a store object remembers (the oldest is
#: forgotten first): a host appends to its live streams, and a stream
#: forgotten costs one append by the locked path.
_REMEMBERED: Final = 1024

# An append whose cursor was guessed: moves the stream's last cursor from
# the guess's predecessor (a compare-and-set under the row's lock: a
# concurrent append makes it match nothing), inserts the event and
# notifies, in one statement; no row when the guess was wrong.
_APPEND_AT: Final = (
    "WITH stream AS (UPDATE samgita_streams SET last_cursor = %(cursor)s"
    " WHERE stream_id = %(stream)s AND last_cursor = %(last)s"
    " RETURNING stream_id),"
    " event AS (INSERT INTO samgita_replay"
    " (stream_id, cursor, data, size, appended_at)"
    " SELECT stream_id, %(cursor)s, %(data)s, %(size)s, %(at)s FROM stream"
    " RETURNING 1)"
    " SELECT pg_notify(%(channel)s, %(notice)s) FROM event"
)

# A page in one statement (one snapshot): the stream's bounds, the sizes of
# the next events (at most a page), and their data while their sizes add
# up to max_bytes. That sends no more than max_bytes of data, and every
# event of the page, whose rule (page_count) also counts PAGE_OVERHEAD
# and a comma per event. Binary results: bytea as is, not in hex.
_PAGE: Final = (
    "SELECT s.first_cursor, s.last_cursor, e.sizes, e.events"
    " FROM (VALUES (1)) AS one"
    " LEFT JOIN samgita_streams AS s ON s.stream_id = %(stream)s"
    " CROSS JOIN LATERAL (SELECT array_agg(size ORDER BY cursor) AS sizes,"
    " array_agg(data ORDER BY cursor) FILTER (WHERE sent <= %(budget)s) AS events"
    " FROM (SELECT cursor, size, data, sum(size) OVER"
    " (ORDER BY cursor ROWS UNBOUNDED PRECEDING) AS sent"
    " FROM samgita_replay WHERE stream_id = %(stream)s AND cursor > %(after)s"
    " ORDER BY cursor LIMIT %(most)s) AS next) AS e"
)


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
        # stream_id -> the last cursor this object assigned there: the next
        # append's guess. Read and written under the runner's lock.
        self._last: dict[str, int] = {}
        self._encoding = False  # in encode_at: an append from it is refused

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

        def work(conn: Conn) -> int:
            guess = self._last.get(stream_id)
            # A second path beside the locked one, for its measured gain:
            # the guess is one statement and one commit where the locked
            # path is four round trips (BEGIN, upsert, insert, COMMIT);
            # bench/stores.py, replay append against one INSERT: 2.63-3.07x
            # by the locked path alone, 1.55-1.62x with the guess.
            if guess is not None:
                cursor = next_cursor(guess)
                data = self._encode(encode_at, cursor)
                if self._append_at(conn, stream_id, cursor, data, at):
                    self._remember(stream_id, cursor)
                    return cursor
            cursor = self._append_locked(conn, stream_id, encode_at, at)
            self._remember(stream_id, cursor)
            return cursor

        return self._runner.write(work)

    def _encode(self, encode_at: Callable[[int], bytes], cursor: int) -> bytes:
        # encode_at's bytes at cursor, checked; an append from it is refused.
        if self._encoding:
            raise reentered()
        self._encoding = True
        try:
            return check_event(encode_at(cursor), self._max_bytes)
        finally:
            self._encoding = False

    def _append_at(
        self, conn: Conn, stream_id: str, cursor: int, data: bytes, at: float
    ) -> bool:
        # Whether the event was appended at the guessed cursor (one statement).
        values = {
            "stream": utf8(stream_id),
            "last": cursor - 1,
            "cursor": cursor,
            "data": data,
            "size": len(data),
            "at": at,
            "channel": CHANNEL,
            "notice": notice(stream_id),
        }
        return conn.execute(_APPEND_AT, values).fetchone() is not None

    def _append_locked(
        self, conn: Conn, stream_id: str, encode_at: Callable[[int], bytes], at: float
    ) -> int:
        # The event appended at the cursor read under the stream's lock.
        stream = utf8(stream_id)
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
            data = self._encode(encode_at, cursor)
            conn.execute(
                "WITH event AS (INSERT INTO samgita_replay"
                " (stream_id, cursor, data, size, appended_at)"
                " VALUES (%s, %s, %s, %s, %s)) SELECT pg_notify(%s, %s)",
                (stream, cursor, data, len(data), at, CHANNEL, notice(stream_id)),
            )
        return cursor

    def _remember(self, stream_id: str, cursor: int) -> None:
        # The guess of the next append to stream_id (with the runner's lock).
        last = self._last
        if stream_id not in last and len(last) >= _REMEMBERED:
            del last[next(iter(last))]
        last[stream_id] = cursor

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
        values = {
            "stream": utf8(stream_id),
            # Clamped to a cursor: check_after, given the bounds, decides.
            "after": min(max(int(after), 0), MAX_CURSOR)
            if isinstance(after, int)
            else 0,
            "budget": budget,
            "most": most,
        }

        def work(conn: Conn) -> ReplayPage:
            row = conn.execute(_PAGE, values, binary=True).fetchone()
            assert row is not None  # one row of VALUES, left-joined
            first, last, sizes, events = row
            if first is None:  # no stream row: nothing appended yet
                first, last = 1, 0
            start = check_after(after, first, last)
            count = page_count(sizes or [], budget, start)
            # The page's events add up to at most max_bytes: all were sent.
            page = (events or [])[:count]
            assert len(page) == count
            return ReplayPage(
                events=page, cursor=start + count, has_more=start + count < last
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
