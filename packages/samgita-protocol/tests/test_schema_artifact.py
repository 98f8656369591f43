"""The committed JSON Schema artifact is exactly what the Structs generate.

The artifact is ``schemas/1.0/protocol.schema.json`` at the top of the
repository; this package sees it as ``tests/schemas/1.0/...`` (a symlink in
the repository, real files in the sdist) and ships it as package data
(``json_schema()``). Regenerate it with ``python tools/gen_schema.py`` (or
``hatch run schema:generate``) after changing a Struct.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import samgita_protocol
from samgita_protocol import _document

SCHEMAS = Path(__file__).resolve().parent / "schemas" / "1.0"
ARTIFACT = SCHEMAS / "protocol.schema.json"
REGENERATE = (
    "stale artifact: run `python tools/gen_schema.py` (hatch run schema:generate)"
)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return _document.build_document()


def _dotted(method: str) -> str:
    return method.replace("/", ".")


def test_generated_bytes_equal_the_committed_artifact() -> None:
    assert ARTIFACT.is_file(), f"{ARTIFACT} is missing (fixtures not shipped?)"
    assert _document.build_document_bytes() == ARTIFACT.read_bytes(), REGENERATE


def test_generation_is_deterministic() -> None:
    first = _document.build_document_bytes()
    assert first == _document.build_document_bytes()
    assert first.endswith(b"}\n") and not first.endswith(b"\n\n")
    text = json.dumps(json.loads(first), indent=2, sort_keys=True, ensure_ascii=False)
    assert (text + "\n").encode("utf-8") == first, "keys are not sorted"


def test_package_data_is_the_same_artifact() -> None:
    shipped = samgita_protocol.json_schema()
    assert shipped == json.loads(ARTIFACT.read_bytes())
    assert shipped["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert shipped["$id"] == "urn:samgita-protocol:schema:1.0"


def test_json_schema_returns_a_fresh_document() -> None:
    first = samgita_protocol.json_schema()
    first["$defs"].clear()
    assert samgita_protocol.json_schema()["$defs"], (
        "json_schema() handed out shared state"
    )


def test_every_method_has_its_envelope_params_and_result(
    document: dict[str, Any],
) -> None:
    defs = document["$defs"]
    requests = {ref["$ref"] for ref in defs["request"]["oneOf"]}
    notifications = {ref["$ref"] for ref in defs["notification"]["oneOf"]}
    for name, spec in samgita_protocol.METHODS.items():
        dotted = _dotted(name)
        assert f"{dotted}.params" in defs, name
        envelope_name = f"{dotted}.{spec.kind}"
        envelope = defs[envelope_name]
        assert envelope["properties"]["method"] == {"const": name}
        assert envelope["properties"]["params"] == {"$ref": f"#/$defs/{dotted}.params"}
        assert envelope["additionalProperties"] is False
        assert envelope["dependentRequired"]["task_ref"] == ["project_ref"]
        if spec.kind == "request":
            assert f"#/$defs/{envelope_name}" in requests
            assert f"{dotted}.result" in defs, f"no $defs/{dotted}.result"
        else:
            assert f"#/$defs/{envelope_name}" in notifications
            assert envelope["dependentRequired"]["stream_id"] == ["cursor"]
            assert envelope["dependentRequired"]["cursor"] == ["stream_id"]
    assert len(requests) + len(notifications) == len(samgita_protocol.METHODS)


def test_command_id_is_required_on_mutations_and_absent_otherwise(
    document: dict[str, Any],
) -> None:
    defs = document["$defs"]
    for name, spec in samgita_protocol.METHODS.items():
        if spec.kind != "request":
            continue
        envelope = defs[f"{_dotted(name)}.request"]
        if spec.mutation:
            assert "command_id" in envelope["required"], name
            assert "command_id" in envelope["properties"], name
        else:
            assert "command_id" not in envelope["properties"], name
            assert "command_id" not in envelope["required"], name


def test_response_has_exactly_one_of_result_or_error(document: dict[str, Any]) -> None:
    response = document["$defs"]["response"]
    branches = [branch["required"] for branch in response["oneOf"]]
    assert sorted(branches) == [["error"], ["result"]]
    assert response["properties"]["result"] == {"type": "object"}
    assert "result" not in response["required"] and "error" not in response["required"]


def test_no_openapi_only_keywords(document: dict[str, Any]) -> None:
    # msgspec marks tagged unions with OpenAPI's "discriminator", which is not
    # JSON Schema 2020-12 (Ajv's strict mode refuses it).
    assert '"discriminator"' not in json.dumps(document)
