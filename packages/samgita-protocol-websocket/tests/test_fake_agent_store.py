"""The fake Agent on the stores (issue 22): receipts, event records and streams
in the store ``--store`` names; a SIGKILL and a restart on the same SQLite
file lose nothing and do nothing twice (``agent_restart``)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import samgita_protocol as core
from samgita_protocol.stores import command_digest
from samgita_protocol.stores.sqlite import SqliteStore

from agent_restart import (
    EVENT,
    GROUPS,
    TOKEN,
    agent,
    ignore_requests,
    kill_and_restart,
    take_all,
)
from samgita_protocol_websocket import Session, connect, serve
from samgita_protocol_websocket._agent_store import shown
from samgita_protocol_websocket.fake_agent import (
    AgentState,
    FakeAgent,
    main,
    open_store,
)


def test_sigkill_and_restart_on_one_sqlite_file_lose_nothing_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    kill_and_restart(tmp_path, f"sqlite:{tmp_path / 'agent.db'}")


# -- acceptance and the command line -----------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "acceptance"),
    [("memory", "received"), ("sqlite", "durable")],
)
def test_acceptance_is_durable_exactly_on_a_durable_store(
    tmp_path: Path, spec: str, acceptance: str
) -> None:
    if spec == "sqlite":
        spec = f"sqlite:{tmp_path / 'agent.db'}"

    async def run(url: str) -> None:
        async with connect(url, token=TOKEN, capabilities=["project_events.v1"]) as s:
            received = await s.request(
                "project/event.receive", {"event": EVENT}, command_id="c"
            )
            status = await s.request("project/event.status", {"event_id": "evt-1"})
            assert received.acceptance == status.acceptance == acceptance

    with agent(tmp_path, "--store", spec) as (proc, url):
        asyncio.run(asyncio.wait_for(run(url), 20))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
    where = "a durable store" if acceptance == "durable" else "memory (not durable)"
    assert f"keeping receipts, events and streams in {where}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("redis://localhost", "expected memory, sqlite:PATH or postgresql://..."),
        ("sqlite:", "sqlite: needs a file path"),
        ("sqlite:{tmp}/missing/agent.db", "unable to open database file"),
        # Nothing listens on port 1: refused at once (or, without psycopg,
        # the postgres extra to install); the password is never shown.
        (
            "postgresql://agent:s3cret@localhost:1/agent",
            "--store postgresql://agent:***@localhost:1/agent: ",
        ),
        # libpq quotes a URI it cannot parse: shown without any of it.
        ("postgresql://agent:s3cret@[bad/agent", "--store postgresql://...: "),
    ],
    ids=["unknown", "empty path", "missing directory", "postgresql", "bad uri"],
)
def test_bad_store_spec_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    spec = spec.format(tmp=tmp_path)
    assert main(["--token-file", str(token_file), "--store", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("samgita-fake-agent: cannot open --store ")
    assert message in err
    assert "s3cret" not in err


@pytest.mark.parametrize(
    ("spec", "shown_as"),
    [
        ("postgresql://agent:s3cret@db:5432/agent", "postgresql://agent:***@db:5432/agent"),
        ("postgresql:///agent?host=/run/pg&password=s3cret", "postgresql:///agent?host=/run/pg&password=***"),
        ("postgres://agent@db/agent", "postgres://agent@db/agent"),
        ("postgresql://agent:s3cret@[db/agent", "postgresql://..."),
        ("sqlite:/var/agent.db", "sqlite:/var/agent.db"),
    ],
)  # fmt: skip
def test_a_store_spec_is_shown_without_its_password(spec: str, shown_as: str) -> None:
    assert shown(spec) == shown_as


def test_open_store_forms(tmp_path: Path) -> None:
    memory = open_store("memory")
    assert (memory.name, memory.inbox.durable, memory.replay_log.durable) == (
        "memory",
        False,
        False,
    )
    memory.close()
    sqlite = open_store(f"sqlite:{tmp_path / 'a.db'}")
    try:
        assert sqlite.inbox.durable and sqlite.replay_log.durable
    finally:
        sqlite.close()
    with pytest.raises(TypeError, match="spec"):
        open_store(b"memory")  # type: ignore[arg-type]


# -- the handler: receipts and their refusals, in process ------------------------------


async def _serving(state: AgentState, run: Any, *, durable: bool = False) -> None:
    async with serve(
        FakeAgent.factory(state), host="127.0.0.1", token=TOKEN, durable=durable
    ) as lis:
        async with connect(
            lis.url, token=TOKEN, capabilities=GROUPS, on_request=ignore_requests
        ) as s:
            await run(s)


def _code(error: pytest.ExceptionInfo[core.ProtocolError]) -> tuple[str, Any]:
    return str(error.value.code), error.value.data


def test_a_command_runs_once_and_other_content_under_its_id_is_conflict() -> None:
    state = AgentState(message_deltas=1, delta_interval=0.0)

    async def run(s: Session) -> None:
        first = await s.request("thread/start", {"instructions": "a"}, command_id="c")
        again = await s.request("thread/start", {"instructions": "a"}, command_id="c")
        assert again == first and len(state.threads) == 1
        with pytest.raises(core.ProtocolError) as error:
            await s.request("thread/start", {"instructions": "b"}, command_id="c")
        assert _code(error) == ("conflict", {"command_id": "c"})
        # A failed command is released: the next delivery runs it again.
        for _ in range(2):
            with pytest.raises(core.ProtocolError) as error:
                await s.request(
                    "turn/start",
                    {"thread_id": "thr-x", "input": [{"type": "text", "text": "x"}]},
                    command_id="t",
                )
            assert error.value.code == "not_found"
        assert len(state.threads) == 1

    asyncio.run(asyncio.wait_for(_serving(state, run), 20))


def test_a_command_held_elsewhere_is_in_progress_until_released() -> None:
    state = AgentState()
    held = core.Request(
        method="thread/start",
        id="elsewhere",
        correlation_id="elsewhere",
        params=core.ThreadStartParams(),
        command_id="c",
    )
    digest = command_digest(held)
    # Another process on a shared store holds the command.
    inbox = state.store.inbox
    assert inbox.claim(state.host_id, "c", digest, lease=60.0).status == "new"

    async def run(s: Session) -> None:
        with pytest.raises(core.ProtocolError) as error:
            await s.request("thread/start", {}, command_id="c")
        assert _code(error) == (
            "conflict",
            {"command_id": "c", "status": "in_progress"},
        )
        assert not state.threads
        inbox.release(state.host_id, "c", digest)
        assert (await s.request("thread/start", {}, command_id="c")).thread

    asyncio.run(asyncio.wait_for(_serving(state, run), 20))


def test_events_are_recorded_in_the_inbox_with_their_status() -> None:
    state = AgentState()

    async def run(s: Session) -> None:
        received = await s.request(
            "project/event.receive", {"event": EVENT}, command_id="e1"
        )
        assert received.processing_status == "pending"
        await s.request(
            "project/event.report",
            {"event_id": "evt-1", "outcome": "failed", "summary": "no"},
            command_id="r1",
        )
        retry = await s.request(
            "project/event.receive",
            {"event": EVENT.retry("attempt-2")},
            command_id="e2",
        )
        assert retry.processing_status == "failed"
        status = await s.request("project/event.status", {"event_id": "evt-1"})
        assert status.processing_status == "failed"
        changed = msgspec.structs.replace(EVENT, payload={"title": "other"})
        with pytest.raises(core.ProtocolError) as error:
            await s.request(
                "project/event.receive", {"event": changed}, command_id="e3"
            )
        assert _code(error) == ("conflict", {"event_id": "evt-1"})

    asyncio.run(asyncio.wait_for(_serving(state, run), 20))
    assert state.store.inbox.event_status(state.host_id, "evt-1") == "failed"


@pytest.mark.parametrize("durable", [True, False])
def test_a_sqlite_store_given_in_python_is_durable_when_served_so(
    tmp_path: Path, durable: bool
) -> None:
    with SqliteStore(tmp_path / "agent.db") as store:
        state = AgentState(store=store)

        async def run(s: Session) -> None:
            received = await s.request(
                "project/event.receive", {"event": EVENT}, command_id="c"
            )
            assert received.acceptance == ("durable" if durable else "received")

        asyncio.run(asyncio.wait_for(_serving(state, run, durable=durable), 20))
        # Ids carry a tag of this state's own on a durable store.
        prefix, tag, number = state.next_id("thr").split("-")
        assert (prefix, len(tag), number) == ("thr", 8, "1")
    assert AgentState().next_id("thr") == "thr-1"


def test_stream_resume_of_a_stream_only_the_store_holds(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "agent.db") as store:
        earlier = AgentState(store=store, message_deltas=2, delta_interval=0.0)

        async def stream(s: Session) -> str:
            thread = (await s.request("thread/start", {}, command_id="a")).thread
            turn = (
                await s.request(
                    "turn/start",
                    {
                        "thread_id": thread.thread_id,
                        "input": [{"type": "text", "text": "x"}],
                    },
                    command_id="b",
                )
            ).turn
            deadline = time.monotonic() + 10
            while store.replay_log.last_cursor(turn.turn_id) < 4:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            return str(turn.turn_id)

        box: list[str] = []

        async def first(s: Session) -> None:
            box.append(await stream(s))

        asyncio.run(asyncio.wait_for(_serving(earlier, first), 20))
        later = AgentState(store=store)  # a restart: no turn in memory

        async def resume(s: Session) -> None:
            assert await s.resume(box[0]) >= 4
            cursors: list[int] = []
            take_all(s, cursors)
            assert cursors[:4] == [1, 2, 3, 4]
            with pytest.raises(core.ProtocolError) as error:
                await s.resume("turn-unknown")
            assert error.value.code == "not_found"

        asyncio.run(asyncio.wait_for(_serving(later, resume), 20))
