"""Normalize the Codex 0.163.0 app-server bundle so msgspec can decode every generated type.

datamodel-code-generator writes a module from the raw bundle that imports, but
msgspec refuses to build decoders for the message unions and ~200 other types:
a msgspec union may hold at most one untagged Struct. The shapes that produce
several untagged Structs in one union are rewritten here, before generation,
into one object schema each (the wire format they accept is a superset of the
original; a Codex value of the original shape always decodes):

1. *Inner bodies of a tagged variant*: a variant with its own `properties`
   (including the tag) plus an `anyOf`/`oneOf` of object bodies
   (`{"type": "image"}` with `{url}` or `{fileId}`) becomes one object whose
   body properties are optional.
2. *serde externally tagged enums* mixing strings and single-key objects
   (`"approved" | {"approved_execpolicy_amendment": {...}}`): the single-key
   objects become one object with every key optional (closed, like the
   originals). That "exactly one key" is not enforced by msgspec.
3. *Untagged object unions* (no common single-valued property): one object
   with the union of the properties, required = the properties every branch
   requires, a property typed differently in two branches becomes `anyOf`.

It also gives generated classes stable names instead of `Foo1`/`Foo2`:
the variants of the four message unions are titled from their method
(`thread/start` -> `ThreadStartRequest`), duplicate v1/v2 definitions are
folded into one, and every merged object is named by `RENAMES` (keyed by
JSON pointer) or `<Parent>Object`. The pass is a pure function of the
bundle (deterministic, no I/O): `normalize(bundle) -> bundle`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

Schema = dict[str, Any]

MESSAGE_UNIONS: dict[str, str] = {
    # union definition -> suffix of its variants' class names
    "ClientRequest": "Request",
    "ServerRequest": "ServerRequest",
    "ServerNotification": "ServerNotification",
    "ClientNotification": "ClientNotification",
}

# JSON pointer of a merged union (in the *original* bundle) -> stable class name.
# Everything not listed gets "<Parent>Object"; tests assert no numbered names.
RENAMES: dict[str, str] = {
    "/definitions/ReviewDecision": "ReviewDecisionAmendment",
    "/definitions/JSONRPCMessage": "JSONRPCAnyMessage",
    "/definitions/McpServerElicitationRequestParams/oneOf/1": (
        "McpServerElicitationRequestParamsOpenaiSlashForm"
    ),
}

_UNION_KEYS = ("oneOf", "anyOf")
_ANNOTATIONS = ("title", "description", "$schema", "default", "examples")


def _camel(method: str) -> str:
    out = []
    for part in method.replace("/", " ").replace("_", " ").replace("-", " ").split():
        out.append(part[:1].upper() + part[1:])
    return "".join(out)


class _Bundle:
    def __init__(self, root: Schema) -> None:
        self.root = root
        self.changed = False

    def resolve(self, schema: Schema) -> Schema:
        seen = 0
        while "$ref" in schema and seen < 32:
            ref: str = schema["$ref"]
            if not ref.startswith("#/"):
                raise ValueError(f"external $ref {ref!r} not supported")
            node: Any = self.root
            for part in ref[2:].split("/"):
                node = node[part]
            schema = node
            seen += 1
        return schema

    def is_object(self, schema: Schema | bool) -> bool:
        if not isinstance(schema, dict):
            return False
        target = self.resolve(schema)
        if any(key in target for key in _UNION_KEYS) and "properties" not in target:
            return False
        if "properties" in target:
            return True
        # an object with no properties at all (an empty Struct) is a Struct too
        return target.get("type") == "object" and not isinstance(
            target.get("additionalProperties"), dict
        )

    def tag_of(self, branches: list[Schema]) -> str | None:
        """The property every object branch fixes to one distinct value, if any."""
        objects = [self.resolve(b) for b in branches]
        candidates: set[str] | None = None
        for obj in objects:
            props = obj.get("properties", {})
            fixed = {
                name
                for name, sub in props.items()
                if name in obj.get("required", [])
                and isinstance(sub, dict)
                and (("enum" in sub and len(sub["enum"]) == 1) or "const" in sub)
            }
            candidates = fixed if candidates is None else candidates & fixed
        for name in sorted(candidates or ()):
            values = [_fixed_value(o["properties"][name]) for o in objects]
            if len(set(map(json.dumps, values))) == len(values):
                return name
        return None


def _fixed_value(schema: Schema) -> Any:
    return schema["const"] if "const" in schema else schema["enum"][0]


def _strip(schema: Schema) -> Schema:
    return {k: v for k, v in schema.items() if k not in ("$schema",)}


def _merge_objects(
    bundle: _Bundle, branches: list[Schema], *, all_optional: bool
) -> Schema:
    props: dict[str, list[Schema]] = {}
    required: set[str] | None = None
    closed = True
    descriptions = []
    for branch in branches:
        obj = bundle.resolve(branch)
        for name, sub in obj.get("properties", {}).items():
            alts = props.setdefault(name, [])
            if sub not in alts:
                alts.append(sub)
        req = set(obj.get("required", []))
        required = req if required is None else required & req
        closed = closed and obj.get("additionalProperties") is False
        label = obj.get("title") or branch.get("$ref", "").rsplit("/", 1)[-1]
        if obj.get("description") or label:
            descriptions.append(f"- {label}: {obj.get('description', '')}".rstrip(": "))
    merged: Schema = {"type": "object", "properties": {}}
    for name, alts in props.items():
        merged["properties"][name] = alts[0] if len(alts) == 1 else {"anyOf": alts}
    if required and not all_optional:
        merged["required"] = sorted(required)
    if closed:
        merged["additionalProperties"] = False
    if descriptions:
        kind = "Exactly one key of" if all_optional else "One of"
        merged["description"] = (
            f"{kind} (merged by normalize_codex_schema):\n" + "\n".join(descriptions)
        )
    return merged


def _collapse_to_catch_all(
    bundle: _Bundle, node: Schema, key: str, branches: list[Any]
) -> bool:
    for branch in branches:
        if not (isinstance(branch, dict) and set(branch) == {"type"}):
            continue
        types = branch["type"] if isinstance(branch["type"], list) else [branch["type"]]
        covered = True
        for other in branches:
            target = bundle.resolve(other) if isinstance(other, dict) else {}
            kind = target.get("type", "object" if "properties" in target else None)
            kinds = kind if isinstance(kind, list) else [kind]
            covered = covered and all(k in types for k in kinds)
        if covered:
            del node[key]
            node["type"] = branch["type"]
            return True
    return False


def _title_tagged_variants(
    bundle: _Bundle, branches: list[Any], tag: str, pointer: str, key: str, name: str
) -> None:
    """Inline variants of a tagged union without a title are named <Parent><TagValue>.

    The tag property loses its title (a titled single-value enum becomes a
    model of its own, which datamodel-codegen cannot use as a msgspec tag).
    """
    for branch in branches:
        if bundle.is_object(branch):
            tag_schema = bundle.resolve(branch)["properties"][tag]
            if "title" in tag_schema:
                del tag_schema["title"]
                bundle.changed = True
    for index, branch in enumerate(branches):
        if not isinstance(branch, dict) or "$ref" in branch or "title" in branch:
            continue
        if not bundle.is_object(branch):
            continue
        value = str(_fixed_value(branch["properties"][tag]))
        title = RENAMES.get(f"{pointer}/{key}/{index}", name + _camel(value))
        branch["title"] = title
        bundle.changed = True


def _is_external_tag(bundle: _Bundle, branches: list[Schema]) -> bool:
    for branch in branches:
        obj = bundle.resolve(branch)
        props = obj.get("properties", {})
        if len(props) != 1 or obj.get("required") != list(props):
            return False
    return True


def _normalize_node(bundle: _Bundle, node: Schema, pointer: str, name: str) -> None:
    # 1. inner bodies of a tagged variant
    if "properties" in node:
        for key in _UNION_KEYS:
            bodies = node.get(key)
            if (
                bodies
                and all(bundle.is_object(b) for b in bodies)
                and bundle.tag_of(bodies) is None
            ):
                merged = _merge_objects(bundle, bodies, all_optional=False)
                for prop, sub in merged["properties"].items():
                    node["properties"].setdefault(prop, sub)
                req = list(node.get("required", [])) + [
                    r
                    for r in merged.get("required", [])
                    if r not in node.get("required", [])
                ]
                if req:
                    node["required"] = req
                del node[key]
                bundle.changed = True
    # 4. a union with an unconstrained catch-all branch (`{"type": ["string", "object"]}`)
    # accepts exactly what the catch-all accepts: keep only that branch
    for key in _UNION_KEYS:
        branches = node.get(key)
        if branches and _collapse_to_catch_all(bundle, node, key, branches):
            bundle.changed = True
    # 2./3. several untagged Structs in one union
    for key in _UNION_KEYS:
        branches = node.get(key)
        if not branches:
            continue
        tag = bundle.tag_of([b for b in branches if bundle.is_object(b)])
        if tag is not None:
            _title_tagged_variants(bundle, branches, tag, pointer, key, name)
        objects = [b for b in branches if bundle.is_object(b)]
        if len(objects) < 2 or bundle.tag_of(objects) is not None:
            continue
        external = _is_external_tag(bundle, objects)
        if external:
            for branch in objects:
                obj = bundle.resolve(branch)
                ((prop, body),) = obj["properties"].items()
                if (
                    isinstance(body, dict)
                    and "title" not in body
                    and "properties" in body
                ):
                    body["title"] = (obj.get("title") or name + _camel(prop)) + "Body"
        merged = _merge_objects(bundle, objects, all_optional=external)
        merged["title"] = RENAMES.get(pointer, f"{name}Object")
        first = branches.index(objects[0])
        rest = [b for b in branches if b not in objects]
        rest.insert(first, merged)
        if len(rest) == 1 and not any(k in node for k in ("properties", "type")):
            del node[key]
            for k, v in merged.items():
                if k != "title":  # the definition keeps its own name
                    node.setdefault(k, v)
        else:
            node[key] = rest
        bundle.changed = True


def _walk(node: Any, pointer: str, name: str) -> Iterator[tuple[Schema, str, str]]:
    """Post-order walk of schema nodes with their pointer and the nearest title."""
    if isinstance(node, dict):
        here = node.get("title") if isinstance(node.get("title"), str) else None
        child_name = _camel(here) if here else name
        for key, value in list(node.items()):
            if key in ("enum", "const", "default", "examples", "required"):
                continue
            if key == "properties" and isinstance(value, dict):
                for prop, sub in list(value.items()):
                    yield from _walk(
                        sub, f"{pointer}/properties/{prop}", child_name + _camel(prop)
                    )
            elif key == "definitions" and isinstance(value, dict):
                for def_name, sub in list(value.items()):
                    if def_name == "v2":  # a namespace of definitions, not a schema
                        for v2_name, v2_sub in list(sub.items()):
                            yield from _walk(
                                v2_sub, f"{pointer}/definitions/v2/{v2_name}", v2_name
                            )
                    else:
                        yield from _walk(
                            sub, f"{pointer}/definitions/{def_name}", def_name
                        )
            else:
                yield from _walk(value, f"{pointer}/{key}", child_name)
        if any(k in node for k in (*_UNION_KEYS, "properties")):
            yield node, pointer, child_name
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{pointer}/{index}", name)


def _fold_duplicate_definitions(root: Schema) -> None:
    """A top-level definition equal to its v2 twin (but for annotations) is the v2 one."""
    defs = root["definitions"]
    v2 = defs.get("v2", {})
    folded = {}
    for key in list(defs):
        if key == "v2" or key not in v2:
            continue
        a = {k: v for k, v in defs[key].items() if k not in _ANNOTATIONS}
        b = {k: v for k, v in v2[key].items() if k not in _ANNOTATIONS}
        if a == b:
            folded[f"#/definitions/{key}"] = f"#/definitions/v2/{key}"
            del defs[key]

    def rewrite(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref in folded:
                node["$ref"] = folded[ref]
            for value in node.values():
                rewrite(value)
        elif isinstance(node, list):
            for item in node:
                rewrite(item)

    rewrite(root)


def _title_message_variants(root: Schema) -> None:
    for union, suffix in MESSAGE_UNIONS.items():
        for variant in root["definitions"][union]["oneOf"]:
            method = _fixed_value(variant["properties"]["method"])
            variant["title"] = _camel(method) + suffix
            # a titled tag enum becomes its own model, which datamodel-codegen
            # then cannot use as a msgspec tag value
            variant["properties"]["method"].pop("title", None)


def normalize(bundle: Schema) -> Schema:
    """Return a normalized deep copy of the Codex bundle (see module docstring).

    Raises ValueError for shapes it cannot handle (external $ref, no fixpoint).
    """
    root = copy.deepcopy(bundle)
    _fold_duplicate_definitions(root)
    _title_message_variants(root)
    state = _Bundle(root)
    for _ in range(10):
        state.changed = False
        for node, pointer, name in list(_walk(root, "", "")):
            _normalize_node(state, node, pointer, name)
        if not state.changed:
            return root
    raise ValueError("normalization did not reach a fixpoint in 10 passes")


def dumps(schema: Schema) -> str:
    """Canonical JSON text of a (normalized) schema: sorted keys, 2-space indent."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
