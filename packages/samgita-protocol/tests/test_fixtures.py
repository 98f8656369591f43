"""Fixture parity: the language-neutral conformance fixtures of schemas/1.0.

Every accepted fixture decodes, re-encodes to an equal JSON value and decodes
again to an equal message; every rejected fixture raises ProtocolError with
exactly the manifest's code, on the fast path and on the exact one.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from samgita_protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ErrorCode,
    ItemDeltaParams,
    Notification,
    ProtocolError,
    Response,
    decode,
    encode,
)
from samgita_protocol._validate import explain

ROOT = Path(__file__).resolve().parent / "schemas" / "1.0"
ACCEPTED = sorted((ROOT / "fixtures" / "accepted").glob("*.json"))
REJECTED = sorted((ROOT / "fixtures" / "rejected").glob("*.json"))
MANIFEST = json.loads((ROOT / "manifest.json").read_text())
CODES = {entry["file"]: entry["code"] for entry in MANIFEST}


def test_fixtures_are_there() -> None:
    assert len(ACCEPTED) >= 49
    assert len(REJECTED) >= 44


def test_manifest_covers_every_rejected_fixture_exactly_once() -> None:
    files = [entry["file"] for entry in MANIFEST]
    assert len(files) == len(set(files))
    assert set(files) == {p.name for p in REJECTED}
    for entry in MANIFEST:
        assert entry["ajv"] in ("rejects", "runtime_only"), entry
        assert entry["why"], entry
        assert entry["code"] in {code.value for code in ErrorCode}, entry


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.name)
def test_accepted_fixture_round_trips(path: Path) -> None:
    data = path.read_bytes()
    message = decode(data)
    wire = encode(message)
    assert json.loads(wire) == json.loads(data)
    again = decode(wire)
    assert again == message
    assert explain(data) == message
    assert decode(data.decode("utf-8")) == message


@pytest.mark.parametrize("path", REJECTED, ids=lambda p: p.name)
def test_rejected_fixture_gives_its_code(path: Path) -> None:
    data = path.read_bytes()
    with pytest.raises(ProtocolError) as caught:
        decode(data)
    assert caught.value.code == CODES[path.name]
    assert caught.value.origin == "peer"
    # The exact path names the same error.
    if len(data) <= DEFAULT_MAX_MESSAGE_BYTES:
        with pytest.raises(ProtocolError) as exact:
            explain(data)
        assert exact.value == caught.value


def _delta_of_size(size: int) -> bytes:
    base = Notification(
        method="item/delta",
        params=ItemDeltaParams(
            thread_id="thr-1", turn_id="turn-1", item_id="item-1", delta=""
        ),
    )
    pad = size - len(encode(base))
    params = ItemDeltaParams(
        thread_id="thr-1", turn_id="turn-1", item_id="item-1", delta="x" * pad
    )
    wire = encode(Notification(method="item/delta", params=params))
    assert len(wire) == size
    return wire


def test_message_of_exactly_one_mebibyte_is_accepted() -> None:
    wire = _delta_of_size(DEFAULT_MAX_MESSAGE_BYTES)
    assert isinstance(decode(wire), Notification)
    assert isinstance(decode(wire.decode()), Notification)


def test_message_one_byte_over_is_too_large_before_parsing() -> None:
    wire = _delta_of_size(DEFAULT_MAX_MESSAGE_BYTES) + b" "
    for data in (wire, wire.decode(), b"\xff" * (DEFAULT_MAX_MESSAGE_BYTES + 1)):
        with pytest.raises(ProtocolError) as caught:
            decode(data)
        assert caught.value.code == ErrorCode.MESSAGE_TOO_LARGE
        assert caught.value.data == {
            "bytes": DEFAULT_MAX_MESSAGE_BYTES + 1,
            "max": 1_048_576,
        }


def test_str_input_counts_utf8_bytes() -> None:
    # 300,000 three-byte characters: 900,000 bytes but only 300,000 code points.
    text = _delta_of_size(1000).decode().replace("x" * 10, "€" * 10)
    small = len(text.encode())
    with pytest.raises(ProtocolError) as caught:
        decode(text, max_message_bytes=small - 1)
    assert caught.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert isinstance(decode(text, max_message_bytes=small), Notification)


@pytest.mark.parametrize("value", [None, 1, 1.5, ["{}"], {"type": "request"}, object()])
def test_non_str_or_bytes_input_is_a_type_error(value: object) -> None:
    # Not bytes or text from a peer but the caller's wrong argument.
    with pytest.raises(TypeError, match="expected data to be"):
        decode(value)  # type: ignore[arg-type]


def test_buffer_inputs_decode_like_bytes() -> None:
    data = ACCEPTED[0].read_bytes()
    expected = decode(data)
    assert decode(bytearray(data)) == expected
    assert decode(memoryview(data)) == expected


def test_response_result_stays_raw_until_decode_result() -> None:
    data = (ROOT / "fixtures" / "accepted" / "thread.read.response.json").read_bytes()
    message = decode(data)
    assert isinstance(message, Response)
    assert isinstance(message.result, msgspec.Raw)
    assert json.loads(bytes(message.result)) == json.loads(data)["result"]
