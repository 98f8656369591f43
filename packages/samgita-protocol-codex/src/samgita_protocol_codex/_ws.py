"""The WebSocket link to a real `codex app-server --listen ws://...` (extra ``websocket``).

Codex 0.163.0 with ``--ws-auth capability-token --ws-token-file FILE``
wants the token as ``Authorization: Bearer`` (401 without it) and refuses
any ``Origin`` header (403), so none is sent. One text frame is one JSON
message.
"""

from __future__ import annotations

from typing import Any, Final

from ._checks import check_line, check_positive_int, check_text

__all__ = ["CodexWebSocket"]

#: Largest accepted frame from Codex (same bound as the stdio line limit).
DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024


class CodexWebSocket:
    """One WebSocket connection to Codex. Use :meth:`connect`, then :meth:`send` / :meth:`readline`."""

    def __init__(self, *, connection: Any) -> None:
        self._connection = connection

    @classmethod
    async def connect(
        cls, *, url: str, token: str, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> CodexWebSocket:
        """Open ``url`` with the capability token as a bearer header.

        Raises:
            ImportError: the ``websocket`` extra (websockets) is not installed.
            OSError, websockets.exceptions.InvalidStatus: the connection or
                the upgrade failed (401 for a bad token).
            TypeError, ValueError: ``url`` or ``token`` is not a non-empty
                string, or ``max_frame_bytes`` not a positive ``int``.
        """
        check_text("url", url)
        check_text("token", token)
        check_positive_int("max_frame_bytes", max_frame_bytes)
        from websockets.asyncio.client import connect

        connection = await connect(
            url,
            additional_headers={"Authorization": f"Bearer {token}"},
            max_size=max_frame_bytes,
            compression=None,
            open_timeout=10,
        )
        return cls(connection=connection)

    async def send(self, line: bytes) -> None:
        """Send one JSON message (a trailing newline is dropped).

        Raises:
            websockets.exceptions.ConnectionClosed: the link is gone.
            TypeError: ``line`` is not bytes.
        """
        line = bytes(check_line("line", line))
        await self._connection.send(line.rstrip(b"\n").decode())

    async def readline(self) -> bytes | None:
        """The next message from Codex, or None once the connection closed."""
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self._connection.recv()
        except ConnectionClosed:
            return None
        return message.encode() if isinstance(message, str) else bytes(message)

    async def close(self) -> None:
        """Close the connection (Codex keeps running)."""
        await self._connection.close()
