"""The rules every store backend applies (private): argument checks and the
decisions of the interfaces in ``_types``, as pure functions of what a
backend read. Each backend reads its rows, asks a function here, and
writes what it says, all inside its own atomic section; so the rules live
once, and a new backend (PostgreSQL) only adds the reading and writing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, NamedTuple, cast, get_args

from .._errors import ErrorCode, ProtocolError
from .._options import check_id, known_name, positive_int, wrong_type
from .._outbox import limit_error
from .._params import PAGE_SIZE
from .._replay import PAGE_OVERHEAD, check_page_cursor, fitting
from .._schema import MAX_CURSOR, Request
from ._types import (
    ClaimStatus,
    EventStatus,
    JournalEntry,
    Outcome,
    StoreConflict,
    UnknownEntry,
)

__all__ = [
    "InboxRow",
    "MAX_DIGEST_BYTES",
    "check_after",
    "check_bytes",
    "check_callable",
    "check_cursor",
    "check_digest",
    "check_event",
    "check_mutation",
    "check_outcome",
    "check_status",
    "check_trim",
    "claim_status",
    "command_key",
    "commit_needed",
    "event_claim",
    "event_key",
    "journal_entry",
    "key",
    "next_cursor",
    "page_count",
    "page_events",
    "page_limits",
    "record_needed",
    "reentered",
    "release_needed",
    "seconds",
    "settle_needed",
    "unix_time",
    "unknown_event",
    "wall_clock",
]

#: The longest digest accepted: a SHA-512. Digests are keys' fingerprints,
#: never content, so a longer value is a mistake.
MAX_DIGEST_BYTES: Final = 64

_OUTCOMES: Final = frozenset(get_args(Outcome))
_STATUSES: Final = frozenset(get_args(EventStatus))


# -- argument checks -------------------------------------------------------------------


def key(name: str, value: object) -> str:
    """``value`` if it is a wire id (a string of 1 to 256 UTF-8 bytes); else
    ``TypeError`` / ``ValueError`` naming ``name``."""
    checked = check_id(name, value, optional=False)
    assert checked is not None  # required: never None
    return checked


def check_digest(digest: object) -> bytes:
    """``digest`` if it is ``bytes`` of 1 to :data:`MAX_DIGEST_BYTES`."""
    if type(digest) is not bytes:
        raise wrong_type("digest", digest, "bytes (a content digest)")
    if not 1 <= len(digest) <= MAX_DIGEST_BYTES:
        raise ValueError(
            f"expected digest to be 1 to {MAX_DIGEST_BYTES} bytes, got {len(digest)}"
        )
    return digest


def check_bytes(name: str, value: object, max_message_bytes: int) -> bytes:
    """``value`` if it is ``bytes`` of at most ``max_message_bytes``: a
    ``TypeError`` naming ``name``, or ``limit_exceeded``."""
    if type(value) is not bytes:
        raise wrong_type(name, value, "bytes")
    if len(value) > max_message_bytes:
        raise limit_error("max_message_bytes", max_message_bytes)
    return value


def check_event(data: object, max_message_bytes: int) -> bytes:
    """What ``encode_at`` returned, if a ``stream/resume`` page of it alone
    fits in ``max_message_bytes`` (``Replay.append``'s rule)."""
    if type(data) is not bytes:
        raise TypeError(f"expected encode_at to return bytes, got: {type(data)!r}")
    if len(data) + PAGE_OVERHEAD > max_message_bytes:
        raise ProtocolError(
            ErrorCode.LIMIT_EXCEEDED,
            "event cannot fit in a stream/resume page",
            data={"limit": "max_message_bytes", "max": max_message_bytes},
        )
    return data


def check_callable(encode_at: object) -> Callable[[int], bytes]:
    """``encode_at`` if it is callable."""
    if not callable(encode_at):
        raise wrong_type("encode_at", encode_at, "a callable taking a cursor")
    return encode_at


def reentered() -> RuntimeError:
    """The error for a store called from inside its own ``encode_at``."""
    return RuntimeError("a store was called from inside its own append's encode_at")


def check_mutation(request: object) -> Request:
    """``request`` if it is a :class:`Request` with a ``command_id``."""
    if not isinstance(request, Request):
        raise wrong_type("request", request, "a Request")
    if not isinstance(request.command_id, str):
        raise ValueError(
            f"expected request to be a mutation (with a command_id), got method {request.method!r}"
        )
    return request


def check_cursor(name: str, value: object) -> int:
    """``value`` if it is an ``int`` from 0 to ``MAX_CURSOR``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(name, value, "an int")
    if not 0 <= value <= MAX_CURSOR:
        raise ValueError(f"expected {name} to be from 0 to {MAX_CURSOR}, got: {value}")
    return value


def check_outcome(outcome: object) -> Outcome:
    """``outcome`` if it is one of :data:`Outcome`."""
    return cast("Outcome", known_name("outcome", outcome, _OUTCOMES, "outcome"))


def check_status(status: object) -> EventStatus:
    """``status`` if it is one of :data:`EventStatus`."""
    return cast("EventStatus", known_name("status", status, _STATUSES, "event status"))


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type(name, value, "a number of seconds")
    if not math.isfinite(value):
        raise ValueError(f"expected {name} to be a finite number, got: {value!r}")
    return float(value)


def unix_time(name: str, value: object) -> float:
    """``value`` if it is a finite Unix time in seconds."""
    return _number(name, value)


def wall_clock(now: object) -> float:
    """``now`` as a finite Unix time in seconds; ``None`` reads the clock."""
    return time.time() if now is None else _number("now", now)


def seconds(name: str, value: object) -> float:
    """``value`` if it is a positive, finite number of seconds."""
    checked = _number(name, value)
    if checked <= 0:
        raise ValueError(
            f"expected {name} to be a positive number of seconds, got: {value!r}"
        )
    return checked


def check_trim(
    keep_events: object, keep_bytes: object, older_than: object
) -> tuple[int | None, int | None, float | None]:
    """The bounds of a ``trim``, at least one given: ``keep_events`` and
    ``keep_bytes`` non-negative ints, ``older_than`` a Unix time."""
    if keep_events is None and keep_bytes is None and older_than is None:
        raise ValueError(
            "give trim at least one of keep_events, keep_bytes, older_than"
        )
    checked: list[int | None] = []
    for name, value in (("keep_events", keep_events), ("keep_bytes", keep_bytes)):
        if value is not None:
            value = check_cursor(name, value)
        checked.append(value)
    age = None if older_than is None else unix_time("older_than", older_than)
    return checked[0], checked[1], age


# -- the journal -----------------------------------------------------------------------


def journal_entry(
    host_id: object, request: object, data: object, now: object, max_bytes: int
) -> JournalEntry:
    """The entry :meth:`CommandJournal.record` keeps, from checked arguments."""
    request = check_mutation(request)
    return JournalEntry(
        host_id=key("host_id", host_id),
        request_id=request.id,
        command_id=str(request.command_id),
        method=request.method,
        data=check_bytes("data", data, max_bytes),
        recorded_at=wall_clock(now),
    )


def record_needed(existing: JournalEntry | None, entry: JournalEntry) -> bool:
    """Whether ``entry`` must be written: not when the identical entry is
    there; :class:`StoreConflict` when another one is."""
    if existing is None:
        return True
    if (existing.command_id, existing.method, existing.data) != (
        entry.command_id,
        entry.method,
        entry.data,
    ):
        raise StoreConflict(
            f"journal entry {entry.request_id!r} of host {entry.host_id!r} "
            "is recorded with other content"
        )
    return False


def settle_needed(
    found: bool, settled: str | None, request_id: str, outcome: Outcome
) -> bool:
    """Whether the outcome must be written to an entry (``found``, settled
    with ``settled`` or ``None``)."""
    if not found:
        raise UnknownEntry(f"no journal entry {request_id!r}")
    if settled is None:
        return True
    if settled != outcome:
        raise StoreConflict(
            f"journal entry {request_id!r} is settled as {settled!r}, not {outcome!r}"
        )
    return False


# -- the inbox -------------------------------------------------------------------------


def unknown_event(event_id: str) -> UnknownEntry:
    """The error for an event never recorded."""
    return UnknownEntry(f"no event {event_id!r}")


class InboxRow(NamedTuple):
    """What an inbox keeps of a command: its digest, its receipt once
    committed, and the Unix time its claim's lease ends."""

    digest: bytes
    receipt: bytes | None
    lease_until: float


def command_key(
    scope: object, command_id: object, digest: object
) -> tuple[str, str, bytes]:
    """The checked ``scope``, ``command_id`` and ``digest`` of an inbox call."""
    return key("scope", scope), key("command_id", command_id), check_digest(digest)


def event_key(scope: object, event_id: object) -> tuple[str, str]:
    """The checked ``scope`` and ``event_id`` of an inbox call."""
    return key("scope", scope), key("event_id", event_id)


def event_claim(found: bytes | None, digest: bytes) -> ClaimStatus:
    """What recording an event of ``digest`` finds, the digest recorded
    before being ``found`` (``None``: never); ``"new"`` means: write it."""
    if found is None:
        return "new"
    return "duplicate" if found == digest else "conflict"


def claim_status(row: InboxRow | None, digest: bytes, now: float) -> ClaimStatus:
    """What a claim of ``digest`` at ``now`` finds in ``row``; ``"new"``
    means: write a held row leased from ``now``."""
    if row is None:
        return "new"
    if row.digest != digest:
        return "conflict"
    if row.receipt is not None:
        return "duplicate"
    return "in_progress" if now < row.lease_until else "new"


def commit_needed(
    row: InboxRow | None, command_id: str, digest: bytes, receipt: bytes
) -> bool:
    """Whether ``receipt`` must be written to ``row``: not when it is
    committed there already; :class:`StoreConflict` when the row does not
    hold this claim or holds another receipt."""
    if row is None or row.digest != digest:
        raise StoreConflict(
            f"command {command_id!r} is not claimed with this digest"
            if row is None
            else f"command {command_id!r} is claimed with another digest"
        )
    if row.receipt is None:
        return True
    if row.receipt != receipt:
        raise StoreConflict(f"command {command_id!r} is committed with another receipt")
    return False


def release_needed(row: InboxRow | None, command_id: str, digest: bytes) -> bool:
    """Whether ``row`` must be deleted to release a claim of ``digest``."""
    if row is None:
        return False
    if row.digest != digest:
        raise StoreConflict(f"command {command_id!r} is claimed with another digest")
    if row.receipt is not None:
        raise StoreConflict(f"command {command_id!r} is committed; a receipt stays")
    return True


# -- the replay log --------------------------------------------------------------------


def next_cursor(last: int) -> int:
    """The cursor after ``last``, or ``limit_exceeded`` past ``MAX_CURSOR``."""
    if last >= MAX_CURSOR:
        raise limit_error("MAX_CURSOR", MAX_CURSOR)
    return last + 1


def check_after(after: object, first: int, last: int) -> int:
    """``after`` if a page can start there in a stream retaining
    ``first..last``: `Replay`'s rule (``check_page_cursor``), the argument named
    ``after``."""
    return check_page_cursor(after, first, last, "after")


def page_limits(
    max_events: object, max_bytes: object, default_bytes: int
) -> tuple[int, int]:
    """The checked ``max_events`` (default 128) and ``max_bytes`` (default
    ``default_bytes``) of a page."""
    events = PAGE_SIZE if max_events is None else positive_int("max_events", max_events)
    budget = (
        default_bytes if max_bytes is None else positive_int("max_bytes", max_bytes)
    )
    return events, budget


def _fits(count: int, more: bool, budget: int, after: int) -> int:
    # `count` events of a page; limit_exceeded when there is a next event
    # (`more`) and it alone does not fit (where `Replay.since` returns [],
    # a store's page would make a resume loop spin).
    if count == 0 and more:
        raise ProtocolError(
            ErrorCode.LIMIT_EXCEEDED,
            "the next event does not fit in a page of max_bytes",
            data={"limit": "max_bytes", "max": budget, "cursor": after + 1},
        )
    return count


def page_count(sizes: Sequence[int], budget: int, after: int) -> int:
    """How many of the next events (their ``sizes``, at most a page) fit in
    a ``stream/resume`` message of ``budget`` bytes (`Replay`'s rule,
    ``fitting``). ``limit_exceeded`` when there is a next event and it
    alone does not fit (where `Replay.since` returns ``[]``, a store's page
    would make a resume loop spin)."""
    return _fits(fitting(sizes, budget), bool(sizes), budget, after)


def page_events(rows: Iterable[tuple[bytes]], budget: int, after: int) -> list[bytes]:
    """The next events that fit in a ``stream/resume`` message of ``budget``
    bytes (:func:`page_count`'s rule and error), from ``rows`` of one
    column, each event's bytes, in cursor order, at most a page of them.

    ``rows`` is read lazily, up to the first event past the budget and no
    further: given a database cursor, a page cut by the budget reads one
    event beyond it, never the rest of the page (128 events near 1 MiB
    each are not loaded to return one)."""
    events: list[bytes] = []
    keep = events.append

    def sizes() -> Iterator[int]:
        for (data,) in rows:
            keep(data)
            yield len(data)

    count = _fits(fitting(sizes(), budget), bool(events), budget, after)
    del events[count:]
    return events
