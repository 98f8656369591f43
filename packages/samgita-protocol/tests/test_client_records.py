"""A Client given the caller's stores: ``Client(host_id=..., journal=...,
checkpoint_store=...)`` (requirement text: "the caller must durably journal
identities and reconcile them"; "Persist ``Client.checkpoints`` and restore
[them] after process restart").

Run against every backend of ``stores_backends.BACKENDS``; a "restart" is a
new Client over the stores opened again at the same location (for the
memory backend, the same objects: its records live as long as they do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from samgita_protocol import (
    Client,
    ErrorCode,
    ErrorReceived,
    ProtocolError,
    Request,
    ResponseReceived,
)
from samgita_protocol.stores import (
    CommandJournal,
    MemoryCheckpoints,
    MemoryJournal,
)
from stores_backends import BACKENDS, Stores, open_stores
from test_client import ALL, answer, delta, init_result, start_thread, thread_result

HOST = "h"


def ready(stores: Stores, **options: Any) -> Client:
    """A Client on ``stores`` for host ``h``, initialized."""
    client = Client(
        capabilities=ALL,
        host_id=HOST,
        journal=stores.journal,
        checkpoint_store=stores.checkpoints,
        **options,
    )
    init = client.request("connection/initialize", {}, now=0).message
    [effect] = client.receive(answer(init, result=init_result()))
    assert isinstance(effect, ResponseReceived)
    return client


class Restartable:
    """The stores of one backend at one location, opened again on
    :meth:`restart` (the memory backend keeps its objects)."""

    def __init__(self, backend: str, location: str) -> None:
        self.backend, self.location = backend, location
        self.stores = open_stores(backend, location)

    def restart(self) -> Stores:
        if BACKENDS[self.backend].durable:
            self.stores.close()
            self.stores = open_stores(self.backend, self.location)
        return self.stores


@pytest.fixture(params=list(BACKENDS))
def stores(
    request: pytest.FixtureRequest, locate: Callable[[str], str]
) -> Iterator[Restartable]:
    backend: str = request.param
    opened = Restartable(backend, locate(backend))
    yield opened
    opened.stores.close()


# -- the journal -------------------------------------------------------------------------


def test_a_mutation_is_journaled_before_it_is_handed_out_and_settled_by_its_response(
    stores: Restartable,
) -> None:
    client = ready(stores.stores)
    journal = stores.stores.journal
    sent = client.request("thread/start", {}, command_id="cmd-1", now=0)
    [entry] = journal.unsettled(HOST)
    assert (entry.request_id, entry.command_id, entry.method, entry.data) == (
        sent.message.id,
        "cmd-1",
        "thread/start",
        sent.data,
    )
    # Reads are not journaled.
    client.request("thread/read", {"thread_id": "t"}, now=0)
    assert len(journal.unsettled(HOST)) == 1
    assert isinstance(sent.message, Request)
    [effect] = client.receive(answer(sent.message, result=thread_result()))
    assert isinstance(effect, ResponseReceived)
    assert journal.unsettled(HOST) == []


def test_an_error_answer_settles_and_an_uncertain_answer_does_not(
    stores: Restartable,
) -> None:
    client = ready(stores.stores)
    journal = stores.stores.journal
    refused = start_thread(client, 1)
    client.receive(answer(refused, error={"code": "conflict", "message": "changed"}))
    failed = start_thread(client, 2)
    error = {"code": "internal_error", "message": "internal error"}
    [effect] = client.receive(answer(failed, error=error))
    assert isinstance(effect, ErrorReceived)
    # The host may have applied it before failing: held, and unsettled.
    assert client.uncertain == {failed.id: failed}
    assert [e.request_id for e in journal.unsettled(HOST)] == [failed.id]


def test_after_a_restart_unsettled_mutations_are_uncertain_and_never_sent(
    stores: Restartable,
) -> None:
    client = ready(stores.stores)
    pending = start_thread(client, 1)
    answered = start_thread(client, 2)
    client.receive(answer(answered, result=thread_result()))
    cut = start_thread(client, 3)
    client.disconnect()
    assert set(client.uncertain) == {pending.id, cut.id}
    # The process ends here; a new one opens the same stores.
    restarted = Client(
        capabilities=ALL,
        host_id=HOST,
        journal=stores.restart().journal,
    )
    assert restarted.uncertain == {pending.id: pending, cut.id: cut}
    assert restarted.uncertain_reason(pending.id) == "restart"
    assert restarted.pending == {}
    # Nothing is re-sent; new requests get ids of their own.
    init = restarted.request("connection/initialize", {}, now=0).message
    restarted.receive(answer(init, result=init_result()))
    fresh = start_thread(restarted, 4)
    assert fresh.id not in {pending.id, answered.id, cut.id}
    restarted.receive(answer(fresh, result=thread_result()))
    # Reconciling settles the journal: the next process holds only the rest.
    restarted.resolve_uncertain(pending.id, "applied")
    again = Client(capabilities=ALL, host_id=HOST, journal=stores.restart().journal)
    assert again.uncertain == {cut.id: cut}
    again.resolve_uncertain(cut.id, "not_applied")
    assert stores.stores.journal.unsettled(HOST) == []


def test_default_ids_never_repeat_across_restarts(stores: Restartable) -> None:
    first = ready(stores.stores)
    done = start_thread(first, 1)
    first.receive(answer(done, result=thread_result()))
    second = ready(stores.restart())
    # The journal keeps the first process's settled entry: the same default
    # id again would be refused by it (StoreConflict).
    fresh = start_thread(second, 2)
    assert fresh.id != done.id
    assert fresh.id.startswith("c") and "." in fresh.id


def test_a_journal_holding_more_than_the_bound_is_refused(
    stores: Restartable,
) -> None:
    client = ready(stores.stores)
    for n in range(3):
        start_thread(client, n)
    with pytest.raises(ValueError, match="max_uncertain_commands=2"):
        Client(
            capabilities=ALL,
            host_id=HOST,
            journal=stores.restart().journal,
            max_uncertain_commands=2,
        )
    restored = Client(
        capabilities=ALL,
        host_id=HOST,
        journal=stores.stores.journal,
        max_uncertain_commands=3,
    )
    assert len(restored.uncertain) == 3
    # The bound still holds: no room for another mutation.
    init = restored.request("connection/initialize", {}, now=0).message
    restored.receive(answer(init, result=init_result()))
    with pytest.raises(ProtocolError) as caught:
        start_thread(restored, 9)
    assert caught.value.code == ErrorCode.LIMIT_EXCEEDED


# -- a store that fails leaves the client as it was ------------------------------------------


class Failing:
    """Wraps a store; the methods named in ``failing`` raise ``OSError``."""

    def __init__(self, inner: Any, *failing: str) -> None:
        self._inner, self.failing = inner, set(failing)

    def __getattr__(self, name: str) -> Any:
        if name in self.failing:

            def fail(*args: object, **kwargs: object) -> None:
                raise OSError(f"{name}: disk full")

            return fail
        return getattr(self._inner, name)


def test_a_journal_that_fails_to_record_hands_nothing_out() -> None:
    journal = Failing(MemoryJournal(), "record")
    client = Client(capabilities=ALL, host_id=HOST, journal=journal)
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    with pytest.raises(OSError, match="disk full"):
        start_thread(client)
    assert client.pending == {}
    journal.failing.clear()
    start_thread(client)
    assert len(client.pending) == 1


def test_a_journal_that_fails_to_settle_keeps_the_mutation_pending() -> None:
    journal = Failing(MemoryJournal(), "settle")
    client = Client(capabilities=ALL, host_id=HOST, journal=journal)
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    request = start_thread(client)
    with pytest.raises(OSError, match="disk full"):
        client.receive(answer(request, result=thread_result()))
    # Not taken: still pending, so a disconnect makes it uncertain, which
    # is what the journal (still unsettled) says too.
    assert set(client.pending) == {request.id}
    client.disconnect()
    assert client.uncertain == {request.id: request}
    with pytest.raises(OSError, match="disk full"):
        client.resolve_uncertain(request.id, "applied")
    assert client.uncertain == {request.id: request}
    journal.failing.clear()
    client.resolve_uncertain(request.id, "applied")
    assert client.uncertain == {} and journal.unsettled(HOST) == []


def test_a_checkpoint_store_that_fails_keeps_the_checkpoint() -> None:
    store = Failing(MemoryCheckpoints(), "advance", "forget")
    client = Client(capabilities=ALL, host_id=HOST, checkpoint_store=store)
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    client.receive(delta(stream_id="s", cursor=1))
    [note] = client.drain()
    with pytest.raises(OSError, match="disk full"):
        client.ack(note)
    assert client.checkpoints() == {"s": 0}
    store.failing.discard("advance")
    client.ack(note)
    assert client.checkpoints() == {"s": 1}
    with pytest.raises(OSError, match="disk full"):
        client.forget_stream("s")
    assert client.checkpoints() == {"s": 1}


# -- checkpoints -------------------------------------------------------------------------------


def test_acks_advance_the_store_and_a_restart_resumes_from_it(
    stores: Restartable,
) -> None:
    client = ready(stores.stores)
    for cursor in (1, 2, 3):
        client.receive(delta(stream_id="s", cursor=cursor))
    first, second, _third = client.drain()
    client.ack(first)
    client.ack_cursor("s", second.cursor)
    assert stores.stores.checkpoints.load(HOST) == {"s": 2}
    # The third was delivered but never processed: after a restart the
    # stream resumes after the second.
    restarted = ready(stores.restart())
    assert restarted.checkpoints() == {"s": 2}
    [effect] = restarted.receive(delta(stream_id="s", cursor=1)) or [None]
    assert effect is None and restarted.drain() == []  # a replayed duplicate
    restarted.receive(delta(stream_id="s", cursor=3))
    [third] = restarted.drain()
    restarted.ack(third)
    restarted.forget_stream("s")
    assert stores.stores.checkpoints.load(HOST) == {}


# -- wrong values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "names"),
    [
        ({"journal": MemoryJournal()}, ValueError, "host_id"),
        ({"checkpoint_store": MemoryCheckpoints()}, ValueError, "host_id"),
        ({"host_id": HOST, "journal": object()}, TypeError, "journal"),
        ({"host_id": HOST, "journal": MemoryCheckpoints()}, TypeError, "journal"),
        ({"host_id": HOST, "checkpoint_store": {}}, TypeError, "checkpoint_store"),
        (
            {
                "host_id": HOST,
                "checkpoint_store": MemoryCheckpoints(),
                "checkpoints": {"s": 1},
            },
            ValueError,
            "checkpoints",
        ),
    ],
)
def test_wrong_stores_name_the_argument(
    options: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        Client(capabilities=ALL, **options)


def test_a_journal_entry_that_is_not_a_request_is_refused() -> None:
    class Corrupt(MemoryJournal):
        def unsettled(self, host_id: str) -> list[Any]:
            return [
                entry.__class__(**{**_fields(entry), "data": b"{}"})
                for entry in super().unsettled(host_id)
            ]

    journal: CommandJournal = Corrupt()
    client = Client(capabilities=ALL, host_id=HOST, journal=journal)
    init = client.request("connection/initialize", {}, now=0).message
    client.receive(answer(init, result=init_result()))
    start_thread(client)
    with pytest.raises(ValueError, match="journal entry"):
        Client(capabilities=ALL, host_id=HOST, journal=journal)


def _fields(entry: Any) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in entry.__struct_fields__}
