"""Transport benchmark: our listener vs an MCP-SDK-validating ``websockets`` server, a bare ``websockets`` echo server and a Node ``ws`` echo server.

What is measured.  One load generator (a ``websockets`` client in this
process, one message in flight) sends text messages of about 256 B, 16 KiB
and 1 MiB and waits for each reply; per server it reports messages per
second, p50/p99 round-trip latency and the CPU time the server process
spent per message, with the ratios to the MCP-validating server and to the
bare ``websockets`` server.  Our listener receives a valid
``project/event.receive`` request of that size (padded payload; the
smallest request of this shape is 292 B, so "256 B" is 292 B), validates it
through a core ``Server`` with the fake Agent's handler and sends its small
response; the echo servers send the whole message back.

The same job, done the way a Python team would without this library (row
``MCP SDK (pydantic)``): a ``websockets`` server that takes each message as
bytes, validates it with the MCP Python SDK's pydantic JSON-RPC models
(``mcp.types.jsonrpc_message_adapter.validate_json``: the envelope typed,
the params parsed into Python objects), builds a typed
``JSONRPCResponse`` with the same small result ours sends and serializes it
(``jsonrpc_message_adapter.dump_json``).  JSON-RPC has its own envelope
(``jsonrpc``, no ``type`` / ``schema_version``), which our core refuses and
the models require, so it is sent the same request in JSON-RPC form: the
same ``id``, ``method`` and ``params`` (the same event, padded to the same
total length, byte for byte as long as ours).
The requests are encoded as this library's client sends them (its own
encoding, which the core decodes in one typed pass); the row ``ours,
foreign order`` sends the same requests as ``json.dumps`` writes them
(``schema_version`` first, the members in another order), as a host on
another JSON library might, which takes the core's general path.
Then: memory per idle connection of our listener (RSS of a fake Agent
process before and after 1,000 initialized, idle connections).

The setup, and why.  Every server runs in its own process, as it would be
deployed and as the Node server must anyway; the load generator is alone in
this process.  So no server shares an event loop (or the GIL) with the load
generator or with another server: what each server costs is its own.  The
servers are measured in alternating rounds (one connection each per round,
in turn) and each ratio is taken within a round, then the median over the
rounds is printed with its range: a shared 2-core machine slows whole
stretches of time, and that cancels within a round.  Two things dilute or
sharpen the figures, and both are printed:

* a round trip between processes includes two wake-ups of a sleeping
  process (tens of microseconds on loopback), the same for every server, so
  msgs/s and latency ratios are nearer 1 than the servers' own costs;
* the ``CPU us/msg`` column (the server process's CPU time over a run,
  Linux ``/proc/<pid>/task/*/schedstat``, divided by the messages) has no
  such shared part and barely moves with the machine's load: it is the
  figure that says what the protocol layer costs.

Where our extra cost goes (the "split" line per size):

* ``core``: ``Server.receive`` of the request's bytes, as the listener
  calls it, in this process (median of repeated calls, fresh fake Agent
  state);
* ``transport``: our listener with the core ``Server`` replaced by a stub
  that answers every message with the same reply bytes at once, against a
  bare ``websockets`` server answering the same bytes (``recv(decode=False)``
  then ``send``): CPU per message of the first minus the second, i.e. what
  this package adds around the core (the connection class, the loop, the
  send path).  The stub is patched into that server process only
  (``samgita_protocol.Server``); both diagnostics are printed as
  ``ours, core stubbed`` and ``bare, same reply``.

Run: ``python bench/transport.py [--rounds N] [--messages N]`` in hatch's
``bench`` environment (the MCP SDK is there; without it the MCP row is
skipped with a note), with node and tests-integration/node_modules for the
Node row (skipped with a note otherwise).  ``--variant LABEL=SRC`` adds a
row of our listener imported from another source tree (the ``src`` folder
of a worktree), to measure a change with and without in the same rounds.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect as ws_connect

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
INIT = json.dumps(
    {
        "schema_version": "1.0",
        "type": "request",
        "id": "init",
        "correlation_id": "init",
        "method": "connection/initialize",
        "params": {"versions": ["1.0"], "capabilities": GROUPS},
    },
    separators=(",", ":"),
).encode()
# Servers: (row name, server mode, speaks the protocol (initialize first),
# how its requests are encoded: "ours", "foreign" (json.dumps order) or
# "jsonrpc").  The ratios are taken to the rows BASES name.
SERVERS = [
    ("MCP SDK (pydantic)", "mcp", False, "jsonrpc"),
    ("bare websockets", "bare", False, "ours"),
    ("ours (protocol)", "ours", True, "ours"),
    ("ours, foreign order", "ours", True, "foreign"),
    ("ours, core stubbed", "stub", True, "ours"),
    ("bare, same reply", "reply", False, "ours"),
]
MCP_ROW, BARE_ROW, OURS_ROW = "MCP SDK (pydantic)", "bare websockets", "ours (protocol)"


def ignore_requests(request: object) -> None:
    """``on_request`` for sessions that leave the Agent's requests (approvals) unanswered."""


def request_bytes(i: int, size: int, foreign: bool = False) -> bytes:
    """A valid ``project/event.receive`` of ``size`` bytes (at least 292), as
    this library's client encodes it (``samgita_protocol.encode``: the tag,
    ``schema_version``, then the fields in definition order); ``foreign``:
    as ``json.dumps`` writes the same object (``schema_version`` first, the
    fields in another order), as a host on another JSON library might."""
    base: dict[str, Any] = {
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
    base["params"]["event"]["payload"]["pad"] = "x" * max(pad, 0)
    wire = json.dumps(base, separators=(",", ":")).encode()
    if foreign:
        return wire
    import samgita_protocol as core

    ours = core.encode(core.decode(wire))
    assert len(ours) == len(wire)  # the same members, only in another order
    return ours


def jsonrpc_request_bytes(i: int, size: int) -> bytes:
    """The request of :func:`request_bytes` as a JSON-RPC 2.0 request of
    exactly the same length: the same ``id``, ``method`` and ``params``
    (``correlation_id`` and ``command_id`` moved into ``params``), the pad
    set so the bytes are as many as ours."""
    length = len(request_bytes(i, size))
    ours = json.loads(request_bytes(i, size))
    params = {
        **ours["params"],
        "correlation_id": ours["correlation_id"],
        "command_id": ours["command_id"],
    }
    body = {"jsonrpc": "2.0", "id": ours["id"], "method": ours["method"]}
    body["params"] = params
    params["event"]["payload"]["pad"] = ""
    pad = length - len(json.dumps(body, separators=(",", ":")))
    params["event"]["payload"]["pad"] = "x" * max(pad, 0)
    wire = json.dumps(body, separators=(",", ":")).encode()
    assert len(wire) == length or pad < 0
    return wire


def encoded_request(i: int, size: int, encoding: str) -> bytes:
    """Request ``i`` of ``size`` in ``encoding`` ("ours", "foreign", "jsonrpc")."""
    if encoding == "jsonrpc":
        return jsonrpc_request_bytes(i, size)
    return request_bytes(i, size, foreign=encoding == "foreign")


def _fresh_agent_server() -> Any:
    """A core Server around a FakeAgent with its own state, initialized."""
    import samgita_protocol as core

    from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

    class _Conn:
        closed = False

    server = core.Server(FakeAgent(AgentState(), _Conn()), capabilities=GROUPS)  # type: ignore[arg-type]
    server.receive(INIT)
    return server


def our_outgoing(size: int) -> Any:
    """The core's ``Outgoing`` our listener answers a request of ``size`` with (for the stub)."""
    return _fresh_agent_server().receive(request_bytes(0, size))[0]


def our_reply(size: int) -> bytes:
    """The bytes our listener answers a request of ``size`` with (for 'same reply')."""
    return our_outgoing(size).data  # type: ignore[no-any-return]


def nearest_size(length: int) -> int:
    """The benchmark size a message of ``length`` bytes was made for."""
    return min(SIZES.values(), key=lambda s: abs(s - length))


# -- the server processes --------------------------------------------------------------------


async def _serve(mode: str, token: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if mode == "mcp":
        await _serve_mcp(stop)
        return
    if mode in ("bare", "reply"):
        from websockets.asyncio.server import serve as ws_serve

        replies = {size: our_reply(size) for size in SIZES.values()}

        async def echo(ws: Any) -> None:
            async for m in ws:
                await ws.send(m)

        async def reply(ws: Any) -> None:
            while True:
                try:
                    m = await ws.recv(decode=False)
                except Exception:
                    return
                await ws.send(replies[nearest_size(len(m))], text=True)

        async with ws_serve(
            echo if mode == "bare" else reply,
            "127.0.0.1",
            0,
            compression=None,
            max_size=2**21,
            ping_interval=None,
        ) as server:
            print(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", flush=True)
            await stop.wait()
        return

    import samgita_protocol as core

    from samgita_protocol_websocket import serve
    from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

    if mode == "stub":
        outgoing = {size: our_outgoing(size) for size in SIZES.values()}

        class StubServer:
            """Answers every message with our reply for its size, doing nothing else."""

            def __init__(self, handler: Any, **options: Any) -> None:
                self.capabilities = tuple(options.get("capabilities", ()))

            def receive(self, data: bytes) -> list[Any]:
                # The core's Outgoing (message and validated bytes), built once.
                return [outgoing[nearest_size(len(data))]]

            def expire(self, now: float) -> list[Any]:
                return []

            def disconnect(self) -> list[Any]:
                return []

        core.Server = StubServer  # type: ignore[misc, assignment]

    async with serve(
        # Fresh Agent state per connection: the bench's distinct events are
        # not all kept in one growing table (up to 100 MiB at 1 MiB).
        lambda info: FakeAgent(AgentState(), info.connection),
        host="127.0.0.1",
        token=token,
        ping_interval=None,
    ) as listener:
        print(listener.url, flush=True)
        await stop.wait()


async def _serve_mcp(stop: asyncio.Event) -> None:
    """The same job on the MCP Python SDK: validate, build a typed response, serialize."""
    from mcp.types import JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter
    from websockets.asyncio.server import serve as ws_serve
    from websockets.exceptions import ConnectionClosed

    validate = jsonrpc_message_adapter.validate_json
    dump = jsonrpc_message_adapter.dump_json

    async def handle(ws: Any) -> None:
        while True:
            try:
                # Bytes, as ours takes them: pydantic's JSON parser checks the UTF-8.
                data = await ws.recv(decode=False)
            except ConnectionClosed:
                return
            message = validate(data, by_name=False)
            if not isinstance(message, JSONRPCRequest):
                continue
            event = (message.params or {})["event"]
            response = JSONRPCResponse(
                jsonrpc="2.0",
                id=message.id,
                result={
                    "event_id": event["event_id"],
                    "delivery_attempt_id": event["delivery_attempt_id"],
                    "acceptance": "received",
                    "processing_status": "pending",
                },
            )
            await ws.send(dump(response, by_alias=True, exclude_none=True), text=True)

    async with ws_serve(
        handle, "127.0.0.1", 0, compression=None, max_size=2**21, ping_interval=None
    ) as server:
        print(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", flush=True)
        await stop.wait()


def cpu_ns(pid: int) -> int | None:
    """CPU time (ns) of every thread of ``pid`` so far, or None off Linux."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return sum(
            int(Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()[0])
            for t in tasks
        )
    except (OSError, ValueError, IndexError):
        return None


# -- the load generator ----------------------------------------------------------------------


async def measure(
    url: str,
    token: str | None,
    size: int,
    rounds: int,
    protocol: bool,
    pid: int | None = None,
    encoding: str = "ours",
) -> tuple[float, float, float, float | None]:
    """msgs/s, p50 us, p99 us and server CPU us per message of one run."""
    headers = [("Authorization", f"Bearer {token}")] if token else None
    messages = [encoded_request(i, size, encoding) for i in range(rounds)]
    async with ws_connect(
        url, additional_headers=headers, max_size=2**21, compression=None
    ) as ws:
        if protocol:
            await ws.send(INIT, text=True)
            await ws.recv(decode=False)
        rtts: list[float] = []
        cpu0 = cpu_ns(pid) if pid is not None else None
        start = time.perf_counter()
        for m in messages:
            t0 = time.perf_counter()
            await ws.send(m, text=True)
            await ws.recv(decode=False)
            rtts.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        cpu1 = cpu_ns(pid) if pid is not None else None
    rtts.sort()
    p99 = rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))]
    cpu = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / rounds / 1e3
    return rounds / elapsed, statistics.median(rtts) * 1e6, p99 * 1e6, cpu


def core_cost_us(size: int, rounds: int, pause: float = 0.0) -> float:
    """Median in-process cost of the core alone, as the listener calls it:
    ``Server.receive`` of the request's bytes.  ``pause``: seconds
    slept before each call, as a server waits for the next message (its
    caches are cold then, which costs the core about 3x at 256 B)."""
    server = _fresh_agent_server()
    receive = server.receive
    messages = [request_bytes(i, size) for i in range(rounds)]
    costs = []
    for m in messages:
        if pause:
            time.sleep(pause)
        t0 = time.perf_counter()
        receive(m)
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
                "--log-level",
                "WARNING",
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


def _start(
    argv: list[str], cwd: Path | None = None, src: str | None = None
) -> tuple[subprocess.Popen[str], str]:
    env = None
    if src is not None:
        # Ahead of the installed (editable) package on sys.path.
        env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, text=True, env=env)  # noqa: S603
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


Run = tuple[float, float, float, float | None]


def _median(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return statistics.median(v for v in values if v is not None)


def _ratio(runs: list[Run], base: list[Run] | None, k: int) -> str:
    """Median (range) over the rounds of the per-round ratio of column ``k``."""
    if base is None:
        return "n/a"
    values = []
    for a, b in zip(runs, base, strict=True):
        x, y = a[k], b[k]
        if x is None or not y:
            return "n/a"
        values.append(x / y)
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


#: The ratio columns: (heading, base row, column of Run).
RATIOS = [
    ("x MCP msgs/s", MCP_ROW, 0),
    ("x MCP p99", MCP_ROW, 2),
    ("x MCP CPU", MCP_ROW, 3),
    ("x bare msgs/s", BARE_ROW, 0),
    ("x bare p99", BARE_ROW, 2),
    ("x bare CPU", BARE_ROW, 3),
]
WIDTH = 17


def header() -> str:
    return (
        f"{'size':>7} {'server':>20} {'msgs/s':>8} {'p50 us':>8} {'p99 us':>8}"
        f" {'CPU us/msg':>10}" + "".join(f" {h:>{WIDTH}}" for h, _b, _k in RATIOS)
    )


def report(
    label: str, size: int, names: list[str], runs: dict[str, list[Run]], n: int
) -> None:
    for name in names:
        rs = runs[name]
        cols = [_median([r[k] for r in rs]) for k in range(4)]
        print(
            f"{label:>7} {name:>20} {_fmt(cols[0], '8.0f')} {_fmt(cols[1], '8.0f')}"
            f" {_fmt(cols[2], '8.0f')} {_fmt(cols[3], '10.1f')}"
            + "".join(
                f" {_ratio(rs, runs.get(base), k):>{WIDTH}}" for _h, base, k in RATIOS
            )
        )
    for name in names:
        if name.startswith("ours @ "):
            print(
                f"{label:>7} {name} vs ours (protocol), per round: msgs/s"
                f" {_ratio(runs[name], runs[OURS_ROW], 0)}, p99"
                f" {_ratio(runs[name], runs[OURS_ROW], 2)}, CPU"
                f" {_ratio(runs[name], runs[OURS_ROW], 3)}"
            )
    core = core_cost_us(size, min(n, 300))
    core_cold = core_cost_us(size, min(n, 300), pause=0.0003)

    def cpu(name: str) -> float | None:
        return _median([r[3] for r in runs[name]]) if name in runs else None

    ours, stub, reply, bare = (
        cpu(OURS_ROW),
        cpu("ours, core stubbed"),
        cpu("bare, same reply"),
        cpu(BARE_ROW),
    )

    def diff(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{a - b:.1f}"

    print(
        f"{label:>7} split of the CPU per message ({len(request_bytes(0, size))} B"
        f" request): ours - bare echo {diff(ours, bare)} us = core (ours - ours with"
        f" the core stubbed) {diff(ours, stub)} + transport layer (stubbed - bare with"
        f" the same reply) {diff(stub, reply)} + (bare with the same reply - bare echo,"
        f" the echo's own sending) {diff(reply, bare)}; the core's receive alone"
        f" in this process: {core:.1f} us back to back, {core_cold:.1f} us after a"
        f" 0.3 ms pause as in a server"
    )


Server = tuple[str, str, bool, str, "subprocess.Popen[str]"]


def start_servers(token: str, variants: list[str]) -> list[Server]:
    """Every server of the run, each in its own process (name, url, speaks
    the protocol, request encoding, process)."""
    me = [sys.executable, str(Path(__file__).resolve()), "--serve"]
    servers: list[Server] = []
    try:
        import mcp.types  # noqa: F401  (only to know whether the row can run)

        has_mcp = True
    except ImportError:
        has_mcp = False
        print("note: mcp not installed (run in hatch's bench environment): no MCP row")
    for name, mode, proto, encoding in SERVERS:
        if mode == "mcp" and not has_mcp:
            continue
        proc, url = _start([*me, mode, token])
        servers.append((name, url, proto, encoding, proc))
    for variant in variants:
        label, _, src = variant.partition("=")
        proc, url = _start([*me, "ours", token], src=str(Path(src).resolve()))
        servers.append((f"ours @ {label}", url, True, "ours", proc))
    node = shutil.which("node")
    if node and (PEERS / "node_modules" / "ws").is_dir():
        proc, port = _start(
            [node, str(PEERS / "ws_server_peer.mjs"), token, "echo"], PEERS
        )
        url = f"ws://127.0.0.1:{port}/app-server"
        servers.insert(3, ("node ws", url, False, "ours", proc))
    else:
        print("note: node or tests-integration/node_modules/ws missing: no Node row")
    return servers


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternating rounds per size"
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=2000,
        help="messages per run (1 MiB: a twentieth, at least 50)",
    )
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument(
        "--no-memory", action="store_true", help="skip the idle-memory run"
    )
    parser.add_argument(
        "--sizes",
        default=",".join(SIZES),
        help="the sizes to run, comma-separated (default: all)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL=SRC",
        help="also our listener imported from SRC (a src folder), row 'ours @ LABEL'",
    )
    args = parser.parse_args()
    token = secrets.token_urlsafe(16)
    servers: list[Server] = []
    try:
        servers = start_servers(token, args.variant)
        print(header())
        sizes = {label.strip(): SIZES[label.strip()] for label in args.sizes.split(",")}
        for label, size in sizes.items():
            n = args.messages if size < 100_000 else max(50, args.messages // 20)
            for _name, url, proto, encoding, proc in servers:  # warm-up, not counted
                await measure(
                    url, token, size, max(10, n // 10), proto, proc.pid, encoding
                )
            runs: dict[str, list[Run]] = {s[0]: [] for s in servers}
            for r in range(args.rounds):
                # Rotate the order so no server always runs right after another.
                order = servers[r % len(servers) :] + servers[: r % len(servers)]
                for name, url, proto, encoding, proc in order:
                    runs[name].append(
                        await measure(url, token, size, n, proto, proc.pid, encoding)
                    )
            report(label, size, [srv[0] for srv in servers], runs, n)
    finally:
        for *_, proc in servers:
            proc.terminate()
            proc.wait(10)
    if not args.no_memory:
        per = await idle_memory(token, args.connections)
        print(
            f"memory per idle initialized connection (listener RSS delta / {args.connections}): {per:.1f} KiB"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        asyncio.run(_serve(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(main())
