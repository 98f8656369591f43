"""Authentication before the upgrade: the authenticator interface and the bearer-token default."""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Awaitable, Mapping
from typing import Protocol, runtime_checkable

from websockets.datastructures import Headers

from ._redact import REDACTED, Secret, as_secret, is_credential_header
from ._types import SocketAddress

__all__ = [
    "Authenticator",
    "BearerTokenAuthenticator",
    "HandshakeRequest",
]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HandshakeRequest:
    """What an authenticator sees of an upgrade request.

    ``authorization`` holds every ``Authorization`` header value (a wrong one
    must not leak, so the field's ``repr`` hides them); ``headers`` are the other
    request headers, lower-cased names, credential headers removed (any name
    :func:`is_credential_header` names:
    ``Cookie``, ``Proxy-Authorization``, ``X-Api-Token``, ``X-Api-Key``,
    ``X-Session-Id``, ...).
    """

    path: str
    remote_address: SocketAddress
    origin: str | None
    headers: Mapping[str, str]
    authorization: tuple[str, ...] = dataclasses.field(repr=False)

    def __repr__(self) -> str:
        return (
            f"HandshakeRequest(path={self.path!r}, remote_address={self.remote_address!r}, "
            f"origin={self.origin!r}, authorization={REDACTED!r})"
        )


@runtime_checkable
class Authenticator(Protocol):
    """Decides whether an upgrade request is authenticated.

    Called once per handshake, before the upgrade, and again on every
    reconnect (each one is a new handshake).  Return a principal to accept:
    any truthy object (a user id string, a claims mapping, ``True``); it
    reaches ``ConnectionInfo.principal``.  Return ``None`` or ``False`` to
    refuse with 401; every other falsy value (``0``, ``""``, an empty
    mapping) refuses as well, so a predicate such as
    ``lambda r: r.authorization == (...)`` is safe.  May be a coroutine
    function.  An exception is answered 401 as well and logged without its
    arguments.
    """

    def __call__(
        self, request: HandshakeRequest
    ) -> object | None | Awaitable[object | None]: ...


class BearerTokenAuthenticator:
    """The default authenticator: exactly one ``Authorization: Bearer <token>`` header.

    The comparison is ``hmac.compare_digest`` over the UTF-8 bytes, so its
    time does not depend on how much of the token matched.  Accepted requests
    get ``principal`` (default ``"bearer"``).  Raises ``TypeError`` /
    ``ValueError`` for a bad ``token``; calling it with anything but a
    :class:`HandshakeRequest` raises ``TypeError``.
    """

    __slots__ = ("_expected", "_principal")

    def __init__(self, token: str | Secret, *, principal: object = "bearer") -> None:
        self._expected = as_secret("token", token).reveal().encode("ascii")
        self._principal = principal

    def __repr__(self) -> str:
        return f"BearerTokenAuthenticator(token={REDACTED!r})"

    def __call__(self, request: HandshakeRequest) -> object | None:
        if not isinstance(request, HandshakeRequest):
            raise TypeError(
                f"request must be a HandshakeRequest, not {type(request).__name__}"
            )
        if len(request.authorization) != 1:
            return None
        scheme, _, value = request.authorization[0].partition(" ")
        if scheme.lower() != "bearer":
            return None
        given = value.strip().encode("utf-8", "surrogateescape")
        if hmac.compare_digest(given, self._expected):
            return self._principal
        return None


def request_view(
    path: str, remote_address: SocketAddress, raw_headers: Headers
) -> HandshakeRequest:
    """Build a :class:`HandshakeRequest` from websockets ``Headers`` (internal)."""
    authorization: list[str] = []
    headers: dict[str, str] = {}
    origin: str | None = None
    for name, value in raw_headers.raw_items():
        lower = name.lower()
        if lower == "authorization":
            authorization.append(value)
        elif is_credential_header(lower):
            continue
        else:
            if lower == "origin":
                origin = value
            headers[lower] = (
                value if lower not in headers else f"{headers[lower]}, {value}"
            )
    return HandshakeRequest(
        path=path,
        remote_address=remote_address,
        origin=origin,
        headers=headers,
        authorization=tuple(authorization),
    )
