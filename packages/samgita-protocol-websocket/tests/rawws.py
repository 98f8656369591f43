"""A deliberately small WebSocket client on plain ``socket``: frames built by hand.

No WebSocket library is used on this side, so the conformance suite tests the
listener against RFC 6455 rather than against the same library's client.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct
import time
from dataclasses import dataclass

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes


def frame(
    opcode: int,
    payload: bytes = b"",
    *,
    fin: bool = True,
    mask: bool = True,
    rsv: int = 0,
    length: int | None = None,
) -> bytes:
    """One frame; ``length`` overrides the encoded payload length (for malformed frames)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", first, m | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", first, m | 126, n)
    else:
        head = struct.pack("!BBQ", first, m | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def close_payload(code: int, reason: bytes = b"") -> bytes:
    return struct.pack("!H", code) + reason


class RawClient:
    def __init__(
        self, port: int, *, timeout: float = 5.0, rcvbuf: int | None = None
    ) -> None:
        """``rcvbuf``: ``SO_RCVBUF`` set before connecting (a peer that reads little)."""
        if rcvbuf is None:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        else:
            self.sock = socket.socket()
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            self.sock.connect(("127.0.0.1", port))
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes, *, byte_at_a_time: bool = False) -> None:
        if byte_at_a_time:
            for i in range(len(data)):
                self.sock.sendall(data[i : i + 1])
        else:
            self.sock.sendall(data)

    def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk

    def _take(self, n: int) -> bytes:
        self._fill(n)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def request(
        self,
        path: str = "/app-server",
        headers: list[tuple[str, str]] | None = None,
        *,
        key: str | None = None,
        raw: bytes | None = None,
    ) -> HttpResponse:
        """Send an upgrade request (or ``raw`` bytes) and read the HTTP response head and body."""
        if raw is None:
            lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"]
            lines += [f"{k}: {v}" for k, v in (headers if headers is not None else [])]
            raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock.sendall(raw)
        return self.read_response()

    def read_response(self) -> HttpResponse:
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed without a complete response")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ")[1])
        headers: dict[str, str] = {}
        for line in header_lines:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        body = b""
        if "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        return HttpResponse(status, headers, body)

    def read_frame(self) -> tuple[int, bool, bytes]:
        b0, b1 = self._take(2)
        assert not b1 & 0x80, "server frames must not be masked"
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._take(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._take(8))
        return b0 & 0x0F, bool(b0 & 0x80), self._take(n)

    def read_close(self) -> int | None:
        """Read frames until a close frame; its code (None for an empty close payload)."""
        while True:
            opcode, _fin, payload = self.read_frame()
            if opcode == CLOSE:
                if len(payload) >= 2:
                    return int(struct.unpack("!H", payload[:2])[0])
                return None

    def read_until(self, opcode: int) -> bytes:
        while True:
            op, _fin, payload = self.read_frame()
            if op == opcode:
                return payload
            if op == CLOSE:
                code = (
                    struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                )
                raise AssertionError(
                    f"closed with {code} while waiting for opcode {opcode}"
                )

    def assert_alive(self) -> None:
        token = os.urandom(8)
        self.send(frame(PING, token))
        assert self.read_until(PONG) == token

    def wait_eof(self, timeout: float) -> float:
        """Seconds until the peer closes the TCP connection (data before it is discarded)."""
        start = time.monotonic()
        self.sock.settimeout(timeout)
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return time.monotonic() - start
            if not chunk:
                return time.monotonic() - start
            self.buf += chunk


def upgrade_headers(
    token: str | None,
    *,
    version: str | None = "13",
    extra: list[tuple[str, str]] | None = None,
    key: str | None = None,
) -> list[tuple[str, str]]:
    headers = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key or base64.b64encode(os.urandom(16)).decode()),
    ]
    if version is not None:
        headers.append(("Sec-WebSocket-Version", version))
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    return headers + (extra or [])


def accept_for(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
