"""`tools/demo.py --failover` (issue 22): two fake Agent nodes on one
PostgreSQL database, node A killed with SIGKILL, the client restarted on
node B (never skipped).

Runs the demo's failover mode as a user does (a subprocess of this
interpreter; the demo gets its own private PostgreSQL server, or uses
``$SAMGITA_POSTGRES_DSN``) and checks its exit status and the transcript
lines that carry the proof; also that a PostgreSQL it cannot reach is a
failed check and a non-zero exit, not a skip.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tools" / "demo.py"


def _demo(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), "--failover"],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_demo_failover_survives_a_sigkilled_node_and_a_client_restart() -> None:
    proc = _demo()
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "[FAILED]" not in out
    for line in [
        "[ok] node A presents host_id 'fake-agent'",
        "[ok] node A finished the turn into the shared log",
        "[ok] the turn's approval request was answered (approve)",
        "[ok] the client's SQLite file holds checkpoint 5: the last acknowledged cursor",
        "[ok] the command in flight is in the client's journal, unsettled",
        "node A killed with SIGKILL mid-stream (exit status -9)",
        "[ok] node A really died of SIGKILL",
        "the in-flight event.receive ended with: ambiguous_disconnect",
        "[ok] node B presents the same host_id",
        "[ok] exactly the command in flight is uncertain again (reason 'restart')",
        "checkpoints restored from the SQLite file: {'turn-",
        "[ok] the checkpoint restored is the last acknowledged cursor, 5",
        "event.status evt-failover: not_found -> never applied",
        "[ok] resolve_uncertain cleared it, in the session and in the journal",
        "redelivered as attempt-2 (command cmd-evt-2), since it was not applied",
        "a late attempt-3 of evt-failover: processing_status completed",
        "[ok] the shared inbox holds it durably, completed: the mutation applied exactly once",
        "stream/resume turn-",
        " from cursor 5 (B serves the shared log)",
        "[ok] the replay is exactly cursors 6..",
        "[ok] the turn completed",
        "[ok] the approved action ran once",
        "[ok] node B exited cleanly on SIGTERM",
        "OK: all 21 checks held across a SIGKILLed node and a client restart",
    ]:
        assert line in out, f"missing {line!r} in:\n{out}"
    # Every processed sequenced event, over both nodes: 1..N once each, in
    # order; the first 5 on A (before step 3), the rest replayed on B.
    kill = out.index("== 3. ")
    processed = [
        (m.start() < kill, int(m.group(1)))
        for m in re.finditer(r"^  <- \[(\d+)\] ", out, re.MULTILINE)
    ]
    cursors = [cursor for _, cursor in processed]
    assert cursors == list(range(1, len(cursors) + 1)), cursors
    assert [c for on_a, c in processed if on_a] == [1, 2, 3, 4, 5]
    assert "] turn/completed: completed" in out
    last = cursors[-1]
    assert f"cursors 1..{last} processed exactly once each, in order" in out


def test_demo_failover_without_postgres_is_a_failed_check() -> None:
    # A server that cannot be reached: the demo says so and exits non-zero.
    proc = _demo({"SAMGITA_POSTGRES_DSN": "host=/nonexistent-samgita dbname=x"})
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "[FAILED] a PostgreSQL server for both nodes: SAMGITA_POSTGRES_DSN" in out
    assert "names a server that fails" in out
    assert "OK:" not in out
    assert "node A:" not in out  # no node was started
