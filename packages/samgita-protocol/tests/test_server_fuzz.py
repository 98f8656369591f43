"""Fuzzing Server.receive: only ProtocolError ever escapes, every answer is a
valid message, and the handler sees exactly the input that decodes as a
valid, negotiated request (malformed input never reaches it)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samgita_protocol import ProtocolError, Request, Response, decode, encode
from test_server import Spy, ready

VALID = {
    "schema_version": "1.0",
    "type": "request",
    "id": "r1",
    "correlation_id": "r1",
    "method": "request/cancel",
    "params": {"request_id": "x"},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from([*VALID, "command_id", "task_ref", "project_ref", "extra"])


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    message: dict[str, Any] = json.loads(json.dumps(VALID))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(keys)
        if draw(st.booleans()):
            message.pop(key, None)
        else:
            message[key] = draw(
                json_values | st.sampled_from(["r1", "1.0", "request/cancel"])
            )
    data = json.dumps(message).encode()
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=4)) + data[cut:]
    return data


@settings(
    max_examples=300, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(mutated())
def test_only_protocol_errors_escape_and_invalid_input_never_reaches_the_handler(
    data: bytes,
) -> None:
    spy = Spy()
    server = ready(spy)
    try:
        decoded: Any = decode(data)
    except ProtocolError:
        decoded = None
    try:
        out = server.receive(data)
    except ProtocolError:
        out = None
    valid_request = isinstance(decoded, Request) and decoded.method == "request/cancel"
    assert len(spy.calls) == (1 if valid_request else 0)
    if out is not None:
        for sent in out:
            assert isinstance(sent.message, Response)
            assert sent.data == encode(sent.message)
