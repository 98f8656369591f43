"""Test doubles: `FakeHost`, an in-memory `Handler` for every capability group.

Used by this package's tests, the consumer example and the WebSocket
package's fake Agent; its API below is kept stable.

`FakeHost` is a consumer host, deterministic and never durable:

* ``project_events.v1``: an event is stored once per ``event_id``
  (``acceptance: received``, ``processing_status: pending`` until a report
  records an outcome); a redelivery with any ``delivery_attempt_id`` and the
  same original content is answered again, changed content is ``conflict``.
  Reports need a known event; a requested management transition is
  ``rejected`` (a fake host has no authority), otherwise ``not_requested``;
  a different second report for the same event is ``conflict``.
* ``sessions.v1`` and ``streaming.v1``: threads ``thread-<n>`` and turns
  ``turn-<n>``. ``turn/start`` answers the turn ``in_progress`` and then
  emits ``turn/started``, ``item/started``, one ``item/delta`` per word of
  ``"echo: <input text>"``, ``item/completed`` and ``turn/completed`` (with
  ``complete_turns=False`` only ``turn/started``, and the turn stays in
  progress); ``turn/steer`` of an in-progress turn emits one more item the
  same way. ``item/*`` notifications are emitted only when
  ``streaming.v1`` was negotiated. Every emitted notification is sequenced
  by the host's `Replay` (``replay``, stream ``stream_id``), so
  ``stream/resume`` serves them page by page, across connections that
  share this host. ``turn/interrupt``: ``interrupted`` (or ``requested``,
  see ``interrupt_status``) for an in-progress turn, which then ends
  ``interrupted`` with a ``turn/completed``; ``already_finished`` for a
  finished one.
* ``approvals.v1``: an incoming ``approval/request`` is always denied;
  server-initiated approvals go through `request_approval`, and their
  outcomes are recorded in `responses`. It never approves anything.
* ``cancellation.v1``: requests are handled synchronously, so every
  ``request/cancel`` is ``already_finished``.

Incoming notifications are recorded in `notifications`. Outside a request,
`publish` emits a notification through the same log (``thread/closed``, for
example).
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from ._content import canonical
from ._errors import ErrorCode, ProtocolError
from ._handler import Handler, NotificationContext, RequestContext
from ._methods import (
    CAPABILITY_GROUPS,
    request_methods,
)
from ._options import DEFAULT_MAX_MESSAGE_BYTES
from ._outgoing import Outgoing
from ._params import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    CancelParams,
    CancelResult,
    EventReceiveParams,
    EventReceiveResult,
    EventReportParams,
    EventReportResult,
    EventStatusParams,
    EventStatusResult,
    ItemCompletedParams,
    ItemDeltaParams,
    ItemStartedParams,
    StreamResumeParams,
    StreamResumeResult,
    ThreadReadParams,
    ThreadReadResult,
    ThreadResumeParams,
    ThreadResumeResult,
    ThreadStartedParams,
    ThreadStartParams,
    ThreadStartResult,
    TurnCompletedParams,
    TurnInterruptParams,
    TurnInterruptResult,
    TurnStartedParams,
    TurnStartParams,
    TurnStartResult,
    TurnSteerParams,
    TurnSteerResult,
)
from ._replay import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_EVENTS,
    Replay,
)
from ._schema import (
    UNSET,
    Event,
    Item,
    Notification,
    Request,
    Thread,
    Turn,
)

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["ALL_GROUPS", "FakeHost", "cost_ratio"]

#: Every defined capability group, in definition order.
ALL_GROUPS: Final = tuple(CAPABILITY_GROUPS)

_WORDS: Final = re.compile(r"\S+\s*")


def _not_found(what: str, **data: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, f"unknown {what}", data=dict(data))


class FakeHost(Handler):
    """An in-memory, deterministic host for every capability group.

    A `Handler` in the operation form (one method per request method, such
    as ``thread_start``), serving the operations of ``capabilities``.

    Args:
        capabilities: the groups it serves (default: all); pass the same to
            the `Server` (``Server(host, capabilities=host.capabilities)``).
        stream_id: the stream of its `Replay` log.
        now: the ``created_at`` timestamp of every thread.
        complete_turns: whether ``turn/start`` runs the turn to completion
            at once (default) or leaves it in progress.
        interrupt_status: what ``turn/interrupt`` answers for an in-progress
            turn: ``"interrupted"`` (default) or ``"requested"``.
        max_events, max_bytes: bounds of the `Replay` log.
        max_message_bytes: the ``max_message_bytes`` of the `Server` that
            serves it (1 MiB): every ``stream/resume`` page fits in one
            message of this size.

    Raises:
        ValueError: an undefined group or a bad option value.
    """

    def __init__(
        self,
        *,
        capabilities: Iterable[str] = ALL_GROUPS,
        stream_id: str = "fake-stream",
        now: str = "2026-01-01T00:00:00Z",
        complete_turns: bool = True,
        interrupt_status: Literal["interrupted", "requested"] = "interrupted",
        max_events: int = DEFAULT_MAX_EVENTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        groups = tuple(dict.fromkeys(capabilities))
        unknown = [g for g in groups if g not in CAPABILITY_GROUPS]
        if unknown:
            raise ValueError(f"capabilities: undefined groups {unknown!r}")
        if interrupt_status not in ("interrupted", "requested"):
            raise ValueError(
                f"expected interrupt_status 'interrupted' or 'requested', got: {interrupt_status!r}"
            )
        self.capabilities: tuple[str, ...] = groups
        self._methods = frozenset().union(*(request_methods(g) for g in groups))
        self.now = now
        self.complete_turns = complete_turns
        self.interrupt_status = interrupt_status
        self.replay = Replay(
            stream_id,
            max_events=max_events,
            max_bytes=max_bytes,
            max_message_bytes=max_message_bytes,
        )
        #: Stored events by ``event_id`` (as first received).
        self.events: dict[str, Event] = {}
        #: Delivery attempts per ``event_id``, oldest first.
        self.attempts: dict[str, list[str]] = {}
        #: Recorded reports by ``event_id``.
        self.reports: dict[str, EventReportParams] = {}
        #: Threads and turns by id, in creation order.
        self.threads: dict[str, Thread] = {}
        self.turns: dict[str, Turn] = {}
        #: Every validated notification received, in order.
        self.notifications: list[Notification] = []
        #: ``(request, outcome)`` of every server-initiated request, in order.
        self.responses: list[tuple[Request, Any]] = []
        self._counter = 0

    @property
    def methods(self) -> Collection[str]:
        """The request methods of `capabilities` (it defines every
        operation, and serves those of the groups it was given)."""
        return self._methods

    # -- Handler ----------------------------------------------------------------
    # Written in the operation form: one method per request method (see the
    # module docstring for each; they raise ``conflict``, ``not_found`` and,
    # from `Replay`, ``replay_gap`` / ``invalid_cursor``).

    def handle_notification(
        self, method: str, params: Any, context: NotificationContext
    ) -> None:
        """Record the notification in `notifications`."""
        self.notifications.append(context.notification)

    def handle_response(self, request: Request, outcome: Any) -> None:
        """Record ``(request, outcome)`` in `responses`."""
        self.responses.append((request, outcome))

    # -- helpers for the host application ----------------------------------------

    def request_approval(
        self,
        server: Server,
        *,
        approval_id: str,
        action: Any,
        deadline: str,
        thread_id: str | None = None,
        turn_id: str | None = None,
        reason: str | None = None,
        now: float | None = None,
    ) -> Outgoing:
        """Ask the peer to approve ``action`` (``server.request`` of
        ``approval/request``); the outcome lands in `responses`.

        ``action`` is an `Action` or a mapping converted to it.

        Raises:
            ProtocolError: as `Server.request`.
        """
        fields: dict[str, Any] = {
            "approval_id": approval_id,
            "action": action if isinstance(action, msgspec.Struct) else dict(action),
            "deadline": deadline,
        }
        for key, value in (
            ("thread_id", thread_id),
            ("turn_id", turn_id),
            ("reason", reason),
        ):
            if value is not None:
                fields[key] = value
        if isinstance(action, msgspec.Struct):
            params: Any = ApprovalRequestParams(**fields)
        else:
            params = fields
        return server.request("approval/request", params, now=now)

    def publish(self, server: Server, method: str, params: Any) -> Outgoing:
        """Emit a notification outside any request (for example
        ``thread/closed``), sequenced by the host's `Replay` like everything
        the host emits: ``server.notify`` validates it with the next cursor,
        then the log retains it. Send the returned `Outgoing`'s ``data``.

        Raises:
            ProtocolError: as `Server.notify` (nothing is logged then).
        """
        outgoing = server.notify(
            method,
            params,
            stream_id=self.replay.stream_id,
            cursor=self.replay.last_cursor + 1,
        )
        message = outgoing.message
        assert type(message) is Notification
        self.replay.append(message)
        return outgoing

    def decisions(self) -> Mapping[str, Any]:
        """Outcomes of server-initiated approvals by ``approval_id``: the
        `ApprovalRequestResult` or the `ProtocolError`."""
        return {
            request.params.approval_id: outcome
            for request, outcome in self.responses
            if request.method == "approval/request"
        }

    # -- project_events.v1 ---------------------------------------------------------

    @staticmethod
    def _original(event: Event) -> bytes:
        return canonical(msgspec.structs.replace(event, delivery_attempt_id="-"))

    def project_event_receive(
        self, params: EventReceiveParams, context: RequestContext
    ) -> EventReceiveResult:
        event: Event = params.event
        stored = self.events.get(event.event_id)
        if stored is None:
            self.events[event.event_id] = event
            self.attempts[event.event_id] = [event.delivery_attempt_id]
        elif self._original(stored) != self._original(event):
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
            processing_status=self._status(event.event_id),
        )

    def _status(self, event_id: str) -> Any:
        report = self.reports.get(event_id)
        return "pending" if report is None else report.outcome

    def project_event_status(
        self, params: EventStatusParams, context: RequestContext
    ) -> EventStatusResult:
        if params.event_id not in self.events:
            raise _not_found("event", event_id=params.event_id)
        return EventStatusResult(
            event_id=params.event_id,
            acceptance="received",
            processing_status=self._status(params.event_id),
        )

    def project_event_report(
        self, params: EventReportParams, context: RequestContext
    ) -> EventReportResult:
        event_id = params.event_id
        if event_id not in self.events:
            raise _not_found("event", event_id=event_id)
        recorded = self.reports.get(event_id)
        if recorded is not None and canonical(recorded) != canonical(params):
            raise ProtocolError(
                ErrorCode.CONFLICT,
                "a different report is already recorded for this event",
                data={"event_id": event_id},
            )
        self.reports[event_id] = params
        return EventReportResult(
            event_id=event_id,
            report_status="recorded",
            management_acceptance=(
                "not_requested" if params.management_request is UNSET else "rejected"
            ),
        )

    # -- sessions.v1 / streaming.v1 ---------------------------------------------------

    def _next(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def _emit(self, context: RequestContext, method: str, params: Any) -> None:
        # Validated (and queued) first with the cursor the log will assign,
        # then retained: a notification that cannot be sent is never logged.
        notification = context.notify(
            method,
            params,
            stream_id=self.replay.stream_id,
            cursor=self.replay.last_cursor + 1,
            correlation_id=context.correlation_id,
        )
        self.replay.append(notification)

    def _thread(self, thread_id: str) -> Thread:
        thread = self.threads.get(thread_id)
        if thread is None:
            raise _not_found("thread", thread_id=thread_id)
        return thread

    def _set_thread_status(self, thread_id: str, status: str) -> None:
        self.threads[thread_id] = msgspec.structs.replace(
            self.threads[thread_id], status=status
        )

    def thread_start(
        self, params: ThreadStartParams, context: RequestContext
    ) -> ThreadStartResult:
        thread = Thread(
            thread_id=self._next("thread"), status="idle", created_at=self.now
        )
        self.threads[thread.thread_id] = thread
        self._emit(context, "thread/started", ThreadStartedParams(thread=thread))
        return ThreadStartResult(thread=thread)

    def thread_read(
        self, params: ThreadReadParams, context: RequestContext
    ) -> ThreadReadResult:
        thread = self._thread(params.thread_id)
        turns = [t for t in self.turns.values() if t.thread_id == thread.thread_id]
        return ThreadReadResult(thread=thread, turns=turns[-256:])

    def thread_resume(
        self, params: ThreadResumeParams, context: RequestContext
    ) -> ThreadResumeResult:
        return ThreadResumeResult(thread=self._thread(params.thread_id))

    def _run_item(self, context: RequestContext, turn: Turn, input_items: Any) -> None:
        if "streaming.v1" not in context.capabilities:
            return
        text = "echo: " + " ".join(item.text for item in input_items)
        item_id = self._next("item")
        ids = {"thread_id": turn.thread_id, "turn_id": turn.turn_id}
        self._emit(
            context,
            "item/started",
            ItemStartedParams(**ids, item=Item(item_id=item_id, type="agent_message")),
        )
        for word in _WORDS.findall(text):
            self._emit(
                context,
                "item/delta",
                ItemDeltaParams(**ids, item_id=item_id, delta=word),
            )
        done = Item(
            item_id=item_id, type="agent_message", text=text, status="completed"
        )
        self._emit(context, "item/completed", ItemCompletedParams(**ids, item=done))

    def _finish_turn(self, context: RequestContext, turn: Turn, status: str) -> None:
        finished = msgspec.structs.replace(turn, status=status)
        self.turns[turn.turn_id] = finished
        self._set_thread_status(turn.thread_id, "idle")
        self._emit(context, "turn/completed", TurnCompletedParams(turn=finished))

    def turn_start(
        self, params: TurnStartParams, context: RequestContext
    ) -> TurnStartResult:
        self._thread(params.thread_id)
        turn = Turn(
            turn_id=self._next("turn"), thread_id=params.thread_id, status="in_progress"
        )
        self.turns[turn.turn_id] = turn
        self._set_thread_status(turn.thread_id, "active")
        self._emit(context, "turn/started", TurnStartedParams(turn=turn))
        if self.complete_turns:
            self._run_item(context, turn, params.input)
            self._finish_turn(context, turn, "completed")
        return TurnStartResult(turn=turn)

    def _turn(self, thread_id: str, turn_id: str) -> Turn:
        turn = self.turns.get(turn_id)
        if turn is None or turn.thread_id != thread_id:
            raise _not_found("turn", thread_id=thread_id, turn_id=turn_id)
        return turn

    def turn_steer(
        self, params: TurnSteerParams, context: RequestContext
    ) -> TurnSteerResult:
        turn = self._turn(params.thread_id, params.turn_id)
        if turn.status != "in_progress":
            raise _not_found(
                "in-progress turn", thread_id=params.thread_id, turn_id=params.turn_id
            )
        self._run_item(context, turn, params.input)
        return TurnSteerResult(turn=turn)

    def turn_interrupt(
        self, params: TurnInterruptParams, context: RequestContext
    ) -> TurnInterruptResult:
        turn = self._turn(params.thread_id, params.turn_id)
        status: Any
        if turn.status != "in_progress":
            status = "already_finished"
        else:
            status = self.interrupt_status
            self._finish_turn(context, turn, "interrupted")
        return TurnInterruptResult(
            thread_id=turn.thread_id, turn_id=turn.turn_id, interrupt_status=status
        )

    def stream_resume(
        self, params: StreamResumeParams, context: RequestContext
    ) -> StreamResumeResult:
        if params.stream_id != self.replay.stream_id:
            raise _not_found("stream", stream_id=params.stream_id)
        return self.replay.page(params.cursor)

    # -- approvals.v1 / cancellation.v1 ------------------------------------------------

    def approval_request(
        self, params: ApprovalRequestParams, context: RequestContext
    ) -> ApprovalRequestResult:
        # The library never auto-approves, and neither does the fake host.
        return ApprovalRequestResult(
            approval_id=params.approval_id,
            action=params.action,
            decision="deny",
            reason="the fake host approves nothing",
        )

    def request_cancel(
        self, params: CancelParams, context: RequestContext
    ) -> CancelResult:
        # Requests are handled synchronously: any earlier request has finished.
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )


def cost_ratio(
    call: Callable[[Any], object],
    small: Any,
    large: Any,
    *,
    limit: float,
    baseline: Callable[[Any], object] | None = None,
    floor: float = 100e-6,
) -> float:
    """How many times more ``call(large)`` costs than ``call(small)``: the
    best of alternating runs (small, large, small, ...), timed with the
    garbage collector off after a collection (a full collection walks the
    whole process's heap: a fixed cost that would fall into one run and not
    the other). A cost below ``floor`` seconds counts as ``floor`` (timer
    noise).

    ``baseline`` (for example msgspec's own parse of the same bytes) is
    timed in the same rounds: when the larger input costs it more than
    proportionally too (memory and cache effects of building many objects,
    a neighbour process on a shared machine), the ratio is scaled down by
    that excess, never up: ``ratio * proportion / max(baseline ratio,
    proportion)``, the proportion being ``len(large) / len(small)``.

    A ratio over ``limit`` is measured again, twice, with three times the
    rounds each time, so a busy machine's pause passes and a superlinear
    path fails every time; one over four times ``limit`` is not measured
    again. For tests that hold an input check to linear cost (a ratio,
    never an absolute time); ``call`` and ``baseline`` should not raise."""
    proportion = len(large) / len(small)
    ratio = float("inf")
    for rounds in (3, 9, 27):
        gc.collect()
        gc.disable()
        try:
            mine = _best_pair(call, small, large, rounds, floor)
            theirs = (
                proportion
                if baseline is None
                else _best_pair(baseline, small, large, rounds, floor)
            )
        finally:
            gc.enable()
        ratio = mine * proportion / max(theirs, proportion)
        if ratio <= limit or ratio > 4 * limit:
            break
    return ratio


def _best_pair(
    call: Callable[[Any], object], small: Any, large: Any, rounds: int, floor: float
) -> float:
    best_small = best_large = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        call(small)
        middle = time.perf_counter()
        call(large)
        end = time.perf_counter()
        best_small = min(best_small, middle - start)
        best_large = min(best_large, end - middle)
    return best_large / max(best_small, floor)
