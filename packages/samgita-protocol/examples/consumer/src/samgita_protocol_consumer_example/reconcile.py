"""Client-side reconciliation of uncertain project-event commands.

After a disconnect or a timeout, a mutation the client had handed out is
*uncertain*: the host may or may not have applied it, and
``Client.uncertain`` holds it until the caller establishes the outcome. The
library never re-sends it. `Reconciler` asks the host, sans-IO like the
Client it drives:

1. `Reconciler.queries` builds one ``project/event.status`` request per
   uncertain ``project/event.receive`` / ``project/event.report``, each an
   ``Outgoing`` (send each one's ``data`` on the new, initialized
   connection);
2. `Reconciler.settle` takes each effect the Client returns; for the answer to
   a query it calls ``Client.resolve_uncertain`` and returns a `Resolution`:
   ``applied`` when the host knows the event (for a report: when the
   recorded outcome is the report's own ``outcome``; the host keeps one
   report per event), ``not_applied`` when it answers ``not_found`` (or, for
   a report, shows no outcome or another one). Any other end
   of the query (a timeout, another disconnect) resolves nothing; ask again.
3. For a ``not_applied`` delivery, `redelivery` builds the next delivery
   attempt of the same event (``Event.retry``: a fresh
   ``delivery_attempt_id`` and ``command_id``, everything else unchanged),
   an ``Outgoing`` to send like the queries.

A real consumer journals each command durably before sending it and
reconciles from that journal after a process restart; ``Client.uncertain``
lives in memory only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from samgita_protocol import (
    Client,
    Effect,
    ErrorCode,
    ErrorReceived,
    Outgoing,
    Request,
    ResponseReceived,
)

__all__ = ["Reconciler", "Resolution", "redelivery"]

_RECONCILABLE = ("project/event.receive", "project/event.report")


@dataclass(frozen=True, slots=True)
class Resolution:
    """The established outcome of one uncertain command."""

    command: Request
    outcome: Literal["applied", "not_applied"]


def _event_id(command: Request) -> str:
    params: Any = command.params
    if command.method == "project/event.receive":
        return str(params.event.event_id)
    return str(params.event_id)


class Reconciler:
    """Reconciles a Client's uncertain project-event commands with the host."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._asking: dict[str, Request] = {}  # query id -> uncertain command

    @property
    def asking(self) -> int:
        """Queries sent and not yet settled."""
        return len(self._asking)

    def queries(self, *, now: float | None = None) -> list[Outgoing]:
        """One ``project/event.status`` request per uncertain project-event
        command not already being asked about, as ``Client.request`` returns
        it: send each one's ``data``.

        Raises:
            ProtocolError: as ``Client.request`` (for example
                ``not_initialized`` before the new connection is initialized,
                ``limit_exceeded`` when too many requests are pending).
        """
        asked = {command.id for command in self._asking.values()}
        out: list[Outgoing] = []
        for request_id, command in self._client.uncertain.items():
            if command.method not in _RECONCILABLE or request_id in asked:
                continue
            query = self._client.request(
                "project/event.status", {"event_id": _event_id(command)}, now=now
            )
            sent = query.message
            assert isinstance(sent, Request)  # what Client.request builds
            self._asking[sent.id] = command
            out.append(query)
        return out

    def settle(self, effect: Effect) -> Resolution | None:
        """Settle a query from the Client's ``effect``; other effects give ``None``.

        Raises:
            ProtocolError: as ``Client.resolve_uncertain`` (``unknown_uncertain``
                when the command was resolved some other way meanwhile).
        """
        if not isinstance(effect, ResponseReceived | ErrorReceived):
            return None
        command = self._asking.pop(effect.request.id, None)
        if command is None:
            return None
        if isinstance(effect, ResponseReceived):
            status = effect.result.processing_status
            params: Any = command.params
            applied = (
                command.method == "project/event.receive" or status == params.outcome
            )
            outcome: Literal["applied", "not_applied"] = (
                "applied" if applied else "not_applied"
            )
        elif effect.error.code == ErrorCode.NOT_FOUND:
            outcome = "not_applied"
        else:
            return None  # nothing learned; ask again later
        self._client.resolve_uncertain(command.id, outcome)
        return Resolution(command, outcome)


def redelivery(
    client: Client,
    resolution: Resolution,
    *,
    delivery_attempt_id: str,
    command_id: str,
    now: float | None = None,
) -> Outgoing:
    """The next delivery attempt of a ``not_applied`` ``project/event.receive``,
    as ``Client.request`` returns it: send its ``data``.

    Raises:
        ValueError: ``resolution`` is not a ``not_applied`` delivery.
        ProtocolError: as ``Client.request``.
    """
    command = resolution.command
    if resolution.outcome != "not_applied" or command.method != "project/event.receive":
        raise ValueError("only a not_applied project/event.receive is delivered again")
    params: Any = command.params
    event = params.event.retry(delivery_attempt_id)
    return client.request(
        "project/event.receive", {"event": event}, command_id=command_id, now=now
    )
