"""``load_json``: untyped JSON under the codec's byte-level rules.

Each rule once (size, depth at exactly the bound and one past it, UTF-8 and
lone surrogate escapes, syntax, repeated keys plain and escaped, bad
arguments), agreement with ``json.loads`` on valid input, and a hypothesis
run in which only ``ProtocolError`` (origin ``peer``) leaves for any bytes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samgita_protocol import MAX_DEPTH, ErrorCode, ProtocolError, decode, load_json

BIG = 1 << 20


def _refused(data: Any, **options: Any) -> ProtocolError:
    options.setdefault("max_bytes", BIG)
    with pytest.raises(ProtocolError) as info:
        load_json(data, **options)
    return info.value


@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
        b'{ "a" : 1 , "b" : [ 1.5 , -2e3 ] }\n',
        b'"\\u00e9\\ud83d\\ude00 caf\xc3\xa9"',
        b"[]",
        b"0",
        b"null",
        b'{"a:b":1,"a":2}',
        b'{"x":{"a":1},"y":{"a":1}}',  # the same key in two objects
        b'[{"a":1},{"a":2}]',
    ],
)
def test_valid_json_is_json_loads(text: bytes) -> None:
    assert load_json(text, max_bytes=BIG) == json.loads(text)


def test_top_level_object_needs_no_schema_version() -> None:
    # the native envelope's rule is not JSON's (find_duplicate_key reports it)
    assert load_json(b'{"a": 1, "b": 2}', max_bytes=64) == {"a": 1, "b": 2}


def test_size_bound_is_checked_before_parsing() -> None:
    assert load_json(b"[1]", max_bytes=3) == [1]
    error = _refused(b"[1] ", max_bytes=3)
    assert (error.code, error.origin) == (ErrorCode.MESSAGE_TOO_LARGE, "peer")
    assert error.data == {"bytes": 4, "max": 3}
    # not JSON at all, but too large first
    assert _refused(b"\xff" * 10, max_bytes=9).code is ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bytearray_and_memoryview(kind: type) -> None:
    assert load_json(kind(b'{"a":[1]}'), max_bytes=9) == {"a": [1]}
    error = _refused(kind(b'{"a":[1]}'), max_bytes=8)
    assert error.code is ErrorCode.MESSAGE_TOO_LARGE and error.data == {
        "bytes": 9,
        "max": 8,
    }


def test_memoryview_is_sized_in_bytes() -> None:
    view = memoryview(b"[1,2,3,4]").cast("B")
    assert load_json(view, max_bytes=9) == [1, 2, 3, 4]


@pytest.mark.parametrize("limit", [1, 2, 5, MAX_DEPTH, 128])
def test_depth_exactly_at_the_bound_and_one_past_it(limit: int) -> None:
    at = b"[" * limit + b"]" * limit
    assert load_json(at, max_bytes=BIG, max_depth=limit) is not None
    mixed = b'{"a":' * (limit - 1) + b"[]" + b"}" * (limit - 1)
    assert load_json(mixed, max_bytes=BIG, max_depth=limit) is not None
    past = b"[" * (limit + 1) + b"]" * (limit + 1)
    error = _refused(past, max_depth=limit)
    assert (error.code, error.origin) == (ErrorCode.DEPTH_EXCEEDED, "peer")
    assert error.data == {"max": limit}


def test_default_depth_is_the_codec_depth() -> None:
    assert load_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, max_bytes=BIG)
    error = _refused(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert error.code is ErrorCode.DEPTH_EXCEEDED


def test_brackets_inside_strings_do_not_nest() -> None:
    text = b'["' + b"[{" * 100 + b'\\"[[["]'
    assert load_json(text, max_bytes=BIG, max_depth=1) == ["[{" * 100 + '"[[[']


def test_syntax_is_checked_before_depth() -> None:
    # too deep and never closed: invalid_json (one linear parse first)
    assert _refused(b"[" * 40, max_depth=32).code is ErrorCode.INVALID_JSON
    assert _refused(b"[" * 40 + b"]" * 40, max_depth=32).code is (
        ErrorCode.DEPTH_EXCEEDED
    )


def test_very_deep_input_under_a_huge_bound_is_typed() -> None:
    # a bound past the interpreter's recursion limit still gives a typed error
    deep = b"[" * 200_000 + b"]" * 200_000
    error = _refused(deep, max_depth=10**9)
    assert (error.code, error.origin) == (ErrorCode.DEPTH_EXCEEDED, "peer")


@pytest.mark.parametrize(
    "text",
    [
        b'"\\ud800"',  # lone high surrogate
        b'"\\udc00"',  # lone low surrogate
        b'"\\udc00\\ud800"',  # the pair reversed
        b'{"a":"x\\ud83d"}',
        b'{"\\ud800":1}',  # in a key
    ],
)
def test_lone_surrogate_escapes_are_invalid_utf8(text: bytes) -> None:
    error = _refused(text)
    assert (error.code, error.origin) == (ErrorCode.INVALID_UTF8, "peer")


def test_escaped_backslash_before_u_is_not_a_surrogate() -> None:
    assert load_json(b'"\\\\ud800"', max_bytes=BIG) == "\\ud800"


@pytest.mark.parametrize(
    "text",
    [
        b'"\xff"',
        b'{"a":"\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 (CESU)
        b'{"a":"\xc3"}',  # truncated sequence
        b"[\xff]",  # outside a string
        b'{"a":"\xff","a":1}',  # in a value a repeated key would drop
    ],
)
def test_bytes_that_are_not_utf8(text: bytes) -> None:
    error = _refused(text)
    assert (error.code, error.origin) == (ErrorCode.INVALID_UTF8, "peer")


@pytest.mark.parametrize(
    "text",
    [b"", b"   ", b"[1,", b'{"a":1} {"b":2}', b"[1] x", b"{'a':1}", b"NaN", b"1e400"],
)
def test_not_exactly_one_json_value(text: bytes) -> None:
    error = _refused(text)
    assert (error.code, error.origin) == (ErrorCode.INVALID_JSON, "peer")


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (b'{"a":1,"a":2}', "/a"),
        (b'{"a":1,"\\u0061":2}', "/a"),  # the same key escaped
        (b'{"\\u0061":1, "a":2}', "/a"),
        (b'{"x":[{"k":1},{"k":1,"k":2}]}', "/x/1/k"),
        (b'{"a":{"b":1,"b":1}}', "/a/b"),
        (b'[{"a:b":1,"a\\u003ab":2}]', "/0/a:b"),  # an escaped colon
        (b'{ "a" : 1 , "a" : 1 }', "/a"),
    ],
)
def test_repeated_keys(text: bytes, path: str) -> None:
    error = _refused(text)
    assert (error.code, error.origin) == (ErrorCode.DUPLICATE_KEY, "peer")
    assert error.data is not None and error.data["path"] == path


def test_no_schema_version_and_no_repeat_is_accepted_on_the_exact_path() -> None:
    # spaces defeat the re-encoding proof and an escaped colon the colon
    # count: the exact tokenizer decides, and its missing_field is ignored
    text = b'{ "a\\u003a" : 1 , "b" : 2 }'
    assert load_json(text, max_bytes=BIG) == {"a:": 1, "b": 2}


@pytest.mark.parametrize("data", ['{"a":1}', 1, None, ["{}"], {"a": 1}, object()])
def test_input_that_is_not_bytes(data: Any) -> None:
    # The caller's wrong argument, not bytes from a peer (a str included).
    with pytest.raises(TypeError, match="expected data to be"):
        load_json(data, max_bytes=BIG)


@pytest.mark.parametrize("option", ["max_bytes", "max_depth"])
@pytest.mark.parametrize(
    ("value", "exc"),
    [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)],
)
def test_bad_bounds_are_programming_errors(
    option: str, value: object, exc: type[Exception]
) -> None:
    options: dict[str, Any] = {"max_bytes": BIG, option: value}
    with pytest.raises(exc, match=option):
        load_json(b"[]", **options)


def test_same_verdict_as_decode_on_a_native_message() -> None:
    message = b'{"schema_version":"1.0","type":"notification","method":"x","a":1,"a":2}'
    with pytest.raises(ProtocolError) as info:
        decode(message)
    assert _refused(message).code is info.value.code is ErrorCode.DUPLICATE_KEY


_CI = bool(os.environ.get("CI"))
# strings without braces (every "{" of a dump opens an object) and without
# lone surrogates (json.dumps escapes them; they are invalid_utf8 here)
_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="{}"),
    max_size=8,
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(
    max_examples=300,
    derandomize=_CI,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.binary(max_size=64) | _JSON.map(lambda v: json.dumps(v).encode()))
def test_only_peer_protocol_errors_for_any_bytes(data: bytes) -> None:
    try:
        value = load_json(data, max_bytes=256, max_depth=8)
    except ProtocolError as exc:
        assert exc.origin == "peer"
        return
    assert value == json.loads(data)


@settings(max_examples=200, derandomize=_CI, deadline=None)
@given(_JSON, st.data())
def test_a_repeated_key_anywhere_is_found(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    objects = [i for i, ch in enumerate(text) if ch == "{"]
    if not objects:
        return
    at = data.draw(st.sampled_from(objects))
    text = (
        text[: at + 1]
        + '"k": 0, "k": 1'
        + ("," if text[at + 1] != "}" else "")
        + text[at + 1 :]
    )
    error = _refused(text.encode())
    assert error.code is ErrorCode.DUPLICATE_KEY
