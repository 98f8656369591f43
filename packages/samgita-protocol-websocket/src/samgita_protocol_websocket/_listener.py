"""The listener: ``serve(...)`` on ``websockets.asyncio.server.serve`` plus this package's policy.

What is decided before the upgrade (path, query, version, Origin,
authentication, capacity: the HTTP status of each refusal) lives in
``_policy``; each accepted connection is served by ``_server_loop``.  The
``open_timeout`` bounds the whole opening handshake from accept; a slow
sender is dropped without an answer when it fires.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import ssl
from collections.abc import Callable, Collection, Sequence
from typing import Any, Final, NoReturn, cast

import samgita_protocol as core
from websockets.asyncio.server import Server as _WsServer
from websockets.asyncio.server import serve as _ws_serve
from websockets.datastructures import Headers
from websockets.http11 import MAX_LINE_LENGTH, MAX_NUM_HEADERS
from websockets.protocol import State

from ._auth import Authenticator, BearerTokenAuthenticator, request_view
from ._boundedconn import BoundedConnection, bounded
from ._checks import (
    APP_SERVER_PATH,
    check_bool,
    check_callable,
    check_int,
    check_optional_seconds,
    check_seconds,
    check_ssl,
    check_strings,
    check_write_buffer,
    is_loopback_host,
    pick_alias,
)
from ._defaults import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_LINE,
    DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_INBOUND_FRAMES,
    DEFAULT_MAX_OUTBOUND_MESSAGES,
    DEFAULT_MAX_SIZE,
    DEFAULT_OPEN_TIMEOUT,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    DEFAULT_SEND_TIMEOUT,
    DEFAULT_TICK,
    DEFAULT_WRITE_LIMIT,
)
from ._policy import Policy, peer_text
from ._redact import RedactingLogger, Secret, as_secret
from ._server_loop import ConnectionInfo, run_connection
from ._types import Options

__all__ = ["Listener", "serve"]

HandlerFactory = Callable[[ConnectionInfo], core.Handler]


#: The logger of the listener's own records (listening, accepted, refused,
#: closed, failures) when ``serve(logger=...)`` gives none; ``websockets``'
#: records go to ``websockets.server`` then.
SERVER_LOGGER: Final = "samgita_protocol_websocket.server"


class _ProbeHandler(core.Handler):
    """A handler used only to build a throwaway core Server at construction."""

    def __init__(self, methods: frozenset[str]) -> None:
        self._methods = methods

    @property
    def methods(self) -> frozenset[str]:
        return self._methods

    def handle_request(
        self, method: str, params: object, context: core.RequestContext
    ) -> NoReturn:
        raise NotImplementedError  # never called: the probe is never connected


def _check_core_server(
    *, capabilities: tuple[str, ...] | None, server_options: Options
) -> None:
    """Build a throwaway core ``Server`` so bad arguments fail at construction.

    Raises ``TypeError`` / ``ValueError`` naming ``capabilities`` or
    ``server_options``.
    """
    reserved = {"capabilities", "max_message_bytes", "handler"} & set(server_options)
    if reserved:
        raise TypeError(
            f"server_options must not set {sorted(reserved)}: pass them as "
            "serve(...) arguments"
        )
    groups = capabilities if capabilities is not None else tuple(core.CAPABILITY_GROUPS)
    if capabilities is not None:
        try:
            methods = frozenset().union(
                *(
                    core.request_methods(g)
                    for g in capabilities
                    if g in core.CAPABILITY_GROUPS
                )
            )
            core.Server(_ProbeHandler(methods), capabilities=list(groups))
        except (TypeError, ValueError) as exc:
            text = str(exc)
            if not text.startswith("capabilities"):
                text = f"capabilities: {text}"
            raise type(exc)(text) from None
    methods = frozenset().union(*(core.request_methods(g) for g in groups))
    try:
        core.Server(_ProbeHandler(methods), capabilities=list(groups), **server_options)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"server_options: {exc}") from None
    except core.ProtocolError as exc:
        raise ValueError(f"server_options: {exc}") from None


class Listener:
    """A running listener, given by ``async with serve(...) as listener``.

    ``host_id`` is the host identity every connection reports.
    ``host`` / ``port`` are the bound address (``port`` is the real one when
    ``0`` was asked), ``url`` is ``ws(s)://host:port/app-server``.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        secure: bool,
        host_id: str,
        server: _WsServer,
        policy: Policy,
    ) -> None:
        self.host_id = host_id
        self.host = host
        self.port = port
        self.secure = secure
        self._server = server
        self._policy = policy

    @property
    def url(self) -> str:
        """The URL clients connect to."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'wss' if self.secure else 'ws'}://{host}:{self.port}{APP_SERVER_PATH}"

    @property
    def active_connections(self) -> int:
        """Connections holding a slot (authenticated, upgraded or upgrading)."""
        return self._policy.active()

    def __repr__(self) -> str:
        return (
            f"Listener(url={self.url!r}, active_connections={self.active_connections})"
        )

    async def aclose(self, *, close_connections: bool = True) -> None:
        """Stop accepting and close open connections with 1001; waits until they are gone.

        Raises ``TypeError`` when ``close_connections`` is not a ``bool``.
        """
        check_bool("close_connections", close_connections)
        self._server.close(close_connections=close_connections)
        await self._server.wait_closed()


def _check_host(host: object) -> str:
    if not isinstance(host, str):
        raise TypeError("host must be a non-empty str")
    if not host:
        raise ValueError("host must be a non-empty str")
    return host


def _check_host_id(host_id: object) -> str:
    """``host_id`` checked, or a fresh one for ``None``: one listener is one
    host, so every connection (and every reconnect) reports the same
    host_id and clients can keep their checkpoints."""
    if host_id is not None and not isinstance(host_id, str):
        raise TypeError(
            f"host_id must be a non-empty str or None, not {type(host_id).__name__}"
        )
    if host_id == "":
        raise ValueError("host_id must be a non-empty str or None")
    return host_id or "host-" + secrets.token_hex(12)


def _credentials(
    token: object, authenticator: Authenticator | None
) -> tuple[Authenticator, tuple[str, ...]]:
    """The authenticator, and the secrets to redact from every log record."""
    if (token is None) == (authenticator is None):
        raise ValueError("pass exactly one of token and authenticator")
    if authenticator is not None:
        return check_callable("authenticator", authenticator), ()
    secret = as_secret("token", token)
    return BearerTokenAuthenticator(secret), (secret.reveal(),)


def _check_tls(
    host: str, context: object, allow_insecure_non_loopback: object
) -> ssl.SSLContext | None:
    """``ssl``, required off loopback unless plain ws is opted into."""
    checked = check_ssl("ssl", context)
    allow = check_bool("allow_insecure_non_loopback", allow_insecure_non_loopback)
    if checked is None and not is_loopback_host(host) and not allow:
        raise ValueError(
            "host is not a loopback address: pass ssl=<SSLContext> (wss) or "
            "allow_insecure_non_loopback=True to serve plain ws on it"
        )
    return checked


def _check_server_options(server_options: object) -> dict[str, Any]:
    if server_options is not None and not isinstance(server_options, dict):
        raise TypeError(
            "server_options must be a dict of core Server keyword arguments"
        )
    return dict(server_options or {})


def _loggers(
    logger: object, secrets: tuple[str, ...]
) -> tuple[RedactingLogger, RedactingLogger]:
    """For ``websockets``' records and the listener's own (SERVER_LOGGER):
    one logger for both when the caller gives one.  Both redacted."""
    if logger is not None and not isinstance(logger, logging.Logger):
        raise TypeError("logger must be a logging.Logger")
    return (
        RedactingLogger(logger or logging.getLogger("websockets.server"), secrets),
        RedactingLogger(logger or logging.getLogger(SERVER_LOGGER), secrets),
    )


class serve:  # noqa: N801 - used like a function: ``async with serve(...) as listener``
    """Start a listener at ``/app-server``: ``async with serve(handler_factory, host=...) as listener``.

    ``handler_factory(connection_info)`` is called once per accepted,
    authenticated connection and returns the core ``Handler`` for it; a fresh
    core ``Server`` is built around it.  Every argument is documented in the
    package README with its default.  Nothing is bound until ``__aenter__``.

    Raises ``TypeError`` / ``ValueError`` naming the argument on bad
    configuration (at construction), ``OSError`` when the address cannot be
    bound (at ``__aenter__``).
    """

    def __init__(
        self,
        handler_factory: HandlerFactory,
        *,
        host: str,
        port: int = 0,
        capabilities: Sequence[str] | None = None,
        host_id: str | None = None,
        durable: bool = False,
        token: str | Secret | None = None,
        authenticator: Authenticator | None = None,
        allowed_origins: Collection[str] = (),
        ssl: ssl.SSLContext | None = None,
        allow_insecure_non_loopback: bool = False,
        max_size: int | None = None,
        open_timeout: float | None = None,
        max_headers: int = DEFAULT_MAX_HEADERS,
        max_header_line: int = DEFAULT_MAX_HEADER_LINE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        max_inbound_frames: int = DEFAULT_MAX_INBOUND_FRAMES,
        max_outbound_messages: int = DEFAULT_MAX_OUTBOUND_MESSAGES,
        write_limit: int = DEFAULT_WRITE_LIMIT,
        max_write_buffer: int | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        tick: float = DEFAULT_TICK,
        # More core Server keywords, each of its own type (_types.Options).
        server_options: dict[str, Any] | None = None,
        logger: logging.Logger | None = None,
        backlog: int = 1024,
        max_message_bytes: int | None = None,
        handshake_timeout: float | None = None,
    ) -> None:
        self._handler_factory = check_callable("handler_factory", handler_factory)
        self._host = _check_host(host)
        self._port = check_int("port", port, minimum=0, maximum=65535)
        if capabilities is not None:
            capabilities = check_strings("capabilities", capabilities)
        self._capabilities = capabilities
        self._host_id = _check_host_id(host_id)
        self._durable = check_bool("durable", durable)
        self._authenticator, self._secrets = _credentials(token, authenticator)
        self._allowed_origins = frozenset(
            check_strings("allowed_origins", allowed_origins)
        )
        self._ssl = _check_tls(host, ssl, allow_insecure_non_loopback)
        # max_size / open_timeout are websockets' names (and the client's);
        # max_message_bytes / handshake_timeout are kept as aliases.
        name, value = pick_alias(
            "max_size",
            max_size,
            "max_message_bytes",
            max_message_bytes,
            DEFAULT_MAX_SIZE,
        )
        self._max_message_bytes = check_int(name, value, minimum=1)
        timeout_name, timeout = pick_alias(
            "open_timeout",
            open_timeout,
            "handshake_timeout",
            handshake_timeout,
            DEFAULT_OPEN_TIMEOUT,
        )
        self._handshake_timeout = check_seconds(timeout_name, timeout)
        self._max_headers = check_int(
            "max_headers", max_headers, minimum=1, maximum=MAX_NUM_HEADERS
        )
        self._max_header_line = check_int(
            "max_header_line", max_header_line, minimum=64, maximum=MAX_LINE_LENGTH
        )
        self._max_connections = check_int("max_connections", max_connections, minimum=1)
        self._ping_interval = check_optional_seconds("ping_interval", ping_interval)
        self._ping_timeout = check_optional_seconds("ping_timeout", ping_timeout)
        self._close_timeout = check_seconds("close_timeout", close_timeout)
        self._max_inbound_frames = check_int(
            "max_inbound_frames", max_inbound_frames, minimum=1
        )
        self._max_outbound_messages = check_int(
            "max_outbound_messages", max_outbound_messages, minimum=1
        )
        self._write_limit = check_int("write_limit", write_limit, minimum=1)
        self._max_write_buffer = check_write_buffer(
            max_write_buffer,
            write_limit=self._write_limit,
            max_size=self._max_message_bytes,
        )
        self._send_timeout = check_seconds("send_timeout", send_timeout)
        self._tick = check_seconds("tick", tick)
        self._server_options = _check_server_options(server_options)
        _check_core_server(
            capabilities=self._capabilities,
            server_options={
                "host_id": self._host_id,
                "durable": self._durable,
                **self._server_options,
            },
        )
        self._logger, self._events = _loggers(logger, self._secrets)
        self._backlog = check_int("backlog", backlog, minimum=1)
        self._listener: Listener | None = None
        self._serial = itertools.count(1)

    def __repr__(self) -> str:
        return f"serve(host={self._host!r}, port={self._port}, secure={self._ssl is not None})"

    async def __aenter__(self) -> Listener:
        if self._listener is not None:
            raise RuntimeError("this serve(...) is already running")
        policy = Policy(
            authenticator=self._authenticator,
            allowed_origins=self._allowed_origins,
            max_headers=self._max_headers,
            max_header_line=self._max_header_line,
            max_connections=self._max_connections,
            logger=self._events,
        )
        server = await _ws_serve(
            lambda ws: self._run(cast(BoundedConnection, ws), policy),
            self._host,
            self._port,
            process_request=policy.process_request,
            process_response=policy.process_response,
            create_connection=bounded(BoundedConnection, self._max_write_buffer),
            server_header=None,
            compression=None,
            open_timeout=self._handshake_timeout,
            ping_interval=self._ping_interval,
            ping_timeout=self._ping_timeout,
            close_timeout=self._close_timeout,
            max_size=self._max_message_bytes,
            max_queue=self._max_inbound_frames,
            write_limit=self._write_limit,
            logger=self._logger,
            ssl=self._ssl,
            backlog=self._backlog,
        )
        sock = server.sockets[0]
        bound = sock.getsockname()
        self._listener = Listener(
            host=bound[0],
            port=bound[1],
            secure=self._ssl is not None,
            host_id=self._host_id,
            server=server,
            policy=policy,
        )
        self._events.info("listening on %s", self._listener.url)
        return self._listener

    async def __aexit__(self, *exc: object) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()

    async def _run(self, ws: BoundedConnection, policy: Policy) -> None:
        principal = policy.principals.pop(ws, None)
        view = request_view(
            APP_SERVER_PATH,
            ws.remote_address,
            ws.request.headers if ws.request else Headers(),
        )
        serial = next(self._serial)
        peer = peer_text(ws.remote_address)
        self._events.info("connection %d accepted from %s", serial, peer)
        try:
            await run_connection(
                ws,
                handler_factory=self._handler_factory,
                make_info=lambda conn: ConnectionInfo(
                    connection=conn,
                    serial=serial,
                    remote_address=ws.remote_address,
                    origin=view.origin,
                    principal=principal,
                    headers=view.headers,
                ),
                capabilities=self._capabilities,
                server_options={
                    "host_id": self._host_id,
                    "durable": self._durable,
                    **self._server_options,
                },
                max_message_bytes=self._max_message_bytes,
                max_outbound_messages=self._max_outbound_messages,
                send_timeout=self._send_timeout,
                tick=self._tick,
                logger=self._events,
            )
        finally:
            policy.slots.discard(ws)
            if ws.state is not State.OPEN:
                # Closing: the code is known once the closing handshake ends
                # (bounded by close_timeout, websockets' own).
                await ws.wait_closed()
            self._events.info(
                "connection %d from %s closed: code %s%s",
                serial,
                peer,
                ws.close_code,
                f" ({ws.close_reason})" if ws.close_reason else "",
            )
