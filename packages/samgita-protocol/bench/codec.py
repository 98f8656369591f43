"""Codec benchmark: validated decode/encode against stdlib json and untyped msgspec.

Plain script (stdlib + msgspec + the installed samgita_protocol):

    python bench/codec.py [--rounds N] [--quick]

For each message (a 450-byte ``item/delta`` notification, a 10-field request
and a 16 KiB ``item/delta``) it times, in the same run and in alternating
rounds, ``samgita_protocol.decode`` against ``json.loads`` and untyped
``msgspec.json.decode`` of the same bytes, and ``samgita_protocol.encode``
against ``json.dumps`` and untyped ``msgspec.json.encode`` of the same value.
Each round times every contender once (a batch of calls, best of three); the
table shows the median over rounds of the per-round ratios, which cancels
most of the noise of a shared 2-core machine. A ratio below 1 means the
validated codec is faster than the reference. Figures are printed, never
asserted.

Every message is the codec's own (canonical) encoding, which is what a peer
running this library sends; ``--non-canonical`` adds the same messages with
keys in another order and whitespace (the exact duplicate-key tokenizer's
path).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

import samgita_protocol as sp


def _delta(size: int) -> sp.Notification:
    base = sp.Notification(
        method="item/delta",
        stream_id="stream-7f3a9c",
        cursor=1042,
        correlation_id="corr-2b8e41d0",
        params=sp.ItemDeltaParams(
            thread_id="thr-5c1d9e2a",
            turn_id="turn-81f0b3c4",
            item_id="item-3e7a0d95",
            delta="",
        ),
    )
    pad = size - len(sp.encode(base))
    return msgspec.structs.replace(
        base,
        params=msgspec.structs.replace(
            base.params, delta=("lorem ipsum " * (pad // 12 + 1))[:pad]
        ),
    )


def _request() -> sp.Request:
    # All ten envelope fields (schema_version, type, id, correlation_id,
    # method, command_id, causation_id, project_ref, task_ref, params).
    return sp.Request(
        id="c1-17",
        correlation_id="corr-9d2f",
        method="turn/interrupt",
        command_id="cmd-4a1b7e",
        causation_id="evt-77c1",
        params=sp.TurnInterruptParams(
            thread_id="thr-5c1d9e2a", turn_id="turn-81f0b3c4"
        ),
        project_ref="proj-12",
        task_ref="task-940",
    )


def _time(fn: Callable[[], Any], number: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / number


def _bench(
    contenders: dict[str, Callable[[], Any]], rounds: int, number: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            times[name].append(_time(contenders[name], number))
    return times


def _noncanonical(wire: bytes) -> bytes:
    value = json.loads(wire)
    return json.dumps(dict(reversed(list(value.items()))), indent=1).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="fewer calls per round")
    parser.add_argument("--non-canonical", action="store_true")
    args = parser.parse_args()

    messages: list[tuple[str, sp.Message]] = [
        ("item/delta 450 B", _delta(450)),
        ("request 10 fields", _request()),
        ("item/delta 16 KiB", _delta(16 * 1024)),
    ]
    untyped_decode = msgspec.json.Decoder().decode
    untyped_encode = msgspec.json.Encoder().encode
    rows: list[tuple[str, str, float, float, float]] = []
    for label, message in messages:
        wire = sp.encode(message)
        inputs = [(label, wire)]
        if args.non_canonical:
            inputs.append((label + " (reordered, indented)", _noncanonical(wire)))
        for name, data in inputs:
            number = max(20, (200 if args.quick else 2000) * 450 // len(data))
            assert sp.decode(data) is not None
            t = _bench(_decoders(data, untyped_decode), args.rounds, number)
            rows.append(("decode", f"{name} ({len(data)} B)", *_ratios(t)))
        value = json.loads(wire)
        number = max(20, (200 if args.quick else 2000) * 450 // len(wire))
        t = _bench(_encoders(message, value, untyped_encode), args.rounds, number)
        rows.append(("encode", f"{label} ({len(wire)} B)", *_ratios(t)))

    print(f"{'op':7} {'message':40} {'codec us':>9} {'/ json':>8} {'/ msgspec':>10}")
    for op, name, us, vs_json, vs_msgspec in rows:
        print(f"{op:7} {name:40} {us:9.2f} {vs_json:8.2f} {vs_msgspec:10.2f}")


def _decoders(
    data: bytes, untyped: Callable[[bytes], Any]
) -> dict[str, Callable[[], Any]]:
    return {
        "codec": lambda: sp.decode(data),
        "json": lambda: json.loads(data),
        "msgspec": lambda: untyped(data),
    }


def _encoders(
    message: sp.Message, value: Any, untyped: Callable[[Any], bytes]
) -> dict[str, Callable[[], Any]]:
    return {
        "codec": lambda: sp.encode(message),
        "json": lambda: json.dumps(value, separators=(",", ":")),
        "msgspec": lambda: untyped(value),
    }


def _ratios(t: dict[str, list[float]]) -> tuple[float, float, float]:
    codec, ref_json, ref_msgspec = t["codec"], t["json"], t["msgspec"]
    return (
        statistics.median(codec) * 1e6,
        statistics.median(c / j for c, j in zip(codec, ref_json, strict=True)),
        statistics.median(c / m for c, m in zip(codec, ref_msgspec, strict=True)),
    )


if __name__ == "__main__":
    main()
