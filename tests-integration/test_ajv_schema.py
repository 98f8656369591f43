"""Independent check of the generated JSON Schema with Ajv (2020-12, strict).

ajv_check.mjs compiles schemas/1.0/protocol.schema.json in strict mode
(every strict-mode warning is a failure), validates every accepted fixture
(and each response's result against its request's $defs/<method>.result),
expects every rejected fixture that manifest.json marks "rejects" to fail,
and every "runtime_only" one that JSON.parse reads to validate (a schema
rejection there means the rule is schema-expressible: relabel it); every
manifest entry needs a non-empty "why". A missing node or ajv fails this
test; it never skips.
"""

from __future__ import annotations

import json

from peers import PEERS, SCHEMAS, require_peer, run_node


def test_ajv_strict_accepts_and_rejects_the_fixtures() -> None:
    require_peer("ajv")
    proc = run_node(
        PEERS / "ajv_check.mjs", str(SCHEMAS / "protocol.schema.json"), str(SCHEMAS)
    )
    assert proc.stdout.strip(), f"ajv_check printed nothing; stderr:\n{proc.stderr}"
    summary = json.loads(proc.stdout)
    assert proc.returncode == 0 and summary["ok"], (
        json.dumps(summary, indent=2) + proc.stderr
    )
    assert summary["strict"] is True
    # Every fixture was looked at: none of the counts may be zero.
    assert (
        summary["accepted"] > 0 and summary["results"] > 0 and summary["rejected"] > 0
    ), summary
    listed = json.loads((SCHEMAS / "manifest.json").read_text(encoding="utf-8"))
    assert summary["rejected"] + summary["runtime_only"] == len(listed)
    assert (
        summary["runtime_only_parsed"] + summary["runtime_only_unparseable"]
        == summary["runtime_only"]
    ), summary
    # Only what JSON itself cannot read may escape ajv's judgement.
    assert summary["runtime_only_unparseable"] <= 2, summary
    assert all(str(entry.get("why", "")).strip() for entry in listed)
    accepted = sorted((SCHEMAS / "fixtures" / "accepted").glob("*.json"))
    assert summary["accepted"] == len(accepted)
