"""Translation cost per message as a ratio to stdlib json.loads + json.dumps of the same message.

    python bench/translate.py [--rounds N] [--loops N] [--profile]

What each path times, per message (everything a caller does with bytes in
and the bytes to send out; no private bridge state is touched):

* native->codex turn/start: the core ``decode`` of the native request bytes
  (every native rule), ``CodexBridge.native_request`` (translate, build the
  strict ``outbound`` Codex request, encode it and decode it again with the
  strict types: unknown fields forbidden), the ``ToCodex`` line. Two inputs:
  the bytes as the core encoder writes them (what a SamgitaProtocol Python
  client sends) and the same message hand-written in another key order
  (what another implementation may send; the core decode proves such bytes
  on a slower path). Each round uses a fresh, initialized bridge (set up
  outside the timing) whose ``max_pending`` holds the round's requests, so
  nothing is dropped behind the bridge's back.
* codex->native item delta: ``CodexBridge.receive_codex`` of a recorded
  ``item/agentMessage/delta`` line, compact as Codex (serde_json) writes it:
  the byte-level checks (the core ``load_json``: size, depth, UTF-8, one
  value, no repeated key), the tolerant ``inbound`` typed decode, the
  translation, the append to the thread's core ``Replay`` (which validates
  the sequenced notification with the core's send-path proof) and the
  ``ToNative.data`` bytes to send (checked once to equal ``encode()``).
* round trip turn/start: the native->codex path (core-encoded bytes), then
  Codex's recorded ``turn/start`` result addressed to ``ToCodex.id`` (the
  bridge's public id of the line; the reply's bytes are a prefix, the id and
  a suffix, as a reader hands them over) through ``receive_codex``: checks,
  typed decode, translation, the native result checked against the
  ``turn/start`` result schema (``decode_result``), the native Response's
  bytes from the core ``encode``. Every request is answered, so the pending
  table stays empty.

Baseline: ``json.dumps(json.loads(text))`` of the same message(s) as ``str``
(the round trip: both messages), the cheapest form for the stdlib (no
bytes decode or encode), so the ratios are conservative.

Each round times every path and every baseline in turn (``--loops`` calls
each), so load on a shared machine hits all alike; a figure is the median
over the rounds of the per-round ratio (path time / its baseline's time in
the same round), and of the per-round microseconds. Prints; asserts
nothing about time.
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
from pathlib import Path

from samgita_protocol import InitializeParams, Request, decode, encode

from samgita_protocol_codex import CodexBridge, ToCodex, ToNative

RECORDING = (
    Path(__file__).resolve().parent.parent / "tests" / "recordings" / "turn.jsonl"
)
LOOPS = 2000
ROUNDS = 15


def _recorded() -> list[dict[str, object]]:
    return [json.loads(x)["msg"] for x in RECORDING.read_text().splitlines()]


def _compact(msg: object) -> bytes:
    # Codex (serde_json) writes compact lines; the recordings' spacing is the
    # recorder's, so the bench feeds what the wire carries
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode()


def _ready_bridge(max_pending: int = 1024) -> CodexBridge:
    """A bridge with a negotiated native session and an initialized Codex link."""
    bridge = CodexBridge(host_id="bench", max_events=1024, max_pending=max_pending)
    init = Request(
        method="connection/initialize",
        id="i",
        correlation_id="i",
        params=InitializeParams(
            versions=["1.0"], capabilities=["sessions.v1", "streaming.v1"]
        ),
    )
    (line,) = bridge.native_request(init)
    assert isinstance(line, ToCodex) and line.id == 0
    codex_init = next(m for m in _recorded() if m.get("id") == 0 and "result" in m)
    bridge.receive_codex(_compact(codex_init))  # Codex initialize result
    return bridge


def _time(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--loops", type=int, default=LOOPS)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each path instead"
    )
    args = parser.parse_args(argv)
    loops = args.loops

    recorded = _recorded()
    delta = next(m for m in recorded if m.get("method") == "item/agentMessage/delta")
    # as codex-cli 0.163.0 writes it on the wire (tools/demo.py --codex shows
    # the lines): method, params (threadId, turnId, itemId, delta),
    # emittedAtMs; the recordings keep each message's keys sorted
    wire_params = {
        k: delta["params"][k] for k in ("threadId", "turnId", "itemId", "delta")
    }  # type: ignore[index]
    delta_line = _compact(
        {
            "method": delta["method"],
            "params": wire_params,
            "emittedAtMs": delta["emittedAtMs"],
        }
    )
    thread_id = delta["params"]["threadId"]  # type: ignore[index]
    turn_result = next(
        m
        for m in recorded
        if "turn" in (m.get("result") or {})  # type: ignore[operator]
    )
    hand_turn = (
        '{"schema_version":"1.0","type":"request","method":"turn/start","id":"r1",'
        '"correlation_id":"c1","command_id":"k1","params":{"thread_id":"'
        + str(thread_id)
        + '","input":[{"type":"text","text":"Summarize the failing test output, please."}]}}'
    ).encode()
    core_turn = encode(decode(hand_turn))  # as the core encoder writes it

    # one fresh bridge per round for native->codex (set up between rounds)
    n2c_bridge = [_ready_bridge()]

    def fresh_n2c() -> None:
        n2c_bridge[0] = _ready_bridge(max_pending=loops + 1)

    def native_to_codex(raw: bytes) -> Callable[[], None]:
        def run() -> None:
            (line,) = n2c_bridge[0].native_request(decode(raw))  # type: ignore[arg-type]
            assert line.data  # type: ignore[union-attr]

        return run

    c2n = _ready_bridge()

    def codex_to_native() -> None:
        (out,) = c2n.receive_codex(delta_line)
        assert out.data  # type: ignore[union-attr]  # the validated bytes to send

    # the bytes handed out are the core encoder's for the message
    (check,) = c2n.receive_codex(delta_line)
    assert isinstance(check, ToNative) and check.data == encode(check.message)

    rt = _ready_bridge()
    head = b'{"id":'
    tail = b',"result":' + _compact(turn_result["result"]) + b"}"

    def round_trip() -> None:
        (line,) = rt.native_request(decode(core_turn))  # type: ignore[arg-type]
        (out,) = rt.receive_codex(head + str(line.id).encode() + tail)  # type: ignore[union-attr]
        assert out.data  # type: ignore[union-attr]  # the validated bytes to send

    (line,) = rt.native_request(decode(core_turn))  # type: ignore[arg-type]
    assert isinstance(line, ToCodex) and json.loads(line.data)["id"] == line.id
    (reply,) = rt.receive_codex(head + str(line.id).encode() + tail)
    assert isinstance(reply, ToNative) and reply.data == encode(reply.message)
    reply_example = head + str(line.id).encode() + tail

    def baseline(*raws: bytes) -> Callable[[], None]:
        texts = [raw.decode() for raw in raws]
        loads, dumps = json.loads, json.dumps

        def run() -> None:
            for text in texts:
                dumps(loads(text))

        return run

    paths: dict[str, tuple[Callable[[], None], Callable[[], None], bytes]] = {
        "native->codex turn/start (core-encoded bytes)": (
            native_to_codex(core_turn),
            baseline(core_turn),
            core_turn,
        ),
        "native->codex turn/start (other key order)": (
            native_to_codex(hand_turn),
            baseline(hand_turn),
            hand_turn,
        ),
        "codex->native item delta": (
            codex_to_native,
            baseline(delta_line),
            delta_line,
        ),
        "round trip turn/start (native->codex->native)": (
            round_trip,
            baseline(core_turn, reply_example),
            core_turn + reply_example,
        ),
    }

    if args.profile:
        for name, (path, _, _) in paths.items():
            fresh_n2c()
            print(f"== {name}")
            profiler = cProfile.Profile()
            profiler.runcall(_time, path, loops)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
        return 0

    for path, base, _ in paths.values():  # warm up
        fresh_n2c()
        _time(path, 200)
        _time(base, 200)
    times: dict[str, tuple[list[float], list[float]]] = {
        name: ([], []) for name in paths
    }
    for _ in range(args.rounds):
        fresh_n2c()
        for name, (path, base, _) in paths.items():
            if name.startswith("native->codex"):
                fresh_n2c()
            times[name][0].append(_time(path, loops))
            times[name][1].append(_time(base, loops))
    print(
        f"python {sys.version.split()[0]}, {args.rounds} rounds x {loops} loops, "
        "medians of per-round figures"
    )
    for name, (ours, json_times) in times.items():
        ratio = statistics.median(a / b for a, b in zip(ours, json_times, strict=True))
        print(
            f"{name}: {statistics.median(ours) * 1e6:6.2f} us, json "
            f"{statistics.median(json_times) * 1e6:5.2f} us "
            f"({len(paths[name][2])} B), ratio {ratio:4.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
