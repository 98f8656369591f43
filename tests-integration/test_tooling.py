"""The dev tooling: its pins agree with each other, and tools/ works.

hatch.toml's default environment (what tools/test runs in), each package's
``test`` dependency group (what tools/verify_standalone.py installs next to
a wheel), the hatch pin of tools/bootstrap.sh and the npm peers must not
drift apart silently. Then the parts of tools/ the checks rely on: the
pytest outcome recorder (tools/pytest_outcomes.py) and how tools/checks.py
judges a run by it, the docs step without $MKDOCS, the requirement handling
of tools/verify_standalone.py, and no import cycle among tools/.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from peers import PEERS, ROOT

TOOLS = ROOT / "tools"

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
    "packaging": "26.4",
    # The PostgreSQL store backend (the core's postgres extra, with libpq's
    # binary build) and the server its tests start (issue 22).
    "psycopg[binary]": "3.3.9",
    "pgserver": "0.1.4",
}


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = {}
    for req in requirements:
        m = re.fullmatch(
            r"([A-Za-z0-9._-]+(?:\[[A-Za-z0-9._,-]+\])?)==([^;,\s]+)", req.strip()
        )
        assert m, f"not an exact pin: {req!r}"
        pins[m.group(1).lower()] = m.group(2)
    return pins


def _hatch() -> dict[str, object]:
    return tomllib.loads((ROOT / "hatch.toml").read_text(encoding="utf-8"))


# Pins of the other hatch environments (tools beyond the dev set).
OTHER_PINS = {
    "mcp": "2.3.0",
    "datamodel-code-generator": "0.89.0",
    "coverage": "7.18.0",
    # the documentation site (hatch env `docs`)
    "mkdocs": "1.6.1",
    "mkdocs-material": "9.8.2",
    "mkdocstrings": "1.0.8",
    "mkdocstrings-python": "2.0.11",
    "griffelib": "2.4.1",
    "pymdown-extensions": "13.1.2",
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
    assert test_env == {k: known[k] for k in test_env}
    assert test_env["coverage"] == OTHER_PINS["coverage"]
    assert envs["hatch-test"]["default-args"] == []
    # tools/verify_standalone.py runs in `default` or `standalone`.
    assert _pins(envs["standalone"]["dependencies"]) == {
        "packaging": DEV_PINS["packaging"]
    }


def test_hatch_test_cover_runs_coverage_py() -> None:
    envs = _hatch()["envs"]
    assert isinstance(envs, dict)
    scripts = envs["hatch-test"]["scripts"]
    assert "--cover" in scripts["run-cov"]
    assert "--cover" not in scripts["run"]
    assert scripts["cov-combine"] == "coverage combine"
    assert scripts["cov-report"] == "coverage report"


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


def test_the_postgres_extra_pins_what_the_dev_environment_tests() -> None:
    core = tomllib.loads(
        (ROOT / "packages" / "samgita-protocol" / "pyproject.toml").read_text("utf-8")
    )
    extra = _pins(core["project"]["optional-dependencies"]["postgres"])
    assert extra == {"psycopg[binary]": DEV_PINS["psycopg[binary]"]}
    group = _pins(core["dependency-groups"]["test"])
    assert {k: group[k] for k in ("psycopg[binary]", "pgserver")} == {
        "psycopg[binary]": DEV_PINS["psycopg[binary]"],
        "pgserver": DEV_PINS["pgserver"],
    }


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


# -- tools/ ------------------------------------------------------------------


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """tools/ importable (as it is for the scripts in it)."""
    monkeypatch.syspath_prepend(str(TOOLS))


def _tool(name: str) -> ModuleType:
    return importlib.import_module(name)


OUTCOMES = """
import pytest

def test_passes(): pass

def test_fails(): assert False

@pytest.mark.skip(reason="demo")
def test_skipped(): pass

@pytest.mark.xfail(reason="demo")
def test_xfails(): assert False

@pytest.mark.xfail(reason="demo")
def test_xpasses(): pass

@pytest.fixture
def broken(): raise RuntimeError("setup")

def test_errors(broken): pass
"""


def test_outcome_recorder_writes_pytest_counts(tmp_path: Path) -> None:
    (tmp_path / "test_mix.py").write_text(OUTCOMES, "utf-8")
    record = tmp_path / "outcomes.jsonl"
    env = dict(os.environ, PYTHONPATH=str(TOOLS), SAMGITA_PYTEST_OUTCOMES=str(record))
    for _ in range(2):  # one JSON line per session, appended
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "pytest_outcomes", "-p"]
            + ["no:cacheprovider", "-q", "test_mix.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [json.loads(x) for x in record.read_text("utf-8").splitlines()]
    assert len(lines) == 2
    counts = {k: 1 for k in ("passed", "failed", "skipped", "xfailed", "xpassed")}
    assert lines[0]["counts"] == counts | {"error": 1}
    assert lines[0]["exitstatus"] == 1
    assert lines[0]["summary"].startswith(
        "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error in "
    )
    # without the variable the plugin records nothing
    env.pop("SAMGITA_PYTEST_OUTCOMES")
    record.unlink()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_outcomes", "-q", "test_mix.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
    )
    assert not record.exists()


def _pytest_step(tmp_path: Path, tests: dict[str, str]) -> tuple[ModuleType, object]:
    checks = _tool("checks")
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, text in tests.items():
        (suite / name).write_text(text, "utf-8")
    step = checks.pytest_step(
        "demo: pytest", ["-p", "no:cacheprovider", "-q"], suite, tmp_path / "o", None
    )
    checks.run(step)
    return checks, step


@pytest.mark.usefixtures("tools")
def test_checks_counts_a_run_from_the_recorder(tmp_path: Path) -> None:
    checks, step = _pytest_step(tmp_path, {"test_ok.py": "def test_a(): pass\n"})
    assert step.ok() and step.verdict() == "ok"
    assert step.counts() == dict.fromkeys(checks.KEYS, 0) | {"passed": 1}
    assert [o.summary.split(" in ")[0] for o in step.outcomes] == ["1 passed"]


@pytest.mark.usefixtures("tools")
def test_checks_fails_a_run_that_skips(tmp_path: Path) -> None:
    test = "import pytest\n\n@pytest.mark.skip\ndef test_a(): pass\n"
    checks, step = _pytest_step(tmp_path, {"test_skip.py": test})
    assert step.rc == 0 and not step.ok()
    assert step.verdict() == "FAILED (1 skipped: every test must run)"
    # counted once as a failure in the totals
    assert checks.total([step])["failed"] == 1


@pytest.mark.usefixtures("tools")
def test_checks_fails_a_run_that_collected_nothing(tmp_path: Path) -> None:
    checks, step = _pytest_step(tmp_path, {})
    assert step.rc == checks.NO_TESTS_COLLECTED and not step.ok()
    assert step.verdict() == "FAILED (exit 5: no tests collected)"
    assert checks.total([step])["failed"] == 1


@pytest.mark.usefixtures("tools")
def test_checks_counts_errors_as_failed(tmp_path: Path) -> None:
    _, step = _pytest_step(tmp_path, {"test_mix.py": OUTCOMES})
    assert step.verdict() == "FAILED (exit 1)"
    assert step.counts() == {
        "passed": 1,
        "failed": 2,  # the failed test and the erroring one
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
    }


def test_checks_docs_step_fails_without_mkdocs() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MKDOCS"}
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "checks.py"), "--only", "docs"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    message = "MKDOCS is not set: run tools/test, which installs the docs env"
    assert f"docs: mkdocs build --strict: {message}" in proc.stdout
    assert f"FAILED ({message}) docs: mkdocs build --strict" in proc.stdout
    assert "0 passed, 1 failed, 0 skipped  (all runs)" in proc.stdout


@pytest.mark.usefixtures("tools")
def test_checks_docs_step_builds_strictly_into_a_scratch_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    checks = _tool("checks")
    assert checks.STEPS.index("integration") + 1 == checks.STEPS.index("docs")
    assert checks.STEPS.index("docs") + 1 == checks.STEPS.index("standalone")
    monkeypatch.setenv("MKDOCS", "/pinned/bin/mkdocs")
    [step] = checks.plan({"docs"}, [], tmp_path)
    assert step.unavailable is None and step.cwd == ROOT
    assert step.argv == [
        "/pinned/bin/mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--site-dir",
        str(tmp_path / "site"),
    ]


@pytest.mark.usefixtures("tools")
def test_checks_cover_runs_pytest_under_coverage(tmp_path: Path) -> None:
    checks = _tool("checks")
    [step] = checks.plan({"integration"}, [], tmp_path, ["-x"], checks.COVERAGE_RC)
    assert step.argv[1:5] == ["-m", "coverage", "run", f"--rcfile={ROOT}/.coveragerc"]
    assert step.argv[5:] == [
        "--parallel-mode",
        "-m",
        "pytest",
        "-p",
        "pytest_outcomes",
        ".",
        "-x",
    ]
    # every run's data lands in the one file `coverage combine` reads
    assert step.env["COVERAGE_FILE"] == str(ROOT / ".tools/coverage/.coverage")


@pytest.mark.usefixtures("tools")
def test_verify_standalone_parses_requirements_with_packaging() -> None:
    vs = _tool("verify_standalone")
    same = vs.normalize_requirement
    assert same("Foo_Bar[X] >= 1.0 , <2 ; extra == 'x'") == same(
        'foo-bar[x]<2,>=1.0; extra=="x"'
    )
    assert same("a>=1") != same("a>=1,<2")
    # what hatchling writes into METADATA equals what pyproject.toml declares
    pyproject = {
        "project": {
            "dependencies": ["msgspec>=0.22,<0.24"],
            "optional-dependencies": {
                "websocket": ["samgita-protocol-websocket>=0.1,<0.2"],
                "win": ['pywin32>=1; sys_platform == "win32"'],
            },
        }
    }
    metadata = [
        "msgspec<0.24,>=0.22",
        "samgita-protocol-websocket<0.2,>=0.1; extra == 'websocket'",
        "pywin32>=1; (sys_platform == 'win32') and extra == 'win'",
    ]
    assert vs.declared_requirements(pyproject) == {same(r) for r in metadata}
    with pytest.raises(vs.Failure, match="cannot parse requirement"):
        same("not a requirement!")


@pytest.mark.usefixtures("tools")
def test_verify_standalone_follows_markers_and_our_names() -> None:
    vs = _tool("verify_standalone")
    extra = vs.parse_requirement("samgita-protocol-codex>=0.1; extra == 'codex'")
    assert not vs.pulled(extra)
    assert vs.pulled(extra, ("codex",)) and not vs.pulled(extra, ("websocket",))
    assert vs.pulled(vs.parse_requirement("msgspec>=0.22"))
    assert vs.is_ours("Samgita_Protocol.Codex") and not vs.is_ours("msgspec")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_tools_import_each_other_without_a_cycle() -> None:
    modules = {path.stem: path for path in TOOLS.glob("*.py")}
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}
    assert "transcript" in graph["demo"] and "transcript" in graph["demo_codex"]
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, f"import cycle: {' -> '.join((*trail, name))}"
        if name in done:
            return
        for imported in graph[name]:
            visit(imported, (*trail, name))
        done.add(name)

    for name in graph:
        visit(name, ())
