"""Exact checks of raw JSON bytes: nesting depth, repeated keys, escapes.

Pure functions of bytes with no knowledge of the schema; the codec's fast
path falls back to them (and ``_validate.explain``) for any input it cannot
prove valid cheaply. Errors they return have origin ``peer`` and a
``data.path`` JSON pointer that never echoes input beyond short key names.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from ._errors import ErrorCode, ProtocolError

__all__ = [
    "MAX_DEPTH",
    "ascii_only",
    "colons_kept",
    "depth_within",
    "error",
    "find_duplicate_key",
    "is_short",
    "json_error",
    "pointer_segment",
    "short_path",
]

MAX_DEPTH: Final = 32
"""The deepest JSON nesting a message may have (docs/protocol.md section 9)."""

_MAX_NAME: Final = 64
"""Longer keys are input content, not field names: errors do not echo them."""

# -- errors -------------------------------------------------------------------------


def error(
    code: ErrorCode, message: str, path: str | None = None, **extra: Any
) -> ProtocolError:
    """A peer error with ``data.path`` (a JSON pointer) and ``extra`` facts.

    A pointer segment longer than a field name is input content, not
    protocol structure: the path stops before it."""
    data: dict[str, Any] | None = None
    if path is not None or extra:
        data = dict(extra)
        if path is not None:
            data["path"] = short_path(path)
    return ProtocolError(code, message, data=data, origin="peer")


def short_path(path: str) -> str:
    """``path`` up to its first segment that is longer than a field name."""
    if len(path) <= _MAX_NAME:
        return path
    kept = []
    for segment in path.split("/")[1:]:
        if len(segment) > _MAX_NAME:
            break
        kept.append(segment)
    return "".join("/" + segment for segment in kept)


def pointer_segment(key: str) -> str:
    """One JSON pointer segment (RFC 6901 escaping)."""
    return key.replace("~", "~0").replace("/", "~1")


def is_short(key: str) -> bool:
    return len(key) <= _MAX_NAME


_ESCAPED_U: Final = re.compile(rb"\\u")


def ascii_only(data: bytes) -> bool:
    """Whether every string ``data`` decodes to is ASCII (so its length in
    code points is its length in UTF-8 bytes): ASCII bytes and no ``\\u``
    escape, which can spell any character (a ``\\\\u`` that is not one
    counts too: that only costs a walk). Input without a backslash (memchr
    finds none) has no escape at all; otherwise the regex scans several
    times faster than a two-byte ``in`` on large inputs."""
    return data.isascii() and (data.find(b"\\") < 0 or _ESCAPED_U.search(data) is None)


_ESCAPED_COLON: Final = re.compile(rb"\\u003[aA]")


def colons_kept(data: bytes) -> bool:
    """Whether every string in ``data`` spells each of its colons as ``:``,
    as msgspec's encoder does: then a string has as many colons in the input
    as in its re-encoding, whatever other escapes it uses."""
    return data.find(b"\\") < 0 or _ESCAPED_COLON.search(data) is None


# -- exact JSON checks ------------------------------------------------------------------

# String literals as an unrolled loop (no per-character alternation).
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET: Final = re.compile(rb"[\[\]{}]")


#: Below this many bytes ``count`` beats a ``find`` loop (measured: equal at
#: about 3 KiB with 10 brackets; 10x apart at 16 KiB): the scans of long
#: input below, and their callers' inline short cases, switch here.
COUNT_BELOW: Final = 3072


def few_brackets(data: bytes, limit: int) -> bool:
    """Whether ``data`` holds at most ``limit`` bytes ``{`` and ``[`` in all
    (string literals included), by ``find`` (memchr, vectorized): for long
    input with few brackets a few finds, several times cheaper than
    ``count`` (a byte-at-a-time loop); it stops at the first bracket over
    the limit. Exact for any input; callers count short input themselves."""
    found = 0
    find = data.find
    for bracket in (b"{", b"["):
        at = find(bracket)
        while at != -1:
            found += 1
            if found > limit:
                return False
            at = find(bracket, at + 1)
    return True


def colon_count(data: bytes) -> int:
    """``data.count(b":")``, found with memchr on long input with few colons
    (a colon per key: usually a few dozen in a message however long its
    strings); past 256 of them it counts."""
    if len(data) <= COUNT_BELOW:
        return data.count(b":")
    found = 0
    find = data.find
    at = find(b":")
    while at != -1:
        found += 1
        if found > 256:
            return data.count(b":")
        at = find(b":", at + 1)
    return found


def depth_within(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether no container in ``data`` (outside string literals) nests deeper
    than ``limit``; cheap when the whole input has at most ``limit`` of them."""
    if len(data) <= COUNT_BELOW:
        if data.count(b"{") + data.count(b"[") <= limit:
            return True
    elif few_brackets(data, limit):
        return True
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub(b"", data)):
        if m.group() in b"[{":
            depth += 1
            if depth > limit:
                return False
        else:
            depth -= 1
    return True


_TOKEN: Final = re.compile(
    rb'("[^"\\]*(?:\\.[^"\\]*)*")([ \t\n\r]*:)?|([\[\]{},])', re.S
)


def _key_text(literal: bytes) -> str:
    if b"\\" not in literal:
        # surrogateescape: never raises, and equal bytes stay equal keys.
        return literal[1:-1].decode("utf-8", "surrogateescape")
    value: str = msgspec.json.decode(literal, type=str)
    return value


def find_duplicate_key(data: bytes) -> ProtocolError | None:
    """The ``duplicate_key`` error for the first object in ``data`` (valid
    JSON) that repeats a key, or ``None``. Also reports a top-level object
    without ``schema_version`` (``missing_field``), which a decoded Struct
    cannot show because the field has a default."""
    # One entry per open container: (keys seen, or None for an array;
    # current key or index).
    keys: list[set[str] | None] = []
    where: list[str | int] = []
    top_keys: set[str] | None = None
    for m in _TOKEN.finditer(data):
        literal, colon, punct = m.groups()
        if literal is not None:
            if colon is not None:
                key = _key_text(literal)
                seen = keys[-1]
                assert seen is not None
                if key in seen:
                    path = "".join(f"/{pointer_segment(str(p))}" for p in where[:-1])
                    path += "/" + pointer_segment(key)
                    extra = {"key": key} if is_short(key) else {}
                    return error(
                        ErrorCode.DUPLICATE_KEY,
                        "an object repeats a key",
                        path,
                        **extra,
                    )
                seen.add(key)
                where[-1] = key
            continue
        if punct == b"{":
            keys.append(set())
            where.append("")
        elif punct == b"[":
            keys.append(None)
            where.append(0)
        elif punct == b",":
            if keys and keys[-1] is None:
                index = where[-1]
                assert isinstance(index, int)
                where[-1] = index + 1
        else:
            closed = keys.pop()
            where.pop()
            if not keys:
                top_keys = closed
    if top_keys is not None and "schema_version" not in top_keys:
        return error(
            ErrorCode.MISSING_FIELD, "schema_version is required", "/schema_version"
        )
    return None


# A \uD800-\uDBFF escape not followed by a low one, or a \uDC00-\uDFFF
# escape not preceded by a high one; an escaped backslash before "u" does not
# start an escape (an even run of backslashes).
_LONE_SURROGATE: Final = re.compile(
    rb"(?:^|[^\\])(?:\\\\)*(?:\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    rb"|(?<![0-9a-fA-F]{4})\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def json_error(data: bytes, exc: Exception) -> ProtocolError:
    """The error for input msgspec could not parse: ``invalid_utf8`` for a
    ``\\u`` escape that is an unpaired UTF-16 surrogate (a string no UTF-8
    text can hold), ``invalid_json`` otherwise."""
    text = str(exc)
    if "surrogate" in text or _LONE_SURROGATE.search(data):
        return error(
            ErrorCode.INVALID_UTF8, "a \\u escape is an unpaired UTF-16 surrogate"
        )
    if text.startswith("JSON is malformed") or text == "Input data was truncated":
        return error(ErrorCode.INVALID_JSON, text)
    return error(ErrorCode.INVALID_JSON, "invalid JSON")
