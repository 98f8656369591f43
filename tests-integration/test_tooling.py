"""The pins of the dev tooling agree with each other.

hatch.toml's default environment (what tools/test runs in), each package's
``test`` dependency group (what tools/verify_standalone.py installs next to
a wheel), the hatch pin of tools/bootstrap.sh and the npm peers must not
drift apart silently.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from peers import PEERS, ROOT

PACKAGE_DIRS = [
    ROOT / "packages" / "samgita-protocol",
    ROOT / "packages" / "samgita-protocol-websocket",
    ROOT / "packages" / "samgita-protocol-codex",
    ROOT / "packages" / "samgita-protocol" / "examples" / "consumer",
]
# The versions issue 9 and the team plan pin.
DEV_PINS = {
    "pytest": "9.2.0",
    "hypothesis": "6.170.17",
    "ruff": "0.17.6",
    "mypy": "2.4.1",
    "msgspec": "0.22.0",
    "websockets": "17.4",
}


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for req in requirements:
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==([^;,\s]+)", req.strip())
        assert m, f"not an exact pin: {req!r}"
        pins[m.group(1).lower()] = m.group(2)
    return pins


def _hatch() -> dict[str, object]:
    return tomllib.loads((ROOT / "hatch.toml").read_text(encoding="utf-8"))


# Pins of the other hatch environments (tools beyond the dev set).
OTHER_PINS = {
    "mcp": "2.3.0",
    "datamodel-code-generator": "0.89.0",
}
# The build backend every package builds with: the one the pinned hatch
# brings (tools/hatch-constraints.txt).
HATCHLING = "hatchling==1.33.0"


def test_dev_environment_pins_exactly() -> None:
    envs = _hatch()["envs"]
    assert isinstance(envs, dict)
    assert _pins(envs["default"]["dependencies"]) == DEV_PINS


def test_every_hatch_environment_pins_exactly() -> None:
    envs = _hatch()["envs"]
    assert isinstance(envs, dict)
    known = DEV_PINS | OTHER_PINS
    for name, env in envs.items():
        pins = _pins(env.get("dependencies", []))  # every entry an exact pin
        for dist, version in pins.items():
            assert dist in known, f"[envs.{name}]: {dist} is not a known pin"
            assert version == known[dist], f"[envs.{name}]: {dist}=={version}"
        if "template" in env:
            assert env["template"] in envs, name
    assert _pins(envs["codegen"]["dependencies"]) == {
        "datamodel-code-generator": "0.89.0"
    }
    assert _pins(envs["bench"]["dependencies"])["mcp"] == "2.3.0"
    assert _pins(envs["lint"]["dependencies"]) == {"ruff": DEV_PINS["ruff"]}
    test_env = _pins(envs["hatch-test"]["dependencies"])
    assert test_env == {k: DEV_PINS[k] for k in test_env}
    assert envs["hatch-test"]["default-args"] == []


def test_build_backend_is_pinned_to_the_hatchling_of_the_pinned_hatch() -> None:
    constraints = (ROOT / "tools" / "hatch-constraints.txt").read_text("utf-8")
    assert HATCHLING in constraints.splitlines()
    for directory in PACKAGE_DIRS:
        project = tomllib.loads((directory / "pyproject.toml").read_text("utf-8"))
        system = project["build-system"]
        assert system["requires"] == [HATCHLING], directory
        assert system["build-backend"] == "hatchling.build", directory


def test_msgspec_pin_is_the_floor_of_the_core_range() -> None:
    core = tomllib.loads(
        (ROOT / "packages" / "samgita-protocol" / "pyproject.toml").read_text("utf-8")
    )
    [msgspec] = [d for d in core["project"]["dependencies"] if d.startswith("msgspec")]
    assert f">={DEV_PINS['msgspec'].rsplit('.', 1)[0]}" in msgspec.replace(" ", "")


def test_package_test_groups_match_the_dev_environment() -> None:
    for directory in PACKAGE_DIRS:
        project = tomllib.loads((directory / "pyproject.toml").read_text("utf-8"))
        group = _pins(project["dependency-groups"]["test"])
        for name, version in group.items():
            if name in DEV_PINS:
                assert version == DEV_PINS[name], f"{directory.name}: {name}=={version}"
        assert "pytest" in group, directory


def test_workspace_lists_every_package() -> None:
    envs = _hatch()["envs"]
    assert isinstance(envs, dict)
    members = envs["default"]["workspace"]["members"]
    assert sorted(members) == sorted(str(d.relative_to(ROOT)) for d in PACKAGE_DIRS)


def test_hatch_is_pinned_for_bootstrap() -> None:
    lines = (ROOT / "tools" / "requirements-hatch.txt").read_text("utf-8").splitlines()
    assert "hatch==1.18.2" in lines
    constraints = (
        (ROOT / "tools" / "hatch-constraints.txt").read_text("utf-8").splitlines()
    )
    assert all(
        "==" in line
        for line in constraints
        if line.strip() and not line.startswith("#")
    )


def test_npm_peers_are_exact_and_locked() -> None:
    package = json.loads((PEERS / "package.json").read_text("utf-8"))
    lock = json.loads((PEERS / "package-lock.json").read_text("utf-8"))
    assert package["dependencies"] == {
        "@openai/codex": "0.163.0",
        "ajv": "8.17.1",
        "ws": "8.18.3",
    }
    for name, version in package["dependencies"].items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert lock["packages"][""]["dependencies"] == package["dependencies"]


def test_ci_runs_exactly_tools_test() -> None:
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    commands = [
        line.strip()
        for line in ci.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands[-1] == "exec tools/test"
    assert Path(ROOT / "tools" / "test").stat().st_mode & 0o111
