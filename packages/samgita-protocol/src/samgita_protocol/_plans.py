"""What the one typed decode knows of each method (private).

A message is accepted only by one decode with a typed envelope: the
envelope Struct with its ``params`` (a request or notification) or its
``result`` (a response to a pending request) typed as the method's Struct,
built once here at import. A :class:`Plan` holds that decoder and what is
left to check after it (the envelope rules a type cannot express, in
:func:`rules_hold`; the depth of free-form JSON; the walk of identity
lengths and timestamps) and builds the public message from the typed
envelope.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import msgspec
from msgspec import UNSET

from ._methods import (
    METHODS,
    MethodSpec,
)
from ._params import StreamResumeResult
from ._schema import (
    Message,
    Notification,
    Request,
    Response,
)
from ._validate import has_free_form, needs_walk

__all__ = [
    "BY_WIRE_NAME",
    "NOTIFICATION_PREFIX",
    "PLANS",
    "REQUEST_PREFIX",
    "RESPONSE_PLANS",
    "RESPONSE_PREFIX",
    "Plan",
    "rules_hold",
    "typed_envelope",
]


def typed_envelope(
    cls: type[msgspec.Struct], typed: str, as_type: type[Any], drop: str | None = None
) -> type[msgspec.Struct]:
    """Envelope ``cls`` with field ``typed`` required and of type ``as_type``
    (and without field ``drop``): the same fields, order, constraints and
    configuration otherwise, so it decodes and encodes what ``cls`` does
    with that field typed."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[Any] = []
    for field in msgspec.structs.fields(cls):
        assert field.encode_name == field.name  # no renamed fields to copy
        if field.name == drop:
            continue
        if field.name == typed:
            fields.append((typed, as_type))
        elif field.required:
            fields.append((field.name, hints[field.name]))
        else:
            fields.append((field.name, hints[field.name], field.default))
    config = cls.__struct_config__
    return msgspec.defstruct(
        "Typed" + cls.__name__,
        fields,
        frozen=config.frozen,
        forbid_unknown_fields=config.forbid_unknown_fields,
        omit_defaults=config.omit_defaults,
        kw_only=True,
        tag_field=config.tag_field,
        tag=config.tag,
        module=__name__,
    )


class Plan(NamedTuple):
    """One method's typed decode of one kind of message."""

    #: The method (of a response: the method of the request it answers).
    name: str
    envelope: type[Request] | type[Notification] | type[Response]
    #: The typed field: ``params`` or ``result``.
    payload: str
    mutation: bool
    #: The payload can hold free-form JSON (of any depth).
    free_form: bool
    walk_ascii: bool
    walk_any: bool
    #: The payload's Struct type.
    payload_type: type[Any]
    #: The envelope with the payload typed: one decode checks a whole message.
    typed: msgspec.json.Decoder[Any]
    #: Builds the public message from a decoded typed envelope.
    build: Callable[[Any], Message]


# Field by field: about 0.13 us, a third of ``Request(**asdict(t))``. Each
# sets every field of its envelope but the tag and ``schema_version``
# (always 1.0; a result response's typed envelope has no ``error``); the
# assertion below keeps them in step with the Structs.


def _as_request(t: Any) -> Message:
    return Request(
        method=t.method,
        id=t.id,
        correlation_id=t.correlation_id,
        params=t.params,
        command_id=t.command_id,
        causation_id=t.causation_id,
        project_ref=t.project_ref,
        task_ref=t.task_ref,
    )


def _as_notification(t: Any) -> Message:
    return Notification(
        method=t.method,
        params=t.params,
        stream_id=t.stream_id,
        cursor=t.cursor,
        correlation_id=t.correlation_id,
        causation_id=t.causation_id,
        project_ref=t.project_ref,
        task_ref=t.task_ref,
    )


def _as_response(t: Any) -> Message:
    return Response(
        id=t.id,
        correlation_id=t.correlation_id,
        command_id=t.command_id,
        causation_id=t.causation_id,
        project_ref=t.project_ref,
        task_ref=t.task_ref,
        result=t.result,
    )


#: Each kind of message: its envelope Struct, the payload field its typed
#: envelope types, the field that envelope leaves out (a result response
#: has no ``error``) and the builder of the public message.
_KINDS: Final[
    Mapping[str, tuple[type[Message], str, str | None, Callable[[Any], Message]]]
] = {
    "request": (Request, "params", None, _as_request),
    "notification": (Notification, "params", None, _as_notification),
    "response": (Response, "result", "error", _as_response),
}
assert all(
    set(build.__code__.co_names)
    >= {*envelope.__struct_fields__} - {"schema_version", absent}
    for envelope, _, absent, build in _KINDS.values()
)


def _plan(spec: MethodSpec, kind: str) -> Plan:
    envelope, payload, absent, build = _KINDS[kind]
    payload_type = spec.params if payload == "params" else spec.result
    assert payload_type is not None
    return Plan(
        name=spec.name,
        envelope=envelope,
        payload=payload,
        mutation=spec.mutation,
        free_form=has_free_form(payload_type),
        walk_ascii=needs_walk(payload_type, True),
        walk_any=needs_walk(payload_type, False),
        payload_type=payload_type,
        typed=msgspec.json.Decoder(
            typed_envelope(envelope, payload, payload_type, drop=absent)
        ),
        build=build,
    )


#: Every request and notification method's plan.
PLANS: Final[Mapping[str, Plan]] = MappingProxyType(
    {name: _plan(spec, spec.kind) for name, spec in METHODS.items()}
)
#: The plan of a result response to each request method, but
#: ``stream/resume`` (whose events are checked one by one, as messages).
RESPONSE_PLANS: Final[Mapping[str, Plan]] = MappingProxyType(
    {
        name: _plan(spec, "response")
        for name, spec in METHODS.items()
        if spec.result is not None and spec.result is not StreamResumeResult
    }
)

#: How this library (and any encoder that writes the tag, the version and
#: the method or id first) starts each kind of message: the method's name or
#: the id follows, so those bytes choose the plan without a first parse.
REQUEST_PREFIX: Final = b'{"type":"request","schema_version":"1.0","method":"'
NOTIFICATION_PREFIX: Final = b'{"type":"notification","schema_version":"1.0","method":"'
RESPONSE_PREFIX: Final = b'{"type":"response","schema_version":"1.0","id":"'
#: Each request and notification plan by the bytes of its method's name.
BY_WIRE_NAME: Final[dict[bytes, Plan]] = {
    name.encode("ascii"): plan for name, plan in PLANS.items()
}


def rules_hold(typed: Any, plan: Plan) -> bool:
    """The envelope rules a typed decode cannot express: ``task_ref`` only
    beside ``project_ref``; ``command_id`` exactly on mutations (requests);
    ``stream_id`` and ``cursor`` together (notifications). (A response's
    typed envelope has a required ``result`` and no ``error``.)
    ``_validate.explain`` names the one that fails."""
    if typed.task_ref is not UNSET and typed.project_ref is UNSET:
        return False
    envelope = plan.envelope
    if envelope is Request:
        return plan.mutation is not (typed.command_id is UNSET)
    if envelope is Notification:
        return (typed.stream_id is UNSET) is (typed.cursor is UNSET)
    return True
