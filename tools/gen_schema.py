#!/usr/bin/env python3
"""Regenerate schemas/1.0/protocol.schema.json from the msgspec Structs.

    python tools/gen_schema.py           write the artifact
    python tools/gen_schema.py --check   exit 1 if it is stale (writes nothing)
    hatch run schema:generate | schema:check

The bytes come from ``samgita_protocol._document.build_document_bytes()``
(JSON Schema 2020-12, sorted keys, trailing newline), so the document is the
same whether it is built here, in the core's drift test, or from an
installed wheel. The core ships the artifact through symlinks that hatchling
follows when it builds the sdist and wheel:

    packages/samgita-protocol/src/samgita_protocol/protocol.schema.json
        -> schemas/1.0/protocol.schema.json   (package data, json_schema())
    packages/samgita-protocol/tests/schemas -> schemas/   (fixtures, manifest)

``--check`` also verifies those links resolve to the canonical files.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "packages" / "samgita-protocol"
ARTIFACT = ROOT / "schemas" / "1.0" / "protocol.schema.json"
LINKS = {
    CORE / "src" / "samgita_protocol" / "protocol.schema.json": ARTIFACT,
    CORE / "tests" / "schemas": ROOT / "schemas",
}


def _import_builder():  # type: ignore[no-untyped-def]
    try:
        from samgita_protocol import _document
    except ImportError:
        sys.path.insert(0, str(CORE / "src"))
        from samgita_protocol import _document
    return _document


def check_links() -> list[str]:
    problems = []
    for link, target in LINKS.items():
        if not link.is_symlink():
            problems.append(
                f"{link.relative_to(ROOT)} is not a symlink to {target.relative_to(ROOT)}"
            )
        elif link.resolve() != target.resolve():
            problems.append(
                f"{link.relative_to(ROOT)} points to {os.readlink(link)}, not {target.relative_to(ROOT)}"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="fail on drift instead of writing"
    )
    args = parser.parse_args(argv)

    data = _import_builder().build_document_bytes()
    current = ARTIFACT.read_bytes() if ARTIFACT.exists() else None
    problems = check_links()
    if args.check:
        if current != data:
            problems.append(
                f"{ARTIFACT.relative_to(ROOT)} is stale: run `python tools/gen_schema.py` (or `hatch run schema:generate`)"
            )
        for problem in problems:
            print(f"gen_schema: {problem}", file=sys.stderr)
        if not problems:
            print(
                f"gen_schema: {ARTIFACT.relative_to(ROOT)} is up to date ({len(data)} bytes)"
            )
        return 1 if problems else 0

    if current == data:
        print(f"gen_schema: {ARTIFACT.relative_to(ROOT)} unchanged ({len(data)} bytes)")
    else:
        ARTIFACT.write_bytes(data)
        print(f"gen_schema: wrote {ARTIFACT.relative_to(ROOT)} ({len(data)} bytes)")
    for link, target in LINKS.items():
        if not link.is_symlink():
            if link.exists():
                problems.append(
                    f"{link.relative_to(ROOT)} exists and is not a symlink: remove it first"
                )
                continue
            link.symlink_to(os.path.relpath(target, link.parent))
            print(f"gen_schema: linked {link.relative_to(ROOT)} -> {os.readlink(link)}")
    for problem in check_links():
        print(f"gen_schema: {problem}", file=sys.stderr)
    return 1 if check_links() else 0


if __name__ == "__main__":
    sys.exit(main())
