"""Untyped JSON with the codec's byte-level checks (``load_json``).

For JSON that is not a native message (a bridged peer's line, a payload read
from a file) but must meet the same rules as one: a size bound before
parsing, nesting depth measured on the bytes, UTF-8, exactly one JSON value
and no object repeating a key (which msgspec would keep silently, issue
648). Built on the exact checks of ``_jsonscan``, so the rules cannot drift
from ``decode``'s.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ._errors import ErrorCode, ProtocolError
from ._jsonscan import (
    COUNT_BELOW,
    MAX_DEPTH,
    colons_kept,
    depth_within,
    error,
    find_duplicate_key,
    json_error,
)
from ._options import positive_int

__all__ = ["load_json"]

_ANY: Final = msgspec.json.Decoder()
_ENCODER: Final = msgspec.json.Encoder()


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
    parsing, and for a ``bytearray``/``memoryview`` before it is copied), the
    nesting depth (on the bytes, before anything deep is built) and that no
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
            JSON pointer of the repeated key). Origin ``"local"`` with
            ``invalid_message`` when ``data`` is not ``bytes``, ``bytearray``
            or ``memoryview`` (a ``str`` included: encode it first).
        TypeError, ValueError: ``max_bytes`` or ``max_depth`` is not an
            ``int``, or not positive.
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
            raise ProtocolError(
                ErrorCode.INVALID_MESSAGE,
                f"expected bytes, bytearray or memoryview, got {type(data).__name__}",
                origin="local",
            )
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        data = bytes(data)
    if len(data) > max_bytes:
        raise _too_large(len(data), max_bytes)
    # depth_within's count for short input inline (one call less a line)
    if (
        len(data) > COUNT_BELOW or data.count(b"{") + data.count(b"[") > max_depth
    ) and not depth_within(data, max_depth):
        raise error(
            ErrorCode.DEPTH_EXCEEDED,
            f"JSON nesting is deeper than {max_depth}",
            max=max_depth,
        )
    try:
        value = _ANY.decode(data)
    except RecursionError:
        raise error(
            ErrorCode.DEPTH_EXCEEDED,
            f"JSON nesting is deeper than {max_depth}",
            max=max_depth,
        ) from None
    except UnicodeDecodeError as exc:
        raise error(
            ErrorCode.INVALID_UTF8, "JSON is not valid UTF-8", offset=exc.start
        ) from None
    except msgspec.DecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise error(
                ErrorCode.INVALID_UTF8, "JSON is not valid UTF-8", offset=bad.start
            ) from None
        raise json_error(data, exc) from None
    # input as compact as msgspec writes it re-encodes to itself (no entry
    # collapsed): the common case without a call; _check_keys otherwise
    if (type(value) is dict or type(value) is list) and _ENCODER.encode(value) != data:
        _check_keys(data, value)
    return value


def _check_keys(data: bytes, value: list[Any] | dict[str, Any]) -> None:
    """``duplicate_key`` unless no object in ``data`` (which decoded to
    ``value``) repeats a key.

    Proofs, cheapest first: re-encoding ``value`` gives ``data`` back (input
    as compact as msgspec writes it: no entry was collapsed); otherwise, when
    no string spells a colon as ``\\u003a`` (``colons_kept``), every key has
    exactly one structural colon and a collapsed entry takes its colon with
    it, so equal colon counts prove it too. Else the exact tokenizer decides.
    """
    encoded = _ENCODER.encode(value)
    if encoded == data:
        return
    if colons_kept(data) and data.count(b":") == encoded.count(b":"):
        return
    problem = find_duplicate_key(data)
    # find_duplicate_key also reports a top-level object without
    # schema_version (missing_field), and only after finding no repeated key;
    # that rule is the native envelope's, not JSON's, so it is not an error here.
    if problem is not None and problem.code is ErrorCode.DUPLICATE_KEY:
        raise problem


def _too_large(size: int, limit: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.MESSAGE_TOO_LARGE,
        f"JSON is larger than {limit} bytes",
        data={"bytes": size, "max": limit},
        origin="peer",
    )
