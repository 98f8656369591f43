"""Every byte-level entry point costs time linear in its input, on any input.

A check that is quadratic on some shape lets one peer stall a process with a
single message (issue 18: an unterminated string made ``decode`` retry its
string pattern from every quote: 3 s for 32 KiB, about an hour for 1 MiB).
So for each entry point that reads a peer's bytes and each pathological
shape, the cost of 256 KiB of it is held to at most ``LIMIT`` times the cost
of 32 KiB (eight times the input: linear is 8x, quadratic 64x). Costs are
the best of several timed runs, alternating the two sizes, and a ratio over
the limit is measured again, longer, before it fails: a ratio, never an
absolute time, so a slow machine passes and a quadratic path does not
(below 0.1 ms, a cost is noise; where msgspec's own parse of the same bytes
grows more than eight times, as for many small arrays when memory is
contended, that excess is discounted: ``samgita_protocol.testing.cost_ratio``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import samgita_protocol as sp
from helpers import ConnectionPair
from samgita_protocol import testing

SMALL = 32 * 1024
LARGE = 256 * 1024
LIMIT = 16.0  # twice linear: a garbage collection or a busy machine passes
CI = bool(os.environ.get("CI"))

# The head of a valid request whose free-form payload is where a shape goes.
_REQUEST = (
    b'{"schema_version":"1.0","type":"request","id":"r1","correlation_id":"c",'
    b'"method":"project/event.receive","params":{"event":{"event_id":"e",'
    b'"delivery_attempt_id":"a","created_at":"2026-01-01T00:00:00Z",'
    b'"correlation_id":"c","event_type":"t","payload":'
)
_UNKNOWN_KEY = (
    b'{"schema_version":"1.0","type":"request","id":"r1","correlation_id":"c",'
    b'"method":"thread/read","params":{"'
)

#: name -> (head, unit repeated to the size, tail)
SHAPES: dict[str, tuple[bytes, bytes, bytes]] = {
    "unterminated string of escaped quotes": (b"[" * 33 + b'"', b'\\"', b""),
    "brackets inside an unterminated string": (b'"', b'[\\"', b""),
    "quote and backslash runs": (b"[", b'"\\', b""),
    "backslash run in a string": (b'["', b"\\\\", b""),
    "deep nesting then garbage": (b"[" * 40, b" ", b"x"),
    "bracket run outside strings": (b"", b"[", b""),
    "closing bracket run": (b"[", b"]", b""),
    "many keys, one repeated": (b"{", b'"k":1,', b'"k":2}'),
    "colon escapes in strings": (b'{"a":"', b'\\u003a\\"', b'"}'),
    "lone surrogate escapes": (b'["', b"\\ud800\\\\", b'"]'),
    "valid deep-ish arrays": (b"[" * 30, b"[1],", b"1" + b"]" * 30),
    "payload: unterminated string": (_REQUEST + b'"', b'\\"[', b""),
    "payload: many keys": (_REQUEST + b"{", b'"k":1,', b'"k":1}}}}'),
    "payload: brackets in strings": (_REQUEST + b"[", b'"[{",', b'""]}}}'),
    "unknown key quoting msgspec's path": (_UNKNOWN_KEY, b' - at `$[\\"', b'":1}}'),
    # each " - at `$" used to start a scan to the newline: 26 s at 256 KiB
    "unknown key: path markers, then a newline": (
        _UNKNOWN_KEY,
        b" - at `$",
        b'\\n":1}}',
    ),
    "unknown key: field markers, then a newline": (
        _UNKNOWN_KEY,
        b"field `",
        b'\\n":1}}',
    ),
}


def sized(shape: tuple[bytes, bytes, bytes], size: int) -> bytes:
    head, unit, tail = shape
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def _refused(call: Callable[[bytes], object]) -> Callable[[bytes], object]:
    def run(data: bytes) -> object:
        try:
            return call(data)
        except sp.ProtocolError as exc:
            return exc.code

    return run


def _entry_points() -> dict[str, Callable[[bytes], object]]:
    pair = ConnectionPair()
    return {
        "decode": _refused(sp.decode),
        "load_json": _refused(lambda d: sp.load_json(d, max_bytes=LARGE * 2)),
        "Client.receive": _refused(pair.client.receive),
        "Server.receive": _refused(
            lambda d: [out.data for out in pair.server.receive(d)]
        ),
    }


ENTRY_POINTS = _entry_points()


def cost_ratio(
    call: Callable[[bytes], object], shape: tuple[bytes, bytes, bytes]
) -> float:
    """How much more 256 KiB of ``shape`` costs ``call`` than 32 KiB
    (``samgita_protocol.testing.cost_ratio``)."""
    small, large = sized(shape, SMALL), sized(shape, LARGE)
    return testing.cost_ratio(call, small, large, limit=LIMIT, baseline=_parse)


def _parse(data: bytes) -> object:
    """msgspec's own parse of the bytes: the objects any decoder builds."""
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_cost_is_linear_in_the_input(entry: str, shape: str) -> None:
    ratio = cost_ratio(ENTRY_POINTS[entry], SHAPES[shape])
    assert ratio <= LIMIT, f"{entry} on {shape!r}: 8x the input cost {ratio:.1f}x"


def test_an_unterminated_string_is_refused_as_invalid_json() -> None:
    # The finding's own input: 33 brackets, then 16,000 escaped quotes with
    # no closing one (depth_exceeded after about 3 s before the fix).
    data = b"[" * 33 + b'"' + b'\\"' * 16000
    for entry in ENTRY_POINTS.values():
        assert entry(data) is sp.ErrorCode.INVALID_JSON


# Fragments a hostile peer would combine: quotes, escapes, brackets inside and
# outside strings, keys, colons, surrogate escapes, whitespace.
_FRAGMENTS = st.sampled_from(
    [
        b'"',
        b'\\"',
        b"\\",
        b"\\\\",
        b"[",
        b"]",
        b"{",
        b"}",
        b":",
        b",",
        b'"k":',
        b'"k":1,',
        b"\\u",
        b"\\u003a",
        b"\\ud800",
        b"\\udc00",
        b" ",
        b"a",
        b"1",
        b"null",
        b" - at `$",
        b"field `",
        b"\\n",
        b'["',
    ]
)
_PIECES = st.lists(_FRAGMENTS, min_size=1, max_size=6).map(b"".join)


@settings(
    max_examples=25,
    derandomize=CI,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    head=_PIECES,
    unit=_PIECES,
    tail=_PIECES,
    wrap=st.sampled_from([b"", b"[" * 33, _REQUEST, _UNKNOWN_KEY]),
)
def test_no_shape_costs_more_than_linear(
    head: bytes, unit: bytes, tail: bytes, wrap: bytes
) -> None:
    shape = (wrap + head, unit, tail)
    for entry, call in ENTRY_POINTS.items():
        ratio = cost_ratio(call, shape)
        assert ratio <= LIMIT, f"{entry} on {shape!r}: 8x the input cost {ratio:.1f}x"
