"""The in-memory reference implementations of the four stores (private).

Public as ``samgita_protocol.stores``. Each keeps its records in this
process's memory behind one lock per store object, so it is exactly as
durable as the process: nothing survives a crash or an exit, and
``durable`` is ``False`` (a host on :class:`MemoryInbox` answers
``acceptance: "received"``, never ``"durable"``). They are the reference
the conformance suite holds every other backend to, the default of a host
or client that needs no durability, and a fast double in tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from .._options import DEFAULT_MAX_MESSAGE_BYTES, positive_int
from .._schema import Request
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
    page_count,
    page_limits,
    record_needed,
    reentered,
    release_needed,
    seconds,
    settle_needed,
    unix_time,
    unknown_event,
    wall_clock,
)
from ._types import Claim, EventStatus, JournalEntry, Outcome, ReplayPage

__all__ = ["MemoryCheckpoints", "MemoryInbox", "MemoryJournal", "MemoryReplayLog"]


@dataclass(slots=True)
class _Record:
    entry: JournalEntry
    outcome: str | None = None
    settled_at: float = 0.0


class MemoryJournal:
    """A :class:`CommandJournal` in this process's memory (not durable).

    Args:
        max_message_bytes: the largest request ``data`` recorded (1 MiB).
    """

    durable: Final = False

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max_bytes = positive_int("max_message_bytes", max_message_bytes)
        self._lock = threading.Lock()
        # host_id -> request_id -> record; dicts keep record order.
        self._hosts: dict[str, dict[str, _Record]] = {}

    def record(
        self, host_id: str, request: Request, data: bytes, *, now: float | None = None
    ) -> None:
        """As :meth:`CommandJournal.record`."""
        entry = journal_entry(host_id, request, data, now, self._max_bytes)
        with self._lock:
            entries = self._hosts.setdefault(entry.host_id, {})
            existing = entries.get(entry.request_id)
            if record_needed(None if existing is None else existing.entry, entry):
                entries[entry.request_id] = _Record(entry)

    def settle(
        self,
        host_id: str,
        request_id: str,
        outcome: Outcome,
        *,
        now: float | None = None,
    ) -> None:
        """As :meth:`CommandJournal.settle`."""
        host_id = key("host_id", host_id)
        request_id = key("request_id", request_id)
        outcome = check_outcome(outcome)
        at = wall_clock(now)
        with self._lock:
            record = self._hosts.get(host_id, {}).get(request_id)
            found = record is not None
            settled = None if record is None else record.outcome
            if settle_needed(found, settled, request_id, outcome):
                assert record is not None
                record.outcome = outcome
                record.settled_at = at

    def unsettled(self, host_id: str) -> list[JournalEntry]:
        """As :meth:`CommandJournal.unsettled`."""
        host_id = key("host_id", host_id)
        with self._lock:
            records = self._hosts.get(host_id, {}).values()
            return [r.entry for r in records if r.outcome is None]

    def forget_settled(self, host_id: str, older_than: float) -> int:
        """As :meth:`CommandJournal.forget_settled`."""
        host_id = key("host_id", host_id)
        before = unix_time("older_than", older_than)
        with self._lock:
            entries = self._hosts.get(host_id, {})
            gone = [
                request_id
                for request_id, r in entries.items()
                if r.outcome is not None and r.settled_at < before
            ]
            for request_id in gone:
                del entries[request_id]
            return len(gone)


class MemoryInbox:
    """An :class:`Inbox` in this process's memory (not durable).

    Args:
        max_message_bytes: the largest receipt committed (1 MiB).
    """

    durable: Final = False

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max_bytes = positive_int("max_message_bytes", max_message_bytes)
        self._lock = threading.Lock()
        self._commands: dict[tuple[str, str], InboxRow] = {}
        # (scope, event_id) -> (digest, status)
        self._events: dict[tuple[str, str], tuple[bytes, EventStatus]] = {}

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
        with self._lock:
            row = self._commands.get((scope, command_id))
            status = claim_status(row, digest, at)
            if status == "new":
                self._commands[scope, command_id] = InboxRow(digest, None, at + until)
            receipt = row.receipt if status == "duplicate" and row is not None else None
            return Claim(status=status, receipt=receipt)

    def commit(
        self, scope: str, command_id: str, digest: bytes, receipt: bytes
    ) -> None:
        """As :meth:`Inbox.commit`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        receipt = check_bytes("receipt", receipt, self._max_bytes)
        with self._lock:
            row = self._commands.get((scope, command_id))
            if commit_needed(row, command_id, digest, receipt):
                assert row is not None
                self._commands[scope, command_id] = row._replace(receipt=receipt)

    def release(self, scope: str, command_id: str, digest: bytes) -> None:
        """As :meth:`Inbox.release`."""
        scope, command_id, digest = command_key(scope, command_id, digest)
        with self._lock:
            if release_needed(
                self._commands.get((scope, command_id)), command_id, digest
            ):
                del self._commands[scope, command_id]

    def record_event(
        self, scope: str, event_id: str, digest: bytes, *, status: EventStatus
    ) -> Claim:
        """As :meth:`Inbox.record_event`."""
        name = event_key(scope, event_id)
        digest = check_digest(digest)
        status = check_status(status)
        with self._lock:
            found = self._events.get(name)
            answer = event_claim(None if found is None else found[0], digest)
            if answer == "new":
                self._events[name] = (digest, status)
            return Claim(status=answer)

    def event_status(self, scope: str, event_id: str) -> EventStatus | None:
        """As :meth:`Inbox.event_status`."""
        name = event_key(scope, event_id)
        with self._lock:
            found = self._events.get(name)
            return None if found is None else found[1]

    def set_event_status(self, scope: str, event_id: str, status: EventStatus) -> None:
        """As :meth:`Inbox.set_event_status`."""
        name = event_key(scope, event_id)
        status = check_status(status)
        with self._lock:
            found = self._events.get(name)
            if found is None:
                raise unknown_event(name[1])
            self._events[name] = (found[0], status)


@dataclass(slots=True)
class _Stream:
    first: int = 1
    last: int = 0
    # Retained events first..last and when each was appended.
    events: list[bytes] = field(default_factory=list)
    appended: list[float] = field(default_factory=list)


class MemoryReplayLog:
    """A :class:`ReplayLog` in this process's memory (not durable).

    Args:
        max_message_bytes: the message budget of a page (1 MiB): an event
            whose one-event page would not fit is refused, and it is the
            default ``max_bytes`` of :meth:`page`.
    """

    durable: Final = False

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._max_bytes = positive_int("max_message_bytes", max_message_bytes)
        # Reentrant, so that a call from encode_at finds _encoding set
        # instead of deadlocking.
        self._lock = threading.RLock()
        self._encoding = False
        self._streams: dict[str, _Stream] = {}

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
        with self._lock:
            if self._encoding:
                raise reentered()
            stream = self._streams.get(stream_id) or _Stream()
            cursor = next_cursor(stream.last)
            self._encoding = True
            try:
                data = check_event(encode_at(cursor), self._max_bytes)
            finally:
                self._encoding = False
            stream.events.append(data)
            stream.appended.append(at)
            stream.last = cursor
            self._streams[stream_id] = stream
            return cursor

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
        with self._lock:
            stream = self._streams.get(stream_id) or _Stream()
            after = check_after(after, stream.first, stream.last)
            start = after + 1 - stream.first
            sizes = [len(data) for data in stream.events[start : start + most]]
            count = page_count(sizes, budget, after)
            return ReplayPage(
                events=stream.events[start : start + count],
                cursor=after + count,
                has_more=after + count < stream.last,
            )

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
        with self._lock:
            stream = self._streams.get(stream_id)
            if stream is None:
                return 0
            events = stream.events
            drop = 0
            if most is not None:
                drop = max(drop, len(events) - most)
            if budget is not None:
                kept = 0
                for index in range(len(events) - 1, drop - 1, -1):
                    kept += len(events[index])
                    if kept > budget:
                        drop = index + 1
                        break
            if before is not None:
                old = 0
                while old < len(events) and stream.appended[old] < before:
                    old += 1
                drop = max(drop, old)
            del events[:drop]
            del stream.appended[:drop]
            stream.first += drop
            return drop

    def first_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.first_cursor`."""
        stream_id = key("stream_id", stream_id)
        with self._lock:
            return (self._streams.get(stream_id) or _Stream()).first

    def last_cursor(self, stream_id: str) -> int:
        """As :meth:`ReplayLog.last_cursor`."""
        stream_id = key("stream_id", stream_id)
        with self._lock:
            return (self._streams.get(stream_id) or _Stream()).last


class MemoryCheckpoints:
    """A :class:`CheckpointStore` in this process's memory (not durable)."""

    durable: Final = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[str, dict[str, int]] = {}

    def load(self, host_id: str) -> dict[str, int]:
        """As :meth:`CheckpointStore.load`."""
        host_id = key("host_id", host_id)
        with self._lock:
            return dict(self._hosts.get(host_id, {}))

    def advance(self, host_id: str, stream_id: str, cursor: int) -> int:
        """As :meth:`CheckpointStore.advance`."""
        host_id = key("host_id", host_id)
        stream_id = key("stream_id", stream_id)
        cursor = check_cursor("cursor", cursor)
        with self._lock:
            streams = self._hosts.setdefault(host_id, {})
            stored = max(streams.get(stream_id, 0), cursor)
            streams[stream_id] = stored
            return stored

    def forget(self, host_id: str, stream_id: str) -> None:
        """As :meth:`CheckpointStore.forget`."""
        host_id = key("host_id", host_id)
        stream_id = key("stream_id", stream_id)
        with self._lock:
            self._hosts.get(host_id, {}).pop(stream_id, None)


if TYPE_CHECKING:  # mypy checks that each class implements its interface.
    from ._types import CheckpointStore, CommandJournal, Inbox, ReplayLog

    _journal: CommandJournal = MemoryJournal()
    _inbox: Inbox = MemoryInbox()
    _replay_log: ReplayLog = MemoryReplayLog()
    _checkpoints: CheckpointStore = MemoryCheckpoints()
