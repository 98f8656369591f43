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
    "checked_json",
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


# -- the patterns that read peer input ---------------------------------------------
#
# No regular expression in the three packages backtracks over a peer's input
# (issue 18: a string pattern that could fail was retried from every quote,
# quadratic on an unterminated string). This is the list of those that read
# it at all, and why each is linear:
#
# * here, ``_ESCAPED_U``, ``_ESCAPED_COLON``,
#   ``_SURROGATE_ESCAPE`` and ``_LOW_ESCAPE``: fixed strings or fixed-width
#   byte classes, nothing to backtrack;
# * here, ``_STRING`` and the string part of ``_TOKEN``: from an opening
#   quote they always match, to the closing quote or to the end of the input
#   (``\?\Z``: an unterminated string, a lone backslash last), with
#   possessive quantifiers (``*+``) over disjoint classes, so no byte is read
#   twice and no quote inside a consumed literal starts a new attempt;
# * ``_validate._TIMESTAMP`` and ``_contract._TIMESTAMP``: ``fullmatch`` of a
#   fixed shape (digits of fixed counts, one optional fraction);
# * ``_validate._SAFE_REASON``: only over msgspec's message of at most 120
#   characters (msgspec's messages are otherwise read with string searches);
# * WebSocket ``_redact``: none (string searches and forward scans); Codex
#   ``_INSTANCE_ID``: ``fullmatch`` of one class, over the caller's value.
#
# ``tests/test_cost.py`` holds every byte-level entry point to linear cost
# over pathological shapes (the Codex and WebSocket packages test theirs).

# -- exact JSON checks ------------------------------------------------------------------

# String literals as an unrolled loop (no per-character alternation); an
# unterminated one runs to the end of the input.
_STRING: Final = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.S)


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


# Brackets kept, opening ones as "(" and closing ones as ")"; every other
# byte deleted.
_AS_PARENS: Final = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")


def depth_within(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether no container in ``data`` (valid JSON) nests deeper than
    ``limit``, brackets inside string literals not counted; cheap when the
    whole input has at most ``limit`` of them.

    Otherwise the brackets outside strings, as parentheses, lose their
    innermost pairs once per pass (``replace``, in C): the nesting depth is
    the number of passes that empties them, so at most ``limit`` passes
    decide, each linear in the input (a Python loop over every bracket cost
    0.5 us a bracket: 270 ms for 1 MiB of small arrays)."""
    if len(data) <= COUNT_BELOW:
        if data.count(b"{") + data.count(b"[") <= limit:
            return True
    elif few_brackets(data, limit):
        return True
    parens = _STRING.sub(b"", data).translate(_AS_PARENS, _NOT_BRACKETS)
    for _ in range(limit):
        if not parens:
            return True
        parens = parens.replace(b"()", b"")
    return not parens


_TOKEN: Final = re.compile(
    rb'("[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z))([ \t\n\r]*+:)?|([\[\]{},])', re.S
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


# A \uD800-\uDFFF escape (literal prefix: the engine finds ``\u`` with a
# fast scan); _lone_surrogate decides each candidate.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_ESCAPE: Final = re.compile(rb"\\u[dD][c-fC-F]")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")


def _lone_surrogate(data: bytes) -> bool:
    """Whether a ``\\uD800``-``\\uDBFF`` escape in ``data`` is not followed
    by a low one, or a ``\\uDC00``-``\\uDFFF`` escape is not preceded by a
    high one. A ``\\u`` after an odd run of backslashes is not an escape
    (the run ends in an escaped backslash). Linear: each candidate looks back
    over the backslashes just before it, a run no other candidate reads."""
    for m in _SURROGATE_ESCAPE.finditer(data):
        at = m.start()
        run = at
        while run > 0 and data[run - 1] == 0x5C:  # backslash
            run -= 1
        if (at - run) % 2:
            continue  # an escaped backslash followed by "u"
        if data[at + 2] in b"89abAB":  # high: a low escape must follow
            if not _LOW_ESCAPE.match(data, at + 6):
                return True
        elif at < 4 or not all(byte in _HEX for byte in data[at - 4 : at]):
            return True  # low: must follow a high escape's four hex digits
    return False


def json_error(data: bytes, exc: Exception, path: str | None = None) -> ProtocolError:
    """The error for input msgspec could not parse: ``invalid_utf8`` for a
    ``\\u`` escape that is an unpaired UTF-16 surrogate (a string no UTF-8
    text can hold), ``invalid_json`` otherwise."""
    text = str(exc)
    if "surrogate" in text or _lone_surrogate(data):
        return error(
            ErrorCode.INVALID_UTF8,
            "a \\u escape is an unpaired UTF-16 surrogate",
            path,
        )
    if text.startswith("JSON is malformed") or text == "Input data was truncated":
        return error(ErrorCode.INVALID_JSON, text, path)
    return error(ErrorCode.INVALID_JSON, "invalid JSON", path)


# -- the byte-level rules in order ------------------------------------------------------

_ANY: Final = msgspec.json.Decoder()
_ENCODER: Final = msgspec.json.Encoder()


def checked_json(data: bytes, max_depth: int = MAX_DEPTH, at: str = "") -> Any:
    """The untyped value of ``data`` (at most the size bound, which callers
    check first) after every byte-level rule, cheapest conclusive check
    first, each linear in ``len(data)``:

    1. one JSON value in UTF-8: msgspec's parse, one pass in C, refuses
       invalid input before any analysis (``invalid_json``; ``invalid_utf8``
       when the bytes are not UTF-8 or a ``\\u`` escape is a lone
       surrogate); its recursion guard (about a thousand levels) is
       ``depth_exceeded``;
    2. nesting depth, on the bytes of what is now valid JSON (``data.max``);
    3. no object repeats a key (``duplicate_key``, ``data.path``).

    ``at`` is the JSON pointer of the value inside a message: the depth
    bound shrinks by its levels, and errors name it as ``data.path`` (errors
    of a whole input carry none).

    Raises:
        ProtocolError: origin ``peer``, the first rule broken.
    """
    path = at or None
    try:
        value = _ANY.decode(data)
    except RecursionError:
        raise _too_deep(max_depth, path) from None
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc, path) from None
    except msgspec.DecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise _not_utf8(bad, path) from None
        raise json_error(data, exc, path) from None
    if not depth_within(data, max_depth - at.count("/")):
        raise _too_deep(max_depth, path)
    if (type(value) is dict or type(value) is list) and not _keys_proven(data, value):
        problem = find_duplicate_key(data)
        # find_duplicate_key also reports a top-level object without
        # schema_version (missing_field): the envelope's rule, not JSON's.
        if problem is not None and problem.code is ErrorCode.DUPLICATE_KEY:
            if at:
                assert problem.data is not None
                problem.data["path"] = short_path(at + problem.data["path"])
            raise problem
    return value


def _keys_proven(data: bytes, value: list[Any] | dict[str, Any]) -> bool:
    """A sufficient condition for ``data`` (which decoded to ``value``)
    repeating no key: its re-encoding is ``data`` itself (input as compact as
    msgspec writes it), or, when no string spells a colon as ``\\u003a``
    (``colons_kept``), has as many colons: JSON has exactly one structural
    colon per key, a kept string as many as its re-encoding, and a repeated
    key's lost entry takes at least its own colon with it."""
    encoded = _ENCODER.encode(value)
    return encoded == data or (
        colons_kept(data) and colon_count(data) == colon_count(encoded)
    )


def _too_deep(limit: int, path: str | None) -> ProtocolError:
    return error(
        ErrorCode.DEPTH_EXCEEDED,
        f"JSON nesting is deeper than {limit}",
        path,
        max=limit,
    )


def _not_utf8(exc: UnicodeDecodeError, path: str | None) -> ProtocolError:
    return error(
        ErrorCode.INVALID_UTF8, "JSON is not valid UTF-8", path, offset=exc.start
    )
