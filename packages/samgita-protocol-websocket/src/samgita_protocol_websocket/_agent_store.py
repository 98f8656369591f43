"""The fake Agent's store: what ``samgita-fake-agent --store SPEC`` names, opened (private).

The Agent keeps its command receipts and project events in an ``Inbox``
and its streamed notifications in a ``ReplayLog``
(``samgita_protocol.stores``). Any object with those two attributes will
do (:class:`AgentStore`): ``SqliteStore`` or ``PostgresStore`` as it is,
or :func:`open_store`'s :class:`OpenedStore`.

A SPEC is ``memory`` (the in-memory reference stores, not durable),
``sqlite:PATH`` (one SQLite file, created when missing) or a PostgreSQL
URI (``postgresql://...``, or ``postgres://...``). Each backend is imported
only when its SPEC is opened: importing this module opens nothing and
imports no backend (the PostgreSQL one needs an optional dependency).

Also here: what a command's content is for its digest
(:func:`command_request`) and how a command the inbox did not hand out
is answered (:func:`refused`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

import msgspec
import samgita_protocol as core
from samgita_protocol.stores import (
    ClaimStatus,
    Inbox,
    MemoryInbox,
    MemoryReplayLog,
    ReplayLog,
)

__all__ = [
    "AgentStore",
    "OpenedStore",
    "command_request",
    "memory_store",
    "open_store",
    "refused",
    "shown",
]

#: What --store accepts, for messages.
STORE_SPECS: Final = "memory, sqlite:PATH or postgresql://..."

_POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
_POSTGRES_MODULE: Final = "samgita_protocol.stores.postgres"


class AgentStore(Protocol):
    """Where a fake Agent keeps its records: an ``inbox`` (command receipts
    and project events) and a ``replay_log`` (its streams). ``SqliteStore``,
    ``PostgresStore`` and :class:`OpenedStore` are ones."""

    @property
    def inbox(self) -> Inbox:
        """The command receipts and project events; ``inbox.durable``
        decides ``acceptance: "durable"``."""
        ...

    @property
    def replay_log(self) -> ReplayLog:
        """The streamed notifications, by stream, served by ``stream/resume``."""
        ...


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class OpenedStore:
    """A store opened from a SPEC by :func:`open_store`: its ``inbox`` and
    ``replay_log``, ``close()`` to close what was opened (nothing for
    ``memory``) and ``name``, the SPEC without a password, for logs."""

    name: str
    inbox: Inbox
    replay_log: ReplayLog
    close: Callable[[], None] = _nothing


def memory_store() -> OpenedStore:
    """Fresh in-memory stores (the default: nothing survives the process)."""
    return OpenedStore("memory", MemoryInbox(), MemoryReplayLog())


def shown(spec: str) -> str:
    """``spec`` as logs and messages may show it: a URI's password (in its
    user part or its ``password`` parameter) hidden."""
    if not spec.startswith(_POSTGRES_SCHEMES):
        return spec
    try:
        parts = urlsplit(spec)
        password = parts.password
    except ValueError:  # not a URI urlsplit can read: show none of it
        return spec.split("://", 1)[0] + "://..."
    netloc, query = parts.netloc, parts.query
    if password is not None:
        netloc = netloc.replace(":" + password + "@", ":***@", 1)
    fields = parse_qsl(query, keep_blank_values=True)
    if any(name == "password" for name, _ in fields):
        hidden = [(n, "***" if n == "password" else v) for n, v in fields]
        query = urlencode(hidden, safe="/*")
    # Not geturl(): it drops the "//" of an empty host (postgresql:///db).
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def _postgres(uri: str) -> OpenedStore:
    # An older samgita-protocol 0.1 has no PostgreSQL backend at all; this
    # one raises ImportError, saying what to install, without psycopg.
    if importlib.util.find_spec(_POSTGRES_MODULE) is None:
        raise ValueError(
            "the PostgreSQL backend is not available in this samgita-protocol "
            f"(no {_POSTGRES_MODULE}): upgrade it, or use memory or sqlite:PATH"
        )
    from samgita_protocol.stores.postgres import PostgresStore

    store = PostgresStore(uri)
    return OpenedStore(shown(uri), store.inbox, store.replay_log, store.close)


def open_store(spec: str) -> OpenedStore:
    """Open the store a SPEC names: ``memory``, ``sqlite:PATH`` or
    ``postgresql://...`` (see the module docstring).

    Raises:
        TypeError: ``spec`` is not a ``str``.
        ValueError: not one of those forms, an empty PATH, or a backend
            this installation does not have; the message says which.
        sqlite3.Error, OSError, ...: the backend cannot open it (for
            example a missing directory); the backend's own message.
    """
    if not isinstance(spec, str):
        raise TypeError(f"expected spec to be a str, got: {spec!r}")
    if spec == "memory":
        return memory_store()
    if spec.startswith("sqlite:"):
        path = spec.removeprefix("sqlite:")
        if not path:
            raise ValueError("sqlite: needs a file path (sqlite:PATH)")
        # Imported here: a backend is imported only when it is used.
        from samgita_protocol.stores.sqlite import SqliteStore

        sqlite = SqliteStore(path)
        return OpenedStore(spec, sqlite.inbox, sqlite.replay_log, sqlite.close)
    if spec.startswith(_POSTGRES_SCHEMES):
        return _postgres(spec)
    raise ValueError(f"expected {STORE_SPECS}, got {spec!r}")


# -- the receipts of commands --------------------------------------------------------


def command_request(
    params: msgspec.Struct, context: core.RequestContext
) -> core.Request:
    """The request a handler call answers, as ``command_digest`` reads it
    (its method, params and refs: the content of the command)."""
    return core.Request(
        method=context.method,
        id=context.id,
        correlation_id=context.correlation_id,
        params=params,
        command_id=context.command_id or msgspec.UNSET,
        project_ref=context.project_ref or msgspec.UNSET,
        task_ref=context.task_ref or msgspec.UNSET,
    )


def refused(status: ClaimStatus, command_id: str) -> core.ProtocolError:
    """The answer to a command the inbox did not hand to this delivery:
    ``conflict`` both ways (docs/protocol.md: "host: changed content under
    an existing identity"; a held command is an identity in use)."""
    if status == "in_progress":
        return core.ProtocolError(
            core.ErrorCode.CONFLICT,
            "another delivery of this command is in progress; its outcome is not known yet",
            data={"command_id": command_id, "status": "in_progress"},
        )
    return core.ProtocolError(
        core.ErrorCode.CONFLICT,
        "changed content under an existing command_id",
        data={"command_id": command_id},
    )
