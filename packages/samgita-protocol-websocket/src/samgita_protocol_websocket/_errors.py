"""The exceptions ``connect(...)`` raises when it cannot open a session, with messages a person can act on.

Both are ``ConnectionError`` (so ``OSError``) subclasses, exported from the
package and printed as ``samgita_protocol_websocket.<Name>``:

* :class:`ConnectError`: the listener could not be reached (nothing
  listening, unknown host, network unreachable), or what answered was not a
  WebSocket handshake.  Chained from the ``OSError`` (or ``websockets``
  exception) that said so.
* :class:`HandshakeRejected` (a :class:`ConnectError`): the listener answered
  the upgrade with an HTTP status instead of 101.

:func:`connect_errors` turns what ``websockets`` and the OS raise while
connecting into these.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import ssl
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from websockets.exceptions import InvalidHandshake, InvalidStatus

__all__ = [
    "ConnectError",
    "HandshakeRejected",
    "connect_errors",
    "os_error_reason",
    "refusal_message",
]

_PUBLIC: Final = "samgita_protocol_websocket"
_ERRNO: Final = re.compile(r"\[Errno (\d+)\]")


class ConnectError(ConnectionError):
    """``connect(...)`` / ``Session.reconnect()`` could not reach the listener.

    The message names the address (``host:port``, never the URL) and why:
    ``cannot connect to 127.0.0.1:8765: connection refused (is the listener
    running?)``.  ``host`` and ``port`` are that address; ``__cause__`` is the
    ``OSError`` (``ConnectionRefusedError``, ``socket.gaierror``, ...) or the
    ``websockets`` exception behind it.  Certificate failures
    (``ssl.SSLError``) and ``open_timeout`` (``TimeoutError``) are raised as
    they are.  Raises ``TypeError`` when ``message`` is not a ``str``.
    """

    __module__ = _PUBLIC

    def __init__(
        self, message: str, *, host: str | None = None, port: int | None = None
    ) -> None:
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, not {type(message).__name__}")
        super().__init__(message)
        self.host = host
        self.port = port

    @classmethod
    def at(cls, host: str, port: int, why: str) -> ConnectError:
        """``cannot connect to <host>:<port>: <why>`` (internal)."""
        return cls(
            f"cannot connect to {_address(host, port)}: {why}", host=host, port=port
        )


class HandshakeRejected(ConnectError):
    """The listener answered the upgrade with an HTTP status instead of 101.

    ``status`` is that status; the message says why in words
    (:func:`refusal_message`): ``authentication failed (HTTP 401)``,
    ``origin not allowed (HTTP 403)``, ``server busy (HTTP 503)``, a 3xx
    ``redirect (HTTP 302) refused: redirects are never followed``, any
    other ``upgrade refused (HTTP <status>)``.  Raises ``TypeError`` when
    ``status`` is not an ``int`` or ``message`` not a ``str``.
    """

    __module__ = _PUBLIC

    def __init__(self, status: int, message: str) -> None:
        if isinstance(status, bool) or not isinstance(status, int):
            raise TypeError(f"status must be an int, not {type(status).__name__}")
        super().__init__(message)
        self.status = status


#: What each refusal of this package's listener means (its policy, module
#: ``_listener``); every other status is "upgrade refused".
_REFUSALS: Final = {
    401: "authentication failed",
    403: "origin not allowed",
    503: "server busy",
}


def refusal_message(status: int) -> str:
    """The message of a :class:`HandshakeRejected` for HTTP ``status``."""
    if 300 <= status < 400:
        return f"redirect (HTTP {status}) refused: redirects are never followed"
    return f"{_REFUSALS.get(status, 'upgrade refused')} (HTTP {status})"


@contextmanager
def connect_errors(url: str) -> Iterator[None]:
    """Around opening a socket to ``url`` (internal): ``HandshakeRejected``
    for an HTTP refusal (every redirect included), ``ConnectError`` when the
    listener cannot be reached or does not answer with a WebSocket
    handshake; ``ssl.SSLError`` and ``TimeoutError`` as they are."""
    try:
        yield
    except InvalidStatus as exc:
        code = exc.response.status_code
        raise HandshakeRejected(code, refusal_message(code)) from None
    except InvalidHandshake as exc:
        # Not a WebSocket handshake (or a bad one): what answered is not this
        # listener.  Its text may quote a header, so only the type.
        raise ConnectError.at(
            *_url_address(url),
            "the answer to the upgrade is not a valid WebSocket handshake "
            f"({type(exc).__name__})",
        ) from exc
    except (ssl.SSLError, TimeoutError):
        raise
    except OSError as exc:
        raise ConnectError.at(*_url_address(url), os_error_reason(exc)) from exc


def _url_address(url: str) -> tuple[str, int]:
    """The host and port a URL ``check_url`` accepted connects to (the
    scheme's port when it names none)."""
    parts = urllib.parse.urlsplit(url)
    default = 443 if parts.scheme == "wss" else 80
    return parts.hostname or "", parts.port or default


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def os_error_reason(exc: OSError) -> str:
    """Why connecting failed, in words, from the ``OSError`` that said so."""
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name ({exc.strerror or exc})"
    text = str(exc)
    # asyncio gives one OSError per address tried, or, when they differ (as
    # for "localhost": ::1 and 127.0.0.1), "Multiple exceptions: [Errno
    # 111] ..., [Errno 111] ..." (Python 3.11 keeps no more than that text).
    codes = {int(n) for n in _ERRNO.findall(text)} if exc.errno is None else set()
    if isinstance(exc, ConnectionRefusedError) or codes == {errno.ECONNREFUSED}:
        return "connection refused (is the listener running?)"
    code = exc.errno
    if isinstance(code, int) and code in errno.errorcode:
        # os.strerror, not exc.strerror: asyncio puts "Connect call failed
        # (address)" there.
        return os.strerror(code)
    return text or type(exc).__name__
