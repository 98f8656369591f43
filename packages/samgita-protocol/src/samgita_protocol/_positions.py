"""Processed positions of replayable notifications (private).

:class:`ServerPositions` is a server's processed position per stream
(``docs/protocol.md`` section 11), and :func:`validate_positions` checks
positions a caller restores after a restart (a client's checkpoints too).
Every method either completes or raises and leaves the object as it was.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import UNSET

from ._errors import ErrorCode, Origin, ProtocolError
from ._options import DEFAULT_MAX_STREAMS, MAX_ID_BYTES, is_id, positive_int, wrong_type
from ._schema import Notification

__all__ = ["ServerPositions", "limit_exceeded", "validate_positions"]


def limit_exceeded(name: str, maximum: int) -> ProtocolError:
    """``limit_exceeded`` for the bound ``name`` at ``maximum``."""
    return ProtocolError(
        ErrorCode.LIMIT_EXCEEDED,
        f"{name} ({maximum}) reached",
        data={"limit": name, "max": maximum},
    )


def validate_positions(
    name: str, positions: object, max_streams: int
) -> dict[str, int]:
    """Validate restored stream positions (client checkpoints, server positions).

    ``positions`` must map stream ids (UTF-8 strings of 1 to 256 bytes) to
    cursors ``>= 0``, at most ``max_streams`` of them. Returns a copy.

    Raises:
        TypeError: ``positions`` is not a mapping (the message names ``name``).
        ValueError: a bad id or cursor, or more than ``max_streams`` streams.
    """
    if not isinstance(positions, Mapping):
        raise wrong_type(name, positions, "a mapping from stream ids to cursors")
    result: dict[str, int] = {}
    for stream_id, cursor in positions.items():
        if (
            not is_id(stream_id)
            or isinstance(cursor, bool)
            or not isinstance(cursor, int)
            or cursor < 0
        ):
            raise ValueError(
                f"expected {name} to be a mapping from stream ids (UTF-8 strings "
                f"of 1 to {MAX_ID_BYTES} bytes) to cursors >= 0, "
                f"got entry: {stream_id!r}: {cursor!r}"
            )
        result[stream_id] = cursor
    if len(result) > max_streams:
        raise ValueError(
            f"expected {name} to hold at most max_streams ({max_streams}) "
            f"streams, got: {len(result)}"
        )
    return result


def _not_next(
    code: ErrorCode,
    message: str,
    stream_id: str,
    processed: int,
    cursor: int,
    origin: Origin,
) -> ProtocolError:
    """The error for a ``cursor`` that is not the next of ``stream_id``."""
    return ProtocolError(
        code,
        message,
        data={"stream_id": stream_id, "expected": processed + 1, "cursor": cursor},
        origin=origin,
    )


class ServerPositions:
    """The server's processed positions of sequenced notifications from the peer.

    The server answers each notification at once, so it retains nothing
    received-but-unprocessed: :meth:`check` before the handler callback,
    :meth:`mark` only after it succeeded (a failed callback leaves the
    position, so the same cursor can be delivered again).

    Args:
        max_streams: streams tracked (restored positions included).
        positions: from :meth:`positions`, to restore after a restart.

    Raises:
        TypeError, ValueError: a bad bound or bad ``positions`` (the
            message names the option).
    """

    __slots__ = ("_max_streams", "_positions")

    def __init__(
        self,
        *,
        max_streams: int = DEFAULT_MAX_STREAMS,
        positions: Mapping[str, int] | None = None,
    ) -> None:
        self._max_streams = positive_int("max_streams", max_streams)
        self._positions: dict[str, int] = (
            {}
            if positions is None
            else validate_positions("positions", positions, self._max_streams)
        )

    def __repr__(self) -> str:
        return f"ServerPositions({self._positions!r})"

    @property
    def max_streams(self) -> int:
        """The stream-count bound."""
        return self._max_streams

    def _processed(self, stream_id: str) -> int:
        """The processed cursor of ``stream_id`` (0 for a new stream).

        Raises:
            ProtocolError: ``limit_exceeded`` for a new stream over
                ``max_streams``.
        """
        processed = self._positions.get(stream_id)
        if processed is not None:
            return processed
        if len(self._positions) >= self._max_streams:
            raise limit_exceeded("max_streams", self._max_streams)
        return 0

    def check(self, notification: Notification) -> bool:
        """Whether to hand ``notification`` to the handler (changes nothing).

        True for an unsequenced notification and for the next cursor of its
        stream; False for an already processed cursor (ignore it).

        Raises:
            ProtocolError: ``cursor_gap`` (peer: a cursor was skipped or
                reordered), ``limit_exceeded`` (a new stream over
                ``max_streams``).
        """
        stream_id = notification.stream_id
        cursor = notification.cursor
        if stream_id is UNSET or cursor is UNSET:
            return True
        processed = self._processed(stream_id)
        if cursor <= processed:
            return False
        if cursor != processed + 1:
            raise _not_next(
                ErrorCode.CURSOR_GAP,
                "stream events were skipped or reordered",
                stream_id,
                processed,
                cursor,
                "peer",
            )
        return True

    def mark(self, stream_id: str, cursor: int) -> None:
        """Record ``cursor`` of ``stream_id`` as processed (after the callback succeeded).

        Raises:
            ProtocolError: ``invalid_cursor`` when ``cursor`` is not the next
                cursor of the stream (:meth:`check` did not accept it),
                ``limit_exceeded`` for a new stream over ``max_streams``.
        """
        processed = self._processed(stream_id)
        if cursor != processed + 1:
            raise _not_next(
                ErrorCode.INVALID_CURSOR,
                "only the next cursor of a stream can be marked processed",
                stream_id,
                processed,
                cursor,
                "local",
            )
        self._positions[stream_id] = cursor

    def positions(self) -> dict[str, int]:
        """The processed positions, to persist after each successful callback."""
        return dict(self._positions)

    def forget(self, stream_id: str) -> None:
        """Release a finished stream; a later notification starts again at cursor 1.

        The server holds no unprocessed events, so this always succeeds
        (forgetting an unknown stream is a no-op).

        Raises:
            TypeError: ``stream_id`` is not a string.
        """
        if not isinstance(stream_id, str):
            raise wrong_type("stream_id", stream_id, "a string")
        self._positions.pop(stream_id, None)

    def copy(self) -> ServerPositions:
        """An independent copy."""
        other = ServerPositions.__new__(ServerPositions)
        other._max_streams = self._max_streams
        other._positions = dict(self._positions)
        return other
