"""What :meth:`Client.receive`, :meth:`Client.disconnect` and
:meth:`Client.expire` hand back: frozen value objects, one per thing that
happened, in order.

They are frozen ``msgspec.Struct`` classes rather than frozen dataclasses:
one is built for every message received, and a frozen dataclass's
``__init__`` (``object.__setattr__`` per field) cost about as much as the
rest of receiving an ephemeral notification. They compare by value, are
hashable when their fields are, and match positionally
(``case ResponseReceived(request, result):``).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec

from samgita_protocol._errors import ProtocolError
from samgita_protocol._schema import (
    Notification,
    Request,
    Response,
)


class ResponseReceived(msgspec.Struct, frozen=True):
    """A pending request got a valid result.

    ``request`` is the original request as handed out; ``result`` the
    method's result Struct (for example ``ThreadStartResult``), already
    checked against the schema and the contextual rules.
    """

    request: Request
    result: Any


class ErrorReceived(msgspec.Struct, frozen=True):
    """A pending request ended with an error.

    ``error.origin`` tells why: ``"remote"`` for the peer's typed error
    response, ``"peer"`` for an invalid result (a mutation is then also held
    in ``Client.uncertain``), ``"local"`` for ``disconnected``, ``timeout``
    and ``ambiguous_disconnect``.
    """

    request: Request
    error: ProtocolError


class RequestReceived(msgspec.Struct, frozen=True):
    """The peer sent a request (an approval, a cancel). It stays pending
    until ``Client.reply`` or ``Client.reply_error`` answers this exact request."""

    request: Request


class NotificationReceived(msgspec.Struct, frozen=True):
    """An ephemeral (unsequenced) notification. Sequenced notifications are
    buffered instead: take them with ``Client.drain``."""

    notification: Notification


class SendMessage(msgspec.Struct, frozen=True):
    """A message the client produced itself (the error response to an
    incoming request it refused: not initialized, unsupported, a conflicting
    id, over ``max_incoming_requests``). Send ``data``, its validated wire
    bytes (as in `Outgoing`)."""

    message: Response
    data: bytes


Effect: TypeAlias = (
    ResponseReceived
    | ErrorReceived
    | RequestReceived
    | NotificationReceived
    | SendMessage
)
