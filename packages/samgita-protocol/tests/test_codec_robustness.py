"""Robustness of the codec with hypothesis.

Whatever goes in, ``decode`` returns a message or raises ProtocolError and
``encode`` returns bytes or raises ProtocolError; nothing else escapes. The
fast path agrees with the exact one (``_validate.explain``) on every input,
and decode(encode(m)) == m for generated valid messages.

Counts (fixed, derandomized when the ``CI`` environment variable is set):
20,000 random byte strings and 20,000 structure-aware mutations of the
fixtures, each example carrying a batch of ``BATCH`` inputs so hypothesis's
per-example overhead does not dominate on a slow machine.
"""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import samgita_protocol as sp
from samgita_protocol._codec import _unique_keys
from samgita_protocol._jsonscan import _keys_proven, find_duplicate_key
from samgita_protocol._validate import ANY_DECODER, ENCODER, explain

CI = bool(os.environ.get("CI"))
BATCH = 10
ROBUST_INPUTS = 20_000

ROOT = Path(__file__).resolve().parent / "schemas" / "1.0" / "fixtures"
FIXTURES = [
    p.read_bytes() for p in sorted(ROOT.glob("*/*.json")) if p.stat().st_size < 65536
]


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


# The structure-aware mutations start from every fixture that is JSON.
JSON_FIXTURES = [data for data in FIXTURES if _parses(data)]


def _settings(examples: int) -> settings:
    chosen = settings(
        max_examples=examples,
        derandomize=CI,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    # Derandomized runs need no example database.
    return settings(chosen, database=None) if CI else chosen


def _outcome(data: bytes | str) -> sp.Message | sp.ProtocolError:
    try:
        return sp.decode(data)
    except sp.ProtocolError as exc:
        return exc


def _check_input(data: bytes) -> None:
    """The properties every input must have."""
    outcome = _outcome(data)
    if isinstance(outcome, sp.ProtocolError):
        # Every rejection below the size bound is named by the exact path
        # (the fast path only ever accepts), so only acceptances are compared.
        assert isinstance(outcome.code, sp.ErrorCode)
        return
    assert explain(data) == outcome, data
    wire = sp.encode(outcome)
    assert sp.decode(wire) == outcome
    assert json.loads(wire) == json.loads(data)


# -- random bytes ----------------------------------------------------------------------

_JSONISH = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b"\\",
    b"\\u",
    b"1",
    b"-0.5e3",
    b"null",
]
_JSONISH += [
    b'"schema_version":"1.0"',
    b'"type":"notification"',
    b'"method":"item/delta"',
]
_JSONISH += [
    b'"params":{',
    b'"thread_id":"t"',
    b"\xff",
    b"\xed\xa0\x80",
    b"\\ud800",
    b" \n",
    b"true",
]
BYTES_PER_EXAMPLE = 50


def random_bytes(rng: random.Random) -> bytes:
    """Uniform random bytes, or a random run of JSON-ish tokens (which gets
    past the syntax check far more often)."""
    if rng.random() < 0.5:
        return rng.randbytes(rng.randint(0, 120))
    return b"".join(rng.choice(_JSONISH) for _ in range(rng.randint(0, 40)))


@_settings(ROBUST_INPUTS // BYTES_PER_EXAMPLE)
@given(st.integers(0, 2**64), st.binary(max_size=200))
def test_random_bytes(seed: int, drawn: bytes) -> None:
    # Hypothesis draws one byte string and a seed per example (derandomized
    # in CI); the other 49 inputs come from that seed, cheaply.
    rng = random.Random(seed)
    _check_input(drawn)
    for _ in range(BYTES_PER_EXAMPLE - 1):
        _check_input(random_bytes(rng))


# -- structure-aware mutations of the fixtures ----------------------------------------------

# A JSON value with its object pairs kept as lists, so a key can repeat.
Pairs = list[tuple[str, Any]]


def _tree(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _tree(v)) for k, v in value.items()]
    if isinstance(value, list):
        return ("array", [_tree(v) for v in value])
    return value


def _dump(tree: Any, style: int) -> str:
    sep, colon = (",", ":") if style % 3 == 0 else (", ", ": ")
    if isinstance(tree, list):
        return (
            "{"
            + sep.join(_key(k, style) + colon + _dump(v, style) for k, v in tree)
            + "}"
        )
    if isinstance(tree, tuple):
        return "[" + sep.join(_dump(v, style) for v in tree[1]) + "]"
    if isinstance(tree, float) and not math.isfinite(tree):
        return "1e999"
    return json.dumps(tree, ensure_ascii=style % 2 == 0)


def _key(key: str, style: int) -> str:
    if style % 5 == 4 and key:
        # An escaped first character: the same key in another spelling
        # (a non-BMP character as its surrogate pair).
        first = ord(key[0])
        escaped = f"\\u{first:04x}" if first < 0x10000 else json.dumps(key[0])[1:-1]
        return '"' + escaped + json.dumps(key[1:])[1:]
    return json.dumps(key)


_NAMES = (
    "schema_version type id correlation_id method params command_id causation_id "
    "project_ref task_ref stream_id cursor result error thread_id turn_id item_id "
    "delta event payload input text code message data x"
).split()
_FIELD_NAMES = st.sampled_from(_NAMES)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(
        ["1.0", "2.0", "request", "response", "notification", "item/delta"]
    ),
    st.sampled_from(
        ["thread/closed", "turn/start", "2026-02-30T00:00:00Z", "", "x" * 300]
    ),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(st.tuples(_FIELD_NAMES, inner), max_size=3),
        st.lists(inner, max_size=3).map(lambda items: ("array", items)),
    ),
    max_leaves=6,
)


def _objects(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every object in ``tree``."""
    found: list[tuple[Any, ...]] = []
    if isinstance(tree, list):
        found.append(path)
        for i, (_, v) in enumerate(tree):
            found += _objects(v, (*path, i))
    elif isinstance(tree, tuple):
        for i, v in enumerate(tree[1]):
            found += _objects(v, (*path, ("a", i)))
    return found


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        tree = tree[1][step[1]] if isinstance(step, tuple) else tree[step][1]
    return tree


_OPS = ("drop", "add", "retype", "duplicate", "nest", "shuffle")
_SCALAR_POOL = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**70,
    "",
    "x",
    "1.0",
    "2.0",
    "request",
    "response",
]
_SCALAR_POOL += [
    "notification",
    "item/delta",
    "thread/closed",
    "2026-02-30T00:00:00Z",
    "x" * 300,
]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.6:
        return rng.choice(_SCALAR_POOL)
    if roll < 0.8:
        return [
            (rng.choice(_NAMES), _random_value(rng, depth + 1))
            for _ in range(rng.randint(0, 3))
        ]
    return ("array", [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))])


def mutate(source: bytes, rng: random.Random) -> bytes:
    """One structure-aware mutation of a JSON fixture: drop, add, retype,
    duplicate or nest keys, reorder an object, then maybe truncate or splice
    the bytes; serialized in one of 30 spellings (spacing, escapes)."""
    tree = _tree(json.loads(source))
    for _ in range(rng.randint(1, 3)):
        objects = _objects(tree)
        if not objects:
            break
        obj: Pairs = _at(tree, rng.choice(objects))
        op = rng.choice(_OPS)
        if op == "add" or not obj:
            obj.insert(
                rng.randint(0, len(obj)), (rng.choice(_NAMES), _random_value(rng))
            )
            continue
        i = rng.randrange(len(obj))
        key, value = obj[i]
        if op == "drop":
            del obj[i]
        elif op == "retype":
            obj[i] = (key, _random_value(rng))
        elif op == "duplicate":
            copy = value if rng.random() < 0.5 else _random_value(rng)
            obj.insert(rng.randint(0, len(obj)), (key, copy))
        elif op == "nest":
            wrapped = (
                [(rng.choice(_NAMES), value)]
                if rng.random() < 0.5
                else ("array", [value])
            )
            obj[i] = (key, wrapped)
        else:
            obj.reverse()
    data = _dump(tree, rng.randrange(30)).encode("utf-8", "surrogatepass")
    tail = rng.random()
    if tail < 0.15 and data:
        data = data[: rng.randrange(len(data))]
    elif tail < 0.3:
        at = rng.randint(0, len(data))
        data = data[:at] + rng.randbytes(rng.randint(1, 4)) + data[at:]
    return data


MUTANTS_PER_EXAMPLE = 50


def _check_duplicate_detection(data: bytes) -> None:
    """The cheap duplicate-key proofs agree with the exact tokenizer."""
    try:
        value = ANY_DECODER.decode(data)
    except (ValueError, RecursionError):
        return
    if type(value) is not dict:
        return
    exact = find_duplicate_key(data)
    duplicate = exact is not None and exact.code is sp.ErrorCode.DUPLICATE_KEY
    if _keys_proven(data, value):
        assert not duplicate, data
    # The codec's proof also requires a top-level schema_version.
    fast = _unique_keys(data, ((data, ENCODER.encode(value)),))
    assert fast == (exact is None), data


@_settings(ROBUST_INPUTS // MUTANTS_PER_EXAMPLE)
@given(st.integers(0, 2**64))
def test_fixture_mutations(seed: int) -> None:
    # Hypothesis draws the seed (derandomized in CI); the mutations
    # themselves are cheap Python, so 20,000 of them fit in seconds.
    rng = random.Random(seed)
    for _ in range(MUTANTS_PER_EXAMPLE):
        data = mutate(rng.choice(JSON_FIXTURES), rng)
        _check_input(data)
        _check_duplicate_detection(data)


# -- random Python values through encode -----------------------------------------------------

_PY_VALUES = st.recursive(
    st.one_of(
        _SCALARS,
        st.binary(max_size=4),
        st.just("\ud800"),
        st.just(float("nan")),
        st.just(object()),
        st.just(sp.UNSET),
        st.sampled_from([sp.ThreadClosedParams(thread_id="t"), sp.ErrorCode.TIMEOUT]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(st.text(max_size=4), st.integers()), inner, max_size=3
        ),
        st.tuples(inner),
        st.frozensets(st.integers(), max_size=2),
    ),
    max_leaves=5,
)


@st.composite
def _python_message(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["notification", "request", "response", "value"]))
    v = _PY_VALUES
    if kind == "value":
        return draw(v)
    if kind == "notification":
        return sp.Notification(
            method=draw(st.one_of(st.sampled_from(list(sp.METHODS)), v)),
            params=draw(v),
            stream_id=draw(st.one_of(st.just(sp.UNSET), v)),
            cursor=draw(st.one_of(st.just(sp.UNSET), v)),
        )
    if kind == "request":
        return sp.Request(
            id=draw(v),
            correlation_id=draw(st.one_of(st.just("c"), v)),
            method=draw(st.one_of(st.sampled_from(list(sp.METHODS)), v)),
            params=draw(v),
            command_id=draw(st.one_of(st.just(sp.UNSET), v)),
            task_ref=draw(st.one_of(st.just(sp.UNSET), v)),
        )
    return sp.Response(
        id=draw(st.one_of(st.just("r"), v)),
        correlation_id="c",
        result=draw(st.one_of(st.just(sp.UNSET), v)),
        error=draw(st.one_of(st.just(sp.UNSET), v)),
    )


@_settings(200 if CI else 100)
@given(st.lists(_python_message(), min_size=BATCH, max_size=BATCH))
def test_random_python_values_through_encode(batch: list[Any]) -> None:
    for value in batch:
        try:
            wire = sp.encode(value)
        except sp.ProtocolError as exc:
            assert exc.origin == "local"
            continue
        except TypeError:
            # Only what is not a message at all is the wrong Python type;
            # a message holding wrong values is a ProtocolError.
            assert type(value) not in (sp.Request, sp.Response, sp.Notification)
            continue
        assert isinstance(sp.decode(wire), sp.Request | sp.Response | sp.Notification)


# -- generated valid messages: decode(encode(m)) == m ------------------------------------------


def _id() -> st.SearchStrategy[str]:
    return st.text(min_size=1, max_size=80).filter(
        lambda s: (
            len(s.encode("utf-8", "surrogatepass")) <= 256
            and s.encode("utf-8", "ignore") == s.encode("utf-8", "surrogatepass")
        )
    )


_TEXT = st.text(max_size=60).filter(
    lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
)
_IDS = _TEXT.filter(lambda s: 1 <= len(s.encode()) <= 256)
_TIMESTAMPS = st.datetimes().map(
    lambda d: (
        f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
        + (f".{d.microsecond:06d}" if d.microsecond else "")
        + "Z"
    )
)
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        _TEXT,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)
_FREE = st.dictionaries(_TEXT, _JSON, max_size=4)
_OPT_ID = st.one_of(st.just(sp.UNSET), _IDS)


@st.composite
def _valid_message(draw: st.DrawFn) -> sp.Message:
    project = draw(_OPT_ID)
    task = draw(_OPT_ID) if project is not sp.UNSET else sp.UNSET
    choice = draw(st.integers(0, 5))
    if choice == 0:
        stream = draw(st.booleans())
        return sp.Notification(
            method="item/delta",
            params=sp.ItemDeltaParams(
                thread_id=draw(_IDS),
                turn_id=draw(_IDS),
                item_id=draw(_IDS),
                delta=draw(_TEXT),
            ),
            stream_id=draw(_IDS) if stream else sp.UNSET,
            cursor=draw(st.integers(1, sp.MAX_CURSOR)) if stream else sp.UNSET,
            correlation_id=draw(_OPT_ID),
            project_ref=project,
            task_ref=task,
        )
    if choice == 1:
        inputs = draw(
            st.lists(
                _TEXT.map(lambda t: sp.InputItem(type="text", text=t)),
                min_size=1,
                max_size=4,
            )
        )
        return sp.Request(
            id=draw(_IDS),
            correlation_id=draw(_IDS),
            method="turn/start",
            command_id=draw(_IDS),
            params=sp.TurnStartParams(thread_id=draw(_IDS), input=inputs),
            project_ref=project,
            task_ref=task,
        )
    if choice == 2:
        e_project = draw(_OPT_ID)
        event = sp.Event(
            event_id=draw(_IDS),
            delivery_attempt_id=draw(_IDS),
            created_at=draw(_TIMESTAMPS),
            correlation_id=draw(_IDS),
            event_type=draw(_IDS),
            payload=draw(_FREE),
            causation_id=draw(_OPT_ID),
            project_ref=e_project,
            task_ref=draw(_OPT_ID) if e_project is not sp.UNSET else sp.UNSET,
        )
        return sp.Request(
            id=draw(_IDS),
            correlation_id=draw(_IDS),
            method="project/event.receive",
            command_id=draw(_IDS),
            params=sp.EventReceiveParams(event=event),
        )
    if choice == 3:
        thread = sp.Thread(
            thread_id=draw(_IDS),
            status=draw(st.sampled_from(["idle", "active", "closed"])),
            created_at=draw(_TIMESTAMPS),
        )
        return sp.Notification(
            method="thread/started", params=sp.ThreadStartedParams(thread=thread)
        )
    if choice == 4:
        data = draw(st.one_of(st.just(sp.UNSET), _FREE))
        return sp.Response(
            id=draw(_IDS),
            correlation_id=draw(_IDS),
            error=sp.ErrorObject(
                code=draw(st.sampled_from(list(sp.ErrorCode))),
                message=draw(_TEXT),
                data=data,
            ),
        )
    return sp.Response(
        id=draw(_IDS),
        correlation_id=draw(_IDS),
        command_id=draw(_OPT_ID),
        result=sp.EventStatusResult(
            event_id=draw(_IDS),
            acceptance=draw(st.sampled_from(["received", "durable"])),
            processing_status=draw(st.sampled_from(["pending", "completed"])),
        ),
    )


def _same(decoded: sp.Message, original: sp.Message) -> None:
    if isinstance(original, sp.Response) and isinstance(
        original.result, msgspec.Struct
    ):
        assert isinstance(decoded, sp.Response)
        raw: object = decoded.result
        assert isinstance(raw, msgspec.Raw)
        assert sp.decode_result("project/event.status", raw) == original.result
        assert msgspec.structs.replace(decoded, result=original.result) == original
    else:
        assert decoded == original


@_settings(600 if CI else 300)
@given(_valid_message(), st.integers(0, 29))
def test_decode_of_encode_is_identity(message: sp.Message, style: int) -> None:
    wire = sp.encode(message)
    _same(sp.decode(wire), message)
    # The same message in another key order, spacing or escaping decodes the same.
    other = _dump(_tree(json.loads(wire))[::-1], style).encode()
    _same(sp.decode(other), message)
    _same(sp.decode(other.decode()), message)


@pytest.mark.parametrize(
    "payload", ['{"a":' * 29 + "1" + "}" * 29, '{"a":' + "[" * 28 + "]" * 28 + "}"]
)
def test_depth_32_payload_is_accepted(payload: str) -> None:
    # message (1), params (2), event (3), payload (4): 28 more levels reach 32.
    source = (ROOT / "accepted" / "project.event.receive.request.json").read_text()
    value = json.loads(source)
    value["params"]["event"]["payload"] = json.loads(payload)
    assert isinstance(sp.decode(json.dumps(value)), sp.Request)
    value["params"]["event"]["payload"] = {"x": json.loads(payload)}
    with pytest.raises(sp.ProtocolError) as caught:
        sp.decode(json.dumps(value))
    assert caught.value.code == sp.ErrorCode.DEPTH_EXCEEDED
