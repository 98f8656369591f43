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

How it stays cheap. A message is first decoded optimistically with msgspec:
the envelope (``params`` and ``result`` kept as ``msgspec.Raw``), then the
method's params Struct, each with a decoder built once at import (immutable).
msgspec validates UTF-8, syntax, trailing data, types and constraints while
it parses; it silently keeps the last of repeated keys (msgspec issue 648)
and fills a missing ``schema_version`` with its default. So the decoded
message is encoded again:

* when those bytes equal the input (every message this library encodes:
  msgspec's output is canonical for a decoded value) the input can neither
  repeat a key nor lack a field: one encode and one ``memcmp``;
* otherwise, when the input spells no colon as ``\\u003a``, input and
  re-encoding have the same number of colons exactly when no key repeats
  (one structural colon per key; each repeat loses at least its own), and
  a tiny head decode (``schema_version`` required) rules out the default
  filling in for a missing field;
* otherwise the exact tokenizer (``_validate.find_duplicate_key``) decides.

Depth needs no scan on the typed path: a typed field never holds a deeper
value than the schema allows (msgspec fails at the first unexpected bracket
without building it, and skips a ``Raw`` without building it). Free-form
JSON (``dict[str, Any]``, a raw ``result``) is measured before it is built:
at most 32 ``{`` and ``[`` in all (counted; found with memchr on long input)
proves depth <= 32 in the common case, otherwise
an exact scan of the bracket bytes outside string literals; a response's
``error.data`` is built by msgspec (bounded by its recursion guard) and
measured right after. Anything the fast path does not accept outright is
decoded again by ``_validate.explain``, which checks everything in the order
above and names the first violation, so both paths give the same codes
(tests/test_codec_robustness.py checks that on every generated input).

Cost (bench/codec.py, median of per-round ratios, 2 loaded shared cores,
figures of several runs): the validated decode of a 450-byte ``item/delta``
notification takes 0.56-0.62x ``json.loads`` of the same bytes (about 3x
untyped ``msgspec``); of its ~2.5 us the duplicate-key proof (re-encode and
compare) is ~0.55 us, the depth proof nothing for ``item/delta``, the
envelope and params decodes ~1.1 us. The same message with keys reordered
and indented takes about 1.2-1.3x ``json.loads`` (colon count and head
decode); only input with a repeated key or a ``\\u003a`` goes through the
tokenizer (about 30 us for 500 bytes). ``encode`` (which decodes its own
bytes again, without re-encoding them) is 0.57-0.63x ``json.dumps``.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

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
from ._options import DEFAULT_MAX_MESSAGE_BYTES, positive_int, wrong_type
from ._results import as_json, json_problem
from ._schema import METHODS, Message, Notification, Request, Response
from ._validate import (
    ANY_DECODER,
    ENCODER,
    ENVELOPE_DECODER,
    HEAD_DECODER,
    PARAMS_DECODERS,
    check_struct,
    explain,
    has_free_form,
    needs_walk,
)

__all__ = [
    "FAST",
    "Fast",
    "decode",
    "encode",
    "typed_envelope",
    "validate",
]


_MESSAGE_TYPES: Final = (Request, Response, Notification)
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
        return decode_checked(data)
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
    return decode_checked(wire)


def typed_envelope(
    cls: type[msgspec.Struct], typed: str, as_type: type[Any], drop: str | None = None
) -> type[msgspec.Struct]:
    """Envelope ``cls`` with field ``typed`` required and of type ``as_type``
    (and without field ``drop``): the same fields, order, constraints and
    configuration otherwise, so it decodes and encodes what ``cls`` does
    with that field typed."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[Any] = []
    for field in msgspec.structs.fields(cls):
        assert field.encode_name == field.name  # no renamed fields to copy
        if field.name == drop:
            continue
        if field.name == typed:
            fields.append((typed, as_type))
        elif field.required:
            fields.append((field.name, hints[field.name]))
        else:
            fields.append((field.name, hints[field.name], field.default))
    config = cls.__struct_config__
    return msgspec.defstruct(
        "Typed" + cls.__name__,
        fields,
        frozen=config.frozen,
        forbid_unknown_fields=config.forbid_unknown_fields,
        omit_defaults=config.omit_defaults,
        kw_only=True,
        tag_field=config.tag_field,
        tag=config.tag,
        module=__name__,
    )


class Fast(NamedTuple):
    """What the fast paths need to know of one method, in one lookup."""

    envelope: type[Request] | type[Notification]
    mutation: bool
    params: msgspec.json.Decoder[Any]
    free_form: bool
    walk_ascii: bool
    walk_any: bool
    #: The params Struct type.
    params_type: type[Any]
    #: The envelope with ``params`` typed as that Struct: one decode checks
    #: a whole message (``_hotpath.checked_wire``).
    typed: msgspec.json.Decoder[Any]
    #: Neither free-form JSON (no depth scan) nor a walk of ASCII input.
    plain: bool


FAST: Final[Mapping[str, Fast]] = MappingProxyType(
    {
        name: Fast(
            envelope=Request if spec.kind == "request" else Notification,
            mutation=spec.mutation,
            params=PARAMS_DECODERS[name],
            free_form=has_free_form(spec.params),
            walk_ascii=needs_walk(spec.params, True),
            walk_any=needs_walk(spec.params, False),
            params_type=spec.params,
            typed=msgspec.json.Decoder(
                typed_envelope(
                    Request if spec.kind == "request" else Notification,
                    "params",
                    spec.params,
                )
            ),
            plain=not has_free_form(spec.params) and not needs_walk(spec.params, True),
        )
        for name, spec in METHODS.items()
    }
)
#: The same, keyed by the method name's bytes (as it appears on the wire).
_NOTIFICATION_PREFIX: Final = b'{"type":"notification",'
_REQUEST_PREFIX: Final = b'{"type":"request",'
_VERSION_FIRST: Final = b'{"schema_version":"1.0","type":"'
_VERSION_REQUEST: Final = b'{"schema_version":"1.0","type":"request",'
_VERSION_NOTIFICATION: Final = b'{"schema_version":"1.0","type":"notification",'
_NOTIFICATION_DECODER: Final = msgspec.json.Decoder(Notification)
_REQUEST_DECODER: Final = msgspec.json.Decoder(Request)


# Whether each params Struct type can hold free-form JSON (where a caller
# could splice in raw JSON that needs the duplicate-key proof).
_STRUCT_FREE_FORM: Final[Mapping[type, bool]] = MappingProxyType(
    {spec.params: has_free_form(spec.params) for spec in METHODS.values()}
)


def decode_checked(
    wire: bytes,
    *,
    own_encoding: bool = False,
    # Bound once at definition: this runs for every message, and each global
    # or attribute lookup it saves is ~20 ns (~0.3 us in all, a tenth of
    # the decode). Never passed by callers.
    _unset: Any = UNSET,
    # A private plain dict: a mapping proxy's get costs ~20 ns more.
    _fast_table: Mapping[str, Fast] = dict(FAST),  # noqa: B008
    _request: type[Request] = Request,
    _response_type: type[Response] = Response,
    _set_params: Any = msgspec.structs.force_setattr,
    _encode: Any = ENCODER.encode,
    _failures: tuple[type[BaseException], ...] = _DECODE_FAILURES,
) -> Message:
    """``decode`` of bytes within the size bound (the fast path; see the
    module docstring). ``own_encoding`` is for ``encode`` only (see below)."""
    # This library's own messages start with their tag; a decoder of that
    # one type skips the union dispatch (about 0.25 us). Anything else, or
    # a tag that is not what the prefix promised, is decoded by the union
    # (or fails and is explained). (One decode of the envelope with typed
    # params, as the send shortcut uses, is not cheaper here: choosing its
    # decoder by the method's bytes and building the message from it cost
    # more than the second decode saves.)
    if wire.startswith(_NOTIFICATION_PREFIX):
        decoder: msgspec.json.Decoder[Any] = _NOTIFICATION_DECODER
    elif wire.startswith(_REQUEST_PREFIX):
        decoder = _REQUEST_DECODER
    elif wire.startswith(_VERSION_FIRST):
        # The other common order (the schema's, and docs/protocol.md's
        # examples): schema_version, then the tag.
        if wire.startswith(_VERSION_REQUEST):
            decoder = _REQUEST_DECODER
        elif wire.startswith(_VERSION_NOTIFICATION):
            decoder = _NOTIFICATION_DECODER
        else:
            decoder = ENVELOPE_DECODER
    else:
        decoder = ENVELOPE_DECODER
    try:
        envelope = decoder.decode(wire)
    except _failures:
        return explain(wire)
    if envelope.task_ref is not _unset and envelope.project_ref is _unset:
        return explain(wire)
    kind = type(envelope)
    if kind is _response_type:
        return _response(wire, envelope)
    fast = _fast_table.get(envelope.method)
    if fast is None or fast.envelope is not kind:
        return explain(wire)
    if kind is _request:
        if fast.mutation is (envelope.command_id is _unset):
            return explain(wire)
    elif (envelope.stream_id is _unset) is not (envelope.cursor is _unset):
        return explain(wire)
    raw = envelope.params
    if fast.free_form and not depth_within(bytes(raw), MAX_DEPTH - 1):
        return explain(wire)
    try:
        params = fast.params.decode(raw)
    except _failures:
        return explain(wire)
    # The envelope was decoded just now and nothing else holds it, so its
    # params slot is filled in place (a copy with replace() costs twice as
    # much); callers only ever see the finished, frozen message.
    _set_params(envelope, "params", params)
    # ``own_encoding``: ``wire`` is msgspec's encoding of a message whose
    # params are a Struct without free-form JSON (encode() says so), so it is
    # canonical by construction: Structs have unique keys, schema_version is
    # always written, and nothing raw was spliced in.
    canonical: bytes = wire if own_encoding else _encode(envelope)
    if canonical == wire:
        # msgspec writes non-ASCII text as raw UTF-8 (its only \u escapes
        # are for control characters), so ASCII canonical bytes decode to
        # ASCII strings, whose code points are their bytes.
        ascii_input = wire.isascii()
    elif _unique_keys(wire, ((wire, canonical),)):
        # ascii_only inline for input without a backslash (no \u escape)
        ascii_input = wire.isascii() and (wire.find(b"\\") < 0 or ascii_only(wire))
    else:
        return explain(wire)
    if not ascii_input or fast.walk_ascii:
        try:
            if not ascii_input:
                check_struct(envelope, "", ascii_input)
            if fast.walk_ascii if ascii_input else fast.walk_any:
                check_struct(params, "/params", ascii_input)
        except ProtocolError:
            return explain(wire)
    message: Message = envelope
    return message


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
        decoded = decode_checked(wire, own_encoding=own)
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
                decode_checked(wire)
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
