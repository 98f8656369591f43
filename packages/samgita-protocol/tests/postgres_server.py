"""The PostgreSQL server the store tests run against (a test helper, not a
test module).

``$SAMGITA_POSTGRES_DSN`` names an existing server to use. Otherwise
:func:`running` starts a private one, once per pytest session (the
``postgres`` fixture of ``conftest.py``): ``initdb`` and ``postgres`` from
the ``pgserver`` wheel (PostgreSQL's binaries in a wheel, pinned in the
core's ``test`` dependency group and in hatch.toml), else the machine's own
ones on ``PATH``, in a new temporary directory, listening on a Unix socket
there only (no TCP port), and stops and removes it at the end. PostgreSQL
refuses to run as root: as root, the server runs as the unprivileged user
``nobody``, from a hard-linked copy of the binaries when their directory is
out of that user's reach (a fresh venv in a private temporary directory).
When none of this is possible, :class:`Unavailable` says what to install.

Each test gets a fresh, empty schema (:meth:`Database.fresh`): its
location is a connection string whose ``search_path`` is that schema.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

#: An existing server's connection string, to use instead of a private one.
ENV = "SAMGITA_POSTGRES_DSN"
#: What makes a private server possible, for the failure message.
INSTALL = (
    "install the core's test dependency group (pgserver==0.1.4, a wheel of "
    "PostgreSQL's binaries: pip install pgserver==0.1.4), or PostgreSQL's "
    "initdb and postgres on PATH, or set SAMGITA_POSTGRES_DSN to a "
    "connection string of an existing server"
)
#: Hang guards only: a healthy server starts and stops within a second.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
#: The user a server started by root runs as.
UNPRIVILEGED = "nobody"


class Unavailable(Exception):
    """No PostgreSQL server can be had: the message says what to install."""


def uri(dsn: str) -> str:
    """A libpq connection string (:meth:`Database.fresh`'s) as a
    ``postgresql://`` URI: what ``samgita-fake-agent --store`` takes."""
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if v is not None}
    dbname = params.pop("dbname", "")
    return f"postgresql:///{quote(str(dbname))}?{urlencode(params)}"


class Database:
    """A database the tests may use, and the schemas they made in it."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.schemas: list[str] = []

    def fresh(self) -> str:
        """A connection string whose ``search_path`` is a new, empty schema."""
        name = f"samgita_test_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        self.schemas.append(name)
        return make_conninfo(self.dsn, options=f"-csearch_path={name}")

    def drop_schemas(self) -> None:
        """Drop every schema :meth:`fresh` made (on a server that stays)."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for name in self.schemas:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                        sql.Identifier(name)
                    )
                )
        self.schemas.clear()


def _installation() -> tuple[list[Path], Path]:
    # The trees to copy when out of reach, and the bin/ directory in them.
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        package = Path(next(iter(spec.submodule_search_locations)))
        # pgserver's binaries find its vendored libraries at
        # $ORIGIN/../../../pgserver.libs: both trees move together.
        trees = [package, package.parent / "pgserver.libs"]
        return [t for t in trees if t.is_dir()], package / "pginstall" / "bin"
    initdb, postgres = shutil.which("initdb"), shutil.which("postgres")
    if initdb and postgres and Path(initdb).parent == Path(postgres).parent:
        return [], Path(initdb).parent
    raise Unavailable(f"no PostgreSQL server to test against: {INSTALL}")


def _reachable(path: Path) -> bool:
    # Whether a user who is neither owner nor group may run what is in path.
    path = path.resolve()
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _link_tree(source: Path, target: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system: copy
            shutil.copy2(src, dst)

    shutil.copytree(
        source,
        target,
        copy_function=link,
        ignore=shutil.ignore_patterns("include", "__pycache__"),
    )


def _user(top: Path, trees: list[Path], bin_dir: Path) -> tuple[dict[str, Any], Path]:
    # Who runs the server (subprocess's keyword arguments: Any, as they are
    # for subprocess) and from which bin/.
    if os.geteuid() != 0:
        return {}, bin_dir
    try:
        entry = pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        raise Unavailable(
            f"PostgreSQL does not run as root, and there is no user {UNPRIVILEGED!r} "
            f"to run it as: run the tests as another user, or {INSTALL}"
        ) from None
    os.chown(top, entry.pw_uid, entry.pw_gid)
    if not _reachable(bin_dir):
        if not trees:
            raise Unavailable(
                f"{bin_dir} is out of reach of user {UNPRIVILEGED!r}: {INSTALL}"
            )
        base = trees[0].parent
        for tree in trees:
            _link_tree(tree, top / "install" / tree.name)
        bin_dir = top / "install" / bin_dir.relative_to(base)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}, bin_dir


def _wait_ready(server: subprocess.Popen[bytes], dsn: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if server.poll() is not None:
            raise Unavailable(
                f"the PostgreSQL server exited ({server.returncode}):\n"
                f"{log.read_text(errors='replace')}"
            )
        try:
            psycopg.connect(dsn, connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.02)


@contextlib.contextmanager
def running() -> Iterator[str]:
    """A private PostgreSQL server, started in a new temporary directory
    and stopped (and removed) when the block ends; yields its connection
    string (Unix socket, user ``postgres``, database ``postgres``).

    Raises:
        Unavailable: no binaries, or the server could not start.
    """
    trees, bin_dir = _installation()
    top = Path(tempfile.mkdtemp(prefix="samgita-pg-"))
    server = None
    try:
        user, bin_dir = _user(top, trees, bin_dir)
        data, log = top / "data", top / "server.log"
        try:
            subprocess.run(
                [bin_dir / "initdb", "-D", data, "-U", "postgres", "--auth=trust"]
                + ["-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"],
                cwd=top,
                check=True,
                capture_output=True,
                **user,
            )
        except subprocess.CalledProcessError as failed:
            raise Unavailable(
                f"initdb failed ({failed.returncode}): {failed.stderr.decode(errors='replace')}"
            ) from None
        with log.open("wb") as out:
            # The server's own durability settings (fsync and
            # synchronous_commit on) are the defaults: tested as shipped.
            server = subprocess.Popen(
                [bin_dir / "postgres", "-D", data, "-k", top, "-p", "5432"]
                + ["-c", "listen_addresses=", "-c", "max_connections=200"],
                cwd=top,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C reaches pytest, which stops it
                **user,
            )
        dsn = f"host={top} port=5432 user=postgres dbname=postgres"
        _wait_ready(server, dsn, log)
        yield dsn
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)  # fast shutdown
            try:
                server.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(top, ignore_errors=True)


@contextlib.contextmanager
def database() -> Iterator[Database]:
    """The session's database: ``$SAMGITA_POSTGRES_DSN``'s (its test
    schemas dropped at the end) or a private server's.

    Raises:
        Unavailable: neither is possible (the message says what to
            install), or the server named cannot be reached.
    """
    dsn = os.environ.get(ENV)
    if dsn:
        try:
            psycopg.connect(dsn, connect_timeout=10).close()
        except psycopg.Error as error:
            raise Unavailable(f"{ENV} names a server that fails: {error}") from None
        db = Database(dsn)
        try:
            yield db
        finally:
            db.drop_schemas()
        return
    with running() as private:
        yield Database(private)
