"""Types the listener, the client session and the fake Agent share: the core's
message shapes as this package takes them, and the envelope keywords it passes on.

Each ``Any`` left in this package is named here, or next to its use, with its
reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, TypedDict

import msgspec
import samgita_protocol as core

__all__ = [
    "Fields",
    "NotifyEnvelope",
    "OnRequest",
    "Options",
    "RequestEnvelope",
    "Result",
    "ServerRequestEnvelope",
    "SocketAddress",
]

Fields: TypeAlias = msgspec.Struct | Mapping[str, object]
"""Params or a result: the method's Struct, or a mapping the core converts to
it (and checks, ``TypeError`` / ``ProtocolError`` naming the field)."""

Result: TypeAlias = Any
"""A request's result: the method's result Struct (``ThreadStartResult``, ...).
``Any`` because which Struct it is depends on the method, a ``str`` known at
run time (the core's ``ResponseReceived.result`` is ``Any`` for the same
reason), and callers read its fields (``.thread``) without a cast."""

Options: TypeAlias = Mapping[str, Any]
"""More keyword arguments of the core ``Server`` / ``Client``
(``server_options``, ``client_options``).  ``Any``: each has its own type,
checked by the core when the throwaway instance is built at construction."""

SocketAddress: TypeAlias = Any
"""A peer's socket address: ``(host, port)`` for IPv4, ``(host, port,
flowinfo, scope_id)`` for IPv6.  Untyped, as ``websockets``
(``remote_address``) and ``socket.getpeername`` give it."""

OnRequest: TypeAlias = Callable[[core.Request], Awaitable[None] | None]
"""``connect(on_request=...)``: called with each incoming request (may be async)."""


class RequestEnvelope(TypedDict, total=False):
    """The envelope keywords of ``Session.request`` (the core ``Client.request``'s)."""

    id: str | None
    correlation_id: str | None
    causation_id: str | None
    command_id: str | None
    project_ref: str | None
    task_ref: str | None


class ServerRequestEnvelope(TypedDict, total=False):
    """The envelope keywords of ``AgentConnection.request`` (the core ``Server.request``'s)."""

    id: str | None
    correlation_id: str | None
    causation_id: str | None
    project_ref: str | None
    task_ref: str | None
    now: float | None


class NotifyEnvelope(TypedDict, total=False):
    """The envelope keywords of ``Session.notify`` and ``AgentConnection.notify``
    (the core ``Client.notify``'s and ``Server.notify``'s)."""

    stream_id: str | None
    cursor: int | None
    correlation_id: str | None
    causation_id: str | None
    project_ref: str | None
    task_ref: str | None
