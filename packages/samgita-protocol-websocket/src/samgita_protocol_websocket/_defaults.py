"""Every default of the listener (``serve``) and the client (``connect``), in one place.

Both sides take the same names for what they share (``max_size``,
``open_timeout``, ``ping_interval``, ``write_limit``, ...); the core's bounds
are the core's constants, never a copy.
"""

from __future__ import annotations

from typing import Final

import samgita_protocol as core

DEFAULT_MAX_SIZE: Final = core.DEFAULT_MAX_MESSAGE_BYTES
"""The core's message bound (1 MiB): a larger frame is closed 1009 before it is decoded."""
DEFAULT_OPEN_TIMEOUT: Final = 10.0
"""Seconds for the whole opening handshake (``websockets``' ``open_timeout``)."""
DEFAULT_HANDSHAKE_TIMEOUT: Final = DEFAULT_OPEN_TIMEOUT
DEFAULT_MAX_HEADERS: Final = 100
"""No looser than 100 headers; ``websockets`` caps at 128 on its own."""
DEFAULT_MAX_HEADER_LINE: Final = 8192
DEFAULT_MAX_CONNECTIONS: Final = 1024
DEFAULT_PING_INTERVAL: Final = 20.0
DEFAULT_PING_TIMEOUT: Final = 20.0
DEFAULT_CLOSE_TIMEOUT: Final = 10.0
DEFAULT_MAX_INBOUND_FRAMES: Final = 16
"""Frames ``websockets`` buffers before it stops reading the socket (TCP backpressure)."""
DEFAULT_MAX_OUTBOUND_MESSAGES: Final = 256
DEFAULT_MAX_NOTIFICATIONS: Final = 1024
"""Notifications a client session queues for the caller before its reader waits."""
DEFAULT_WRITE_LIMIT: Final = 65_536
"""Bytes queued before a send waits; ``max_write_buffer`` (``None``: a multiple of
``write_limit`` + ``max_size``, ``_checks.check_write_buffer``) bounds the rest."""
DEFAULT_SEND_TIMEOUT: Final = 30.0
DEFAULT_TICK: Final = 1.0
