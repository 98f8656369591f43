"""The console script: prints the bound URL, serves, exits 0 on SIGINT and SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from samgita_protocol_websocket import connect
from samgita_protocol_websocket.fake_agent import main

from conftest import TOKEN


@contextlib.contextmanager
def _fake_agent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The console script on a free loopback port, and the URL it printed."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "samgita_protocol_websocket.fake_agent", "--host", "127.0.0.1", "--port", "0",
         "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline().strip()
    finally:
        if proc.poll() is None:
            proc.kill()


def _thread_status(url: str) -> str:
    """A session's thread/start against ``url``: the new thread's status."""

    async def session() -> str:
        async with connect(url, token=TOKEN, capabilities=["sessions.v1"]) as s:
            return str(
                (await s.request("thread/start", {}, command_id="c")).thread.status
            )

    return asyncio.run(session())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_fake_agent_serves_and_exits_cleanly(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with _fake_agent(tmp_path) as (proc, url):
        assert url.startswith("ws://127.0.0.1:") and url.endswith("/app-server")
        assert _thread_status(url) == "active"
        proc.send_signal(sig)
        assert proc.wait(10) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "Traceback" not in err and TOKEN not in err


def test_unreadable_token_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--token-file", str(tmp_path / "missing")]) == 2
    assert "token-file" in capsys.readouterr().err


def test_non_loopback_host_refused_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    assert main(["--host", "0.0.0.0", "--token-file", str(token_file)]) == 2
    assert "allow_insecure_non_loopback" in capsys.readouterr().err


def test_fake_agent_cuts_a_ping_flood_it_cannot_answer(tmp_path: Path) -> None:
    # Issue 18 item 2: through serve()'s default max_write_buffer, the
    # console script drops a peer that pings and never reads the pongs
    # (before, its write buffer grew by ~25 MiB a second), and serves others.
    from rawws import PING, RawClient, frame, upgrade_headers

    with _fake_agent(tmp_path) as (proc, url):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        peer = RawClient(port, timeout=60, rcvbuf=4096)
        assert peer.request(headers=upgrade_headers(TOKEN)).status == 101
        pings = b"".join(frame(PING, b"p" * 125) for _ in range(1000))
        sent, cut = 0, False
        # Far more than the socket buffers and the 4.25 MiB bound hold.
        while sent < 256 * 2**20:
            try:
                peer.sock.sendall(pings)
            except (ConnectionResetError, BrokenPipeError):
                cut = True
                break
            sent += len(pings)
        peer.close()
        assert cut, f"{sent} bytes of pings and still connected"

        assert _thread_status(url) == "active"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "closing connection: peer is not reading (write buffer full)" in err
        assert "Traceback" not in err and TOKEN not in err
