"""The client session's notifications: a bounded queue fed from the core's stream buffer.

The reader puts each ephemeral notification here and moves sequenced ones
out of the core ``Client``'s bounded stream buffer (``Client.drain``) as
room allows; the caller takes them (``Session.notifications`` and its
siblings) and acknowledges the sequenced ones.  While ``max_notifications``
wait, the reader waits for room, so the socket is not read and TCP slows the
Agent down: nothing is dropped.  A page of ``Session.resume`` is ingested
here too (``Client.receive_replay``), waiting for the caller when it does
not fit the core's bounds yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Final

import samgita_protocol as core

__all__ = ["Inbox"]

#: The end-of-session marker in the queue.
_CLOSED: Final = None


class Inbox:
    """The notification queue of one ``Session``, across its reconnects (internal)."""

    def __init__(self, client: core.Client, max_notifications: int) -> None:
        self._client = client
        self._max = max_notifications
        # Unbounded as a container, bounded by put (max_notifications), so
        # the end-of-session marker always fits.
        self._queue: asyncio.Queue[core.Notification | None] = asyncio.Queue()
        self._room = asyncio.Event()
        # Set whenever the caller takes or acknowledges a notification.
        self._progress = asyncio.Event()
        self.closing = False
        """Set when the session closes: nothing more is taken out of the core."""

    def qsize(self) -> int:
        """Notifications waiting for the caller."""
        return self._queue.qsize()

    def end(self) -> None:
        """Queue the end-of-session marker (after the notifications before it)."""
        self._queue.put_nowait(_CLOSED)

    # -- the caller's side -----------------------------------------------------------

    async def items(self) -> AsyncIterator[core.Notification]:
        """``Session.notifications``."""
        while True:
            item = await self._queue.get()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)
                return
            self._taken()
            yield item

    def take(self) -> list[core.Notification]:
        """``Session.take_notifications``."""
        taken: list[core.Notification] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is _CLOSED:
                self._queue.put_nowait(_CLOSED)
                break
            self._taken()
            taken.append(item)
        return taken

    async def next(self, timeout: float | None) -> core.Notification:
        """``Session.next_notification`` (``timeout`` checked)."""
        async with asyncio.timeout(timeout):
            item = await self._queue.get()
        if item is _CLOSED:
            self._queue.put_nowait(_CLOSED)
            raise EOFError("session closed")
        self._taken()
        return item

    def ack(self, notification: core.Notification) -> None:
        """``Client.ack`` (the one home of the rule), then wake a page
        waiting for room."""
        self._client.ack(notification)
        self._progress.set()

    def _taken(self) -> None:
        # The caller took one notification: refill from the core, wake waiters.
        self._move()
        self._room.set()
        self._progress.set()

    # -- the reader's side -----------------------------------------------------------

    async def put(self, notification: core.Notification) -> None:
        """Queue an ephemeral notification, after what the core buffers; waits for room."""
        await self.flush()
        await self._wait_room()
        self._queue.put_nowait(notification)

    async def flush(self) -> None:
        """Move everything the core buffers to the queue (arrival order),
        waiting for room while the queue is full."""
        while True:
            self._move()
            if self.closing or not self._client.buffered:
                return
            await self._wait_room()

    async def ingest_page(self, result: core.StreamResumeResult) -> None:
        """Put a page of ``stream/resume`` through ``Client.receive_replay``.

        When the page does not fit the core's bounds yet (nothing was
        buffered: ``receive_replay`` is atomic), wait until the caller takes
        or acknowledges notifications, then offer the same page again: the
        reader waits here, as it does for queue room (backpressure to the
        Agent).  Raises the core's ``ProtocolError`` otherwise.
        """
        while True:
            self._progress.clear()
            try:
                self._client.receive_replay(result)
                return
            except core.ProtocolError as exc:
                if not self._must_wait(exc, result):
                    raise
            await self._progress.wait()
            self._move()

    def _must_wait(
        self, exc: core.ProtocolError, result: core.StreamResumeResult
    ) -> bool:
        if exc.code != core.ErrorCode.LIMIT_EXCEEDED:
            return False
        data = exc.data or {}
        limit = data.get("limit")
        if limit == "max_buffered_notifications":
            # Room comes only from handing buffered events to the caller.
            return bool(self._client.buffered)
        if limit == "max_stream_hashes":
            # Room comes from the caller acknowledging what it received; a
            # page larger than the bound never fits.
            bound = data.get("max")
            return not isinstance(bound, int) or len(result.events) <= bound
        return False

    def _move(self) -> None:
        # Hand the caller as many buffered stream events as the queue has
        # room for; the rest stay in the core's bounded buffer.  Never take
        # out of the core what cannot be queued at once.
        if self.closing or not self._client.buffered:
            return
        room = self._max - self._queue.qsize()
        if room > 0:
            for notification in self._client.drain(max=room):
                self._queue.put_nowait(notification)

    async def _wait_room(self) -> None:
        while self._queue.qsize() >= self._max:
            self._room.clear()
            await self._room.wait()
