"""The fake Agent's handler and shared state (the public module is :mod:`samgita_protocol_websocket.fake_agent`).

See that module's docstring for what the Agent does; its command line lives there too.

Its records live in the state's store (``_agent_store``): every mutation
runs at most once per ``command_id`` (claimed in the ``Inbox`` with
``command_digest``; its result, encoded, is the receipt a repeated
delivery gets back), project events are recorded by ``event_id`` with
``event_digest`` (their processing status is kept there too), and the
streamed notifications are appended to the ``ReplayLog``, which assigns
their cursors and serves ``stream/resume``. Threads, turns and approvals
stay in memory: a restarted Agent answers receipts, event statuses and
resumes from the store, but knows no thread of the process before it.

A stream this process does not produce (another Agent's on a shared
store) is served page by page; on a store with a live tail across nodes
(PostgreSQL) the connection that got its last page keeps receiving that
Agent's new events (``_follow``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal, cast

import msgspec
import samgita_protocol as core
from samgita_protocol.stores import EventStatus, command_digest, event_digest

from ._agent_store import AgentStore, command_request, memory_store, refused
from ._follow import Followers, send_event
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

#: Seconds a claimed command stays held: far longer than any handler of
#: this Agent (each runs in one go on the event loop). A delivery that
#: finds the claim of an Agent killed mid-command (on a shared durable
#: store) is answered ``in_progress`` for at most this long.
COMMAND_LEASE: Final = 10.0

#: A stream keeps what a core ``Replay`` with its defaults keeps (1024
#: events, 8 MiB), trimmed once every ``_TRIM_EVERY`` appends.
_RETENTION: Final = core.Replay("retention")
_TRIM_EVERY: Final = 128


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Turn:
    turn: core.Turn
    subscribers: set[AgentConnection] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    approval: asyncio.Future[str] | None = None
    approval_id: str | None = None
    interrupted: bool = False


@dataclass
class AgentState:
    """State shared by every connection of one fake Agent (threads, turns, approvals, its store).

    ``message_deltas`` deltas per message item, ``delta_interval`` seconds
    between streamed events (``0`` streams as fast as the socket allows),
    ``approval_timeout`` seconds an approval may take, ``host_id`` the
    scope of its records in ``store``.

    ``store`` keeps the command receipts, project events and streams: any
    object with an ``inbox`` and a ``replay_log`` (a
    ``samgita_protocol.stores.sqlite.SqliteStore``, or
    ``open_store(SPEC)``); fresh in-memory stores by default. Serve it
    with ``serve(..., durable=store.inbox.durable)``: only then does the
    Agent answer ``acceptance: "durable"``. The Agent does not close it.
    Ids are ``thr-<n>``, ``turn-<n>``; on a durable store
    ``thr-<tag>-<n>``, with a tag of this state's own, so that a restarted
    Agent never reuses a stream id the store holds.
    """

    message_deltas: int = 8
    delta_interval: float = 0.01
    approval_timeout: float = 30.0
    host_id: str = "fake-agent"
    store: AgentStore = field(default_factory=memory_store)
    threads: dict[str, core.Thread] = field(default_factory=dict)
    turns: dict[str, _Turn] = field(default_factory=dict)
    approvals: dict[str, str] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _tag: str = field(init=False, repr=False, default="")

    def __post_init__(self) -> None:
        if self.store.inbox.durable or self.store.replay_log.durable:
            self._tag = secrets.token_hex(4) + "-"

    def next_id(self, prefix: str) -> str:
        return f"{prefix}-{self._tag}{next(self.counter)}"


class FakeAgent(core.Handler):
    """The Handler for one connection; ``FakeAgent.factory(state)`` is a ``handler_factory`` for ``serve``."""

    capabilities = GROUPS

    def __init__(self, state: AgentState, connection: AgentConnection) -> None:
        self.state = state
        self.connection = connection
        self._followers = Followers(connection, _log)

    @classmethod
    def factory(cls, state: AgentState) -> Callable[[ConnectionInfo], FakeAgent]:
        """A ``handler_factory`` giving every connection a FakeAgent over ``state``."""
        return lambda info: cls(state, info.connection)

    # -- mutations: at most once per command_id ---------------------------------------------

    def handle_request(
        self,
        method: str,
        params: Any,  # the method's params Struct, as core.Handler's
        context: core.RequestContext,
    ) -> msgspec.Struct | Any:
        """A mutation runs at most once per ``command_id`` (its receipt answers
        every later delivery); anything else as ``core.Handler``'s."""
        if context.command_id is None:
            return super().handle_request(method, params, context)
        inbox = self.state.store.inbox
        scope, command_id = self.state.host_id, context.command_id
        digest = command_digest(command_request(params, context))
        claim = inbox.claim(scope, command_id, digest, lease=COMMAND_LEASE)
        if claim.status == "duplicate":
            assert claim.receipt is not None  # a command's duplicate carries it
            return core.decode_result(method, msgspec.Raw(claim.receipt))
        if claim.status != "new":
            raise refused(claim.status, command_id)
        try:
            result = super().handle_request(method, params, context)
        except BaseException:
            # Each operation fails before its effect: the next delivery runs it.
            inbox.release(scope, command_id, digest)
            raise
        # Committed before the result is returned: a "durable" acceptance in
        # it goes out only once the receipt is in the inbox.
        inbox.commit(scope, command_id, digest, msgspec.json.encode(result))
        return result

    # -- requests: one method per operation (core.Handler derives methods) ----------------

    def _acceptance(self) -> Literal["received", "durable"]:
        # Durable only on a durable inbox served with durable=True (the
        # core refuses "durable" from any other Server).
        if self.state.store.inbox.durable and self.connection.server.durable:
            return "durable"
        return "received"

    def _event_status(self, event_id: str) -> EventStatus:
        status = self.state.store.inbox.event_status(self.state.host_id, event_id)
        if status is None:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND, "unknown event", data={"event_id": event_id}
            )
        return status

    def project_event_receive(
        self, params: core.EventReceiveParams, context: core.RequestContext
    ) -> core.EventReceiveResult:
        event = params.event
        recorded = self.state.store.inbox.record_event(
            self.state.host_id, event.event_id, event_digest(event), status="pending"
        )
        if recorded.status == "conflict":
            raise core.ProtocolError(
                core.ErrorCode.CONFLICT,
                "changed content under an existing event_id",
                data={"event_id": event.event_id},
            )
        return core.EventReceiveResult(
            event_id=event.event_id,
            delivery_attempt_id=event.delivery_attempt_id,
            acceptance=self._acceptance(),
            processing_status="pending"
            if recorded.status == "new"
            else self._event_status(event.event_id),
        )

    def project_event_status(
        self, params: core.EventStatusParams, context: core.RequestContext
    ) -> core.EventStatusResult:
        return core.EventStatusResult(
            event_id=params.event_id,
            acceptance=self._acceptance(),
            processing_status=self._event_status(params.event_id),
        )

    def project_event_report(
        self, params: core.EventReportParams, context: core.RequestContext
    ) -> core.EventReportResult:
        self._event_status(params.event_id)  # not_found when unknown
        self.state.store.inbox.set_event_status(
            self.state.host_id, params.event_id, params.outcome
        )
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
        entry = _Turn(turn=turn, subscribers={self.connection})
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
        stream_id = params.stream_id
        log = self.state.store.replay_log
        # A stream of this process's turns, or one the store holds (from an
        # Agent before a restart, or another one sharing the store).
        entry = self.state.turns.get(stream_id)
        if entry is None and log.last_cursor(stream_id) == 0:
            raise core.ProtocolError(
                core.ErrorCode.NOT_FOUND,
                "unknown stream",
                data={"stream_id": stream_id},
            )
        page = log.page(stream_id, params.cursor)
        result = core.StreamResumeResult(
            stream_id=stream_id,
            cursor=page.cursor,
            events=[cast(core.Notification, core.decode(e)) for e in page.events],
            has_more=page.has_more,
        )
        if entry is None:
            # Another Agent's stream: followed live after its last page when
            # the store has a live tail across nodes (PostgreSQL).
            self._followers.resumed(log, stream_id, page)
        elif not page.has_more:
            # Events appended from now on go to this connection live, after
            # this page: the reader enqueues this response before any of them.
            entry.subscribers.add(self.connection)
        return result

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

    def _append(self, stream_id: str, notification: core.Notification) -> bytes:
        """Append ``notification`` to ``stream_id`` in the store's replay log
        at the cursor the log assigns; its bytes (validated by ``encode``)."""
        log = self.state.store.replay_log
        encoded: list[bytes] = []

        def encode_at(cursor: int) -> bytes:
            sequenced = msgspec.structs.replace(
                notification, stream_id=stream_id, cursor=cursor
            )
            encoded.append(core.encode(sequenced))
            # The log may call this again (another writer took the cursor
            # it guessed): the last call's bytes are the ones it stored.
            return encoded[-1]

        cursor = log.append(stream_id, encode_at)
        if cursor % _TRIM_EVERY == 0:
            log.trim(
                stream_id,
                keep_events=_RETENTION.max_events,
                keep_bytes=_RETENTION.max_bytes,
            )
        return encoded[-1]

    async def _emit(self, entry: _Turn, method: str, params: msgspec.Struct) -> None:
        ephemeral = core.Notification(method=method, params=params)
        # The bytes the log stored: every subscriber gets them without a
        # second encode.
        wire = self._append(entry.turn.turn_id, ephemeral)
        for conn in list(entry.subscribers):
            # A peer without streaming.v1 cannot resume: it gets the event
            # unsequenced (send_event).
            if conn.closed or not await send_event(conn, method, wire, ephemeral):
                entry.subscribers.discard(conn)

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
