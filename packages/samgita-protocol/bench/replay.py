"""Replay log costs and streamed-delta consumption against bare ``json.loads``.

    python bench/replay.py [--quick]

1. ``Replay.append`` (at steady state: every append also evicts the oldest
   event) and ``Replay.since`` (one full 128-event page, from the middle
   cursor every time, and from a random retained cursor) per operation at
   1,000 / 10,000 / 100,000 retained events. The sizes are measured in
   alternating rounds; the figure is the median per round and the ratio to
   1,000 events the median of the per-round ratios (target: at most 1.3x).
2. Streamed ``item/delta`` notifications, sequenced by a ``Replay`` (each
   one's bytes the ``Outgoing.data`` its ``Replay.append`` returned): receive
   every message, drain and acknowledge every 64, compared with bare
   ``json.loads`` of the same bytes in alternating rounds (median of the
   per-round ratios; target: at most 1.0x), through ``Client.receive`` /
   ``drain`` / ``ack_cursor`` of an initialized Client, and through
   ``decode`` + ``ClientStreams`` alone (what the Client adds on top).

A plain script: it prints figures and asserts only that the work was done.
"""

from __future__ import annotations

import gc
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import cast

from samgita_protocol import (
    Client,
    ItemDeltaParams,
    Notification,
    Replay,
    Server,
    decode,
)
from samgita_protocol._streams import ClientStreams
from samgita_protocol.testing import FakeHost

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 11
SIZES = (1_000, 10_000, 100_000)
PAGE = 128


def delta(text: str) -> Notification:
    return Notification(
        method="item/delta",
        params=ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta=text),
    )


def per_op(n: int, fn: Callable[[], object]) -> float:
    """Microseconds per call of ``fn`` over ``n`` calls."""
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def replay_costs() -> None:
    print(
        "Replay (append at steady state, evicting the oldest each time; since = one\n"
        "        full 128-event page from the middle cursor every time (hot) and from\n"
        "        a random retained cursor (cold); bare = a cold 128-item slice of a\n"
        "        plain list of the same events (what the memory alone costs), at\n"
        "        other random cursors so neither warms the cache for the other)"
    )
    event = delta("The quick brown fox jumps over the lazy dog. ")
    replays = {}
    for n in SIZES:
        r = Replay("s", max_events=n, max_bytes=1 << 40)
        for _ in range(n):
            r.append(event)
        assert len(r) == n
        replays[n] = r
    rng = random.Random(7)
    kinds = ("append", "hot", "cold", "bare")
    rows: dict[int, dict[str, list[float]]] = {n: {k: [] for k in kinds} for n in SIZES}
    appends = 2_000 if QUICK else 10_000
    reads = 500 if QUICK else 2_000
    gc.collect()
    for _ in range(ROUNDS):
        for n in SIZES:
            r = replays[n]

            def append(r: Replay = r) -> None:
                r.append(event)

            rows[n]["append"].append(per_op(appends, append))
            assert len(r) == n
            first = r.first_cursor
            span = r.last_cursor - PAGE - first
            middle = first + span // 2
            # The same retained objects in one plain list.
            flat = r.since(first - 1)
            while len(flat) < n:
                flat += r.since(cast(int, flat[-1].cursor))
            cold_it = iter([first - 1 + rng.randint(1, span) for _ in range(reads)])
            bare_it = iter([rng.randint(0, n - PAGE) for _ in range(reads)])

            def hot(r: Replay = r, middle: int = middle) -> None:
                assert len(r.since(middle)) == PAGE

            def cold(r: Replay = r, it: Iterator[int] = cold_it) -> None:
                assert len(r.since(next(it))) == PAGE

            def bare(
                flat: list[Notification] = flat, it: Iterator[int] = bare_it
            ) -> None:
                i = next(it)
                assert len(flat[i : i + PAGE]) == PAGE

            rows[n]["hot"].append(per_op(reads, hot))
            rows[n]["cold"].append(per_op(reads, cold))
            rows[n]["bare"].append(per_op(reads, bare))
            del flat
    print(
        f"  {'retained':>9}{'append µs/op':>15}{'since hot µs/op':>18}"
        f"{'since cold µs/op':>19}{'bare cold µs/op':>18}"
    )
    for n in SIZES:
        med = {k: statistics.median(v) for k, v in rows[n].items()}
        print(
            f"  {n:>9}{med['append']:>15.2f}{med['hot']:>18.2f}"
            f"{med['cold']:>19.2f}{med['bare']:>18.2f}"
        )
    small, large = rows[SIZES[0]], rows[SIZES[-1]]

    def ratio(f: Callable[[dict[str, list[float]], int], float]) -> float:
        return statistics.median(f(large, i) / f(small, i) for i in range(ROUNDS))

    print("  100,000 / 1,000 retained (median of per-round ratios; target <= 1.3x):")
    print(f"    append {ratio(lambda row, i: row['append'][i]):.2f}x")
    print(f"    since hot {ratio(lambda row, i: row['hot'][i]):.2f}x")
    print(
        f"    since cold {ratio(lambda row, i: row['cold'][i]):.2f}x, "
        f"of which the memory (bare) {ratio(lambda row, i: row['bare'][i]):.2f}x; "
        f"since's own cost (cold - bare) "
        f"{ratio(lambda row, i: row['cold'][i] - row['bare'][i]):.2f}x"
    )


def _connected_client() -> Client:
    """A Client initialized against a FakeHost Server over bytes."""
    host = FakeHost(capabilities=["streaming.v1"])
    server = Server(host, capabilities=host.capabilities, host_id="bench-host")
    client = Client(capabilities=["streaming.v1"], host_id="bench-host")
    request = client.request("connection/initialize", {})
    (response,) = server.receive(request.data)
    client.receive(response.data)
    assert client.capabilities == frozenset({"streaming.v1"})
    return client


def _consumers(binaries: list[bytes]) -> list[tuple[str, Callable[[list[bytes]], int]]]:
    """The receive + drain + ack loops: through the Client, and the stream
    state alone (decode + ClientStreams) to show what the Client adds."""
    client = _connected_client()

    def via_client(chunk: list[bytes]) -> int:
        for data in chunk:
            client.receive(data)
        events = client.drain()
        last = events[-1]
        client.ack_cursor(cast(str, last.stream_id), cast(int, last.cursor))
        return len(events)

    streams = ClientStreams()

    def via_streams(chunk: list[bytes]) -> int:
        for data in chunk:
            n = decode(data)
            assert type(n) is Notification
            streams.ingest(n, data)
        events = streams.drain()
        last = events[-1]
        streams.ack(cast(str, last.stream_id), cast(int, last.cursor))
        return len(events)

    alone = ClientStreams()
    decoded = dict(zip(binaries, map(decode, binaries), strict=True))

    def via_streams_alone(chunk: list[bytes]) -> int:
        for data in chunk:
            alone.ingest(decoded[data], data)  # type: ignore[arg-type]
        events = alone.drain()
        last = events[-1]
        alone.ack(cast(str, last.stream_id), cast(int, last.cursor))
        return len(events)

    return [
        ("Client.receive + drain + ack_cursor", via_client),
        ("decode + ClientStreams.ingest + drain + ack", via_streams),
        (
            "ClientStreams.ingest + drain + ack alone (decoded beforehand)",
            via_streams_alone,
        ),
    ]


def streamed_deltas() -> None:
    batch, batches = 64, 8
    warm = 4
    total = batch * batches * (ROUNDS * 3 + warm)
    log = Replay("deltas", max_events=128)
    binaries = [log.append(delta(f"token {i} ")).data for i in range(1, total + 1)]
    chunks = [binaries[i : i + batch] for i in range(0, total, batch)]
    size = sum(map(len, binaries)) // total
    print(
        f"\nStreamed item/delta (sequenced, {size} B each; drain + ack every {batch})"
    )
    n = batch * batches
    for name, consume in _consumers(binaries):
        pos = 0

        def ours(consume: Callable[[list[bytes]], int] = consume) -> float:
            nonlocal pos
            start = time.perf_counter()
            for chunk in chunks[pos : pos + batches]:
                assert consume(chunk) == batch
            pos += batches
            return time.perf_counter() - start

        def base(offset: int) -> float:
            loads = json.loads
            start = time.perf_counter()
            for chunk in chunks[offset : offset + batches]:
                for data in chunk:
                    loads(data)
            return time.perf_counter() - start

        for _ in range(warm // 2):
            ours()
            base(0)
        ratios, ours_t, base_t = [], [], []
        for _ in range(ROUNDS * 3 - 1):
            offset = pos
            t = ours()
            b = base(offset)
            ratios.append(t / b)
            ours_t.append(t)
            base_t.append(b)
        per = statistics.median(ours_t) / n * 1e6
        bare = statistics.median(base_t) / n * 1e6
        print(f"  {name}")
        print(
            f"    {per:.2f} µs/event ({1e6 / per:,.0f} events/s)   json.loads: "
            f"{bare:.2f} µs/event ({1e6 / bare:,.0f} events/s)   "
            f"{statistics.median(ratios):.2f}x baseline "
            "(median of per-round ratios; target <= 1.0x)"
        )


def main() -> None:
    print(
        f"samgita_protocol replay bench (Python {platform.python_version()}, "
        f"{platform.machine()}; {ROUNDS} rounds{', quick' if QUICK else ''})\n"
    )
    replay_costs()
    streamed_deltas()


if __name__ == "__main__":
    main()
