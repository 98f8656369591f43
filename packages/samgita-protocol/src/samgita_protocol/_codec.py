"""Encode and decode native 1.0 messages; only ``ProtocolError`` escapes.

``decode`` checks, in this order, each with its own code (the reference
order of the Elixir codec and ``schemas/1.0/manifest.json``):

1. at most ``max_message_bytes`` UTF-8 bytes (``message_too_large``; a
   ``str`` counts by its UTF-8 length), before anything is parsed;
2. valid UTF-8 (``invalid_utf8``);
3. nesting at most 32 deep (``depth_exceeded``), one JSON value with nothing
   after it (``invalid_json``), no object repeating a key
   (``duplicate_key``, at every level);
4. the envelope and the method's params (see ``_validate.envelope_rules``
   and docs/protocol.md sections 2, 4, 5).

How it stays cheap: one typed decode per message. The method's name
chooses the decoder (read from the bytes when they start as this library
writes them, ``{"type":"request","schema_version":"1.0","method":"...``;
otherwise by a decode of the two members ``type`` and ``method``): the
envelope with ``params`` typed as the method's params Struct, built once at
import. A Client's response to a pending request is decoded the same way
with the method's result Struct (``typed_result``); any other response
keeps ``result`` as ``msgspec.Raw``. msgspec validates UTF-8, syntax,
trailing data, types and constraints while it parses; it silently keeps
the last of repeated keys (msgspec issue 648) and fills a missing
``schema_version`` with its default. So the decoded message is encoded
again:

* when those bytes equal the input (every message this library encodes:
  msgspec's output is canonical for a decoded value) the input can neither
  repeat a key nor lack a field: one encode and one ``memcmp``;
* otherwise, when the input spells no colon as ``\\u003a``, input and
  re-encoding have the same number of colons exactly when no key repeats
  (one structural colon per key; each repeat loses at least its own), and
  a tiny head decode (``schema_version`` required) rules out the default
  filling in for a missing field;
* otherwise the exact tokenizer (``_validate.find_duplicate_key``) decides.

The envelope rules a type cannot express (``rules_hold``) are checked on
the typed envelope. Depth needs no scan for typed fields (msgspec fails at
the first unexpected bracket without building it); a message with
free-form JSON (``dict[str, Any]``, a raw ``result``) is measured on its
bytes (at most 32 ``{`` and ``[`` in all proves depth <= 32, otherwise an
exact scan of the bracket bytes outside string literals); a response's
``error.data`` is built by msgspec (bounded by its recursion guard) and
measured right after. Anything the typed decode does not accept outright
is decoded again by ``_validate.explain``, which checks everything in the
order above and names the first violation (tests/test_codec_robustness.py
checks that both agree on every generated input). There is no second
accepting path: figures are in bench/codec.py and the README.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeAlias

import msgspec
from msgspec import UNSET

from ._errors import ErrorCode, ProtocolError
from ._jsonscan import (
    COUNT_BELOW,
    MAX_DEPTH,
    ascii_only,
    colon_count,
    colons_kept,
    depth_within,
    error,
    find_duplicate_key,
)
from ._methods import METHODS
from ._options import DEFAULT_MAX_MESSAGE_BYTES, positive_int, wrong_type
from ._plans import (
    BY_WIRE_NAME,
    NOTIFICATION_PREFIX,
    PLANS,
    REQUEST_PREFIX,
    RESPONSE_PLANS,
    RESPONSE_PREFIX,
    Plan,
    rules_hold,
)
from ._results import as_json, json_problem
from ._schema import (
    Message,
    Notification,
    Request,
    Response,
)
from ._validate import (
    ANY_DECODER,
    ENCODER,
    ENVELOPE_DECODER,
    HEAD_DECODER,
    check_struct,
    explain,
    has_free_form,
)

__all__ = [
    "decode",
    "encode",
    "validate",
]


_MESSAGE_TYPES: Final = (Request, Response, Notification)
_encode: Final = ENCODER.encode
_encode_into: Final = ENCODER.encode_into
# What msgspec raises on bad input: syntax (DecodeError, a ValueError),
# schema (ValidationError), invalid UTF-8 (UnicodeDecodeError, a ValueError)
# and nesting beyond the interpreter's recursion limit (RecursionError).
_DECODE_FAILURES: Final = (ValueError, RecursionError)


def _check_bound(max_message_bytes: int) -> None:
    # A programming error, not bad input: TypeError for the wrong type,
    # ValueError for a wrong value (the convention of every option).
    if type(max_message_bytes) is not int or max_message_bytes < 1:
        positive_int("max_message_bytes", max_message_bytes)


def _too_large(size: int, limit: int, origin: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.MESSAGE_TOO_LARGE,
        f"message is larger than {limit} bytes",
        data={"bytes": size, "max": limit},
        origin="peer" if origin == "peer" else "local",
    )


def decode(
    data: bytes | bytearray | memoryview | str,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> Message:
    """Decodes and validates one message.

    A request's or notification's ``params`` is the method's params Struct;
    a response's ``result`` is left as ``msgspec.Raw`` (an object, checked
    for syntax, depth and repeated keys) for ``decode_result`` against the
    pending request.

    Raises:
        ProtocolError: origin ``peer`` with ``message_too_large``,
            ``invalid_utf8``, ``depth_exceeded``, ``invalid_json``,
            ``duplicate_key``, ``invalid_message``, ``unsupported_version``,
            ``invalid_type``, ``unknown_method``, ``unknown_field``,
            ``missing_field``, ``invalid_field``, ``invalid_params``,
            ``missing_command_id``, ``unexpected_command_id``,
            ``task_ref_without_project_ref``, ``unpaired_stream_position`` or
            ``invalid_response``; ``data.path`` is the JSON pointer of the
            offending field (a ``str`` or ``bytearray``/``memoryview`` over
            the bound is refused before it is encoded or copied).
        TypeError: ``data`` is not bytes, bytearray, memoryview or str, or
            ``max_message_bytes`` is not an int (the message names it).
        ValueError: ``max_message_bytes`` is not positive.
    """
    # The common case in one test: bytes within a valid bound.
    if (
        type(data) is bytes
        and type(max_message_bytes) is int
        and 0 < len(data) <= max_message_bytes
    ):
        return decode_wire(data)[0]
    if type(max_message_bytes) is not int or max_message_bytes < 1:
        _check_bound(max_message_bytes)
    if type(data) is bytes:
        wire = data
    elif isinstance(data, str):
        # Sized before encoding: the UTF-8 length is at least len(data), so
        # a text over the bound by code points is refused without a copy
        # (data.bytes is then that lower bound, exact for ASCII text).
        if len(data) > max_message_bytes:
            raise _too_large(len(data), max_message_bytes, "peer")
        try:
            wire = data.encode("utf-8")
        except UnicodeEncodeError:
            size = len(data.encode("utf-8", "surrogatepass"))
            if size > max_message_bytes:
                raise _too_large(size, max_message_bytes, "peer") from None
            raise error(
                ErrorCode.INVALID_UTF8, "message holds a lone surrogate"
            ) from None
    elif isinstance(data, (bytes, bytearray, memoryview)):
        # Sized before the copy.
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        if size > max_message_bytes:
            raise _too_large(size, max_message_bytes, "peer")
        wire = bytes(data)
    else:
        raise wrong_type("data", data, "bytes, bytearray, memoryview or str")
    if len(wire) > max_message_bytes:
        raise _too_large(len(wire), max_message_bytes, "peer")
    return decode_wire(wire)[0]


_REQUEST_AT: Final = len(REQUEST_PREFIX)
_NOTIFICATION_AT: Final = len(NOTIFICATION_PREFIX)
_RESPONSE_AT: Final = len(RESPONSE_PREFIX)
_RESPONSE_DECODER: Final = msgspec.json.Decoder(Response)
#: This library's own start of a response (the tag present).
_RESPONSE_TAG: Final = b'{"type":"response",'


class _Kind(msgspec.Struct):
    """What chooses the decoder of input in another key order (only these
    two members are built; msgspec skips the rest)."""

    type: Any = None
    method: Any = None


_KIND_DECODER: Final = msgspec.json.Decoder(_Kind)
_KIND_NAME: Final[dict[type[msgspec.Struct], str]] = {
    Request: "request",
    Notification: "notification",
}

# Whether each params Struct type can hold free-form JSON (where a caller
# could splice in raw JSON that needs the duplicate-key proof).
_STRUCT_FREE_FORM: Final[Mapping[type, bool]] = MappingProxyType(
    {spec.params: has_free_form(spec.params) for spec in METHODS.values()}
)

#: A Client's view of its pending requests: the method of the one an id
#: names, or ``None``.
PendingMethod: TypeAlias = Callable[[str], "str | None"]


def _plan_of(wire: bytes) -> Plan | None:
    """The plan of the request or notification method that input in
    another key order (or with an escaped name) names, read by a decode of
    the two members that choose; ``None`` for a response or anything the
    union decode explains."""
    try:
        kind = _KIND_DECODER.decode(wire)
    except _DECODE_FAILURES:
        return None
    plan = PLANS.get(kind.method) if type(kind.method) is str else None
    if plan is None or kind.type != _KIND_NAME[plan.envelope]:
        return None
    return plan


def decode_wire(
    wire: bytes,
    own_encoding: bool = False,
    scratch: bytearray | None = None,
    results: PendingMethod | None = None,
) -> tuple[Message, bool]:
    """``decode`` of bytes within the size bound (see the module docstring),
    and whether ``wire`` is this library's own encoding of the message
    (``ENCODER``'s, deterministic: then it is the message's canonical form
    for a window of typed messages, see ``_content``). ``own_encoding`` is
    for ``encode`` only (see `_accept`); ``scratch`` a buffer the caller
    owns and no other thread uses (a connection's), for the re-encoding (no
    new bytes object per message). ``results`` (a Client's) gives the
    method of the pending request an id names: a result response to it is
    decoded by that method's result type and carries the result Struct
    instead of ``msgspec.Raw`` (its contextual rules are the caller's).
    """
    # The plan: chosen by the method's name (or a response's id) read from
    # the bytes when they start as this library writes them (the tag, which
    # a decoder of one tagged type does not require, is then present), else
    # by a head decode. Inline: a call costs about a tenth of the decode.
    plan: Plan | None = None
    if wire.startswith(REQUEST_PREFIX):
        plan = BY_WIRE_NAME.get(wire[_REQUEST_AT : wire.find(b'"', _REQUEST_AT)])
    elif wire.startswith(NOTIFICATION_PREFIX):
        at = _NOTIFICATION_AT
        plan = BY_WIRE_NAME.get(wire[at : wire.find(b'"', at)])
    elif wire.startswith(RESPONSE_PREFIX):
        if results is not None:
            at = _RESPONSE_AT
            method = results(wire[at : wire.find(b'"', at)].decode("latin-1"))
            plan = None if method is None else RESPONSE_PLANS.get(method)
            if plan is not None:
                found = _accept(wire, plan, own_encoding, scratch, results)
                # Otherwise the raw path decides (a result its schema
                # refuses is the caller's invalid_result, not a decode error).
                return found if found is not None else (_other(wire, None), False)
    elif not wire.startswith(_RESPONSE_TAG):
        plan = _plan_of(wire)
    if plan is None:
        return _other(wire, results), False
    found = _accept(wire, plan, own_encoding, scratch, results)
    return found if found is not None else (explain(wire), False)


def _accept(
    wire: bytes,
    plan: Plan,
    own_encoding: bool,
    scratch: bytearray | None,
    results: PendingMethod | None,
) -> tuple[Message, bool] | None:
    """The message of ``wire`` when ``plan``'s typed decode proves every
    rule, and whether ``wire`` is the message's own encoding; or ``None``
    (then the caller's general path names the violation).
    """
    try:
        typed = plan.typed.decode(wire)
    except _DECODE_FAILURES:
        return None
    # ``own_encoding``: ``wire`` is msgspec's encoding of a message whose
    # params are a Struct without free-form JSON (encode() says so), so it is
    # canonical by construction: Structs have unique keys, schema_version is
    # always written, and nothing raw was spliced in.
    if own_encoding:
        same = True
    elif scratch is not None:
        _encode_into(typed, scratch)
        same = scratch == wire
    else:
        canonical = _encode(typed)
        same = canonical == wire
    if same:
        # msgspec writes non-ASCII text as raw UTF-8 (its only \u escapes
        # are for control characters), so ASCII canonical bytes decode to
        # ASCII strings, whose code points are their bytes.
        ascii_input = wire.isascii()
    elif _unique_keys(
        wire, ((wire, bytes(scratch) if scratch is not None else canonical),)
    ):
        # ascii_only inline for input without a backslash (no \u escape)
        ascii_input = wire.isascii() and (wire.find(b"\\") < 0 or ascii_only(wire))
    else:
        return None
    # The decoded message names what chose the plan: its method, or the id
    # of a pending request of that method.
    if plan.payload == "params":
        if typed.method != plan.name:
            return None
    elif results is None or results(typed.id) != plan.name:
        return None
    if not rules_hold(typed, plan):
        return None
    # The payload is the envelope's only container: a bound on the whole input.
    if plan.free_form and not depth_within(wire, MAX_DEPTH):
        return None
    message = plan.build(typed)
    if not ascii_input or plan.walk_ascii:
        try:
            if not ascii_input:
                check_struct(message, "", ascii_input)
            if plan.walk_ascii if ascii_input else plan.walk_any:
                payload = plan.payload
                check_struct(getattr(typed, payload), "/" + payload, ascii_input)
        except ProtocolError:
            return None
    return message, same


def _other(wire: bytes, results: PendingMethod | None) -> Message:
    """A response (its result raw, unless ``results`` names the pending
    method of an input in another key order), or input the union decode
    explains."""
    # A decoder of the one tagged type does not require the tag: only
    # this library's own start (which spells it) takes it.
    decoder = _RESPONSE_DECODER if wire.startswith(_RESPONSE_TAG) else ENVELOPE_DECODER
    try:
        envelope = decoder.decode(wire)
    except _DECODE_FAILURES:
        return explain(wire)
    if type(envelope) is not Response:
        return explain(wire)
    if results is not None and envelope.result is not UNSET:
        method = results(envelope.id)
        plan = None if method is None else RESPONSE_PLANS.get(method)
        if plan is not None:
            found = _accept(wire, plan, False, None, results)
            if found is not None:
                return found[0]
    if envelope.task_ref is not UNSET and envelope.project_ref is UNSET:
        return explain(wire)
    return _response(wire, envelope)


def _unique_keys(wire: bytes, pairs: tuple[tuple[bytes, bytes], ...]) -> bool:
    """Whether ``wire`` repeats no key in any object and has a top-level
    ``schema_version``, given ``pairs`` of (input bytes, msgspec's encoding
    of what they decoded to) that together cover every key of ``wire``.

    An input has exactly one structural colon per key and none in numbers
    or literals; when it spells no colon as ``\\u003a`` (``colons_kept``)
    each kept string has as many colons as in msgspec's re-encoding. So the
    input has as many colons as its re-encoding, plus at least one per
    repeated key (whose entry the decoded value lost), minus one for a
    missing ``schema_version`` (which decoding filled in with its default);
    the head decode rules out the latter. Otherwise the exact tokenizer
    decides.
    """
    # colons_kept inline for input without a backslash (no escape at all)
    if wire.find(b"\\") < 0 or colons_kept(wire):
        for a, b in pairs:
            # short input counted inline (colon_count finds on long input)
            if len(a) <= COUNT_BELOW:
                if a.count(b":") != b.count(b":"):
                    break
            elif colon_count(a) != colon_count(b):
                break
        else:
            try:
                HEAD_DECODER.decode(wire)
            except _DECODE_FAILURES:
                return False
            return True
    # A value msgspec dropped for a repeated key was never decoded, so its
    # UTF-8 is unchecked: let the exact path name that first.
    return _utf8(wire) and find_duplicate_key(wire) is None


def _utf8(wire: bytes) -> bool:
    if wire.isascii():
        return True
    try:
        wire.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _response(wire: bytes, envelope: Response) -> Message:
    if (envelope.result is UNSET) is (envelope.error is UNSET):
        return explain(wire)
    ascii_input = ascii_only(wire)
    try:
        if not ascii_input:
            check_struct(envelope, "", ascii_input)
        if envelope.error is not UNSET:
            data = envelope.error.data
            if data is not UNSET and not _json_depth_within(data, MAX_DEPTH - 2):
                return explain(wire)
            encoded = ENCODER.encode(envelope)
            pairs: tuple[tuple[bytes, bytes], ...] = ((wire, encoded),)
        else:
            assert envelope.result is not UNSET  # exactly one of result or error
            raw = bytes(envelope.result)
            if not depth_within(raw, MAX_DEPTH - 1):
                return explain(wire)
            result = ANY_DECODER.decode(raw)
            if type(result) is not dict:
                return explain(wire)
            pairs = ((wire, ENCODER.encode(envelope)), (raw, ENCODER.encode(result)))
    except (*_DECODE_FAILURES, ProtocolError):
        return explain(wire)
    if any(a != b for a, b in pairs) and not _unique_keys(wire, pairs):
        return explain(wire)
    return envelope


def _json_depth_within(value: Any, levels: int) -> bool:
    """Whether a decoded free-form value (the error object's ``data``, which
    msgspec builds with the envelope, bounded by its own recursion guard)
    nests at most ``levels`` containers deep."""
    if type(value) is dict:
        return levels >= 1 and all(
            _json_depth_within(v, levels - 1) for v in value.values()
        )
    if type(value) is list:
        return levels >= 1 and all(_json_depth_within(v, levels - 1) for v in value)
    return True


def encode_unchecked(message: object) -> bytes:
    """The JSON bytes of a message object, without validating its content.

    Raises:
        TypeError: ``message`` is not a Request, Response or Notification.
        ProtocolError: origin ``local``: ``invalid_utf8``, ``depth_exceeded``
            or ``invalid_field`` when msgspec cannot encode a value in it.
    """
    if type(message) not in _MESSAGE_TYPES:
        raise wrong_type("message", message, "a Request, Response or Notification")
    return as_json(message, ErrorCode.INVALID_FIELD, "the message")


def encode(
    message: Message, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> bytes:
    """Validates and encodes one message to its JSON bytes.

    The bytes are decoded again with every rule of ``decode``, so anything
    this returns is accepted by ``decode`` (a response's ``result`` is
    checked against its method only by ``decode_result``).

    Raises:
        TypeError: ``message`` is not a Request, Response or Notification,
            or ``max_message_bytes`` is not an int (the message names it).
        ValueError: ``max_message_bytes`` is not positive.
        ProtocolError: origin ``local``: ``message_too_large``
            (``data.bytes``, ``data.max``) when the
            encoding exceeds ``max_message_bytes``; ``invalid_utf8``,
            ``depth_exceeded``, ``invalid_field`` for a value msgspec cannot
            encode; ``invalid_key`` for a non-string key and
            ``invalid_field`` for a value JSON cannot carry as it is (a
            tuple, set, bytes, NaN, ...) inside a free-form object;
            otherwise the code ``decode`` gives for the bytes.
    """
    _check_bound(max_message_bytes)
    wire = encode_unchecked(message)
    if len(wire) > max_message_bytes:
        raise _too_large(len(wire), max_message_bytes, "local")
    # Only our own params Structs without free-form fields are known to
    # encode canonically (a user Struct or a dict could carry raw JSON).
    own = _STRUCT_FREE_FORM.get(type(getattr(message, "params", None))) is False
    try:
        decoded = decode_wire(wire, own)[0]
    except ProtocolError as exc:
        raise exc.with_origin("local") from None
    # msgspec encodes some non-JSON values silently (int keys as strings,
    # tuples and sets as arrays, NaN as null, bytes as base64). What
    # decodes back to the same message cannot hold one; anything else is
    # walked once to name it.
    if type(message) is Response:
        result = message.result
        same = msgspec.structs.replace(decoded, result=result) == message
        if result is not UNSET and not (
            isinstance(result, msgspec.Struct) and not has_free_form(type(result))
        ):
            same = False
    else:
        same = decoded == message
    if not same:
        if own:
            # Something in the params is not what its type says (raw JSON
            # in a Struct field, say): the bytes are not canonical after all.
            try:
                decode_wire(wire)
            except ProtocolError as exc:
                raise exc.with_origin("local") from None
        problem = json_problem(message, "")
        if problem is not None:
            raise problem
    return wire


def validate(message: Message) -> Message:
    """Checks a locally built message with every rule ``encode`` applies
    (the rules of ``decode`` on its encoding, and no value that JSON would
    change) except the size bound, and returns it unchanged.

    Raises:
        TypeError: ``message`` is not a Request, Response or Notification.
        ProtocolError: with origin ``local`` and the code ``encode`` would
            give.
    """
    encode(message, max_message_bytes=sys.maxsize)
    return message
