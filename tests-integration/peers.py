"""Helpers for tests-integration/ (several packages, outside peers).

Import them as ``from peers import require_peer, run_node`` (pytest.ini puts
this directory on sys.path).

The Node peers are pinned in package.json / package-lock.json here and
installed by tools/test (tools/bootstrap.sh: ``npm ci`` when the lockfile
changed). A missing ``node`` or peer fails the test that needs it, loudly:
nothing here ever skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(__file__).resolve().parent
NODE_MODULES = PEERS / "node_modules"
SCHEMAS = ROOT / "schemas" / "1.0"


def node_binary() -> str:
    """Path of ``node``; fails the calling test when it is not on PATH."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not on PATH: tests-integration/ needs Node.js (see README)"
        )
    return node


def require_peer(name: str) -> Path:
    """Directory of the installed npm peer ``name`` at its locked version.

    Fails the calling test when the peer is missing or its installed version
    differs from package-lock.json (run tools/test, or ``npm ci`` in
    tests-integration/).
    """
    lock = json.loads((PEERS / "package-lock.json").read_text(encoding="utf-8"))
    entry = lock["packages"].get(f"node_modules/{name}")
    if entry is None:
        pytest.fail(f"{name} is not pinned in tests-integration/package-lock.json")
    installed = NODE_MODULES / name / "package.json"
    if not installed.is_file():
        pytest.fail(
            f"npm peer {name} is not installed: run tools/test (or npm ci in tests-integration/)"
        )
    version = json.loads(installed.read_text(encoding="utf-8"))["version"]
    if version != entry["version"]:
        pytest.fail(
            f"npm peer {name} is {version}, the lockfile pins {entry['version']}: run npm ci"
        )
    return installed.parent


def run_node(
    script: Path, *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run a Node script from tests-integration/ and capture its output."""
    return subprocess.run(
        [node_binary(), str(script), *args],
        cwd=PEERS,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
