"""The error codes of the code are exactly those of docs/protocol.md.

This needs the repository (the contract document does not ship in any
package), so it lives here rather than in the core's own tests, which also
run against the installed wheel outside the repository and must never skip.
"""

from __future__ import annotations

import re

import samgita_protocol as sp
from peers import ROOT

PROTOCOL_MD = ROOT / "docs" / "protocol.md"


def _doc_codes() -> list[str]:
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    section = text[text.index("## 7. Error codes") : text.index("## 8.")]
    return re.findall(r"^\| `([a-z_0-9]+)` \|", section, flags=re.MULTILINE)


def test_error_codes_are_exactly_those_of_the_contract() -> None:
    codes = _doc_codes()
    assert codes, "no error code table found in docs/protocol.md section 7"
    assert [code.value for code in sp.ErrorCode] == codes


def test_the_handler_method_table_is_exactly_the_operations() -> None:
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    section = text[text.index("### Writing a handler") : text.index("### 4.1")]
    row = re.compile(r"^\| `([a-z/._]+)` \| `([a-z_]+)` \|", flags=re.MULTILINE)
    rows = row.findall(section)
    operations = [
        name
        for name, spec in sp.METHODS.items()
        if spec.kind == "request" and spec.group is not None
    ]
    assert [wire for wire, _ in rows] == operations
    for wire, python in rows:
        assert python == wire.replace("/", "_").replace(".", "_")
        assert callable(getattr(sp.Handler, python, None)), python
