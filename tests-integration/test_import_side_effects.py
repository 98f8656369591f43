"""Importing each package starts nothing: no thread, no logging set-up, no
open socket, no event loop (the requirement text: loading the library starts
no listener or Agent). Nor does it load a store backend: ``sqlite3`` is
imported only by ``samgita_protocol.stores.sqlite`` and ``psycopg`` only by
``samgita_protocol.stores.postgres`` (which connects to nothing, and starts
its listening thread only at the first ``wait_for``), ``samgita_protocol``
does not import ``samgita_protocol.stores``, and the stores open nothing
until a store object is made. Checked in a fresh interpreter so other tests' imports do not hide
anything."""

import json
import subprocess
import sys

import pytest

PROBE = """
import asyncio, json, logging, os, sys, threading
before_fds = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()
import {modules}
after_fds = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()
handlers = {
    name: len(logger.handlers)
    for name, logger in logging.root.manager.loggerDict.items()
    if isinstance(logger, logging.Logger) and logger.handlers
}
try:
    asyncio.get_running_loop()
    loop = True
except RuntimeError:
    loop = False
print(json.dumps({
    "threads": threading.active_count(),
    "root_handlers": len(logging.root.handlers),
    "root_level": logging.root.level,
    "handlers": handlers,
    "new_fds": len(after_fds - before_fds),
    "loop": loop,
    "sqlite": "sqlite3" in sys.modules or "_sqlite3" in sys.modules,
    "psycopg": "psycopg" in sys.modules,
    "stores": "samgita_protocol.stores" in sys.modules,
}))
"""


PACKAGES = {
    "samgita-protocol": "samgita_protocol, samgita_protocol.testing",
    "samgita-protocol-stores": "samgita_protocol.stores",
    "samgita-protocol-stores-sqlite": "samgita_protocol.stores.sqlite",
    "samgita-protocol-stores-postgres": "samgita_protocol.stores.postgres",
    "samgita-protocol-websocket": (
        "samgita_protocol_websocket, samgita_protocol_websocket.fake_agent"
    ),
    "samgita-protocol-codex": "samgita_protocol_codex",
}


@pytest.mark.parametrize("modules", PACKAGES.values(), ids=PACKAGES.keys())
def test_import_starts_nothing(modules: str) -> None:
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE.replace("{modules}", modules)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    facts = json.loads(out.stdout)
    assert facts == {
        "threads": 1,
        "root_handlers": 0,
        "root_level": 30,
        "handlers": {},
        "new_fds": 0,
        "loop": False,
        # Only the backend's own module imports its driver.
        "sqlite": "stores.sqlite" in modules,
        "psycopg": "stores.postgres" in modules,
        # The fake Agent keeps its records in the stores (the memory ones
        # unless --store names another), which import no backend.
        "stores": "samgita_protocol.stores" in modules or "fake_agent" in modules,
    }, facts
