"""Connection classes that bound what the peer leaves unread.

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
does not read; ``websockets`` would say 1006 and nothing), as they do when
``websockets`` failed the connection for invalid UTF-8 in a text message
(1007, RFC 6455 section 8.1).

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
from websockets.frames import Close

from ._codes import CloseCode

__all__ = [
    "WRITE_BUFFER_FULL",
    "BoundedClientConnection",
    "BoundedConnection",
    "bounded",
]

WRITE_BUFFER_FULL: Final = "peer is not reading (write buffer full)"
"""The 1008 reason when answers to the peer's frames exceed ``max_write_buffer``."""


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

    def _failed_with(self) -> Close | None:
        # The close this side sent when it failed the connection, for the
        # peer's invalid UTF-8 (websockets' check, 1007) or a full write
        # buffer (1008): after a failure no close frame comes back, and
        # websockets would say 1006 and nothing.
        sent = self.protocol.close_sent
        if sent is None or self.protocol.close_rcvd is not None:
            return None
        if self.write_buffer_full or sent.code == CloseCode.INVALID_PAYLOAD:
            return sent
        return None

    @property
    def close_code(self) -> int | None:
        code = super().close_code
        failed = self._failed_with()
        return failed.code if code is not None and failed is not None else code

    @property
    def close_reason(self) -> str | None:
        reason = super().close_reason
        failed = self._failed_with()
        return failed.reason if reason is not None and failed is not None else reason


class BoundedConnection(_BoundedAnswers, ServerConnection):
    """The listener's ``ServerConnection`` (see the module docstring)."""


class BoundedClientConnection(_BoundedAnswers, ClientConnection):
    """The client session's ``ClientConnection`` (see the module docstring)."""


_C = TypeVar("_C", BoundedConnection, BoundedClientConnection)


def bounded(cls: type[_C], max_write_buffer: int) -> type[_C]:
    """``cls`` with ``max_write_buffer``, as ``websockets``' ``create_connection``.

    ``websockets`` documents ``create_connection`` as a factory and only
    calls it; its annotation asks for the class itself.
    """
    return cast("type[_C]", functools.partial(cls, max_write_buffer=max_write_buffer))
