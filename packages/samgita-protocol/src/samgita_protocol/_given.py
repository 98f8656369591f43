"""Messages the caller decoded itself, handed to ``Client.receive`` /
``Server.receive`` (``docs/protocol.md`` section 7)."""

from __future__ import annotations

from ._codec import decode, encode
from ._errors import ErrorCode, ProtocolError
from ._results import json_problem
from ._schema import Message

__all__ = ["given_message"]


def given_message(message: Message, max_message_bytes: int) -> Message:
    """``message`` validated as if it had arrived as its JSON (size bound
    included) and returned as the codec would have decoded it: a request's
    or notification's ``params`` the method's Struct, a response's
    ``result`` raw JSON.

    Raises:
        ProtocolError: origin ``local`` for a value no JSON decoder produces
            (``invalid_key`` for a non-``str`` key, ``invalid_field`` for a
            tuple, set, ``bytes``, NaN or infinity, ``invalid_utf8`` for a
            string that is not valid Unicode): the caller's decoding bug,
            never answered; origin ``peer`` for every other violation (the
            codes of ``decode``).
    """
    problem = json_problem(message, "")
    if problem is not None:
        raise problem
    try:
        wire = encode(message, max_message_bytes=max_message_bytes)
    except ProtocolError as exc:
        if exc.code == ErrorCode.INVALID_UTF8:
            raise  # a lone surrogate: no JSON decoder produces one
        raise exc.with_origin("peer") from None
    return decode(wire, max_message_bytes=max_message_bytes)
