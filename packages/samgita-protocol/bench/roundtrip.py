"""Connection benchmark: ratios, never timed assertions.

1. ``request/cancel`` round trip through Client + Server, as a transport
   does it: ``client.request`` (builds and validates the request; its
   ``Outgoing.data`` is sent), ``server.receive`` of those bytes (decode,
   dispatch to a trivial handler, result check; the response's
   ``Outgoing.data`` is sent), ``client.receive`` (decode, correlation,
   result validation, contextual rules). Beside it the same with
   ``samgita_protocol.encode`` of each ``Outgoing.message`` sent instead,
   which validates each message a second time. Baseline: bare stdlib
   ``json.dumps`` + ``json.loads`` of the same request and response bytes.
2. ``client.receive`` of an unsequenced ``item/delta`` notification against
   ``json.loads`` of the same bytes.
3. Beside them, the comparable messages validated the way the MCP Python SDK
   does on receive (``jsonrpc_message_adapter.validate_json`` and then the
   method's model: ``parse_client_request`` / ``parse_server_result`` /
   ``parse_server_notification``), when ``mcp`` is installed (bench only).

Rounds alternate between the contenders; each figure is the median of the
per-round ratios. Run: ``hatch run bench:roundtrip`` (or
``python bench/roundtrip.py [--rounds N] [--profile]``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from samgita_protocol import (
    CancelParams,
    CancelResult,
    Client,
    ErrorCode,
    Handler,
    ProtocolError,
    RequestContext,
    Server,
    decode,
    encode,
)

LOOPS = 2000


class CancelHost(Handler):
    """A trivial handler: every cancel is already finished (streaming.v1 is
    advertised so that the client accepts item/delta; no stream is known)."""

    methods = frozenset({"request/cancel", "stream/resume"})

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        if method == "stream/resume":
            raise ProtocolError(ErrorCode.NOT_FOUND, "no such stream")
        return CancelResult(
            request_id=params.request_id, cancel_status="already_finished"
        )


def connected() -> tuple[Client, Server]:
    client = Client(capabilities=("cancellation.v1", "streaming.v1"))
    server = Server(
        CancelHost(),
        capabilities=("cancellation.v1", "streaming.v1"),
        host_id="bench-host",
    )
    # As a transport does: each side sends the bytes it validated.
    init = client.request("connection/initialize", {}, now=0.0)
    [response] = server.receive(init.data)
    client.receive(response.data)
    return client, server


def time_loop(fn: Callable[[], None], loops: int = LOOPS) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def ours_roundtrip(client: Client, server: Server) -> Callable[[], None]:
    """What a transport does: each message is encoded (and validated) once,
    by the side that built it, and its ``Outgoing.data`` is sent
    (``client.request``, ``server.receive``)."""
    params = CancelParams(request_id="c1-1")
    request = client.request
    receive = server.receive
    creceive = client.receive

    def run() -> None:
        out = request("request/cancel", params, now=0.0)
        [resp] = receive(out.data)
        creceive(resp.data)

    return run


def ours_roundtrip_module_encode(client: Client, server: Server) -> Callable[[], None]:
    """The same with ``samgita_protocol.encode`` of each ``Outgoing.message``
    sent instead of its ``data``, which validates each message again."""
    params = CancelParams(request_id="c1-1")
    request = client.request
    receive = server.receive
    creceive = client.receive

    def run() -> None:
        out = request("request/cancel", params, now=0.0)
        [resp] = receive(encode(out.message))
        creceive(encode(resp.message))

    return run


def sample_bytes(client: Client, server: Server) -> tuple[bytes, bytes]:
    req = client.request("request/cancel", CancelParams(request_id="c1-1"), now=0.0)
    req_bytes = req.data
    [resp] = server.receive(req_bytes)
    resp_bytes = resp.data
    client.receive(resp_bytes)
    return req_bytes, resp_bytes


def stdlib_roundtrip(req_bytes: bytes, resp_bytes: bytes) -> Callable[[], None]:
    req_obj = json.loads(req_bytes)
    resp_obj = json.loads(resp_bytes)
    dumps, loads = json.dumps, json.loads

    def run() -> None:
        loads(dumps(req_obj).encode())
        loads(dumps(resp_obj).encode())

    return run


DELTA = encode(
    decode(
        b'{"schema_version":"1.0","type":"notification","method":"item/delta",'
        b'"params":{"thread_id":"thr-1","turn_id":"turn-1","item_id":"item-1",'
        b'"delta":"Hello, world. The tests pass."}}'
    )
)


def ours_notification(client: Client) -> Callable[[], None]:
    receive = client.receive

    def run() -> None:
        receive(DELTA)

    return run


def stdlib_notification() -> Callable[[], None]:
    loads = json.loads

    def run() -> None:
        loads(DELTA)

    return run


MCP_VERSION = "2025-11-25"
MCP_NOTIFICATION = json.dumps(
    {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": "item-1",
            "progress": 1,
            "message": "Hello, world. The tests pass.",
        },
    }
).encode()
MCP_REQUEST = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "cancel", "arguments": {"request_id": "c1-1"}},
    }
).encode()
MCP_RESPONSE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "already_finished"}]},
    }
).encode()


def mcp_contenders() -> tuple[Callable[[], None], Callable[[], None]] | None:
    try:
        from mcp_types import jsonrpc_message_adapter  # type: ignore[import-not-found]
        from mcp_types import methods as mcp_methods
    except ImportError:
        return None
    adapter = jsonrpc_message_adapter

    def notification() -> None:
        message = adapter.validate_json(MCP_NOTIFICATION, by_name=False)
        mcp_methods.parse_server_notification(
            message.method, MCP_VERSION, message.params
        )

    def roundtrip() -> None:
        request = adapter.validate_json(MCP_REQUEST, by_name=False)
        mcp_methods.parse_client_request(request.method, MCP_VERSION, request.params)
        response = adapter.validate_json(MCP_RESPONSE, by_name=False)
        mcp_methods.parse_server_result("tools/call", MCP_VERSION, response.result)

    notification()
    roundtrip()
    return notification, roundtrip


def rounds(contenders: dict[str, Callable[[], None]], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(n):
        for name, fn in contenders.items():
            times[name].append(time_loop(fn))
    return times


def ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the round trip"
    )
    args = parser.parse_args(argv)

    client, server = connected()
    req_bytes, resp_bytes = sample_bytes(client, server)
    if args.profile:
        fn = ours_roundtrip(client, server)
        profiler = cProfile.Profile()
        profiler.runcall(time_loop, fn, 20_000)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        nfn = ours_notification(client)
        profiler = cProfile.Profile()
        profiler.runcall(time_loop, nfn, 20_000)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
        return 0

    contenders: dict[str, Callable[[], None]] = {
        "roundtrip": ours_roundtrip(client, server),
        "roundtrip_encode": ours_roundtrip_module_encode(client, server),
        "roundtrip_json": stdlib_roundtrip(req_bytes, resp_bytes),
        "notification": ours_notification(client),
        "notification_json": stdlib_notification(),
    }
    mcp = mcp_contenders()
    if mcp is not None:
        contenders["notification_mcp"], contenders["roundtrip_mcp"] = mcp
    for fn in contenders.values():  # warm up
        time_loop(fn, 200)
    times = rounds(contenders, args.rounds)

    def us(name: str) -> str:
        return f"{statistics.median(times[name]) * 1e6:7.2f} us"

    print(
        f"python {sys.version.split()[0]}, {args.rounds} rounds x {LOOPS} loops, medians"
    )
    print(
        f"request bytes {len(req_bytes)}, response bytes {len(resp_bytes)}, delta {len(DELTA)}"
    )
    print(f"round trip (Client+Server, request/cancel) {us('roundtrip')}")
    print(f"  stdlib json dumps+loads of both messages {us('roundtrip_json')}")
    print(
        f"  ratio to stdlib json: {ratio(times, 'roundtrip', 'roundtrip_json'):.2f}x (target <= 1.0x)"
    )
    print(f"  same, sent with samgita_protocol.encode  {us('roundtrip_encode')}")
    print(
        f"  ratio to stdlib json: {ratio(times, 'roundtrip_encode', 'roundtrip_json'):.2f}x"
    )
    print(f"notification receive (item/delta)         {us('notification')}")
    print(f"  stdlib json loads                        {us('notification_json')}")
    print(
        f"  ratio to stdlib json: {ratio(times, 'notification', 'notification_json'):.2f}x"
    )
    if mcp is not None:
        print(f"MCP SDK validation, notification          {us('notification_mcp')}")
        print(f"MCP SDK validation, request + result      {us('roundtrip_mcp')}")
        speedup = ratio(times, "notification_mcp", "notification")
        print(f"  notification receive vs MCP: {speedup:.1f}x faster (target >= 5x)")
        rt = ratio(times, "roundtrip_mcp", "roundtrip")
        print(f"  full round trip vs MCP receive validation alone: {rt:.1f}x")
    else:
        print("mcp not installed: MCP comparison skipped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
