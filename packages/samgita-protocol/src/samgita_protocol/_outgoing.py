"""What a connection side sends: `Outgoing` (a message with the wire bytes
that were validated when it was built), and the notifications and requests,
built and proven in one place.

`Client.notify`, `Server.notify` and a handler's ``context.notify`` all
build a notification the same way: a defined notification method (a wrong
name is the caller's ``ValueError``, see docs/protocol.md section 7), of a
negotiated group, with its params Struct (or a mapping converted to it) and
the envelope keywords (``None`` is absent), proven by its own bytes
(``encode``; an envelope keyword of the wrong type is named as a
``TypeError`` once that fails). A request (`request_to_send`) is built
from its converted params and envelope keywords the same way.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET

from ._codec import encode
from ._errors import ErrorCode, ProtocolError
from ._methods import (
    METHODS,
    method_spec,
)
from ._options import envelope_types
from ._results import params_of
from ._schema import Message, Notification, Request, Response, response_to

__all__ = [
    "Outgoing",
    "error_response",
    "notification_to_send",
    "request_to_send",
    "to_send",
]

#: The envelope keywords of a message a caller builds, in the order a
#: wrong type is named.
_ENVELOPE: Final = (
    "stream_id",
    "cursor",
    "correlation_id",
    "causation_id",
    "command_id",
    "project_ref",
    "task_ref",
)


class Outgoing(msgspec.Struct, frozen=True):
    """A message this side built, with its wire bytes: send ``data``.

    What `Client.request`, `Client.notify`, `Client.reply`,
    `Client.reply_error`, `Server.notify`, `Server.request`,
    `Server.receive` and `Replay.append` return. ``data`` is the message's
    JSON, validated with every rule of ``samgita_protocol.decode`` when the
    message was built (send it as it is: encoding ``message`` again would
    validate it again); ``message`` is the same message as an object, for
    the caller's bookkeeping (its id, its method). Frozen, compared by
    value, matched positionally (``case Outgoing(message, data):``).
    """

    message: Message
    data: bytes


def notification_to_send(
    method: str,
    params: Any,
    negotiated: frozenset[str],
    max_bytes: int,
    *,
    only_from: str | None,
    stream_id: str | None = None,
    cursor: int | None = None,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    project_ref: str | None = None,
    task_ref: str | None = None,
) -> Outgoing:
    """The notification and its wire bytes, on a side whose negotiated groups
    are ``negotiated``; a method only the ``only_from`` side sends (its
    ``direction``) is refused as ``unsupported``, as one of a group not
    negotiated.

    Raises:
        TypeError, ValueError: as docs/protocol.md section 7 says.
        ProtocolError: origin ``local``: ``unsupported``, and the codes of
            the params and envelope (``unpaired_stream_position``,
            ``message_too_large``, ...).
    """
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None or spec.kind != "notification":
        spec = method_spec("method", method, "notification")
    if spec.group not in negotiated or spec.direction == only_from:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED,
            "the method's capability group was not negotiated",
            data={"method": method, "group": spec.group},
        )
    notification = Notification(
        method=method,
        # A params Struct is proven with the envelope by encode below.
        params=params
        if type(params) is spec.params
        else params_of(method, params, "params"),
        stream_id=UNSET if stream_id is None else stream_id,
        cursor=UNSET if cursor is None else cursor,
        correlation_id=UNSET if correlation_id is None else correlation_id,
        causation_id=UNSET if causation_id is None else causation_id,
        project_ref=UNSET if project_ref is None else project_ref,
        task_ref=UNSET if task_ref is None else task_ref,
    )
    try:
        wire = encode(notification, max_message_bytes=max_bytes)
    except ProtocolError:
        _name_wrong_envelope(notification)
        raise
    return Outgoing(notification, wire)


def request_to_send(
    request_id: str,
    method: str,
    params: Any,
    max_bytes: int,
    *,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    command_id: str | None = None,
    project_ref: str | None = None,
    task_ref: str | None = None,
) -> Outgoing:
    """The request and its wire bytes: ``params`` already the method's
    params (Struct), ``correlation_id`` the id when not given, the other
    envelope keywords absent when ``None``.

    Raises:
        TypeError: an envelope keyword of the wrong type (once encoding
            failed, so a wrong type is named before the schema's code).
        ProtocolError: origin ``local``: the envelope's and params' codes
            (``missing_command_id``, ``invalid_field``, ...),
            ``message_too_large``.
    """
    request = Request(
        id=request_id,
        correlation_id=request_id if correlation_id is None else correlation_id,
        method=method,
        params=params,
        command_id=UNSET if command_id is None else command_id,
        causation_id=UNSET if causation_id is None else causation_id,
        project_ref=UNSET if project_ref is None else project_ref,
        task_ref=UNSET if task_ref is None else task_ref,
    )
    try:
        wire = encode(request, max_message_bytes=max_bytes)
    except ProtocolError:
        _name_wrong_envelope(request)
        raise
    return Outgoing(request, wire)


def _name_wrong_envelope(message: Request | Notification) -> None:
    """Called once ``encode`` refused ``message``: the ``TypeError`` naming
    its first envelope keyword of the wrong type (``envelope_types``), if
    any, before the schema's code for it. An absent keyword (``None``) is
    ``UNSET`` in the message."""
    envelope_types(
        **{
            name: value
            for name in _ENVELOPE
            if (value := getattr(message, name, UNSET)) is not UNSET
        }
    )


def error_response(request: Request, error: ProtocolError) -> Response:
    """The response answering ``request`` with ``error`` (its identity
    echoed by `response_to`)."""
    return response_to(request, error=error.to_wire())


def to_send(message: Message, max_bytes: int) -> Outgoing:
    """A message this side built itself (a Server's refusal, its initialize
    result, an error it substituted) with its validated bytes.

    Raises:
        ProtocolError: ``message_too_large`` (origin ``local``), or a
            schema code of a message built wrong.
    """
    return Outgoing(message, encode(message, max_message_bytes=max_bytes))
