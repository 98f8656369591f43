"""The fake Agent's handler and shared state (the public module is :mod:`samgita_protocol_websocket.fake_agent`).

See that module's docstring for what the Agent does; its command line lives there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, cast

import msgspec
import samgita_protocol as core

from ._codes import CloseCode
from ._server_loop import AgentConnection, ConnectionInfo

__all__ = ["AGENT_LOGGER", "GROUPS", "AgentState", "FakeAgent"]

_ASK_AGAIN = "ask-again"
AGENT_LOGGER: Final = "samgita_protocol_websocket.fake_agent"
"""The logger of the fake Agent's own records (a turn's stream failing, with
its traceback; the command's start and stop); the listener's are
``samgita_protocol_websocket.server``."""
_log: Final = logging.getLogger(AGENT_LOGGER)
GROUPS = (
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
)


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Turn:
    turn: core.Turn
    replay: core.Replay
    subscribers: set[AgentConnection] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    approval: asyncio.Future[str] | None = None
    approval_id: str | None = None
    interrupted: bool = False


@dataclass
class AgentState:
    """State shared by every connection of one fake Agent (events, threads, turns, replay logs).

    ``message_deltas`` deltas per message item, ``delta_interval`` seconds
    between streamed events (``0`` streams as fast as the socket allows),
    ``approval_timeout`` seconds an approval may take.
    """

    message_deltas: int = 8
    delta_interval: float = 0.01
    approval_timeout: float = 30.0
    host_id: str = "fake-agent"
    events: dict[str, core.Event] = field(default_factory=dict)
    reports: dict[str, core.EventReportParams] = field(default_factory=dict)
    threads: dict[str, core.Thread] = field(default_factory=dict)
    turns: dict[str, _Turn] = field(default_factory=dict)
    approvals: dict[str, str] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def next_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.counter)}"


class FakeAgent(core.Handler):
    """The Handler for one connection; ``FakeAgent.factory(state)`` is a ``handler_factory`` for ``serve``."""

    capabilities = GROUPS

    def __init__(self, state: AgentState, connection: AgentConnection) -> None:
        self.state = state
        self.connection = connection

    @classmethod
    def factory(cls, state: AgentState) -> Callable[[ConnectionInfo], FakeAgent]:
        """A ``handler_factory`` giving every connection a FakeAgent over ``state``."""
        return lambda info: cls(state, info.connection)

    # -- requests: one method per operation (core.Handler derives methods) ----------------

    def project_event_receive(
        self, params: core.EventReceiveParams, context: core.RequestContext
    ) -> core.EventReceiveResult:
        event = params.event
        known = self.state.events.get(event.event_id)
        if known is not None:
            original = msgspec.structs.replace(
                known, delivery_attempt_id=event.delivery_attempt_id
            )
            if original != event:
                raise core.ProtocolError(
                    core.ErrorCode.CONFLICT,
                    "changed content under an existing event_id",
                    data={"event_id": event.event_id},
                )
        else:
            self.state.events[event.event_id] = event
        return core.EventReceiveResult(
            event_id=event.event_id,
            delivery_attempt_id=event.delivery_attempt_id,
            acceptance="received",
            processing_status="completed"
            if event.event_id in self.state.reports
            else "pending",
        )

    def _known_event(self, event_id: str) -> None:
        if event_id not in self.state.events:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND, "unknown event", data={"event_id": event_id}
            )

    def project_event_status(
        self, params: core.EventStatusParams, context: core.RequestContext
    ) -> core.EventStatusResult:
        self._known_event(params.event_id)
        report = self.state.reports.get(params.event_id)
        return core.EventStatusResult(
            event_id=params.event_id,
            acceptance="received",
            processing_status=report.outcome if report is not None else "pending",
        )

    def project_event_report(
        self, params: core.EventReportParams, context: core.RequestContext
    ) -> core.EventReportResult:
        self._known_event(params.event_id)
        self.state.reports[params.event_id] = params
        return core.EventReportResult(
            event_id=params.event_id,
            report_status="recorded",
            management_acceptance="not_requested",
        )

    def _thread(self, thread_id: str) -> core.Thread:
        thread = self.state.threads.get(thread_id)
        if thread is None:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND,
                "unknown thread",
                data={"thread_id": thread_id},
            )
        return thread

    def thread_start(
        self, params: core.ThreadStartParams, context: core.RequestContext
    ) -> core.ThreadStartResult:
        thread = core.Thread(
            thread_id=self.state.next_id("thr"),
            status="active",
            created_at=_ts(datetime.now(UTC)),
        )
        self.state.threads[thread.thread_id] = thread
        context.notify("thread/started", core.ThreadStartedParams(thread=thread))
        return core.ThreadStartResult(thread=thread)

    def thread_read(
        self, params: core.ThreadReadParams, context: core.RequestContext
    ) -> core.ThreadReadResult:
        thread = self._thread(params.thread_id)
        turns = [
            t.turn
            for t in self.state.turns.values()
            if t.turn.thread_id == thread.thread_id
        ]
        return core.ThreadReadResult(thread=thread, turns=turns[-256:])

    def thread_resume(
        self, params: core.ThreadResumeParams, context: core.RequestContext
    ) -> core.ThreadResumeResult:
        return core.ThreadResumeResult(thread=self._thread(params.thread_id))

    def turn_start(
        self, params: core.TurnStartParams, context: core.RequestContext
    ) -> core.TurnStartResult:
        thread = self._thread(params.thread_id)
        turn_id = self.state.next_id("turn")
        turn = core.Turn(
            turn_id=turn_id, thread_id=thread.thread_id, status="in_progress"
        )
        entry = _Turn(
            turn=turn, replay=core.Replay(turn_id), subscribers={self.connection}
        )
        self.state.turns[turn_id] = entry
        context.notify("turn/started", core.TurnStartedParams(turn=turn))
        entry.task = asyncio.get_running_loop().create_task(self._stream(entry))
        return core.TurnStartResult(turn=turn)

    def _turn_entry(self, thread_id: str, turn_id: str) -> _Turn:
        entry = self.state.turns.get(turn_id)
        if entry is None or entry.turn.thread_id != thread_id:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND, "unknown turn", data={"turn_id": turn_id}
            )
        return entry

    def turn_steer(
        self, params: core.TurnSteerParams, context: core.RequestContext
    ) -> core.TurnSteerResult:
        return core.TurnSteerResult(
            turn=self._turn_entry(params.thread_id, params.turn_id).turn
        )

    def turn_interrupt(
        self, params: core.TurnInterruptParams, context: core.RequestContext
    ) -> core.TurnInterruptResult:
        entry = self._turn_entry(params.thread_id, params.turn_id)
        status: Literal["requested", "already_finished"]
        if entry.turn.status != "in_progress":
            status = "already_finished"
        else:
            entry.interrupted = True
            if entry.approval is not None and not entry.approval.done():
                entry.approval.set_result("interrupted")
            status = "requested"
        return core.TurnInterruptResult(
            thread_id=params.thread_id, turn_id=params.turn_id, interrupt_status=status
        )

    def stream_resume(
        self, params: core.StreamResumeParams, context: core.RequestContext
    ) -> core.StreamResumeResult:
        entry = self.state.turns.get(params.stream_id)
        if entry is None:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND,
                "unknown stream",
                data={"stream_id": params.stream_id},
            )
        page: core.StreamResumeResult = entry.replay.page(params.cursor)
        if not page.has_more:
            # Events appended from now on go to this connection live, after this page.
            entry.subscribers.add(self.connection)
        return page

    def approval_request(
        self, params: core.ApprovalRequestParams, context: core.RequestContext
    ) -> core.ApprovalRequestResult:
        # The host asks the Agent to approve something: this fake never approves.
        return core.ApprovalRequestResult(
            approval_id=params.approval_id,
            action=params.action,
            decision="deny",
            reason="the fake agent never approves",
        )

    def request_cancel(
        self, params: core.CancelParams, context: core.RequestContext
    ) -> core.CancelResult:
        # Every request of this Agent is answered before the next is read.
        return core.CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )

    # -- responses to our approval requests -------------------------------------------------------

    def handle_response(
        self, request: core.Request, outcome: msgspec.Struct | core.ProtocolError
    ) -> None:
        # The only requests this Agent sends are approval/request.
        approval_id = request.params.approval_id
        for entry in self.state.turns.values():
            if entry.approval is not None and entry.approval_id == approval_id:
                if not entry.approval.done():
                    if (
                        isinstance(outcome, core.ProtocolError)
                        and outcome.code == "disconnected"
                    ):
                        entry.approval.set_result(_ASK_AGAIN)
                    elif isinstance(outcome, core.ProtocolError):
                        entry.approval.set_result("error:" + str(outcome.code))
                    else:
                        result = cast(core.ApprovalRequestResult, outcome)
                        entry.approval.set_result(result.decision)

    # -- the streamed turn -----------------------------------------------------------------------

    async def _emit(self, entry: _Turn, method: str, params: msgspec.Struct) -> None:
        ephemeral = core.Notification(method=method, params=params)
        # The bytes append validated (its Outgoing's data): every subscriber
        # gets them without a second encode.
        wire = entry.replay.append(ephemeral).data
        group = core.METHODS[method].group
        for conn in list(entry.subscribers):
            if conn.closed:
                entry.subscribers.discard(conn)
                continue
            negotiated = conn.server.capabilities
            if group not in negotiated:
                continue  # retained for stream/resume; this peer did not negotiate the group
            try:
                if "streaming.v1" in negotiated:
                    await conn.send_encoded(wire)
                else:
                    # Without streaming.v1 a peer cannot resume, so it gets
                    # the event unsequenced.
                    await conn.send_message(ephemeral)
            except ConnectionError:
                entry.subscribers.discard(conn)
            except core.ProtocolError as exc:
                # The stream cannot go on on this connection without a hole:
                # end it (1011) rather than silently stop sending, so the
                # client reconnects and resumes from its checkpoint.
                entry.subscribers.discard(conn)
                await conn.close(
                    CloseCode.INTERNAL_ERROR, f"cannot send {method}: {exc.code}"
                )

    async def _pause(self) -> None:
        await asyncio.sleep(self.state.delta_interval)

    async def _message_item(self, entry: _Turn, item_id: str, words: str) -> None:
        t = entry.turn
        await self._emit(
            entry,
            "item/started",
            core.ItemStartedParams(
                thread_id=t.thread_id,
                turn_id=t.turn_id,
                item=core.Item(item_id=item_id, type="message"),
            ),
        )
        text = ""
        for n in range(self.state.message_deltas):
            if entry.interrupted:
                return
            delta = f"{words} {n + 1}. "
            text += delta
            await self._pause()
            await self._emit(
                entry,
                "item/delta",
                core.ItemDeltaParams(
                    thread_id=t.thread_id,
                    turn_id=t.turn_id,
                    item_id=item_id,
                    delta=delta,
                ),
            )
        await self._emit(
            entry,
            "item/completed",
            core.ItemCompletedParams(
                thread_id=t.thread_id,
                turn_id=t.turn_id,
                item=core.Item(
                    item_id=item_id, type="message", text=text, status="completed"
                ),
            ),
        )

    async def _stream(self, entry: _Turn) -> None:
        t = entry.turn
        status = "completed"
        try:
            await self._message_item(entry, f"{t.turn_id}-item-1", "thinking")
            decision = "interrupted"
            if not entry.interrupted:
                decision = await self._ask_approval(entry)
            if not entry.interrupted:
                item = core.Item(
                    item_id=f"{t.turn_id}-item-2",
                    type="tool_call",
                    text=f"write_file: {'ran' if decision == 'approve' else 'skipped (' + decision + ')'}",
                    status="completed" if decision == "approve" else "failed",
                )
                await self._emit(
                    entry,
                    "item/completed",
                    core.ItemCompletedParams(
                        thread_id=t.thread_id, turn_id=t.turn_id, item=item
                    ),
                )
                await self._message_item(entry, f"{t.turn_id}-item-3", "answer")
            if entry.interrupted:
                status = "interrupted"
        except Exception:
            _log.exception("turn %s failed while streaming", t.turn_id)
            status = "failed"
        entry.turn = msgspec.structs.replace(t, status=status)
        # Part of the stream too, so a client that was away learns the end on resume.
        with contextlib.suppress(Exception):
            await self._emit(
                entry, "turn/completed", core.TurnCompletedParams(turn=entry.turn)
            )

    async def _send_approval(
        self, entry: _Turn, params: core.ApprovalRequestParams
    ) -> None:
        while True:
            if entry.interrupted:
                assert entry.approval is not None
                if not entry.approval.done():
                    entry.approval.set_result("interrupted")
                return
            for conn in list(entry.subscribers):
                if conn.closed:
                    continue
                try:
                    await conn.request("approval/request", params)
                    return
                except (ConnectionError, core.ProtocolError):
                    continue
            await asyncio.sleep(0.05)  # no client connected: wait for one to resume

    async def _ask_approval(self, entry: _Turn) -> str:
        loop = asyncio.get_running_loop()
        approval_id = self.state.next_id("approval")
        entry.approval = loop.create_future()
        entry.approval_id = approval_id
        deadline = datetime.now(UTC) + timedelta(seconds=self.state.approval_timeout)
        params = core.ApprovalRequestParams(
            approval_id=approval_id,
            action=core.Action(
                kind="write_file", description="write notes.txt in the workspace"
            ),
            deadline=_ts(deadline),
            thread_id=entry.turn.thread_id,
            turn_id=entry.turn.turn_id,
        )
        try:
            async with asyncio.timeout(self.state.approval_timeout):
                while True:
                    await self._send_approval(entry, params)
                    decision = await entry.approval
                    if decision != _ASK_AGAIN:
                        break
                    # The connection carrying the request ended unanswered: ask
                    # again (same approval_id, action and deadline) on the next one.
                    entry.approval = loop.create_future()
        except TimeoutError:
            decision = "expired"
        self.state.approvals[approval_id] = decision
        return decision
