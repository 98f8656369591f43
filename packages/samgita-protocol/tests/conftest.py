"""Fixtures of the store tests: the session's PostgreSQL server, and a
fresh location for any backend of ``stores_backends.BACKENDS``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from postgres_server import Database, Unavailable, database
from stores_backends import BACKENDS


@pytest.fixture(scope="session")
def postgres() -> Iterator[Database]:
    """The PostgreSQL database of this session: ``$SAMGITA_POSTGRES_DSN``'s,
    or a private server started for the session and stopped after it. When
    neither is possible every test that needs it fails (never skips),
    saying what to install."""
    try:
        with database() as db:
            yield db
    except Unavailable as missing:
        pytest.fail(str(missing), pytrace=False)


@pytest.fixture
def locate(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """``locate(backend)``: where a test opens ``backend``'s stores. For a
    file backend this test's ``tmp_path`` (the same at each call); for a
    server backend a fresh, empty schema on the session's server (a new
    one at each call)."""

    def fresh(backend: str) -> str:
        if BACKENDS[backend].server:
            db: Database = request.getfixturevalue("postgres")
            return db.fresh()
        return str(tmp_path)

    return fresh
