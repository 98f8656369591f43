"""The executable schema: Struct configuration, the method table, capability
groups, ErrorCode / ProtocolError and Event.retry."""

from __future__ import annotations

import pickle

import msgspec
import pytest

import samgita_protocol as sp

# Every wire Struct: the envelopes and shared definitions, and each method's
# params and result.
STRUCTS = [
    obj
    for name in sp.__all__
    if isinstance(obj := getattr(sp, name), type)
    and issubclass(obj, msgspec.Struct)
    and obj.__module__ in ("samgita_protocol._schema", "samgita_protocol._params")
]


def test_every_struct_is_frozen_closed_and_keyword_only() -> None:
    assert len(STRUCTS) == 44
    for cls in STRUCTS:
        config = cls.__struct_config__
        assert config.frozen, cls
        assert config.forbid_unknown_fields, cls
        assert cls.__doc__, cls
        with pytest.raises(TypeError, match="positional"):
            cls("x")


def test_optional_fields_default_to_unset() -> None:
    allowed_defaults = {"schema_version": "1.0"}
    for cls in STRUCTS:
        for field in msgspec.structs.fields(cls):
            if field.required:
                continue
            expected = allowed_defaults.get(field.name, msgspec.UNSET)
            assert field.default == expected, (cls, field.name, field.default)
            assert type(field.default) is type(expected)


def test_unset_fields_are_absent_on_the_wire_and_schema_version_is_present() -> None:
    wire = msgspec.json.encode(
        sp.Response(
            id="r",
            correlation_id="c",
            result=sp.CancelResult(request_id="x", cancel_status="requested"),
        )
    )
    assert wire == (
        b'{"type":"response","schema_version":"1.0","id":"r","correlation_id":"c",'
        b'"result":{"request_id":"x","cancel_status":"requested"}}'
    )


def test_envelopes_are_tagged_by_type() -> None:
    request = sp.Request(
        id="1",
        correlation_id="1",
        method="thread/read",
        params=sp.ThreadReadParams(thread_id="t"),
    )
    assert (request.type, sp.Response(id="1", correlation_id="1").type) == (
        "request",
        "response",
    )
    assert sp.Notification(method="thread/closed", params=None).type == "notification"


def test_method_table() -> None:
    assert list(sp.METHODS) == [
        "connection/initialize",
        "project/event.receive",
        "project/event.status",
        "project/event.report",
        "thread/start",
        "thread/read",
        "thread/resume",
        "turn/start",
        "turn/steer",
        "turn/interrupt",
        "thread/started",
        "thread/closed",
        "turn/started",
        "turn/completed",
        "item/started",
        "item/delta",
        "item/completed",
        "stream/resume",
        "approval/request",
        "request/cancel",
    ]
    mutations = {name for name, spec in sp.METHODS.items() if spec.mutation}
    assert mutations == {
        "project/event.receive",
        "project/event.report",
        "thread/start",
        "thread/resume",
        "turn/start",
        "turn/steer",
        "turn/interrupt",
    }
    for name, spec in sp.METHODS.items():
        assert spec.name == name
        assert (spec.result is None) == (spec.kind == "notification")
        if spec.kind == "notification":
            assert spec.direction == "server"
    assert sp.METHODS["approval/request"].direction == "either"
    assert sp.METHODS["request/cancel"].direction == "either"
    assert sp.METHODS["connection/initialize"].group is None
    with pytest.raises(TypeError):
        sp.METHODS["x"] = sp.METHODS["thread/read"]  # type: ignore[index]


def test_capability_groups() -> None:
    assert set(sp.CAPABILITY_GROUPS) == {
        "project_events.v1",
        "sessions.v1",
        "streaming.v1",
        "approvals.v1",
        "cancellation.v1",
    }
    assert sp.CAPABILITY_GROUPS["streaming.v1"] == {
        "item/started",
        "item/delta",
        "item/completed",
        "stream/resume",
    }
    assert sp.request_methods("streaming.v1") == {"stream/resume"}
    assert sp.request_methods("cancellation.v1") == {"request/cancel"}
    assert len(sp.request_methods("sessions.v1")) == 6
    with pytest.raises(ValueError, match="'nope.v1'"):
        sp.request_methods("nope.v1")
    every = set().union(*sp.CAPABILITY_GROUPS.values())
    assert every == set(sp.METHODS) - {"connection/initialize"}


def test_event_retry_preserves_every_field_but_the_attempt() -> None:
    event = sp.Event(
        event_id="e1",
        delivery_attempt_id="a1",
        created_at="2026-01-01T00:00:00Z",
        correlation_id="c1",
        event_type="task.created",
        payload={"n": 1, "nested": {"x": [1, 2]}},
        causation_id="cause",
        project_ref="p",
        task_ref="t",
    )
    retried = event.retry("a2")
    assert retried.delivery_attempt_id == "a2"
    assert event.delivery_attempt_id == "a1"
    before = msgspec.structs.asdict(event)
    after = msgspec.structs.asdict(retried)
    del before["delivery_attempt_id"], after["delivery_attempt_id"]
    assert before == after
    minimal = sp.Event(
        event_id="e",
        delivery_attempt_id="a",
        created_at="2026-01-01T00:00:00Z",
        correlation_id="c",
        event_type="t",
        payload={},
    ).retry("b")
    assert minimal.causation_id is msgspec.UNSET
    assert b"causation_id" not in msgspec.json.encode(minimal)


# -- errors ----------------------------------------------------------------------------------


# ErrorCode against docs/protocol.md section 7: tests-integration/test_docs_parity.py
# (the contract document is not beside an installed wheel).


def test_error_code_values() -> None:
    code: str = sp.ErrorCode.LIMIT_EXCEEDED
    assert code == "limit_exceeded"
    for code in sp.ErrorCode:
        assert code.value == code.name.lower()


def test_protocol_error() -> None:
    error = sp.ProtocolError("not_found", "no such event", data={"event_id": "e1"})
    assert (error.code, error.origin) == (sp.ErrorCode.NOT_FOUND, "local")
    assert str(error) == "not_found: no such event"
    assert error == sp.ProtocolError(
        sp.ErrorCode.NOT_FOUND, "no such event", data={"event_id": "e1"}
    )
    assert error != error.with_origin("peer")
    assert error.with_origin("peer").origin == "peer"
    wire = error.to_wire()
    assert wire == sp.ErrorObject(
        code=sp.ErrorCode.NOT_FOUND, message="no such event", data={"event_id": "e1"}
    )
    assert sp.ProtocolError.from_wire(wire) == error.with_origin("remote")
    assert sp.ProtocolError("timeout", "t").to_wire().data is msgspec.UNSET
    assert pickle.loads(pickle.dumps(error)) == error
    assert isinstance(error, Exception)
    with pytest.raises(ValueError):
        sp.ProtocolError("nope", "x")
    with pytest.raises(ValueError):
        sp.ProtocolError("timeout", "x", origin="elsewhere")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sp.ProtocolError("timeout", "x", data=[1])  # type: ignore[arg-type]
