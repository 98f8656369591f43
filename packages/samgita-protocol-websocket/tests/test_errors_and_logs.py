"""What a user and an operator are told: the client's errors say why in words
(and are this package's exceptions), the listener logs accepted connections,
refusals, closes and failures under ``samgita_protocol_websocket``."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import traceback
from typing import Any

import pytest
import samgita_protocol as core

from samgita_protocol_websocket import (
    ConnectError,
    ConnectionInfo,
    HandshakeRejected,
    connect,
    serve,
)
from samgita_protocol_websocket._errors import os_error_reason, refusal_message
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

from conftest import TOKEN

SERVER = "samgita_protocol_websocket.server"


def factory() -> Any:
    return FakeAgent.factory(AgentState(message_deltas=1, delta_interval=0.0))


async def _refusal(url: str, **kwargs: Any) -> HandshakeRejected:
    kwargs.setdefault("token", TOKEN)
    with pytest.raises(HandshakeRejected) as err:
        async with connect(url, capabilities=["sessions.v1"], **kwargs):
            pass
    return err.value


# --- the client's errors ---------------------------------------------------------------------


def test_a_refused_upgrade_says_why_in_words() -> None:
    async def main() -> dict[int, str]:
        found: dict[int, str] = {}
        async with serve(
            factory(),
            host="127.0.0.1",
            token=TOKEN,
            allowed_origins=["https://ok.example"],
            max_connections=1,
        ) as listener:
            for exc in [
                await _refusal(listener.url, token="wrong-token"),
                await _refusal(listener.url, origin="https://evil.example"),
                await _refusal(listener.url.replace("/app-server", "/other")),
            ]:
                found[exc.status] = str(exc)
            async with connect(listener.url, token=TOKEN, capabilities=["sessions.v1"]):
                exc = await _refusal(listener.url)
                found[exc.status] = str(exc)
        return found

    assert asyncio.run(main()) == {
        401: "authentication failed (HTTP 401)",
        403: "origin not allowed (HTTP 403)",
        404: "upgrade refused (HTTP 404)",
        503: "server busy (HTTP 503)",
    }


def test_refusal_messages() -> None:
    assert refusal_message(302) == (
        "redirect (HTTP 302) refused: redirects are never followed"
    )
    assert refusal_message(426) == "upgrade refused (HTTP 426)"
    assert refusal_message(500) == "upgrade refused (HTTP 500)"


def test_handshake_rejected_is_exported_and_prints_as_the_package_s() -> None:
    exc = HandshakeRejected(401, refusal_message(401))
    assert exc.status == 401
    assert isinstance(exc, ConnectError) and isinstance(exc, ConnectionError)
    assert traceback.format_exception_only(exc) == [
        "samgita_protocol_websocket.HandshakeRejected: authentication failed (HTTP 401)\n"
    ]
    assert ConnectError.__module__ == "samgita_protocol_websocket"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_nothing_listening_is_a_connect_error_naming_the_address(host: str) -> None:
    port = _free_port()

    async def main() -> ConnectError:
        with pytest.raises(ConnectError) as err:
            async with connect(
                f"ws://{host}:{port}/app-server",
                token=TOKEN,
                capabilities=["sessions.v1"],
            ):
                pass
        return err.value

    exc = asyncio.run(main())
    assert str(exc) == (
        f"cannot connect to {host}:{port}: connection refused (is the listener running?)"
    )
    assert (exc.host, exc.port) == (host, port)
    assert not isinstance(exc, HandshakeRejected)
    assert isinstance(exc.__cause__, OSError)  # chained, never raised bare
    assert traceback.format_exception_only(exc)[0].startswith(
        "samgita_protocol_websocket.ConnectError: "
    )


def test_an_answer_that_is_not_a_websocket_handshake_is_a_connect_error() -> None:
    async def main() -> ConnectError:
        async def hang_up(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            writer.close()

        server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            with pytest.raises(ConnectError) as err:
                async with connect(
                    f"ws://127.0.0.1:{port}/app-server",
                    token=TOKEN,
                    capabilities=["sessions.v1"],
                ):
                    pass
        assert str(err.value) == (
            f"cannot connect to 127.0.0.1:{port}: the answer to the upgrade is "
            "not a valid WebSocket handshake (InvalidMessage)"
        )
        return err.value

    assert asyncio.run(main()).__cause__ is not None


def test_os_error_reasons() -> None:
    assert os_error_reason(socket.gaierror(-2, "Name or service not known")) == (
        "cannot resolve the host name (Name or service not known)"
    )
    assert os_error_reason(OSError(errno.ENETUNREACH, "Connect call failed")) == (
        "Network is unreachable"
    )
    refused_twice = OSError(
        "Multiple exceptions: [Errno 111] Connect call failed ('::1', 1, 0, 0), "
        "[Errno 111] Connect call failed ('127.0.0.1', 1)"
    )
    assert os_error_reason(refused_twice).startswith("connection refused")
    mixed = OSError("Multiple exceptions: [Errno 111] a, [Errno 101] b")
    assert os_error_reason(mixed) == str(mixed)


# --- the listener's log ------------------------------------------------------------------------


def _messages(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


def test_listener_logs_accepted_refused_and_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    async def main() -> str:
        async with serve(factory(), host="127.0.0.1", token=TOKEN) as listener:
            async with connect(listener.url, token=TOKEN, capabilities=["sessions.v1"]):
                pass
            await _refusal(listener.url, token="wrong-token")
            async with connect(
                listener.url, token=TOKEN, capabilities=["sessions.v1"]
            ) as s:
                s.abort()
                await s.wait_disconnected()
            for _ in range(100):  # the listener notices the cut
                if listener.active_connections == 0:
                    break
                await asyncio.sleep(0.01)
            return listener.url

    url = asyncio.run(main())
    lines = _messages(caplog, SERVER)
    assert lines[0] == f"listening on {url}"
    accepted = [line for line in lines if " accepted from 127.0.0.1:" in line]
    assert [line.split()[1] for line in accepted] == ["1", "2"]
    closed = [line for line in lines if " closed: code " in line]
    assert closed[0].startswith("connection 1 from 127.0.0.1:")
    assert closed[0].endswith("closed: code 1000")
    assert closed[1].endswith("closed: code 1006")  # cut without a close frame
    (refused,) = [line for line in lines if line.startswith("refused ")]
    assert refused.startswith("refused 127.0.0.1:")
    assert refused.endswith(": HTTP 401 (authentication required)")
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == SERVER)


def test_listener_logs_refusals_websockets_makes_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    def upgrade_missing(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(
                b"GET /app-server HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                b"Sec-WebSocket-Version: 13\r\n"
                + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
            )
            return sock.recv(4096)

    async def main() -> bytes:
        async with serve(factory(), host="127.0.0.1", token=TOKEN) as listener:
            return await asyncio.to_thread(upgrade_missing, listener.port)

    assert asyncio.run(main()).startswith(b"HTTP/1.1 426")
    assert any(
        line.endswith(": HTTP 426 (Upgrade Required)")
        for line in _messages(caplog, SERVER)
    )


def test_a_handler_failure_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    def failing(info: ConnectionInfo) -> Any:
        raise RuntimeError("handler cannot start")

    async def main() -> None:
        async with serve(failing, host="127.0.0.1", token=TOKEN) as listener:
            with pytest.raises(core.ProtocolError):
                async with connect(
                    listener.url, token=TOKEN, capabilities=["sessions.v1"]
                ):
                    pass
            await asyncio.sleep(0.1)

    asyncio.run(main())
    failures = [
        r for r in caplog.records if r.name == SERVER and r.levelno == logging.ERROR
    ]
    assert len(failures) == 1
    text = failures[0].getMessage()
    assert "handler_factory or Server construction failed" in text
    assert "Traceback" in text and "RuntimeError: handler cannot start" in text
    assert any(
        line.endswith("closed: code 1011 (server setup failed)")
        for line in _messages(caplog, SERVER)
    )


class _FailingAgent(FakeAgent):
    async def _ask_approval(self, entry: Any) -> str:
        raise RuntimeError("approval machinery broke")


def test_a_turn_that_fails_while_streaming_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    caps = ["sessions.v1", "streaming.v1"]

    async def main() -> str:
        state = AgentState(message_deltas=1, delta_interval=0.0)
        async with serve(
            _FailingAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            async with connect(listener.url, token=TOKEN, capabilities=caps) as s:
                thread = (await s.request("thread/start", {}, command_id="a")).thread
                await s.request(
                    "turn/start",
                    {
                        "thread_id": thread.thread_id,
                        "input": [{"type": "text", "text": "x"}],
                    },
                    command_id="b",
                )
                while True:
                    n = await s.next_notification(timeout=5)
                    if n.method == "turn/completed":
                        return str(n.params.turn.status)

    assert asyncio.run(main()) == "failed"
    (record,) = [
        r for r in caplog.records if r.name == "samgita_protocol_websocket.fake_agent"
    ]
    assert record.levelno == logging.ERROR
    assert record.getMessage().endswith("failed while streaming")
    assert record.exc_info is not None
    assert "approval machinery broke" in str(record.exc_info[1])


def test_a_logger_given_takes_the_listener_s_records_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    mine = logging.getLogger("my.app.listener")

    async def main() -> None:
        async with serve(
            factory(), host="127.0.0.1", token=TOKEN, logger=mine
        ) as listener:
            await _refusal(listener.url, token="wrong-token")

    asyncio.run(main())
    assert not _messages(caplog, SERVER)
    assert any(
        line.endswith("HTTP 401 (authentication required)")
        for line in _messages(caplog, "my.app.listener")
    )
