"""How the fake Agent sends stream events, and its live tail of other nodes' streams (private).

:func:`send_event` is the one way a stored stream event goes out on a
connection (the Agent's own turns, ``_agent``, and the followers here).

A follower (:class:`Followers`) serves a stream another node produces on
a store with a live tail across nodes (PostgreSQL's
``PostgresReplayLog.wait_for``, found by :func:`tail_of`): after
``stream/resume`` served a connection the last page of such a stream, it
waits for that node's next appends and sends each event's stored bytes on
the connection, in cursor order, until ``turn/completed``, until the
connection ends, or until the store fails (then it closes the connection,
1011, so the client resumes from its checkpoint). On a store without
``wait_for`` (memory, SQLite) nothing is followed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final, Protocol, cast

import msgspec
import samgita_protocol as core
from samgita_protocol.stores import ReplayLog, ReplayPage

from ._codes import CloseCode
from ._server_loop import AgentConnection

__all__ = ["FOLLOW_WAIT", "Followers", "WaitFor", "send_event", "tail_of"]

#: Seconds one ``wait_for`` holds its thread (a thread of the event loop's
#: default executor). Short, so that the thread of a follower cancelled
#: while it waits (its connection ended, or a new resume replaced it) is
#: back within a second.
FOLLOW_WAIT: Final = 1.0

#: The method ending a turn's stream: a follower stops after it.
_LAST: Final = "turn/completed"


class WaitFor(Protocol):
    """A replay log's live tail: ``PostgresReplayLog.wait_for``. Blocks
    until ``stream_id`` has an event after ``after`` (appended by any
    node) or ``timeout`` seconds passed; returns the stream's last cursor."""

    def __call__(self, stream_id: str, after: int, *, timeout: float) -> int: ...


def tail_of(log: ReplayLog) -> WaitFor | None:
    """``log``'s live tail across nodes (its ``wait_for``), or ``None`` when
    it has none (the memory and SQLite logs): then nothing is followed."""
    wait_for = getattr(log, "wait_for", None)
    return cast(WaitFor, wait_for) if callable(wait_for) else None


class _Method(msgspec.Struct):
    # The one field a follower reads of a stored event (the rest is ignored).
    method: str


_method_of: Final = msgspec.json.Decoder(_Method).decode


async def send_event(
    conn: AgentConnection,
    method: str,
    wire: bytes,
    unsequenced: core.Notification | None = None,
) -> bool:
    """Send the stream event ``wire`` (its bytes as the replay log stores
    them, validated when appended) on ``conn``; ``False`` once ``conn``
    takes no more events.

    A peer that did not negotiate the method's group does not get it (the
    log keeps it for ``stream/resume``); a peer with ``streaming.v1`` gets
    the stored bytes as they are; one without it (it cannot resume) gets
    ``unsequenced``, when given. ``False`` when the connection is closed,
    or when the core refuses the event: then the stream cannot go on on
    this connection without a hole, so it is closed (1011) rather than
    left silent, and the client reconnects and resumes from its checkpoint.
    """
    negotiated = conn.server.capabilities
    if core.METHODS[method].group not in negotiated:
        return True
    try:
        if "streaming.v1" in negotiated:
            await conn.send_encoded(wire)
        elif unsequenced is not None:
            await conn.send_message(unsequenced)
    except ConnectionError:
        return False
    except core.ProtocolError as exc:
        await conn.close(CloseCode.INTERNAL_ERROR, f"cannot send {method}: {exc.code}")
        return False
    return True


def _ended(log: ReplayLog, stream_id: str, page: ReplayPage) -> bool:
    """Whether ``stream_id`` ends with ``page`` (a last page): its last
    event is ``turn/completed``. An empty page's last event is read again
    (one event); when it was trimmed, the stream is taken as going on."""
    events = page.events
    if not events and page.cursor > 0:
        try:
            events = log.page(stream_id, page.cursor - 1, max_events=1).events
        except core.ProtocolError:  # replay_gap: trimmed away
            return False
    return bool(events) and _method_of(events[-1]).method == _LAST


class Followers:
    """The followers of one connection: at most one per stream, all
    cancelled when the connection ends."""

    def __init__(self, connection: AgentConnection, logger: logging.Logger) -> None:
        self._conn = connection
        self._log = logger
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._watch: asyncio.Task[None] | None = None

    def resumed(self, log: ReplayLog, stream_id: str, page: ReplayPage) -> None:
        """``stream/resume`` is answering ``page`` of ``stream_id``, a stream
        this process does not produce: the stream's follower on this
        connection, if any, stops (the pages now carry the stream, and its
        events must not interleave with them); on the last page of a log
        with a live tail, a new one starts after the page's cursor, unless
        the stream has ended (its last event is ``turn/completed``).

        Called from the handler, inside ``Server.receive``, before the
        connection's reader enqueues the response: see :meth:`_follow` for
        why the response goes out before the first followed event.
        """
        old = self._tasks.pop(stream_id, None)
        if old is not None:
            old.cancel()
        wait_for = tail_of(log)
        if page.has_more or wait_for is None or self._conn.closed:
            return
        if _ended(log, stream_id, page):
            return
        loop = asyncio.get_running_loop()
        task = loop.create_task(
            self._follow(log, wait_for, stream_id, page.cursor),
            name=f"samgita-follow-{stream_id}",
        )
        self._tasks[stream_id] = task
        task.add_done_callback(lambda done: self._forget(stream_id, done))
        if self._watch is None:
            self._watch = loop.create_task(self._cancel_on_close())

    def _forget(self, stream_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(stream_id) is task:
            del self._tasks[stream_id]

    async def _cancel_on_close(self) -> None:
        # The connection ended (the client left, or the listener closed it
        # on stopping): no follower outlives it.
        await self._conn.wait_closed()
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()

    async def _follow(
        self, log: ReplayLog, wait_for: WaitFor, stream_id: str, cursor: int
    ) -> None:
        """Send ``stream_id``'s events after ``cursor`` on the connection as
        other nodes append them, in cursor order, until ``turn/completed``.

        Ordering: this task starts after the handler returned, and its first
        send comes only after a thread round trip (``wait_for``) and a page
        read, while the reader enqueues the ``stream/resume`` response as
        soon as the handler returns, without awaiting anything before: it
        either sends it itself (counted in flight, so every later send
        queues behind it) or puts it in the outbound queue (FIFO). The live
        subscription to this process's own turns relies on the same order.
        When the outbound queue is full (the client is not reading), the
        reader waits for room in line, and every later sender queues behind
        it (``AgentConnection._enqueue``).
        One follower per stream and connection (:meth:`resumed`), and each
        page starts where the last one ended: no event twice, none skipped.
        """
        conn = self._conn
        while not conn.closed:
            try:
                last = await asyncio.to_thread(
                    wait_for, stream_id, cursor, timeout=FOLLOW_WAIT
                )
                if last <= cursor:
                    continue  # nothing new yet: look at the connection again
                page = log.page(stream_id, cursor)  # the store's page bounds
                for wire in page.events:
                    method = _method_of(wire).method
                    if not await send_event(conn, method, wire) or method == _LAST:
                        return
            except Exception as exc:  # noqa: BLE001 - the store or an event failed: end it
                await self._fail(stream_id, exc)
                return
            cursor = page.cursor

    async def _fail(self, stream_id: str, exc: Exception) -> None:
        # The events after the cursor cannot be had (trimmed away, the
        # store failed, an event this Agent cannot read): end the connection
        # rather than leave the stream silent, so the client resumes from
        # its checkpoint (replay_gap when the events are gone).
        if self._conn.closed:
            return
        if isinstance(exc, core.ProtocolError):
            why = str(exc.code)
        else:
            why = type(exc).__name__[:80]  # a close reason holds 123 bytes
            self._log.warning(
                "stopped following stream %s: %s", stream_id, why, exc_info=exc
            )
        await self._conn.close(CloseCode.INTERNAL_ERROR, f"cannot follow stream: {why}")
