"""What a connection side sends: `Outgoing` (a message with the wire bytes
that were validated when it was built), and the notifications, built and
proven in one place.

`Client.notify`, `Server.notify` and a handler's ``context.notify`` all
build a notification the same way: a defined notification method (a wrong
name is the caller's ``ValueError``, see docs/protocol.md section 7), of a
negotiated group, with its params Struct (or a mapping converted to it) and
the envelope keywords (``None`` is absent), proven by its own bytes
(``encode``; an envelope keyword of the wrong type is named as a
``TypeError`` once that fails).
"""

from __future__ import annotations

from typing import Any

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
from ._schema import (
    Message,
    Notification,
)

__all__ = ["Outgoing", "notification_to_send"]


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
        envelope_types(
            stream_id=stream_id,
            cursor=cursor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            project_ref=project_ref,
            task_ref=task_ref,
        )
        raise
    return Outgoing(notification, wire)
