"""Connection classes that take text messages as bytes and still tell binary ones apart.

Both loops (the listener's and the client session's) read every message with
``recv(decode=False)``: a text message is not decoded into a ``str`` that the
core would encode again, and the core's decode checks its UTF-8 (a message it
refuses with ``invalid_utf8`` is closed 1007).  That no longer tells text
from binary, so these classes count the messages as their first frame
arrives (``websockets`` hands each frame to ``process_event`` before it
queues it, in order) and keep the number of the first binary one in
``first_binary`` (0 while there is none): the loop closes 1003 when it gets
there, after the text messages before it.  Internal: ``serve`` and
``connect`` pass them to ``websockets`` as ``create_connection``.
"""

from __future__ import annotations

from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event

__all__ = ["TextClientConnection", "TextConnection"]


class _FirstBinary(Connection):
    """Counts messages by their first frame and notes the first binary one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.messages_started = 0
        self.first_binary = 0

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


class TextConnection(_FirstBinary, ServerConnection):
    """The listener's ``ServerConnection`` (see the module docstring)."""


class TextClientConnection(_FirstBinary, ClientConnection):
    """The client session's ``ClientConnection`` (see the module docstring)."""
