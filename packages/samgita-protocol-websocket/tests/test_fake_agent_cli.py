"""The console script: prints the bound URL, serves, logs what happens, exits 0
on SIGINT and SIGTERM; its TLS and non-loopback flags."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from samgita_protocol_websocket import HandshakeRejected, connect
from samgita_protocol_websocket.fake_agent import main

from conftest import TOKEN

# A test fixture with no secrecy: see tests/certs/README.md.
CERTS = Path(__file__).resolve().parent / "certs"
CERT = CERTS / "test-only-localhost.pem"
KEY = CERTS / "test-only-localhost.key"


@contextlib.contextmanager
def _fake_agent(
    tmp_path: Path, *options: str, host: str = "127.0.0.1"
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The console script on a free port of ``host``, and the URL it printed."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "samgita_protocol_websocket.fake_agent", "--host", host, "--port", "0",
         "--token-file", str(token_file), *options],
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


def _thread_status(url: str, tls: ssl.SSLContext | None = None) -> str:
    """A session's thread/start against ``url``: the new thread's status."""

    async def session() -> str:
        async with connect(
            url, token=TOKEN, capabilities=["sessions.v1"], ssl=tls
        ) as s:
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


def test_non_loopback_host_refused_exits_2_naming_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    assert main(["--host", "0.0.0.0", "--token-file", str(token_file)]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 is not a loopback address" in err
    assert "--certfile" in err and "--allow-insecure-non-loopback" in err


def test_allow_insecure_non_loopback_flag_serves_plain_ws(tmp_path: Path) -> None:
    with _fake_agent(tmp_path, "--allow-insecure-non-loopback", host="0.0.0.0") as (
        proc,
        url,
    ):
        assert url.startswith("ws://0.0.0.0:"), url
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert _thread_status(f"ws://127.0.0.1:{port}/app-server") == "active"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_certfile_and_keyfile_serve_wss(tmp_path: Path) -> None:
    with _fake_agent(tmp_path, "--certfile", str(CERT), "--keyfile", str(KEY)) as (
        proc,
        url,
    ):
        assert url.startswith("wss://127.0.0.1:") and url.endswith("/app-server")
        # Verified as any client does: the certificate and the host name.
        trusting = ssl.create_default_context(cafile=str(CERT))
        assert _thread_status(url, trusting) == "active"
        with pytest.raises(ssl.SSLCertVerificationError):
            _thread_status(url, ssl.create_default_context())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_certfile_holding_the_key_too(tmp_path: Path) -> None:
    both = tmp_path / "both.pem"
    both.write_text(CERT.read_text() + KEY.read_text())
    with _fake_agent(tmp_path, "--certfile", str(both)) as (proc, url):
        trusting = ssl.create_default_context(cafile=str(CERT))
        assert _thread_status(url, trusting) == "active"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--keyfile", str(KEY)], "--keyfile needs --certfile"),
        (
            ["--certfile", "missing.pem"],
            "cannot load --certfile missing.pem: No such file or directory",
        ),
        (
            ["--certfile", str(KEY), "--keyfile", str(KEY)],
            f"cannot load --certfile {KEY} / --keyfile {KEY}: not a PEM certificate",
        ),
    ],
    ids=["keyfile alone", "missing certfile", "not a certificate"],
)
def test_bad_tls_flags_exit_2_naming_the_flag(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    assert main(["--token-file", str(token_file), *options]) == 2
    assert message in capsys.readouterr().err


def test_bad_log_level_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--token-file", str(tmp_path / "t"), "--log-level", "LOUD"])
    assert exited.value.code == 2
    assert "--log-level" in capsys.readouterr().err


def test_logs_connections_refusals_and_closes_at_info_by_default(
    tmp_path: Path,
) -> None:
    async def refused(url: str) -> int:
        try:
            async with connect(
                url, token="not-the-token", capabilities=["sessions.v1"]
            ):
                return 101
        except HandshakeRejected as exc:
            assert str(exc) == "authentication failed (HTTP 401)"
            return exc.status

    with _fake_agent(tmp_path) as (proc, url):
        assert _thread_status(url) == "active"
        assert asyncio.run(refused(url)) == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
    server = "INFO samgita_protocol_websocket.server: "
    assert f"{server}listening on {url}" in err
    assert f"{server}connection 1 accepted from 127.0.0.1:" in err
    assert "connection 1 from 127.0.0.1:" in err and "closed: code 1000" in err
    assert f"{server}refused 127.0.0.1:" in err
    assert ": HTTP 401 (authentication required)" in err
    assert "stopping (signal received)" in err
    # Below DEBUG, websockets' own records (the same events without the
    # peer's address) are left out.
    assert "websockets.server" not in err
    assert "Traceback" not in err and TOKEN not in err


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
