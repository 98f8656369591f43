"""Every program in examples/ runs as a user runs it (a subprocess of this
interpreter, from the repository root), exits 0 by itself and prints the
lines that carry its point. A new example without a case here fails
`test_every_example_has_a_case`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: Each example -> lines (substrings) its output must contain.
EXPECTED: dict[str, list[str]] = {
    "in_memory.py": [
        "initialized: sessions.v1, streaming.v1 with host_id agent-1",
        "thread/start cmd-1 -> thread-1",
        "duplicate of cmd-1 answered from the Agent's receipts (ran 1 time)",
        "turn/start cmd-2 -> turn-1 (completed)",
        "  [agent-events #1] turn/started",
        "  [agent-events #2] item/started",
        "  [agent-events #7] turn/completed",
        "checkpoints {'agent-events': 7}; 7 events in the Replay",
        "malformed bytes refused: invalid_json (origin peer)",
        "thread/read thread-9 -> not_found: unknown thread",
    ],
    "websocket_session.py": [
        "a wrong token is refused before the upgrade: HTTP 401",
        "initialized: sessions.v1, streaming.v1, approvals.v1",
        "<- approval/request ",
        "-> approve",
        "connection cut; checkpoint ",
        "reconnected as ",
        "resume delivered the ",
        "processed exactly once, in order",
    ],
    "codex_bridge.py": [
        'to Codex: {"method":"initialize","id":0,',
        'to Codex: {"method":"initialized"}',
        "native:   response c1-1: InitializeResult",
        "native:   response c1-2: ThreadStartResult",
        "(no native form: Codex notification configWarning)",
        "native:   item/delta #5 'Hello from'",
        "native:   turn/completed #9 completed",
        "9 events processed by the Client",
        "the deltas add up to 'Hello from the scripted model.'",
    ],
}


#: What examples/websocket_session.py authenticates with: never printed.
TOKEN = "example-token-" + "x" * 24


def _run(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=ROOT,
        env={**os.environ, "SAMGITA_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr  # no logged failure
    assert "example-token" not in proc.stdout
    return proc.stdout


def _resumed_the_missed_events(out: str) -> None:
    # The events after the checkpoint, and only they, came back in the replay.
    checkpoint = int(out.split("connection cut; checkpoint ")[1].split()[0])
    missed = int(out.split("resume delivered the ")[1].split()[0])
    last = int(out.split("every cursor 1..")[1].split()[0])
    assert missed >= 1 and checkpoint + missed == last, out


#: Further checks of an example's output.
CHECKS = {"websocket_session.py": _resumed_the_missed_events}


def test_every_example_has_a_case() -> None:
    present = sorted(path.name for path in EXAMPLES.glob("*.py"))
    assert present == sorted(EXPECTED), "examples/*.py and EXPECTED differ"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str) -> None:
    out = _run(name)
    for line in EXPECTED[name]:
        assert line in out, f"missing {line!r} in the output of {name}:\n{out}"
    if name in CHECKS:
        CHECKS[name](out)
