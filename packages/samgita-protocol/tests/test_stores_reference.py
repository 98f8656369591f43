"""Every backend answers as the in-memory reference: random sequences of
operations on one store at a time (hypothesis), each answer (or error)
compared with what the ``Memory*`` store of the same interface answers.
Part of the conformance suite (``test_stores_conformance.py``): a new
backend of ``stores_backends.BACKENDS`` runs here too."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samgita_protocol import ProtocolError, encode
from samgita_protocol.stores import PAGE_OVERHEAD
from stores_backends import BACKENDS, Stores, digest, mutation, open_stores

D1 = digest("one")
D2 = digest("two")

# Each example takes a fresh scope: the fixture's stores outlive examples.
_FRESH = itertools.count()


@pytest.fixture(params=list(BACKENDS))
def stores(
    request: pytest.FixtureRequest, locate: Callable[[str], str]
) -> Iterator[Stores]:
    opened = open_stores(request.param, locate(request.param))
    yield opened
    opened.close()


_ID = st.sampled_from(["a", "b"])
_DIGEST = st.sampled_from([D1, D2])
_STATUS = st.sampled_from(["pending", "processing", "completed", "bogus"])
_TICK = st.tuples(st.just("tick"), st.sampled_from([0.0, 0.5, 2.0, 6.0]))
#: Random operations on one store at a time (a narrow space finds more).
_OPERATIONS = {
    "inbox": st.one_of(
        _TICK,
        st.tuples(st.just("claim"), _ID, _DIGEST, st.sampled_from([1.0, 5.0])),
        st.tuples(st.just("commit"), _ID, _DIGEST, st.sampled_from([b"r1", b"r2"])),
        st.tuples(st.just("release"), _ID, _DIGEST),
        st.tuples(st.just("record_event"), _ID, _DIGEST, _STATUS),
        st.tuples(st.just("set_event_status"), _ID, _STATUS),
        st.tuples(st.just("event_status"), _ID),
    ),
    # Sizes and byte bounds in steps of 10, so that bounds are often met
    # exactly.
    "replay_log": st.one_of(
        _TICK,
        st.tuples(st.just("append"), _ID, st.sampled_from([0, 10, 20])),
        st.tuples(
            st.just("trim"),
            _ID,
            st.one_of(st.none(), st.integers(0, 4)),
            st.one_of(st.none(), st.sampled_from([0, 10, 20, 30, 40])),
        ),
        st.tuples(st.just("page"), _ID, st.integers(-1, 8), st.integers(1, 3)),
    ),
    "journal": st.one_of(
        _TICK,
        st.tuples(st.just("record"), _ID, st.sampled_from(["go", "stop"])),
        st.tuples(st.just("settle"), _ID, st.sampled_from(["answered", "applied"])),
        st.tuples(st.just("forget"), st.sampled_from([0.0, 1.0, 5.0])),
    ),
    "checkpoints": st.one_of(
        st.tuples(st.just("advance"), _ID, st.integers(0, 9)),
        st.tuples(st.just("forget"), _ID),
    ),
}


def _step(stores: Stores, scope: str, now: float, op: tuple[Any, ...]) -> object:
    """Apply one operation; its result, or what it raised (comparable)."""
    kind, *args = op
    try:
        if kind == "claim":
            return stores.inbox.claim(scope, *args[:2], lease=args[2], now=now)
        if kind == "commit":
            return stores.inbox.commit(scope, *args)
        if kind == "release":
            return stores.inbox.release(scope, *args)
        if kind == "record_event":
            return stores.inbox.record_event(scope, *args[:2], status=args[2])
        if kind == "set_event_status":
            return stores.inbox.set_event_status(scope, *args)
        if kind == "event_status":
            return stores.inbox.event_status(scope, *args)
        stream = f"{scope}-{args[0]}"
        if kind == "append":
            size = args[1]
            return stores.replay_log.append(stream, lambda c: bytes(size), now=now)
        if kind == "trim":
            if args[1] is None and args[2] is None:
                return stores.replay_log.trim(stream, older_than=now - 1)
            return stores.replay_log.trim(
                stream, keep_events=args[1], keep_bytes=args[2]
            )
        if kind == "page":
            return stores.replay_log.page(
                stream,
                args[1],
                max_events=args[2],
                max_bytes=PAGE_OVERHEAD + 42,
            )
        if kind == "record":
            request = mutation(stream, text=str(args[1]))
            return stores.journal.record(scope, request, encode(request), now=now)
        if kind == "settle":
            return stores.journal.settle(scope, stream, args[1], now=now)
        if kind == "forget" and isinstance(args[0], float):
            return stores.journal.forget_settled(scope, now - args[0])
        if kind == "forget":
            return stores.checkpoints.forget(scope, stream)
        return stores.checkpoints.advance(scope, stream, args[1])
    except ProtocolError as error:
        return error
    except Exception as error:  # compared by kind and message
        return (type(error).__name__, str(error))


@pytest.mark.parametrize("store", list(_OPERATIONS))
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_backend_answers_as_the_reference(
    stores: Stores, store: str, data: st.DataObject
) -> None:
    operations = data.draw(st.lists(_OPERATIONS[store], max_size=30))
    reference = open_stores("memory", "")
    scope = f"h{next(_FRESH)}"
    now = 1000.0
    for op in operations:
        if op[0] == "tick":
            now += op[1]
            continue
        assert _step(stores, scope, now, op) == _step(reference, scope, now, op), op
    assert stores.journal.unsettled(scope) == reference.journal.unsettled(scope)
    assert stores.checkpoints.load(scope) == reference.checkpoints.load(scope)
