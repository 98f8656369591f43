"""The listener: ``serve(...)`` on ``websockets.asyncio.server.serve`` plus this package's policy.

Everything decided before the upgrade lives in :class:`_Policy.process_request`
(``websockets``' hook), in this order, each answer with ``Connection: close``
and no upgrade:

1. header count above ``max_headers`` or a header line above
   ``max_header_line`` -> 431 (``websockets`` itself answers 431 from 128
   headers or 8 KiB lines and 414 for a request line above 8 KiB);
2. path other than ``/app-server`` -> 404;
3. any query string -> 400 (credentials travel only in ``Authorization``);
4. ``Sec-WebSocket-Version`` missing, repeated or not ``13`` -> 426 with
   ``Sec-WebSocket-Version: 13`` (RFC 6455 section 4.4);
5. an ``Origin`` header not in ``allowed_origins`` -> 403;
6. authenticator refuses -> 401 with ``WWW-Authenticate: Bearer``;
7. ``max_connections`` reached -> 503 with ``Retry-After``.

``websockets`` then validates the rest of the handshake (``Upgrade`` 426,
``Connection`` / ``Sec-WebSocket-Key`` 400, method 405).  The
``open_timeout`` bounds the whole opening handshake from accept; a slow
sender is dropped without an answer when it fires.
"""

from __future__ import annotations

import http
import itertools
import logging
import secrets
import ssl
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Final, NoReturn, cast

import samgita_protocol as core
from websockets.asyncio.server import Server as _WsServer
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as _ws_serve
from websockets.datastructures import Headers
from websockets.http11 import MAX_LINE_LENGTH, MAX_NUM_HEADERS, Request, Response
from websockets.protocol import State

from ._auth import Authenticator, BearerTokenAuthenticator, request_view
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
from ._redact import RedactingLogger, Secret, as_secret
from ._server_loop import ConnectionInfo, run_connection
from ._textconn import TextConnection, bounded
from ._types import Options

__all__ = ["Listener", "serve"]

HandlerFactory = Callable[[ConnectionInfo], core.Handler]


#: The logger of the listener's own records (listening, accepted, refused,
#: closed, failures) when ``serve(logger=...)`` gives none; ``websockets``'
#: records go to ``websockets.server`` then.
SERVER_LOGGER: Final = "samgita_protocol_websocket.server"


def peer_text(address: object) -> str:
    """``host:port`` of a socket address (``[host]:port`` for IPv6), for log records."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)


class _Policy:
    """The pre-upgrade decisions of one listener (see module docstring)."""

    def __init__(
        self,
        *,
        authenticator: Authenticator,
        allowed_origins: frozenset[str],
        max_headers: int,
        max_header_line: int,
        max_connections: int,
        logger: RedactingLogger,
    ) -> None:
        self.authenticator = authenticator
        self.allowed_origins = allowed_origins
        self.max_headers = max_headers
        self.max_header_line = max_header_line
        self.max_connections = max_connections
        self.logger = logger
        # Connections that passed the policy and hold a slot until they close.
        # Counted by state, so a handshake that failed after the policy (bad
        # Upgrade, peer gone) frees its slot without bookkeeping.
        self.slots: set[ServerConnection] = set()
        self.principals: dict[ServerConnection, object] = {}
        # Why the policy refused a connection, until process_response logs it.
        self.reasons: dict[ServerConnection, str] = {}

    def _respond(
        self, connection: ServerConnection, status: http.HTTPStatus, text: str
    ) -> Response:
        self.reasons[connection] = text
        return connection.respond(status, text + "\n")

    def process_response(
        self, connection: ServerConnection, request: Request, response: Response
    ) -> None:
        """Log every refusal (``websockets``' hook, called for every answer to
        a request): the peer, the HTTP status and why (the policy's reason, or
        the status phrase for what ``websockets`` refused itself)."""
        reason = self.reasons.pop(connection, None)
        if response.status_code != http.HTTPStatus.SWITCHING_PROTOCOLS:
            self.logger.info(
                "refused %s: HTTP %d (%s)",
                peer_text(connection.remote_address),
                response.status_code,
                reason or response.reason_phrase,
            )

    def active(self) -> int:
        closed = [c for c in self.slots if c.state is State.CLOSED]
        for c in closed:
            self.slots.discard(c)
            self.principals.pop(c, None)
        return len(self.slots)

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        headers = request.headers
        raw = list(headers.raw_items())
        if len(raw) > self.max_headers:
            return self._respond(
                connection,
                http.HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                "too many headers",
            )
        for name, value in raw:
            if len(name) + len(value) + 4 > self.max_header_line:  # 'name: value\r\n'
                return self._respond(
                    connection,
                    http.HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                    "header line too long",
                )
        path, sep, _query = request.path.partition("?")
        if path != APP_SERVER_PATH:
            return self._respond(connection, http.HTTPStatus.NOT_FOUND, "not found")
        if sep:
            return self._respond(
                connection,
                http.HTTPStatus.BAD_REQUEST,
                "query strings are refused: send credentials in the Authorization header",
            )
        versions = headers.get_all("Sec-WebSocket-Version")
        if versions != ["13"]:
            response = self._respond(
                connection,
                http.HTTPStatus.UPGRADE_REQUIRED,
                "Sec-WebSocket-Version 13 required",
            )
            response.headers["Sec-WebSocket-Version"] = "13"
            return response
        origins = headers.get_all("Origin")
        if origins and (len(origins) != 1 or origins[0] not in self.allowed_origins):
            return self._respond(
                connection, http.HTTPStatus.FORBIDDEN, "origin not allowed"
            )
        view = request_view(path, connection.remote_address, headers)
        try:
            principal = self.authenticator(view)
            if isinstance(principal, Awaitable):
                principal = await principal
        except (
            Exception
        ) as exc:  # an authenticator failure is a refusal, never a 500 with details
            self.logger.warning(
                "authenticator raised %s; answering 401", type(exc).__name__
            )
            principal = None
        try:
            # The contract (Authenticator): a truthy principal accepts; None,
            # False or any other falsy value refuses.  A predicate returning
            # False must never let the peer in.
            accepted = (
                principal is not None and principal is not False and bool(principal)
            )
        except Exception:  # a principal whose __bool__ fails is no acceptance
            accepted = False
        if not accepted:
            response = self._respond(
                connection, http.HTTPStatus.UNAUTHORIZED, "authentication required"
            )
            response.headers["WWW-Authenticate"] = 'Bearer realm="app-server"'
            return response
        if self.active() >= self.max_connections:
            response = self._respond(
                connection, http.HTTPStatus.SERVICE_UNAVAILABLE, "too many connections"
            )
            response.headers["Retry-After"] = "1"
            return response
        self.slots.add(connection)
        self.principals[connection] = principal
        return None


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
        policy: _Policy,
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
        if not isinstance(host, str) or not host:
            raise (
                TypeError("host must be a non-empty str")
                if not isinstance(host, str)
                else ValueError("host must be a non-empty str")
            )
        self._host = host
        self._port = check_int("port", port, minimum=0, maximum=65535)
        if capabilities is not None:
            capabilities = check_strings("capabilities", capabilities)
        self._capabilities = capabilities
        if host_id is not None and not isinstance(host_id, str):
            raise TypeError(
                f"host_id must be a non-empty str or None, not {type(host_id).__name__}"
            )
        if host_id == "":
            raise ValueError("host_id must be a non-empty str or None")
        # One listener is one host: every connection (and every reconnect)
        # reports the same host_id, so clients can keep their checkpoints.
        self._host_id = host_id or "host-" + secrets.token_hex(12)
        self._durable = check_bool("durable", durable)
        if (token is None) == (authenticator is None):
            raise ValueError("pass exactly one of token and authenticator")
        if authenticator is not None:
            self._authenticator: Authenticator = check_callable(
                "authenticator", authenticator
            )
            self._secrets: tuple[str, ...] = ()
        else:
            secret = as_secret("token", token)
            self._authenticator = BearerTokenAuthenticator(secret)
            self._secrets = (secret.reveal(),)
        self._allowed_origins = frozenset(
            check_strings("allowed_origins", allowed_origins)
        )
        self._ssl = check_ssl("ssl", ssl)
        self._allow_insecure = check_bool(
            "allow_insecure_non_loopback", allow_insecure_non_loopback
        )
        if (
            self._ssl is None
            and not is_loopback_host(host)
            and not self._allow_insecure
        ):
            raise ValueError(
                "host is not a loopback address: pass ssl=<SSLContext> (wss) or "
                "allow_insecure_non_loopback=True to serve plain ws on it"
            )
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
        if server_options is not None and not isinstance(server_options, dict):
            raise TypeError(
                "server_options must be a dict of core Server keyword arguments"
            )
        self._server_options = dict(server_options or {})
        _check_core_server(
            capabilities=self._capabilities,
            server_options={
                "host_id": self._host_id,
                "durable": self._durable,
                **self._server_options,
            },
        )
        if logger is not None and not isinstance(logger, logging.Logger):
            raise TypeError("logger must be a logging.Logger")
        # websockets' records, and the listener's own (SERVER_LOGGER): one
        # logger for both when the caller gives one.  Both redacted.
        self._logger = RedactingLogger(
            logger or logging.getLogger("websockets.server"), self._secrets
        )
        self._events = RedactingLogger(
            logger or logging.getLogger(SERVER_LOGGER), self._secrets
        )
        self._backlog = check_int("backlog", backlog, minimum=1)
        self._listener: Listener | None = None
        self._serial = itertools.count(1)

    def __repr__(self) -> str:
        return f"serve(host={self._host!r}, port={self._port}, secure={self._ssl is not None})"

    async def __aenter__(self) -> Listener:
        if self._listener is not None:
            raise RuntimeError("this serve(...) is already running")
        policy = _Policy(
            authenticator=self._authenticator,
            allowed_origins=self._allowed_origins,
            max_headers=self._max_headers,
            max_header_line=self._max_header_line,
            max_connections=self._max_connections,
            logger=self._events,
        )
        server = await _ws_serve(
            lambda ws: self._run(cast(TextConnection, ws), policy),
            self._host,
            self._port,
            process_request=policy.process_request,
            process_response=policy.process_response,
            create_connection=bounded(TextConnection, self._max_write_buffer),
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

    async def _run(self, ws: TextConnection, policy: _Policy) -> None:
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
