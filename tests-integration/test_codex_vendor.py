"""The vendored Codex schemas are exactly what the pinned codex 0.163.0 generates.

Regenerates both folders (stable, --experimental) with the real binary into a
temporary directory and fails on any difference, including the manifest. The
binary is $CODEX_BIN or tests-integration/node_modules/.bin/codex; a missing
binary or any other version fails the test (never a skip).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_codex_types", ROOT / "tools" / "gen_codex_types.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


def _tree(base: Path) -> dict[str, bytes]:
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file()
    }


def test_vendored_schemas_match_pinned_codex(tmp_path: Path) -> None:
    binary = tool.codex_binary()  # raises ToolError (test fails) when missing
    version = tool.check_codex_version(binary)
    tool.generate_schema_folders(binary, tmp_path)
    for folder in tool.FOLDERS:
        fresh = _tree(tmp_path / folder)
        vendored = _tree(tool.VENDOR_DIR / folder)
        assert sorted(fresh) == sorted(vendored), f"{folder}: file lists differ"
        changed = [name for name in fresh if fresh[name] != vendored[name]]
        assert not changed, (
            f"{folder}: files differ from the pinned generator: {changed[:10]}"
        )
    fresh_manifest = tool.manifest_bytes(tool.build_manifest(tmp_path, version))
    assert fresh_manifest == (tool.VENDOR_DIR / tool.MANIFEST).read_bytes()


def test_manifest_facts() -> None:
    manifest = json.loads((tool.VENDOR_DIR / tool.MANIFEST).read_bytes())
    assert manifest["codex_version"] == "codex-cli 0.163.0"
    assert manifest["folders"]["stable"]["file_count"] == 318
    assert manifest["folders"]["experimental"]["file_count"] == 452
    for folder, entry in manifest["folders"].items():
        for name, digest in entry["files"].items():
            assert tool.sha256_file(tool.VENDOR_DIR / folder / name) == digest, name
    bundle = json.loads((tool.VENDOR_DIR / "stable" / tool.BUNDLE).read_bytes())
    assert bundle["$schema"] == "http://json-schema.org/draft-07/schema#"
    unions = {
        name: len(bundle["definitions"][name]["oneOf"])
        for name in (
            "ClientRequest",
            "ServerRequest",
            "ServerNotification",
            "ClientNotification",
        )
    }
    assert unions == {
        "ClientRequest": 105,
        "ServerRequest": 10,
        "ServerNotification": 85,
        "ClientNotification": 1,
    }


def test_other_codex_version_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.162.0'\n")
    fake.chmod(0o755)
    with pytest.raises(
        tool.ToolError, match=r"only 'codex-cli 0\.163\.0' is supported"
    ):
        tool.generate_schema_folders(fake, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_missing_binary_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_BIN", str(tmp_path / "nope"))
    with pytest.raises(tool.ToolError, match="codex binary not found"):
        tool.codex_binary()
