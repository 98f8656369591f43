"""Connection classes that take text messages as bytes, tell binary ones apart and bound what the peer leaves unread.

Both loops (the listener's and the client session's) read every message with
``recv(decode=False)``: a text message is not decoded into a ``str`` that the
core would encode again, and the core's decode checks its UTF-8 (a message it
refuses with ``invalid_utf8`` is closed 1007).  That no longer tells text
from binary, so these classes count the messages as their first frame
arrives (``websockets`` hands each frame to ``process_event`` before it
queues it, in order) and keep the number of the first binary one in
``first_binary`` (0 while there is none): the loop closes 1003 when it gets
there, after the text messages before it.

``websockets`` answers every ping with a pong written straight into the
transport's write buffer: no ``write_limit``, no drain, so a peer that sends
pings and never reads would grow that buffer without bound (issue 18).
After each read of the socket (``asyncio.Protocol.data_received``) these
classes look at the transport's ``get_write_buffer_size()``: when the answers
to that read grew it beyond ``max_write_buffer``, the connection is failed
with 1008 and :data:`WRITE_BUFFER_FULL` and the transport aborted (the peer
does not read, so the close frame would never get through and waiting for it
would keep the buffer).  A buffer therefore holds at most
``max_write_buffer`` plus the answers to one read (``asyncio`` reads at most
256 KiB at a time; over TLS each pong's record adds some 20 bytes, and the
TCP transport below holds up to its own high-water mark, 64 KiB, uncounted).
Sends never trigger it: they wait at ``write_limit`` and are bounded by
``send_timeout``, and ``max_write_buffer`` leaves room for what they queue
(``_checks.check_write_buffer``).  ``close_code`` / ``close_reason`` then
give the code and reason sent (no close frame comes back from a peer that
does not read; ``websockets`` would say 1006 and nothing).

Internal: ``serve`` and ``connect`` pass them to ``websockets`` as
``create_connection`` (:func:`bounded`).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Final, TypeVar, cast

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event

from ._codes import CloseCode

__all__ = [
    "WRITE_BUFFER_FULL",
    "TextClientConnection",
    "TextConnection",
    "bounded",
]

WRITE_BUFFER_FULL: Final = "peer is not reading (write buffer full)"
"""The 1008 reason when answers to the peer's frames exceed ``max_write_buffer``."""


class _FirstBinary(Connection):
    """Counts messages by their first frame and notes the first binary one."""

    messages_started = 0
    first_binary = 0

    def process_event(self, event: Event) -> None:
        if type(event) is Frame:
            opcode = event.opcode
            if opcode is Opcode.TEXT:
                self.messages_started += 1
            elif opcode is Opcode.BINARY:
                self.messages_started += 1
                if not self.first_binary:
                    self.first_binary = self.messages_started
        super().process_event(event)


class _BoundedAnswers(Connection):
    """Fails the connection when answers to the peer's frames pile up unread (module docstring)."""

    # args, kwargs: websockets' Connection arguments, passed on unchanged.
    def __init__(self, *args: Any, max_write_buffer: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_write_buffer = max_write_buffer
        self.write_buffer_full = False
        """Whether this side failed the connection for :data:`WRITE_BUFFER_FULL`."""

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        before = transport.get_write_buffer_size()
        super().data_received(data)
        queued = transport.get_write_buffer_size()
        if queued > before and queued > self.max_write_buffer:
            self._fail_not_reading(queued)

    def _fail_not_reading(self, queued: int) -> None:
        if self.write_buffer_full:
            return
        self.write_buffer_full = True
        self.logger.warning(
            "closing connection: %s (%d bytes queued)", WRITE_BUFFER_FULL, queued
        )
        # Queue the close (it also stops websockets from answering anything
        # more), then drop TCP with whatever is buffered.
        self.protocol.fail(CloseCode.POLICY_VIOLATION, WRITE_BUFFER_FULL)
        with contextlib.suppress(Exception):
            self.send_data()
        self.transport.abort()

    @property
    def close_code(self) -> int | None:
        code = super().close_code
        if self.write_buffer_full and code is not None:
            return CloseCode.POLICY_VIOLATION
        return code

    @property
    def close_reason(self) -> str | None:
        reason = super().close_reason
        if self.write_buffer_full and reason is not None:
            return WRITE_BUFFER_FULL
        return reason


class TextConnection(_FirstBinary, _BoundedAnswers, ServerConnection):
    """The listener's ``ServerConnection`` (see the module docstring)."""


class TextClientConnection(_FirstBinary, _BoundedAnswers, ClientConnection):
    """The client session's ``ClientConnection`` (see the module docstring)."""


_C = TypeVar("_C", TextConnection, TextClientConnection)


def bounded(cls: type[_C], max_write_buffer: int) -> type[_C]:
    """``cls`` with ``max_write_buffer``, as ``websockets``' ``create_connection``.

    ``websockets`` documents ``create_connection`` as a factory and only
    calls it; its annotation asks for the class itself.
    """
    return cast("type[_C]", functools.partial(cls, max_write_buffer=max_write_buffer))
