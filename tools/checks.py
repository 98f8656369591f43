#!/usr/bin/env python3
"""Run every check of the monorepo and print one summary (stdlib only).

tools/test runs this inside hatch's default environment (the three packages
installed from the workspace, dev tools pinned in hatch.toml). Steps, in
order, each may be selected with ``--only``:

  lint         ruff check + ruff format --check, per package
  types        mypy --strict of the package's src/, per package
  pytest       the package's own tests (its pyproject.toml configures pytest)
  integration  pytest of tests-integration/ (Node peers, several packages)
  standalone   tools/verify_standalone.py (wheels tested outside the repo)

Every step runs even after a failure, so one run shows everything that is
wrong. Exits 1 if any step failed. The last lines are each pytest run's own
summary line and then one combined ``N passed, N failed`` line, where failed
counts failed and erroring tests plus failed non-pytest steps.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
STEPS = ("lint", "types", "pytest", "integration", "standalone")

# pytest's closing line, e.g. "===== 3 failed, 120 passed, 1 skipped in 4.2s ====="
SUMMARY = re.compile(r"^=+ (?P<body>(?:\d+ \w+(?:, )?)+)(?: in [\d.]+s.*)? =+$")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")


@dataclass
class Step:
    name: str
    argv: list[str]
    cwd: Path
    is_pytest: bool = False
    rc: int | None = None
    seconds: float = 0.0
    summaries: list[str] = field(default_factory=list)


def plan(only: set[str], packages: list[str]) -> list[Step]:
    py = sys.executable
    steps: list[Step] = []
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
            steps.append(
                Step(
                    f"{dist}: pytest",
                    [py, "-m", "pytest", "tests"],
                    pkg,
                    is_pytest=True,
                )
            )
    if "lint" in only:
        for extra in ("tools", "tests-integration"):
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
        steps.append(
            Step(
                "tests-integration: pytest",
                [py, "-m", "pytest", "."],
                ROOT / "tests-integration",
                is_pytest=True,
            )
        )
    if "standalone" in only:
        steps.append(
            Step(
                "verify_standalone",
                [py, str(ROOT / "tools" / "verify_standalone.py")],
                ROOT,
                is_pytest=True,
            )
        )
    return steps


def run(step: Step) -> None:
    print(
        f"\n==> {step.name}   ({' '.join(step.argv[1:])}  in {step.cwd.relative_to(ROOT) or '.'})",
        flush=True,
    )
    start = time.monotonic()
    with subprocess.Popen(
        step.argv,
        cwd=step.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            stripped = line.strip()
            if step.is_pytest and SUMMARY.match(stripped):
                step.summaries.append(stripped)
        step.rc = proc.wait()
    step.seconds = time.monotonic() - start
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
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
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(STEPS)
    if unknown:
        parser.error(f"unknown step(s): {', '.join(sorted(unknown))}")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    steps = plan(only, args.package or list(PACKAGES))
    started = time.monotonic()
    for step in steps:
        run(step)

    passed = failed = 0
    print("\n" + "=" * 30 + " tools/checks summary " + "=" * 30)
    for step in steps:
        mark = "ok    " if step.rc == 0 else f"FAILED (exit {step.rc})"
        print(f"{mark:<18} {step.name}  [{step.seconds:.1f}s]")
    for step in steps:
        step_failed = 0
        for line in step.summaries:
            for n, word in COUNT.findall(line):
                if word == "passed":
                    passed += int(n)
                elif word in ("failed", "error", "errors"):
                    step_failed += int(n)
        if step.rc != 0 and step_failed == 0:
            # A failed step without failed tests of its own (ruff, mypy, an
            # empty or crashed pytest run, a metadata check) counts as one.
            step_failed = 1
        failed += step_failed
    for step in steps:
        for line in step.summaries:
            print(f"{step.name}: {line}")
    print(f"total {time.monotonic() - started:.0f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if all(step.rc == 0 for step in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
