"""The client's handshake: what it refuses before and during it (URLs with
credentials or queries, plain ws:// off loopback, every redirect, which
``websockets`` follows by default), the settings ``connect(...)`` checked
(:class:`SessionSettings`) and the opening of a socket with them
(:func:`open_socket`), shared by ``connect`` and the ``Session`` it gives."""

from __future__ import annotations

import dataclasses
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING

import samgita_protocol as core
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as _ws_connect

from ._boundedconn import BoundedClientConnection, bounded
from ._checks import is_loopback_host
from ._errors import HandshakeRejected, connect_errors
from ._redact import RedactingLogger, Secret
from ._types import OnRequest, Options

if TYPE_CHECKING:
    # Annotations only: importing this package loads no store module.
    from samgita_protocol.stores import CheckpointStore, CommandJournal

__all__ = [
    "HandshakeRejected",
    "NoRedirectConnect",
    "SessionSettings",
    "check_url",
    "open_socket",
]


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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """The arguments of ``connect(...)``, checked, as its ``Session`` uses them
    for every socket it opens (see ``connect`` for each)."""

    url: str
    token: Secret
    origin: str | None
    ssl: ssl.SSLContext | None
    open_timeout: float
    ping_interval: float | None
    ping_timeout: float | None
    close_timeout: float
    max_message_bytes: int
    max_inbound_frames: int
    max_notifications: int
    write_limit: int
    max_write_buffer: int
    send_timeout: float
    tick: float
    on_request: OnRequest | None
    logger: RedactingLogger
    capabilities: tuple[str, ...]
    required_capabilities: tuple[str, ...]
    host_id: str | None
    checkpoints: Mapping[str, int] | None
    journal: CommandJournal | None
    checkpoint_store: CheckpointStore | None
    client_options: Options

    def make_client(self) -> core.Client:
        """A fresh core ``Client`` with these settings."""
        return core.Client(
            capabilities=self.capabilities,
            required_capabilities=self.required_capabilities,
            host_id=self.host_id,
            checkpoints=self.checkpoints,
            journal=self.journal,
            checkpoint_store=self.checkpoint_store,
            max_message_bytes=self.max_message_bytes,
            **self.client_options,
        )


async def open_socket(settings: SessionSettings) -> ClientConnection:
    """Connect and authenticate (``Authorization: Bearer``) with ``settings``.

    Raises what ``connect(...)``'s ``__aenter__`` documents for the
    handshake: ``HandshakeRejected``, ``ConnectError``, ``ssl.SSLError``,
    ``TimeoutError``.
    """
    with connect_errors(settings.url):
        return await NoRedirectConnect(
            settings.url,
            additional_headers=[("Authorization", f"Bearer {settings.token.reveal()}")],
            user_agent_header=None,
            origin=settings.origin,  # type: ignore[arg-type]
            compression=None,
            proxy=None,
            open_timeout=settings.open_timeout,
            ping_interval=settings.ping_interval,
            ping_timeout=settings.ping_timeout,
            close_timeout=settings.close_timeout,
            max_size=settings.max_message_bytes,
            max_queue=settings.max_inbound_frames,
            write_limit=settings.write_limit,
            logger=settings.logger,
            ssl=settings.ssl,
            create_connection=bounded(
                BoundedClientConnection, settings.max_write_buffer
            ),
        )
