"""Large-message benchmark: a validated Server receive against the MCP SDK's.

For a ``project/event.receive`` request of about 16 KiB and of about 1 MiB
(the payload one long string, in this library's own encoding, as a Client
sends it: ``Client.request``'s ``Outgoing.data``) it times ``Server.receive``
of those bytes, down to the reply's ``Outgoing.data`` (what a transport
sends): every rule (size, UTF-8, one JSON value, depth, duplicate keys, the
envelope and params schema), the identity window (a new id each call, so its
content digest is taken), a minimal host (``Events``: one operation that
returns its result; the FakeHost's own event store, which compares a
repeated event's content, is host work the baseline does not do), and its
small result encoded. Beside it, what a Python team would run instead: the MCP Python
SDK's pydantic validation of a JSON-RPC request of the same size
(``jsonrpc_message_adapter.validate_json``) and ``dump_json`` of it. Rounds
alternate between the two; each figure is the median of the per-round
ratios. A ratio below 1 means our receive is cheaper. Figures are printed,
never asserted.

Run: ``hatch run bench:large [--rounds N]`` (the MCP SDK is in hatch's
``bench`` environment only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

from samgita_protocol import (
    Client,
    EventReceiveParams,
    EventReceiveResult,
    Handler,
    RequestContext,
    Server,
)

SIZES = {"16 KiB": 16 * 1024, "1 MiB": 1024 * 1024 - 1024}
# More distinct requests than the Server's identity window (128) holds, so a
# request comes round again only after its id was forgotten: each call is new.
DISTINCT = 160
GROUPS = ["project_events.v1"]


class Events(Handler):
    """A host that accepts every event (its inbox is not what is measured)."""

    def project_event_receive(
        self, params: EventReceiveParams, context: RequestContext
    ) -> EventReceiveResult:
        return EventReceiveResult(
            event_id=params.event.event_id,
            delivery_attempt_id=params.event.delivery_attempt_id,
            acceptance="received",
            processing_status="pending",
        )

    def project_event_status(self, params: object, context: RequestContext) -> None:
        raise NotImplementedError

    def project_event_report(self, params: object, context: RequestContext) -> None:
        raise NotImplementedError


def our_requests(size: int) -> list[bytes]:
    """``DISTINCT`` requests of about ``size`` bytes, as a Client encodes them."""
    client = Client(
        capabilities=GROUPS,
        max_outstanding_requests=DISTINCT,
        max_uncertain_commands=DISTINCT,
    )
    server = Server(Events(), capabilities=GROUPS)
    init = client.request(
        "connection/initialize", {"versions": ["1.0"], "capabilities": GROUPS}
    )
    for reply in server.receive(init.data):
        client.receive(reply.data)
    out = []
    for i in range(DISTINCT):
        event = {
            "event_id": f"e{i}",
            "delivery_attempt_id": "a",
            "created_at": "2026-01-01T00:00:00Z",
            "correlation_id": "c",
            "event_type": "bench.large",
            "payload": {"text": "x" * (size - 300)},
        }
        request = client.request(
            "project/event.receive", {"event": event}, command_id=f"k{i}"
        )
        out.append(request.data)
    assert abs(len(out[0]) - size) < 64, len(out[0])  # ids of 1 to 3 digits
    return out


def ours(size: int) -> Callable[[], None]:
    server = Server(Events(), capabilities=GROUPS)
    client = Client(capabilities=GROUPS)
    init = client.request(
        "connection/initialize", {"versions": ["1.0"], "capabilities": GROUPS}
    )
    server.receive(init.data)
    requests = our_requests(size)
    receive = server.receive
    position = [0]

    def call() -> None:
        i = position[0]
        position[0] = (i + 1) % DISTINCT
        (reply,) = receive(requests[i])
        assert b'"result"' in reply.data

    call()
    return call


def mcp(size: int) -> Callable[[], None] | None:
    try:
        from mcp_types import jsonrpc_message_adapter  # type: ignore[import-not-found]
    except ImportError:
        return None
    adapter = jsonrpc_message_adapter
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "bench", "arguments": {"text": "x" * (size - 90)}},
    }
    data = json.dumps(body, separators=(",", ":")).encode()

    def call() -> None:
        message = adapter.validate_json(data, by_name=False)
        adapter.dump_json(message)

    call()
    return call


def best_of(fn: Callable[[], None], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {args.rounds} rounds, medians")
    for label, size in SIZES.items():
        loops = max(20, 2_000_000 // size)
        contenders = {"ours": ours(size), "mcp": mcp(size)}
        if contenders["mcp"] is None:
            print("mcp not installed: run in hatch's bench environment")
            return 1
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                assert fn is not None
                times[name].append(best_of(fn, loops))
        mine = statistics.median(times["ours"])
        theirs = statistics.median(times["mcp"])
        ratio = statistics.median(
            a / b for a, b in zip(times["ours"], times["mcp"], strict=True)
        )
        print(
            f"{label:7} {'Server.receive':20} {mine * 1e6:9.1f} us   "
            f"MCP validate_json + dump_json {theirs * 1e6:9.1f} us   "
            f"ratio {ratio:.2f}x (target <= 1.0x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
