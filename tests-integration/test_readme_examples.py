"""The Python examples in the package READMEs and in docs/protocol.md run as
written (a document that shows an API the code no longer has fails here)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READMES = [
    ROOT / "packages" / "samgita-protocol" / "README.md",
    ROOT / "docs" / "protocol.md",
]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for readme in READMES:
        for n, code in enumerate(BLOCK.findall(readme.read_text("utf-8")), 1):
            found.append((f"{readme.parent.name}#{n}", code))
    return found


def test_there_are_examples() -> None:
    assert _blocks(), "no ```python block found in the READMEs"


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_example_runs(where: str, code: str) -> None:
    # Our own README, run on purpose: that is the test.
    exec(compile(code, where, "exec"), {"__name__": "__readme__"})  # noqa: S102
