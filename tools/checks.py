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
wrong. Exits 1 if any step failed. A pytest run also fails when it skipped,
xfailed or xpassed anything (a skip hides work: every test here must run) or
collected no tests (pytest's exit 5). Arguments checks.py does not know go to
every pytest run (``hatch test -- -x`` -> ``pytest tests -x``).

The last lines are each pytest run's own summary line, then one
``N passed, N failed, N skipped`` line for the in-repo runs (the packages'
tests and tests-integration/), one for the standalone runs (the same package
tests again, against installed wheels outside the repository), and last the
sum of both, labelled, where failed counts failed and erroring tests plus
failed steps without failed tests of their own (ruff, mypy, a metadata check).
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
# (or, under -q, the same without the frame).
SUMMARY = re.compile(
    r"^(?:=+ (?P<body>(?:\d+ \w+(?:, )?)+)(?: in [\d.]+s.*)? =+"
    r"|(?P<bare>(?:\d+ \w+(?:, )?)+) in [\d.]+s.*)$"
)
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
# pytest's exit status when it collected nothing.
NO_TESTS_COLLECTED = 5


@dataclass
class Step:
    name: str
    argv: list[str]
    cwd: Path
    is_pytest: bool = False
    # The standalone step re-runs the package tests against installed wheels;
    # its counts are reported apart from the in-repo runs.
    standalone: bool = False
    rc: int | None = None
    seconds: float = 0.0
    summaries: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """passed / failed (incl. errors) / skipped / xfailed / xpassed."""
        out = dict.fromkeys(("passed", "failed", "skipped", "xfailed", "xpassed"), 0)
        for line in self.summaries:
            for n, word in COUNT.findall(line):
                if word in ("error", "errors"):
                    word = "failed"
                if word in out:
                    out[word] += int(n)
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

    def ok(self) -> bool:
        return self.rc == 0 and self.hidden() == 0

    def verdict(self) -> str:
        if self.rc == NO_TESTS_COLLECTED and self.is_pytest:
            return "FAILED (exit 5: no tests collected)"
        if self.rc != 0:
            return f"FAILED (exit {self.rc})"
        if self.hidden():
            c = self.counts()
            what = ", ".join(
                f"{c[k]} {k}" for k in ("skipped", "xfailed", "xpassed") if c[k]
            )
            return f"FAILED ({what}: every test must run)"
        return "ok"


def plan(
    only: set[str], packages: list[str], pytest_args: list[str] | None = None
) -> list[Step]:
    py = sys.executable
    passthrough = list(pytest_args or [])
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
                    [py, "-m", "pytest", "tests", *passthrough],
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
                [py, "-m", "pytest", ".", *passthrough],
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
                standalone=True,
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
            if step.is_pytest and SUMMARY.fullmatch(stripped):
                step.summaries.append(stripped)
        step.rc = proc.wait()
    step.seconds = time.monotonic() - start
    sys.stdout.flush()


def format_counts(c: dict[str, int]) -> str:
    line = f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
    for key in ("xfailed", "xpassed"):
        if c[key]:
            line += f", {c[key]} {key}"
    return line


def total(steps: list[Step]) -> dict[str, int]:
    out = dict.fromkeys(("passed", "failed", "skipped", "xfailed", "xpassed"), 0)
    for step in steps:
        for key, n in step.counts().items():
            out[key] += n
        if step.rc == 0 and step.hidden():
            # The step failed on its skips alone: count it once as a failure.
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
    # Anything else (e.g. -x, -k expr) is handed to every pytest run.
    args, pytest_args = parser.parse_known_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(STEPS)
    if unknown:
        parser.error(f"unknown step(s): {', '.join(sorted(unknown))}")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")

    steps = plan(only, args.package or list(PACKAGES), pytest_args)
    started = time.monotonic()
    for step in steps:
        run(step)

    print("\n" + "=" * 30 + " tools/checks summary " + "=" * 30)
    for step in steps:
        print(f"{step.verdict():<18} {step.name}  [{step.seconds:.1f}s]")
    for step in steps:
        for line in step.summaries:
            print(f"{step.name}: {line}")
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
