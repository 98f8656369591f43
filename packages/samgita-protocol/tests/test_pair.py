"""Client-to-Server pair tests: every method of every group, over JSON bytes
both ways (tests/helpers.py ConnectionPair), with the FakeHost."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from helpers import EVENT, HOST_ID, ConnectionPair, raw_request, wire
from samgita_protocol import (
    UNSET,
    ApprovalRequestResult,
    Client,
    ErrorCode,
    ErrorReceived,
    Event,
    Notification,
    NotificationReceived,
    ProtocolError,
    RequestReceived,
    Response,
    ResponseReceived,
    Server,
    ThreadStartedParams,
)
from samgita_protocol.testing import FakeHost

INPUT = [{"type": "text", "text": "hello world"}]
ACTION = {"kind": "shell.exec", "description": "rm -rf build"}
FUTURE = "2099-01-01T00:00:00Z"


def test_initialize_negotiates_version_intersection_connection_and_host_ids() -> None:
    pair = ConnectionPair(
        capabilities=["project_events.v1", "sessions.v1"],
        server_options={"connection_id": "conn-7"},
    )
    result = pair.init_result
    assert result.version == "1.0"
    assert sorted(result.capabilities) == ["project_events.v1", "sessions.v1"]
    assert result.host_id == HOST_ID
    assert result.connection_id == "conn-7"
    assert pair.server.state == "ready"
    assert pair.server.capabilities == {"project_events.v1", "sessions.v1"}
    assert pair.client.connection_id == "conn-7"


def test_intersection_ignores_groups_the_server_does_not_advertise() -> None:
    host = FakeHost(capabilities=["sessions.v1"])
    pair = ConnectionPair(
        host,
        client_options={"capabilities": ["sessions.v1", "approvals.v1"]},
        server_options={"capabilities": ["sessions.v1"]},
    )
    assert pair.init_result.capabilities == ["sessions.v1"]
    assert pair.server.capabilities == {"sessions.v1"}


def test_project_events_receive_retry_conflict_status_report() -> None:
    pair = ConnectionPair()
    r = pair.result("project/event.receive", {"event": EVENT}, command_id="k1")
    assert (r.event_id, r.delivery_attempt_id, r.acceptance, r.processing_status) == (
        "e1",
        "a1",
        "received",
        "pending",
    )

    retry = Event(**EVENT).retry("a2")
    r = pair.result("project/event.receive", {"event": retry}, command_id="k2")
    assert r.delivery_attempt_id == "a2"
    assert pair.fake.attempts["e1"] == ["a1", "a2"]
    assert len(pair.fake.events) == 1

    changed = {**EVENT, "payload": {"title": "changed"}}
    error = pair.error("project/event.receive", {"event": changed}, command_id="k3")
    assert (error.code, error.origin) == (ErrorCode.CONFLICT, "remote")
    assert error.data == {"event_id": "e1"}

    assert (
        pair.result("project/event.status", {"event_id": "e1"}).processing_status
        == "pending"
    )
    assert (
        pair.error("project/event.status", {"event_id": "nope"}).code
        == ErrorCode.NOT_FOUND
    )

    report = {"event_id": "e1", "outcome": "completed", "summary": "done"}
    r = pair.result("project/event.report", report, command_id="k4")
    assert (r.event_id, r.report_status, r.management_acceptance) == (
        "e1",
        "recorded",
        "not_requested",
    )
    # The same report again is recorded again; a different one conflicts.
    assert (
        pair.result("project/event.report", report, command_id="k5").report_status
        == "recorded"
    )
    other = {**report, "summary": "other"}
    assert (
        pair.error("project/event.report", other, command_id="k6").code
        == ErrorCode.CONFLICT
    )
    assert (
        pair.result("project/event.status", {"event_id": "e1"}).processing_status
        == "completed"
    )

    pair.result(
        "project/event.receive", {"event": {**EVENT, "event_id": "e2"}}, command_id="k7"
    )
    managed = {
        "event_id": "e2",
        "outcome": "failed",
        "summary": "no",
        "management_request": {"transition": "task.close"},
    }
    assert (
        pair.result(
            "project/event.report", managed, command_id="k8"
        ).management_acceptance
        == "rejected"
    )
    unknown = {"event_id": "nope", "outcome": "failed", "summary": "x"}
    assert (
        pair.error("project/event.report", unknown, command_id="k9").code
        == ErrorCode.NOT_FOUND
    )


def test_sessions_thread_and_turn_lifecycle_with_streamed_items() -> None:
    pair = ConnectionPair()
    thread = pair.result("thread/start", {}, command_id="k1").thread
    assert (thread.thread_id, thread.status, thread.created_at) == (
        "thread-1",
        "idle",
        "2026-01-01T00:00:00Z",
    )
    started = pair.client.drain()
    assert [n.method for n in started] == ["thread/started"]
    assert started[0].params == ThreadStartedParams(thread=thread)
    pair.client.ack_cursor("fake-stream", 1)

    turn = pair.result(
        "turn/start", {"thread_id": thread.thread_id, "input": INPUT}, command_id="k2"
    ).turn
    assert (turn.thread_id, turn.status) == (thread.thread_id, "in_progress")
    events = pair.client.drain()
    assert [n.method for n in events] == [
        "turn/started",
        "item/started",
        "item/delta",
        "item/delta",
        "item/delta",
        "item/completed",
        "turn/completed",
    ]
    assert [n.cursor for n in events] == list(range(2, 9))
    assert {n.stream_id for n in events} == {"fake-stream"}
    deltas = "".join(n.params.delta for n in events if n.method == "item/delta")
    assert deltas == "echo: hello world" == events[5].params.item.text
    assert events[-1].params.turn.status == "completed"
    pair.client.ack_cursor("fake-stream", 8)

    read = pair.result("thread/read", {"thread_id": thread.thread_id})
    assert read.thread.thread_id == thread.thread_id
    assert [(t.turn_id, t.status) for t in read.turns] == [(turn.turn_id, "completed")]
    resumed = pair.result(
        "thread/resume", {"thread_id": thread.thread_id}, command_id="k3"
    )
    assert resumed.thread.thread_id == thread.thread_id

    interrupt = {"thread_id": thread.thread_id, "turn_id": turn.turn_id}
    r = pair.result("turn/interrupt", interrupt, command_id="k4")
    assert r.interrupt_status == "already_finished"
    steer = {**interrupt, "input": INPUT}
    assert pair.error("turn/steer", steer, command_id="k5").code == ErrorCode.NOT_FOUND
    assert pair.error("thread/read", {"thread_id": "nope"}).code == ErrorCode.NOT_FOUND
    assert (
        pair.error(
            "turn/start", {"thread_id": "nope", "input": INPUT}, command_id="k6"
        ).code
        == ErrorCode.NOT_FOUND
    )
    assert (
        pair.error(
            "turn/interrupt",
            {"thread_id": thread.thread_id, "turn_id": "nope"},
            command_id="k7",
        ).code
        == ErrorCode.NOT_FOUND
    )


@pytest.mark.parametrize("status", ["interrupted", "requested"])
def test_turn_steer_and_interrupt_of_an_in_progress_turn(status: Any) -> None:
    host = FakeHost(complete_turns=False, interrupt_status=status)
    pair = ConnectionPair(host)
    thread = pair.result("thread/start", {}, command_id="k1").thread
    turn = pair.result(
        "turn/start", {"thread_id": thread.thread_id, "input": INPUT}, command_id="k2"
    ).turn
    assert [n.method for n in pair.client.drain()] == ["thread/started", "turn/started"]
    ids = {"thread_id": thread.thread_id, "turn_id": turn.turn_id}
    steered = pair.result(
        "turn/steer",
        {**ids, "input": [{"type": "text", "text": "more"}]},
        command_id="k3",
    ).turn
    assert steered.status == "in_progress"
    assert [n.method for n in pair.client.drain()] == [
        "item/started",
        "item/delta",
        "item/delta",
        "item/completed",
    ]
    r = pair.result("turn/interrupt", ids, command_id="k4")
    assert (r.thread_id, r.turn_id, r.interrupt_status) == (
        thread.thread_id,
        turn.turn_id,
        status,
    )
    # Separate lifecycle evidence establishes the end of the turn.
    completed = pair.client.drain()
    assert [n.method for n in completed] == ["turn/completed"]
    assert completed[0].params.turn.status == "interrupted"
    again = pair.result("turn/interrupt", ids, command_id="k5")
    assert again.interrupt_status == "already_finished"


def test_streaming_resume_pages_are_ingested_drained_and_acknowledged() -> None:
    host = FakeHost()
    for i in range(300):
        host.replay.append(_delta(i))
    pair = ConnectionPair(host)
    cursor, seen = 0, []
    while True:
        page = pair.result(
            "stream/resume", {"stream_id": "fake-stream", "cursor": cursor}
        )
        assert page.stream_id == "fake-stream"
        assert pair.client.receive_replay(page) == len(page.events)
        drained = pair.client.drain()
        seen.extend(n.cursor for n in drained)
        if drained:
            pair.client.ack_cursor("fake-stream", drained[-1].cursor)
        cursor = page.cursor
        if not page.has_more:
            break
    assert seen == list(range(1, 301))
    assert pair.client.checkpoints() == {"fake-stream": 300}
    assert pair.client.host_id == HOST_ID
    empty = pair.result("stream/resume", {"stream_id": "fake-stream", "cursor": 300})
    assert (empty.events, empty.cursor, empty.has_more) == ([], 300, False)
    error = pair.error("stream/resume", {"stream_id": "fake-stream", "cursor": 301})
    assert error.code == ErrorCode.INVALID_CURSOR
    assert pair.error("stream/resume", {"stream_id": "other", "cursor": 0}).code == (
        ErrorCode.NOT_FOUND
    )


def test_ack_takes_a_delivered_sequenced_notification() -> None:
    host = FakeHost()
    for i in range(3):
        host.replay.append(_delta(i))
    pair = ConnectionPair(host)
    page = pair.result("stream/resume", {"stream_id": "fake-stream", "cursor": 0})
    pair.client.receive_replay(page)
    first, second, third = pair.client.drain()
    pair.client.ack(second)  # through cursor 2: the first is processed too
    assert pair.client.checkpoints() == {"fake-stream": 2}
    pair.client.ack(first)  # already processed: a no-op
    assert pair.client.checkpoints() == {"fake-stream": 2}
    ephemeral = msgspec.structs.replace(third, stream_id=UNSET, cursor=UNSET)
    with pytest.raises(ValueError, match="expected notification to be sequenced"):
        pair.client.ack(ephemeral)
    with pytest.raises(TypeError, match="notification"):
        pair.client.ack(("fake-stream", 3))  # type: ignore[arg-type]
    beyond = msgspec.structs.replace(third, cursor=4)  # never delivered
    with pytest.raises(ProtocolError) as caught:
        pair.client.ack(beyond)
    assert caught.value.code == ErrorCode.INVALID_CURSOR
    assert pair.client.checkpoints() == {"fake-stream": 2}  # nothing moved
    pair.client.ack(third)
    assert pair.client.checkpoints() == {"fake-stream": 3}


def test_streaming_resume_after_eviction_is_replay_gap() -> None:
    host = FakeHost(max_events=10)
    for i in range(20):
        host.replay.append(_delta(i))
    pair = ConnectionPair(host)
    error = pair.error("stream/resume", {"stream_id": "fake-stream", "cursor": 0})
    assert error.code == ErrorCode.REPLAY_GAP
    page = pair.result("stream/resume", {"stream_id": "fake-stream", "cursor": 10})
    assert [n.cursor for n in page.events] == list(range(11, 21))


def test_resume_on_a_new_connection_from_the_persisted_checkpoint() -> None:
    host = FakeHost()
    first = ConnectionPair(host)
    thread = first.result("thread/start", {}, command_id="k1").thread
    first.result(
        "turn/start", {"thread_id": thread.thread_id, "input": INPUT}, command_id="k2"
    )
    drained = first.client.drain(max=3)
    first.client.ack_cursor("fake-stream", drained[-1].cursor)
    checkpoints = first.client.checkpoints()
    first.client.disconnect()
    first.server.disconnect()

    # A process restart: only the checkpoints survive; the host keeps its log.
    second = ConnectionPair(
        host, client_options={"host_id": HOST_ID, "checkpoints": checkpoints}
    )
    page = second.result("stream/resume", {"stream_id": "fake-stream", "cursor": 3})
    second.client.receive_replay(page)
    assert [n.cursor for n in second.client.drain()] == list(range(4, 9))


def test_approvals_client_to_server_is_denied() -> None:
    pair = ConnectionPair()
    params = {"approval_id": "ap1", "action": ACTION, "deadline": FUTURE}
    r = pair.result("approval/request", params)
    assert (r.approval_id, r.decision) == ("ap1", "deny")
    assert r.action.kind == "shell.exec"


def test_approvals_server_to_client_bound_reply_reaches_handle_response() -> None:
    pair = ConnectionPair()
    sent = pair.fake.request_approval(
        pair.server, approval_id="ap2", action=ACTION, deadline=FUTURE, now=0.0
    )
    request = sent.message
    assert request.id == "s1-1"
    assert pair.server.outstanding == {"s1-1": request}
    [effect] = pair.to_client(sent)
    assert isinstance(effect, RequestReceived)
    incoming = effect.request

    with pytest.raises(ProtocolError) as mismatch:
        pair.client.reply(
            incoming, {"approval_id": "other", "action": ACTION, "decision": "approve"}
        )
    assert mismatch.value.code == ErrorCode.APPROVAL_MISMATCH
    late = datetime(2100, 1, 1, tzinfo=UTC)
    with pytest.raises(ProtocolError) as expired:
        pair.client.reply(
            incoming,
            {"approval_id": "ap2", "action": ACTION, "decision": "approve"},
            now=late,
        )
    assert expired.value.code == ErrorCode.APPROVAL_EXPIRED

    reply = pair.client.reply(
        incoming, {"approval_id": "ap2", "action": ACTION, "decision": "approve"}
    )
    assert pair.to_server(reply) == []
    [(answered, outcome)] = pair.fake.responses
    assert answered == request
    assert isinstance(outcome, ApprovalRequestResult) and outcome.decision == "approve"
    assert pair.fake.decisions() == {"ap2": outcome}
    assert pair.server.outstanding == {}
    # An identical duplicate is suppressed; different content conflicts.
    assert pair.to_server(reply) == []
    assert len(pair.fake.responses) == 1
    denial = Response(
        id=reply.message.id,
        correlation_id=reply.message.correlation_id,
        result=ApprovalRequestResult(
            approval_id="ap2", action=incoming.params.action, decision="deny"
        ),
    )
    with pytest.raises(ProtocolError) as conflicting:
        pair.to_server(denial)
    assert (conflicting.value.code, conflicting.value.origin) == (
        ErrorCode.CONFLICTING_RESPONSE,
        "peer",
    )


def test_approvals_server_side_checks_the_peer_binding_and_deadline() -> None:
    pair = ConnectionPair()
    request = pair.fake.request_approval(
        pair.server,
        approval_id="ap3",
        action=ACTION,
        deadline="2030-01-01T00:00:00Z",
        now=0.0,
    ).message
    # A peer that answers with another approval id (built by hand, since the
    # Client refuses to).
    bad = Response(
        id=request.id,
        correlation_id=request.correlation_id,
        result=ApprovalRequestResult(
            approval_id="other", action=request.params.action, decision="approve"
        ),
    )
    assert pair.to_server(bad) == []
    [(_, outcome)] = pair.fake.responses
    assert isinstance(outcome, ProtocolError)
    assert (outcome.code, outcome.origin) == (ErrorCode.APPROVAL_MISMATCH, "peer")

    request = pair.fake.request_approval(
        pair.server,
        approval_id="ap4",
        action=ACTION,
        deadline="2030-01-01T00:00:00Z",
        now=0.0,
    ).message
    late = Response(
        id=request.id,
        correlation_id=request.correlation_id,
        result=ApprovalRequestResult(
            approval_id="ap4", action=request.params.action, decision="approve"
        ),
    )
    assert pair.to_server(late, now=datetime(2030, 1, 1, tzinfo=UTC)) == []
    outcome = pair.fake.responses[-1][1]
    assert (outcome.code, outcome.origin) == (ErrorCode.APPROVAL_EXPIRED, "peer")


def test_approvals_server_to_client_typed_error_and_end_of_wait() -> None:
    pair = ConnectionPair(server_options={"request_timeout": 5})
    first = pair.fake.request_approval(
        pair.server, approval_id="ap5", action=ACTION, deadline=FUTURE, now=0.0
    )
    [effect] = pair.to_client(first)
    refusal = ProtocolError(ErrorCode.UNSUPPORTED, "no human here")
    assert pair.to_server(pair.client.reply_error(effect.request, refusal)) == []
    outcome = pair.fake.responses[-1][1]
    assert outcome == ProtocolError(
        ErrorCode.UNSUPPORTED, "no human here", origin="remote"
    )

    second = pair.fake.request_approval(
        pair.server, approval_id="ap6", action=ACTION, deadline=FUTURE, now=0.0
    )
    [effect] = pair.to_client(second)
    assert pair.server.expire(4.9) == []
    assert pair.server.expire(5.0) == [second.message]
    outcome = pair.fake.responses[-1][1]
    assert (outcome.code, outcome.origin) == (ErrorCode.TIMEOUT, "local")
    late = pair.client.reply(
        effect.request, {"approval_id": "ap6", "action": ACTION, "decision": "deny"}
    )
    with pytest.raises(ProtocolError) as exc:
        pair.to_server(late)
    assert exc.value.code == ErrorCode.CONFLICTING_RESPONSE
    assert len(pair.fake.responses) == 2

    third = pair.fake.request_approval(
        pair.server, approval_id="ap7", action=ACTION, deadline=FUTURE, now=0.0
    )
    assert pair.server.disconnect() == [third.message]
    outcome = pair.fake.responses[-1][1]
    assert (outcome.code, outcome.origin) == (ErrorCode.DISCONNECTED, "local")
    with pytest.raises(ProtocolError) as closed:
        pair.to_server(raw_request("thread/read", {"thread_id": "t"}))
    assert closed.value.code == ErrorCode.DISCONNECTED
    assert pair.server.disconnect() == []


def test_cancellation_both_directions() -> None:
    pair = ConnectionPair()
    r = pair.result("request/cancel", {"request_id": "c1-9"})
    assert (r.request_id, r.cancel_status) == ("c1-9", "already_finished")

    cancel = pair.server.request(
        "request/cancel", {"request_id": "c1-2", "reason": "stop"}
    )
    [effect] = pair.to_client(cancel)
    assert isinstance(effect, RequestReceived)
    reply = pair.client.reply(
        effect.request, {"request_id": "c1-2", "cancel_status": "requested"}
    )
    assert pair.to_server(reply) == []
    request, outcome = pair.fake.responses[-1]
    assert request == cancel.message
    assert (outcome.request_id, outcome.cancel_status) == ("c1-2", "requested")


def test_methods_outside_negotiated_groups_fail_before_sending_and_without_the_handler() -> (
    None
):
    pair = ConnectionPair(capabilities=["sessions.v1"])
    with pytest.raises(ProtocolError) as exc:
        pair.client.request("project/event.status", {"event_id": "e"})
    assert exc.value.code == ErrorCode.UNSUPPORTED

    host = FakeHost()
    server = Server(host, capabilities=host.capabilities)
    client = Client(capabilities=["sessions.v1"])
    init = client.request("connection/initialize", {})
    client.receive(wire(server.receive(wire(init))[0]))
    [sent] = server.receive(raw_request("project/event.status", {"event_id": "e"}))
    assert sent.message.error.code == "unsupported"
    assert host.events == {} and host.responses == []


def test_nothing_but_initialize_before_initialization_on_both_sides() -> None:
    pair = ConnectionPair(initialize=False)
    with pytest.raises(ProtocolError) as exc:
        pair.client.request("thread/read", {"thread_id": "t"})
    assert exc.value.code == ErrorCode.NOT_INITIALIZED
    [sent] = pair.to_server(raw_request("thread/read", {"thread_id": "t"}))
    assert sent.message.error.code == "not_initialized"
    with pytest.raises(ProtocolError) as exc:
        pair.server.request("request/cancel", {"request_id": "x"})
    assert exc.value.code == ErrorCode.NOT_INITIALIZED
    with pytest.raises(ProtocolError) as exc:
        pair.server.notify("item/delta", _delta(0).params)
    assert exc.value.code == ErrorCode.NOT_INITIALIZED

    pair.initialize()
    [again] = pair.to_server(
        raw_request(
            "connection/initialize", {"versions": ["1.0"], "capabilities": []}, id="i2"
        )
    )
    assert again.message.error.code == "already_initialized"


def test_required_capabilities_the_host_lacks_fail_initialization() -> None:
    host = FakeHost(capabilities=["sessions.v1"])
    pair = ConnectionPair(
        host,
        client_options={
            "capabilities": ["sessions.v1", "approvals.v1"],
            "required_capabilities": ["approvals.v1"],
        },
        server_options={"capabilities": ["sessions.v1"]},
        initialize=False,
    )
    [effect] = pair.call("connection/initialize", {})
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (
        ErrorCode.MISSING_REQUIRED_CAPABILITY,
        "remote",
    )
    assert effect.error.data == {"missing": ["approvals.v1"]}
    assert pair.server.state == "new"
    # A failed initialize leaves both sides new: a different offer succeeds.
    result = pair.initialize(
        {"capabilities": ["sessions.v1"], "required_capabilities": []}
    )
    assert result.capabilities == ["sessions.v1"]


def test_no_common_version() -> None:
    pair = ConnectionPair(initialize=False)
    [sent] = pair.to_server(
        raw_request("connection/initialize", {"versions": ["2.0"], "capabilities": []})
    )
    response = sent.message
    assert response.error.code == "no_common_version"
    assert response.error.data == {"supported": ["1.0"]}
    assert pair.server.state == "new"


def test_notifications_from_client_to_server_reach_the_handler() -> None:
    pair = ConnectionPair()
    note = pair.client.notify("item/delta", _delta(0).params, stream_id="up", cursor=1)
    assert pair.to_server(note) == []
    assert pair.fake.notifications == [note.message]
    assert pair.server.positions() == {"up": 1}
    ephemeral = pair.client.notify("thread/closed", {"thread_id": "t"})
    assert pair.to_server(ephemeral) == []
    assert pair.fake.notifications[-1] == ephemeral.message


def test_client_ephemeral_notifications_from_server_notify() -> None:
    pair = ConnectionPair()
    note = pair.server.notify("thread/closed", {"thread_id": "thread-9"})
    [effect] = pair.to_client(note)
    assert isinstance(effect, NotificationReceived)
    assert effect.notification == note.message


def _delta(i: int) -> Notification:
    from samgita_protocol import ItemDeltaParams

    return Notification(
        method="item/delta",
        params=ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta=f"d{i}"),
    )


def test_effects_are_response_received_for_every_plain_call() -> None:
    pair = ConnectionPair()
    effects = pair.call("request/cancel", {"request_id": "x"})
    assert [type(e) for e in effects] == [ResponseReceived]


def test_streaming_resume_pages_of_large_events_fit_in_one_message() -> None:
    from samgita_protocol import ItemDeltaParams
    from samgita_protocol._replay import PAGE_OVERHEAD

    host = FakeHost()
    for i in range(130):
        host.replay.append(
            Notification(
                method="item/delta",
                params=ItemDeltaParams(
                    thread_id="t", turn_id="u", item_id="i", delta=f"{i:05}" * 2000
                ),
            )
        )
    pair = ConnectionPair(host)
    cursor, seen, pages = 0, [], 0
    while True:
        page = pair.result(
            "stream/resume", {"stream_id": "fake-stream", "cursor": cursor}
        )
        pages += 1
        assert page.events
        assert pair.client.receive_replay(page) == len(page.events)
        drained = pair.client.drain()
        seen.extend(n.cursor for n in drained)
        pair.client.ack_cursor("fake-stream", drained[-1].cursor)
        cursor = page.cursor
        assert page.has_more == (cursor < 130)
        if not page.has_more:
            break
    assert seen == list(range(1, 131))
    assert pages == 2
    too_big = Notification(
        method="item/delta",
        params=ItemDeltaParams(
            thread_id="t",
            turn_id="u",
            item_id="i",
            delta="x" * (1_048_576 - PAGE_OVERHEAD),
        ),
    )
    with pytest.raises(ProtocolError) as raised:
        host.replay.append(too_big)
    assert raised.value.code == ErrorCode.LIMIT_EXCEEDED
    assert host.replay.last_cursor == 130


def test_approval_binding_compares_exact_json_content() -> None:
    # Python's True == 1 == 1.0; the bound action is compared as JSON.
    pair = ConnectionPair()
    flagged = {**ACTION, "details": {"recursive": True}}
    sent = pair.fake.request_approval(
        pair.server, approval_id="ap9", action=flagged, deadline=FUTURE, now=0.0
    )
    request = sent.message
    [effect] = pair.to_client(sent)
    assert isinstance(effect, RequestReceived)
    numeric = {**ACTION, "details": {"recursive": 1}}
    with pytest.raises(ProtocolError) as mismatch:
        pair.client.reply(
            effect.request,
            {"approval_id": "ap9", "action": numeric, "decision": "approve"},
        )
    assert (mismatch.value.code, mismatch.value.origin) == (
        ErrorCode.APPROVAL_MISMATCH,
        "local",
    )
    # A peer that answers with the numeric action anyway (built by hand).
    raw = (
        b'{"schema_version":"1.0","type":"response","id":"%s","correlation_id":"%s",'
        b'"result":{"approval_id":"ap9","action":{"kind":"shell.exec",'
        b'"description":"rm -rf build","details":{"recursive":1}},"decision":"approve"}}'
    ) % (request.id.encode(), request.correlation_id.encode())
    assert pair.server.receive(raw) == []
    [(_, outcome)] = pair.fake.responses
    assert isinstance(outcome, ProtocolError)
    assert (outcome.code, outcome.origin) == (ErrorCode.APPROVAL_MISMATCH, "peer")
