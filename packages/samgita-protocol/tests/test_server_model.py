"""A hypothesis state machine of one Server against a model: incoming
requests with reused ids, server-initiated requests with valid, duplicate,
conflicting, late and forgotten replies, expiries, sequenced notifications
(next, duplicate, gap, too many streams) and forgotten streams.

After every step: the handler saw exactly the requests the model says it
should; every server-initiated request got at most one outcome, and exactly
one once it ended; nothing grew past its bound; positions equal the model's;
a call that raised changed nothing (compared with a snapshot).

Runs: 1,000 when the ``CI`` environment variable is set, 100 locally
(``SAMGITA_MODEL_RUNS`` overrides both), derandomized.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from helpers import wire
from samgita_protocol import CancelResult, ErrorCode, ProtocolError, Request, Response
from test_server import Spy, cancel, messages, note, ready, snapshot

MAX = 3  # max_outstanding_requests, max_completed and max_streams
TIMEOUT = 10.0
IDS = ["r1", "r2", "r3", "r4", "r5"]
CONTENT = ["a", "b"]
STREAMS = ["s1", "s2", "s3", "s4"]


class ServerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.spy = Spy(groups=("cancellation.v1", "streaming.v1"))
        self.server = ready(
            self.spy,
            groups=("cancellation.v1", "streaming.v1"),
            max_outstanding_requests=MAX,
            max_completed=MAX,
            max_streams=MAX,
            request_timeout=TIMEOUT,
        )
        self.now = 0.0
        self.handled = 0
        # Incoming ids in first-arrival order (the window sees the newest MAX).
        self.seen: list[tuple[str, str]] = []
        self.pending: dict[str, tuple[Request, float]] = {}
        # Terminal ids in order: (id, reply content or None when expired).
        self.terminal: list[tuple[str, Response | None]] = []
        self.sent: list[Request] = []
        self.positions: dict[str, int] = {}

    # -- incoming requests --------------------------------------------------------

    @rule(request_id=st.sampled_from(IDS), content=st.sampled_from(CONTENT))
    def incoming(self, request_id: str, content: str) -> None:
        window = dict(self.seen[-MAX:])
        [response] = messages(self.server.receive(cancel(content, id=request_id)))
        if request_id in window and window[request_id] != content:
            assert response.error.code == "conflict"
        else:
            assert response.result.request_id == content
            self.handled += 1
        if request_id not in window:
            self.seen.append((request_id, content))

    # -- server-initiated requests ------------------------------------------------------

    @rule()
    def server_request(self) -> None:
        before = snapshot(self.server)
        try:
            request = self.server.request(
                "request/cancel", {"request_id": "x"}, now=self.now
            ).message
        except ProtocolError as error:
            assert error.code == ErrorCode.LIMIT_EXCEEDED
            assert len(self.pending) == MAX
            assert snapshot(self.server) == before
            return
        assert len(self.pending) < MAX
        self.pending[request.id] = (request, self.now + TIMEOUT)
        self.sent.append(request)

    def _reply(self, request_id: str, status: str) -> Response:
        return Response(
            id=request_id,
            correlation_id=request_id,
            result=CancelResult(request_id="x", cancel_status=status),  # type: ignore[arg-type]
        )

    @rule(data=st.data(), status=st.sampled_from(["requested", "already_finished"]))
    def reply(self, data: st.DataObject, status: str) -> None:
        known = [r.id for r in self.sent]
        if not known:
            return
        request_id = data.draw(st.sampled_from(known))
        response = self._reply(request_id, status)
        window = dict(self.terminal[-MAX:])
        before = snapshot(self.server)
        outcomes = len(self.spy.outcomes)
        try:
            out = self.server.receive(wire(response))
        except ProtocolError as error:
            assert snapshot(self.server) == before
            assert len(self.spy.outcomes) == outcomes
            if request_id in window:
                kept = window[request_id]
                assert error.code == ErrorCode.CONFLICTING_RESPONSE
                assert kept is None or kept != response
            else:
                assert request_id not in self.pending
                assert error.code == ErrorCode.UNKNOWN_RESPONSE
            return
        assert out == []
        if request_id in self.pending:
            del self.pending[request_id]
            self.terminal.append((request_id, response))
            assert len(self.spy.outcomes) == outcomes + 1
            assert self.spy.outcomes[-1][1].cancel_status == status
        else:
            assert window.get(request_id) == response  # a suppressed duplicate
            assert len(self.spy.outcomes) == outcomes

    @rule(step=st.sampled_from([1.0, 5.0, 10.0]))
    def expire(self, step: float) -> None:
        self.now += step
        ended = self.server.expire(self.now)
        due = [
            rid for rid, (_, deadline) in self.pending.items() if deadline <= self.now
        ]
        assert [r.id for r in ended] == due
        for request_id in due:
            del self.pending[request_id]
            self.terminal.append((request_id, None))

    # -- notifications --------------------------------------------------------------------

    @rule(stream=st.sampled_from(STREAMS), offset=st.sampled_from([1, 1, 1, 0, -1, 2]))
    def notification(self, stream: str, offset: int) -> None:
        processed = self.positions.get(stream, 0)
        cursor = processed + offset
        if cursor < 1:
            return
        before = snapshot(self.server)
        try:
            assert self.server.receive(note(cursor, stream=stream)) == []
        except ProtocolError as error:
            assert snapshot(self.server) == before
            if stream not in self.positions and len(self.positions) >= MAX:
                assert error.code == ErrorCode.LIMIT_EXCEEDED
            else:
                assert error.code == ErrorCode.CURSOR_GAP and offset == 2
            return
        assert not (stream not in self.positions and len(self.positions) >= MAX)
        if offset == 1:
            self.positions[stream] = cursor
        else:
            assert offset <= 0  # already processed: ignored

    @rule(stream=st.sampled_from(STREAMS))
    def forget(self, stream: str) -> None:
        self.server.forget_stream(stream)
        self.positions.pop(stream, None)

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def matches_the_model(self) -> None:
        assert len(self.spy.calls) == self.handled
        assert set(self.server.outstanding) == set(self.pending)
        assert len(self.server.outstanding) <= MAX
        assert self.server.positions() == self.positions
        assert len(list(self.server._seen.keys())) <= MAX
        answered = [request.id for request, _ in self.spy.outcomes]
        assert len(answered) == len(set(answered))  # at most one outcome each
        assert set(answered) == {rid for rid, _ in self.terminal}


ServerModel.TestCase.settings = settings(
    max_examples=int(
        os.environ.get("SAMGITA_MODEL_RUNS", "1000" if os.environ.get("CI") else "100")
    ),
    stateful_step_count=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_server_model = ServerModel.TestCase
