"""A deterministic fake Agent behind a real listener, for tests, demos and users' integration tests.

:class:`FakeAgent` is a core ``Handler`` implementing all five capability
groups.  Its state (:class:`AgentState`: threads, turns, approvals, and a
store for command receipts, project events and streams) is shared by every
connection a listener accepts, so a client that reconnects finds its
events, threads and streams again.  A mutation runs at most once per
``command_id``: a repeated delivery gets the first delivery's result (its
receipt); the same ``command_id`` with other content is ``conflict``.

A ``turn/start`` answers at once (``in_progress``) and then streams, in the
background, on stream ``"<turn_id>"``: an item of ``message_deltas`` deltas,
a server-initiated ``approval/request`` (the turn waits for the decision;
nothing is approved by the Agent), an item reporting the decision, a second
item of ``message_deltas`` deltas, and ``turn/completed``.  Every item event
is appended to the store's replay log (which assigns the cursor) before it
is sent, so ``stream/resume`` serves whatever a disconnected client missed; the
turn keeps running while no client is connected.  A peer that did not
negotiate a notification's group does not get it; one without
``streaming.v1`` gets the session events unsequenced (it cannot resume).  ``turn/interrupt`` stops
it (``turn/completed`` with ``interrupted``).

Run it: ``samgita-fake-agent --host 127.0.0.1 --port PORT --token-file FILE``
or ``python -m samgita_protocol_websocket.fake_agent ...``.  It prints the
bound URL on stdout, logs on stderr (``--log-level``, default ``INFO``:
listening, each connection accepted with the peer's address, each refusal
with its HTTP status and reason, each close with its code, failures with
their traceback; the token is redacted at every level) and exits 0 on
SIGINT/SIGTERM.  ``--certfile`` / ``--keyfile`` serve ``wss://``;
``--allow-insecure-non-loopback`` allows plain ``ws://`` on a non-loopback
``--host``.  ``--store`` names the store: ``memory`` (the default: nothing
survives the process), ``sqlite:PATH`` (one SQLite file: receipts, event
statuses and streams survive a crash, and ``project/event.receive`` answers
``acceptance: "durable"``) or ``postgresql://...`` (a database several
Agents may share: a client that resumes another Agent's stream here keeps
receiving that Agent's new events live).  ``--approval-timeout`` bounds the
wait for an approval (then the turn goes on with it ``expired``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import signal
import ssl as ssl_module
import sys
from collections.abc import Callable, Sequence
from typing import Final, TypedDict, Unpack

from ._agent import AGENT_LOGGER, AgentState, FakeAgent
from ._agent_store import AgentStore, OpenedStore, open_store, shown
from ._checks import is_loopback_host
from ._listener import serve

__all__ = ["AgentState", "AgentStore", "FakeAgent", "OpenedStore", "main", "open_store"]

_log: Final = logging.getLogger(AGENT_LOGGER)


class _AgentOptions(TypedDict, total=False):
    """The :class:`AgentState` settings :func:`run` takes as keywords."""

    message_deltas: int
    delta_interval: float
    approval_timeout: float
    host_id: str
    store: AgentStore


async def run(
    host: str,
    port: int,
    token: str,
    *,
    ready: Callable[[str], None] | None = None,
    ssl: ssl_module.SSLContext | None = None,
    allow_insecure_non_loopback: bool = False,
    **state: Unpack[_AgentOptions],
) -> None:
    """Serve a FakeAgent until SIGINT/SIGTERM (or cancellation).

    ``ssl`` and ``allow_insecure_non_loopback`` are ``serve``'s; ``state``
    are :class:`AgentState` fields (``store``: served ``durable`` when its
    inbox is; not closed here).  Raises what ``serve`` raises
    (``ValueError`` naming the argument, ``OSError`` when the address
    cannot be bound).
    """
    agent_state = AgentState(**state)
    durable = agent_state.store.inbox.durable
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with serve(
        FakeAgent.factory(agent_state),
        host=host,
        port=port,
        token=token,
        host_id=agent_state.host_id,
        durable=durable,
        ssl=ssl,
        allow_insecure_non_loopback=allow_insecure_non_loopback,
    ) as listener:
        _log.info(
            "keeping receipts, events and streams in %s",
            "a durable store" if durable else "memory (not durable)",
        )
        if ready is not None:
            ready(listener.url)
        await stop.wait()
        _log.info("stopping (signal received)")


_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

#: The longest --approval-timeout: its deadline (now plus it) must be a
#: date the Agent can write (about 31 years).
_MAX_APPROVAL_TIMEOUT: Final = 1e9


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="samgita-fake-agent",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other than loopback "
        "needs --certfile or --allow-insecure-non-loopback",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port (default 0: any free port)"
    )
    parser.add_argument(
        "--token-file", required=True, help="file whose first line is the bearer token"
    )
    parser.add_argument(
        "--certfile",
        help="PEM certificate chain: serve wss:// (TLS) with it",
    )
    parser.add_argument(
        "--keyfile",
        help="PEM private key of --certfile (default: read from --certfile)",
    )
    parser.add_argument(
        "--allow-insecure-non-loopback",
        action="store_true",
        help="serve plain ws:// (no TLS) on a non-loopback --host: anyone on "
        "that network can read the token",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=_LOG_LEVELS,
        default="INFO",
        help="log on stderr from this level (default INFO: connections, "
        "refusals, closes, failures; DEBUG adds every frame, token redacted)",
    )
    parser.add_argument(
        "--deltas", type=int, default=8, help="deltas per message item (default 8)"
    )
    parser.add_argument(
        "--delta-interval",
        type=float,
        default=0.01,
        help="seconds between streamed events (default 0.01)",
    )
    parser.add_argument(
        "--approval-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds a turn waits for the answer to its approval request, "
        "then goes on with the approval expired (default 30)",
    )
    parser.add_argument(
        "--store",
        default="memory",
        metavar="SPEC",
        help="where command receipts, project events and streams are kept: "
        "memory (default; nothing survives the process), sqlite:PATH (one "
        "file, survives a crash; acceptance durable) or postgresql://... "
        "(shared by several Agents; a resumed stream of another Agent is "
        "followed live)",
    )
    return parser


def _server_context(certfile: str, keyfile: str | None) -> ssl_module.SSLContext:
    """A TLS server context (the ``ssl`` module's defaults) with ``certfile``
    and ``keyfile`` loaded; ``OSError`` / ``ssl.SSLError`` when they cannot be."""
    context = ssl_module.SSLContext(ssl_module.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    return context


def _configure_logging(level: str) -> None:
    """The command's logging (the library configures none): records of
    ``level`` and above on stderr.  Below DEBUG ``websockets``' own records
    (which repeat the listener's ``samgita_protocol_websocket.server`` ones
    without the peer's address) only from WARNING."""
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if level != "DEBUG":
        logging.getLogger("websockets").setLevel(
            max(logging.WARNING, logging.getLevelNamesMapping()[level])
        )


def _fail(message: str) -> int:
    print(f"samgita-fake-agent: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``samgita-fake-agent``; returns the exit status.

    Prints the bound URL on stdout, logs on stderr (``--log-level``), exits 0
    on SIGINT/SIGTERM and 2 (with a message naming the flag) on bad options.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    timeout = args.approval_timeout
    if not (math.isfinite(timeout) and 0 < timeout <= _MAX_APPROVAL_TIMEOUT):
        return _fail(
            "--approval-timeout must be a positive number of seconds "
            f"(at most {_MAX_APPROVAL_TIMEOUT:.0f}), got {timeout}"
        )
    if args.keyfile is not None and args.certfile is None:
        return _fail("--keyfile needs --certfile")
    if args.certfile is None and not args.allow_insecure_non_loopback:
        if not is_loopback_host(args.host):
            return _fail(
                f"--host {args.host} is not a loopback address: pass --certfile "
                "(and --keyfile) to serve wss://, or --allow-insecure-non-loopback "
                "to serve plain ws:// on it"
            )
    try:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.readline().strip()
    except OSError as exc:
        return _fail(f"cannot read --token-file: {exc.strerror}")
    context = None
    if args.certfile is not None:
        try:
            context = _server_context(args.certfile, args.keyfile)
        except OSError as exc:  # ssl.SSLError included
            files = f"--certfile {args.certfile}"
            if args.keyfile is not None:
                files += f" / --keyfile {args.keyfile}"
            why = exc.strerror or str(exc)
            if isinstance(exc, ssl_module.SSLError):
                why = f"not a PEM certificate chain and its private key ({why})"
            return _fail(f"cannot load {files}: {why}")
    try:
        store = open_store(args.store)
    except Exception as exc:  # noqa: BLE001 - any backend's refusal, with its message
        # A driver's message may quote the whole URI, password included.
        spec = shown(args.store)
        why = str(exc).replace(args.store, spec).strip()
        return _fail(f"cannot open --store {spec}: {why}")
    _configure_logging(args.log_level)

    def ready(url: str) -> None:
        print(url, flush=True)

    try:
        asyncio.run(
            run(
                args.host,
                args.port,
                token,
                ready=ready,
                ssl=context,
                allow_insecure_non_loopback=args.allow_insecure_non_loopback,
                message_deltas=args.deltas,
                delta_interval=args.delta_interval,
                approval_timeout=timeout,
                store=store,
            )
        )
    except (ValueError, TypeError, OSError) as exc:
        return _fail(str(exc))
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
