"""The fake Agent on PostgreSQL (issue 22): ``samgita-fake-agent --store
postgresql://...`` killed with SIGKILL and restarted on the same database
loses nothing and does nothing twice (the scenario of the WebSocket
package's ``tests/agent_restart.py``, which runs it on SQLite too).

Needs a PostgreSQL server: the core's test helper
(``packages/samgita-protocol/tests/postgres_server.py``) starts a private
one for this module, or uses ``$SAMGITA_POSTGRES_DSN``; when neither is
possible the test fails, never skips, saying what to install."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Appended, not prepended: these helpers' names shadow nothing here.
sys.path.append(str(ROOT / "packages" / "samgita-protocol" / "tests"))
sys.path.append(str(ROOT / "packages" / "samgita-protocol-websocket" / "tests"))

from agent_restart import kill_and_restart
from postgres_server import Database, Unavailable, database, uri


@pytest.fixture(scope="module")
def postgres() -> Iterator[Database]:
    """A database for this module (a private server, stopped after it)."""
    try:
        with database() as db:
            yield db
    except Unavailable as missing:
        pytest.fail(str(missing), pytrace=False)


def test_sigkill_and_restart_on_one_postgres_database(
    postgres: Database, tmp_path: Path
) -> None:
    kill_and_restart(tmp_path, uri(postgres.fresh()))
