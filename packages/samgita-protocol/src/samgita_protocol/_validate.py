"""Validation machinery shared by the codec and the schema helpers.

msgspec checks types, enums, lengths, item counts, patterns, unknown and
missing fields while it decodes. What it cannot see is checked here, on the
decoded Structs (docs/protocol.md section 12): identity length in UTF-8 bytes
(only when the input is not pure ASCII, where code points equal bytes), the
calendar validity of timestamps and ``task_ref`` requiring ``project_ref``.
Which fields of which Struct need which check is read once, at import, from
``msgspec.inspect`` (a plan per Struct type), so a message whose types need
no check (``item/delta`` in ASCII) is not walked at all.

This module also holds the full, ordered explanation of an invalid message
(``explain``, built on the exact byte checks of ``_jsonscan``), which the
codec's fast path falls back to for every input it does not accept
outright.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

import msgspec
from msgspec import UNSET

from ._errors import ErrorCode, ProtocolError
from ._jsonscan import (
    ascii_only,
    checked_json,
    error,
    is_short,
    pointer_segment,
)
from ._methods import (
    METHODS,
    MethodSpec,
)
from ._options import MAX_ID_BYTES
from ._schema import (
    SCHEMA_VERSION,
    ErrorObject,
    Message,
    Notification,
    Request,
    Response,
)

# -- Struct plans -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    ids: tuple[str, ...]
    id_lists: tuple[str, ...]
    timestamps: tuple[str, ...]
    structs: tuple[tuple[str, type[msgspec.Struct]], ...]
    struct_lists: tuple[tuple[str, type[msgspec.Struct]], ...]
    task_rule: bool
    walk_ascii: bool
    walk_any: bool
    free_form: bool


def _unwrap(t: msgspec.inspect.Type) -> msgspec.inspect.Type:
    # Constrained and described field types come as `Metadata(type=...)`;
    # msgspec.inspect already drops `UnsetType` from optional fields' unions.
    while isinstance(t, msgspec.inspect.Metadata):
        t = t.type
    return t


def _is_id(t: msgspec.inspect.Type) -> bool:
    return isinstance(t, msgspec.inspect.StrType) and t.max_length == MAX_ID_BYTES


def _is_timestamp(t: msgspec.inspect.Type) -> bool:
    return isinstance(t, msgspec.inspect.StrType) and t.pattern is not None


def _plan(cls: type[msgspec.Struct], plans: dict[type[msgspec.Struct], _Plan]) -> _Plan:
    plan = plans.get(cls)
    if plan is not None:
        return plan
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    ids: list[str] = []
    id_lists: list[str] = []
    timestamps: list[str] = []
    structs: list[tuple[str, type[msgspec.Struct]]] = []
    struct_lists: list[tuple[str, type[msgspec.Struct]]] = []
    free_form = False
    for field in info.fields:
        t = _unwrap(field.type)
        if isinstance(t, (msgspec.inspect.DictType, msgspec.inspect.AnyType)):
            free_form = True
        elif _is_id(t):
            ids.append(field.name)
        elif _is_timestamp(t):
            timestamps.append(field.name)
        elif isinstance(t, msgspec.inspect.StructType):
            structs.append((field.name, t.cls))
        elif isinstance(t, msgspec.inspect.ListType):
            item = _unwrap(t.item_type)
            if _is_id(item):
                id_lists.append(field.name)
            elif isinstance(item, msgspec.inspect.StructType):
                # Notifications in a stream/resume result are checked as
                # messages (_nested_notification), params included.
                if item.cls is not Notification:
                    struct_lists.append((field.name, item.cls))
    names = {f.name for f in info.fields}
    task_rule = "task_ref" in names and "project_ref" in names
    nested = [_plan(c, plans) for _, c in structs] + [
        _plan(c, plans) for _, c in struct_lists
    ]
    walk_ascii = bool(timestamps) or task_rule or any(p.walk_ascii for p in nested)
    walk_any = (
        walk_ascii or bool(ids) or bool(id_lists) or any(p.walk_any for p in nested)
    )
    plan = _Plan(
        ids=tuple(ids),
        id_lists=tuple(id_lists),
        timestamps=tuple(timestamps),
        structs=tuple(structs),
        struct_lists=tuple(struct_lists),
        task_rule=task_rule,
        walk_ascii=walk_ascii,
        walk_any=walk_any,
        free_form=free_form or any(p.free_form for p in nested),
    )
    plans[cls] = plan
    return plan


def _all_plans() -> Mapping[type[msgspec.Struct], _Plan]:
    # Envelope plans are computed without their Raw payloads (msgspec.Raw is
    # not a Struct), the method Structs with everything they contain.
    plans: dict[type[msgspec.Struct], _Plan] = {}
    for cls in (Request, Response, Notification, ErrorObject):
        _plan(cls, plans)
    for spec in METHODS.values():
        _plan(spec.params, plans)
        if spec.result is not None:
            _plan(spec.result, plans)
    return MappingProxyType(plans)


_PLANS: Final = _all_plans()
"""The check plan of every Struct type, built at import (read-only)."""


def has_free_form(cls: type[msgspec.Struct]) -> bool:
    """Whether a ``cls`` value can hold free-form JSON (of any depth)."""
    return _PLANS[cls].free_form


def needs_walk(cls: type[msgspec.Struct], ascii_input: bool) -> bool:
    """Whether ``check_struct`` can find anything in a ``cls`` value."""
    plan = _PLANS[cls]
    return plan.walk_ascii if ascii_input else plan.walk_any


# -- calendar ---------------------------------------------------------------------

_TIMESTAMP: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z"
)


def _timestamp_ok(
    value: str,
    _match: Any = _TIMESTAMP.fullmatch,
    _calendar: Any = datetime.fromisoformat,
) -> bool:
    """Whether ``value`` is ``YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`` naming a real
    date and time. The pattern fixes the layout (ASCII digits, the separators,
    ``Z``); ``datetime.fromisoformat`` of its first 19 characters checks the
    calendar in C: year 0001-9999, month, day of that month (leap years),
    hour 00-23, minute and second 00-59 (three times cheaper than the same
    checks in Python)."""
    if _match(value) is None:
        return False
    try:
        _calendar(value[:19])
    except ValueError:
        return False
    return True


# -- the post-decode walk -------------------------------------------------------------


def _id_too_long(value: str) -> bool:
    # At most 4 bytes per code point: a short string cannot be too long.
    return len(value) > MAX_ID_BYTES // 4 and len(value.encode("utf-8")) > MAX_ID_BYTES


def check_struct(obj: msgspec.Struct, path: str, ascii_input: bool) -> None:
    """Raises the first violation in ``obj`` that msgspec cannot check.

    Raises:
        ProtocolError: ``invalid_field`` (a timestamp that is not a calendar
            date/time, an identity over 256 UTF-8 bytes) or
            ``task_ref_without_project_ref``; origin ``peer``.
    """
    plan = _PLANS[type(obj)]
    for name in plan.timestamps:
        value = getattr(obj, name)
        if value is not UNSET and not _timestamp_ok(value):
            raise error(
                ErrorCode.INVALID_FIELD,
                "expected a UTC ISO-8601 timestamp naming a real date and time",
                f"{path}/{name}",
            )
    if not ascii_input:
        for name in plan.ids:
            value = getattr(obj, name)
            if value is not UNSET and _id_too_long(value):
                raise _id_error(f"{path}/{name}", value)
        for name in plan.id_lists:
            values = getattr(obj, name)
            if values is not UNSET:
                for i, value in enumerate(values):
                    if _id_too_long(value):
                        raise _id_error(f"{path}/{name}/{i}", value)
    if plan.task_rule and obj.task_ref is not UNSET and obj.project_ref is UNSET:  # type: ignore[attr-defined]
        raise error(
            ErrorCode.TASK_REF_WITHOUT_PROJECT_REF,
            "task_ref requires project_ref",
            f"{path}/task_ref",
        )
    for name, cls in plan.structs:
        value = getattr(obj, name)
        if value is not UNSET and needs_walk(cls, ascii_input):
            check_struct(value, f"{path}/{name}", ascii_input)
    for name, cls in plan.struct_lists:
        values = getattr(obj, name)
        if values is not UNSET and needs_walk(cls, ascii_input):
            for i, value in enumerate(values):
                check_struct(value, f"{path}/{name}/{i}", ascii_input)


def _id_error(path: str, value: str) -> ProtocolError:
    return error(
        ErrorCode.INVALID_FIELD,
        f"expected a string of 1 to {MAX_ID_BYTES} UTF-8 bytes",
        path,
        bytes=len(value.encode("utf-8")),
    )


# -- msgspec's messages to codes --------------------------------------------------------

# msgspec's message is "<what> - at `$<where>`", and both parts may quote a
# peer's key (an unknown field's name; a dict key in the path): read with
# string searches and one forward scan, never a pattern that backtracks
# over them (issue 18: ``(.*)`$`` took 26 s on a 256 KiB key).
_AT: Final = " - at `$"
_FIELD: Final = "field `"


def _msgspec_pointer(where: str) -> str:
    """The JSON pointer of msgspec's path (``.name``, ``[0]``, ``["key"]``),
    read left to right; it stops at anything else."""
    parts = []
    at, end = 0, len(where)
    while at < end:
        if where[at] == ".":
            stop = at + 1
            while stop < end and where[stop] not in ".[":
                stop += 1
            parts.append("/" + pointer_segment(where[at + 1 : stop]))
        elif where.startswith('["', at):
            stop = at + 2
            while stop < end and where[stop] != '"':
                stop += 2 if where[stop] == "\\" else 1
            quoted = where[at + 1 : stop + 1]
            try:
                key = msgspec.json.decode(quoted.encode(), type=str)
            except msgspec.DecodeError:  # not msgspec's own quoting: stop
                break
            parts.append("/" + pointer_segment(key))
            stop += 2  # the closing '"]'
        elif where[at] == "[":
            stop = where.find("]", at)
            if stop < 0 or not where[at + 1 : stop].isdigit():
                break
            parts.append("/" + where[at + 1 : stop])
            stop += 1
        else:
            break
        at = stop
    return "".join(parts)


def _field_name(head: str) -> str:
    """The name in "... field `name`" (to the last backquote), or ""."""
    start = head.find(_FIELD) + len(_FIELD)
    end = head.rfind("`")
    return head[start:end] if start >= len(_FIELD) and end >= start else ""


def from_validation_error(exc: msgspec.ValidationError, prefix: str) -> ProtocolError:
    """The protocol error for a msgspec ValidationError raised while decoding
    the value at JSON pointer ``prefix``."""
    text = str(exc)
    # the last " - at `$": an unknown field's name comes before the path
    at = text.rfind(_AT) if text.endswith("`") else -1
    where = _msgspec_pointer(text[at + len(_AT) : -1]) if at >= 0 else ""
    head = text[:at] if at >= 0 else text
    path = prefix + where
    if head.startswith("Object contains unknown field"):
        name = _field_name(head)
        extra = {"field": name} if is_short(name) else {}
        return error(
            ErrorCode.UNKNOWN_FIELD,
            "unknown field",
            f"{path}/{pointer_segment(name)}",
            **extra,
        )
    if head.startswith("Object missing required field"):
        name = _field_name(head)
        return error(ErrorCode.MISSING_FIELD, f"{name} is required", f"{path}/{name}")
    if head.startswith(
        "Object contains duplicate"
    ):  # pragma: no cover - not raised by 0.22
        return error(ErrorCode.DUPLICATE_KEY, "an object repeats a key", path)
    return error(ErrorCode.INVALID_FIELD, _safe_reason(head), path)


_SAFE_REASON: Final = re.compile(r"^(Expected `[^`]*`(?: [^`']*)?)(?:, got `[a-z]+`)?$")


def _safe_reason(head: str) -> str:
    # msgspec's messages name types and bounds ("Expected `str` of length
    # <= 256", "Expected `int`, got `str`"); enum messages quote the input
    # value, which is not repeated back.
    if head.startswith("Invalid enum value") or head.startswith("Invalid value"):
        return "value is not one of the allowed values"
    if head.startswith("Expected `str` matching regex"):
        return "expected a UTC ISO-8601 timestamp ending in Z"
    if len(head) <= 120 and _SAFE_REASON.match(head):
        return head[0].lower() + head[1:]
    return "invalid value"


# -- decoders (immutable, built once) ------------------------------------------------------

ENVELOPE_DECODER: Final = msgspec.json.Decoder(Request | Response | Notification)
PARAMS_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = MappingProxyType(
    {name: msgspec.json.Decoder(spec.params) for name, spec in METHODS.items()}
)
RESULT_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = MappingProxyType(
    {
        name: msgspec.json.Decoder(spec.result)
        for name, spec in METHODS.items()
        if spec.result is not None
    }
)
ANY_DECODER: Final = msgspec.json.Decoder()


class _Head(msgspec.Struct):
    """The one top-level field presence that a decoded envelope cannot show
    (``schema_version`` has a default); every other key is ignored."""

    schema_version: Any


HEAD_DECODER: Final = msgspec.json.Decoder(_Head)
ENCODER: Final = msgspec.json.Encoder(order="deterministic")

_KINDS: Final = ("request", "response", "notification")


def _kind_error(m: dict[str, Any]) -> ProtocolError | None:
    if "schema_version" not in m:
        return error(
            ErrorCode.MISSING_FIELD, "schema_version is required", "/schema_version"
        )
    if m["schema_version"] != SCHEMA_VERSION:
        return error(
            ErrorCode.UNSUPPORTED_VERSION,
            'schema_version must be "1.0"',
            "/schema_version",
        )
    if "type" not in m:
        return error(ErrorCode.MISSING_FIELD, "type is required", "/type")
    if m["type"] not in _KINDS:
        return error(
            ErrorCode.INVALID_TYPE,
            "type must be request, response or notification",
            "/type",
        )
    return None


def _method_spec(m: dict[str, Any], kind: str) -> MethodSpec:
    if "method" not in m:
        raise error(ErrorCode.MISSING_FIELD, "method is required", "/method")
    name = m["method"]
    if not isinstance(name, str):
        raise error(ErrorCode.INVALID_FIELD, "method must be a string", "/method")
    spec = METHODS.get(name)
    if spec is None:
        raise error(ErrorCode.UNKNOWN_METHOD, "unknown method", "/method")
    if spec.kind != kind:
        raise error(
            ErrorCode.UNKNOWN_METHOD, f"{name} is not a {kind} method", "/method"
        )
    return spec


def _params_object(m: dict[str, Any]) -> None:
    if "params" not in m:
        raise error(ErrorCode.MISSING_FIELD, "params is required", "/params")
    if not isinstance(m["params"], dict):
        raise error(ErrorCode.INVALID_PARAMS, "params must be an object", "/params")


def envelope_rules(m: dict[str, Any]) -> MethodSpec | None:
    """Checks a decoded top-level JSON value in the reference order (version,
    type, method, command_id, params object / result-or-error, stream
    position) and returns the method of a request or notification.

    Raises:
        ProtocolError: the first violation, origin ``peer``.
    """
    if not isinstance(m, dict):
        raise error(ErrorCode.INVALID_MESSAGE, "a message must be a JSON object")
    problem = _kind_error(m)
    if problem is not None:
        raise problem
    kind = m["type"]
    if kind == "request":
        spec = _method_spec(m, "request")
        if spec.mutation and "command_id" not in m:
            raise error(
                ErrorCode.MISSING_COMMAND_ID,
                f"{spec.name} is a mutation and requires command_id",
                "/command_id",
            )
        if not spec.mutation and "command_id" in m:
            raise error(
                ErrorCode.UNEXPECTED_COMMAND_ID,
                f"{spec.name} is not a mutation; command_id is not allowed",
                "/command_id",
            )
        _params_object(m)
        return spec
    if kind == "response":
        if ("result" in m) == ("error" in m):
            raise error(
                ErrorCode.INVALID_RESPONSE,
                "a response carries exactly one of result or error",
            )
        if "result" in m and not isinstance(m["result"], dict):
            raise error(
                ErrorCode.INVALID_RESPONSE, "result must be an object", "/result"
            )
        return None
    spec = _method_spec(m, "notification")
    if ("stream_id" in m) != ("cursor" in m):
        missing = "stream_id" if "cursor" in m else "cursor"
        raise error(
            ErrorCode.UNPAIRED_STREAM_POSITION,
            "stream_id and cursor must appear together",
            f"/{missing}",
        )
    _params_object(m)
    return spec


def decode_params(spec: MethodSpec, raw: bytes | msgspec.Raw, ascii_input: bool) -> Any:
    """The method's params Struct from raw JSON that is known to be valid,
    duplicate-free and within depth.

    Raises:
        ProtocolError: schema violations at ``/params/...``, origin ``peer``.
    """
    try:
        params = PARAMS_DECODERS[spec.name].decode(raw)
    except msgspec.ValidationError as exc:
        raise from_validation_error(exc, "/params") from None
    if needs_walk(spec.params, ascii_input):
        check_struct(params, "/params", ascii_input)
    return params


def explain(data: bytes) -> Message:
    """The complete, ordered decode of ``data`` (at most the size bound):
    the byte-level rules (``_jsonscan.checked_json``: one JSON value in
    UTF-8, depth, duplicate keys), then the schema. Returns the message when
    it is valid after all.

    Raises:
        ProtocolError: the first violation, origin ``peer``.
    """
    value = checked_json(data)
    spec = envelope_rules(value)
    try:
        message = ENVELOPE_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise from_validation_error(exc, "") from None
    ascii_input = ascii_only(data)
    return finish(message, spec, ascii_input)


def finish(message: Message, spec: MethodSpec | None, ascii_input: bool) -> Message:
    """The envelope walk and the params decode of a message whose envelope
    msgspec accepted and whose envelope rules hold."""
    check_struct(message, "", ascii_input)
    if isinstance(message, Response):
        if message.error is not UNSET:
            check_struct(message.error, "/error", ascii_input)
        return message
    assert spec is not None
    params = decode_params(spec, message.params, ascii_input)
    return msgspec.structs.replace(message, params=params)
