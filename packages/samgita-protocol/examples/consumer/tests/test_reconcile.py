"""Reconciling uncertain commands after a disconnect: ask the host, never re-send blindly."""

from __future__ import annotations

from typing import Any

import pytest
from samgita_protocol import (
    Client,
    ErrorCode,
    ErrorReceived,
    Event,
    Outgoing,
    Request,
    ResponseReceived,
    Server,
)

from samgita_protocol_consumer_example import Inbox, Reconciler, Resolution, redelivery

EVENT = Event(
    event_id="evt-1",
    delivery_attempt_id="att-1",
    created_at="2026-01-01T00:00:00Z",
    correlation_id="corr-1",
    event_type="task.created",
    payload={"n": 1},
)
GROUPS = ["project_events.v1"]


def connect(client: Client, inbox: Inbox) -> Server:
    """A fresh Server for ``inbox`` and an initialized connection to it."""
    server = Server(inbox, capabilities=GROUPS, host_id="consumer-1")
    init = client.request("connection/initialize", {})
    [response] = server.receive(init.data)
    [effect] = client.receive(response.data)
    assert isinstance(effect, ResponseReceived)
    return server


def deliver(client: Client, server: Server, request: Outgoing) -> list[Any]:
    effects: list[Any] = []
    for reply in server.receive(request.data):
        effects.extend(client.receive(reply.data))
    return effects


def lose_the_connection(client: Client, server: Server) -> list[Any]:
    effects = client.disconnect()
    server.disconnect()
    client.reconnect()
    return effects


@pytest.mark.parametrize("reached_the_host", [True, False])
def test_an_uncertain_delivery_is_resolved_by_asking_the_host(
    reached_the_host: bool,
) -> None:
    inbox = Inbox()
    client = Client(capabilities=GROUPS)
    server = connect(client, inbox)
    request = client.request(
        "project/event.receive", {"event": EVENT}, command_id="cmd-1"
    )
    if reached_the_host:
        server.receive(request.data)  # applied, but the response is lost
    [ended] = lose_the_connection(client, server)
    assert isinstance(ended, ErrorReceived)
    assert ended.error.code == ErrorCode.AMBIGUOUS_DISCONNECT
    command = request.message
    assert dict(client.uncertain) == {command.id: command}

    server = connect(client, inbox)
    reconciler = Reconciler(client)
    [query] = reconciler.queries()
    assert reconciler.queries() == []  # already asking
    resolutions = [reconciler.settle(e) for e in deliver(client, server, query)]
    expected = "applied" if reached_the_host else "not_applied"
    assert resolutions == [Resolution(command, expected)]
    assert dict(client.uncertain) == {}
    assert reconciler.asking == 0

    if not reached_the_host:
        again = redelivery(
            client, resolutions[0], delivery_attempt_id="att-2", command_id="cmd-2"
        )
        [effect] = deliver(client, server, again)
        assert effect.result.delivery_attempt_id == "att-2"
    assert list(inbox.events) == ["evt-1"]
    assert len(inbox.applied) == 1


def test_an_uncertain_report_is_applied_once_the_host_recorded_an_outcome() -> None:
    inbox = Inbox()
    client = Client(capabilities=GROUPS)
    server = connect(client, inbox)
    deliver(
        client,
        server,
        client.request("project/event.receive", {"event": EVENT}, command_id="cmd-1"),
    )
    report = client.request(
        "project/event.report",
        {"event_id": "evt-1", "outcome": "completed", "summary": "done"},
        command_id="cmd-2",
    )
    server.receive(report.data)
    lose_the_connection(client, server)
    server = connect(client, inbox)
    reconciler = Reconciler(client)
    [query] = reconciler.queries()
    [resolution] = [reconciler.settle(e) for e in deliver(client, server, query)]
    assert resolution == Resolution(report.message, "applied")


@pytest.mark.parametrize("recorded", [None, "failed"])
def test_an_uncertain_report_is_not_applied_unless_its_own_outcome_is_recorded(
    recorded: str | None,
) -> None:
    inbox = Inbox()
    client = Client(capabilities=GROUPS)
    server = connect(client, inbox)
    deliver(
        client,
        server,
        client.request("project/event.receive", {"event": EVENT}, command_id="cmd-1"),
    )
    if recorded is not None:  # another report got there first
        deliver(
            client,
            server,
            client.request(
                "project/event.report",
                {"event_id": "evt-1", "outcome": recorded, "summary": "other"},
                command_id="cmd-0",
            ),
        )
    report = client.request(
        "project/event.report",
        {"event_id": "evt-1", "outcome": "completed", "summary": "done"},
        command_id="cmd-2",
    )  # never reaches the host
    lose_the_connection(client, server)
    server = connect(client, inbox)
    reconciler = Reconciler(client)
    [query] = reconciler.queries()
    [resolution] = [reconciler.settle(e) for e in deliver(client, server, query)]
    assert resolution == Resolution(report.message, "not_applied")


def test_a_query_that_ends_without_an_answer_resolves_nothing() -> None:
    inbox = Inbox()
    client = Client(capabilities=GROUPS)
    server = connect(client, inbox)
    client.request("project/event.receive", {"event": EVENT}, command_id="cmd-1")
    lose_the_connection(client, server)
    server = connect(client, inbox)
    reconciler = Reconciler(client)
    [query] = reconciler.queries(now=0.0)
    [ended] = client.expire(1000.0)
    assert reconciler.settle(ended) is None
    assert len(client.uncertain) == 1
    [query] = reconciler.queries()  # ask again
    assert query.message.method == "project/event.status"


def test_redelivery_only_for_not_applied_deliveries() -> None:
    request = Request(
        id="c1-2",
        correlation_id="c1-2",
        method="project/event.receive",
        params=None,
        command_id="k",
    )
    with pytest.raises(ValueError):
        redelivery(
            Client(capabilities=GROUPS),
            Resolution(request, "applied"),
            delivery_attempt_id="a",
            command_id="k2",
        )
