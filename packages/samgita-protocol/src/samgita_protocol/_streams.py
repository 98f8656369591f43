"""A client's consumption of replayable notifications (private).

:class:`ClientStreams` is the client's consumption state (one bounded buffer
of undelivered notifications and, per stream, ``processed <= delivered <=
received``), used by :class:`~samgita_protocol.Client` (the server's
processed positions are ``_positions``); ``docs/protocol.md`` section 11 is
the behaviour. Every method either completes or raises and leaves the object as
it was.

How content is retained for ``replay_conflict``: as every window keeps it
(``_content``): the wire bytes of an event of at most 1 KiB, a digest of its
canonical form otherwise, compared exactly and independently of key order
and whitespace on the wire.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from msgspec import UNSET

from ._content import ContentKey, content_key, same_content
from ._errors import ErrorCode, ProtocolError
from ._options import (
    DEFAULT_MAX_BUFFERED_NOTIFICATIONS,
    DEFAULT_MAX_STREAM_HASHES,
    DEFAULT_MAX_STREAMS,
    positive_int,
    wrong_type,
)
from ._positions import limit_exceeded, validate_positions
from ._records import Records
from ._schema import Notification

__all__ = ["ClientStreams", "StreamPosition"]


def _sequenced(notification: Notification) -> tuple[str, int]:
    stream_id = notification.stream_id
    cursor = notification.cursor
    if stream_id is UNSET or cursor is UNSET:
        raise ValueError("expected a sequenced notification (stream_id and cursor)")
    return stream_id, cursor


class StreamPosition(NamedTuple):
    """A client stream's positions: ``processed <= delivered <= received``."""

    processed: int
    delivered: int
    received: int


class _Stream:
    """One stream's positions and the retained content of cursors
    ``processed + 1 .. received`` (``retained[i]`` is cursor
    ``processed + 1 + i``)."""

    __slots__ = ("delivered", "processed", "received", "retained")

    def __init__(self, cursor: int) -> None:
        self.processed = cursor
        self.delivered = cursor
        self.received = cursor
        self.retained: deque[ContentKey] = deque()

    def copy(self) -> _Stream:
        other = _Stream(self.processed)
        other.delivered = self.delivered
        other.received = self.received
        other.retained = self.retained.copy()
        return other


class ClientStreams:
    """The client's consumption state of replayable streams.

    Sequenced notifications (live or from ``stream/resume`` pages) enter one
    bounded buffer in arrival order; :meth:`drain` hands them out and
    :meth:`ack` advances the *processed* position once the caller has
    processed them. Only processed positions are checkpoints: receipt and
    delivery never advance one.

    Args:
        max_buffered_notifications: undelivered notifications buffered.
        max_streams: streams tracked (restored checkpoints included).
        max_stream_hashes: per-stream retained content of received but
            unprocessed events.
        checkpoints: processed positions from :meth:`checkpoints` to restore
            after a process restart (the caller checks they belong to the
            same host).
        records: the client's :class:`~._records.Records`; a position
            changes in its checkpoint store first (a store that raises
            leaves the position as it was).

    Raises:
        TypeError, ValueError: a bad bound or bad ``checkpoints`` (the
            message names the option).
    """

    __slots__ = (
        "_buffer",
        "_max_buffered",
        "_max_hashes",
        "_max_streams",
        "_records",
        "_streams",
    )

    def __init__(
        self,
        *,
        max_buffered_notifications: int = DEFAULT_MAX_BUFFERED_NOTIFICATIONS,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_stream_hashes: int = DEFAULT_MAX_STREAM_HASHES,
        checkpoints: Mapping[str, int] | None = None,
        records: Records | None = None,
    ) -> None:
        # The caller's checkpoint store (through Records), told before each
        # change of a position: ack advances it, forget forgets it.
        self._records = records
        self._max_buffered = positive_int(
            "max_buffered_notifications", max_buffered_notifications
        )
        self._max_streams = positive_int("max_streams", max_streams)
        self._max_hashes = positive_int("max_stream_hashes", max_stream_hashes)
        restored = (
            {}
            if checkpoints is None
            else validate_positions("checkpoints", checkpoints, self._max_streams)
        )
        self._streams: dict[str, _Stream] = {
            stream_id: _Stream(cursor) for stream_id, cursor in restored.items()
        }
        # Undelivered notifications in arrival order, each with its stream's
        # state (stable objects: a page is committed into them in place) and
        # cursor, so drain needs no lookups.
        self._buffer: deque[tuple[_Stream, int, Notification]] = deque()

    def __repr__(self) -> str:
        return (
            f"ClientStreams(streams={len(self._streams)}, buffered={len(self._buffer)})"
        )

    @property
    def buffered(self) -> int:
        """Number of buffered, undelivered notifications."""
        return len(self._buffer)

    @property
    def max_buffered_notifications(self) -> int:
        """The buffer bound."""
        return self._max_buffered

    @property
    def max_streams(self) -> int:
        """The stream-count bound."""
        return self._max_streams

    @property
    def max_stream_hashes(self) -> int:
        """The per-stream retained-content bound."""
        return self._max_hashes

    def position(self, stream_id: str) -> StreamPosition | None:
        """The positions of ``stream_id``, or None for an unknown stream."""
        stream = self._streams.get(stream_id)
        if stream is None:
            return None
        return StreamPosition(stream.processed, stream.delivered, stream.received)

    def _stream(self, stream_id: str) -> _Stream:
        # The stream's state; a new one is not stored until something is
        # buffered.
        stream = self._streams.get(stream_id)
        if stream is not None:
            return stream
        if len(self._streams) >= self._max_streams:
            raise limit_exceeded("max_streams", self._max_streams)
        return _Stream(0)

    def _duplicate(
        self,
        stream_id: str,
        stream: _Stream,
        cursor: int,
        notification: Notification,
        content: bytes | str | None,
    ) -> bool:
        # True for an ignored duplicate, False for the next cursor; raises
        # for a conflict or a gap.
        if cursor <= stream.processed:
            return True
        if cursor <= stream.received:
            kept = stream.retained[cursor - stream.processed - 1]
            if same_content(kept, notification, content):
                return True
            raise ProtocolError(
                ErrorCode.REPLAY_CONFLICT,
                "a stream event differs from the one already received",
                data={"stream_id": stream_id, "cursor": cursor},
                origin="peer",
            )
        if cursor != stream.received + 1:
            raise ProtocolError(
                ErrorCode.CURSOR_GAP,
                "stream events were skipped or reordered; resume from the checkpoint",
                data={
                    "stream_id": stream_id,
                    "expected": stream.received + 1,
                    "cursor": cursor,
                },
                origin="peer",
            )
        return False

    def ingest(
        self, notification: Notification, content: bytes | str | None = None
    ) -> bool:
        """Offer one sequenced notification; True when buffered, False for a duplicate.

        A cursor at or below the processed position is an ignored duplicate;
        a received but unprocessed cursor is compared with its retained
        content (identical: ignored duplicate; different:
        ``replay_conflict``); otherwise it must be exactly the next cursor
        after the received one. ``content`` is the wire form (bytes or
        text) the notification was decoded from, when the caller has it: an
        event of at most 1 KiB of it is retained by those bytes, anything
        else by a digest of its canonical form (``_content``). On error
        nothing changed.

        Raises:
            ValueError: ``notification`` has no ``stream_id``/``cursor``.
            ProtocolError: ``replay_conflict`` (peer: same cursor, other
                content), ``cursor_gap`` (peer: a cursor was skipped or
                reordered), ``limit_exceeded`` (``data.limit`` is
                ``max_streams``, ``max_buffered_notifications`` or
                ``max_stream_hashes``), raised before any position advances.
        """
        stream_id, cursor = _sequenced(notification)
        stream = self._streams.get(stream_id)
        if stream is not None and cursor == stream.received + 1:
            # The common case, the next cursor of a known stream, without
            # the duplicate and gap checks it cannot fail.
            if len(self._buffer) >= self._max_buffered:
                raise limit_exceeded("max_buffered_notifications", self._max_buffered)
            retained = stream.retained
            if len(retained) >= self._max_hashes:
                raise limit_exceeded("max_stream_hashes", self._max_hashes)
            retained.append(content_key(notification, content))
            stream.received = cursor
            self._buffer.append((stream, cursor, notification))
            return True
        if stream is None:
            stream = self._stream(stream_id)
        if self._duplicate(stream_id, stream, cursor, notification, content):
            return False
        if len(self._buffer) >= self._max_buffered:
            raise limit_exceeded("max_buffered_notifications", self._max_buffered)
        if len(stream.retained) >= self._max_hashes:
            raise limit_exceeded("max_stream_hashes", self._max_hashes)
        stream.retained.append(content_key(notification, content))
        stream.received = cursor
        self._streams[stream_id] = stream
        self._buffer.append((stream, cursor, notification))
        return True

    def ingest_page(self, stream_id: str, events: Iterable[Notification]) -> int:
        """Ingest the events of a correlated ``stream/resume`` page, atomically.

        Each event goes through the same duplicate, conflict and gap checks
        as :meth:`ingest`; either every new event is buffered or, on error,
        nothing changed (drain, acknowledge and call again with the same
        page). Returns how many events were newly buffered.

        Raises:
            ProtocolError: ``foreign_stream`` (peer: an event of another
                stream), ``replay_conflict``, ``cursor_gap`` (peer: the page
                does not continue what was received), ``limit_exceeded``
                (local: the new events do not fit, or a new stream over
                ``max_streams``).
        """
        events = list(events)
        if not events:
            return 0
        for event in events:
            if event.stream_id != stream_id or event.cursor is UNSET:
                raise ProtocolError(
                    ErrorCode.FOREIGN_STREAM,
                    "a replayed event belongs to another stream",
                    data={"stream_id": stream_id, "event_stream_id": event.stream_id}
                    if isinstance(event.stream_id, str)
                    else {"stream_id": stream_id},
                    origin="peer",
                )
        existing = self._stream(stream_id)
        # Work on a scratch copy of this stream; commit only when all fit.
        stream = existing.copy()
        fresh: list[tuple[_Stream, int, Notification]] = []
        room = self._max_buffered - len(self._buffer)
        for event in events:
            cursor = event.cursor
            assert cursor is not UNSET
            if self._duplicate(stream_id, stream, cursor, event, None):
                continue
            if len(fresh) >= room:
                raise limit_exceeded("max_buffered_notifications", self._max_buffered)
            if len(stream.retained) >= self._max_hashes:
                raise limit_exceeded("max_stream_hashes", self._max_hashes)
            stream.retained.append(content_key(event, None))
            stream.received = cursor
            fresh.append((existing, cursor, event))
        if fresh:
            # -- no failure below this line --
            existing.received = stream.received
            existing.retained = stream.retained
            self._streams[stream_id] = existing
            self._buffer.extend(fresh)
        return len(fresh)

    def drain(self, max: int | None = None) -> list[Notification]:  # noqa: A002
        """Hand out up to ``max`` (all when None) buffered notifications in arrival order.

        Delivery does not advance a checkpoint: call :meth:`ack` after
        processing.

        Raises:
            TypeError, ValueError: ``max`` is not a non-negative int.
        """
        buffer = self._buffer
        if max is None:
            count = len(buffer)
        elif isinstance(max, bool) or not isinstance(max, int):
            raise wrong_type("max", max, "a non-negative int")
        elif max < 0:
            raise ValueError(f"expected max to be a non-negative int, got: {max!r}")
        else:
            count = min(max, len(buffer))
        out: list[Notification] = []
        for _ in range(count):
            stream, cursor, notification = buffer.popleft()
            if cursor > stream.delivered:
                stream.delivered = cursor
            out.append(notification)
        return out

    def ack_notification(self, notification: Notification) -> None:
        """`ack` of a delivered sequenced notification's own position.

        Raises:
            TypeError: ``notification`` is not a `Notification`.
            ValueError: it is ephemeral (no ``stream_id``/``cursor``: it is
                never replayed, so there is nothing to acknowledge).
            ProtocolError: ``invalid_cursor`` as for `ack`.
        """
        if not isinstance(notification, Notification):
            raise wrong_type("notification", notification, "a Notification")
        stream_id, cursor = notification.stream_id, notification.cursor
        if stream_id is UNSET or cursor is UNSET:
            raise ValueError(
                "expected notification to be sequenced (stream_id and cursor), "
                f"got: an ephemeral {notification.method} (never replayed: "
                "nothing to acknowledge)"
            )
        self.ack(stream_id, cursor)

    def ack(self, stream_id: str, cursor: int) -> None:
        """Mark ``stream_id`` processed through ``cursor`` (at most the last delivered one).

        Acknowledging an already processed cursor is a no-op. The retained
        content of the acknowledged cursors is dropped.

        Raises:
            TypeError: ``stream_id`` is not a string or ``cursor`` not an int.
            ProtocolError: ``invalid_cursor`` for an unknown stream, a
                negative cursor or a cursor that was not delivered.
        """
        if isinstance(cursor, bool) or not isinstance(cursor, int):
            raise wrong_type("cursor", cursor, "an int")
        try:
            stream = self._streams.get(stream_id)
        except TypeError:  # unhashable: refused below
            stream = None
        if stream is None:
            if not isinstance(stream_id, str):
                raise wrong_type("stream_id", stream_id, "a string")
            raise ProtocolError(
                ErrorCode.INVALID_CURSOR,
                "unknown stream",
                data={"stream_id": stream_id},
            )
        if cursor < 0 or cursor > stream.delivered:
            raise ProtocolError(
                ErrorCode.INVALID_CURSOR,
                "cannot acknowledge a cursor that was not delivered",
                data={
                    "stream_id": stream_id,
                    "cursor": cursor,
                    "delivered": stream.delivered,
                },
            )
        if cursor <= stream.processed:
            return
        if self._records is not None:
            self._records.advance(stream_id, cursor)
        retained = stream.retained
        for _ in range(cursor - stream.processed):
            retained.popleft()
        stream.processed = cursor

    def forget(self, stream_id: str) -> None:
        """Release a finished stream: drop its position and retained content.

        It then no longer counts against ``max_streams`` nor appears in
        :meth:`checkpoints`; a later notification of the same ``stream_id``
        starts again from cursor 1. Forgetting an unknown stream is a no-op.

        Raises:
            TypeError: ``stream_id`` is not a string.
            ProtocolError: ``unacknowledged_events`` while any of its events is
                buffered, or delivered but not acknowledged.
        """
        if not isinstance(stream_id, str):
            raise wrong_type("stream_id", stream_id, "a string")
        stream = self._streams.get(stream_id)
        if stream is None:
            return
        if stream.processed < stream.received:
            raise ProtocolError(
                ErrorCode.UNACKNOWLEDGED_EVENTS,
                "the stream has received events that were not acknowledged",
                data={
                    "stream_id": stream_id,
                    "processed": stream.processed,
                    "received": stream.received,
                },
            )
        if self._records is not None:
            self._records.forget(stream_id)
        del self._streams[stream_id]

    def checkpoints(self) -> dict[str, int]:
        """The processed position of every tracked stream, to persist."""
        return {stream_id: s.processed for stream_id, s in self._streams.items()}

    def reconnect(self) -> None:
        """Start a new connection generation (a no-op, by design).

        Buffered notifications were received and checked on the old
        connection and are still valid data; delivered but unacknowledged
        ones are the caller's to acknowledge. Positions and retained content
        are kept, so a resume from the processed checkpoint recognises the
        events between processed and received as duplicates by content.
        Only a process restart (a new object from :meth:`checkpoints`)
        forgets them.
        """

    def copy(self) -> ClientStreams:
        """An independent copy (every method is already all-or-nothing)."""
        other = ClientStreams.__new__(ClientStreams)
        other._max_buffered = self._max_buffered
        other._max_streams = self._max_streams
        other._max_hashes = self._max_hashes
        other._records = self._records
        copies = {id(s): s.copy() for s in self._streams.values()}
        other._streams = {k: copies[id(s)] for k, s in self._streams.items()}
        other._buffer = deque((copies[id(s)], c, n) for s, c, n in self._buffer)
        return other
