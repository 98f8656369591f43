"""The store conformance suite: every contract of the four interfaces of
``samgita_protocol.stores``, run against every backend of
``stores_backends.BACKENDS`` (the in-memory reference, SQLite and
PostgreSQL; a new backend is one entry there). What only a durable backend
can show (reopen, several processes, SIGKILL) is in
``test_stores_durable.py``; random operations compared with the reference
in ``test_stores_reference.py``."""

from __future__ import annotations

import itertools
import threading
import tracemalloc
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samgita_protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_CURSOR,
    ErrorCode,
    ProtocolError,
    Request,
    encode,
)
from samgita_protocol.stores import (
    PAGE_OVERHEAD,
    CheckpointStore,
    Claim,
    CommandJournal,
    Inbox,
    JournalEntry,
    ReplayLog,
    StoreConflict,
    UnknownEntry,
)
from stores_backends import BACKENDS, Stores, digest, mutation, open_stores

# Hypothesis runs many examples on one fixture's stores: each example
# takes fresh keys from here.
_FRESH = itertools.count()


@pytest.fixture(params=list(BACKENDS))
def stores(
    request: pytest.FixtureRequest, locate: Callable[[str], str]
) -> Iterator[Stores]:
    opened = open_stores(request.param, locate(request.param))
    yield opened
    opened.close()


def test_each_store_implements_its_interface(stores: Stores) -> None:
    assert isinstance(stores.journal, CommandJournal)
    assert isinstance(stores.inbox, Inbox)
    assert isinstance(stores.replay_log, ReplayLog)
    assert isinstance(stores.checkpoints, CheckpointStore)


def test_durable_is_declared(request: pytest.FixtureRequest, stores: Stores) -> None:
    expected = BACKENDS[request.node.callspec.params["stores"]].durable
    for store in stores[:4]:
        assert store.durable is expected


# -- the command journal ---------------------------------------------------------------


def _record(journal: CommandJournal, request_id: str, *, now: float = 100.0) -> Request:
    request = mutation(request_id)
    journal.record("host-1", request, encode(request), now=now)
    return request


class TestJournal:
    def test_record_then_unsettled(self, stores: Stores) -> None:
        request = _record(stores.journal, "r1", now=123.5)
        assert stores.journal.unsettled("host-1") == [
            JournalEntry(
                host_id="host-1",
                request_id="r1",
                command_id="cmd-r1",
                method="turn/start",
                data=encode(request),
                recorded_at=123.5,
            )
        ]
        assert stores.journal.unsettled("host-2") == []

    def test_identical_record_is_a_no_op(self, stores: Stores) -> None:
        _record(stores.journal, "r1", now=1.0)
        _record(stores.journal, "r1", now=2.0)
        [entry] = stores.journal.unsettled("host-1")
        assert entry.recorded_at == 1.0

    def test_same_key_other_content_conflicts(self, stores: Stores) -> None:
        _record(stores.journal, "r1")
        other = mutation("r1", text="other")
        with pytest.raises(StoreConflict, match="r1"):
            stores.journal.record("host-1", other, encode(other))
        assert stores.journal.unsettled("host-1")[0].data == encode(mutation("r1"))

    def test_record_order(self, stores: Stores) -> None:
        for n in (5, 3, 9, 1):
            _record(stores.journal, f"r{n}")
        stores.journal.settle("host-1", "r3", "answered")
        assert [e.request_id for e in stores.journal.unsettled("host-1")] == [
            "r5",
            "r9",
            "r1",
        ]

    def test_settle(self, stores: Stores) -> None:
        for n in range(3):
            _record(stores.journal, f"r{n}")
        stores.journal.settle("host-1", "r0", "answered")
        stores.journal.settle("host-1", "r1", "applied")
        stores.journal.settle("host-1", "r1", "applied")  # the same again: nothing
        with pytest.raises(StoreConflict, match="r1"):
            stores.journal.settle("host-1", "r1", "not_applied")
        assert [e.request_id for e in stores.journal.unsettled("host-1")] == ["r2"]

    def test_settle_unknown(self, stores: Stores) -> None:
        _record(stores.journal, "r1")
        with pytest.raises(UnknownEntry, match="r9") as caught:
            stores.journal.settle("host-1", "r9", "applied")
        assert isinstance(caught.value, LookupError)
        with pytest.raises(UnknownEntry):
            stores.journal.settle("host-2", "r1", "applied")

    def test_an_unsettled_entry_stays_until_settled(self, stores: Stores) -> None:
        _record(stores.journal, "r1", now=1.0)
        _record(stores.journal, "r2", now=1.0)
        stores.journal.settle("host-1", "r2", "not_applied", now=2.0)
        # Housekeeping forgets only settled entries; nothing sends anything.
        assert stores.journal.forget_settled("host-1", older_than=1e12) == 1
        assert [e.request_id for e in stores.journal.unsettled("host-1")] == ["r1"]
        assert not any(hasattr(stores.journal, verb) for verb in ("send", "resend"))

    def test_forget_settled_by_age(self, stores: Stores) -> None:
        for n in range(4):
            _record(stores.journal, f"r{n}")
        stores.journal.settle("host-1", "r0", "answered", now=10.0)
        stores.journal.settle("host-1", "r1", "answered", now=20.0)
        stores.journal.settle("host-1", "r2", "answered", now=30.0)
        assert stores.journal.forget_settled("host-2", older_than=25.0) == 0
        assert stores.journal.forget_settled("host-1", older_than=25.0) == 2
        # r2 (settled at 30) is kept: settling it again is still a no-op.
        stores.journal.settle("host-1", "r2", "answered")
        with pytest.raises(UnknownEntry):
            stores.journal.settle("host-1", "r0", "answered")

    def test_wrong_values_change_nothing(self, stores: Stores) -> None:
        journal = stores.journal
        request = mutation("r1")
        read = Request(method="thread/read", id="r2", correlation_id="c", params={})
        with pytest.raises(ValueError, match="command_id"):
            journal.record("host-1", read, b"{}")
        with pytest.raises(TypeError, match="request"):
            journal.record("host-1", {"id": "r1"}, b"{}")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="data"):
            journal.record("host-1", request, "text")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="host_id"):
            journal.record("", request, b"{}")
        with pytest.raises(TypeError, match="now"):
            journal.record("host-1", request, b"{}", now="soon")  # type: ignore[arg-type]
        with pytest.raises(ProtocolError) as caught:
            journal.record("host-1", request, bytes(DEFAULT_MAX_MESSAGE_BYTES + 1))
        assert caught.value.code == ErrorCode.LIMIT_EXCEEDED
        assert journal.unsettled("host-1") == []
        _record(journal, "r1")
        with pytest.raises(ValueError, match="outcome"):
            journal.settle("host-1", "r1", "done")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="older_than"):
            journal.forget_settled("host-1", float("nan"))
        assert len(journal.unsettled("host-1")) == 1


# -- the inbox -------------------------------------------------------------------------

D1 = digest("one")
D2 = digest("two")


class TestInboxCommands:
    def test_claim_commit_duplicate(self, stores: Stores) -> None:
        inbox = stores.inbox
        assert inbox.claim("h", "c1", D1, lease=10, now=0) == Claim(status="new")
        assert inbox.claim("h", "c1", D1, lease=10, now=5).status == "in_progress"
        inbox.commit("h", "c1", D1, b"receipt")
        inbox.commit("h", "c1", D1, b"receipt")  # identical: nothing
        assert inbox.claim("h", "c1", D1, lease=10, now=50) == Claim(
            status="duplicate", receipt=b"receipt"
        )
        assert inbox.claim("h2", "c1", D1, lease=10).status == "new"  # another scope

    def test_conflict_on_another_digest(self, stores: Stores) -> None:
        inbox = stores.inbox
        inbox.claim("h", "held", D1, lease=10, now=0)
        inbox.claim("h", "done", D1, lease=10, now=0)
        inbox.commit("h", "done", D1, b"r")
        for command_id in ("held", "done"):
            # Also once the lease has expired: the id is bound to its content.
            assert inbox.claim("h", command_id, D2, lease=10, now=1000) == Claim(
                status="conflict"
            )

    def test_an_expired_lease_is_claimable_again(self, stores: Stores) -> None:
        inbox = stores.inbox
        inbox.claim("h", "c1", D1, lease=10, now=0)
        assert inbox.claim("h", "c1", D1, lease=10, now=9.999).status == "in_progress"
        assert inbox.claim("h", "c1", D1, lease=10, now=10).status == "new"
        assert inbox.claim("h", "c1", D1, lease=10, now=19).status == "in_progress"
        inbox.commit("h", "c1", D1, b"late but fine")
        assert inbox.claim("h", "c1", D1, lease=1).receipt == b"late but fine"

    def test_commit_conflicts(self, stores: Stores) -> None:
        inbox = stores.inbox
        with pytest.raises(StoreConflict, match="c0"):
            inbox.commit("h", "c0", D1, b"r")  # never claimed
        inbox.claim("h", "c1", D1, lease=10)
        with pytest.raises(StoreConflict, match="c1"):
            inbox.commit("h", "c1", D2, b"r")
        inbox.commit("h", "c1", D1, b"r")
        with pytest.raises(StoreConflict, match="c1"):
            inbox.commit("h", "c1", D1, b"another receipt")
        assert inbox.claim("h", "c1", D1, lease=10).receipt == b"r"
        assert inbox.claim("h", "c0", D1, lease=10).status == "new"

    def test_release(self, stores: Stores) -> None:
        inbox = stores.inbox
        inbox.release("h", "c1", D1)  # nothing held: nothing
        inbox.claim("h", "c1", D1, lease=10, now=0)
        with pytest.raises(StoreConflict):
            inbox.release("h", "c1", D2)
        inbox.release("h", "c1", D1)
        assert inbox.claim("h", "c1", D1, lease=10, now=1).status == "new"
        inbox.commit("h", "c1", D1, b"r")
        with pytest.raises(StoreConflict, match="committed"):
            inbox.release("h", "c1", D1)
        assert inbox.claim("h", "c1", D1, lease=10).receipt == b"r"

    def test_wrong_values_change_nothing(self, stores: Stores) -> None:
        inbox = stores.inbox
        for lease in (0, -1.0, float("inf")):
            with pytest.raises(ValueError, match="lease"):
                inbox.claim("h", "c1", D1, lease=lease)
        with pytest.raises(TypeError, match="lease"):
            inbox.claim("h", "c1", D1, lease=True)
        with pytest.raises(TypeError, match="digest"):
            inbox.claim("h", "c1", "d1", lease=1)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="digest"):
            inbox.claim("h", "c1", b"", lease=1)
        with pytest.raises(ValueError, match="command_id"):
            inbox.claim("h", "x" * 257, D1, lease=1)
        with pytest.raises(TypeError, match="scope"):
            inbox.claim(None, "c1", D1, lease=1)  # type: ignore[arg-type]
        inbox.claim("h", "c1", D1, lease=60)
        with pytest.raises(ProtocolError) as caught:
            inbox.commit("h", "c1", D1, bytes(DEFAULT_MAX_MESSAGE_BYTES + 1))
        assert caught.value.code == ErrorCode.LIMIT_EXCEEDED
        with pytest.raises(TypeError, match="receipt"):
            inbox.commit("h", "c1", D1, None)  # type: ignore[arg-type]
        assert inbox.claim("h", "c1", D1, lease=60).status == "in_progress"

    def test_concurrent_claims_from_threads(self, stores: Stores) -> None:
        ids = [f"c{n}" for n in range(40)]
        won: list[list[str]] = [[] for _ in range(6)]
        start = threading.Barrier(len(won))

        def claimer(mine: list[str]) -> None:
            start.wait()
            for command_id in ids:
                claim = stores.inbox.claim(
                    "h", command_id, digest(command_id), lease=600
                )
                if claim.status == "new":
                    mine.append(command_id)
                else:
                    assert claim.status in ("in_progress", "duplicate"), claim

        threads = [threading.Thread(target=claimer, args=(mine,)) for mine in won]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(c for mine in won for c in mine) == sorted(ids)


class TestInboxEvents:
    def test_record_event(self, stores: Stores) -> None:
        inbox = stores.inbox
        assert inbox.event_status("h", "e1") is None
        assert inbox.record_event("h", "e1", D1, status="pending") == Claim(
            status="new"
        )
        assert inbox.event_status("h", "e1") == "pending"
        inbox.set_event_status("h", "e1", "completed")
        again = inbox.record_event("h", "e1", D1, status="pending")
        assert again == Claim(status="duplicate")
        assert inbox.event_status("h", "e1") == "completed"  # unchanged by a duplicate
        assert inbox.record_event("h", "e1", D2, status="pending").status == "conflict"
        assert inbox.event_status("h2", "e1") is None

    def test_events_and_commands_are_apart(self, stores: Stores) -> None:
        stores.inbox.record_event("h", "x1", D1, status="processing")
        assert stores.inbox.claim("h", "x1", D2, lease=1).status == "new"

    def test_unknown_and_wrong_values(self, stores: Stores) -> None:
        inbox = stores.inbox
        with pytest.raises(UnknownEntry, match="e9"):
            inbox.set_event_status("h", "e9", "failed")
        with pytest.raises(ValueError, match="status"):
            inbox.record_event("h", "e1", D1, status="done")  # type: ignore[arg-type]
        assert inbox.event_status("h", "e1") is None
        inbox.record_event("h", "e1", D1, status="pending")
        with pytest.raises(ValueError, match="status"):
            inbox.set_event_status("h", "e1", "received")  # type: ignore[arg-type]
        assert inbox.event_status("h", "e1") == "pending"


# -- the replay log --------------------------------------------------------------------


def _fill(
    log: ReplayLog, stream: str, count: int, *, size: int = 0, now: float = 0.0
) -> None:
    for _ in range(count):
        log.append(stream, lambda c: f"e{c}".encode().ljust(size, b"."), now=now)


class TestReplayAppend:
    def test_cursors_per_stream(self, stores: Stores) -> None:
        log = stores.replay_log
        assert (log.first_cursor("s1"), log.last_cursor("s1")) == (1, 0)
        seen: list[int] = []

        def encode_at(cursor: int) -> bytes:
            seen.append(cursor)
            return b"x%d" % cursor

        assert [log.append("s1", encode_at) for _ in range(3)] == [1, 2, 3]
        assert log.append("s2", encode_at) == 1
        assert seen == [1, 2, 3, 1]
        assert (log.first_cursor("s1"), log.last_cursor("s1")) == (1, 3)
        assert log.page("s1", 0).events == [b"x1", b"x2", b"x3"]

    def test_a_failed_append_stores_nothing(self, stores: Stores) -> None:
        log = stores.replay_log
        log.append("s", lambda c: b"first")

        def boom(cursor: int) -> bytes:
            raise KeyError(cursor)

        with pytest.raises(KeyError):
            log.append("s", boom)
        with pytest.raises(TypeError, match="encode_at"):
            log.append("s", lambda c: "text")  # type: ignore[arg-type, return-value]
        with pytest.raises(TypeError, match="encode_at"):
            log.append("s", b"bytes")  # type: ignore[arg-type]
        too_big = bytes(DEFAULT_MAX_MESSAGE_BYTES - PAGE_OVERHEAD + 1)
        with pytest.raises(ProtocolError) as caught:
            log.append("s", lambda c: too_big)
        assert caught.value.code == ErrorCode.LIMIT_EXCEEDED
        assert log.last_cursor("s") == 1
        assert log.append("s", lambda c: bytes(len(too_big) - 1)) == 2

    def test_encode_at_may_not_append(self, stores: Stores) -> None:
        log = stores.replay_log

        def nested(cursor: int) -> bytes:
            log.append("s", lambda c: b"inner")
            return b"outer"

        with pytest.raises(RuntimeError, match="encode_at"):
            log.append("s", nested)
        assert log.last_cursor("s") == 0
        assert log.append("s", lambda c: b"fine") == 1


class TestReplayPage:
    def test_pages(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 300)
        first = log.page("s", 0)
        assert (len(first.events), first.cursor, first.has_more) == (128, 128, True)
        assert first.events[0] == b"e1"
        last = log.page("s", 256)
        assert (len(last.events), last.cursor, last.has_more) == (44, 300, False)
        assert log.page("s", 300).events == []
        assert log.page("s", 300).cursor == 300
        assert log.page("s", 10, max_events=5).events == [
            b"e%d" % n for n in range(11, 16)
        ]
        assert log.page("empty", 0).events == []

    def test_bad_cursors(self, stores: Stores) -> None:
        _fill(stores.replay_log, "s", 3)
        for after in (-1, 4):
            with pytest.raises(ProtocolError) as caught:
                stores.replay_log.page("s", after)
            assert caught.value.code == ErrorCode.INVALID_CURSOR
            assert caught.value.data == {"cursor": after, "last": 3}
        with pytest.raises(TypeError, match="after"):
            stores.replay_log.page("s", True)
        with pytest.raises(ValueError, match="max_events"):
            stores.replay_log.page("s", 0, max_events=0)
        with pytest.raises(TypeError, match="max_bytes"):
            stores.replay_log.page("s", 0, max_bytes=1.5)  # type: ignore[arg-type]

    def test_an_event_too_big_for_the_budget(self, stores: Stores) -> None:
        _fill(stores.replay_log, "s", 2, size=100)
        budget = PAGE_OVERHEAD + 101
        assert len(stores.replay_log.page("s", 0, max_bytes=budget).events) == 1
        with pytest.raises(ProtocolError) as caught:
            stores.replay_log.page("s", 0, max_bytes=budget - 1)
        assert caught.value.code == ErrorCode.LIMIT_EXCEEDED
        assert caught.value.data == {
            "limit": "max_bytes",
            "max": budget - 1,
            "cursor": 1,
        }

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=40),
        after=st.integers(0, 39),
        max_events=st.integers(1, 50),
        slack=st.integers(0, 20_000),
    )
    def test_pages_respect_both_bounds(
        self, stores: Stores, sizes: list[int], after: int, max_events: int, slack: int
    ) -> None:
        log = stores.replay_log
        stream = f"s{next(_FRESH)}"
        for size in sizes:
            log.append(stream, lambda c, size=size: b"%d:" % c + bytes(size))
        after = min(after, len(sizes))
        budget = PAGE_OVERHEAD + max(sizes) + 16 + slack  # the largest event fits
        page = log.page(stream, after, max_events=max_events, max_bytes=budget)
        count = len(page.events)
        used = PAGE_OVERHEAD + sum(len(e) + 1 for e in page.events)
        assert count <= max_events and used <= budget
        assert page.cursor == after + count
        assert page.has_more == (page.cursor < len(sizes))
        if page.has_more and count < max_events:
            # Stopped by the byte budget: the next event would pass it.
            following = log.page(stream, page.cursor, max_events=1)
            assert used + len(following.events[0]) + 1 > budget
        if after < len(sizes):
            assert count >= 1
            assert page.events[0].startswith(b"%d:" % (after + 1))

    def test_a_page_cut_by_the_budget_reads_little_beyond_it(
        self, stores: Stores
    ) -> None:
        # 16 events near 1 MiB each: a page holds one. Reading all of them
        # (into Python objects) to return one would show in the peak.
        log = stores.replay_log
        size = DEFAULT_MAX_MESSAGE_BYTES - PAGE_OVERHEAD - 64
        for n in range(16):
            log.append("big", lambda c, n=n: bytes([n]) * size)
        tracemalloc.start()
        try:
            page = log.page("big", 3)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert (page.events, page.cursor, page.has_more) == (
            [bytes([3]) * size],
            4,
            True,
        )
        assert peak < 3 * DEFAULT_MAX_MESSAGE_BYTES  # the page, one event beyond


class TestReplayTrim:
    def test_keep_events(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 10)
        assert log.trim("s", keep_events=4) == 6
        assert log.trim("s", keep_events=4) == 0
        assert (log.first_cursor("s"), log.last_cursor("s")) == (7, 10)
        assert log.page("s", 6).events == [b"e7", b"e8", b"e9", b"e10"]
        with pytest.raises(ProtocolError) as caught:
            log.page("s", 5)
        assert caught.value.code == ErrorCode.REPLAY_GAP
        assert caught.value.data == {"cursor": 5, "first_retained": 7}

    def test_keep_bytes(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 10, size=100)  # 100 bytes each
        assert log.trim("s", keep_bytes=350) == 7
        assert log.first_cursor("s") == 8
        assert log.trim("s", keep_bytes=300) == 0
        assert log.trim("s", keep_bytes=99) == 3
        assert (log.first_cursor("s"), log.last_cursor("s")) == (11, 10)

    def test_older_than(self, stores: Stores) -> None:
        log = stores.replay_log
        for at in (1.0, 2.0, 3.0, 2.5, 4.0):
            log.append("s", lambda c: b"x", now=at)
        # Oldest first and contiguous: stops at the first event at or after.
        assert log.trim("s", older_than=2.0) == 1
        assert log.trim("s", older_than=2.9) == 1
        assert log.first_cursor("s") == 3
        assert log.trim("s", older_than=100.0) == 3

    def test_bounds_combine(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 10, size=10, now=5.0)
        _fill(log, "s", 10, size=10, now=9.0)
        assert log.trim("s", keep_events=15, keep_bytes=1000, older_than=6.0) == 10
        assert log.trim("s", keep_events=15, keep_bytes=50) == 5

    def test_cursors_never_restart(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 3)
        assert log.trim("s", keep_events=0) == 3
        assert (log.first_cursor("s"), log.last_cursor("s")) == (4, 3)
        assert log.page("s", 3).events == []
        with pytest.raises(ProtocolError) as caught:
            log.page("s", 0)
        assert caught.value.code == ErrorCode.REPLAY_GAP
        assert log.append("s", lambda c: b"e%d" % c) == 4
        assert log.page("s", 3).events == [b"e4"]

    def test_wrong_values(self, stores: Stores) -> None:
        log = stores.replay_log
        _fill(log, "s", 3)
        with pytest.raises(ValueError, match="keep_events"):
            log.trim("s")
        with pytest.raises(ValueError, match="keep_events"):
            log.trim("s", keep_events=-1)
        with pytest.raises(TypeError, match="keep_bytes"):
            log.trim("s", keep_bytes="10")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="older_than"):
            log.trim("s", older_than="yesterday")  # type: ignore[arg-type]
        assert log.trim("unknown", keep_events=0) == 0
        assert log.first_cursor("s") == 1


# -- checkpoints -------------------------------------------------------------------------


class TestCheckpoints:
    def test_advance_load_forget(self, stores: Stores) -> None:
        cp = stores.checkpoints
        assert cp.load("h1") == {}
        assert cp.advance("h1", "s1", 5) == 5
        assert cp.advance("h1", "s1", 3) == 5
        assert cp.advance("h1", "s2", 0) == 0
        assert cp.advance("h2", "s1", 1) == 1
        assert cp.load("h1") == {"s1": 5, "s2": 0}
        cp.forget("h1", "s1")
        cp.forget("h1", "s9")
        assert cp.load("h1") == {"s2": 0}
        assert cp.advance("h1", "s1", 2) == 2

    def test_wrong_values(self, stores: Stores) -> None:
        cp = stores.checkpoints
        for cursor in (-1, MAX_CURSOR + 1):
            with pytest.raises(ValueError, match="cursor"):
                cp.advance("h", "s", cursor)
        for cursor in (True, 1.0, "1"):
            with pytest.raises(TypeError, match="cursor"):
                cp.advance("h", "s", cursor)  # type: ignore[arg-type]
        assert cp.advance("h", "s", MAX_CURSOR) == MAX_CURSOR

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        moves=st.lists(
            st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.integers(0, 50)),
            max_size=30,
        ),
    )
    def test_never_moves_backwards(
        self, stores: Stores, moves: list[tuple[str, int]]
    ) -> None:
        host_id = f"h{next(_FRESH)}"
        model: dict[str, int] = {}
        for stream, cursor in moves:
            model[stream] = max(model.get(stream, 0), cursor)
            assert stores.checkpoints.advance(host_id, stream, cursor) == model[stream]
        assert stores.checkpoints.load(host_id) == model
