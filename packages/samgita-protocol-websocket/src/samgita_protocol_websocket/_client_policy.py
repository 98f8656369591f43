"""What the client refuses before and during the handshake: URLs with credentials or
queries, plain ws:// off loopback, and every redirect (``websockets`` follows them by default)."""

from __future__ import annotations

import urllib.parse

from websockets.asyncio.client import connect as _ws_connect

from ._checks import is_loopback_host
from ._errors import HandshakeRejected

__all__ = ["HandshakeRejected", "NoRedirectConnect", "check_url"]


class NoRedirectConnect(_ws_connect):
    """``websockets``' connect that treats every 3xx as a failure (it follows redirects by default)."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def check_url(url: object, *, allow_insecure_non_loopback: bool) -> str:
    """Validate a listener URL (see :func:`connect`); returns it unchanged."""
    if not isinstance(url, str):
        raise TypeError("url must be a str")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("url is not a valid URL") from None
    if parts.scheme not in ("ws", "wss"):
        raise ValueError("url must use the ws:// or wss:// scheme")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise ValueError(
            "url must not carry credentials (user:pass@); pass token= instead"
        )
    if parts.query or url.rstrip().endswith("?"):
        raise ValueError("url must not carry a query string; credentials go in token=")
    if parts.fragment:
        raise ValueError("url must not carry a fragment")
    if not parts.hostname:
        raise ValueError("url must name a host")
    if (
        parts.scheme == "ws"
        and not is_loopback_host(parts.hostname)
        and not allow_insecure_non_loopback
    ):
        raise ValueError(
            "url: plain ws:// is allowed only to loopback hosts; use wss:// or pass "
            "allow_insecure_non_loopback=True"
        )
    del port
    return url
