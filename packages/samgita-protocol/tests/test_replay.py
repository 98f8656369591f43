"""Replay: the bounded in-memory host log of one stream (docs/protocol.md 11)."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import cast

import msgspec
import pytest

from samgita_protocol import (
    ErrorCode,
    ItemDeltaParams,
    Notification,
    ProtocolError,
    Replay,
    StreamResumeResult,
    encode,
)
from samgita_protocol._params import PAGE_SIZE


def delta(i: int, stream: str | None = None, text: str | None = None) -> Notification:
    params = ItemDeltaParams(
        thread_id="t", turn_id="u", item_id="i", delta=f"d{i}" if text is None else text
    )
    if stream is None:
        return Notification(method="item/delta", params=params)
    return Notification(method="item/delta", params=params, stream_id=stream, cursor=i)


def fill(replay: Replay, lo: int, hi: int) -> Replay:
    for i in range(lo, hi + 1):
        replay.append(delta(i))
    return replay


def assert_page(r: Replay, start: int, upto: int, more: bool) -> None:
    """since(start) is exactly the events start+1..upto that fill() appended."""
    events = r.since(start)
    assert [e.cursor for e in events] == list(range(start + 1, upto + 1))
    assert [e.params.delta for e in events] == [
        f"d{i}" for i in range(start + 1, upto + 1)
    ]
    page = r.page(start)
    assert isinstance(page, StreamResumeResult)
    assert (page.stream_id, page.cursor, page.has_more) == (r.stream_id, upto, more)
    assert page.events == events


class TestConstruction:
    def test_defaults(self) -> None:
        r = Replay("s1")
        assert (r.stream_id, r.first_cursor, r.last_cursor, len(r)) == ("s1", 1, 0, 0)
        assert r.retained_bytes == 0
        assert (r.max_events, r.max_bytes) == (1024, 8 * 1024 * 1024)
        assert r.since(0) == []

    @pytest.mark.parametrize("option", ["max_events", "max_bytes"])
    @pytest.mark.parametrize(
        ("value", "exc"),
        [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)],
    )
    def test_bounds_are_validated(self, option: str, value: object, exc: type) -> None:
        with pytest.raises(exc, match=option):
            Replay("s", **{option: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("value", "exc"), [("", ValueError), ("x" * 257, ValueError), (1, TypeError)]
    )
    def test_stream_id_is_an_id(self, value: object, exc: type) -> None:
        with pytest.raises(exc, match="stream_id"):
            Replay(value)  # type: ignore[arg-type]

    def test_keyword_only_bounds(self) -> None:
        with pytest.raises(TypeError):
            Replay("s", 10)  # type: ignore[call-arg]


class TestAppend:
    def test_assigns_contiguous_cursors_to_unsequenced_input(self) -> None:
        r = Replay("s")
        out = [r.append(delta(i)).message for i in (1, 2, 3)]
        assert [(n.stream_id, n.cursor) for n in out] == [("s", 1), ("s", 2), ("s", 3)]
        assert r.last_cursor == 3 and len(r) == 3
        assert out[0].params == delta(1).params

    def test_sequenced_input_must_continue_the_stream(self) -> None:
        r = fill(Replay("s"), 1, 3)
        n = delta(4, "s")
        assert r.append(n).message is n
        before = (r.first_cursor, r.last_cursor, r.retained_bytes)
        with pytest.raises(ProtocolError) as e:
            r.append(delta(9, "s"))
        assert e.value.code is ErrorCode.CURSOR_GAP
        assert e.value.data == {"expected": 5, "cursor": 9}
        with pytest.raises(ProtocolError) as e:
            r.append(delta(4, "s"))
        assert e.value.code is ErrorCode.CURSOR_GAP
        with pytest.raises(ProtocolError) as e:
            r.append(delta(5, "other"))
        assert e.value.code is ErrorCode.FOREIGN_STREAM
        assert (r.first_cursor, r.last_cursor, r.retained_bytes) == before

    def test_unpaired_position(self) -> None:
        r = Replay("s")
        half = msgspec.structs.replace(delta(1), stream_id="s")
        with pytest.raises(ProtocolError) as e:
            r.append(half)
        assert e.value.code is ErrorCode.UNPAIRED_STREAM_POSITION
        assert r.last_cursor == 0

    def test_only_notifications(self) -> None:
        with pytest.raises(TypeError, match="expected notification to be"):
            Replay("s").append({"method": "item/delta"})  # type: ignore[arg-type]

    def test_event_larger_than_max_bytes(self) -> None:
        size = len(encode(delta(1, "s")))
        r = Replay("s", max_bytes=size)
        r.append(delta(1))
        with pytest.raises(ProtocolError) as e:
            r.append(delta(2, text="longer than the first"))
        assert e.value.code is ErrorCode.LIMIT_EXCEEDED
        assert e.value.data == {"limit": "max_bytes", "max": size}
        assert (r.first_cursor, r.last_cursor, r.retained_bytes) == (1, 1, size)

    def test_retained_bytes_are_encoded_sizes(self) -> None:
        r = Replay("s")
        out = [r.append(delta(i)) for i in range(1, 6)]
        assert r.retained_bytes == sum(len(encode(o.message)) for o in out)
        assert all(o.data == encode(o.message) for o in out)


class TestSince:
    def test_pages_at_exactly_127_128_129_256_257_events(self) -> None:
        for n in (127, 128):
            r = fill(Replay("s"), 1, n)
            assert_page(r, 0, n, False)
        r = fill(Replay("s"), 1, 129)
        assert_page(r, 0, 128, True)
        assert_page(r, 128, 129, False)
        r = fill(Replay("s"), 1, 256)
        assert_page(r, 0, 128, True)
        assert_page(r, 128, 256, False)
        r = fill(r, 257, 257)
        assert_page(r, 0, 128, True)
        assert_page(r, 128, 256, True)
        assert_page(r, 256, 257, False)
        assert_page(r, 257, 257, False)

    def test_cursor_errors(self) -> None:
        r = fill(Replay("s"), 1, 129)
        assert r.since(129) == []
        with pytest.raises(ProtocolError) as e:
            r.since(130)
        assert e.value.code is ErrorCode.INVALID_CURSOR
        assert e.value.data == {"cursor": 130, "last": 129}
        with pytest.raises(ProtocolError) as e:
            r.since(-1)
        assert e.value.code is ErrorCode.INVALID_CURSOR
        with pytest.raises(TypeError):
            r.since("1")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            r.since(True)

    def test_empty_log(self) -> None:
        r = Replay("s")
        page = r.page(0)
        assert (page.cursor, page.events, page.has_more) == (0, [], False)
        with pytest.raises(ProtocolError) as e:
            r.since(1)
        assert e.value.code is ErrorCode.INVALID_CURSOR

    def test_pages_at_page_multiples(self) -> None:
        r = fill(Replay("s"), 1, 300)
        assert_page(r, 127, 255, True)
        assert_page(r, 128, 256, True)
        assert_page(r, 255, 300, False)
        assert_page(r, 256, 300, False)
        r = fill(Replay("s"), 1, 256)
        assert_page(r, 127, 255, True)
        assert_page(r, 255, 256, False)
        r = fill(r, 257, 257)
        assert_page(r, 129, 257, False)

    def test_pages_ending_at_the_newest(self) -> None:
        r = fill(Replay("s"), 1, 200)
        assert_page(r, 100, 200, False)
        assert_page(r, 72, 200, False)
        assert_page(r, 60, 188, True)

    def test_continuing_from_the_returned_cursor_reads_everything_once(self) -> None:
        r = fill(Replay("s"), 1, 1000)
        seen: list[int] = []
        cursor = 0
        while True:
            page = r.page(cursor)
            seen += [e.cursor for e in page.events]  # type: ignore[misc]
            cursor = page.cursor
            if not page.has_more:
                break
        assert seen == list(range(1, 1001))


class TestEviction:
    def test_pages_across_a_bulk_drop(self) -> None:
        # Eviction and the dropping of cleared slots at every offset.
        for max_events in (1, 2, 127, 128, 129, 300):
            r = Replay("s", max_events=max_events)
            for i in range(1, 700):
                r.append(delta(i))
                assert_page(
                    r,
                    r.first_cursor - 1,
                    min(r.first_cursor - 1 + PAGE_SIZE, i),
                    r.first_cursor - 1 + PAGE_SIZE < i,
                )

    def test_count_eviction_yields_replay_gap(self) -> None:
        r = fill(Replay("s", max_events=10), 1, 25)
        assert (r.first_cursor, r.last_cursor, len(r)) == (16, 25, 10)
        with pytest.raises(ProtocolError) as e:
            r.since(14)
        assert e.value.code is ErrorCode.REPLAY_GAP
        assert e.value.data == {"cursor": 14, "first_retained": 16}
        assert_page(r, 15, 25, False)

    def test_byte_eviction(self) -> None:
        r = fill(Replay("s", max_bytes=1000), 1, 50)
        assert r.first_cursor > 1
        assert r.retained_bytes <= 1000
        assert r.retained_bytes == sum(
            len(encode(n)) for n in r.since(r.first_cursor - 1)
        )

    def test_eviction_at_page_multiples(self) -> None:
        r = fill(Replay("s", max_events=10), 1, 133)
        assert r.first_cursor == 124
        assert_page(r, 123, 133, False)
        with pytest.raises(ProtocolError):
            r.since(122)
        r = fill(Replay("s", max_events=128), 1, 256)
        assert r.first_cursor == 129
        assert_page(r, 128, 256, False)
        r = fill(r, 257, 257)
        assert r.first_cursor == 130
        assert_page(r, 129, 257, False)

    def test_exact_byte_accounting(self) -> None:
        sequenced = [n for n in (fill_one(i) for i in range(1, 301))]
        sizes = [len(encode(n)) for n in sequenced]
        max_bytes = sum(sizes[100:])
        r = fill(Replay("s", max_bytes=max_bytes), 1, 300)
        assert r.first_cursor == 101
        assert r.retained_bytes == max_bytes
        r1 = fill(Replay("s", max_bytes=max_bytes - 1), 1, 300)
        assert r1.first_cursor == 102
        # One large event evicts most of the retained ones at once.
        big = r.append(delta(301, text="x" * (max_bytes * 9 // 10))).message
        retained = sizes[100:] + [len(encode(big))]
        excess = sum(retained) - max_bytes
        total, evicted = 0, 0
        while total < excess:
            total += retained[evicted]
            evicted += 1
        assert r.first_cursor == 101 + evicted
        assert r.first_cursor > 257
        assert r.since(r.first_cursor - 1)[-1] == big
        assert r.retained_bytes == sum(retained[evicted:])

    def test_evicted_events_are_released(self) -> None:
        r = Replay("s", max_events=5)
        first = r.append(delta(1)).message
        held = sys.getrefcount(first)
        fill(r, 2, 6)
        assert sys.getrefcount(first) == held - 1
        # Cleared slots are dropped in bulk: the log holds at most about
        # twice the retained events (or a page more) in pointers.
        for r in (
            fill(Replay("s", max_events=100), 1, 5000),
            fill(Replay("s", max_events=5), 1, 1290),
            fill(Replay("s", max_bytes=3000), 1, 2000),
            fill(Replay("s", max_events=1000), 1, 10_000),
        ):
            assert len(r._sizes) == len(r._events)
            assert sum(r._sizes) == r.retained_bytes
            assert len(r._events) <= max(2 * len(r), len(r) + PAGE_SIZE) + 1
            assert r._events[r.first_cursor - r._base :] == retained(r)
            assert all(e is None for e in r._events[: r.first_cursor - r._base])

    def test_matches_a_list_model_under_random_steps(self) -> None:
        rng = random.Random(1280)
        for _run in range(8):
            max_events = rng.choice([1, 3, 100, 127, 128, 129, 300])
            max_bytes = rng.choice([400, 2_000, 25_000, 1_000_000])
            r = Replay("s", max_events=max_events, max_bytes=max_bytes)
            m = ListModel(max_events, max_bytes)
            for _step in range(400):
                action = rng.choice(["append", "append", "sequenced", "since", "since"])
                if action == "append":
                    n = delta(0, text="x" * rng.randint(1, 300))
                    expected = msgspec.structs.replace(
                        n, stream_id="s", cursor=m.last + 1
                    )
                    check_append(r, m, n, expected)
                elif action == "sequenced":
                    n = delta(m.last + rng.choice([1, 1, 1, 2]), "s")
                    if n.cursor == m.last + 1:
                        check_append(r, m, n, n)
                    else:
                        with pytest.raises(ProtocolError) as e:
                            r.append(n)
                        assert e.value.code is ErrorCode.CURSOR_GAP
                else:
                    cursor = m.random_cursor(rng)
                    try:
                        actual: object = r.page(cursor)
                    except ProtocolError as e:
                        actual = e.code
                    assert actual == m.page(cursor), (max_events, max_bytes, cursor)
                assert (r.first_cursor, r.last_cursor) == (m.first, m.last)
                assert r.retained_bytes == sum(s for _, s in m.events)


def retained(r: Replay) -> list[Notification]:
    """Every retained event, page by page."""
    page = r.page(r.first_cursor - 1)
    events = list(page.events)
    while page.has_more:
        page = r.page(page.cursor)
        events += page.events
    return events


def fill_one(i: int) -> Notification:
    return msgspec.structs.replace(delta(i), stream_id="s", cursor=i)


@dataclass
class ListModel:
    max_events: int
    max_bytes: int
    events: list[tuple[Notification, int]] = field(default_factory=list)
    last: int = 0

    @property
    def first(self) -> int:
        return self.last - len(self.events) + 1

    def append(self, n: Notification) -> bool:
        size = len(encode(n))
        if size > self.max_bytes:
            return False
        self.events.append((n, size))
        self.last += 1
        while (
            len(self.events) > self.max_events
            or sum(s for _, s in self.events) > self.max_bytes
        ):
            self.events.pop(0)
        return True

    def page(self, cursor: int) -> object:
        if cursor > self.last:
            return ErrorCode.INVALID_CURSOR
        if cursor < self.last and cursor + 1 < self.first:
            return ErrorCode.REPLAY_GAP
        events = [n for n, _ in self.events if n.cursor > cursor][:PAGE_SIZE]  # type: ignore[operator]
        upto = cast(int, events[-1].cursor) if events else cursor
        return StreamResumeResult(
            stream_id="s", cursor=upto, events=events, has_more=upto < self.last
        )

    def random_cursor(self, rng: random.Random) -> int:
        boundary = 128 * rng.randint(0, self.last // 128) + rng.choice([-1, 0, 1])
        return max(
            0,
            rng.choice(
                [
                    rng.randint(0, self.last + 1),
                    self.first - 1,
                    self.first - 2,
                    self.last,
                    self.last - 128,
                    boundary,
                ]
            ),
        )


def check_append(
    r: Replay, m: ListModel, n: Notification, expected: Notification
) -> None:
    if m.append(expected):
        assert r.append(n).message == expected
    else:
        before = (r.first_cursor, r.last_cursor, r.retained_bytes)
        with pytest.raises(ProtocolError) as e:
            r.append(n)
        assert e.value.code is ErrorCode.LIMIT_EXCEEDED
        assert (r.first_cursor, r.last_cursor, r.retained_bytes) == before


class TestPageBytes:
    """Pages fit in one message: stored sizes plus PAGE_OVERHEAD."""

    def test_page_boundaries_by_bytes(self) -> None:
        from samgita_protocol._replay import PAGE_OVERHEAD

        r = Replay("s")
        for i in range(9):  # one-digit cursors: equal sizes
            r.append(delta(i, text="x" * 1000))
        size = r.retained_bytes // 9
        assert all(len(encode(e)) == size for e in r.since(0))
        for k in (1, 3, 8):
            exact = PAGE_OVERHEAD + k * (size + 1)
            assert len(r.since(0, max_bytes=exact)) == k
            assert len(r.since(0, max_bytes=exact - 1)) == k - 1
            page = r.page(2, max_bytes=exact)
            assert [e.cursor for e in page.events] == list(range(3, 3 + min(k, 7)))
            assert page.has_more == (2 + k < 9)
        assert r.since(0, max_bytes=PAGE_OVERHEAD) == []
        assert len(r.since(0)) == 9  # the default budget: max_message_bytes
        with pytest.raises(TypeError):
            r.since(0, max_bytes="1")  # type: ignore[arg-type]

    def test_an_event_no_one_event_page_could_carry_is_refused(self) -> None:
        from samgita_protocol._replay import PAGE_OVERHEAD

        r = Replay("s", max_message_bytes=PAGE_OVERHEAD + 2000)
        r.append(delta(1, text="x" * 1000))
        with pytest.raises(ProtocolError) as raised:
            r.append(delta(2, text="x" * 2000))
        assert raised.value.code == ErrorCode.LIMIT_EXCEEDED
        assert raised.value.data == {
            "limit": "max_message_bytes",
            "max": PAGE_OVERHEAD + 2000,
        }
        assert (r.last_cursor, len(r)) == (1, 1)
        with pytest.raises(ValueError, match="max_message_bytes"):
            Replay("s", max_message_bytes=0)


def test_append_returns_the_retained_event_with_its_bytes() -> None:
    from samgita_protocol import ItemDeltaParams, Notification, Outgoing, Replay

    replay = Replay("s1", max_events=2)
    note = Notification(
        method="item/delta",
        params=ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d"),
    )
    out = replay.append(note)
    assert isinstance(out, Outgoing)
    event, wire = out.message, out.data
    assert isinstance(event, Notification)
    assert (event.stream_id, event.cursor) == ("s1", 1)
    assert wire == encode(event)
    assert replay.since(0) == [event]
    # the bounds still evict the oldest
    replay.append(note)
    replay.append(note)
    assert [e.cursor for e in replay.since(1)] == [2, 3]
    with pytest.raises(ProtocolError) as info:
        replay.append(msgspec.structs.replace(event, cursor=9))
    assert info.value.code == ErrorCode.CURSOR_GAP
    assert replay.last_cursor == 3
