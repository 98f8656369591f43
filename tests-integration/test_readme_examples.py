"""The Python examples of the documentation run as written: every ```python
block of the repository README, of each package README and of every page
under docs/ (the site's sources, docs/protocol.md included). A document that
shows an API the code no longer has fails here.

Each block runs alone, in a fresh namespace, and must end by itself (code
that needs a real peer or binary belongs in a ```sh block or in prose). A
document without a ```python block is fine; the whole set must have some.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _documents() -> list[Path]:
    """The root README, every package README and every docs/ page."""
    return [
        ROOT / "README.md",
        *sorted(ROOT.glob("packages/*/README.md")),
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


def _blocks() -> list[tuple[str, str]]:
    found = []
    for document in _documents():
        where = document.relative_to(ROOT).as_posix()
        for n, code in enumerate(BLOCK.findall(document.read_text("utf-8")), 1):
            found.append((f"{where}#{n}", code))
    return found


def test_the_documents_exist() -> None:
    documents = _documents()
    assert all(d.is_file() for d in documents), documents
    assert ROOT / "docs" / "index.md" in documents
    assert ROOT / "packages" / "samgita-protocol" / "README.md" in documents


def test_there_are_examples() -> None:
    assert _blocks(), "no ```python block found in the READMEs or docs/"


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_example_runs(where: str, code: str) -> None:
    # Our own documentation, run on purpose: that is the test.
    exec(compile(code, where, "exec"), {"__name__": "__readme__"})  # noqa: S102
