"""Translation cost per message as a ratio to stdlib json.loads + json.dumps of the same message.

    python bench/translate.py

Native -> Codex: decode a native `turn/start` request (core codec), translate,
validate strictly against the outbound Codex types, encode the JSON line (the
pending entry is dropped after each call, so the table stays empty).
Codex -> native: check and decode a recorded `item/agentMessage/delta` line
(byte-level checks, tolerant inbound types), translate, sequence it in the
Replay (which validates and encodes it, core codec); the result is the
native bytes to send (`ToNative.data`, checked once to equal `encode()`).
Round trip: native `turn/start` bytes -> Codex line, then the recorded Codex
`turn/start` result (with the bridge's id) -> native Response bytes; the
baseline is json.loads + json.dumps of both messages.
Each path and its baseline are timed in alternating rounds (best of 7 x
20,000 each), so load on a shared machine hits both alike.
Prints ratios; asserts nothing about time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from samgita_protocol import InitializeParams, Request, decode, encode

from samgita_protocol_codex import CodexBridge, ToNative

RECORDING = (
    Path(__file__).resolve().parent.parent / "tests" / "recordings" / "turn.jsonl"
)


def _once(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def _alternating(
    fn: Callable[[], object], base: Callable[[], object], n: int, rounds: int = 7
) -> tuple[float, float]:
    """Best time per call of ``fn`` and of ``base``, timed in turns."""
    best_fn = best_base = float("inf")
    for _ in range(rounds):
        best_fn = min(best_fn, _once(fn, n))
        best_base = min(best_base, _once(base, n))
    return best_fn, best_base


def _bridge() -> tuple[CodexBridge, bytes, str]:
    bridge = CodexBridge(host_id="bench", max_events=1024)
    lines = [json.loads(x) for x in RECORDING.read_text().splitlines()]
    init = Request(
        method="connection/initialize",
        id="i",
        correlation_id="i",
        params=InitializeParams(
            versions=["1.0"], capabilities=["sessions.v1", "streaming.v1"]
        ),
    )
    bridge.native_request(init)
    bridge.receive_codex(
        json.dumps(lines[1]["msg"]).encode()
    )  # Codex initialize result
    delta = next(
        e["msg"] for e in lines if e["msg"].get("method") == "item/agentMessage/delta"
    )
    return bridge, _compact(delta), delta["params"]["threadId"]


def _compact(msg: object) -> bytes:
    # Codex (serde_json) writes compact lines; the recordings' spacing is the
    # recorder's, so the bench feeds what the wire carries
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode()


def _turn_result() -> bytes:
    lines = [json.loads(x) for x in RECORDING.read_text().splitlines()]
    msg = next(
        e["msg"]
        for e in lines
        if e["dir"] == "recv" and "turn" in (e["msg"].get("result") or {})
    )
    return _compact(msg["result"])


def main() -> None:
    bridge, delta_line, thread_id = _bridge()
    native_turn = (
        '{"schema_version":"1.0","type":"request","method":"turn/start","id":"r1",'
        '"correlation_id":"c1","command_id":"k1","params":{"thread_id":"'
        + thread_id
        + '",'
        '"input":[{"type":"text","text":"Summarize the failing test output, please."}]}}'
    ).encode()

    pending = bridge._pending  # noqa: SLF001 - bench only: keep the table empty

    def native_to_codex() -> None:
        out = bridge.native_request(decode(native_turn))
        assert out[0].data  # type: ignore[union-attr]
        pending.clear()

    result = _turn_result()
    head, tail = b'{"id":', b',"result":' + result + b"}"
    reply_example = head + b"0" + tail

    def round_trip() -> None:
        (line,) = bridge.native_request(decode(native_turn))
        codex_id = json.loads(line.data)["id"]  # type: ignore[union-attr]
        (out,) = bridge.receive_codex(head + str(codex_id).encode() + tail)
        assert isinstance(out, ToNative)
        assert out.data  # the validated bytes the caller sends

    def codex_to_native() -> None:
        (out,) = bridge.receive_codex(delta_line)
        assert isinstance(out, ToNative)
        assert out.data  # the validated bytes the caller sends

    # the bytes handed out are the core encoder's for the message
    (check,) = bridge.receive_codex(delta_line)
    assert isinstance(check, ToNative) and check.data == encode(check.message)

    n = 20_000
    paths = {
        "native->codex turn/start": (native_to_codex, [native_turn]),
        "codex->native item delta": (codex_to_native, [delta_line]),
        "round trip turn/start (native->codex->native)": (
            round_trip,
            [native_turn, reply_example],
        ),
    }
    for name, (path, raws) in paths.items():
        texts = [raw.decode() for raw in raws]

        def baseline(texts: list[str] = texts) -> None:
            for text in texts:
                json.dumps(json.loads(text))

        cost, base = _alternating(path, baseline, n)
        print(
            f"{name}: {cost * 1e6:6.2f} us, json {base * 1e6:5.2f} us, "
            f"ratio {cost / base:4.2f}x"
        )
    assert not pending, "the bench must not leave pending requests"


if __name__ == "__main__":
    main()
