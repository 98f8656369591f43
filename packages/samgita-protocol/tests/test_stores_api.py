"""The public surface of ``samgita_protocol.stores`` and its SQLite and
PostgreSQL modules, and the content digests the stores compare."""

from __future__ import annotations

import inspect
import pydoc
import types

import pytest

import samgita_protocol.stores as stores_api
import samgita_protocol.stores.postgres as postgres_api
import samgita_protocol.stores.sqlite as sqlite_api
from samgita_protocol import Event, Request, decode, encode
from samgita_protocol.stores import command_digest, event_digest
from stores_backends import mutation


@pytest.mark.parametrize(
    "module", [stores_api, sqlite_api, postgres_api], ids=lambda m: m.__name__
)
def test_the_public_surface(module: types.ModuleType) -> None:
    # Every name of __all__ is there and documented, classes and functions
    # have a signature (help() and inspect.signature work), and no other
    # class or function of the module (of the package's own modules) is
    # public.
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type) or inspect.isfunction(value):
            inspect.signature(value)
        assert pydoc.render_doc(f"{module.__name__}.{name}"), name
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (isinstance(value, type) or inspect.isfunction(value))
        and (
            value.__module__ == module.__name__
            or (
                hasattr(module, "__path__")
                and value.__module__.startswith(module.__name__)
            )
        )
    }
    assert public <= set(module.__all__)


# -- digests ---------------------------------------------------------------------------


class TestDigests:
    WIRE = (
        b'{"schema_version":"1.0","type":"request","id":"r1","correlation_id":"c1",'
        b'"method":"turn/start","command_id":"k1","params":{"thread_id":"t1",'
        b'"input":[{"type":"text","text":"hi"}]}}'
    )
    # Another key order, whitespace, and other per-delivery identities.
    SAME = (
        b'{ "params": {"input": [{"text": "hi", "type": "text"}], "thread_id": "t1"},'
        b' "method": "turn/start", "type": "request", "schema_version": "1.0",'
        b' "id": "r2", "correlation_id": "c2", "causation_id": "x",'
        b' "command_id": "k2" }'
    )

    def test_wire_spelling_and_delivery_ids_do_not_count(self) -> None:
        first = decode(self.WIRE)
        assert isinstance(first, Request)
        assert len(command_digest(first)) == 32
        assert command_digest(first) == command_digest(decode(self.SAME))  # type: ignore[arg-type]

    def test_content_counts(self) -> None:
        base = command_digest(decode(self.WIRE))  # type: ignore[arg-type]
        other_text = self.WIRE.replace(b'"hi"', b'"ho"')
        with_ref = self.WIRE.replace(b'"method"', b'"project_ref":"p1","method"')
        other_method = self.WIRE.replace(b"turn/start", b"turn/steer").replace(
            b'"thread_id":"t1"', b'"thread_id":"t1","turn_id":"u1"'
        )
        for changed in (other_text, with_ref, other_method):
            assert command_digest(decode(changed)) != base  # type: ignore[arg-type]

    def test_built_and_decoded_requests_agree(self) -> None:
        built = mutation("r1")
        assert command_digest(built) == command_digest(decode(encode(built)))  # type: ignore[arg-type]

    def test_event_digest_ignores_the_attempt(self) -> None:
        event = Event(
            event_id="e1",
            delivery_attempt_id="a1",
            created_at="2026-01-01T00:00:00Z",
            correlation_id="c1",
            event_type="task.created",
            payload={"b": 1, "a": [1, 2]},
        )
        assert event_digest(event.retry("a2")) == event_digest(event)
        changed = Event(**{**_fields(event), "payload": {"b": 2, "a": [1, 2]}})
        assert event_digest(changed) != event_digest(event)

    def test_wrong_types(self) -> None:
        with pytest.raises(TypeError, match="request"):
            command_digest({"method": "turn/start"})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="event"):
            event_digest("e1")  # type: ignore[arg-type]


def _fields(event: Event) -> dict[str, object]:
    return {name: getattr(event, name) for name in event.__struct_fields__}
