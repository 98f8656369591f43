"""Raw-socket conformance suite: each case states the exact close code or HTTP status.

The client side is plain ``socket`` with frames built by hand (``rawws``);
framing, masking, UTF-8 and close handling come from ``websockets`` under the
listener, the pre-upgrade policy from this package.  Limits are small so the
suite stays fast.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import TOKEN
from rawws import (
    BINARY,
    CLOSE,
    CONT,
    PING,
    PONG,
    TEXT,
    RawClient,
    accept_for,
    close_payload,
    frame,
    upgrade_headers,
)

MAX = 65_536
ORIGIN_OK = "https://host.example"


@pytest.fixture(scope="module")
def main(start_listener: Any) -> Any:
    return start_listener(max_size=MAX, allowed_origins=[ORIGIN_OK], open_timeout=5.0)


@pytest.fixture(scope="module")
def small(start_listener: Any) -> Any:
    return start_listener(max_size=1000)


@pytest.fixture(scope="module")
def slow(start_listener: Any) -> Any:
    return start_listener(open_timeout=0.3)


@pytest.fixture(scope="module")
def tiny(start_listener: Any) -> Any:
    return start_listener(max_connections=2)


def _open(listener: Any) -> RawClient:
    c = RawClient(listener.port)
    r = c.request(headers=upgrade_headers(TOKEN))
    assert r.status == 101, r
    return c


@pytest.fixture
def ws(main: Any) -> Iterator[RawClient]:
    c = _open(main)
    yield c
    c.close()


def status(
    listener: Any,
    path: str = "/app-server",
    headers: list[tuple[str, str]] | None = None,
) -> Any:
    c = RawClient(listener.port)
    try:
        return c.request(
            path, headers if headers is not None else upgrade_headers(TOKEN)
        )
    finally:
        c.close()


# --- handshake: HTTP status before any upgrade ------------------------------------------


def test_valid_handshake_101_with_accept(main: Any) -> None:
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    c = RawClient(main.port)
    r = c.request(headers=upgrade_headers(TOKEN, key=key))
    assert r.status == 101
    assert (
        r.headers["sec-websocket-accept"]
        == accept_for(key)
        == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    )
    assert "server" not in r.headers
    c.close()


@pytest.mark.parametrize(
    "path", ["/", "/other", "/app-server/", "/APP-SERVER", "/app-server/x"]
)
def test_wrong_path_404(main: Any, path: str) -> None:
    assert status(main, path).status == 404


@pytest.mark.parametrize("query", ["token=" + TOKEN, "access_token=" + TOKEN, "x=1"])
def test_query_string_refused_400(main: Any, query: str) -> None:
    r = status(main, "/app-server?" + query)
    assert r.status == 400
    assert TOKEN.encode() not in r.body


def test_missing_authorization_401(main: Any) -> None:
    r = status(main, headers=upgrade_headers(None))
    assert r.status == 401
    assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "value",
    [
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer ",
        f"Basic {TOKEN}",
        TOKEN,
        f"Bearer {TOKEN.upper()}",
    ],
)
def test_wrong_credentials_401(main: Any, value: str) -> None:
    r = status(main, headers=[*upgrade_headers(None), ("Authorization", value)])
    assert r.status == 401
    assert TOKEN.encode() not in r.body


def test_two_authorization_headers_401(main: Any) -> None:
    r = status(
        main, headers=[*upgrade_headers(TOKEN), ("Authorization", f"Bearer {TOKEN}")]
    )
    assert r.status == 401


def test_origin_not_allowed_403(main: Any) -> None:
    assert (
        status(
            main,
            headers=upgrade_headers(TOKEN, extra=[("Origin", "https://evil.example")]),
        ).status
        == 403
    )


def test_origin_allowed_101(main: Any) -> None:
    assert (
        status(
            main, headers=upgrade_headers(TOKEN, extra=[("Origin", ORIGIN_OK)])
        ).status
        == 101
    )


def test_origin_checked_before_auth_403(main: Any) -> None:
    assert (
        status(main, headers=upgrade_headers(None, extra=[("Origin", "null")])).status
        == 403
    )


@pytest.mark.parametrize("version", [None, "8", "12", "13, 8", ""])
def test_bad_version_426_with_supported_version(main: Any, version: str | None) -> None:
    r = status(main, headers=upgrade_headers(TOKEN, version=version))
    assert r.status == 426
    assert r.headers["sec-websocket-version"] == "13"


def test_missing_upgrade_426(main: Any) -> None:
    headers = [h for h in upgrade_headers(TOKEN) if h[0] != "Upgrade"]
    assert status(main, headers=headers).status == 426


def test_missing_key_400(main: Any) -> None:
    headers = [h for h in upgrade_headers(TOKEN) if h[0] != "Sec-WebSocket-Key"]
    assert status(main, headers=headers).status == 400


def test_bad_key_400(main: Any) -> None:
    assert status(main, headers=upgrade_headers(TOKEN, key="short")).status == 400


def test_101_headers_431(main: Any) -> None:
    extra = [(f"X-H{i}", "v") for i in range(101 - len(upgrade_headers(TOKEN)) - 1)]
    headers = upgrade_headers(TOKEN, extra=extra)
    assert len(headers) + 1 == 101  # + Host
    assert status(main, headers=headers).status == 431


def test_100_headers_accepted(main: Any) -> None:
    extra = [(f"X-H{i}", "v") for i in range(100 - len(upgrade_headers(TOKEN)) - 1)]
    assert status(main, headers=upgrade_headers(TOKEN, extra=extra)).status == 101


def test_header_flood_431(main: Any) -> None:
    extra = [(f"X-H{i}", "v") for i in range(500)]
    c = RawClient(main.port)
    try:
        assert c.request(headers=upgrade_headers(TOKEN, extra=extra)).status == 431
    finally:
        c.close()


def test_header_line_at_limit_accepted_and_over_431(main: Any) -> None:
    ok = "X-Big: " + "a" * (
        8192 - 2 - len("X-Big: ")
    )  # the limit counts CRLF, as websockets does
    over = ok + "a"
    ok_headers = upgrade_headers(TOKEN) + [tuple(ok.split(": ", 1))]  # type: ignore[list-item]
    over_headers = upgrade_headers(TOKEN) + [tuple(over.split(": ", 1))]  # type: ignore[list-item]
    assert status(main, headers=ok_headers).status == 101  # type: ignore[arg-type]
    assert status(main, headers=over_headers).status == 431  # type: ignore[arg-type]


def test_request_line_too_long_414(main: Any) -> None:
    assert status(main, "/app-server" + "a" * 9000).status == 414


def test_not_http_closed_without_answer(main: Any) -> None:
    c = RawClient(main.port)
    c.send(b"\x16\x03\x01garbage that is not HTTP\r\n\r\n")
    c.wait_eof(2.0)
    assert b"HTTP/1.1 101" not in c.buf
    c.close()


def test_slow_handshake_dropped_at_timeout(slow: Any) -> None:
    c = RawClient(slow.port)
    c.send(b"GET /app-server HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
    waited = c.wait_eof(3.0)
    assert 0.2 <= waited < 2.0
    assert c.buf == b""
    c.close()


def test_slow_byte_at_a_time_handshake_dropped(slow: Any) -> None:
    c = RawClient(slow.port)
    start = time.monotonic()
    request = b"GET /app-server HTTP/1.1\r\nHost: 127.0.0.1\r\n" * 1
    with pytest.raises(OSError):
        for b in request * 100:
            c.sock.sendall(bytes([b]))
            time.sleep(0.01)
    assert time.monotonic() - start < 3.0
    c.close()


def test_too_many_connections_503_and_slot_released(tiny: Any) -> None:
    a, b = _open(tiny), _open(tiny)
    r = status(tiny)
    assert r.status == 503
    assert r.headers["retry-after"] == "1"
    a.send(frame(CLOSE, close_payload(1000)))
    assert a.read_close() == 1000
    a.close()
    for _ in range(50):
        if tiny.active_connections < 2:
            break
        time.sleep(0.02)
    c = _open(tiny)
    c.close()
    b.close()


def test_refused_peer_holds_no_slot(tiny: Any) -> None:
    for _ in range(5):
        assert status(tiny, headers=upgrade_headers("wrong")).status == 401
    for _ in range(50):
        if tiny.active_connections == 0:
            break
        time.sleep(0.02)
    a, b = _open(tiny), _open(tiny)
    a.close()
    b.close()


# --- framing ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 125, 126, 127, 65535, 65536])
def test_text_payload_sizes_accepted(ws: RawClient, size: int) -> None:
    ws.send(frame(TEXT, b"x" * size))
    ws.assert_alive()


def test_byte_at_a_time_frame(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"y" * 300), byte_at_a_time=True)
    ws.send(frame(PING, b"abc"), byte_at_a_time=True)
    assert ws.read_until(PONG) == b"abc"


def test_unmasked_client_frame_1002(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"hello", mask=False))
    assert ws.read_close() == 1002


def test_ping_payload_over_125_1002(ws: RawClient) -> None:
    ws.send(frame(PING, b"p" * 126))
    assert ws.read_close() == 1002


def test_fragmented_ping_1002(ws: RawClient) -> None:
    ws.send(frame(PING, b"p", fin=False))
    assert ws.read_close() == 1002


def test_ping_answered_with_same_payload(ws: RawClient) -> None:
    ws.send(frame(PING, b"\x00\xffpayload"))
    assert ws.read_until(PONG) == b"\x00\xffpayload"


def test_unsolicited_pong_ignored(ws: RawClient) -> None:
    ws.send(frame(PONG, b"unsolicited"))
    ws.assert_alive()


def test_ping_between_fragments(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"frag", fin=False))
    ws.send(frame(PING, b"mid"))
    assert ws.read_until(PONG) == b"mid"
    ws.send(frame(CONT, b"ment"))
    ws.assert_alive()


def test_fragmented_text_accepted(ws: RawClient) -> None:
    ws.send(
        frame(TEXT, b"a", fin=False) + frame(CONT, b"b", fin=False) + frame(CONT, b"c")
    )
    ws.assert_alive()


def test_continuation_without_start_1002(ws: RawClient) -> None:
    ws.send(frame(CONT, b"orphan"))
    assert ws.read_close() == 1002


def test_new_message_inside_fragmented_message_1002(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"a", fin=False) + frame(TEXT, b"b"))
    assert ws.read_close() == 1002


@pytest.mark.parametrize("opcode", [0x3, 0x7, 0xB, 0xF])
def test_reserved_opcode_1002(ws: RawClient, opcode: int) -> None:
    ws.send(frame(opcode, b"x"))
    assert ws.read_close() == 1002


@pytest.mark.parametrize("rsv", [1, 2, 4])
def test_reserved_bits_without_extension_1002(ws: RawClient, rsv: int) -> None:
    ws.send(frame(TEXT, b"x", rsv=rsv))
    assert ws.read_close() == 1002


def test_binary_frame_1003(ws: RawClient) -> None:
    ws.send(frame(BINARY, b"\x00\x01"))
    assert ws.read_close() == 1003


def test_64bit_length_with_msb_set_closed(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"", length=1 << 63)[:10] + b"\x00" * 4)
    # RFC 6455 5.2 requires the MSB to be 0; websockets checks the size limit first: 1009.
    assert ws.read_close() == 1009


# --- UTF-8 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        b"\xc0\xaf",  # overlong "/"
        b"\xe0\x80\xaf",  # overlong, 3 bytes
        b"\xed\xa0\x80",  # UTF-16 surrogate U+D800
        b"\xed\xbf\xbf",  # surrogate U+DFFF
        b"\xf4\x90\x80\x80",  # > U+10FFFF
        b"\xe2\x82",  # truncated euro sign
        b"\xff",  # never valid
        b"ok\x80",  # lone continuation byte
    ],
    ids=[
        "overlong2",
        "overlong3",
        "surrogate-lo",
        "surrogate-hi",
        "above-10ffff",
        "truncated",
        "ff",
        "lone-cont",
    ],
)
def test_invalid_utf8_1007(ws: RawClient, payload: bytes) -> None:
    ws.send(frame(TEXT, payload))
    assert ws.read_close() == 1007


def test_valid_utf8_split_across_fragments_accepted(ws: RawClient) -> None:
    euro = "€𝄞".encode()
    ws.send(
        frame(TEXT, euro[:1], fin=False)
        + frame(CONT, euro[1:5], fin=False)
        + frame(CONT, euro[5:])
    )
    ws.assert_alive()


def test_invalid_utf8_split_across_fragments_1007(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"\xed", fin=False) + frame(CONT, b"\xa0\x80"))
    assert ws.read_close() == 1007


def test_truncated_utf8_at_end_of_fragmented_message_1007(ws: RawClient) -> None:
    ws.send(frame(TEXT, b"ok", fin=False) + frame(CONT, b"\xe2\x82"))
    assert ws.read_close() == 1007


# The listener takes text messages as bytes (websockets does not decode them)
# and the core's decode checks every byte: invalid UTF-8 anywhere in an
# otherwise valid request, where a JSON parser might skip it, is still 1007.
_INIT = (
    b'{"schema_version":"1.0","type":"request","id":"i","correlation_id":"i",'
    b'"method":"connection/initialize","params":{"versions":["1.0"],'
    b'"capabilities":["project_events.v1"]}}'
)
_EVENT = (
    b'{"schema_version":"1.0","type":"request","id":"r1","correlation_id":"r1",'
    b'"method":"project/event.receive","command_id":"c1","params":{"event":'
    b'{"event_id":"e1","delivery_attempt_id":"a","created_at":"2026-12-03T10:00:00Z",'
    b'"correlation_id":"c","event_type":"t","payload":{"k":"v"}}}}'
)


@pytest.mark.parametrize(
    "where",
    ["string-value", "key", "unknown-member", "free-form-value", "after-the-json"],
)
@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"],
    ids=["ff", "overlong", "surrogate", "above-10ffff", "truncated"],
)
def test_invalid_utf8_inside_a_request_1007(
    ws: RawClient, where: str, bad: bytes
) -> None:
    ws.send(frame(TEXT, _INIT))
    assert b'"result"' in ws.read_until(TEXT)
    message = {
        "string-value": _EVENT.replace(
            b'"event_type":"t"', b'"event_type":"t' + bad + b'"'
        ),
        "key": _EVENT.replace(b'{"k":"v"}', b'{"k' + bad + b'":"v"}'),
        "unknown-member": _EVENT.replace(b'"method"', b'"x":"' + bad + b'","method"'),
        "free-form-value": _EVENT.replace(b'{"k":"v"}', b'{"k":["' + bad + b'"]}'),
        "after-the-json": _EVENT + b" " + bad,
    }[where]
    assert message != _EVENT
    ws.send(frame(TEXT, message))
    assert ws.read_close() == 1007


def test_invalid_utf8_split_across_fragments_inside_a_request_1007(
    ws: RawClient,
) -> None:
    ws.send(frame(TEXT, _INIT))
    assert b'"result"' in ws.read_until(TEXT)
    message = _EVENT.replace(
        b'"event_type":"t"', b'"event_type":"t\xe2\x82\xac\xed\xa0\x80"'
    )
    cut = message.index(b"\xe2") + 1
    ws.send(frame(TEXT, message[:cut], fin=False) + frame(CONT, message[cut:]))
    assert ws.read_close() == 1007


def test_valid_non_ascii_request_answered(ws: RawClient) -> None:
    ws.send(frame(TEXT, _INIT))
    assert b'"result"' in ws.read_until(TEXT)
    message = _EVENT.replace(b'{"k":"v"}', '{"k€":"v𝄞"}'.encode())
    cut = message.index(b"\xe2") + 1  # split inside the euro sign
    ws.send(frame(TEXT, message[:cut], fin=False) + frame(CONT, message[cut:]))
    assert b'"received"' in ws.read_until(TEXT)


def test_text_before_binary_answered_then_1003(ws: RawClient) -> None:
    # Messages are taken as bytes; the connection class remembers which one
    # was binary, so what came before it is still answered first.
    ws.send(frame(TEXT, _INIT) + frame(BINARY, b"{}") + frame(TEXT, _EVENT))
    assert b'"result"' in ws.read_until(TEXT)
    assert ws.read_close() == 1003


# --- close handshake ------------------------------------------------------------------------


@pytest.mark.parametrize("code", [1000, 1001, 3000, 4999])
def test_close_code_echoed(ws: RawClient, code: int) -> None:
    ws.send(frame(CLOSE, close_payload(code, b"bye")))
    assert ws.read_close() == code


def test_close_without_payload_answered(ws: RawClient) -> None:
    ws.send(frame(CLOSE))
    assert ws.read_close() is None  # echoed with an empty payload (RFC 6455 5.5.1)


def test_close_payload_one_byte_1002(ws: RawClient) -> None:
    ws.send(frame(CLOSE, b"\x03"))
    assert ws.read_close() == 1002


@pytest.mark.parametrize("code", [0, 999, 1004, 1005, 1006, 1015, 2999, 5000])
def test_close_invalid_code_1002(ws: RawClient, code: int) -> None:
    ws.send(frame(CLOSE, close_payload(code)))
    assert ws.read_close() == 1002


def test_close_reason_invalid_utf8_1007(ws: RawClient) -> None:
    ws.send(frame(CLOSE, close_payload(1000, b"\xff")))
    assert ws.read_close() == 1007


def test_close_reason_over_123_bytes_1002(ws: RawClient) -> None:
    ws.send(frame(CLOSE, close_payload(1000, b"r" * 124)))
    assert ws.read_close() == 1002


# --- message size limits --------------------------------------------------------------------


def test_message_exactly_max_accepted(small: Any) -> None:
    c = _open(small)
    c.send(frame(TEXT, b"m" * 1000))
    c.assert_alive()
    c.close()


def test_message_max_plus_one_1009(small: Any) -> None:
    c = _open(small)
    c.send(frame(TEXT, b"m" * 1001))
    assert c.read_close() == 1009
    c.close()


def test_fragmented_message_over_max_1009(small: Any) -> None:
    c = _open(small)
    c.send(frame(TEXT, b"m" * 600, fin=False) + frame(CONT, b"m" * 401))
    assert c.read_close() == 1009
    c.close()


def test_fragmented_message_exactly_max_accepted(small: Any) -> None:
    c = _open(small)
    c.send(frame(TEXT, b"m" * 600, fin=False) + frame(CONT, b"m" * 400))
    c.assert_alive()
    c.close()


def test_binary_over_max_1009(small: Any) -> None:
    c = _open(small)
    c.send(frame(BINARY, b"m" * 1001))
    assert c.read_close() == 1009
    c.close()


def test_header_declares_huge_length_1009_before_payload(small: Any) -> None:
    c = _open(small)
    c.send(frame(TEXT, b"", length=10_000_000)[:14])
    assert c.read_close() == 1009
    c.close()


# --- keepalive ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pinging(start_listener: Any) -> Any:
    return start_listener(ping_interval=0.2, ping_timeout=0.3)


def test_keepalive_ping_unanswered_closes_1011(pinging: Any) -> None:
    c = _open(pinging)
    start = time.monotonic()
    opcode, _fin, _payload = c.read_frame()
    assert opcode == PING
    assert c.read_close() == 1011  # no pong within ping_timeout
    assert time.monotonic() - start < 3.0
    c.close()


def test_keepalive_ping_answered_keeps_connection(pinging: Any) -> None:
    c = _open(pinging)
    deadline = time.monotonic() + 1.2
    pings = 0
    while time.monotonic() < deadline:
        opcode, _fin, payload = c.read_frame()
        assert opcode == PING
        pings += 1
        c.send(frame(PONG, payload))
    assert pings >= 3
    c.assert_alive()
    c.close()
