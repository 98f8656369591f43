"""What :meth:`Client.receive`, :meth:`Client.disconnect` and
:meth:`Client.expire` hand back: frozen value objects, one per thing that
happened, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from samgita_protocol._errors import ProtocolError
    from samgita_protocol._schema import Message, Notification, Request

__all__ = [
    "Effect",
    "ErrorReceived",
    "NotificationReceived",
    "RequestReceived",
    "ResponseReceived",
    "SendMessage",
]


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """A pending request got a valid result.

    ``request`` is the original request as handed out; ``result`` the
    method's result Struct (for example ``ThreadStartResult``), already
    checked against the schema and the contextual rules.
    """

    request: Request
    result: Any


@dataclass(frozen=True, slots=True)
class ErrorReceived:
    """A pending request ended with an error.

    ``error.origin`` tells why: ``"remote"`` for the peer's typed error
    response, ``"peer"`` for an invalid result (a mutation is then also held
    in ``Client.uncertain``), ``"local"`` for ``disconnected``, ``timeout``
    and ``ambiguous_disconnect``.
    """

    request: Request
    error: ProtocolError


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """The peer sent a request (an approval, a cancel). It stays pending
    until ``Client.reply`` or ``Client.reply_error`` answers this exact request."""

    request: Request


@dataclass(frozen=True, slots=True)
class NotificationReceived:
    """An ephemeral (unsequenced) notification. Sequenced notifications are
    buffered instead: take them with ``Client.drain``."""

    notification: Notification


@dataclass(frozen=True, slots=True)
class SendMessage:
    """A message the client produced itself (the error response to an
    incoming request it refused: not initialized, unsupported, a conflicting
    id, over ``max_incoming_requests``). Encode and send it."""

    message: Message


Effect: TypeAlias = (
    ResponseReceived
    | ErrorReceived
    | RequestReceived
    | NotificationReceived
    | SendMessage
)
