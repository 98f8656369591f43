"""What either side reads: one message from the peer, decoded and validated.

`wire_of` turns what ``receive`` was given into the bytes (or text) to
decode; `received` decodes them (or validates a `Message` the caller
decoded itself, as if it had arrived as its JSON); `read`, a Server's,
builds the error response that answers invalid input still naming a
request identity, so the peer's request does not wait for a timeout.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ._codec import PendingMethod, decode, decode_wire
from ._errors import ErrorCode, ProtocolError
from ._given import given_message
from ._options import is_id, wrong_type
from ._outgoing import Outgoing, to_send
from ._schema import Message, Notification, Request, Response

__all__ = ["read", "received", "wire_of"]

#: The envelope members a response echoes from its request (each when its
#: request carried it), besides ``id`` and ``correlation_id``.
_ECHOED: Final = ("command_id", "causation_id", "project_ref", "task_ref")

#: The members of a message that name a request (any JSON value each:
#: `_recovered` checks them). Only these are built when invalid input is
#: parsed again (msgspec skips the rest).
_Identity: Final = msgspec.defstruct(
    "_Identity",
    [(name, Any, None) for name in ("type", "id", "correlation_id", *_ECHOED)],
)
_IDENTITY_DECODER: Final = msgspec.json.Decoder(_Identity)

#: Codes of input that is never parsed again to recover a request identity:
#: too large, not text, not JSON or too deep.
_UNRECOVERABLE: Final = frozenset(
    {
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.INVALID_UTF8,
        ErrorCode.INVALID_JSON,
        ErrorCode.DEPTH_EXCEEDED,
        ErrorCode.DUPLICATE_KEY,
    }
)


def wire_of(data: object, max_bytes: int) -> bytes | str | None:
    """The bytes (or text) of ``data`` to decode; ``None`` for a `Message`.

    Text within the bound becomes its UTF-8 bytes (sizes count UTF-8 bytes
    either way); a lone surrogate stays text, for decode to name it, and
    text over the bound by code points stays text, which decode refuses
    without encoding it. A buffer within the bound is copied to bytes.

    Raises:
        TypeError: ``data`` is none of bytes, bytearray, memoryview, str or
            a `Message`.
        ProtocolError: ``message_too_large`` (peer) for a buffer over the
            bound, raised before it is copied.
    """
    if type(data) is str and len(data) <= max_bytes:
        try:
            return data.encode("utf-8")
        except UnicodeEncodeError:
            return data
    if isinstance(data, (bytes, str)):
        return data
    if isinstance(data, bytearray | memoryview):
        if (data.nbytes if isinstance(data, memoryview) else len(data)) > max_bytes:
            decode(data, max_message_bytes=max_bytes)
        return bytes(data)
    if isinstance(data, Request | Response | Notification):
        return None
    raise wrong_type("data", data, "bytes, bytearray, memoryview, str or a Message")


def received(
    wire: bytes | str | None,
    given: object,
    max_bytes: int,
    scratch: bytearray,
    results: PendingMethod | None = None,
) -> tuple[Message, bool]:
    """The message in ``wire`` (`wire_of` what the caller gave), or, when
    ``wire`` is ``None``, the `Message` ``given`` validated as if it had
    arrived as its JSON (size included) and decoded from it (params the
    method's Struct); and whether ``wire`` is the library's own encoding of
    it (``decode_wire``: a window's key is then taken from it).
    ``scratch`` is the codec's re-encoding buffer, ``results`` a Client's
    pending-request methods (see ``decode_wire``).

    Raises:
        ProtocolError: origin ``peer`` for invalid input; for a given
            `Message`, origin ``local`` when it holds values no JSON decoder
            produces (the caller's own).
    """
    if wire is None:
        assert isinstance(given, Request | Response | Notification)
        return given_message(given, max_bytes), False
    try:
        # Bytes within the bound go straight to the codec's fast path
        # (what decode does after its argument checks).
        if type(wire) is bytes and len(wire) <= max_bytes:
            return decode_wire(wire, False, scratch, results)
        return decode(wire, max_message_bytes=max_bytes), False
    except ProtocolError as error:
        # Every failure of the peer's bytes is the peer's.
        if error.origin == "peer":
            raise
        raise error.with_origin("peer") from None


def read(
    wire: bytes | str | None,
    given: object,
    max_bytes: int,
    scratch: bytearray,
) -> tuple[Message | Outgoing, bool]:
    """`received`, for a Server: invalid input that still names a request
    identity gives the error response answering it instead (its request
    must not wait for a timeout).

    Raises:
        ProtocolError: origin ``peer`` for invalid input that cannot be
            answered; origin ``local`` for a given `Message` holding values
            no JSON decoder produces (the caller's own, unanswered).
    """
    try:
        return received(wire, given, max_bytes, scratch)
    except ProtocolError as error:
        if error.origin == "local":
            raise
        source = wire if wire is not None else given
        assert isinstance(source, bytes | str | Request | Response | Notification)
        return _answer(source, error, max_bytes), False


def _answer(
    source: bytes | str | Message, error: ProtocolError, max_bytes: int
) -> Outgoing:
    """The error response answering invalid ``source`` (`_recovered`), or
    ``error`` raised (origin ``peer``) when it names no request."""
    answer = _recovered(source, error, max_bytes)
    if answer is None:
        raise error from None
    return answer


def _recovered(
    source: bytes | str | Message, error: ProtocolError, max_bytes: int
) -> Outgoing | None:
    """The error response to invalid input that still names a request
    identity, or None. Input that is too large, not UTF-8, not JSON or too
    deep is never parsed again."""
    if error.code in _UNRECOVERABLE:
        return None
    try:
        # Only the identity members are built: a large invalid message is
        # not parsed into objects twice.
        term: Any = (
            msgspec.structs.asdict(_IDENTITY_DECODER.decode(source))
            if isinstance(source, bytes | str)
            else msgspec.to_builtins(source)
        )
    except Exception:
        return None
    if not isinstance(term, dict) or term.get("type") != "request":
        return None
    id_, correlation_id = term.get("id"), term.get("correlation_id")
    if not (is_id(id_) and is_id(correlation_id)):
        return None
    # Echo what the client will compare (its request carried valid ids
    # there); whatever is itself invalid is left out.
    echo = {k: term[k] for k in _ECHOED if is_id(term.get(k))}
    if "task_ref" in echo and "project_ref" not in echo:
        del echo["task_ref"]
    assert isinstance(id_, str) and isinstance(correlation_id, str)
    response = Response(
        id=id_, correlation_id=correlation_id, error=error.to_wire(), **echo
    )
    try:
        return to_send(response, max_bytes)
    except ProtocolError:
        return None
