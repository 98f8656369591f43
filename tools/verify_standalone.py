#!/usr/bin/env python3
"""Prove each package builds, installs and passes its tests outside the repo.

Needs the standard library and ``packaging`` (requirements, specifiers and
versions; pinned in hatch.toml's ``default`` and ``standalone``
environments). For each distribution (the core, the websocket and codex
siblings, and the core's examples/consumer project), in a temporary
directory outside the repository:

1. copy that package's directory alone (symlinks dereferenced, caches left
   out) and build its sdist there with hatch;
2. unpack the sdist and build the wheel from the unpacked sdist (so the sdist
   is complete), and check what both contain (the core: its fixtures, the
   manifest and the JSON Schema artifact as package data);
3. create a fresh virtual environment; install the wheel's third-party
   requirements and the package's ``test`` dependency group from the index,
   then the wheel itself with ``--no-index --find-links <fresh wheels>`` (our
   own names never come from an index; a sibling gets the core wheel just
   built);
4. check the installed metadata (Name, Version, Requires-Dist against the
   pyproject.toml of the sdist) and that every samgita distribution in the
   environment was installed from the fresh wheels;
5. copy the unpacked sdist without ``src/`` (so ``tests/``, pytest's
   configuration in ``pyproject.toml``, the README) into an empty directory
   and run pytest there, so the tests import the installed wheel, never a
   source tree. The run loads tools/pytest_outcomes.py (a copy outside the
   repository on PYTHONPATH), which records pytest's outcome counts; when
   ``$SAMGITA_PYTEST_OUTCOMES`` names a file (tools/checks.py sets it), each
   run's outcome is appended there too, labelled with the distribution.

Then it installs ``samgita-protocol[websocket]`` and
``samgita-protocol[codex]`` from the fresh wheels alone, checks the extras
pulled the siblings, and imports each.

    python tools/verify_standalone.py [--hatch PATH] [--keep] [--only NAME ...]

hatch is taken from --hatch, $HATCH, or PATH (tools/test provides the pinned
one). The pip cache ($PIP_CACHE_DIR) and virtualenv's app data
($VIRTUALENV_OVERRIDE_APP_DATA) default to .tools/ in the repository, as
tools/bootstrap.sh sets them, and are shared by every step. Each fresh
environment runs with its own bin/ first on PATH and the calling (dev)
environment's bin/ removed. Every venv that gets msgspec reports its version,
which must be the newest release in the core's range (the in-repo checks test
the floor). A package test run that skips, xfails or xpasses anything fails.
Exits 1 if anything failed, with a summary at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import email.parser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import venv
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest_outcomes
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Package:
    dist: str
    path: str
    module: str
    # Files (relative to the unpacked sdist / inside the wheel) that must ship.
    sdist_files: tuple[str, ...] = ()
    wheel_files: tuple[str, ...] = ()


PACKAGES = (
    Package(
        "samgita-protocol",
        "packages/samgita-protocol",
        "samgita_protocol",
        sdist_files=(
            "tests/schemas/1.0/protocol.schema.json",
            "tests/schemas/1.0/manifest.json",
            "src/samgita_protocol/protocol.schema.json",
            "src/samgita_protocol/py.typed",
        ),
        wheel_files=(
            "samgita_protocol/protocol.schema.json",
            "samgita_protocol/py.typed",
        ),
    ),
    Package(
        "samgita-protocol-websocket",
        "packages/samgita-protocol-websocket",
        "samgita_protocol_websocket",
        sdist_files=(
            "tests/certs/test-only-localhost.pem",
            "tests/certs/test-only-localhost.key",
        ),
        wheel_files=("samgita_protocol_websocket/py.typed",),
    ),
    Package(
        "samgita-protocol-codex",
        "packages/samgita-protocol-codex",
        "samgita_protocol_codex",
        wheel_files=("samgita_protocol_codex/py.typed",),
    ),
    Package(
        "samgita-protocol-consumer-example",
        "packages/samgita-protocol/examples/consumer",
        "samgita_protocol_consumer_example",
    ),
)
EXTRAS = {"websocket": "samgita_protocol_websocket", "codex": "samgita_protocol_codex"}
# The (normalized) name prefix of our own distributions.
OURS = "samgita-protocol"
IGNORED = shutil.ignore_patterns(
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "dist",
    "build",
    "*.egg-info",
    ".venv",
    "node_modules",
)
# Test outcomes that fail a run although pytest exited 0.
HIDDEN = ("skipped", "xfailed", "xpassed")
# Caches kept inside the repository (gitignored), unless already set.
CACHE_DEFAULTS = {
    "PIP_CACHE_DIR": ROOT / ".tools" / "pip-cache",
    "VIRTUALENV_OVERRIDE_APP_DATA": ROOT / ".tools" / "virtualenv-app-data",
    "npm_config_cache": ROOT / ".tools" / "npm-cache",
}


class Failure(Exception):
    pass


@dataclass
class Report:
    results: list[tuple[str, bool, str]] = field(default_factory=list)
    last: float = field(default_factory=time.monotonic)

    def _lap(self) -> str:
        now = time.monotonic()
        lap, self.last = now - self.last, now
        return f"[{lap:.1f}s]"

    def ok(self, what: str, detail: str = "") -> None:
        lap = self._lap()
        self.results.append((what, True, lap))
        print(f"   ok: {what} {detail} {lap}", flush=True)

    def fail(self, what: str, detail: str) -> None:
        lap = self._lap()
        self.results.append((what, False, lap))
        print(f"   FAILED: {what}: {detail} {lap}", flush=True)


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command, echoing it; raise Failure with its output tail on error."""
    shown = [a.splitlines()[0] + " ..." if "\n" in a else a for a in argv]
    print(f"   $ {' '.join(shown)}", flush=True)
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-40:]
        raise Failure(
            f"exit {proc.returncode} from {argv[0]} {argv[1] if len(argv) > 1 else ''}:\n      "
            + "\n      ".join(tail)
        )
    return proc.stdout


def only_file(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    if len(found) != 1:
        raise Failure(
            f"expected one {pattern} in {directory}, found {[p.name for p in found]}"
        )
    return found[0]


def is_ours(name: str) -> bool:
    """Whether the distribution ``name`` (any spelling) is one of ours."""
    return canonicalize_name(name).startswith(OURS)


def parse_requirement(req: str) -> Requirement:
    try:
        return Requirement(req)
    except InvalidRequirement as e:
        raise Failure(f"cannot parse requirement {req!r}: {e}") from None


def normalize_requirement(req: str) -> tuple[str, SpecifierSet, str]:
    """``'Foo_Bar[X] >=1, <2; extra == 'x''`` -> ``('foo-bar[x]',
    SpecifierSet('<2,>=1'), 'extra == "x"')``: the canonical name with its
    sorted extras, the specifier set and the normalized marker, so that
    spellings of the same requirement compare equal."""
    parsed = parse_requirement(req)
    extras = sorted(canonicalize_name(e) for e in parsed.extras)
    name = canonicalize_name(parsed.name) + (f"[{','.join(extras)}]" if extras else "")
    marker = str(parsed.marker) if parsed.marker is not None else ""
    return name, parsed.specifier, marker


def declared_requirements(
    pyproject: dict[str, object],
) -> set[tuple[str, SpecifierSet, str]]:
    project = pyproject["project"]
    assert isinstance(project, dict)
    out = {normalize_requirement(r) for r in project.get("dependencies", [])}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        for r in reqs:
            name, specs, marker = normalize_requirement(r)
            extra_marker = f'extra == "{extra}"'
            both = f"({marker}) and {extra_marker}" if marker else extra_marker
            out.add((name, specs, str(Marker(both))))
    return out


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode("utf-8"))


def dev_bin_dirs(environ: dict[str, str]) -> set[str]:
    """bin/ of the environment this script runs in (and $VIRTUAL_ENV's)."""
    dirs = set()
    if sys.prefix != sys.base_prefix:
        dirs.add(os.path.realpath(Path(sys.prefix) / "bin"))
    if environ.get("VIRTUAL_ENV"):
        dirs.add(os.path.realpath(Path(environ["VIRTUAL_ENV"]) / "bin"))
    return dirs


def path_for(venv_bin: Path, path: str, dev_bins: set[str]) -> str:
    """``venv_bin`` first, then ``path`` without the dev environment's bin/."""
    kept = [
        entry
        for entry in path.split(os.pathsep)
        if entry and os.path.realpath(entry) not in dev_bins
    ]
    return os.pathsep.join([str(venv_bin), *kept])


def pulled(req: Requirement, extras: tuple[str, ...] = ()) -> bool:
    """Whether installing with ``extras`` (none: ``""``) pulls ``req``."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": extra}) for extra in extras or ("",))


def third_party_requirements(wheels: list[Path]) -> list[str]:
    """Requirements of the wheels (without extras) that are not ours."""
    reqs: list[str] = []
    for wheel in wheels:
        for req in wheel_metadata(wheel).get_all("Requires-Dist") or []:
            parsed = parse_requirement(req)
            if is_ours(parsed.name) or not pulled(parsed):
                continue
            reqs.append(req)
    return sorted(set(reqs))


class Verifier:
    def __init__(self, tmp: Path, hatch: str, report: Report) -> None:
        self.tmp = tmp
        self.hatch = hatch
        self.virtualenv = find_virtualenv(hatch)
        self.report = report
        self.wheelhouse = tmp / "wheels"
        self.wheelhouse.mkdir()
        self.built: dict[str, Path] = {}
        self.unpacked: dict[str, Path] = {}
        self.newest_msgspec: str | None = None
        # The outcome recorder for the test runs, copied out of the
        # repository; where tools/checks.py wants their outcomes, if it does.
        self.plugins = tmp / "plugins"
        self.plugins.mkdir()
        shutil.copy(pytest_outcomes.__file__, self.plugins)
        out = os.environ.get(pytest_outcomes.ENV)
        self.outcomes_out = Path(out) if out else None
        self.env = dict(os.environ)
        for var, default in CACHE_DEFAULTS.items():
            self.env.setdefault(var, str(default))
        self.dev_bins = dev_bin_dirs(self.env)
        self.env["PATH"] = os.pathsep.join(
            entry
            for entry in self.env.get("PATH", "").split(os.pathsep)
            if entry and os.path.realpath(entry) not in self.dev_bins
        )
        for var in (
            "PYTHONPATH",
            "VIRTUAL_ENV",
            "PYTHONHOME",
            "PIP_REQUIRE_VIRTUALENV",
            pytest_outcomes.ENV,  # each test run gets its own file
        ):
            self.env.pop(var, None)
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        # hatch keys the build environment of a project by its path, and
        # every run builds from new temporary paths: keep those environments
        # in the temporary directory (hatch's caches stay shared).
        self.build_env = dict(self.env, HATCH_DATA_DIR=str(tmp / "hatch-data"))

    # -- build ---------------------------------------------------------------
    def build(self, pkg: Package) -> None:
        source = ROOT / pkg.path
        copy = self.tmp / "copies" / pkg.dist
        shutil.copytree(source, copy, symlinks=False, ignore=IGNORED)
        sdists = self.tmp / "sdists" / pkg.dist
        run(
            [self.hatch, "build", "-t", "sdist", str(sdists)],
            cwd=copy,
            env=self.build_env,
        )
        sdist = only_file(sdists, "*.tar.gz")
        unpack_root = self.tmp / "unpacked" / pkg.dist
        with tarfile.open(sdist) as tf:
            tf.extractall(unpack_root, filter="data")
        unpacked = only_file(unpack_root, "*")
        missing = [f for f in pkg.sdist_files if not (unpacked / f).is_file()]
        if pkg.dist == "samgita-protocol":
            missing += self._fixture_gaps(unpacked)
        if missing:
            raise Failure(f"sdist lacks {missing}")
        if not (unpacked / "tests").is_dir():
            raise Failure("sdist has no tests/")
        run(
            [self.hatch, "build", "-t", "wheel", str(self.wheelhouse)],
            cwd=unpacked,
            env=self.build_env,
        )
        wheel = only_file(self.wheelhouse, f"{pkg.dist.replace('-', '_')}-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
        missing = [f for f in pkg.wheel_files if f not in names]
        if missing:
            raise Failure(f"wheel lacks {missing}")
        tops = {n.split("/")[0] for n in names}
        stray = sorted(
            t for t in tops if t != pkg.module and not t.endswith(".dist-info")
        )
        if stray:
            raise Failure(f"wheel ships more than {pkg.module}/: {stray}")
        self.built[pkg.dist] = wheel
        self.unpacked[pkg.dist] = unpacked
        self.report.ok(
            f"{pkg.dist}: sdist + wheel from a copy of {pkg.path} alone",
            f"({wheel.name})",
        )

    @staticmethod
    def _fixture_gaps(unpacked: Path) -> list[str]:
        """Every canonical fixture is in the sdist, byte for byte."""
        canonical = ROOT / "schemas" / "1.0"
        gaps = []
        for path in sorted(canonical.rglob("*")):
            if path.is_file():
                rel = path.relative_to(canonical)
                shipped = unpacked / "tests" / "schemas" / "1.0" / rel
                if not shipped.is_file() or shipped.read_bytes() != path.read_bytes():
                    gaps.append(f"tests/schemas/1.0/{rel}")
        return gaps

    # -- environments ----------------------------------------------------------
    def venv_env(self, python: Path) -> dict[str, str]:
        """The environment for commands of one fresh venv: its bin/ first on
        PATH, the dev environment's bin/ not at all."""
        return dict(
            self.env,
            PATH=path_for(python.parent, self.env.get("PATH", ""), self.dev_bins),
        )

    def make_venv(self, name: str) -> Path:
        """A fresh virtual environment with pip and nothing else.

        virtualenv from hatch's own environment when it has one (it seeds pip
        from a cache: about 2 s instead of ensurepip's 6, and it works where
        the system Python lacks ensurepip), else the stdlib ``venv``.
        """
        path = self.tmp / "venvs" / name
        if self.virtualenv is not None:
            run(
                [
                    *self.virtualenv,
                    "--quiet",
                    "--no-setuptools",
                    str(path),
                ],
                cwd=self.tmp,
                env=self.env,
            )
        else:
            venv.EnvBuilder(with_pip=True, clear=True).create(path)
        return path / "bin" / "python"

    def closure(self, dists: list[str], extras: tuple[str, ...] = ()) -> list[Path]:
        """The fresh wheels that installing ``dists`` (with ``extras``) needs."""
        seen: dict[str, Path] = {}
        todo = list(dists)
        while todo:
            dist = todo.pop()
            if dist in seen:
                continue
            if dist not in self.built:
                raise Failure(f"{dist} is needed but was not built")
            seen[dist] = self.built[dist]
            for req in wheel_metadata(self.built[dist]).get_all("Requires-Dist") or []:
                parsed = parse_requirement(req)
                if is_ours(parsed.name) and pulled(parsed, extras):
                    todo.append(canonicalize_name(parsed.name))
        return list(seen.values())

    def install(
        self,
        python: Path,
        ours: list[str],
        extra_third_party: list[str],
        extras: tuple[str, ...] = (),
    ) -> None:
        bare: list[str] = [canonicalize_name(parse_requirement(d).name) for d in ours]
        third = third_party_requirements(self.closure(bare, extras))
        wanted = sorted(set(third) | set(extra_third_party))
        env = self.venv_env(python)
        if wanted:
            run(
                [str(python), "-m", "pip", "install", "--quiet", *wanted],
                cwd=self.tmp,
                env=env,
            )
        # Our distributions: from the fresh wheels only, never an index.
        report_file = python.parent.parent / "install-report.json"
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--isolated",
                "--no-index",
                "--find-links",
                str(self.wheelhouse),
                "--report",
                str(report_file),
                *ours,
            ],
            cwd=self.tmp,
            env=env,
        )
        installed = json.loads(report_file.read_text("utf-8"))["install"]
        for item in installed:
            name = item["metadata"]["name"]
            url = item.get("download_info", {}).get("url", "")
            if is_ours(name) and str(self.wheelhouse) not in url:
                raise Failure(f"{name} did not come from the fresh wheels ({url})")
            if not is_ours(name):
                raise Failure(
                    f"{name} was not installed with the third-party requirements first"
                )
        got = sorted(item["metadata"]["name"] for item in installed)
        print(f"   installed from the fresh wheels: {', '.join(got)}", flush=True)
        self.check_msgspec(python)

    def check_msgspec(self, python: Path) -> None:
        """msgspec in this venv (if any) is the newest release in the core's
        range: the in-repo checks pin the floor, this run tests the top."""
        env = self.venv_env(python)
        probe = (
            "import importlib.metadata as m\n"
            "try:\n    print(m.version('msgspec'))\n"
            "except m.PackageNotFoundError:\n    print('')\n"
        )
        version = run([str(python), "-c", probe], cwd=self.tmp, env=env).strip()
        if not version:
            return
        newest = self.newest_in_range(python)
        print(
            f"   msgspec {version} in this venv (newest in range: {newest})", flush=True
        )
        if newest.startswith("unknown"):
            if Version(version) == self.msgspec_floor():
                raise Failure(
                    f"msgspec {version} is the floor of the range, not the newest release"
                )
        elif Version(version) != Version(newest):
            raise Failure(
                f"msgspec {version} installed, the newest in range is {newest}"
            )
        self.report.ok(
            f"{python.parent.parent.name}: msgspec {version}",
            f"(newest in range: {newest})",
        )

    def msgspec_floor(self) -> Version:
        """The floor release of the core's msgspec range, e.g. 0.22."""
        spec = self.msgspec_range()
        floors = [Version(s.version) for s in spec if s.operator == ">="]
        if len(floors) != 1:
            raise Failure(f"no single floor in the core's msgspec range {spec}")
        return floors[0]

    def msgspec_range(self) -> SpecifierSet:
        """The core's msgspec requirement (from the sdist's pyproject.toml)."""
        core = self.unpacked.get("samgita-protocol")
        pyproject = (core or ROOT / "packages" / "samgita-protocol") / "pyproject.toml"
        deps = tomllib.loads(pyproject.read_text("utf-8"))["project"]["dependencies"]
        [req] = [
            r
            for r in map(parse_requirement, deps)
            if canonicalize_name(r.name) == "msgspec"
        ]
        return req.specifier

    def newest_in_range(self, python: Path) -> str:
        """Newest msgspec on the index within the core's range (asked once,
        with the venv's own pip: ``pip index versions``); "unknown (...)"
        when the index cannot be listed (then only the floor is ruled out)."""
        if self.newest_msgspec is not None:
            return self.newest_msgspec
        try:
            out = run(
                [str(python), "-m", "pip", "index", "versions", "msgspec"],
                cwd=self.tmp,
                env=self.venv_env(python),
            )
        except Failure as e:
            self.newest_msgspec = f"unknown ({str(e).splitlines()[0]})"
            return self.newest_msgspec
        line = next(
            (x for x in out.splitlines() if x.startswith("Available versions:")), ""
        )
        versions = []
        for text in filter(None, map(str.strip, line.partition(":")[2].split(","))):
            try:
                versions.append(Version(text))
            except InvalidVersion:
                continue  # not a PEP 440 version: never the newest in range
        in_range = sorted(self.msgspec_range().filter(versions), reverse=True)
        self.newest_msgspec = (
            str(in_range[0])
            if in_range
            else "unknown (pip index versions listed none in range)"
        )
        return self.newest_msgspec

    def check_metadata(self, python: Path, pkg: Package) -> None:
        pyproject = tomllib.loads(
            (self.unpacked[pkg.dist] / "pyproject.toml").read_text("utf-8")
        )
        project = pyproject["project"]
        script = (
            "import importlib.metadata as m, json, sys\n"
            f"d = m.distribution({pkg.dist!r})\n"
            "print(json.dumps({'name': d.metadata['Name'], 'version': d.version,"
            " 'requires': d.requires or []}))\n"
        )
        got = json.loads(
            run([str(python), "-c", script], cwd=self.tmp, env=self.venv_env(python))
        )
        if got["name"] != project["name"] or got["version"] != project["version"]:
            raise Failure(
                f"installed {got['name']} {got['version']}, pyproject says {project['name']} {project['version']}"
            )
        installed = {normalize_requirement(r) for r in got["requires"]}
        declared = declared_requirements(pyproject)
        if installed != declared:
            raise Failure(
                f"Requires-Dist {sorted(got['requires'])} differs from pyproject {sorted(map(str, declared))}"
            )
        self.report.ok(
            f"{pkg.dist}: installed metadata",
            f"({got['name']} {got['version']}, {len(installed)} requirements)",
        )

    def run_tests(self, python: Path, pkg: Package) -> None:
        # Everything the sdist ships (tests, pyproject.toml for pytest's
        # configuration, README, bench, ...) except src/: the code under test
        # can only come from the installed wheel.
        where = self.tmp / "runs" / pkg.dist
        where.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(
            self.unpacked[pkg.dist],
            where,
            ignore=shutil.ignore_patterns("src", "PKG-INFO"),
        )
        # The import must resolve to the installed wheel, not a source tree.
        probe = f"import {pkg.module}, sys; print({pkg.module}.__file__)"
        env = self.venv_env(python)
        location = run([str(python), "-c", probe], cwd=where, env=env).strip()
        if "site-packages" not in location or str(ROOT) in location:
            raise Failure(
                f"{pkg.module} imported from {location}, not the installed wheel"
            )
        record = self.tmp / "outcomes" / f"{pkg.dist}.jsonl"
        record.parent.mkdir(exist_ok=True)
        argv = [str(python), "-m", "pytest", "-p", "no:cacheprovider"]
        argv += [*pytest_outcomes.PYTEST_ARGS, "tests"]
        print(f"   $ {' '.join(argv)}   (in {where})", flush=True)
        proc = subprocess.run(
            argv,
            cwd=where,
            # The outcome recorder from outside the repository (only it).
            env=dict(env, PYTHONPATH=str(self.plugins))
            | {pytest_outcomes.ENV: str(record)},
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
        outcomes = pytest_outcomes.read(record)
        summary = "; ".join(o.summary for o in outcomes) or "no outcome recorded"
        print(f"   pytest: {summary}", flush=True)
        if self.outcomes_out is not None:
            # tools/checks.py counts these (labelled with the distribution).
            for outcome in outcomes:
                labelled = dataclasses.replace(outcome, label=pkg.dist)
                pytest_outcomes.append(self.outcomes_out, labelled)
        if proc.returncode != 0:
            out = (proc.stdout + proc.stderr).strip().splitlines()
            # The short summary names every failure; fall back to the tail.
            marks = [
                i for i, line in enumerate(out) if "short test summary info" in line
            ]
            shown = out[marks[-1] :] if marks else out[-60:]
            tail = "\n      ".join(shown[-80:])
            raise Failure(f"pytest exit {proc.returncode}:\n      {tail}")
        if len(outcomes) != 1:
            raise Failure(
                f"pytest recorded {len(outcomes)} outcomes, not 1"
                " (tools/pytest_outcomes.py did not run?)"
            )
        hidden = [f"{n} {k}" for k in HIDDEN if (n := outcomes[0].count(k))]
        if hidden:
            what = ", ".join(hidden)
            raise Failure(f"pytest {what}: every test must run ({summary})")
        self.report.ok(
            f"{pkg.dist}: tests from the sdist against the installed wheel",
            f"({summary})",
        )

    def verify_package(self, pkg: Package) -> None:
        test_group = tomllib.loads(
            (self.unpacked[pkg.dist] / "pyproject.toml").read_text("utf-8")
        )
        group = test_group.get("dependency-groups", {}).get("test", [])
        python = self.make_venv(pkg.dist)
        self.install(python, [pkg.dist], list(group))
        self.check_metadata(python, pkg)
        self.run_tests(python, pkg)

    def verify_extra(self, extra: str, module: str) -> None:
        python = self.make_venv(f"extra-{extra}")
        self.install(python, [f"samgita-protocol[{extra}]"], [], extras=(extra,))
        sibling = f"samgita-protocol-{extra}"
        script = (
            f"import importlib.metadata as m, samgita_protocol, {module}\n"
            f"print(m.version({sibling!r}))\n"
        )
        version = run(
            [str(python), "-c", script], cwd=self.tmp, env=self.venv_env(python)
        ).strip()
        self.report.ok(
            f"samgita-protocol[{extra}]: pulls {sibling} {version} from the fresh wheels; import {module}"
        )


def find_virtualenv(hatch: str) -> list[str] | None:
    """``[python, -m, virtualenv]`` of the environment hatch runs in, if any."""
    python = Path(hatch).parent / "python"
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import virtualenv"], capture_output=True, check=False
    )
    return [str(python), "-m", "virtualenv"] if probe.returncode == 0 else None


def find_hatch(explicit: str | None) -> str:
    for cand in (explicit, os.environ.get("HATCH"), shutil.which("hatch")):
        if cand and Path(cand).exists():
            return str(Path(cand).resolve())
    raise SystemExit(
        "verify_standalone: hatch not found (use --hatch, $HATCH, or run via tools/test)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hatch", help="hatch executable (default: $HATCH or PATH)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary directory"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[p.dist for p in PACKAGES],
        help="verify only these (their build dependencies are still built)",
    )
    args = parser.parse_args(argv)
    hatch = find_hatch(args.hatch)

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="samgita-standalone-")).resolve()
    if tmp.is_relative_to(ROOT):
        raise SystemExit(
            f"verify_standalone: temporary directory {tmp} is inside the repository"
        )
    report = Report()
    verifier = Verifier(tmp, hatch, report)
    selected = [p for p in PACKAGES if not args.only or p.dist in args.only]
    try:
        # The core is always built: every other package needs its wheel.
        for pkg in PACKAGES:
            if pkg.dist == "samgita-protocol" or pkg in selected:
                print(f"\n== build {pkg.dist}", flush=True)
                try:
                    verifier.build(pkg)
                except Failure as e:
                    report.fail(f"{pkg.dist}: build", str(e))
        for pkg in selected:
            if pkg.dist not in verifier.built:
                continue
            print(f"\n== install and test {pkg.dist}", flush=True)
            try:
                verifier.verify_package(pkg)
            except Failure as e:
                report.fail(f"{pkg.dist}: install/test", str(e))
        if not args.only:
            for extra, module in EXTRAS.items():
                print(
                    f"\n== samgita-protocol[{extra}] from the fresh wheels", flush=True
                )
                if f"samgita-protocol-{extra}" not in verifier.built:
                    report.fail(
                        f"samgita-protocol[{extra}]", "sibling wheel was not built"
                    )
                    continue
                try:
                    verifier.verify_extra(extra, module)
                except Failure as e:
                    report.fail(f"samgita-protocol[{extra}]", str(e))
    finally:
        if args.keep:
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    failed = [r for r in report.results if not r[1]]
    print(f"\n== verify_standalone summary ({time.monotonic() - started:.0f}s)")
    for what, ok, lap in report.results:
        print(f"{'ok    ' if ok else 'FAILED'} {what}  {lap}")
    print(
        f"verify_standalone: {len(report.results) - len(failed)} checks passed, {len(failed)} failed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
