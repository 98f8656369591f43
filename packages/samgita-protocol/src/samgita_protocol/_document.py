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
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any

import msgspec

__all__ = ["ARTIFACT_NAME", "build_document", "build_document_bytes", "json_schema"]

#: File name of the artifact inside the package (and in ``schemas/1.0/``).
ARTIFACT_NAME = "protocol.schema.json"

SCHEMA_ID = "urn:samgita-protocol:schema:1.0"
_REF = "#/$defs/{name}"

# Envelope fields with a fixed shape; everything else comes from the Struct.
_FIXED = frozenset({"schema_version", "type", "method", "params", "result", "error"})
# Each kind of envelope: its required fields (a mutation's request adds
# ``command_id``) and the fields that require others.
_REQUIRED = {
    "request": ("schema_version", "type", "id", "correlation_id", "method", "params"),
    "response": ("schema_version", "type", "id", "correlation_id"),
    "notification": ("schema_version", "type", "method", "params"),
}
_DEPENDENT = {
    "request": {"task_ref": ["project_ref"]},
    "response": {"task_ref": ["project_ref"]},
    "notification": {
        "task_ref": ["project_ref"],
        "stream_id": ["cursor"],
        "cursor": ["stream_id"],
    },
}


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
    kinds: dict[str, type[msgspec.Struct]] = {
        "request": _schema.Request,
        "response": _schema.Response,
        "notification": _schema.Notification,
    }
    envelope_fields: dict[str, dict[str, Any]] = {
        kind: {f.name: _strip_unset(f.type) for f in msgspec.structs.fields(cls)}
        for kind, cls in kinds.items()
    }
    defs, schema_of = _components(methods, kinds, envelope_fields, _schema.ErrorObject)

    def envelope(kind: str, extra: Mapping[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = {
            "schema_version": {"const": _schema.SCHEMA_VERSION},
            "type": {"const": kind},
        }
        for name, tp in envelope_fields[kind].items():
            if name not in _FIXED:
                props[name] = schema_of(tp)
        props.update(extra)
        return props

    # -- one envelope per method -------------------------------------------
    one_of: dict[str, list[str]] = {"request": [], "notification": []}
    for spec in methods.values():
        dotted = _dotted(spec.name)
        props = envelope(
            spec.kind,
            {
                "method": {"const": spec.name},
                "params": {"$ref": _REF.format(name=f"{dotted}.params")},
            },
        )
        # command_id: required on a mutation, absent (so refused) elsewhere.
        if not spec.mutation:
            props.pop("command_id", None)
        mutation = ("command_id",) if spec.mutation else ()
        name = f"{dotted}.{spec.kind}"
        defs[name] = _object(props, spec.kind, *mutation)
        one_of[spec.kind].append(name)
        if spec.kind == "request" and f"{dotted}.result" not in defs:
            raise TypeError(f"request method {spec.name} has no result definition")

    response_props = envelope(
        "response",
        {
            # Checked against its request's <method>.result by the receiver.
            "result": {"type": "object"},
            "error": schema_of(_schema.ErrorObject),
        },
    )
    response = _object(response_props, "response")
    response["oneOf"] = [
        {"type": "object", "properties": {"result": True}, "required": ["result"]},
        {"type": "object", "properties": {"error": True}, "required": ["error"]},
    ]
    defs["response"] = response
    for kind, names in one_of.items():
        defs[kind] = {"oneOf": [{"$ref": _REF.format(name=n)} for n in names]}

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
        "oneOf": [{"$ref": _REF.format(name=kind)} for kind in kinds],
        "$defs": defs,
    }


def _components(
    methods: Mapping[str, Any],
    kinds: Mapping[str, type[msgspec.Struct]],
    envelope_fields: Mapping[str, Mapping[str, Any]],
    error_cls: type,
) -> tuple[dict[str, Any], Callable[[Any], Any]]:
    """The definitions msgspec derives from the Structs (every method's
    params and result, the shared Structs), renamed: ``<method>.params`` /
    ``.result``, snake_case for a Struct several methods share; and the
    schema of any one type among them (an envelope field's, the error's).
    The envelope Structs' own components (generic params) are left for the
    per-method envelopes to replace, under the same names."""
    roots: list[Any] = []
    owners: dict[str, list[str]] = {}
    for spec in methods.values():
        for part, tp in (("params", spec.params), ("result", spec.result)):
            if tp is not None:
                roots.append(tp)
                owners.setdefault(_component_name(tp), []).append(
                    f"{_dotted(spec.name)}.{part}"
                )
    field_types = [
        tp
        for fields in envelope_fields.values()
        for name, tp in fields.items()
        if name not in _FIXED
    ]
    all_roots = [*roots, error_cls, *field_types]
    schemas, components = msgspec.json.schema_components(all_roots, ref_template=_REF)
    by_type = dict(zip(_keys(all_roots), schemas, strict=True))

    rename: dict[str, str] = {}
    for component in components:
        names = owners.get(component, [])
        rename[component] = names[0] if len(names) == 1 else _snake(component)
    if len(set(rename.values())) != len(rename):
        raise TypeError(
            f"two Structs map to one definition name: {sorted(rename.items())}"
        )
    for kind, cls in kinds.items():
        component = _component_name(cls)
        if component in rename and rename[component] != kind:
            raise TypeError(
                f"{component} would be named {rename[component]}, not {kind}"
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

    def schema_of(tp: Any) -> Any:
        return _rewrite(by_type[_key(tp)], rename)

    return defs, schema_of


# -- helpers -----------------------------------------------------------------


def _object(props: dict[str, Any], kind: str, *also_required: str) -> dict[str, Any]:
    # An envelope of `kind` with `props` (and no others): its required
    # fields, then `also_required`, and its dependencies among `props`.
    body: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": [*_REQUIRED[kind], *also_required],
        "additionalProperties": False,
    }
    present = {k: list(v) for k, v in _DEPENDENT[kind].items() if k in props}
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
