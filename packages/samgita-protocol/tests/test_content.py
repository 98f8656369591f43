"""What a window remembers of content (docs/protocol.md section 10): the same
content under a repeated id is a repeat, other content a conflict; key order
and whitespace on the wire never make other content, ``1`` and ``1.0`` do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from samgita_protocol import (
    CancelResult,
    Client,
    Notification,
    Request,
    Response,
    Server,
    decode,
)
from samgita_protocol._codec import decode_wire
from samgita_protocol._content import (
    INLINE_BYTES,
    canonical,
    content_key,
    same_content,
)
from samgita_protocol.testing import FakeHost

FIXTURES = Path(__file__).resolve().parent / "schemas" / "1.0" / "fixtures" / "accepted"
RESPONSE = (
    b'{"schema_version":"1.0","type":"response","id":"c1-1","correlation_id":"c1-1",'
    b'"result":{"request_id":"x","cancel_status":"requested"}}'
)


def relaid(wire: bytes) -> bytes:
    """The same message in another layout: every object's keys reversed,
    indented."""

    def reverse(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reverse(value[k]) for k in reversed(value)}
        if isinstance(value, list):
            return [reverse(v) for v in value]
        return value

    return json.dumps(reverse(json.loads(wire)), indent=1).encode()


def test_a_small_message_is_kept_by_its_bytes_a_large_one_by_digest() -> None:
    message = decode(RESPONSE)
    assert content_key(message, RESPONSE) == ("wire", RESPONSE)
    large = RESPONSE[:-1] + b" " * INLINE_BYTES + b"}"
    tag, digest = content_key(decode(large), large)
    assert tag == "digest" and isinstance(digest, int)
    assert content_key(message, None)[0] == "digest"
    # Text counts in UTF-8 bytes.
    text = RESPONSE.decode().replace('"x"', '"' + "é" * 500 + '"')
    assert len(text) <= INLINE_BYTES < len(text.encode())
    assert content_key(decode(text), text)[0] == "digest"


REQUEST = (
    b'{"type":"request","schema_version":"1.0","method":"request/cancel","id":"r",'
    b'"correlation_id":"r","params":{"request_id":"x","reason":"requested"}}'
)


@pytest.mark.parametrize(
    ("typed", "wire"),
    # The typed form is for a window of typed messages (a Server's requests).
    [(False, RESPONSE), (False, REQUEST), (True, REQUEST)],
)
def test_layout_is_not_content_but_values_are(typed: bool, wire: bytes) -> None:
    message = decode(wire)
    reordered = relaid(wire)
    other = wire.replace(b'"requested"', b'"already_finished"')
    large = wire[:-1] + b" " * INLINE_BYTES + b"}"
    for key in (
        content_key(message, wire, typed=typed),
        content_key(message, None, typed=typed),
        content_key(decode(large), large, typed=typed),
    ):
        assert same_content(key, message, wire, typed=typed)
        assert same_content(key, decode(reordered), reordered, typed=typed)
        assert same_content(key, decode(reordered), None, typed=typed)
        assert not same_content(key, decode(other), other, typed=typed)


def test_canonical_keeps_number_forms() -> None:
    one = b'{"schema_version":"1.0","type":"response","id":"a","correlation_id":"a","result":{"n":1}}'
    assert canonical(decode(one)) != canonical(
        decode(one.replace(b'"n":1', b'"n":1.0'))
    )


def test_canonical_is_one_form_for_a_payload_typed_or_still_raw() -> None:
    # A response completes its request typed and can come again raw; a
    # stream/resume page's events are raw.
    typed = Response(
        id="c1-1",
        correlation_id="c1-1",
        result=msgspec.json.decode(
            b'{"request_id":"x","cancel_status":"requested"}',
            type=CancelResult,
        ),
    )
    assert canonical(typed) == canonical(decode(RESPONSE))
    params = {"thread_id": "t", "turn_id": "u", "item_id": "i", "delta": "d"}
    live = decode(
        msgspec.json.encode(
            {
                "type": "notification",
                "schema_version": "1.0",
                "method": "item/delta",
                "params": params,
                "stream_id": "s",
                "cursor": 1,
            }
        )
    )
    raw = Notification(
        method="item/delta",
        params=msgspec.Raw(
            b'{"delta":"d", "item_id":"i","turn_id":"u","thread_id":"t"}'
        ),
        stream_id="s",
        cursor=1,
    )
    assert canonical(live) == canonical(raw)
    assert canonical(raw) != canonical(
        msgspec.structs.replace(raw, params=msgspec.Raw(b'{"delta":"e"}'))
    )


def test_the_typed_key_of_this_librarys_own_bytes_is_taken_from_them() -> None:
    # decode_wire says when the input is the library's own encoding; the key
    # from those bytes is the key of the message encoded again, and another
    # layout of it is the same content.
    seen = 0
    for path in sorted(FIXTURES.glob("*.json")):
        message = decode(path.read_bytes())
        if isinstance(message, Response):
            continue
        padded = _padded(message)
        wire = msgspec.json.encode(padded, order="deterministic")
        decoded, canonical_wire = decode_wire(wire)
        assert canonical_wire, path
        key = content_key(decoded, wire, typed=True, wire_canonical=True)
        assert key == content_key(decoded, None, typed=True), path
        other = relaid(wire)
        assert decode_wire(other)[1] is False
        assert same_content(key, decode(other), other, typed=True), path
        seen += 1
    assert seen > 10


def _padded(message: Request | Notification) -> Request | Notification:
    # Over INLINE_BYTES: the envelope's identities at their bound (the
    # params' free text differs per method).
    return msgspec.structs.replace(
        message,
        correlation_id="c" * 256,
        causation_id="d" * 256,
        project_ref="p" * 256,
        task_ref="t" * 256,
    )


def _request(size: int, text: str, *, id: str) -> bytes:  # noqa: A002
    return msgspec.json.encode(
        {
            "type": "request",
            "schema_version": "1.0",
            "method": "project/event.receive",
            "id": id,
            "correlation_id": id,
            "command_id": "k" + id,
            "params": {
                "event": {
                    "event_id": "e" + id,
                    "delivery_attempt_id": "a",
                    "created_at": "2026-01-01T00:00:00Z",
                    "correlation_id": "c",
                    "event_type": "t",
                    "payload": {"b": 1, "a": [1.0, text * size]},
                }
            },
        }
    )


@pytest.mark.parametrize("size", [10, 100_000])
def test_a_server_tells_a_repeat_in_any_layout_from_a_conflict(size: int) -> None:
    groups = ["project_events.v1"]
    server = Server(FakeHost(capabilities=groups), capabilities=groups)
    client = Client(capabilities=groups)
    init = client.request(
        "connection/initialize", {"versions": ["1.0"], "capabilities": groups}
    )
    server.receive(init.data)
    ours = _request(size, "x", id="r1")
    for wire in (ours, relaid(ours), ours):
        [out] = server.receive(wire)
        assert isinstance(out.message, Response) and out.message.error is msgspec.UNSET
    for other in (_request(size, "y", id="r1"), ours.replace(b"[1.0,", b"[1,")):
        [out] = server.receive(other)
        assert isinstance(out.message, Response)
        assert out.message.error.code == "conflict"  # type: ignore[union-attr]
    # The first arrival in another layout: the same holds.
    first = relaid(_request(size, "x", id="r2"))
    for wire in (first, _request(size, "x", id="r2")):
        [out] = server.receive(wire)
        assert out.message.error is msgspec.UNSET  # type: ignore[union-attr]
    [out] = server.receive(_request(size, "z", id="r2"))
    assert out.message.error.code == "conflict"  # type: ignore[union-attr]
