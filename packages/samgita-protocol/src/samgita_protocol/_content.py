"""What a bounded window remembers of a message's content (private).

The one home of the content rule of docs/protocol.md section 10: a repeated
request id (the Server's incoming window, the Client's completed-response
window) or stream cursor (a Client's received but unprocessed events) with
the same content is a repeat, with other content a conflict. Content is
exact JSON content, independent of key order and whitespace on the wire
(``1`` and ``1.0`` differ, as on the wire), so a window compares canonical
encodings of the decoded message, in one of two forms:

* ``canonical`` (every window but the Server's): msgspec's encoding with
  every object's keys sorted, Struct fields included, of the message with
  any raw JSON in it decoded. One form whether a payload is its Struct or
  still raw: a response completes its request with a typed result and can
  come again later with a raw one; a ``stream/resume`` page's event is raw.
* the typed form (``typed=True``: a Server's incoming requests, whose params
  are always the method's Struct): this library's own encoding
  (``_validate.ENCODER``, deterministic: Struct fields in definition order,
  every object's keys sorted, no whitespace). ``decode_wire`` reports
  when the input *is* that encoding (always, for what this library sent),
  so the key is taken from the wire bytes as they are; a large request is
  then not encoded again (bench/large.py: a second encode was about a
  third of a 1 MiB receive).

A message of at most :data:`INLINE_BYTES` wire bytes is kept by those bytes
(a reference, nothing copied; a repeat with other bytes is decoded again and
compared in the window's form). Anything larger, or a message handed in
without its bytes, is kept as the digest of its canonical bytes: Python's
own keyed 64-bit SipHash of ``bytes`` (``hash``, randomized per process,
computed once per bytes object), several times cheaper than SHA-256 (0.6 ms
per MiB here) and enough for windows that live in one process's memory. It
guards against accidental conflicts between authenticated peers; it is not
a security boundary.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import msgspec

from ._codec import decode
from ._schema import Notification, Request, Response
from ._validate import ENCODER

#: Messages decoded from at most this many bytes are remembered by their
#: wire bytes; larger ones by digest, so a window of ``n`` entries keeps at
#: most about ``n`` KiB of wire content.
INLINE_BYTES: Final = 1024

#: What a window keeps of a message: ``("wire", bytes_or_str)`` or
#: ``("digest", int)``.
ContentKey: TypeAlias = "tuple[str, bytes | str | int]"

_SORTED: Final = msgspec.json.Encoder(order="sorted")
_ANY: Final = msgspec.json.Decoder()


def digest(data: bytes) -> int:
    """The digest a window keeps of canonical bytes (see the module
    docstring)."""
    return hash(data)


def canonical(value: object) -> bytes:
    """The canonical JSON of a message (its payload decoded first when it
    is still raw JSON) or of any other value holding no ``msgspec.Raw``:
    every object's keys sorted, Struct fields included, no whitespace.
    Numbers keep their JSON form (``1`` and ``1.0`` differ)."""
    if isinstance(value, (Request, Notification)):
        if type(value.params) is msgspec.Raw:
            value = msgspec.structs.replace(value, params=_ANY.decode(value.params))
    elif isinstance(value, Response) and type(value.result) is msgspec.Raw:
        value = msgspec.structs.replace(value, result=_ANY.decode(value.result))
    return _SORTED.encode(value)


def _size(wire: bytes | str) -> int:
    if isinstance(wire, bytes):
        return len(wire)
    # str.isascii() is a flag check: only non-ASCII text is encoded to count.
    return len(wire) if wire.isascii() else len(wire.encode("utf-8", "surrogatepass"))


def _form(message: object, typed: bool) -> bytes:
    return ENCODER.encode(message) if typed else canonical(message)


def content_key(
    message: object,
    wire: bytes | str | None,
    *,
    typed: bool = False,
    wire_canonical: bool = False,
) -> ContentKey:
    """What a window remembers of ``message``, decoded from ``wire``
    (``None`` when it was handed in without its bytes). ``typed``: the
    window's typed form; ``wire_canonical``: ``wire`` is that form
    (``decode_wire`` said so)."""
    if wire is not None and (
        len(wire) <= INLINE_BYTES
        if type(wire) is bytes
        else _size(wire) <= INLINE_BYTES
    ):
        return ("wire", wire)
    if wire_canonical and typed and type(wire) is bytes:
        return ("digest", digest(wire))
    return ("digest", digest(_form(message, typed)))


def same_content(
    key: ContentKey,
    message: object,
    wire: bytes | str | None,
    *,
    typed: bool = False,
) -> bool:
    """True when ``message`` (decoded from ``wire``, or ``None``) has
    exactly the content remembered as ``key`` (made with the same
    ``typed``). The same bytes are the same content; other bytes are
    decoded again and compared in the window's form (only a repeated
    delivery pays for that)."""
    tag, kept = key
    if tag == "wire":
        assert not isinstance(kept, int)
        if wire is not None and type(wire) is type(kept) and wire == kept:
            return True
        return _form(decode(kept), typed) == _form(message, typed)
    return digest(_form(message, typed)) == kept
