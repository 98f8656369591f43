"""Model-based replay test (hypothesis stateful).

A host appends to several streams (``Replay`` logs); a consumer receives the
live notifications over a lossy, duplicating, reordering wire, disconnects,
"restarts" keeping only its persisted checkpoints, and resumes page by page.
After a final resume of every stream the consumer has processed every
retained event exactly once, in cursor order, or was told explicitly
(``replay_gap``) that events fell out of retention: never a silent loss,
never a duplicate handed to the caller.

The Client model makes at least 1,000 derandomized runs when the ``CI``
environment variable is set and 150 locally (``SAMGITA_MODEL_RUNS``
overrides both); the ClientStreams-only model a quarter of that.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from samgita_protocol import (
    Client,
    ErrorCode,
    ErrorReceived,
    Handler,
    ItemDeltaParams,
    Notification,
    ProtocolError,
    Replay,
    RequestContext,
    ResponseReceived,
    Server,
    StreamResumeResult,
    decode,
)
from samgita_protocol._replay import PAGE_OVERHEAD
from samgita_protocol._streams import ClientStreams

STREAMS = ("s1", "s2", "s3")
# Small, so live notifications hit the bound.
LIVE_BUFFER = 16
# A full page always fits in this one.
PAGE_BUFFER = 128

# Any text (non-ASCII takes the codec's byte-checked path, inside pages too).
TEXT = st.text(max_size=8)

CI = bool(os.environ.get("CI"))
RUNS = int(os.environ.get("SAMGITA_MODEL_RUNS", "1000" if CI else "150"))


class PageTooLarge(Exception):
    """More new events than the whole buffer holds."""


class StreamsConsumer:
    """``ClientStreams`` alone, fed with decoded wire bytes and with the pages
    a host ``Replay`` answers directly (no connection in between)."""

    def __init__(
        self,
        replays: dict[str, Replay],
        buffer: int,
        checkpoints: dict[str, int] | None,
    ) -> None:
        self.replays = replays
        self.buffer = buffer
        self.streams = ClientStreams(
            max_buffered_notifications=buffer, checkpoints=checkpoints
        )

    def receive(self, data: bytes) -> None:
        notification = decode(data)
        assert isinstance(notification, Notification)
        self.streams.ingest(notification, data)

    def resume(self, stream: str, cursor: int) -> StreamResumeResult:
        return self.replays[stream].page(cursor)

    def receive_replay(self, page: StreamResumeResult) -> int:
        return self.streams.ingest_page(page.stream_id, page.events)

    def drain(self, max_events: int) -> list[Notification]:
        return self.streams.drain(max_events)

    def ack(self, stream: str, cursor: int) -> None:
        self.streams.ack(stream, cursor)

    def checkpoints(self) -> dict[str, int]:
        return self.streams.checkpoints()

    @property
    def buffered(self) -> int:
        return self.streams.buffered

    def disconnect(self) -> None:
        self.streams.reconnect()


class StreamHost(Handler):
    """A host serving ``stream/resume`` from several ``Replay`` logs."""

    methods = frozenset({"stream/resume"})

    def __init__(self, replays: dict[str, Replay]) -> None:
        self.replays = replays

    def handle_request(self, method: str, params: Any, context: RequestContext) -> Any:
        assert method == "stream/resume"
        return self.replays[params.stream_id].page(params.cursor)


class ClientConsumer:
    """A ``Client`` connected to a ``Server`` over encoded bytes: live
    notifications through ``Client.receive``, pages through a real
    ``stream/resume`` round trip and ``Client.receive_replay``; a restart is
    a new ``Client(host_id=..., checkpoints=...)``."""

    def __init__(
        self,
        replays: dict[str, Replay],
        buffer: int,
        checkpoints: dict[str, int] | None,
    ) -> None:
        self.replays = replays
        self.buffer = buffer
        self.client = Client(
            capabilities=["streaming.v1"],
            host_id="h",
            checkpoints=checkpoints,
            max_buffered_notifications=buffer,
        )
        self.connect()

    def connect(self) -> None:
        self.server = Server(
            StreamHost(self.replays), capabilities=["streaming.v1"], host_id="h"
        )
        (effect,) = self.call("connection/initialize", {})
        assert isinstance(effect, ResponseReceived), effect

    def call(self, method: str, params: Any) -> list[Any]:
        request = self.client.request(method, params)
        (response,) = self.server.receive(request.data)
        return self.client.receive(response.data)

    def receive(self, data: bytes) -> None:
        assert self.client.receive(data) == []

    def resume(self, stream: str, cursor: int) -> StreamResumeResult:
        (effect,) = self.call("stream/resume", {"stream_id": stream, "cursor": cursor})
        if isinstance(effect, ErrorReceived):
            raise effect.error
        assert isinstance(effect, ResponseReceived), effect
        assert isinstance(effect.result, StreamResumeResult)
        return effect.result

    def receive_replay(self, page: StreamResumeResult) -> int:
        return self.client.receive_replay(page)

    def drain(self, max_events: int) -> list[Notification]:
        return self.client.drain(max_events)

    def ack(self, stream: str, cursor: int) -> None:
        self.client.ack_cursor(stream, cursor)

    def checkpoints(self) -> dict[str, int]:
        assert self.client.host_id == "h"
        return self.client.checkpoints()

    @property
    def buffered(self) -> int:
        return self.client.buffered

    def disconnect(self) -> None:
        self.client.disconnect()
        self.client.reconnect()
        self.connect()


def delta(stream: str, text: str) -> Notification:
    return Notification(
        method="item/delta",
        params=ItemDeltaParams(thread_id="t", turn_id="u", item_id=stream, delta=text),
    )


class ReplayModel(RuleBasedStateMachine):
    consumer_class: type[ClientConsumer] | type[StreamsConsumer] = ClientConsumer

    def __init__(self) -> None:
        super().__init__()
        self.replays: dict[str, Replay] = {}
        self.wire: list[bytes] = []
        # Cursors the caller processed (and acknowledged), per stream.
        self.processed: dict[str, list[int]] = {s: [] for s in STREAMS}
        # First cursors after each explicit replay_gap the caller accepted.
        self.gaps: dict[str, list[int]] = {s: [] for s in STREAMS}
        # Drained but not yet processed: delivered, not acknowledged.
        self.in_hand: list[Notification] = []
        self.persisted: dict[str, int] | None = None
        self.consumer: ClientConsumer | StreamsConsumer

    @initialize(max_events=st.sampled_from([5, 40, 200]))
    def start(self, max_events: int) -> None:
        self.replays = {s: Replay(s, max_events=max_events) for s in STREAMS}
        self.connect(LIVE_BUFFER)

    def connect(self, buffer: int) -> None:
        # A new process: what was in hand was never processed.
        self.consumer = self.consumer_class(self.replays, buffer, self.persisted)
        self.wire = []
        self.in_hand = []

    # -- host ---------------------------------------------------------------------

    @rule(stream=st.sampled_from(STREAMS), text=TEXT, lost=st.integers(0, 4))
    def append(self, stream: str, text: str, lost: int) -> None:
        sequenced = self.replays[stream].append(delta(stream, text))
        if lost:  # one in five never reaches the consumer live
            self.wire.append(sequenced.data)

    @rule(stream=st.sampled_from(STREAMS), count=st.integers(1, 150))
    def burst(self, stream: str, count: int) -> None:
        # Many events at once: retention and pages beyond one chunk.
        for i in range(count):
            self.wire.append(self.replays[stream].append(delta(stream, str(i))).data)

    @rule(stream=st.sampled_from(STREAMS), kib=st.sampled_from([64, 300, 1000, 1100]))
    def large(self, stream: str, kib: int) -> None:
        # Large events: pages are bounded by the message size as well as by
        # count; an event no one-event page could carry is refused whole.
        replay = self.replays[stream]
        before = (replay.last_cursor, len(replay), replay.retained_bytes)
        try:
            sequenced = replay.append(delta(stream, "x" * (kib * 1024)))
        except ProtocolError as e:
            assert e.code in (ErrorCode.LIMIT_EXCEEDED, ErrorCode.MESSAGE_TOO_LARGE), e
            assert kib * 1024 + PAGE_OVERHEAD > replay.max_message_bytes
            assert (replay.last_cursor, len(replay), replay.retained_bytes) == before
            event("large event refused")
        else:
            self.wire.append(sequenced.data)

    # -- wire and consumer --------------------------------------------------------

    @rule(
        pick=st.integers(0, 1 << 16),
        reorder=st.integers(0, 3),
        duplicate=st.integers(0, 2),
    )
    def receive(self, pick: int, reorder: int, duplicate: int) -> None:
        # Oldest first usually; sometimes a random one (reorder), sometimes
        # kept on the wire for a later duplicate delivery.
        if not self.wire:
            return
        index = pick % len(self.wire) if reorder == 0 else 0
        data = self.wire[index]
        if duplicate != 0:
            del self.wire[index]
        before = self.consumer.buffered
        try:
            self.consumer.receive(data)
        except ProtocolError as e:
            # Refused whole, nothing changed; the resume brings it back.
            assert e.code in (ErrorCode.CURSOR_GAP, ErrorCode.LIMIT_EXCEEDED), e
            assert self.consumer.buffered == before
            event(f"live {e.code}")
        else:
            grew = self.consumer.buffered > before
            event("live buffered" if grew else "live duplicate")

    @rule(max_events=st.sampled_from([1, 5, 200]))
    def take(self, max_events: int) -> None:
        # Delivered, processing not finished: not acknowledged yet.
        self.in_hand += self.consumer.drain(max_events)

    @rule(max_events=st.sampled_from([1, 5, 200]))
    def process(self, max_events: int) -> None:
        items, self.in_hand = self.in_hand + self.consumer.drain(max_events), []
        for item in items:
            stream, cursor = item.stream_id, item.cursor
            assert isinstance(stream, str) and isinstance(cursor, int)
            done = self.processed[stream]
            # Never a duplicate, never out of order, never a silent skip.
            expected = done[-1] + 1 if done else 1
            assert cursor == expected or cursor in self.gaps[stream], (
                stream,
                done[-3:],
                cursor,
            )
            self.consumer.ack(stream, cursor)
            done.append(cursor)

    def process_all(self) -> None:
        while self.consumer.buffered or self.in_hand:
            self.process(200)

    @rule()
    def disconnect(self) -> None:
        # Same process, new connection: buffer, positions and what is in
        # hand stay.
        self.consumer.disconnect()
        self.wire = []

    @rule()
    def restart(self) -> None:
        # Only the persisted checkpoints survive a process restart.
        self.persisted = self.consumer.checkpoints()
        self.connect(LIVE_BUFFER)

    @rule(stream=st.sampled_from(STREAMS), drain_first=st.booleans())
    def resume(self, stream: str, drain_first: bool) -> None:
        # Without draining first the page repeats buffered and in-hand
        # events (received, not processed): duplicates by retained content.
        if drain_first:
            self.process_all()
        while True:
            cursor = self.consumer.checkpoints().get(stream, 0)
            try:
                page = self.consumer.resume(stream, cursor)
            except ProtocolError as e:
                assert e.code is ErrorCode.REPLAY_GAP, e
                event("replay_gap")
                self.accept_gap(stream)
                continue
            try:
                self.ingest(page)
            except PageTooLarge:
                event("page larger than the live buffer")
                # Pages go up to 128 events: restart from the checkpoints with
                # a buffer a full page fits in, and resume again.
                self.persisted = self.consumer.checkpoints()
                self.connect(PAGE_BUFFER)
                continue
            if not page.has_more:
                return

    def accept_gap(self, stream: str) -> None:
        # Explicit loss: the consumer decides to continue from the oldest
        # retained event by restoring a checkpoint it chose.
        first = self.replays[stream].first_cursor
        self.process_all()
        checkpoints = self.consumer.checkpoints()
        assert checkpoints.get(stream, 0) < first - 1
        checkpoints[stream] = first - 1
        self.gaps[stream].append(first)
        self.persisted = checkpoints
        self.connect(self.consumer.buffer)

    def ingest(self, page: StreamResumeResult) -> None:
        # A page whose new events do not fit next to the buffered (or
        # retained in-hand) ones is refused whole: process, then ingest the
        # same page again.
        while True:
            before = self.consumer.buffered
            try:
                fresh = self.consumer.receive_replay(page)
            except ProtocolError as e:
                assert e.code is ErrorCode.LIMIT_EXCEEDED, e
                assert self.consumer.buffered == before
                if before == 0 and not self.in_hand:
                    raise PageTooLarge from e
                event("page refused whole, retried after processing")
                self.process_all()
                continue
            if fresh < len(page.events):
                event("page with duplicates")
            self.process_all()
            return

    def teardown(self) -> None:
        if not self.replays:
            return
        for stream in STREAMS:
            self.resume(stream, drain_first=True)
        for stream in STREAMS:
            done = self.processed[stream]
            gaps = self.gaps[stream]
            last = self.replays[stream].last_cursor
            for a, b in zip(done, done[1:], strict=False):
                assert b == a + 1 or b in gaps, (stream, a, b)
            assert not done or done[0] == 1 or done[0] in gaps, (stream, done[:3])
            assert (done[-1] if done else 0) == last, (stream, "not caught up")
            # Everything retained and not lost explicitly was processed.
            assert set(range(self.replays[stream].first_cursor, last + 1)) <= set(done)


class StreamsReplayModel(ReplayModel):
    consumer_class = StreamsConsumer


def model_settings(runs: int) -> settings:
    return settings(
        max_examples=runs,
        stateful_step_count=30,
        derandomize=CI,
        deadline=None,
        database=None if CI else settings.default.database,  # type: ignore[union-attr]
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# Through a Client/Server pair over bytes: the claim the requirement makes.
ReplayModel.TestCase.settings = model_settings(RUNS)
TestClientReplayModel: Any = ReplayModel.TestCase
# ClientStreams alone: the same invariant without the connection around it
# (a quarter of the runs, to stay within the suite's time budget).
StreamsReplayModel.TestCase.settings = model_settings(max(RUNS // 4, 25))
TestStreamsReplayModel: Any = StreamsReplayModel.TestCase
