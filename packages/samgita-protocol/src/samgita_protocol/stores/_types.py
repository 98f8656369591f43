"""The four store interfaces, their result types, errors and digests (private).

Public as ``samgita_protocol.stores``. Each interface is a
:class:`typing.Protocol`: a backend implements it by having the methods
(``isinstance`` works too: the Protocols are runtime-checkable, which checks
the names only). The docstrings here are the contract every backend keeps
and the conformance suite (``tests/test_stores_conformance.py``) checks:

* every method is synchronous, atomic (it completes or raises and changes
  nothing) and safe to call from several threads at once;
* a wrong Python value is a ``TypeError`` / ``ValueError`` naming the
  argument; a bound is a :class:`~samgita_protocol.ProtocolError`
  ``limit_exceeded``; "same key, other content" is :class:`StoreConflict`;
  an unknown key where one must exist is :class:`UnknownEntry`;
* keys (``host_id``, ``scope``, ``request_id``, ``command_id``,
  ``event_id``, ``stream_id``) are wire ids: strings of 1 to 256 UTF-8 bytes;
* times are Unix time in seconds (:func:`time.time`), not a monotonic clock:
  a lease or an age must mean the same in every process (and, for a
  networked backend, on every machine). ``now=None`` reads the clock.

Content is compared by digest: SHA-256 of the canonical encoding
(:func:`command_digest`, :func:`event_digest`), stable across processes and
releases, unlike the per-process ``hash()`` the in-memory windows use.

Choices, and why (what users of idempotency keys and outboxes expect):

* The first answer is the answer (Stripe's idempotency keys): a duplicate
  command gets the committed receipt, never a second execution; the same
  key with other content is ``conflict`` (claim) or :class:`StoreConflict`
  (record, settle, commit), whether the first is committed or only held,
  and also after a held lease expired: an id is bound to its content.
* Writing the identical thing again is a no-op (record, settle, commit,
  release of nothing held), so a caller that retries after a lost answer
  from its own store is safe. Releasing a committed receipt is refused: a
  receipt stands for an effect that happened.
* A held claim is leased, not owned until the end of time: a holder that
  crashed must not block its command forever. There is no fencing token,
  as in the usual inbox designs: a holder running past its lease can run
  beside the next one. Where effects and receipt share one transaction
  (``SqliteStore.transaction``) that cannot happen.
* A page that cannot hold the next event raises instead of returning an
  empty page that says ``has_more`` (a resume loop would spin), and
  retention is explicit (:meth:`ReplayLog.trim`), oldest first, so what is
  retained is always one contiguous run of cursors and ``replay_gap`` is
  exact.
* ``forget_settled`` counts from when an entry was settled, not recorded:
  a command that stayed uncertain for a week is kept a while once
  reconciled, for the audit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Literal, Protocol, TypeAlias, runtime_checkable

import msgspec
from msgspec import UNSET

from .._content import canonical
from .._options import wrong_type
from .._params import _ProcessingStatus
from .._schema import Event, Request

__all__ = [
    "CheckpointStore",
    "Claim",
    "ClaimStatus",
    "CommandJournal",
    "EventStatus",
    "Inbox",
    "JournalEntry",
    "Outcome",
    "ReplayLog",
    "ReplayPage",
    "StoreConflict",
    "UnknownEntry",
    "command_digest",
    "event_digest",
]

#: How a journal entry was settled: ``"answered"`` (its response arrived),
#: ``"applied"`` / ``"not_applied"`` (what ``Client.resolve_uncertain``
#: learned from the host).
Outcome: TypeAlias = Literal["answered", "applied", "not_applied"]

#: What :meth:`Inbox.claim` (and :meth:`Inbox.record_event`) found.
ClaimStatus: TypeAlias = Literal["new", "duplicate", "in_progress", "conflict"]

#: An event's processing status: the ``processing_status`` values of
#: ``project/event.receive`` and ``project/event.status`` results.
EventStatus: TypeAlias = _ProcessingStatus


# -- result types ----------------------------------------------------------------------


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A mutation the client recorded before handing it out for sending.

    ``data`` is the request's bytes as they were sent; ``recorded_at`` the
    Unix time of the first :meth:`CommandJournal.record`.
    """

    host_id: str
    request_id: str
    command_id: str
    method: str
    data: bytes
    recorded_at: float


class Claim(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of :meth:`Inbox.claim` or :meth:`Inbox.record_event`.

    ``status``: ``"new"`` (the caller owns it now), ``"duplicate"`` (done
    before with the same content; ``receipt`` is the stored receipt of a
    command, ``None`` for an event), ``"in_progress"`` (another caller holds
    it) or ``"conflict"`` (the same id with other content).
    """

    status: ClaimStatus
    receipt: bytes | None = None


class ReplayPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of :meth:`ReplayLog.page`: the ``events`` (each notification's
    bytes, in cursor order) after the requested cursor, ``cursor`` the last
    one's cursor (the requested cursor when empty) and ``has_more`` whether
    newer events remain."""

    events: list[bytes]
    cursor: int
    has_more: bool


# -- errors ------------------------------------------------------------------------------


class StoreConflict(Exception):
    """The same key with other content: a journal entry recorded again with
    another request or settled with another outcome, a commit that does not
    match the held claim or the stored receipt, a release of a committed
    receipt. Nothing was changed. ``str(error)`` names the key."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class UnknownEntry(LookupError):
    """A key that must exist does not (settling a journal entry never
    recorded, setting the status of an event never recorded). Nothing was
    changed. ``str(error)`` names the key."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


# -- digests -----------------------------------------------------------------------------


def command_digest(request: Request) -> bytes:
    """The 32-byte SHA-256 digest of what makes two deliveries of a command
    the same command: its ``method``, ``params``, ``project_ref`` and
    ``task_ref``, in canonical JSON (every object's keys sorted, no
    whitespace; numbers as on the wire, so ``1`` and ``1.0`` differ).

    ``id``, ``correlation_id`` and ``causation_id`` are left out (they
    differ between delivery attempts), and so is ``command_id`` (the key the
    digest is stored under). Key order and whitespace on the wire do not
    change the digest; another value anywhere in ``params`` does. Stable
    across processes and releases: store it.

    Raises:
        TypeError: ``request`` is not a :class:`~samgita_protocol.Request`.
    """
    if not isinstance(request, Request):
        raise wrong_type("request", request, "a Request")
    content = msgspec.structs.replace(
        request, id="", correlation_id="", command_id=UNSET, causation_id=UNSET
    )
    return hashlib.sha256(canonical(content)).digest()


def event_digest(event: Event) -> bytes:
    """The 32-byte SHA-256 digest of an event's original content: every
    field but ``delivery_attempt_id`` (fresh for each delivery), in the
    canonical JSON of :func:`command_digest`. A retry
    (:meth:`Event.retry <samgita_protocol.Event.retry>`) has the same
    digest; changed content under the same ``event_id`` has another.

    Raises:
        TypeError: ``event`` is not an :class:`~samgita_protocol.Event`.
    """
    if not isinstance(event, Event):
        raise wrong_type("event", event, "an Event")
    content = msgspec.structs.replace(event, delivery_attempt_id="")
    return hashlib.sha256(canonical(content)).digest()


# -- the interfaces ----------------------------------------------------------------------


@runtime_checkable
class CommandJournal(Protocol):
    """The client's journal of mutations (requirement text: "the caller must
    durably journal identities and reconcile them").

    Record a mutation *before* handing its bytes to the transport; settle it
    when its response arrives (``"answered"``) or when
    ``Client.resolve_uncertain`` learned its outcome. After a disconnect, an
    expiry or a process restart, :meth:`unsettled` is the list of uncertain
    commands. The journal never sends anything, and nothing in this library
    re-sends an entry: reconcile each one with the host.
    """

    @property
    def durable(self) -> bool:
        """Whether what the store acknowledged survives a process crash."""
        ...

    def record(
        self, host_id: str, request: Request, data: bytes, *, now: float | None = None
    ) -> None:
        """Record the mutation ``request`` (its bytes ``data``) for
        ``host_id``, keyed by ``(host_id, request.id)``, at ``now``.
        Recording the identical entry again does nothing.

        Raises:
            TypeError, ValueError: a wrong argument (``request`` without a
                ``command_id`` is ``ValueError``).
            StoreConflict: the key holds another command, method or data.
            ProtocolError: ``limit_exceeded`` when ``data`` is larger than
                the store's ``max_message_bytes``.
        """
        ...

    def settle(
        self,
        host_id: str,
        request_id: str,
        outcome: Outcome,
        *,
        now: float | None = None,
    ) -> None:
        """Record the ``outcome`` of an entry, settled at ``now``; it is no
        longer unsettled. Settling with the same outcome again does nothing.

        Raises:
            TypeError, ValueError: a wrong argument.
            UnknownEntry: no entry has this key.
            StoreConflict: the entry was settled with another outcome.
        """
        ...

    def unsettled(self, host_id: str) -> list[JournalEntry]:
        """Every entry of ``host_id`` without an outcome, in record order."""
        ...

    def forget_settled(self, host_id: str, older_than: float) -> int:
        """Remove the entries of ``host_id`` settled before the Unix time
        ``older_than``; return how many. Unsettled entries are never
        removed."""
        ...


@runtime_checkable
class Inbox(Protocol):
    """The host's inbox: deduplicates commands by ``command_id`` and events
    by ``event_id``, per ``scope`` (the host's identity).

    A command is claimed with its content digest (:func:`command_digest`)
    before its handler runs, then its receipt (the response's bytes) is
    committed, or the claim released when the handler failed before any
    effect. The lease bounds how long a crashed holder blocks the command:
    once it has expired, the same command may be claimed again. A holder
    still running after its lease may therefore run beside the next one:
    choose a lease longer than the longest handler, or commit the receipt in
    the same transaction as the effects where the backend allows it
    (``SqliteStore.transaction``), which needs no lease at all.
    """

    @property
    def durable(self) -> bool:
        """Whether a committed receipt survives a process crash: only then
        may the host answer ``acceptance: "durable"``."""
        ...

    def claim(
        self,
        scope: str,
        command_id: str,
        digest: bytes,
        *,
        lease: float,
        now: float | None = None,
    ) -> Claim:
        """Claim ``command_id`` with content ``digest`` until ``now +
        lease``, atomically (also across processes on a shared backend):

        * ``new``: the caller holds it (never claimed, released, or its
          lease expired with the same digest);
        * ``duplicate``: committed with this digest; ``receipt`` is the
          stored receipt;
        * ``in_progress``: held with this digest and the lease not expired;
        * ``conflict``: claimed or committed with another digest.

        Raises:
            TypeError, ValueError: a wrong argument (``lease`` must be a
                positive number of seconds).
        """
        ...

    def commit(
        self, scope: str, command_id: str, digest: bytes, receipt: bytes
    ) -> None:
        """Turn the held claim into the committed ``receipt`` (also after
        its lease expired, while no one else claimed it). Committing the
        identical receipt again does nothing.

        Raises:
            TypeError, ValueError: a wrong argument.
            StoreConflict: the command is not claimed, is claimed with
                another digest, or is committed with another receipt.
            ProtocolError: ``limit_exceeded`` when ``receipt`` is larger
                than the store's ``max_message_bytes``.
        """
        ...

    def release(self, scope: str, command_id: str, digest: bytes) -> None:
        """Give up a held claim (its handler failed before any effect): the
        next claim is ``new``. Releasing what is not held does nothing.

        Raises:
            TypeError, ValueError: a wrong argument.
            StoreConflict: the command is committed, or held with another
                digest.
        """
        ...

    def record_event(
        self, scope: str, event_id: str, digest: bytes, *, status: EventStatus
    ) -> Claim:
        """Record ``event_id`` with content ``digest`` (:func:`event_digest`)
        and processing ``status``: ``new`` (recorded now), ``duplicate``
        (recorded before with this digest; its status is unchanged, read it
        with :meth:`event_status`) or ``conflict`` (recorded with another
        digest). ``receipt`` is always ``None``.

        Raises:
            TypeError, ValueError: a wrong argument.
        """
        ...

    def event_status(self, scope: str, event_id: str) -> EventStatus | None:
        """The processing status of a recorded event, ``None`` when it was
        never recorded."""
        ...

    def set_event_status(self, scope: str, event_id: str, status: EventStatus) -> None:
        """Set the processing status of a recorded event.

        Raises:
            TypeError, ValueError: a wrong argument.
            UnknownEntry: the event was never recorded.
        """
        ...


@runtime_checkable
class ReplayLog(Protocol):
    """The host's log of sequenced notifications, for many streams: the
    store assigns each stream's contiguous cursors (1, 2, ...) and serves
    ``stream/resume`` pages. Retention is explicit (:meth:`trim`); cursors
    never restart, also after everything was trimmed."""

    @property
    def durable(self) -> bool:
        """Whether appended events survive a process crash."""
        ...

    def append(
        self,
        stream_id: str,
        encode_at: Callable[[int], bytes],
        *,
        now: float | None = None,
    ) -> int:
        """Assign the next cursor of ``stream_id`` atomically (also across
        processes on a shared backend), call ``encode_at(cursor)`` for the
        notification's bytes at that cursor, store them (appended at
        ``now``) and return the cursor.

        ``encode_at`` is called once per attempt: a backend that guesses
        the cursor (PostgreSQL, from the one it assigned last) calls it
        again, with the next cursor it gets, when another writer took the
        guessed one. The bytes of the last call are the ones stored, at
        the returned cursor: make it a pure function of the cursor, cheap
        to repeat. It runs while the store holds its lock: keep it short,
        and do not call the store from it. If it raises, nothing is stored
        and the error propagates.

        Raises:
            TypeError: ``encode_at`` returned something other than ``bytes``.
            ProtocolError: ``limit_exceeded`` when a page of this event alone
                (``PAGE_OVERHEAD`` included) would pass the store's
                ``max_message_bytes``, or the stream reached ``MAX_CURSOR``.
            RuntimeError: ``encode_at`` appended to the same store.
        """
        ...

    def page(
        self,
        stream_id: str,
        after: int,
        *,
        max_events: int | None = None,
        max_bytes: int | None = None,
    ) -> ReplayPage:
        """The retained events after cursor ``after``, in order, as
        ``Replay.since`` takes them: at most ``max_events`` (default 128,
        a ``stream/resume`` page), and while ``PAGE_OVERHEAD`` plus their
        sizes plus one byte per event stays within ``max_bytes`` (the
        message budget of the page; default the store's
        ``max_message_bytes``, which every stored event fits).
        ``after == last_cursor`` gives an empty page.

        Raises:
            TypeError, ValueError: a wrong argument.
            ProtocolError: ``invalid_cursor`` when ``after`` is negative or
                beyond the last cursor; ``replay_gap`` when ``after + 1`` is
                no longer retained (``data.first_retained`` names the oldest
                retained cursor); ``limit_exceeded`` when the next event
                alone does not fit in ``max_bytes`` (an empty page that says
                ``has_more`` would make a resume loop spin).
        """
        ...

    def trim(
        self,
        stream_id: str,
        *,
        keep_events: int | None = None,
        keep_bytes: int | None = None,
        older_than: float | None = None,
    ) -> int:
        """Forget the oldest events of ``stream_id`` and return how many: as
        many as any given bound asks, oldest first (retention stays one
        contiguous run of cursors). ``keep_events``: keep at most this many;
        ``keep_bytes``: keep at most this many bytes of events;
        ``older_than``: forget the events appended before this Unix time,
        up to the first one appended at or after it.

        Raises:
            TypeError, ValueError: a wrong argument, or no bound given.
        """
        ...

    def first_cursor(self, stream_id: str) -> int:
        """The oldest retained cursor (``last_cursor + 1`` when none is)."""
        ...

    def last_cursor(self, stream_id: str) -> int:
        """The newest assigned cursor (0 before the first append)."""
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """The client's processed positions, per host and stream: what
    ``Client.checkpoints`` says after ``ack``, restored with
    ``Client(host_id=..., checkpoints=store.load(host_id))``. A checkpoint
    never moves backwards."""

    @property
    def durable(self) -> bool:
        """Whether an advanced checkpoint survives a process crash."""
        ...

    def load(self, host_id: str) -> dict[str, int]:
        """The checkpoints of ``host_id``, by stream."""
        ...

    def advance(self, host_id: str, stream_id: str, cursor: int) -> int:
        """Compare and set, atomically (also across processes on a shared
        backend): store the larger of the stored checkpoint and ``cursor``,
        and return what is stored.

        Raises:
            TypeError, ValueError: a wrong argument (``cursor`` must be an
                int from 0 to ``MAX_CURSOR``).
        """
        ...

    def forget(self, host_id: str, stream_id: str) -> None:
        """Remove the checkpoint of ``stream_id`` (nothing when none)."""
        ...
