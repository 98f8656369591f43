"""tools/normalize_codex_schema.py: each rewrite on a small schema, and on the vendored bundle."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = (
    ROOT / "vendor-codex-0.163.0" / "stable" / "codex_app_server_protocol.schemas.json"
)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


norm = _load("normalize_codex_schema")

UNIONS = {
    "ClientRequest": [{"properties": {"method": {"enum": ["a/b"], "title": "X"}}, "required": ["method"], "type": "object"}],
    "ServerRequest": [{"properties": {"method": {"enum": ["c"]}}, "required": ["method"], "type": "object"}],
    "ServerNotification": [{"properties": {"method": {"enum": ["d/e_f"]}}, "required": ["method"], "type": "object"}],
    "ClientNotification": [{"properties": {"method": {"enum": ["initialized"]}}, "required": ["method"], "type": "object"}],
}  # fmt: skip


def _bundle(**defs: Any) -> dict[str, Any]:
    definitions: dict[str, Any] = {
        name: {"oneOf": copy.deepcopy(v)} for name, v in UNIONS.items()
    }
    definitions["v2"] = defs
    return {"definitions": definitions}


def _obj(
    props: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required or sorted(props),
        **extra,
    }


S = {"type": "string"}


def test_message_variants_are_named_by_method_and_tag_titles_dropped() -> None:
    out = norm.normalize(_bundle())["definitions"]
    assert out["ClientRequest"]["oneOf"][0]["title"] == "ABRequest"
    assert "title" not in out["ClientRequest"]["oneOf"][0]["properties"]["method"]
    assert out["ServerRequest"]["oneOf"][0]["title"] == "CServerRequest"
    assert out["ServerNotification"]["oneOf"][0]["title"] == "DEFServerNotification"
    assert (
        out["ClientNotification"]["oneOf"][0]["title"]
        == "InitializedClientNotification"
    )


def test_inner_bodies_of_a_tagged_variant_are_flattened() -> None:
    image = _obj(
        {"type": {"enum": ["image"]}}, anyOf=[_obj({"url": S}), _obj({"fileId": S})]
    )
    text = _obj({"type": {"enum": ["text"]}, "text": S})
    out = norm.normalize(_bundle(UserInput={"oneOf": [text, image]}))["definitions"][
        "v2"
    ]
    flat = out["UserInput"]["oneOf"][1]
    assert "anyOf" not in flat
    assert set(flat["properties"]) == {"type", "url", "fileId"}
    assert flat["required"] == ["type"]  # body properties became optional


def test_tagged_union_with_shared_properties_is_left_alone() -> None:
    a = _obj({"method": {"enum": ["a"]}})
    b = _obj({"method": {"enum": ["b"]}})
    node = {"type": "object", "properties": {"at": S}, "oneOf": [a, b]}
    out = norm.normalize(_bundle(N=node))["definitions"]["v2"]["N"]
    assert len(out["oneOf"]) == 2


def test_externally_tagged_enum_objects_merge_into_one_closed_object() -> None:
    decision = {
        "oneOf": [
            {"enum": ["approved"], "type": "string"},
            _obj(
                {"amend": _obj({"rule": S})},
                additionalProperties=False,
                title="AmendDecision",
            ),
            _obj({"deny": _obj({"why": S})}, additionalProperties=False),
        ]
    }
    out = norm.normalize(_bundle(Decision=decision))["definitions"]["v2"]["Decision"]
    assert out["oneOf"][0] == {"enum": ["approved"], "type": "string"}
    merged = out["oneOf"][1]
    assert len(out["oneOf"]) == 2
    assert merged["title"] == "DecisionObject"
    assert "required" not in merged and merged["additionalProperties"] is False
    assert merged["properties"]["amend"]["title"] == "AmendDecisionBody"
    assert merged["properties"]["deny"]["title"] == "DecisionDenyBody"


def test_untagged_object_union_merges_with_common_required() -> None:
    content = {
        "anyOf": [
            _obj({"uri": S, "text": S}),
            _obj({"uri": S, "blob": {"type": "integer"}}),
        ]
    }
    out = norm.normalize(_bundle(Content=content))["definitions"]["v2"]["Content"]
    assert "anyOf" not in out
    assert out["required"] == ["uri"]
    assert set(out["properties"]) == {"uri", "text", "blob"}
    assert "title" not in out  # the definition keeps its own name


def test_conflicting_property_types_become_anyof() -> None:
    union = {"anyOf": [_obj({"v": S}), _obj({"v": {"type": "integer"}, "w": S})]}
    out = norm.normalize(_bundle(U=union))["definitions"]["v2"]["U"]
    assert out["properties"]["v"] == {"anyOf": [S, {"type": "integer"}]}


def test_refs_to_objects_are_resolved_when_merging() -> None:
    union = {"anyOf": [{"$ref": "#/definitions/v2/A"}, {"$ref": "#/definitions/v2/B"}]}
    out = norm.normalize(_bundle(U=union, A=_obj({"a": S}), B=_obj({"b": S})))
    assert set(out["definitions"]["v2"]["U"]["properties"]) == {"a", "b"}


def test_catch_all_branch_absorbs_the_union() -> None:
    info = {
        "anyOf": [
            {"enum": ["x"], "type": "string"},
            _obj({"k": S}),
            {"type": ["string", "object"]},
        ]
    }
    out = norm.normalize(_bundle(Info=info))["definitions"]["v2"]["Info"]
    assert out == {"type": ["string", "object"]}


def test_duplicate_v1_definitions_fold_into_v2() -> None:
    bundle = _bundle(
        RequestId={"anyOf": [S, {"type": "integer"}]},
        Uses={"$ref": "#/definitions/RequestId"},
    )
    bundle["definitions"]["RequestId"] = {
        "anyOf": [S, {"type": "integer"}],
        "title": "RequestId",
    }
    out = norm.normalize(bundle)["definitions"]
    assert "RequestId" not in out
    assert out["v2"]["Uses"] == {"$ref": "#/definitions/v2/RequestId"}


def test_vendored_bundle_pure_deterministic_idempotent() -> None:
    raw = json.loads(BUNDLE.read_bytes())
    before = copy.deepcopy(raw)
    once = norm.normalize(raw)
    assert raw == before  # input not mutated
    assert norm.dumps(norm.normalize(raw)) == norm.dumps(once)
    assert norm.dumps(norm.normalize(once)) == norm.dumps(once)
    defs = once["definitions"]
    assert [len(defs[u]["oneOf"]) for u in norm.MESSAGE_UNIONS] == [105, 10, 85, 1]


def _codegen() -> str:
    exe = os.environ.get("DATAMODEL_CODEGEN") or shutil.which("datamodel-codegen")
    if exe:
        return exe
    hatch = shutil.which("hatch")
    if hatch:
        env = subprocess.run(
            [hatch, "env", "find", "codegen"],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        candidate = Path(env.stdout.strip()) / "bin" / "datamodel-codegen"
        if env.returncode == 0 and candidate.exists():
            return str(candidate)
    raise AssertionError(
        "datamodel-codegen 0.89.0 not found: create the hatch `codegen` env or set DATAMODEL_CODEGEN"
    )


def test_generated_types_have_not_drifted() -> None:
    env = {**os.environ, "DATAMODEL_CODEGEN": _codegen()}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_codex_types.py"), "--check"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
