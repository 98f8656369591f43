"""A project-events inbox: a `samgita_protocol.Handler` for ``project_events.v1``.

What a host must add on top of the protocol library, in a few lines:

* **Event identity.** Each event is stored once by ``event_id``; every
  ``delivery_attempt_id`` it arrived with is remembered (a retry made with
  ``Event.retry`` keeps the identity). Changed original content under a known
  ``event_id`` is ``conflict``.
* **Command receipts.** The library may hand the host the same mutation twice
  (the Server handles an identical request again, and a client that
  reconciled an uncertain command may deliver it again under the same
  ``command_id``). The inbox keeps a receipt per ``command_id``: the same
  command again gets the stored result without being applied again; other
  content under a known ``command_id`` is ``conflict``.
* **Honest acknowledgements.** Acceptance is ``received`` (this inbox lives
  in memory, it is not durable); reports are ``recorded``, with management
  acceptance ``not_requested``, or ``rejected`` when a transition is
  requested (a consumer has no authority over the project). An event has
  one report: the same report again is recorded again, a different one is
  ``conflict``.

A real host keeps these maps in its database and writes the receipt in the
same transaction as the effect; here they are dictionaries.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from samgita_protocol import (
    ErrorCode,
    Event,
    EventReceiveResult,
    EventReportParams,
    EventReportResult,
    EventStatusResult,
    Handler,
    ProtocolError,
    RequestContext,
    request_methods,
)

__all__ = ["Inbox"]

_CANONICAL = msgspec.json.Encoder(order="sorted")


def _fingerprint(method: str, params: Any) -> bytes:
    return _CANONICAL.encode([method, params])


class Inbox(Handler):
    """An in-memory project-events inbox that deduplicates by ``event_id``
    and ``command_id``.

    Attributes:
        events: the stored events by ``event_id`` (as first received).
        attempts: delivery attempts per ``event_id``, oldest first.
        reports: the recorded report per ``event_id``.
        applied: the ``command_id`` of every mutation actually applied, in
            order (a deduplicated repeat does not appear twice).
    """

    def __init__(self) -> None:
        self.events: dict[str, Event] = {}
        self.attempts: dict[str, list[str]] = {}
        self.reports: dict[str, EventReportParams] = {}
        self.applied: list[str] = []
        self._receipts: dict[str, tuple[bytes, Any]] = {}

    @property
    def methods(self) -> Collection[str]:
        """The request methods of ``project_events.v1``."""
        return request_methods("project_events.v1")

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        """Answer one project-events request.

        Raises:
            ProtocolError: ``conflict`` (changed content under a known
                ``event_id`` or ``command_id``, or a different second report
                of an event), ``not_found`` (an unknown event).
        """
        command_id = context.command_id
        if command_id is None:  # project/event.status, a read
            return self._status(params.event_id)
        fingerprint = _fingerprint(method, params)
        receipt = self._receipts.get(command_id)
        if receipt is not None:
            if receipt[0] != fingerprint:
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    "command_id already used for another command",
                    data={"command_id": command_id},
                )
            return receipt[1]  # the same command again: not applied twice
        result: EventReceiveResult | EventReportResult
        if method == "project/event.receive":
            result = self._receive(params.event)
        else:
            result = self._report(params)
        self._receipts[command_id] = (fingerprint, result)
        self.applied.append(command_id)
        return result

    def _receive(self, event: Event) -> EventReceiveResult:
        stored = self.events.get(event.event_id)
        if stored is None:
            self.events[event.event_id] = event
            self.attempts[event.event_id] = [event.delivery_attempt_id]
        elif _CANONICAL.encode(
            stored.retry(event.delivery_attempt_id)
        ) != _CANONICAL.encode(event):
            raise ProtocolError(
                ErrorCode.CONFLICT,
                "event_id already received with different content",
                data={"event_id": event.event_id},
            )
        elif event.delivery_attempt_id not in self.attempts[event.event_id]:
            self.attempts[event.event_id].append(event.delivery_attempt_id)
        return EventReceiveResult(
            event_id=event.event_id,
            delivery_attempt_id=event.delivery_attempt_id,
            acceptance="received",
            processing_status=self._processing(event.event_id),
        )

    def _processing(self, event_id: str) -> Any:
        report = self.reports.get(event_id)
        return "pending" if report is None else report.outcome

    def _status(self, event_id: str) -> EventStatusResult:
        if event_id not in self.events:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, "unknown event", data={"event_id": event_id}
            )
        return EventStatusResult(
            event_id=event_id,
            acceptance="received",
            processing_status=self._processing(event_id),
        )

    def _report(self, params: EventReportParams) -> EventReportResult:
        if params.event_id not in self.events:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, "unknown event", data={"event_id": params.event_id}
            )
        recorded = self.reports.get(params.event_id)
        if recorded is not None and _CANONICAL.encode(recorded) != _CANONICAL.encode(
            params
        ):
            # One outcome per event: a different second report would make the
            # recorded outcome (and a reconciler's evidence) ambiguous.
            raise ProtocolError(
                ErrorCode.CONFLICT,
                "event already has a different report",
                data={"event_id": params.event_id},
            )
        self.reports[params.event_id] = params
        requested = params.management_request is not msgspec.UNSET
        return EventReportResult(
            event_id=params.event_id,
            report_status="recorded",
            management_acceptance="rejected" if requested else "not_requested",
        )
