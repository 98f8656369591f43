"""Close codes used by this package (RFC 6455 section 7.4.1)."""

from __future__ import annotations

import enum

__all__ = ["CloseCode"]


class CloseCode(enum.IntEnum):
    """WebSocket close status codes, RFC 6455 section 7.4.1."""

    NORMAL = 1000
    """Normal closure; the purpose of the connection was fulfilled."""
    GOING_AWAY = 1001
    """Server shutting down or client navigating away."""
    PROTOCOL_ERROR = 1002
    """Endpoint received a frame that violates RFC 6455 (unmasked client frame, bad opcode, ...)."""
    UNSUPPORTED_DATA = 1003
    """Data type the endpoint cannot accept: this protocol is text frames only, binary closes with it."""
    INVALID_PAYLOAD = 1007
    """Text message that is not valid UTF-8 (RFC 6455 section 8.1)."""
    POLICY_VIOLATION = 1008
    """Generic policy close: used when the peer will not read (outbound queue or write buffer full)."""
    MESSAGE_TOO_BIG = 1009
    """Message larger than ``max_message_bytes``."""
    INTERNAL_ERROR = 1011
    """Unexpected condition in this endpoint."""
    TRY_AGAIN_LATER = 1013
    """Temporary condition (RFC 6455 registry); listener closing down connections."""


def stream_integrity_reason(code: str) -> str | None:
    """The close reason for a stream-integrity error of the peer, or None for any other code.

    ``cursor_gap``, ``replay_conflict`` and ``foreign_stream`` mean the peer's
    stream can no longer be trusted on this connection: it is closed with
    1002 and this reason (at most 123 bytes, RFC 6455 section 5.5), so the
    core's disconnect semantics apply and the caller resumes from its
    checkpoint on a new connection.
    """
    if code in ("cursor_gap", "replay_conflict", "foreign_stream"):
        return f"stream integrity: {code}; resume from the checkpoint"
    return None
