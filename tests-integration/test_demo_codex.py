"""`tools/demo.py --codex` against the real `codex app-server` 0.163.0 (never skipped).

Runs the demo's Codex mode as a user does (a subprocess of this interpreter;
the binary is $CODEX_BIN or the lockfile's install, like test_codex_real.py)
and checks its exit status and the transcript lines that carry the proof;
also that a missing or wrong Codex is a clear error (exit 2), not a skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tools" / "demo.py"


def _demo(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), "--codex"],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_demo_codex_runs_the_flow_against_the_real_codex() -> None:
    proc = _demo()
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "[FAILED]" not in out
    for line in [
        "[ok] negotiated exactly ['approvals.v1', 'sessions.v1', 'streaming.v1'] out of the 5 offered groups",
        "[ok] not offered back: ['cancellation.v1', 'project_events.v1']",
        '=> codex {"method":"initialized"}',
        "[ok] the client refuses to send a project event method the session did not negotiate",
        "[ok] Codex's escalated exec_command arrived as native approval/request ",
        "(command_execution)",
        '"result":{"decision":"accept"}}',
        "on disk: approved.txt = 'approved by the client\\n'",
        "[ok] the command's effect is on disk (Codex got `accept`)",
        "native link cut after 4 deltas, checkpoint ",
        "lost on the cut native link: ",
        "[ok] the rest of the stream and turn/completed never reached the client live",
        "[ok] same host, new connection; no Codex call was needed",
        "[ok] a thread/read over the new connection confirms Codex finished the turn",
        "[ok] the replay starts at checkpoint + 1",
        "[ok] every event lost on the cut link came back in the replay",
        "each exactly once: nothing lost or duplicated",
        "[ok] the 12 deltas add up to the completed agent message, exactly the model's text",
        "[ok] the turn completed",
        "OK: all ",
    ]:
        assert line in out, f"missing {line!r} in:\n{out}"
    # the client processed 12 native item/delta lines: 4 live, 8 replayed
    # (the same 8 are also listed as lost on the cut link)
    processed = [x for x in out.splitlines() if x.startswith("  <- [")]
    deltas = [x for x in processed if "] item/delta '" in x]
    lost = [x for x in out.splitlines() if x.startswith("  xx lost on the cut")]
    assert len(deltas) == 12, out
    # every event lost on the cut link was processed later, from the replay
    assert len(lost) >= 8
    for gone in (x.split(": ", 1)[1] for x in lost):
        assert any(x.startswith(f"  <- {gone}") for x in processed), gone
    cursors = [int(x.split("[", 1)[1].split("]", 1)[0]) for x in processed]
    assert cursors == list(range(1, len(cursors) + 1)), cursors
    assert "checks held against the real Codex" in out.splitlines()[-1]


def test_demo_codex_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    proc = _demo({"CODEX_BIN": str(tmp_path / "no-codex")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "codex binary not found at" in proc.stderr
    assert "OK:" not in proc.stdout


def test_demo_codex_wrong_version_is_a_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho codex-cli 0.1.0\n")
    fake.chmod(0o755)
    proc = _demo({"CODEX_BIN": str(fake)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "reports 'codex-cli 0.1.0'" in proc.stderr
    assert "only 'codex-cli 0.163.0' is supported" in proc.stderr
