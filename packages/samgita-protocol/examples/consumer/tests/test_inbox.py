"""The inbox behind a samgita_protocol Server, every message crossing as JSON bytes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from samgita_protocol import (
    Client,
    ErrorCode,
    ErrorReceived,
    Event,
    Outgoing,
    ResponseReceived,
    Server,
)

from samgita_protocol_consumer_example import Inbox

EVENT = Event(
    event_id="evt-1",
    delivery_attempt_id="att-1",
    created_at="2026-01-01T00:00:00Z",
    correlation_id="corr-1",
    project_ref="proj-1",
    event_type="task.created",
    payload={"title": "Write the consumer example"},
)
GROUPS = ["project_events.v1"]


class Connection:
    """A Client and a Server hosting ``inbox``, connected over JSON bytes."""

    def __init__(self, inbox: Inbox) -> None:
        self.client = Client(capabilities=GROUPS)
        self.server = Server(inbox, capabilities=GROUPS, host_id="consumer-1")
        [effect] = self.call("connection/initialize", {})
        assert isinstance(effect, ResponseReceived)
        self.init_result = effect.result

    def send(self, request: Outgoing) -> list[Any]:
        effects: list[Any] = []
        for reply in self.server.receive(request.data):
            effects.extend(self.client.receive(reply.data))
        return effects

    def call(self, method: str, params: Any, **options: Any) -> list[Any]:
        return self.send(self.client.request(method, params, **options))


def test_initialize_negotiates_project_events_with_the_inbox_host() -> None:
    connection = Connection(Inbox())
    assert connection.init_result.host_id == "consumer-1"
    assert connection.client.capabilities == {"project_events.v1"}


def test_an_event_is_received_and_stored_once() -> None:
    inbox = Inbox()
    connection = Connection(inbox)
    [effect] = connection.call(
        "project/event.receive", {"event": EVENT}, command_id="cmd-1"
    )
    assert isinstance(effect, ResponseReceived)
    result = effect.result
    assert (result.event_id, result.delivery_attempt_id) == ("evt-1", "att-1")
    assert (result.acceptance, result.processing_status) == ("received", "pending")
    assert inbox.events == {"evt-1": EVENT}
    assert inbox.attempts == {"evt-1": ["att-1"]}


def test_a_retry_keeps_the_identity_and_is_deduplicated() -> None:
    inbox = Inbox()
    connection = Connection(inbox)
    connection.call("project/event.receive", {"event": EVENT}, command_id="cmd-1")
    retry = EVENT.retry("att-2")
    [effect] = connection.call(
        "project/event.receive", {"event": retry}, command_id="cmd-2"
    )
    assert effect.result.delivery_attempt_id == "att-2"
    assert len(inbox.events) == 1
    assert inbox.attempts["evt-1"] == ["att-1", "att-2"]

    changed = Event(
        **{
            **{f: getattr(retry, f) for f in retry.__struct_fields__},
            "payload": {"title": "something else"},
        }
    )
    [effect] = connection.call(
        "project/event.receive", {"event": changed}, command_id="cmd-3"
    )
    assert isinstance(effect, ErrorReceived)
    assert (effect.error.code, effect.error.origin) == (ErrorCode.CONFLICT, "remote")
    assert inbox.events == {"evt-1": EVENT}


def test_the_same_command_again_is_answered_from_its_receipt_not_applied_twice() -> (
    None
):
    inbox = Inbox()
    connection = Connection(inbox)
    report = {"event_id": "evt-1", "outcome": "completed", "summary": "done"}
    connection.call("project/event.receive", {"event": EVENT}, command_id="cmd-1")
    [first] = connection.call("project/event.report", report, command_id="cmd-2")
    # The Server handles an identical request again; so does a reconnected
    # client delivering the same command (same command_id) once more.
    request = connection.client.request(
        "project/event.report", report, command_id="cmd-2"
    )
    [again] = connection.send(request)
    assert again.result == first.result
    assert inbox.applied == ["cmd-1", "cmd-2"]
    other = {**report, "summary": "changed"}
    [conflict] = connection.call("project/event.report", other, command_id="cmd-2")
    assert conflict.error.code == ErrorCode.CONFLICT
    assert conflict.error.data == {"command_id": "cmd-2"}


def test_reports_status_and_management_acceptance() -> None:
    inbox = Inbox()
    connection = Connection(inbox)
    connection.call("project/event.receive", {"event": EVENT}, command_id="cmd-1")
    report = {"event_id": "evt-1", "outcome": "completed", "summary": "done"}
    [effect] = connection.call("project/event.report", report, command_id="cmd-2")
    assert (effect.result.report_status, effect.result.management_acceptance) == (
        "recorded",
        "not_requested",
    )
    [status] = connection.call("project/event.status", {"event_id": "evt-1"})
    assert status.result.processing_status == "completed"
    managed = {**report, "management_request": {"transition": "task.close"}}
    [conflict] = connection.call("project/event.report", managed, command_id="cmd-3")
    assert conflict.error.code == ErrorCode.CONFLICT
    assert conflict.error.data == {"event_id": "evt-1"}
    [again] = connection.call("project/event.report", report, command_id="cmd-4")
    assert again.result.report_status == "recorded"  # the same report again
    other = msgspec.structs.replace(EVENT, event_id="evt-2")
    connection.call("project/event.receive", {"event": other}, command_id="cmd-5")
    managed = {**managed, "event_id": "evt-2"}
    [effect] = connection.call("project/event.report", managed, command_id="cmd-6")
    assert effect.result.management_acceptance == "rejected"


@pytest.mark.parametrize(
    ("method", "params", "options"),
    [
        ("project/event.status", {"event_id": "nope"}, {}),
        (
            "project/event.report",
            {"event_id": "nope", "outcome": "failed", "summary": "no"},
            {"command_id": "cmd-9"},
        ),
    ],
)
def test_unknown_events_are_not_found(method: str, params: Any, options: Any) -> None:
    [effect] = Connection(Inbox()).call(method, params, **options)
    assert effect.error.code == ErrorCode.NOT_FOUND
