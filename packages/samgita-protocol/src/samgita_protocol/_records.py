"""What a :class:`~samgita_protocol.Client` keeps in the caller's stores
(private): its command journal and its checkpoint store, under the host's
``host_id``.

Requirement text: "Never blindly repeat a mutation, including after
process restart; the caller must durably journal identities and reconcile
them. The in-memory uncertainty map cannot replace that journal." and
"Persist ``Client.checkpoints`` and restore [them] after process restart."
A Client given the stores (``Client(host_id=..., journal=...,
checkpoint_store=...)``) does both itself, at the one place each rule
lives:

* a mutation is recorded in the journal after every check passed and
  before the request is handed out (``Client.request``); if the journal
  raises, the request is not handed out and nothing changed;
* a response that settles a mutation settles its entry ``"answered"``
  before the client forgets it (``Client.receive``); a response that keeps
  it uncertain (an invalid result, a remote ``internal_error``) leaves the
  entry unsettled;
* ``Client.resolve_uncertain`` settles the entry with the outcome it was
  given before the hold is cleared;
* a new Client takes every unsettled entry as an uncertain command (reason
  ``"restart"``), never sent again, and its checkpoints from the store;
* an acknowledgement advances the stored checkpoint before the client's
  own, and ``forget_stream`` forgets it in the store first.

So a store that raises leaves the client as it was, and the journal never
says less than the client knows: an entry is unsettled whenever the
client might still hold the command as pending or uncertain. The stores
are the caller's I/O, called synchronously (as a ``Handler`` is called by a
``Server``); their interfaces and backends are in
``samgita_protocol.stores``, which this module does not import (importing
``samgita_protocol`` loads no store).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Final, Literal

from ._codec import decode
from ._errors import ProtocolError
from ._options import wrong_type
from ._schema import Request

if TYPE_CHECKING:
    from .stores import CheckpointStore, CommandJournal

__all__ = ["RESTART", "Records", "id_prefix"]

#: What makes an object usable as each store: the methods a Client calls.
_JOURNAL_METHODS: Final = ("record", "settle", "unsettled")
_CHECKPOINT_METHODS: Final = ("load", "advance", "forget")

#: Why a command restored from a journal is uncertain.
RESTART: Final = "restart"


def _store(name: str, value: object, methods: tuple[str, ...], kind: str) -> None:
    if not all(callable(getattr(value, m, None)) for m in methods):
        raise wrong_type(name, value, f"a {kind} (samgita_protocol.stores) or None")


def id_prefix(journal: object) -> str:
    """The prefix of a Client's default request ids: ``"c"``, and with a
    journal ``"c"`` plus 8 random hex digits and a dot. A journal keeps
    every id it recorded, so ids must not repeat across process restarts,
    which a generation counter (starting at 1 in every process) does."""
    return "c" if journal is None else f"c{secrets.token_hex(4)}."


class Records:
    """A Client's stores, bound to ``host_id`` (see the module docstring).

    Raises:
        TypeError: ``journal`` or ``checkpoint_store`` lacks the store
            methods a Client calls.
        ValueError: ``host_id`` is missing (the stores are keyed by it), or
            ``checkpoints`` are given beside a ``checkpoint_store``.
    """

    __slots__ = ("_checkpoints", "_host_id", "_journal")

    def __init__(
        self,
        host_id: str | None,
        journal: CommandJournal | None,
        checkpoint_store: CheckpointStore | None,
        checkpoints: object,
    ) -> None:
        if journal is not None:
            _store("journal", journal, _JOURNAL_METHODS, "CommandJournal")
        if checkpoint_store is not None:
            _store(
                "checkpoint_store",
                checkpoint_store,
                _CHECKPOINT_METHODS,
                "CheckpointStore",
            )
            if checkpoints is not None:
                raise ValueError(
                    "expected checkpoints or checkpoint_store, got both: the "
                    "checkpoints are loaded from the store"
                )
        if host_id is None:
            given = "journal" if journal is not None else "checkpoint_store"
            raise ValueError(
                f"expected host_id to be given with {given}, got: None (the "
                "stores keep each host's records apart)"
            )
        self._host_id = host_id
        self._journal = journal
        self._checkpoints = checkpoint_store

    # -- restoring ------------------------------------------------------------------

    def checkpoints(self) -> dict[str, int] | None:
        """The stored checkpoints of the host, ``None`` without a store."""
        store = self._checkpoints
        return None if store is None else store.load(self._host_id)

    def uncertain(self, max_uncertain: int, max_message_bytes: int) -> list[Request]:
        """The journal's unsettled commands of the host, in record order.

        Raises:
            ValueError: more than ``max_uncertain`` of them (reconcile them
                with a Client whose ``max_uncertain_commands`` holds them),
                or an entry that is not a mutation request.
        """
        if self._journal is None:
            return []
        entries = self._journal.unsettled(self._host_id)
        if len(entries) > max_uncertain:
            raise ValueError(
                f"expected the journal to hold at most max_uncertain_commands="
                f"{max_uncertain} unsettled commands of host {self._host_id!r}, "
                f"got: {len(entries)} (raise max_uncertain_commands to reconcile them)"
            )
        requests = []
        for entry in entries:
            found: object
            try:
                found = decode(entry.data, max_message_bytes=max_message_bytes)
            except ProtocolError as exc:
                found = exc
            if not isinstance(found, Request) or found.id != entry.request_id:
                raise ValueError(
                    f"expected journal entry {entry.request_id!r} to hold the "
                    f"request it was recorded with, got: {found!r}"
                )
            requests.append(found)
        return requests

    # -- recording --------------------------------------------------------------------

    def record(self, request: Request, data: bytes) -> None:
        """Record a mutation about to be handed out (no-op without a journal)."""
        if self._journal is not None:
            self._journal.record(self._host_id, request, data)

    def settle(
        self, request_id: str, outcome: Literal["answered", "applied", "not_applied"]
    ) -> None:
        """Settle a journal entry (no-op without a journal)."""
        if self._journal is not None:
            self._journal.settle(self._host_id, request_id, outcome)

    def advance(self, stream_id: str, cursor: int) -> None:
        """Advance a stored checkpoint (no-op without a checkpoint store)."""
        if self._checkpoints is not None:
            self._checkpoints.advance(self._host_id, stream_id, cursor)

    def forget(self, stream_id: str) -> None:
        """Forget a stored checkpoint (no-op without a checkpoint store)."""
        if self._checkpoints is not None:
            self._checkpoints.forget(self._host_id, stream_id)
