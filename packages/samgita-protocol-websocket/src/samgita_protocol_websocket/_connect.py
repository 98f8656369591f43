"""``connect(url, *, token, capabilities, ...)``: the client's arguments checked, then a :class:`Session`.

Every argument is checked at construction (``TypeError`` / ``ValueError``
naming it) into the :class:`SessionSettings` the session opens each socket
with (``_client_policy``); ``async with`` opens and initializes the session
(``_session``).
"""

from __future__ import annotations

import inspect
import logging
import ssl as ssl_module
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Final

import samgita_protocol as core

from ._checks import (
    check_bool,
    check_callable,
    check_int,
    check_optional_seconds,
    check_seconds,
    check_ssl,
    check_strings,
    check_write_buffer,
    pick_alias,
)
from ._client_policy import SessionSettings, check_url
from ._defaults import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_INBOUND_FRAMES,
    DEFAULT_MAX_NOTIFICATIONS,
    DEFAULT_MAX_SIZE,
    DEFAULT_OPEN_TIMEOUT,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    DEFAULT_TICK,
    DEFAULT_WRITE_LIMIT,
)
from ._redact import RedactingLogger, Secret, as_secret
from ._session import Session
from ._types import OnRequest, Options

if TYPE_CHECKING:
    # Annotations only: importing this package loads no store module.
    from samgita_protocol.stores import CheckpointStore, CommandJournal

__all__ = ["connect"]

#: The core Client options connect(...) sets itself (from its own arguments).
_SET_BY_CONNECT: Final = frozenset(
    {
        "capabilities",
        "required_capabilities",
        "host_id",
        "checkpoints",
        "journal",
        "checkpoint_store",
        "max_message_bytes",
    }
)


def _client_options(value: object) -> Options:
    """``client_options`` checked: a mapping of core ``Client`` keyword
    arguments that connect(...) does not set itself (``TypeError`` naming
    ``client_options`` and each other key)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(
            "client_options must be a mapping of core Client keyword arguments, "
            f"not {type(value).__name__}"
        )
    options = dict(value)
    known = inspect.signature(core.Client).parameters
    other = sorted(repr(k) for k in options if k not in known or k in _SET_BY_CONNECT)
    if other:
        raise TypeError(
            "client_options must hold only core Client keyword arguments that "
            f"connect(...) does not set itself, not {', '.join(other)}"
        )
    return options


def _check_on_request(
    on_request: OnRequest | None, capabilities: tuple[str, ...]
) -> OnRequest | None:
    """``on_request`` checked: callable, and given whenever ``capabilities``
    offer a group whose requests the peer may send to this client
    (approvals, cancellation of them): only the caller answers those, so a
    caller offering them must say how it takes them.  No automatic answer."""
    callback = None if on_request is None else check_callable("on_request", on_request)
    incoming = sorted(
        {
            spec.group
            for spec in core.METHODS.values()
            if spec.kind == "request"
            and spec.direction in ("server", "either")
            and spec.group in capabilities
        }
    )
    if incoming and callback is None:
        raise ValueError(
            f"on_request is required when offering {', '.join(incoming)}: the "
            "peer may send requests there that only the caller answers "
            "(Session.reply / Session.reply_error)"
        )
    return callback


def _redacting(logger: object, token: Secret) -> RedactingLogger:
    """``logger`` checked (a ``logging.Logger`` or ``None``: the
    ``websockets.client`` logger), redacting ``token``."""
    if logger is not None and not isinstance(logger, logging.Logger):
        raise TypeError("logger must be a logging.Logger")
    return RedactingLogger(
        logger or logging.getLogger("websockets.client"), (token.reveal(),)
    )


def _check_tls(url: str, context: object) -> ssl_module.SSLContext | None:
    """``ssl`` checked against the URL's scheme; for ``wss://`` without one,
    a default context (peer certificate and host name verified:
    CERT_REQUIRED, check_hostname)."""
    checked = check_ssl("ssl", context)
    secure = url.startswith("wss:")
    if checked is not None and not secure:
        raise ValueError("ssl is given but url is not wss://")
    if secure and checked is None:
        checked = ssl_module.create_default_context()
    return checked


class connect:  # noqa: N801 - used like a function: ``async with connect(...) as session``
    """Open a client session: ``async with connect(url, token=..., capabilities=[...]) as session``.

    Connects, authenticates with ``Authorization: Bearer <token>`` in the
    handshake, and initializes.  Every argument is documented in the package
    README with its default.  Raises ``TypeError`` / ``ValueError`` naming the
    argument (at construction); at ``__aenter__``: ``HandshakeRejected`` (an
    HTTP refusal or any redirect; ``.status``, and a message such as
    ``authentication failed (HTTP 401)``), ``ConnectError`` (nothing
    listening, unknown host, not a WebSocket answer; the ``host:port`` in the
    message, chained from the ``OSError``), ``ssl.SSLError`` (certificate),
    ``TimeoutError`` (``open_timeout``) and ``ProtocolError`` (initialize).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | Secret,
        capabilities: Collection[str],
        required_capabilities: Collection[str] = (),
        on_request: OnRequest | None = None,
        host_id: str | None = None,
        checkpoints: Mapping[str, int] | None = None,
        journal: CommandJournal | None = None,
        checkpoint_store: CheckpointStore | None = None,
        ssl: ssl_module.SSLContext | None = None,
        allow_insecure_non_loopback: bool = False,
        origin: str | None = None,
        open_timeout: float = DEFAULT_OPEN_TIMEOUT,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        max_size: int | None = None,
        max_inbound_frames: int = DEFAULT_MAX_INBOUND_FRAMES,
        max_notifications: int = DEFAULT_MAX_NOTIFICATIONS,
        write_limit: int = DEFAULT_WRITE_LIMIT,
        max_write_buffer: int | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        tick: float = DEFAULT_TICK,
        client_options: Options | None = None,
        logger: logging.Logger | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        allow_insecure = check_bool(
            "allow_insecure_non_loopback", allow_insecure_non_loopback
        )
        url = check_url(url, allow_insecure_non_loopback=allow_insecure)
        secret = as_secret("token", token)
        offered = check_strings("capabilities", capabilities)
        required = check_strings("required_capabilities", required_capabilities)
        callback = _check_on_request(on_request, offered)
        tls = _check_tls(url, ssl)
        if origin is not None and not isinstance(origin, str):
            raise TypeError("origin must be a str or None")
        # Checked in this order (the first bad argument is the one named);
        # max_size is websockets' name (and the listener's), max_message_bytes
        # is kept as an alias.
        self._settings = SessionSettings(
            url=url,
            token=secret,
            origin=origin,
            ssl=tls,
            open_timeout=check_seconds("open_timeout", open_timeout),
            ping_interval=check_optional_seconds("ping_interval", ping_interval),
            ping_timeout=check_optional_seconds("ping_timeout", ping_timeout),
            close_timeout=check_seconds("close_timeout", close_timeout),
            max_message_bytes=(
                size := check_int(
                    *pick_alias(
                        "max_size",
                        max_size,
                        "max_message_bytes",
                        max_message_bytes,
                        DEFAULT_MAX_SIZE,
                    ),
                    minimum=1,
                )
            ),
            max_inbound_frames=check_int(
                "max_inbound_frames", max_inbound_frames, minimum=1
            ),
            max_notifications=check_int(
                "max_notifications", max_notifications, minimum=1
            ),
            write_limit=(limit := check_int("write_limit", write_limit, minimum=1)),
            max_write_buffer=check_write_buffer(
                max_write_buffer, write_limit=limit, max_size=size
            ),
            send_timeout=check_seconds("send_timeout", send_timeout),
            tick=check_seconds("tick", tick),
            client_options=_client_options(client_options),
            logger=_redacting(logger, secret),
            on_request=callback,
            capabilities=offered,
            required_capabilities=required,
            host_id=host_id,
            checkpoints=checkpoints,
            journal=journal,
            checkpoint_store=checkpoint_store,
        )
        # Fail now, not at __aenter__, on bad core options.
        self._settings.make_client()
        self._session: Session | None = None

    def __repr__(self) -> str:
        return f"connect(url={self._settings.url!r}, token={self._settings.token!r})"

    async def __aenter__(self) -> Session:
        session = Session(self._settings)
        await session._open()
        self._session = session
        return session

    async def __aexit__(self, *exc: object) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()
