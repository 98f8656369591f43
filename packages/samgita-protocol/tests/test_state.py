"""The connection states of both roles are one table (samgita_protocol._state
holds it; these tests read it through the public Client and Server)."""

from __future__ import annotations

import pytest

import samgita_protocol as sp
from helpers import ConnectionPair


def test_a_pair_moves_through_the_documented_states() -> None:
    pair = ConnectionPair(initialize=False)
    assert pair.client.state is sp.ConnectionState.NEW
    assert pair.server.state == "new"  # a str, as documented
    pair.initialize()
    assert pair.client.state is sp.ConnectionState.READY
    assert pair.server.state is sp.ConnectionState.READY
    pair.client.disconnect()
    pair.server.disconnect()
    assert pair.client.state is sp.ConnectionState.DISCONNECTED
    assert pair.server.state is sp.ConnectionState.DISCONNECTED
    pair.client.reconnect()
    assert pair.client.state is sp.ConnectionState.NEW


@pytest.mark.parametrize(
    ("act", "code"),
    [
        (lambda c: c.request("thread/read", {"thread_id": "t"}), "not_initialized"),
        (lambda c: c.notify("item/delta", {}), "not_initialized"),
        (lambda c: c.reconnect(), "not_initialized"),
    ],
)
def test_a_new_client_refuses_what_its_state_does_not_accept(act, code) -> None:  # type: ignore[no-untyped-def]
    client = ConnectionPair(initialize=False).client
    with pytest.raises(sp.ProtocolError) as err:
        act(client)
    assert (err.value.code, err.value.origin) == (code, "local")
    assert client.state is sp.ConnectionState.NEW  # nothing changed


def test_a_closed_connection_refuses_everything_as_disconnected() -> None:
    pair = ConnectionPair()
    pair.client.disconnect()
    pair.server.disconnect()
    for act in (
        lambda: pair.client.request("thread/read", {"thread_id": "t"}),
        lambda: pair.client.receive(b"{}"),
        lambda: pair.server.receive(b"{}"),
        lambda: pair.server.notify("thread/closed", {"thread_id": "t"}),
    ):
        with pytest.raises(sp.ProtocolError) as err:
            act()
        assert err.value.code == "disconnected"


def test_initialize_twice_is_already_initialized() -> None:
    pair = ConnectionPair()
    with pytest.raises(sp.ProtocolError) as err:
        pair.client.request("connection/initialize", {})
    assert err.value.code == "already_initialized"
