"""FakeHost: deterministic behaviour per group (through a Server, bytes both ways)."""

from __future__ import annotations

import pytest

from helpers import EVENT, ConnectionPair
from samgita_protocol import (
    CAPABILITY_GROUPS,
    ErrorCode,
    ProtocolError,
    Server,
    request_methods,
)
from samgita_protocol.testing import ALL_GROUPS, FakeHost

INPUT = [{"type": "text", "text": "one two"}]


def test_methods_follow_the_capabilities() -> None:
    assert FakeHost().capabilities == tuple(CAPABILITY_GROUPS) == ALL_GROUPS
    assert set(FakeHost().methods) == set().union(
        *(request_methods(g) for g in ALL_GROUPS)
    )
    narrow = FakeHost(capabilities=["sessions.v1", "sessions.v1"])
    assert narrow.capabilities == ("sessions.v1",)
    assert set(narrow.methods) == request_methods("sessions.v1")
    Server(narrow, capabilities=narrow.capabilities)
    with pytest.raises(ValueError):
        FakeHost(capabilities=["nope.v1"])
    with pytest.raises(ValueError):
        FakeHost(interrupt_status="done")  # type: ignore[arg-type]


def test_two_hosts_given_the_same_calls_answer_the_same() -> None:
    def run() -> list[object]:
        pair = ConnectionPair(server_options={"connection_id": "conn-1"})
        out: list[object] = []
        thread = pair.result("thread/start", {}, command_id="k1").thread
        out.append(thread)
        out.append(
            pair.result(
                "turn/start",
                {"thread_id": thread.thread_id, "input": INPUT},
                command_id="k2",
            )
        )
        out.extend(pair.client.drain())
        out.append(
            pair.result("project/event.receive", {"event": EVENT}, command_id="k3")
        )
        return out

    assert run() == run()


def test_item_notifications_need_streaming_v1() -> None:
    host = FakeHost(capabilities=["sessions.v1"])
    pair = ConnectionPair(host, capabilities=["sessions.v1"])
    thread = pair.result("thread/start", {}, command_id="k1").thread
    pair.result(
        "turn/start", {"thread_id": thread.thread_id, "input": INPUT}, command_id="k2"
    )
    assert [n.method for n in pair.client.drain()] == [
        "thread/started",
        "turn/started",
        "turn/completed",
    ]
    assert host.replay.last_cursor == 3


def test_the_replay_log_holds_everything_emitted_across_connections() -> None:
    host = FakeHost()
    first = ConnectionPair(host)
    thread = first.result("thread/start", {}, command_id="k1").thread
    live = first.client.drain()
    first.client.ack_cursor("fake-stream", 1)
    first.server.disconnect()
    second = ConnectionPair(
        host,
        client_options={"host_id": "host-1", "checkpoints": first.client.checkpoints()},
    )
    second.result(
        "turn/start", {"thread_id": thread.thread_id, "input": INPUT}, command_id="k2"
    )
    live += second.client.drain()
    assert host.replay.since(0) == live
    assert [n.cursor for n in live] == list(range(1, len(live) + 1))
    # Emitted notifications carry the request's correlation.
    assert {n.correlation_id for n in live[1:]} == {"c1-2"}


def test_records_notifications_and_responses() -> None:
    pair = ConnectionPair()
    note = pair.client.notify("thread/closed", {"thread_id": "t"})
    pair.to_server(note)
    assert pair.fake.notifications == [note.message]
    request = pair.fake.request_approval(
        pair.server,
        approval_id="ap",
        action={"kind": "k", "description": "d"},
        deadline="2099-01-01T00:00:00Z",
        thread_id="t",
        reason="why",
    ).message
    assert (request.params.thread_id, request.params.reason) == ("t", "why")
    assert request.params.turn_id is not None
    pair.server.disconnect()
    outcome = pair.fake.decisions()["ap"]
    assert isinstance(outcome, ProtocolError) and outcome.code == ErrorCode.DISCONNECTED


def test_thread_read_lists_the_threads_turns_in_order() -> None:
    pair = ConnectionPair()
    a = pair.result("thread/start", {}, command_id="k1").thread
    b = pair.result("thread/start", {}, command_id="k2").thread
    turns = [
        pair.result(
            "turn/start",
            {"thread_id": t.thread_id, "input": INPUT},
            command_id=f"k{3 + i}",
        ).turn.turn_id
        for i, t in enumerate([a, b, a])
    ]
    read = pair.result("thread/read", {"thread_id": a.thread_id})
    assert [t.turn_id for t in read.turns] == [turns[0], turns[2]]
    assert read.thread.status == "idle"


def test_publish_sequences_host_driven_notifications() -> None:
    pair = ConnectionPair()
    thread = pair.result("thread/start", {}, command_id="k1").thread
    closed = pair.fake.publish(
        pair.server, "thread/closed", {"thread_id": thread.thread_id}
    )
    assert (closed.message.stream_id, closed.message.cursor) == ("fake-stream", 2)
    assert pair.to_client(closed) == []
    assert [n.method for n in pair.client.drain()] == [
        "thread/started",
        "thread/closed",
    ]
    with pytest.raises(ProtocolError):
        pair.fake.publish(pair.server, "thread/closed", {"bogus": 1})
    assert pair.fake.replay.last_cursor == 2
