"""The listener's decisions before the upgrade, in :meth:`Policy.process_request`
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

``websockets`` then validates the rest of the handshake (``Upgrade`` or
``Connection`` missing 426, ``Sec-WebSocket-Key`` 400, a method other than
GET 405).  Every refusal
is logged with the peer, the status and why (:meth:`Policy.process_response`).
"""

from __future__ import annotations

import http
from collections.abc import Awaitable

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response
from websockets.protocol import State

from ._auth import Authenticator, request_view
from ._checks import APP_SERVER_PATH
from ._redact import RedactingLogger

__all__ = ["Policy", "peer_text"]


def peer_text(address: object) -> str:
    """``host:port`` of a socket address (``[host]:port`` for IPv6), for log records."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)


class Policy:
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
