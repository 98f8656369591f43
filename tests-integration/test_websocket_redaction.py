"""Redaction: with DEBUG logging on everywhere, the token appears in no log record, repr, error or traceback.

``websockets`` logs every handshake header at DEBUG; this package hands it a
redacting logger.  The test drives a successful session, refused handshakes
(wrong token, token in the query string, credentials in the URL) and
collects every record of every logger, the reprs of every public object and
the text and traceback of every error, then greps all of it.  The last test
does the same through the ``samgita-fake-agent`` command run with
``--log-level DEBUG``: its whole stderr holds the token in no form (as it
is, percent-encoded, base64).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import signal
import socket
import subprocess
import sys
import traceback
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core
from samgita_protocol_websocket import HandshakeRejected, Secret, connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

TOKEN = "redact-me-9c2b7e1f04a6"
WRONG = "wrong-secret-55aa77cc"
GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def ignore_requests(request: Any) -> None:
    """``on_request`` for sessions that leave the Agent's requests (approvals) unanswered."""


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))
        self.texts.append(repr(record.args))
        self.texts.append(repr(record.__dict__))


def _raw_query_token(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            f"GET /app-server?access_token={TOKEN} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def test_token_never_appears(caplog: pytest.LogCaptureFixture) -> None:
    capture = Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    texts: list[str] = []

    def grab(exc: BaseException) -> None:
        texts.extend([str(exc), repr(exc), "".join(traceback.format_exception(exc))])

    async def main() -> None:
        state = AgentState(message_deltas=2, delta_interval=0.0)
        infos: list[Any] = []

        def factory(info: Any) -> Any:
            infos.append(info)
            return FakeAgent.factory(state)(info)

        ctx = serve(factory, host="127.0.0.1", token=TOKEN)
        texts.append(repr(ctx))
        async with ctx as listener:
            texts.append(repr(listener))
            client_ctx = connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                on_request=ignore_requests,
            )
            texts.append(repr(client_ctx))
            async with client_ctx as s:
                texts.extend([repr(s), repr(s.client), repr(s.initialize_result)])
                await s.request("thread/start", {}, command_id="c1")
            texts.extend(repr(i) for i in infos)
            texts.extend(repr(i.headers) for i in infos)
            try:
                async with connect(
                    listener.url,
                    token=WRONG,
                    capabilities=GROUPS,
                    on_request=ignore_requests,
                ):
                    pass
            except HandshakeRejected as exc:
                grab(exc)
            for bad in (
                listener.url.replace("ws://", f"ws://user:{TOKEN}@"),
                listener.url + f"?token={TOKEN}",
            ):
                try:
                    connect(
                        bad,
                        token=TOKEN,
                        capabilities=GROUPS,
                        on_request=ignore_requests,
                    )
                except ValueError as exc:
                    grab(exc)
            texts.append(
                (await asyncio.to_thread(_raw_query_token, listener.port)).decode(
                    "latin-1"
                )
            )

    try:
        asyncio.run(main())
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
    texts.append(repr(Secret(TOKEN)))
    texts.append(f"{Secret(TOKEN)}")
    everything = "\n".join(
        texts + capture.texts + [r.getMessage() for r in caplog.records]
    )
    assert (
        "Authorization" in everything or "authorization" in everything
    )  # the headers were logged ...
    assert "connection open" in everything  # ... and DEBUG/INFO records were captured
    assert TOKEN not in everything
    assert WRONG not in everything


_HOSTILE_REQUESTS = {
    # request targets without a leading "/", absolute form, HTTP/1.0
    "noslash": b"GET app-server?access_token=SECRET-noslash HTTP/1.1\r\nHost: x\r\n\r\n",
    "star": b"GET *?token=SECRET-star HTTP/1.1\r\nHost: x\r\n\r\n",
    "absolute": b"GET http://127.0.0.1/x?token=SECRET-absolute HTTP/1.1\r\nHost: x\r\n\r\n",
    "http10": b"GET /app-server?access_token=SECRET-http10 HTTP/1.0\r\nHost: x\r\n\r\n",
    "badmethod": b"POST /app-server?token=SECRET-badmethod HTTP/1.1\r\nHost: x\r\n\r\n",
    # credentials in headers a custom authenticator may read
    "headers": (
        b"GET /app-server HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"X-Api-Token: SECRET-xapitoken\r\nProxy-Authorization:SECRET-proxy\r\n"
        b"Authorization: Bearer SECRET-bearer\r\n\r\n"
    ),
}


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        out = b""
        try:
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                out += chunk
        except TimeoutError:
            pass
        return out


def test_custom_authenticator_no_secret_registered_still_nothing_leaks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # With a custom authenticator the listener knows no secret value to
    # scrub: only the patterns (credential headers, query strings) protect.
    capture = Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    texts: list[str] = []

    async def authenticator(request: Any) -> object | None:
        texts.append(repr(request))
        if request.authorization == ("Bearer SECRET-custom-ok",):
            return {"user": "ok"}
        return False

    async def main() -> None:
        state = AgentState(message_deltas=2, delta_interval=0.0)
        async with serve(
            FakeAgent.factory(state),
            host="127.0.0.1",
            authenticator=authenticator,
            open_timeout=1,
        ) as listener:
            async with connect(
                listener.url, token="SECRET-custom-ok", capabilities=["sessions.v1"]
            ) as s:
                texts.extend([repr(s), repr(s.client)])
                await s.request("thread/start", {}, command_id="c1")
            try:
                async with connect(
                    listener.url,
                    token="SECRET-custom-bad",
                    capabilities=["sessions.v1"],
                ):
                    pass
            except HandshakeRejected as exc:
                texts.extend(
                    [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
                )
                assert exc.status == 401
            for data in _HOSTILE_REQUESTS.values():
                status = (await asyncio.to_thread(_raw, listener.port, data)).split(
                    b"\r\n", 1
                )[0]
                assert status.startswith(b"HTTP/1.1 4") or status == b"", status
            await asyncio.sleep(0.2)

    try:
        asyncio.run(main())
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
    everything = "\n".join(
        texts + capture.texts + [r.getMessage() for r in caplog.records]
    )
    assert "connection open" in everything
    assert "GET" in everything  # the hostile request lines were logged ...
    assert "SECRET" not in everything  # ... with nothing secret in them


# Characters that percent-encoding and base64 change, so each form differs.
CLI_TOKEN = "cli+redact/9c2b7e1f=04a6"


def _forms(token: str) -> dict[str, str]:
    """The token as it is and as it would appear encoded in a request or a log."""
    raw = token.encode()
    return {
        "as is": token,
        "percent-encoded": urllib.parse.quote(token, safe=""),
        "form-encoded": urllib.parse.quote_plus(token),
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "basic credentials": base64.b64encode(b"user:" + raw).decode(),
    }


async def _cli_flow(url: str, port: int) -> None:
    """A full session (a turn streamed, its approval answered, an event whose
    payload holds the token), then refusals carrying the token elsewhere."""
    box: list[Any] = []

    async def deny(request: Any) -> None:
        p = request.params
        await box[0].reply(
            request,
            core.ApprovalRequestResult(
                approval_id=p.approval_id, action=p.action, decision="deny"
            ),
        )

    async with connect(url, token=CLI_TOKEN, capabilities=GROUPS, on_request=deny) as s:
        box.append(s)
        event = core.Event(
            event_id="e1",
            delivery_attempt_id="a1",
            created_at="2026-12-03T10:00:00Z",
            correlation_id="c1",
            event_type="t",
            payload={"note": f"the token is {CLI_TOKEN}"},
        )
        await s.request("project/event.receive", {"event": event}, command_id="e")
        thread = (await s.request("thread/start", {}, command_id="t")).thread
        await s.request(
            "turn/start",
            {"thread_id": thread.thread_id, "input": [{"type": "text", "text": "x"}]},
            command_id="u",
        )
        while True:
            n = await s.next_notification(timeout=20)
            if n.cursor is not core.UNSET:
                s.ack(n)
            if n.method == "turn/completed":
                break
    with pytest.raises(HandshakeRejected):
        async with connect(url, token=WRONG, capabilities=GROUPS, on_request=deny):
            pass
    forms = _forms(CLI_TOKEN)
    upgrade = (
        "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    )
    for request in (
        f"GET /app-server?access_token={forms['percent-encoded']} HTTP/1.1\r\n"
        + upgrade
        + f"Authorization: Bearer {CLI_TOKEN}\r\n\r\n",
        "GET /app-server HTTP/1.1\r\n"
        + upgrade
        + f"Authorization: Basic {forms['basic credentials']}\r\n"
        + f"X-Api-Token: {forms['base64']}\r\n\r\n",
    ):
        answer = await asyncio.to_thread(_raw, port, request.encode())
        assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 401")), answer[:40]


def test_fake_agent_command_at_debug_never_logs_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(CLI_TOKEN + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "samgita_protocol_websocket.fake_agent",
         "--token-file", str(token_file), "--log-level", "DEBUG",
         "--deltas", "3", "--delta-interval", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stderr is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("ws://127.0.0.1:"), url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        asyncio.run(asyncio.wait_for(_cli_flow(url, port), 60))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    # DEBUG was on: the handshake headers and the frames were logged ...
    assert " DEBUG websockets.server: < Authorization: [redacted]" in err
    assert " DEBUG websockets.server: < X-Api-Token: [redacted]" in err
    assert " DEBUG websockets.server: < TEXT " in err
    # ... and the operator's INFO records with them.
    assert "connection 1 accepted from 127.0.0.1:" in err
    assert "HTTP 401 (authentication required)" in err
    assert "HTTP 400 (query strings are refused" in err
    assert "closed: code 1000" in err
    leaked = [name for name, form in _forms(CLI_TOKEN).items() if form in err]
    assert not leaked, f"the token appears {leaked} in the fake agent's log"
    assert WRONG not in err
