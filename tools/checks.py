#!/usr/bin/env python3
"""Run every check of the monorepo and print one summary (stdlib only).

tools/test runs this inside hatch's default environment (the three packages
installed from the workspace, dev tools pinned in hatch.toml). Steps, in
order, each may be selected with ``--only``:

  lint         ruff check + ruff format --check, per package, then of tools/,
               tests-integration/ and examples/
  types        mypy --strict of the package's src/, per package, then of examples/
  pytest       the package's own tests (its pyproject.toml configures pytest)
  integration  pytest of tests-integration/ (Node peers, several packages)
  docs         mkdocs build --strict of mkdocs.yml ($MKDOCS: tools/test sets
               it to the pinned docs environment's mkdocs; unset, it fails)
  standalone   tools/verify_standalone.py (wheels tested outside the repo)

Every step runs even after a failure, so one run shows everything that is
wrong. Exits 1 if any step failed. A pytest run also fails when it skipped,
xfailed or xpassed anything (a skip hides work: every test here must run) or
collected no tests (pytest's exit 5). Arguments checks.py does not know go to
every pytest run (``hatch test -- -x`` -> ``pytest tests -x``). ``--cover``
runs the in-repo pytest runs under coverage.py (``hatch test --cover``).

Every pytest run loads tools/pytest_outcomes.py, which writes pytest's own
outcome counts to a file this script names per step (the counts are never
parsed from pytest's output); a pytest step that records no run fails.

The last lines are each pytest run's own summary line, then one
``N passed, N failed, N skipped`` line for the in-repo runs (the packages'
tests and tests-integration/), one for the standalone runs (the same package
tests again, against installed wheels outside the repository), and last the
sum of both, labelled, where failed counts failed and erroring tests plus
failed steps without failed tests of their own (ruff, mypy, a metadata check).
"""

from __future__ import annotations

import argparse
import configparser
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest_outcomes
from pytest_outcomes import Outcome

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
# name -> (directory, import name); the consumer example is checked like a package.
PACKAGES = {
    "samgita-protocol": ("packages/samgita-protocol", "samgita_protocol"),
    "samgita-protocol-websocket": (
        "packages/samgita-protocol-websocket",
        "samgita_protocol_websocket",
    ),
    "samgita-protocol-codex": (
        "packages/samgita-protocol-codex",
        "samgita_protocol_codex",
    ),
    "samgita-protocol-consumer-example": (
        "packages/samgita-protocol/examples/consumer",
        "samgita_protocol_consumer_example",
    ),
}
STEPS = ("lint", "types", "pytest", "integration", "docs", "standalone")
NO_MKDOCS = "MKDOCS is not set: run tools/test, which installs the docs env"
# The coverage.py configuration of `--cover` (hatch test --cover passes its
# own copy of it in $COVERAGE_RCFILE).
COVERAGE_RC = ROOT / ".coveragerc"
# pytest's exit status when it collected nothing.
NO_TESTS_COLLECTED = 5
# The counts a step reports (pytest's "error" is counted as failed).
KEYS = ("passed", "failed", "skipped", "xfailed", "xpassed")


@dataclass
class Step:
    name: str
    argv: list[str]
    cwd: Path
    is_pytest: bool = False
    # The standalone step re-runs the package tests against installed wheels;
    # its counts are reported apart from the in-repo runs.
    standalone: bool = False
    # Extra environment of the step's process.
    env: dict[str, str] = field(default_factory=dict)
    # Why the step cannot run (it fails without running), if it cannot.
    unavailable: str | None = None
    rc: int | None = None
    seconds: float = 0.0
    # Where the step's pytest runs record their outcomes
    # (tools/pytest_outcomes.py), and what they recorded.
    outcomes_file: Path | None = None
    outcomes: list[Outcome] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """passed / failed (incl. errors) / skipped / xfailed / xpassed."""
        out = dict.fromkeys(KEYS, 0)
        for outcome in self.outcomes:
            for key in KEYS:
                out[key] += outcome.count(key)
            out["failed"] += outcome.count("error")
        if self.rc != 0 and out["failed"] == 0:
            # A failed step without failed tests of its own (ruff, mypy, an
            # empty or crashed pytest run, a metadata check) counts as one.
            out["failed"] = 1
        return out

    def hidden(self) -> int:
        """Tests that did not simply pass or fail (skip, xfail, xpass)."""
        if not self.is_pytest:
            return 0
        c = self.counts()
        return c["skipped"] + c["xfailed"] + c["xpassed"]

    def unrecorded(self) -> bool:
        """A pytest step that passed without recording any run: its counts
        are unknown (the plugin did not run), so it cannot pass."""
        return self.is_pytest and self.rc == 0 and not self.outcomes

    def ok(self) -> bool:
        return self.rc == 0 and self.hidden() == 0 and not self.unrecorded()

    def verdict(self) -> str:
        if self.unavailable is not None:
            return f"FAILED ({self.unavailable})"
        if self.rc == NO_TESTS_COLLECTED and self.is_pytest:
            return "FAILED (exit 5: no tests collected)"
        if self.unrecorded():
            return "FAILED (no pytest outcomes recorded)"
        if self.rc != 0:
            return f"FAILED (exit {self.rc})"
        if self.hidden():
            c = self.counts()
            what = ", ".join(
                f"{c[k]} {k}" for k in ("skipped", "xfailed", "xpassed") if c[k]
            )
            return f"FAILED ({what}: every test must run)"
        return "ok"


def coverage_run(rcfile: Path) -> tuple[list[str], dict[str, str]]:
    """The ``coverage run`` arguments before ``-m pytest`` and the
    environment that sends every run's data to the configured data file.

    The pytest runs start in several directories; ``data_file`` in the
    configuration is relative to the repository root, where ``coverage
    combine`` and ``coverage report`` run (hatch test --cover).
    """
    config = configparser.ConfigParser()
    config.read(rcfile, encoding="utf-8")
    data_file = ROOT / config.get("run", "data_file", fallback=".coverage")
    argv = ["coverage", "run", f"--rcfile={rcfile}", "--parallel-mode"]
    # COVERAGE_PROCESS_START: coverage.py's .pth file measures the Python
    # subprocesses of the tests too (as hatch test --cover sets it).
    env = {"COVERAGE_FILE": str(data_file), "COVERAGE_PROCESS_START": str(rcfile)}
    return argv, env


def pytest_step(
    name: str, args: list[str], cwd: Path, outcomes: Path, cover: Path | None
) -> Step:
    """A pytest run with tools/pytest_outcomes.py loaded, recording to
    ``outcomes``; under coverage.py (configured by ``cover``) when given."""
    path = os.pathsep.join(p for p in (str(TOOLS), os.environ.get("PYTHONPATH")) if p)
    env = {pytest_outcomes.ENV: str(outcomes), "PYTHONPATH": path}
    argv = [sys.executable, "-m"]
    if cover is not None:
        coverage, cover_env = coverage_run(cover)
        argv += [*coverage, "-m"]
        env |= cover_env
    argv += ["pytest", *pytest_outcomes.PYTEST_ARGS, *args]
    return Step(name, argv, cwd, is_pytest=True, env=env, outcomes_file=outcomes)


def docs_step(site: Path) -> Step:
    """mkdocs build --strict of mkdocs.yml into ``site`` (a scratch
    directory); without $MKDOCS the step fails without running."""
    mkdocs = os.environ.get("MKDOCS")
    argv = [mkdocs or "mkdocs", "build", "--strict"]
    argv += ["--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)]
    return Step(
        "docs: mkdocs build --strict",
        argv,
        ROOT,
        unavailable=None if mkdocs else NO_MKDOCS,
    )


def plan(
    only: set[str],
    packages: list[str],
    scratch: Path,
    pytest_args: list[str] | None = None,
    cover: Path | None = None,
) -> list[Step]:
    """The steps selected by ``only`` and ``packages``, in order. ``scratch``
    holds what they write (outcome records, the docs site); ``cover`` is the
    coverage.py configuration the in-repo pytest runs run under, if any."""
    py = sys.executable
    passthrough = list(pytest_args or [])
    steps: list[Step] = []

    def outcomes() -> Path:
        return scratch / f"outcomes-{len(steps)}.jsonl"

    for dist in packages:
        path, mod = PACKAGES[dist]
        pkg = ROOT / path
        if "lint" in only:
            steps.append(
                Step(f"{dist}: ruff check", [py, "-m", "ruff", "check", "."], pkg)
            )
            steps.append(
                Step(
                    f"{dist}: ruff format --check",
                    [py, "-m", "ruff", "format", "--check", "."],
                    pkg,
                )
            )
        if "types" in only:
            steps.append(
                Step(
                    f"{dist}: mypy --strict src/",
                    [py, "-m", "mypy", "--strict", f"src/{mod}"],
                    pkg,
                )
            )
        if "pytest" in only:
            args = ["tests", *passthrough]
            steps.append(pytest_step(f"{dist}: pytest", args, pkg, outcomes(), cover))
    if "types" in only:
        # The examples are what users copy: they type-check as strictly as src/.
        steps.append(
            Step(
                "examples: mypy --strict",
                [py, "-m", "mypy", "--strict", "examples"],
                ROOT,
            )
        )
    if "lint" in only:
        for extra in ("tools", "tests-integration", "examples"):
            steps.append(
                Step(f"{extra}: ruff check", [py, "-m", "ruff", "check", extra], ROOT)
            )
            steps.append(
                Step(
                    f"{extra}: ruff format --check",
                    [py, "-m", "ruff", "format", "--check", extra],
                    ROOT,
                )
            )
    if "integration" in only:
        where = ROOT / "tests-integration"
        args = [".", *passthrough]
        steps.append(
            pytest_step("tests-integration: pytest", args, where, outcomes(), cover)
        )
    if "docs" in only:
        steps.append(docs_step(scratch / "site"))
    if "standalone" in only:
        # verify_standalone.py loads the plugin into its own pytest runs
        # and appends their outcomes (labelled by package) to this file.
        record = outcomes()
        steps.append(
            Step(
                "verify_standalone",
                [py, str(TOOLS / "verify_standalone.py")],
                ROOT,
                is_pytest=True,
                standalone=True,
                env={pytest_outcomes.ENV: str(record)},
                outcomes_file=record,
            )
        )
    return steps


def run(step: Step) -> None:
    where = step.cwd.relative_to(ROOT) if step.cwd.is_relative_to(ROOT) else step.cwd
    print(f"\n==> {step.name}   ({' '.join(step.argv[1:])}  in {where})", flush=True)
    if step.unavailable is not None:
        print(f"{step.name}: {step.unavailable}", flush=True)
        step.rc = 1
        return
    start = time.monotonic()
    step.rc = subprocess.run(
        step.argv,
        cwd=step.cwd,
        env={**os.environ, **step.env},
        stderr=subprocess.STDOUT,
        check=False,
    ).returncode
    step.seconds = time.monotonic() - start
    if step.outcomes_file is not None:
        step.outcomes = pytest_outcomes.read(step.outcomes_file)
    sys.stdout.flush()


def format_counts(c: dict[str, int]) -> str:
    line = f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
    for key in ("xfailed", "xpassed"):
        if c[key]:
            line += f", {c[key]} {key}"
    return line


def total(steps: list[Step]) -> dict[str, int]:
    out = dict.fromkeys(KEYS, 0)
    for step in steps:
        for key, n in step.counts().items():
            out[key] += n
        if step.rc == 0 and not step.ok():
            # The step failed on its skips (or its missing outcome record)
            # alone: count it once as a failure.
            out["failed"] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--only",
        default=",".join(STEPS),
        help=f"comma-separated subset of {','.join(STEPS)}",
    )
    parser.add_argument(
        "--package",
        action="append",
        choices=sorted(PACKAGES),
        help="limit per-package steps",
    )
    parser.add_argument(
        "--cover",
        action="store_true",
        help="run the in-repo pytest runs under coverage.py (.coveragerc, or"
        " $COVERAGE_RCFILE); `coverage combine` and `coverage report` follow"
        " (hatch test --cover runs all three)",
    )
    # Anything else (e.g. -x, -k expr) is handed to every pytest run.
    args, pytest_args = parser.parse_known_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(STEPS)
    if unknown:
        parser.error(f"unknown step(s): {', '.join(sorted(unknown))}")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    cover = None
    if args.cover:
        cover = Path(os.environ.get("COVERAGE_RCFILE") or COVERAGE_RC)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="samgita-checks-") as scratch:
        packages = args.package or list(PACKAGES)
        steps = plan(only, packages, Path(scratch), pytest_args, cover)
        for step in steps:
            run(step)

    print("\n" + "=" * 30 + " tools/checks summary " + "=" * 30)
    for step in steps:
        print(f"{step.verdict():<18} {step.name}  [{step.seconds:.1f}s]")
    for step in steps:
        for outcome in step.outcomes:
            label = f"{outcome.label}: " if outcome.label else ""
            print(f"{step.name}: {label}{outcome.summary}")
    in_repo = [s for s in steps if not s.standalone]
    standalone = [s for s in steps if s.standalone]
    print(f"total {time.monotonic() - started:.0f}s")
    repo_counts = total(in_repo)
    print(f"in-repo runs:    {format_counts(repo_counts)}")
    grand = repo_counts
    if standalone:
        alone = total(standalone)
        print(
            f"standalone runs: {format_counts(alone)}"
            "  (the package tests again, against the installed wheels)"
        )
        grand = {k: repo_counts[k] + alone[k] for k in repo_counts}
        print(f"{format_counts(grand)}  (all runs: in-repo + standalone)")
    else:
        print(f"{format_counts(grand)}  (all runs)")
    return 0 if all(step.ok() for step in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
