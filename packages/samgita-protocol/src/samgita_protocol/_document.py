"""The JSON Schema 2020-12 document of wire schema 1.0, built from the Structs.

``build_document()`` derives every params, result and shared definition from
the msgspec Structs of ``_schema`` (``msgspec.json.schema_components``) and
adds what a component schema cannot say on its own:

* one envelope per method (``$defs/<method>.request`` or
  ``.notification``, with ``method`` a const and ``params`` that method's
  definition), so each method's params are checked;
* ``command_id`` required on mutations and absent (so forbidden, as
  ``additionalProperties`` is false) on every other request;
* ``task_ref`` requires ``project_ref``; ``stream_id`` and ``cursor`` come
  as a pair; a response has exactly one of ``result`` or ``error``;
* ``$defs/<method>.result`` for every request method (a response's result
  is checked against its request, which the schema cannot see: validators
  look the definition up by the request's method).

Definition names: a method's ``/`` becomes ``.`` (``turn/start`` ->
``turn.start.params``); shared Structs are snake_case (``InputItem`` ->
``input_item``).

``tools/gen_schema.py`` writes ``build_document_bytes()`` to
``schemas/1.0/protocol.schema.json``; the same file ships inside the package
and ``json_schema()`` hands it out without building anything.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

import msgspec

__all__ = ["ARTIFACT_NAME", "build_document", "build_document_bytes", "json_schema"]

#: File name of the artifact inside the package (and in ``schemas/1.0/``).
ARTIFACT_NAME = "protocol.schema.json"

SCHEMA_ID = "urn:samgita-protocol:schema:1.0"
_REF = "#/$defs/{name}"

# Envelope fields with a fixed shape; everything else comes from the Struct.
_REQUEST_REQUIRED = (
    "schema_version",
    "type",
    "id",
    "correlation_id",
    "method",
    "params",
)
_RESPONSE_REQUIRED = ("schema_version", "type", "id", "correlation_id")
_NOTIFICATION_REQUIRED = ("schema_version", "type", "method", "params")


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema document shipped with this package.

    A fresh ``dict`` each call (the caller may change it). It is the
    generated artifact ``schemas/1.0/protocol.schema.json``: JSON Schema
    2020-12, ``$id`` ``urn:samgita-protocol:schema:1.0``. Runtime decoding
    checks more than the schema can (byte limits, depth, duplicate keys,
    results against their request).

    Raises ``FileNotFoundError`` only if the installation is broken (the
    artifact is missing from the package).
    """
    data = resources.files(__package__).joinpath(ARTIFACT_NAME).read_bytes()
    document: dict[str, Any] = json.loads(data)
    return document


def build_document_bytes() -> bytes:
    """Return the deterministic bytes of the generated document.

    Sorted keys, two-space indent, UTF-8, one trailing newline: the exact
    content of ``schemas/1.0/protocol.schema.json``. Raises ``TypeError``
    if a Struct's type has no JSON Schema (a bug in ``_schema``).
    """
    text = json.dumps(build_document(), indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def build_document() -> dict[str, Any]:
    """Build the JSON Schema document from the Structs of ``_schema``.

    Raises ``TypeError`` if a Struct's type has no JSON Schema.
    """
    from . import _methods, _schema

    methods: Mapping[str, Any] = _methods.METHODS
    requests = [spec for spec in methods.values() if spec.kind == "request"]
    notifications = [spec for spec in methods.values() if spec.kind == "notification"]

    # -- components from the Structs ---------------------------------------
    roots: list[Any] = []
    for spec in methods.values():
        roots.append(spec.params)
        if spec.result is not None:
            roots.append(spec.result)
    envelope_fields: dict[type, dict[str, Any]] = {
        cls: {f.name: _strip_unset(f.type) for f in msgspec.structs.fields(cls)}
        for cls in (_schema.Request, _schema.Response, _schema.Notification)
    }
    fixed = {"schema_version", "type", "method", "params", "result", "error"}
    field_types: list[tuple[type, str, Any]] = [
        (cls, name, tp)
        for cls, fields in envelope_fields.items()
        for name, tp in fields.items()
        if name not in fixed
    ]
    error_cls = _schema.ErrorObject
    all_roots = [*roots, error_cls, *(tp for _, _, tp in field_types)]
    schemas, components = msgspec.json.schema_components(all_roots, ref_template=_REF)
    by_type = dict(zip(_keys(all_roots), schemas, strict=True))

    # -- names: <method>.params / .result, snake_case for shared Structs ---
    owners: dict[str, list[str]] = {}
    for spec in methods.values():
        owners.setdefault(_component_name(spec.params), []).append(
            f"{_dotted(spec.name)}.params"
        )
        if spec.result is not None:
            owners.setdefault(_component_name(spec.result), []).append(
                f"{_dotted(spec.name)}.result"
            )
    rename: dict[str, str] = {}
    for component in components:
        names = owners.get(component, [])
        rename[component] = names[0] if len(names) == 1 else _snake(component)
    if len(set(rename.values())) != len(rename):
        raise TypeError(
            f"two Structs map to one definition name: {sorted(rename.items())}"
        )

    defs: dict[str, Any] = {}
    for name, body in components.items():
        body = _rewrite(body, rename)
        props = body.get("properties", {})
        if "task_ref" in props and "project_ref" in props:
            # The same rule as on the envelopes (e.g. inside an event).
            body["dependentRequired"] = {"task_ref": ["project_ref"]}
        defs[rename[name]] = body
    # A Struct shared by several methods keeps its own name; each method
    # still gets its <method>.params / .result as a reference to it.
    for component, names in owners.items():
        if len(names) > 1:
            for alias in names:
                defs[alias] = {"$ref": _REF.format(name=rename[component])}

    error_ref = _rewrite(by_type[_key(error_cls)], rename)

    def field_schema(cls: type, name: str) -> Any:
        return _rewrite(by_type[_key(envelope_fields[cls][name])], rename)

    # -- envelopes ---------------------------------------------------------
    def envelope(cls: type, kind: str, extra: Mapping[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = {
            "schema_version": {"const": _schema.SCHEMA_VERSION},
            "type": {"const": kind},
        }
        for name in envelope_fields[cls]:
            if name not in fixed:
                props[name] = field_schema(cls, name)
        props.update(extra)
        return props

    # The envelope Structs' own components (generic params) are replaced by
    # the per-method envelopes below, under the same names.
    for cls, name in (
        (_schema.Request, "request"),
        (_schema.Response, "response"),
        (_schema.Notification, "notification"),
    ):
        component = _component_name(cls)
        if component in rename and rename[component] != name:
            raise TypeError(
                f"{component} would be named {rename[component]}, not {name}"
            )

    request_defs: list[str] = []
    for spec in requests:
        dotted = _dotted(spec.name)
        props = envelope(
            _schema.Request,
            "request",
            {
                "method": {"const": spec.name},
                "params": {"$ref": _REF.format(name=f"{dotted}.params")},
            },
        )
        required = list(_REQUEST_REQUIRED)
        if spec.mutation:
            required.append("command_id")
        else:
            props.pop("command_id", None)
        defs[f"{dotted}.request"] = _object(
            props, required, {"task_ref": ["project_ref"]}
        )
        request_defs.append(f"{dotted}.request")

    notification_defs: list[str] = []
    for spec in notifications:
        dotted = _dotted(spec.name)
        props = envelope(
            _schema.Notification,
            "notification",
            {
                "method": {"const": spec.name},
                "params": {"$ref": _REF.format(name=f"{dotted}.params")},
            },
        )
        defs[f"{dotted}.notification"] = _object(
            props,
            list(_NOTIFICATION_REQUIRED),
            {
                "task_ref": ["project_ref"],
                "stream_id": ["cursor"],
                "cursor": ["stream_id"],
            },
        )
        notification_defs.append(f"{dotted}.notification")

    response_props = envelope(
        _schema.Response,
        "response",
        {
            # Checked against its request's <method>.result by the receiver.
            "result": {"type": "object"},
            "error": error_ref,
        },
    )
    response = _object(
        response_props, list(_RESPONSE_REQUIRED), {"task_ref": ["project_ref"]}
    )
    response["oneOf"] = [
        {"type": "object", "properties": {"result": True}, "required": ["result"]},
        {"type": "object", "properties": {"error": True}, "required": ["error"]},
    ]
    defs["response"] = response
    defs["request"] = {"oneOf": [{"$ref": _REF.format(name=n)} for n in request_defs]}
    defs["notification"] = {
        "oneOf": [{"$ref": _REF.format(name=n)} for n in notification_defs]
    }

    for spec in requests:
        if spec.result is None or f"{_dotted(spec.name)}.result" not in defs:
            raise TypeError(f"request method {spec.name} has no result definition")

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"SamgitaProtocol native wire schema {_schema.SCHEMA_VERSION}",
        "description": (
            "Generated from the msgspec Structs of samgita_protocol (tools/gen_schema.py). "
            "Runtime decoding additionally checks byte limits, nesting depth, duplicate "
            "keys, identities of 1 to 256 UTF-8 bytes, and each response's result "
            "against its request ($defs/<method>.result)."
        ),
        "oneOf": [
            {"$ref": _REF.format(name="request")},
            {"$ref": _REF.format(name="response")},
            {"$ref": _REF.format(name="notification")},
        ],
        "$defs": defs,
    }


# -- helpers -----------------------------------------------------------------


def _object(
    props: dict[str, Any], required: list[str], dependent: Mapping[str, list[str]]
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }
    present = {k: v for k, v in dependent.items() if k in props}
    if present:
        body["dependentRequired"] = present
    return body


def _dotted(method: str) -> str:
    return method.replace("/", ".")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _component_name(cls: Any) -> str:
    return str(getattr(cls, "__name__", cls))


def _strip_unset(tp: Any) -> Any:
    """``X | UnsetType`` -> ``X``: absence is expressed by ``required``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not msgspec.UnsetType]
        if len(args) == 1:
            return args[0]
        out = args[0]
        for arg in args[1:]:
            out = out | arg
        return out
    return tp


def _key(tp: Any) -> str:
    return repr(tp)


def _keys(tps: Iterable[Any]) -> list[str]:
    return [_key(tp) for tp in tps]


def _rewrite(node: Any, rename: Mapping[str, str]) -> Any:
    """Rename ``$ref`` targets; drop the OpenAPI-only ``discriminator``.

    msgspec adds ``discriminator`` to tagged unions; it is not a JSON Schema
    2020-12 keyword (Ajv's strict mode refuses it) and the tag's ``enum``
    already selects the variant. Descriptions (docstrings) are cleaned with
    ``inspect.cleandoc``: msgspec 0.23 dedents them, 0.22 does not, and the
    bytes must not depend on the msgspec release within the core's range.
    """
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "discriminator":
                continue
            if key == "description" and isinstance(value, str):
                out[key] = inspect.cleandoc(value)
            elif (
                key == "$ref"
                and isinstance(value, str)
                and value.startswith("#/$defs/")
            ):
                name = value[len("#/$defs/") :]
                out[key] = _REF.format(name=rename.get(name, name))
            else:
                out[key] = _rewrite(value, rename)
        return out
    if isinstance(node, list):
        return [_rewrite(item, rename) for item in node]
    return node
