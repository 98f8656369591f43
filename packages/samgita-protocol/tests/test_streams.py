"""ClientStreams and ServerPositions: stream consumption state (docs/protocol.md 11)."""

from __future__ import annotations

import json

import msgspec
import pytest

from samgita_protocol import (
    ErrorCode,
    ItemDeltaParams,
    Notification,
    ProtocolError,
    Replay,
    decode,
    encode,
)
from samgita_protocol._content import INLINE_BYTES
from samgita_protocol._positions import ServerPositions
from samgita_protocol._streams import ClientStreams, StreamPosition


def delta(i: int, stream: str | None = "a", text: str | None = None) -> Notification:
    params = ItemDeltaParams(
        thread_id="t", turn_id="u", item_id="i", delta=f"d{i}" if text is None else text
    )
    if stream is None:
        return Notification(method="item/delta", params=params)
    return Notification(method="item/delta", params=params, stream_id=stream, cursor=i)


def snapshot(s: ClientStreams) -> object:
    streams = {k: s.position(k) for k in s.checkpoints()}
    return (streams, s.buffered, s.checkpoints(), [n for n in s.copy().drain()])


def raises(code: ErrorCode, fn: object, *args: object) -> ProtocolError:
    with pytest.raises(ProtocolError) as e:
        fn(*args)  # type: ignore[operator]
    assert e.value.code is code, e.value
    return e.value


class TestConstruction:
    @pytest.mark.parametrize(
        "option", ["max_buffered_notifications", "max_streams", "max_stream_hashes"]
    )
    @pytest.mark.parametrize(
        ("value", "exc"),
        [(0, ValueError), (-3, ValueError), ("1", TypeError), (False, TypeError)],
    )
    def test_bounds_are_validated(self, option: str, value: object, exc: type) -> None:
        with pytest.raises(exc, match=option):
            ClientStreams(**{option: value})  # type: ignore[arg-type]

    def test_restored_checkpoints(self) -> None:
        s = ClientStreams(checkpoints={"a": 5, "b": 0})
        assert s.checkpoints() == {"a": 5, "b": 0}
        assert s.position("a") == StreamPosition(5, 5, 5)
        assert s.ingest(delta(5)) is False
        assert s.ingest(delta(6)) is True
        raises(ErrorCode.CURSOR_GAP, s.ingest, delta(8))

    @pytest.mark.parametrize(
        "checkpoints",
        [
            {"": 1},
            {"x" * 257: 1},
            {"\ud800": 1},
            {1: 1},
            {"a": -1},
            {"a": 1.0},
            {"a": True},
            {"a": None},
        ],
    )
    def test_bad_checkpoints(self, checkpoints: object) -> None:
        with pytest.raises(ValueError, match="checkpoints"):
            ClientStreams(checkpoints=checkpoints)  # type: ignore[arg-type]

    def test_checkpoints_must_be_a_mapping(self) -> None:
        with pytest.raises(TypeError, match="checkpoints"):
            ClientStreams(checkpoints=[("a", 1)])  # type: ignore[arg-type]

    def test_checkpoints_bounded_by_max_streams(self) -> None:
        ClientStreams(max_streams=2, checkpoints={"a": 1, "b": 2})
        with pytest.raises(ValueError, match="max_streams"):
            ClientStreams(max_streams=2, checkpoints={"a": 1, "b": 2, "c": 3})


class TestIngest:
    def test_positions_processed_delivered_received(self) -> None:
        s = ClientStreams()
        assert s.position("a") is None
        assert s.ingest(delta(1)) is True
        assert s.ingest(delta(2)) is True
        assert (s.buffered, s.position("a")) == (2, StreamPosition(0, 0, 2))
        assert [n.cursor for n in s.drain(1)] == [1]
        assert s.position("a") == StreamPosition(0, 1, 2)
        s.ack("a", 1)
        assert s.position("a") == StreamPosition(1, 1, 2)
        assert s.checkpoints() == {"a": 1}

    def test_receipt_and_delivery_never_advance_a_checkpoint(self) -> None:
        s = ClientStreams()
        s.ingest(delta(1))
        assert s.checkpoints() == {"a": 0}
        s.drain()
        assert s.checkpoints() == {"a": 0}

    def test_duplicates_are_ignored(self) -> None:
        s = ClientStreams()
        n = delta(1)
        s.ingest(n)
        before = snapshot(s)
        assert s.ingest(n) is False
        assert s.ingest(delta(1)) is False  # equal content, another object
        assert snapshot(s) == before
        s.drain()
        s.ack("a", 1)
        # At or below processed: ignored, whatever the content.
        assert s.ingest(delta(1, text="changed")) is False

    def test_duplicate_by_content_independent_of_key_order_and_whitespace(self) -> None:
        s = ClientStreams()
        wire = encode(delta(1))
        s.ingest(decode(wire), wire)  # type: ignore[arg-type]
        obj = json.loads(wire)
        reordered = json.dumps(dict(reversed(list(obj.items()))), indent=2).encode()
        again = decode(reordered)
        assert isinstance(again, Notification)
        assert s.ingest(again, reordered) is False

    def test_conflicting_replay(self) -> None:
        s = ClientStreams()
        s.ingest(delta(1))
        s.ingest(delta(2))
        before = snapshot(s)
        e = raises(ErrorCode.REPLAY_CONFLICT, s.ingest, delta(1, text="other"))
        assert e.origin == "peer"
        assert e.data == {"stream_id": "a", "cursor": 1}
        # Delivered but unprocessed content is still retained.
        s2 = s.copy()
        s2.drain()
        raises(ErrorCode.REPLAY_CONFLICT, s2.ingest, delta(2, text="other"))
        assert snapshot(s) == before

    @pytest.mark.parametrize("size", [INLINE_BYTES + 1, 100_000])
    def test_large_content_is_retained_as_digest(self, size: int) -> None:
        s = ClientStreams()
        big = delta(1, text="x" * size)
        wire = encode(big)
        s.ingest(decode(wire), wire)  # type: ignore[arg-type]
        assert s._streams["a"].retained[0][0] == "digest"
        assert s.ingest(decode(wire), wire) is False  # type: ignore[arg-type]
        other = delta(1, text="y" * size)
        raises(ErrorCode.REPLAY_CONFLICT, s.ingest, other, encode(other))
        # Wire text counts in UTF-8 bytes.
        text = wire.decode()
        s = ClientStreams()
        s.ingest(decode(text), text)  # type: ignore[arg-type]
        assert s._streams["a"].retained[0][0] == "digest"
        small = delta(1, text="é" * (INLINE_BYTES // 2))
        small_text = encode(small).decode()
        assert len(small_text) <= INLINE_BYTES < len(small_text.encode())
        s = ClientStreams()
        s.ingest(small, small_text)
        assert s._streams["a"].retained[0][0] == "digest"
        # Without wire bytes, a digest of the canonical form.
        s = ClientStreams()
        s.ingest(big)
        assert s._streams["a"].retained[0][0] == "digest"
        s = ClientStreams()
        small_wire = encode(delta(1))
        s.ingest(delta(1), small_wire)
        assert s._streams["a"].retained[0] == ("wire", small_wire)

    def test_skipped_and_reordered_cursors_are_gaps(self) -> None:
        s = ClientStreams()
        e = raises(ErrorCode.CURSOR_GAP, s.ingest, delta(2))
        assert e.origin == "peer"
        assert e.data == {"stream_id": "a", "expected": 1, "cursor": 2}
        assert s.position("a") is None and s.checkpoints() == {}
        s.ingest(delta(1))
        before = snapshot(s)
        raises(ErrorCode.CURSOR_GAP, s.ingest, delta(3))
        assert snapshot(s) == before
        s.ingest(delta(2))
        s.ingest(delta(3))

    def test_buffer_overflow_before_any_position_advances(self) -> None:
        s = ClientStreams(max_buffered_notifications=3)
        for i in (1, 2, 3):
            s.ingest(delta(i))
        before = snapshot(s)
        e = raises(ErrorCode.LIMIT_EXCEEDED, s.ingest, delta(4))
        assert e.data == {"limit": "max_buffered_notifications", "max": 3}
        assert e.origin == "local"
        raises(ErrorCode.LIMIT_EXCEEDED, s.ingest, delta(1, "b"))
        assert snapshot(s) == before
        # A duplicate of a buffered cursor is still recognised when full.
        assert s.ingest(delta(3)) is False
        s.drain(1)
        assert s.ingest(delta(4)) is True

    def test_stream_count_is_bounded(self) -> None:
        s = ClientStreams(max_streams=2)
        s.ingest(delta(1, "a"))
        s.ingest(delta(1, "b"))
        e = raises(ErrorCode.LIMIT_EXCEEDED, s.ingest, delta(1, "c"))
        assert e.data == {"limit": "max_streams", "max": 2}
        assert s.position("c") is None
        # A refused gap on a new stream does not take a slot either.
        s2 = ClientStreams(max_streams=1)
        raises(ErrorCode.CURSOR_GAP, s2.ingest, delta(2, "a"))
        s2.ingest(delta(1, "b"))

    def test_retained_content_is_bounded_per_stream(self) -> None:
        s = ClientStreams(max_stream_hashes=2)
        s.ingest(delta(1))
        s.ingest(delta(2))
        s.drain()
        before = snapshot(s)
        e = raises(ErrorCode.LIMIT_EXCEEDED, s.ingest, delta(3))
        assert e.data == {"limit": "max_stream_hashes", "max": 2}
        assert snapshot(s) == before
        s.ack("a", 1)
        assert s.ingest(delta(3)) is True

    def test_unsequenced_input_is_a_caller_bug(self) -> None:
        with pytest.raises(ValueError):
            ClientStreams().ingest(delta(1, None))


class TestDrainAck:
    def test_drain_in_arrival_order_across_streams(self) -> None:
        s = ClientStreams()
        order = [delta(1, "a"), delta(1, "b"), delta(2, "a"), delta(2, "b")]
        for n in order:
            s.ingest(n)
        assert s.drain(0) == []
        assert s.drain(3) == order[:3]
        assert s.drain(10) == order[3:]
        assert s.drain() == []
        assert s.position("a") == StreamPosition(0, 2, 2)

    @pytest.mark.parametrize(
        ("value", "exc"), [(-1, ValueError), (1.0, TypeError), (True, TypeError)]
    )
    def test_drain_max_is_validated(self, value: object, exc: type) -> None:
        with pytest.raises(exc):
            ClientStreams().drain(value)  # type: ignore[arg-type]

    def test_ack_rules(self) -> None:
        s = ClientStreams()
        for i in (1, 2, 3):
            s.ingest(delta(i))
        s.drain(2)
        e = raises(ErrorCode.INVALID_CURSOR, s.ack, "a", 3)
        assert e.data == {"stream_id": "a", "cursor": 3, "delivered": 2}
        raises(ErrorCode.INVALID_CURSOR, s.ack, "zz", 1)
        raises(ErrorCode.INVALID_CURSOR, s.ack, "a", -1)
        with pytest.raises(TypeError):
            s.ack("a", "1")  # type: ignore[arg-type]
        assert s.position("a") == StreamPosition(0, 2, 3)
        s.ack("a", 2)
        assert len(s._streams["a"].retained) == 1
        s.ack("a", 1)  # already processed: no-op
        s.ack("a", 0)
        assert s.position("a") == StreamPosition(2, 2, 3)
        # Acked cursors are no longer compared: a change is ignored.
        assert s.ingest(delta(2, text="changed")) is False
        # The unprocessed one still is.
        raises(ErrorCode.REPLAY_CONFLICT, s.ingest, delta(3, text="changed"))


class TestForget:
    def test_forget_refused_while_buffered_or_unacknowledged(self) -> None:
        s = ClientStreams(max_streams=1)
        s.ingest(delta(1))
        e = raises(ErrorCode.UNACKNOWLEDGED_EVENTS, s.forget, "a")
        assert e.data == {"stream_id": "a", "processed": 0, "received": 1}
        s.drain()
        raises(ErrorCode.UNACKNOWLEDGED_EVENTS, s.forget, "a")
        s.ack("a", 1)
        s.forget("a")
        assert s.checkpoints() == {} and s.position("a") is None
        s.forget("a")  # unknown: no-op
        # The slot is free, and the same id starts again from cursor 1.
        assert s.ingest(delta(1, "b")) is True
        s.drain()
        s.ack("b", 1)
        s.forget("b")
        assert s.ingest(delta(1, "a", text="new life")) is True


class TestConnectionLifecycle:
    def test_reconnect_keeps_buffer_and_positions(self) -> None:
        s = ClientStreams()
        for i in (1, 2, 3):
            s.ingest(delta(i))
        s.drain(1)
        before = snapshot(s)
        s.reconnect()
        assert snapshot(s) == before
        # A resume from the processed checkpoint (0) repeats 1..3: duplicates.
        assert s.ingest_page("a", [delta(1), delta(2), delta(3), delta(4)]) == 1

    def test_restart_keeps_only_checkpoints(self) -> None:
        s = ClientStreams()
        for i in (1, 2, 3):
            s.ingest(delta(i))
        s.drain(2)
        s.ack("a", 1)
        restarted = ClientStreams(checkpoints=s.checkpoints())
        assert restarted.position("a") == StreamPosition(1, 1, 1)
        assert restarted.buffered == 0
        assert restarted.ingest_page("a", [delta(2), delta(3)]) == 2

    def test_copy_is_independent(self) -> None:
        s = ClientStreams(max_buffered_notifications=5)
        s.ingest(delta(1))
        c = s.copy()
        c.ingest(delta(2))
        c.drain()
        c.ack("a", 2)
        assert s.position("a") == StreamPosition(0, 0, 1)
        assert s.buffered == 1
        assert c.max_buffered_notifications == 5


class TestIngestPage:
    def test_page_is_ingested_atomically(self) -> None:
        s = ClientStreams(max_buffered_notifications=3)
        s.ingest(delta(1))
        page = [delta(i) for i in range(1, 5)]  # 1 duplicate, 3 new, 2 fit
        before = snapshot(s)
        e = raises(ErrorCode.LIMIT_EXCEEDED, s.ingest_page, "a", page)
        assert e.data == {"limit": "max_buffered_notifications", "max": 3}
        assert snapshot(s) == before
        # Drain, acknowledge and call again with the same page.
        s.drain()
        s.ack("a", 1)
        assert s.ingest_page("a", page) == 3
        assert [n.cursor for n in s.drain()] == [2, 3, 4]

    def test_page_with_duplicates_and_new_events(self) -> None:
        s = ClientStreams()
        for i in (1, 2):
            s.ingest(delta(i))
        assert s.ingest_page("a", [delta(i) for i in range(1, 6)]) == 3
        assert s.position("a") == StreamPosition(0, 0, 5)
        assert [n.cursor for n in s.drain()] == [1, 2, 3, 4, 5]
        assert s.position("a") == StreamPosition(0, 5, 5)
        s.ack("a", 5)
        assert s.ingest_page("a", [delta(i) for i in range(1, 6)]) == 0
        assert s.ingest_page("a", []) == 0

    def test_page_errors_change_nothing(self) -> None:
        s = ClientStreams(max_stream_hashes=4)
        s.ingest(delta(1))
        before = snapshot(s)
        e = raises(
            ErrorCode.FOREIGN_STREAM, s.ingest_page, "a", [delta(2), delta(3, "b")]
        )
        assert e.origin == "peer"
        raises(ErrorCode.FOREIGN_STREAM, s.ingest_page, "a", [delta(2, None)])
        raises(ErrorCode.CURSOR_GAP, s.ingest_page, "a", [delta(3), delta(4)])
        raises(ErrorCode.CURSOR_GAP, s.ingest_page, "a", [delta(2), delta(4)])
        raises(ErrorCode.CURSOR_GAP, s.ingest_page, "a", [delta(3), delta(2)])
        raises(
            ErrorCode.REPLAY_CONFLICT,
            s.ingest_page,
            "a",
            [delta(1, text="x"), delta(2)],
        )
        raises(
            ErrorCode.REPLAY_CONFLICT,
            s.ingest_page,
            "a",
            [delta(2), delta(2, text="x")],
        )
        e = raises(
            ErrorCode.LIMIT_EXCEEDED,
            s.ingest_page,
            "a",
            [delta(i) for i in range(2, 7)],
        )
        assert e.data == {"limit": "max_stream_hashes", "max": 4}
        assert snapshot(s) == before
        # A page may repeat its own events identically.
        assert s.ingest_page("a", [delta(2), delta(2), delta(3)]) == 2

    def test_page_of_a_new_stream_over_max_streams(self) -> None:
        s = ClientStreams(max_streams=1)
        s.ingest(delta(1, "a"))
        e = raises(ErrorCode.LIMIT_EXCEEDED, s.ingest_page, "b", [delta(1, "b")])
        assert e.data == {"limit": "max_streams", "max": 1}
        assert s.ingest_page("b", []) == 0
        assert s.checkpoints() == {"a": 0}

    @pytest.mark.parametrize("n", [127, 128, 129, 256, 257])
    def test_resume_page_by_page_from_a_replay(self, n: int) -> None:
        r = Replay("a")
        for i in range(1, n + 1):
            r.append(delta(i, None))
        s = ClientStreams()
        cursor, pages, seen = 0, 0, []
        while True:
            page = r.page(cursor)
            pages += 1
            assert s.ingest_page("a", page.events) == len(page.events)
            for event in s.drain():
                seen.append(event.cursor)
                s.ack("a", event.cursor)  # type: ignore[arg-type]
            cursor = page.cursor
            if not page.has_more:
                break
        assert seen == list(range(1, n + 1))
        assert pages == -(-n // 128)
        assert s.checkpoints() == {"a": n}


class TestServerPositions:
    def test_check_then_mark(self) -> None:
        p = ServerPositions()
        assert p.check(delta(1, None)) is True  # ephemeral: nothing to check
        assert p.check(delta(1)) is True
        assert p.positions() == {}  # check changes nothing
        p.mark("a", 1)
        assert p.positions() == {"a": 1}
        assert p.check(delta(1)) is False
        assert p.check(delta(2)) is True
        e = raises(ErrorCode.CURSOR_GAP, p.check, delta(3))
        assert e.origin == "peer"
        assert e.data == {"stream_id": "a", "expected": 2, "cursor": 3}

    def test_failed_callback_leaves_the_position(self) -> None:
        p = ServerPositions()
        assert p.check(delta(1)) is True
        # The callback failed: no mark. The same cursor may come again.
        assert p.check(delta(1)) is True

    def test_mark_only_the_next_cursor(self) -> None:
        p = ServerPositions(positions={"a": 3})
        raises(ErrorCode.INVALID_CURSOR, p.mark, "a", 5)
        raises(ErrorCode.INVALID_CURSOR, p.mark, "a", 3)
        p.mark("a", 4)
        assert p.positions() == {"a": 4}

    def test_stream_count_is_bounded(self) -> None:
        p = ServerPositions(max_streams=1)
        p.mark("a", 1)
        e = raises(ErrorCode.LIMIT_EXCEEDED, p.check, delta(1, "b"))
        assert e.data == {"limit": "max_streams", "max": 1}
        raises(ErrorCode.LIMIT_EXCEEDED, p.mark, "b", 1)
        p.forget("a")
        p.forget("a")
        assert p.check(delta(1, "b")) is True
        p.mark("b", 1)
        assert p.positions() == {"b": 1}

    def test_forgotten_stream_starts_again(self) -> None:
        p = ServerPositions(positions={"a": 9})
        p.forget("a")
        assert p.check(delta(1)) is True
        raises(ErrorCode.CURSOR_GAP, p.check, delta(10))

    def test_positions_are_a_copy(self) -> None:
        p = ServerPositions(positions={"a": 1})
        p.positions()["a"] = 7
        assert p.positions() == {"a": 1}
        c = p.copy()
        c.mark("a", 2)
        assert p.positions() == {"a": 1}

    @pytest.mark.parametrize("positions", [{"": 1}, {"a": -1}, {"a": "1"}])
    def test_bad_positions(self, positions: object) -> None:
        with pytest.raises(ValueError, match="positions"):
            ServerPositions(positions=positions)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_streams"):
            ServerPositions(max_streams=1, positions={"a": 1, "b": 1})
        with pytest.raises(TypeError, match="positions"):
            ServerPositions(positions=5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_streams"):
            ServerPositions(max_streams=0)


def test_notification_structs_compare_by_value() -> None:
    # ClientStreams relies on re-encoding, not identity, for duplicates.
    assert delta(1) == delta(1)
    assert msgspec.structs.replace(delta(1), cursor=2) != delta(1)
