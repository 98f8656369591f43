"""A pytest plugin that records each run's outcome counts as JSON (stdlib only).

tools/checks.py and tools/verify_standalone.py load it into every pytest run
they start (``-p pytest_outcomes``, with this file's directory on PYTHONPATH)
and name a file in ``$SAMGITA_PYTEST_OUTCOMES``; at the end of the session the
plugin appends one JSON line to that file: the terminal reporter's counts
(``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``, ``xpassed`` and
any other category pytest reported, such as ``deselected`` or ``warnings``),
pytest's exit status and its closing summary line (``"916 passed in
25.31s"``). Without the variable the plugin records nothing.

The counts come from pytest itself, not from its printed text: the callers
read them with :func:`read` and never parse pytest's output.

Only the standard library is imported at module level, so the callers (which
may run where pytest is not installed) share :class:`Outcome`, :func:`read`
and :func:`append` with the plugin.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: The environment variable naming the file the outcomes are appended to.
ENV = "SAMGITA_PYTEST_OUTCOMES"
#: The pytest options that load this plugin (its directory must be importable).
PYTEST_ARGS = ("-p", "pytest_outcomes")


@dataclass(frozen=True)
class Outcome:
    """One pytest session: its counts by category, exit status and closing line."""

    counts: dict[str, int]
    exitstatus: int
    summary: str
    #: What the run tested, when one step runs pytest several times.
    label: str = ""

    def count(self, *categories: str) -> int:
        """The number of reports in ``categories`` (0 for a category not seen)."""
        return sum(self.counts.get(category, 0) for category in categories)


def read(path: Path) -> list[Outcome]:
    """Every outcome appended to ``path``, in order ([] when there is none)."""
    if not path.is_file():
        return []
    return [
        Outcome(**json.loads(line))
        for line in path.read_text("utf-8").splitlines()
        if line.strip()
    ]


def append(path: Path, outcome: Outcome) -> None:
    """Add ``outcome`` to ``path`` as one JSON line."""
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(asdict(outcome), sort_keys=True) + "\n")


@dataclass
class _Recorder:
    """Records the session once pytest has printed its summary (at
    unconfigure), so its closing line and exit status are final."""

    path: Path
    started: float = field(default_factory=time.monotonic)
    session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.monotonic()
        self.session = session

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        reporter: pytest.TerminalReporter | None = config.pluginmanager.get_plugin(
            "terminalreporter"
        )
        if reporter is None or self.session is None:
            return  # no terminal reporter (-p no:terminal) or no session ran
        counts = {
            category: sum(
                1
                for report in reports
                if getattr(report, "count_towards_summary", True)
            )
            for category, reports in reporter.stats.items()
            if category  # "" holds the passing setup/teardown reports
        }
        parts, _color = reporter.build_summary_stats_line()
        took = time.monotonic() - self.started
        summary = f"{', '.join(text for text, _markup in parts)} in {took:.2f}s"
        append(self.path, Outcome(counts, int(self.session.exitstatus), summary))


def pytest_configure(config: pytest.Config) -> None:
    """Register the recorder when ``$SAMGITA_PYTEST_OUTCOMES`` names a file."""
    path = os.environ.get(ENV)
    if path:
        config.pluginmanager.register(_Recorder(Path(path)), "samgita-outcomes")
