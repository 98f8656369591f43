"""Untyped JSON with the codec's byte-level checks (``load_json``).

For JSON that is not a native message (a bridged peer's line, a payload read
from a file) but must meet the same rules as one: a size bound before
parsing, then ``_jsonscan.checked_json`` as ``decode`` runs it: exactly one
JSON value in UTF-8, nesting depth, and no object repeating a key (which
msgspec would keep silently, issue 648). One function for both, so the rules
cannot drift from ``decode``'s.
"""

from __future__ import annotations

from typing import Any

from ._errors import ErrorCode, ProtocolError
from ._jsonscan import MAX_DEPTH, checked_json
from ._options import positive_int, wrong_type

__all__ = ["load_json"]


def load_json(
    data: bytes | bytearray | memoryview,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Decodes one JSON value from ``data`` under the codec's byte-level rules.

    Returns the untyped value (``dict``, ``list``, ``str``, ``int``,
    ``float``, ``bool`` or ``None``), as ``msgspec.json.decode`` would, but
    only after proving what msgspec does not check: the size bound (before
    parsing, and for a ``bytearray``/``memoryview`` before it is copied),
    then, cheapest conclusive check first and each linear in the input: one
    JSON value in UTF-8, the nesting depth (on the bytes; msgspec's parse
    stops at its own recursion guard, about a thousand levels) and that no
    object repeats a key after unescaping (``"a"`` and ``"\\u0061"`` are the
    same key). No schema is applied: a top-level object needs no
    ``schema_version``.

    Raises:
        ProtocolError: origin ``"peer"`` for any bytes: ``message_too_large``
            (``data.bytes``, ``data.max``), ``depth_exceeded`` (more than
            ``max_depth`` nested arrays/objects; ``data.max``),
            ``invalid_utf8`` (bytes that are not UTF-8, or a ``\\u`` escape
            that is an unpaired UTF-16 surrogate), ``invalid_json`` (not
            exactly one JSON value) or ``duplicate_key`` (``data.path``, the
            JSON pointer of the repeated key).
        TypeError: ``data`` is not ``bytes``, ``bytearray`` or
            ``memoryview`` (a ``str`` included: encode it first), or
            ``max_bytes`` or ``max_depth`` is not an ``int`` (the message
            names it).
        ValueError: ``max_bytes`` or ``max_depth`` is not positive.
    """
    # one test on the common path; positive_int names what is wrong
    if (
        type(max_bytes) is not int
        or type(max_depth) is not int
        or max_bytes < 1
        or max_depth < 1
    ):
        positive_int("max_bytes", max_bytes)
        positive_int("max_depth", max_depth)
    if type(data) is not bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise wrong_type(
                "data", data, "bytes, bytearray or memoryview (encode a str first)"
            )
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        data = bytes(data)
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    return checked_json(data, max_depth)


def _too_large(size: int, limit: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.MESSAGE_TOO_LARGE,
        f"JSON is larger than {limit} bytes",
        data={"bytes": size, "max": limit},
        origin="peer",
    )
