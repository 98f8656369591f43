"""Durable stores for the records the protocol's guarantees rest on.

Four small interfaces (:class:`CommandJournal`, :class:`Inbox`,
:class:`ReplayLog`, :class:`CheckpointStore`), each with an in-memory
reference implementation here (not durable) and a SQLite backend in
``samgita_protocol.stores.sqlite`` (durable: one file, standard library
``sqlite3``). Nothing is imported or opened by importing this package:
``samgita_protocol`` does not import it, and it imports no backend.

Errors: a wrong Python value is ``TypeError`` / ``ValueError`` naming the
argument; a bound is :class:`~samgita_protocol.ProtocolError`
(``limit_exceeded``, and ``invalid_cursor`` / ``replay_gap`` for pages);
the same key with other content is :class:`StoreConflict`; a key that must
exist and does not is :class:`UnknownEntry`. A failed call changes nothing.
"""

from .._replay import PAGE_OVERHEAD
from ._memory import MemoryCheckpoints, MemoryInbox, MemoryJournal, MemoryReplayLog
from ._types import (
    CheckpointStore,
    Claim,
    ClaimStatus,
    CommandJournal,
    EventStatus,
    Inbox,
    JournalEntry,
    Outcome,
    ReplayLog,
    ReplayPage,
    StoreConflict,
    UnknownEntry,
    command_digest,
    event_digest,
)

__all__ = [
    # the interfaces and their types (_types)
    "CheckpointStore",
    "Claim",
    "ClaimStatus",
    "CommandJournal",
    "EventStatus",
    "Inbox",
    "JournalEntry",
    "Outcome",
    "PAGE_OVERHEAD",
    "ReplayLog",
    "ReplayPage",
    # errors (_types)
    "StoreConflict",
    "UnknownEntry",
    # digests (_types)
    "command_digest",
    "event_digest",
    # the in-memory reference implementations (_memory)
    "MemoryCheckpoints",
    "MemoryInbox",
    "MemoryJournal",
    "MemoryReplayLog",
]
