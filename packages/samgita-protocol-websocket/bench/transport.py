"""Transport benchmark: our listener vs a bare ``websockets`` echo server vs a Node ``ws`` echo server.

One load generator (a ``websockets`` client, one message in flight) sends
text messages of 256 B, 16 KiB and 1 MiB and waits for each reply; it
reports messages per second and p50/p99 round-trip latency per server, and
the ratios to the bare ``websockets`` server.  Our listener receives a valid
``project/event.receive`` request of that size (padded payload), decodes and
validates it, runs the fake Agent's handler and sends its (small) response;
the echo servers send the whole message back.  Then: memory per idle
connection of our listener (RSS of a fake Agent process before and after
1,000 initialized, idle connections).

Run: ``python bench/transport.py [--rounds N]`` (needs node and
tests-integration/node_modules for the Node column; it is skipped with a
note otherwise).  Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import serve as ws_serve

ROOT = Path(__file__).resolve().parents[3]
PEERS = ROOT / "tests-integration"
SIZES = {"256 B": 256, "16 KiB": 16 * 1024, "1 MiB": 1024 * 1024 - 1024}
GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def ignore_requests(request: object) -> None:
    """``on_request`` for sessions that leave the Agent's requests (approvals) unanswered."""


def request_bytes(i: int, size: int) -> str:
    base = {
        "schema_version": "1.0",
        "type": "request",
        "id": f"b-{i}",
        "correlation_id": f"c-{i}",
        "method": "project/event.receive",
        "command_id": f"cmd-{i}",
        "params": {
            "event": {
                "event_id": f"e-{i}",
                "delivery_attempt_id": "a",
                "created_at": "2026-12-03T10:00:00Z",
                "correlation_id": "c",
                "event_type": "bench",
                "payload": {"pad": ""},
            }
        },
    }
    pad = size - len(json.dumps(base, separators=(",", ":")))
    base["params"]["event"]["payload"]["pad"] = "x" * max(pad, 0)  # type: ignore[index]
    return json.dumps(base, separators=(",", ":"))


async def measure(
    url: str, token: str | None, size: int, rounds: int, protocol: bool
) -> tuple[float, float, float]:
    headers = [("Authorization", f"Bearer {token}")] if token else None
    async with ws_connect(
        url, additional_headers=headers, max_size=2**21, compression=None
    ) as ws:
        if protocol:
            init = {
                "schema_version": "1.0",
                "type": "request",
                "id": "init",
                "correlation_id": "init",
                "method": "connection/initialize",
                "params": {"versions": ["1.0"], "capabilities": GROUPS},
            }
            await ws.send(json.dumps(init))
            await ws.recv()
        messages = [request_bytes(i, size) for i in range(rounds)]
        rtts: list[float] = []
        start = time.perf_counter()
        for m in messages:
            t0 = time.perf_counter()
            await ws.send(m)
            await ws.recv()
            rtts.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
    rtts.sort()
    p99 = rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))]
    return rounds / elapsed, statistics.median(rtts) * 1e6, p99 * 1e6


def core_cost_us(size: int, rounds: int) -> float:
    """Median in-process cost of the core alone: Server.receive of the request plus encode of the reply."""
    import samgita_protocol as core

    from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

    class _Conn:
        closed = False

    server = core.Server(FakeAgent(AgentState(), _Conn()), capabilities=GROUPS)  # type: ignore[arg-type]
    init = {
        "schema_version": "1.0",
        "type": "request",
        "id": "init",
        "correlation_id": "init",
        "method": "connection/initialize",
        "params": {"versions": ["1.0"], "capabilities": GROUPS},
    }
    server.receive(json.dumps(init))
    costs = []
    for i in range(rounds):
        m = request_bytes(i, size)
        t0 = time.perf_counter()
        for reply in server.receive(m):
            core.encode(reply)
        costs.append(time.perf_counter() - t0)
    return statistics.median(costs) * 1e6


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def idle_memory(token: str, connections: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        tf = Path(tmp, "t")
        tf.write_text(token)
        proc = subprocess.Popen(  # noqa: ASYNC220
            [
                sys.executable,
                "-m",
                "samgita_protocol_websocket.fake_agent",
                "--port",
                "0",
                "--token-file",
                str(tf),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        from samgita_protocol_websocket import connect

        sessions = []
        try:
            # Warm up one session so imports and first-use allocations are not counted.
            warm = connect(
                url, token=token, capabilities=GROUPS, on_request=ignore_requests
            )
            await warm.__aenter__()
            await asyncio.sleep(0.5)
            before = rss_kib(proc.pid)
            ctxs = [
                connect(
                    url,
                    token=token,
                    capabilities=GROUPS,
                    open_timeout=120,
                    on_request=ignore_requests,
                )
                for _ in range(connections)
            ]
            for i in range(0, connections, 100):
                sessions += await asyncio.gather(
                    *(c.__aenter__() for c in ctxs[i : i + 100])
                )
            await asyncio.sleep(1.0)
            after = rss_kib(proc.pid)
            for c in ctxs:
                await c.__aexit__(None, None, None)
            await warm.__aexit__(None, None, None)
        finally:
            proc.terminate()
            proc.wait(10)
    return (after - before) / connections


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=1000)
    args = parser.parse_args()
    token = secrets.token_urlsafe(16)

    from samgita_protocol_websocket import serve
    from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

    async def echo(ws: object) -> None:
        async for m in ws:  # type: ignore[attr-defined]
            await ws.send(m)  # type: ignore[attr-defined]

    node = shutil.which("node")
    node_proc = None
    if node and (PEERS / "node_modules" / "ws").is_dir():
        node_proc = subprocess.Popen(  # noqa: ASYNC220
            [node, str(PEERS / "ws_server_peer.mjs"), token, "echo"],
            cwd=PEERS,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert node_proc.stdout is not None
        node_url = f"ws://127.0.0.1:{node_proc.stdout.readline().strip()}/app-server"
    else:
        print("note: node or tests-integration/node_modules/ws missing: no Node column")
    try:
        async with (
            serve(
                FakeAgent.factory(AgentState()),
                host="127.0.0.1",
                token=token,
                ping_interval=None,
            ) as ours,
            ws_serve(
                echo,
                "127.0.0.1",
                0,
                compression=None,
                max_size=2**21,
                ping_interval=None,
            ) as bare,
        ):
            bare_url = f"ws://127.0.0.1:{bare.sockets[0].getsockname()[1]}/"
            print(
                f"{'size':>7} {'server':>18} {'msgs/s':>9} {'p50 us':>9} {'p99 us':>9} {'x bare msgs/s':>14} {'x bare p50':>11} {'x bare p99':>11}"
            )
            for label, size in SIZES.items():
                rounds = args.rounds if size < 100_000 else max(50, args.rounds // 20)
                # Alternate the servers twice and keep the better run of each (noise on a shared machine).
                runs: dict[str, tuple[float, float, float]] = {}
                for _ in range(2):
                    targets = [
                        ("bare websockets", bare_url, None, False),
                        ("ours (protocol)", ours.url, token, True),
                    ]
                    if node_proc is not None:
                        targets.append(("node ws", node_url, token, False))
                    for name, url, tok, proto in targets:
                        r = await measure(url, tok, size, rounds, proto)
                        if name not in runs or r[0] > runs[name][0]:
                            runs[name] = r
                base = runs["bare websockets"]
                for name, (rate, p50, p99) in runs.items():
                    print(
                        f"{label:>7} {name:>18} {rate:9.0f} {p50:9.0f} {p99:9.0f} {rate / base[0]:14.2f} "
                        f"{p50 / base[1]:11.2f} {p99 / base[2]:11.2f}"
                    )
                cost = core_cost_us(size, min(rounds, 200))
                extra = runs["ours (protocol)"][1] - base[1]
                print(
                    f"{label:>7} core Server.receive + encode alone: {cost:.0f} us of the {extra:.0f} us "
                    f"our p50 adds to bare websockets (transport layer: {extra - cost:.0f} us)"
                )
    finally:
        if node_proc is not None:
            node_proc.terminate()
            node_proc.wait(10)
    per = await idle_memory(token, args.connections)
    print(
        f"memory per idle initialized connection (listener RSS delta / {args.connections}): {per:.1f} KiB"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    asyncio.run(main())
