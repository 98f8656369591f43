"""A bounded in-memory host log of one stream's replayable notifications.

See ``docs/protocol.md`` section 11. The log assigns contiguous positive
cursors, answers ``stream/resume`` pages of at most :data:`PAGE_SIZE` events
and forgets its oldest events once ``max_events`` or ``max_bytes`` is
reached. It is not durable: a host that promises replay across restarts
must persist events itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, cast

import msgspec
from msgspec import UNSET

from ._codec import encode
from ._errors import ErrorCode, ProtocolError
from ._options import DEFAULT_MAX_MESSAGE_BYTES, check_id, positive_int, wrong_type
from ._outgoing import Outgoing
from ._params import PAGE_SIZE, StreamResumeResult
from ._schema import Notification

__all__ = ["PAGE_OVERHEAD", "Replay", "check_page_cursor", "fitting"]

#: Bytes a ``stream/resume`` response needs besides its events' own
#: encodings, at worst: the envelope with every identity and ref at 256
#: bytes spelled with ``\\u`` escapes (6 bytes per byte), the result's
#: ``stream_id``, ``cursor`` and ``has_more`` and the commas between events.
#: A page holds events only while their sizes plus this (and one comma per
#: event) stay within the message budget.
PAGE_OVERHEAD: Final = 12 * 1024


#: Default retained events: eight pages, enough for a client that fell a few
#: pages behind, small enough that an idle stream costs little.
DEFAULT_MAX_EVENTS: Final = 1024

#: Default retained encoded bytes (8 MiB): eight maximal messages.
DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024


class Replay:
    """Bounded in-memory log of one stream (host side of ``stream/resume``).

    Events are kept in one list indexed by ``cursor - base``: a page is a
    single slice, so ``since`` costs the same at 1,000 and 100,000 retained
    events (chunked storage, as the Elixir reference had, needs a second
    slice and a concatenation for most pages, which costs more than the
    lookup it saves in Python). Eviction clears the evicted slot at once, so
    the event's memory is released; the cleared slots at the front are
    dropped in one step once they outnumber the retained events (and a
    page), so the list holds at most about twice the retained events in
    pointers and each append stays O(1) amortized.

    Args:
        stream_id: the stream this log sequences (a wire id).
        max_events: retained events; the oldest are evicted first.
        max_bytes: retained encoded bytes; the oldest are evicted first.
        max_message_bytes: the message bound of the connection that serves
            the pages (1 MiB): a page fits in one message of this size, and
            an event that could not fit in a one-event page is refused.

    Raises:
        TypeError, ValueError: a bad ``stream_id``, ``max_events``,
            ``max_bytes`` or ``max_message_bytes`` (the message names it).
    """

    __slots__ = (
        "_bytes",
        "_base",
        "_events",
        "_first",
        "_last",
        "_max_bytes",
        "_max_events",
        "_max_message_bytes",
        "_sizes",
        "_stream_id",
    )

    def __init__(
        self,
        stream_id: str,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        checked = check_id("stream_id", stream_id, optional=False)
        assert checked is not None  # required: never None
        self._stream_id = checked
        self._max_events = positive_int("max_events", max_events)
        self._max_bytes = positive_int("max_bytes", max_bytes)
        self._max_message_bytes = positive_int("max_message_bytes", max_message_bytes)
        # Slot i holds cursor base + i; slots before first - base are
        # evicted (None) and dropped in bulk by _evict.
        self._events: list[Notification | None] = []
        self._base = 1
        # Encoded sizes, slot for slot beside _events (0 once evicted).
        self._sizes: list[int] = []
        self._first = 1
        self._last = 0
        self._bytes = 0

    def __repr__(self) -> str:
        return (
            f"Replay({self._stream_id!r}, first_cursor={self._first}, "
            f"last_cursor={self._last}, retained_bytes={self._bytes})"
        )

    @property
    def stream_id(self) -> str:
        """The stream this log sequences."""
        return self._stream_id

    @property
    def first_cursor(self) -> int:
        """The oldest retained cursor (``last_cursor + 1`` when empty)."""
        return self._first

    @property
    def last_cursor(self) -> int:
        """The cursor of the newest event (0 before the first append)."""
        return self._last

    @property
    def retained_bytes(self) -> int:
        """Encoded bytes of the retained events."""
        return self._bytes

    @property
    def max_events(self) -> int:
        """The retained-event bound."""
        return self._max_events

    @property
    def max_bytes(self) -> int:
        """The retained-bytes bound."""
        return self._max_bytes

    @property
    def max_message_bytes(self) -> int:
        """The message budget of a page."""
        return self._max_message_bytes

    def __len__(self) -> int:
        """Number of retained events."""
        return self._last - self._first + 1

    def append(self, notification: Notification) -> Outgoing:
        """Append one event; return it as retained (with ``stream_id`` and
        ``cursor``) with its wire bytes, validated and sized here: an
        `Outgoing` (send its ``data``).

        Unsequenced input gets this stream's ``stream_id`` and the next
        cursor; sequenced input must carry this stream and exactly the next
        cursor and is returned unchanged. The oldest events are then evicted
        until both bounds hold. On error the log is unchanged.

        Raises:
            TypeError: ``notification`` is not a :class:`Notification`.
            ProtocolError: ``unpaired_stream_position`` (only one of ``stream_id`` and
                ``cursor``), ``foreign_stream`` (another stream),
                ``cursor_gap`` (not the next cursor), ``limit_exceeded``
                (the event alone is larger than ``max_bytes``, or a page of
                it alone, :data:`PAGE_OVERHEAD` included, would pass
                ``max_message_bytes``), ``message_too_large`` (the event
                alone is over ``max_message_bytes``), and any code
                :func:`encode` raises for an invalid notification.
        """
        if type(notification) is not Notification:  # encode's rule: no subclass
            raise wrong_type("notification", notification, "a Notification")
        next_cursor = self._last + 1
        stream_id = notification.stream_id
        cursor = notification.cursor
        if stream_id is UNSET and cursor is UNSET:
            notification = msgspec.structs.replace(
                notification, stream_id=self._stream_id, cursor=next_cursor
            )
        elif stream_id is UNSET or cursor is UNSET:
            raise ProtocolError(
                ErrorCode.UNPAIRED_STREAM_POSITION,
                "stream_id and cursor must appear together",
            )
        elif stream_id != self._stream_id:
            raise ProtocolError(
                ErrorCode.FOREIGN_STREAM,
                "notification belongs to another stream",
                data={"stream_id": stream_id, "expected": self._stream_id},
            )
        elif type(cursor) is not int or cursor != next_cursor:
            raise ProtocolError(
                ErrorCode.CURSOR_GAP,
                "sequenced input must continue the stream",
                data={"expected": next_cursor, "cursor": cursor},
            )
        wire = encode(notification, max_message_bytes=self._max_message_bytes)
        size = len(wire)
        if size > self._max_bytes:
            raise ProtocolError(
                ErrorCode.LIMIT_EXCEEDED,
                "event is larger than max_bytes",
                data={"limit": "max_bytes", "max": self._max_bytes},
            )
        if size + PAGE_OVERHEAD > self._max_message_bytes:
            raise ProtocolError(
                ErrorCode.LIMIT_EXCEEDED,
                "event cannot fit in a stream/resume page",
                data={"limit": "max_message_bytes", "max": self._max_message_bytes},
            )
        self._events.append(notification)
        self._sizes.append(size)
        self._last = next_cursor
        self._bytes += size
        if (
            self._last - self._first >= self._max_events
            or self._bytes > self._max_bytes
        ):
            self._evict()
        return Outgoing(notification, wire)

    def _evict(self) -> None:
        events = self._events
        sizes = self._sizes
        base = self._base
        first = self._first
        last = self._last
        held = self._bytes
        max_events = self._max_events
        max_bytes = self._max_bytes
        while last - first + 1 > max_events or held > max_bytes:
            # The newest event always fits both bounds, so it is never evicted.
            events[first - base] = None
            held -= sizes[first - base]
            sizes[first - base] = 0
            first += 1
        self._bytes = held
        self._first = first
        dead = first - base
        if dead >= PAGE_SIZE and dead > len(events) - dead:
            del events[:dead]
            del sizes[:dead]
            self._base = first

    def since(self, cursor: int, *, max_bytes: int | None = None) -> list[Notification]:
        """Return the retained events after ``cursor``, at most one page, in order.

        ``cursor`` is the last processed position (0 for "from the start").
        A page holds at most 128 events and fits in one message of
        ``max_bytes`` (default: ``max_message_bytes``): events are taken
        while their encoded sizes, one comma each and :data:`PAGE_OVERHEAD`
        stay within it. Continue from the last returned event's cursor while
        fewer than all remaining events were returned. ``cursor ==
        last_cursor`` gives ``[]``; so does a budget too small for the next
        event (never for the default budget, which every retained event fits).

        Raises:
            TypeError: ``cursor`` or ``max_bytes`` is not an int.
            ProtocolError: ``invalid_cursor`` when ``cursor`` is negative or
                beyond the newest event, ``replay_gap`` when ``cursor + 1``
                is no longer retained (``data.first_retained`` names the
                oldest retained cursor).
        """
        if max_bytes is None:
            budget = self._max_message_bytes
        elif isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
            raise wrong_type("max_bytes", max_bytes, "an int")
        else:
            budget = max_bytes
        upto = self._check(cursor)
        if upto == cursor:
            return []
        start = cursor + 1 - self._base
        count = fitting(self._sizes[start : start + upto - cursor], budget)
        events = self._events[start : start + count]
        # Every slot in cursor+1..upto is retained, so none is None.
        return cast("list[Notification]", events)

    def page(self, cursor: int, *, max_bytes: int | None = None) -> StreamResumeResult:
        """Answer ``stream/resume`` from ``cursor``: a :class:`StreamResumeResult`.

        Its ``events`` are :meth:`since` ``(cursor, max_bytes=max_bytes)``
        (at most 128, fitting in one message of ``max_bytes``, default
        ``max_message_bytes``), its ``cursor`` the last returned cursor
        (``cursor`` itself when empty) and ``has_more`` whether newer events
        remain.

        Raises:
            TypeError, ProtocolError: as :meth:`since`.
        """
        events = self.since(cursor, max_bytes=max_bytes)
        upto = cursor + len(events)
        return StreamResumeResult(
            stream_id=self._stream_id,
            cursor=upto,
            events=events,
            has_more=upto < self._last,
        )

    def _check(self, cursor: int) -> int:
        # The last cursor of the page from `cursor`, after the error checks.
        check_page_cursor(cursor, self._first, self._last)
        return min(cursor + PAGE_SIZE, self._last)


def check_page_cursor(
    cursor: object, first: int, last: int, name: str = "cursor"
) -> int:
    """``cursor`` when a page can start after it in a log retaining
    ``first..last`` (the rule of every replay log: `Replay`, the stores).

    Raises:
        TypeError: ``cursor`` (named ``name``) is not an int.
        ProtocolError: ``invalid_cursor`` when it is negative or beyond
            ``last``; ``replay_gap`` when ``cursor + 1`` is no longer
            retained (``data.first_retained`` names the oldest retained one).
    """
    if isinstance(cursor, bool) or not isinstance(cursor, int):
        raise wrong_type(name, cursor, "an int")
    if cursor < 0 or cursor > last:
        raise ProtocolError(
            ErrorCode.INVALID_CURSOR,
            "cursor is beyond the newest event"
            if cursor > last
            else "cursor must be >= 0",
            data={"cursor": cursor, "last": last},
        )
    if cursor < last and cursor + 1 < first:
        raise ProtocolError(
            ErrorCode.REPLAY_GAP,
            "events after this cursor are no longer retained",
            data={"cursor": cursor, "first_retained": first},
        )
    return cursor


def fitting(sizes: Iterable[int], budget: int) -> int:
    """How many of the next events (their encoded ``sizes``, at most a page)
    fit in one ``stream/resume`` message of ``budget`` bytes:
    :data:`PAGE_OVERHEAD` plus each event and its comma (the page rule of
    every replay log). ``sizes`` may be lazy (an iterator over rows being
    read): it is then consumed up to the first event past the budget and
    no further, so a caller reads at most one event beyond the page."""
    if isinstance(sizes, Sequence):
        count = len(sizes)
        if PAGE_OVERHEAD + sum(sizes) + count <= budget:
            return count
    # Not the whole page, or not known yet: stop at the event that passes.
    used = PAGE_OVERHEAD
    count = 0
    for size in sizes:
        used += size + 1
        if used > budget:
            break
        count += 1
    return count
