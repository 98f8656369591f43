"""The Codex bridge against the real `codex app-server` 0.163.0, over stdio and over WebSocket.

Offline: a temporary CODEX_HOME points a custom model provider at a scripted
Responses-API server on loopback (tools/record_codex.py's ScriptedModel).
The binary is $CODEX_BIN or tests-integration/node_modules/.bin/codex; a
missing binary or another version fails (never skips).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import msgspec
import pytest
from peers import node_binary
from samgita_protocol import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    ErrorCode,
    InitializeParams,
    InputItem,
    ItemDeltaParams,
    Notification,
    Request,
    Response,
    StreamResumeParams,
    StreamResumeResult,
    ThreadReadParams,
    ThreadStartParams,
    TurnInterruptParams,
    TurnStartParams,
    TurnSteerParams,
    encode,
)
from samgita_protocol_codex import (
    CodexBridge,
    CodexStdio,
    CodexWebSocket,
    ToCodex,
    ToNative,
)

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ["sessions.v1", "streaming.v1", "approvals.v1"]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


rec = _load("record_codex")
tool = sys.modules["gen_codex_types"]


def _path() -> str:
    """PATH for the Codex processes: node's own directory first (the npm
    launcher is a node script; node need not be in /usr/bin), then the
    system directories, nothing else of the caller's environment."""
    return os.pathsep.join([str(Path(node_binary()).parent), "/usr/bin", "/bin"])


def _binary() -> Path:
    binary = tool.codex_binary()
    tool.check_codex_version(binary)
    return Path(binary).absolute()


class Link(Protocol):
    async def send(self, line: bytes) -> None: ...
    async def readline(self) -> bytes | None: ...
    async def close(self) -> None: ...


class Codex:
    """One way of reaching a Codex app-server: `open()` a link, `cut()` it."""

    def __init__(self, kind: str, home: Path, cwd: Path) -> None:
        self.kind, self.home, self.cwd = kind, home, cwd
        self.server: asyncio.subprocess.Process | None = None
        self.url = ""
        self.token = secrets.token_urlsafe(24)

    async def start(self) -> None:
        if self.kind == "websocket":
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            token_file = self.home / "ws-token"
            token_file.write_text(self.token)
            token_file.chmod(0o600)
            self.url = f"ws://127.0.0.1:{port}"
            self.server = await asyncio.create_subprocess_exec(
                str(_binary()), "app-server", "--listen", self.url,
                "--ws-auth", "capability-token", "--ws-token-file", str(token_file),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL, cwd=self.cwd, start_new_session=True,
                env={"PATH": _path(), "HOME": str(self.home), "CODEX_HOME": str(self.home)},
            )  # fmt: skip
            for _ in range(200):
                if (
                    await asyncio.to_thread(_status, f"http://127.0.0.1:{port}/readyz")
                    == 200
                ):
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("codex app-server --listen never became ready")

    async def open(self) -> Link:
        if self.kind == "stdio":
            env = {"PATH": _path(), "HOME": str(self.home)}
            return await CodexStdio.start(
                binary=_binary(), codex_home=self.home, cwd=self.cwd, env=env
            )
        return await CodexWebSocket.connect(url=self.url, token=self.token)

    async def cut(self, link: Any) -> None:
        if self.kind == "stdio":
            await link.kill()
        else:
            await link.close()

    async def stop(self) -> None:
        if self.server is not None:
            import signal

            try:
                os.killpg(self.server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await self.server.wait()


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=2
        ) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


async def _upgrade_status(url: str, headers: dict[str, str]) -> int:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    try:
        async with connect(url, additional_headers=headers, open_timeout=10):
            return 101
    except InvalidStatus as exc:
        return int(exc.response.status_code)


class Run:
    """Drives the bridge: native requests in, the Codex link pumped in a task.

    ``sent[k]`` holds every line the bridge wrote to the k-th Codex link (as
    JSON), ``native`` everything else it returned, in order."""

    def __init__(self, link: Link) -> None:
        self.bridge = CodexBridge(host_id="codex-it")
        self.link = link
        self.sent: list[list[dict[str, Any]]] = [[]]
        self.native: list[Any] = []
        self.changed = asyncio.Event()
        self.n = 0
        self.pump_task: asyncio.Task[None] | None = None

    async def dispatch(self, outputs: list[Any]) -> None:
        for out in outputs:
            if isinstance(out, ToCodex):
                self.sent[-1].append(json.loads(out.data))
                await self.link.send(out.data)
            else:
                self.native.append(out.message if isinstance(out, ToNative) else out)
        self.changed.set()

    def new_link(self, link: Link) -> None:
        self.link = link
        self.sent.append([])

    async def _pump(self) -> None:
        while (line := await self.link.readline()) is not None:
            await self.dispatch(self.bridge.receive_codex(line))

    def start_pump(self) -> None:
        self.pump_task = asyncio.create_task(self._pump())

    async def stop_pump(self) -> None:
        if self.pump_task is not None:
            self.pump_task.cancel()
            try:
                await self.pump_task
            except (asyncio.CancelledError, ConnectionError):
                pass
            self.pump_task = None

    def make(self, method: str, params: msgspec.Struct, *, mutation: bool) -> Request:
        self.n += 1
        return Request(
            method=method, id=f"n{self.n}", correlation_id=f"c{self.n}", params=params,
            command_id=f"cmd{self.n}" if mutation else msgspec.UNSET,
        )  # fmt: skip

    async def request(
        self, method: str, params: msgspec.Struct, *, mutation: bool
    ) -> Response:
        req = self.make(method, params, mutation=mutation)
        await self.dispatch(self.bridge.native_request(req))
        return await self.wait(lambda m: isinstance(m, Response) and m.id == req.id)  # type: ignore[no-any-return]

    async def wait(self, pred: Callable[[Any], bool], timeout: float = 60) -> Any:
        async def find() -> Any:
            seen = 0
            while True:
                for m in self.native[seen:]:
                    if pred(m):
                        return m
                seen = len(self.native)
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(find(), timeout)

    async def until(self, cond: Callable[[], bool], timeout: float = 60) -> None:
        async def check() -> None:
            while not cond():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(check(), timeout)

    def sequenced(self) -> list[Notification]:
        return [
            m
            for m in self.native
            if isinstance(m, Notification) and m.cursor is not msgspec.UNSET
        ]

    def notes(self, method: str) -> list[Notification]:
        return [
            m for m in self.native if isinstance(m, Notification) and m.method == method
        ]

    async def setup_thread(self) -> str:
        init = await self.request(
            "connection/initialize",
            InitializeParams(versions=["1.0"], capabilities=GROUPS),
            mutation=False,
        )
        assert sorted(init.result.capabilities) == sorted(GROUPS)
        started = await self.request("thread/start", ThreadStartParams(), mutation=True)
        return str(started.result.thread.thread_id)

    async def start_turn(self, thread_id: str, text: str = "hi") -> str:
        params = TurnStartParams(
            thread_id=thread_id, input=[InputItem(type="text", text=text)]
        )
        response = await self.request("turn/start", params, mutation=True)
        return str(response.result.turn.turn_id)


def _text(notes: list[Notification]) -> str:
    return "".join(
        n.params.delta for n in notes if isinstance(n.params, ItemDeltaParams)
    )


def _turn_completed(m: Any) -> bool:
    return isinstance(m, Notification) and m.method == "turn/completed"


@asynccontextmanager
async def codex_session(
    kind: str,
    tmp: Path,
    script: list[list[dict[str, Any]]],
    *,
    policy: str = "never",
    delay: float = 0.0,
) -> AsyncIterator[tuple[Run, Codex, Any]]:
    model = rec.ScriptedModel(script, delay=delay)
    model.hold = asyncio.Event()
    model.hold.set()
    await model.start()
    rec.write_codex_home(tmp / "home", model.port, approval_policy=policy)
    codex = Codex(kind, tmp / "home", tmp)
    await codex.start()
    link = await codex.open()
    run = Run(link)
    run.start_pump()
    try:
        yield run, codex, model
    finally:
        await run.stop_pump()
        await run.link.close()
        await codex.stop()
        model.hold.set()
        await model.close()


LINKS = ["stdio", "websocket"]


@pytest.mark.parametrize("kind", LINKS)
def test_turn_deltas_become_native_deltas(kind: str, tmp_path: Path) -> None:
    async def main() -> None:
        text = "Hello from the scripted model, in pieces."
        async with codex_session(kind, tmp_path, [rec.text_reply(text, chunks=5)]) as (
            run,
            _,
            _m,
        ):
            thread_id = await run.setup_thread()
            await run.start_turn(thread_id)
            done = await run.wait(_turn_completed)
            assert done.params.turn.status == "completed"
            deltas = run.notes("item/delta")
            assert len(deltas) == 5 and "".join(d.params.delta for d in deltas) == text
            sequenced = [
                m
                for m in run.native
                if isinstance(m, Notification) and m.cursor is not msgspec.UNSET
            ]
            assert [m.cursor for m in sequenced] == list(range(1, len(sequenced) + 1))
            final = [
                n
                for n in run.notes("item/completed")
                if n.params.item.type == "agentMessage"
            ]
            assert final[-1].params.item.text == text

    asyncio.run(main())


@pytest.mark.parametrize("kind", LINKS)
@pytest.mark.parametrize("approve", [True, False], ids=["approve", "deny"])
def test_approval_reaches_native_side_and_decides_the_effect(
    kind: str, approve: bool, tmp_path: Path
) -> None:
    marker = tmp_path / "approved.txt"

    async def main() -> None:
        script = [rec.exec_call(f"touch {marker}"), rec.text_reply("done")]
        async with codex_session(kind, tmp_path, script, policy="on-request") as (
            run,
            _,
            _m,
        ):
            thread_id = await run.setup_thread()
            await run.start_turn(thread_id, "touch it")
            ask = await run.wait(
                lambda m: isinstance(m, Request) and m.method == "approval/request"
            )
            params = ask.params
            assert (
                isinstance(params, ApprovalRequestParams)
                and "touch" in params.action.description
            )
            result = ApprovalRequestResult(
                approval_id=params.approval_id, action=params.action,
                decision="approve" if approve else "deny",
            )  # fmt: skip
            await run.dispatch(
                run.bridge.native_response(
                    Response(
                        id=ask.id, correlation_id=ask.correlation_id, result=result
                    )
                )
            )
            await run.wait(_turn_completed)
        assert marker.exists() is approve

    asyncio.run(main())


@pytest.mark.parametrize("kind", LINKS)
def test_interrupt_while_streaming(kind: str, tmp_path: Path) -> None:
    async def main() -> None:
        script = [rec.text_reply("a long answer that is still streaming", chunks=6)]
        async with codex_session(kind, tmp_path, script) as (run, _, model):
            model.hold.clear()  # the model stops before response.completed
            thread_id = await run.setup_thread()
            turn_id = await run.start_turn(thread_id)
            await run.wait(
                lambda m: isinstance(m, Notification) and m.method == "item/delta"
            )
            response = await run.request(
                "turn/interrupt",
                TurnInterruptParams(thread_id=thread_id, turn_id=turn_id),
                mutation=True,
            )
            assert response.result.interrupt_status == "requested"
            done = await run.wait(_turn_completed)
            assert done.params.turn.status == "interrupted"

    asyncio.run(main())


CUT_CHUNKS = 60  # deltas of the turn that is cut; 50 ms apart: about 3 s of streaming
CUT_TEXT = "".join(f"<{i:02d}>" for i in range(CUT_CHUNKS))


@pytest.mark.parametrize("kind", LINKS)
def test_link_cut_mid_turn_is_uncertain_and_stream_resumes(
    kind: str, tmp_path: Path
) -> None:
    """The Codex link is cut while the turn's deltas are still arriving.

    A ``turn/steer`` is in flight (written to Codex, unanswered when the link
    goes): it ends ``ambiguous_disconnect``; the new link carries only the
    bridge's ``initialize``/``initialized``, nothing re-sent; the native side
    reconnects and ``stream/resume`` from its checkpoint gives exactly the
    events after it, in order: no loss, no duplicate.
    """

    async def main() -> None:
        script = [rec.text_reply(CUT_TEXT, chunks=CUT_CHUNKS)]
        async with codex_session(kind, tmp_path, script, delay=0.05) as (
            run,
            codex,
            model,
        ):
            model.hold.clear()  # and the turn cannot complete on its own
            thread_id = await run.setup_thread()
            turn_id = await run.start_turn(thread_id)
            # mid-stream: 8 of the 60 deltas have arrived, the rest are coming
            await run.until(lambda: len(run.notes("item/delta")) >= 8)
            # the native client processes the first two deltas (its checkpoint)
            live_deltas = run.notes("item/delta")
            checkpoint = live_deltas[1].cursor
            stream_id = live_deltas[0].stream_id
            assert isinstance(checkpoint, int) and isinstance(stream_id, str)

            # the steer is written to Codex, then the link is cut before the
            # bridge reads another line (Codex's answer, further deltas)
            await run.stop_pump()
            steer = run.make("turn/steer", TurnSteerParams(
                thread_id=thread_id, turn_id=turn_id,
                input=[InputItem(type="text", text="also this")]), mutation=True)  # fmt: skip
            await run.dispatch(run.bridge.native_request(steer))
            (steer_line,) = [m for m in run.sent[0] if m["method"] == "turn/steer"]
            live = run.sequenced()
            arrived = run.notes("item/delta")
            assert 8 <= len(arrived) < CUT_CHUNKS, "the cut must come mid-stream"
            assert not any(_turn_completed(m) for m in run.native)
            await codex.cut(run.link)
            await run.dispatch(run.bridge.codex_disconnected())

            (answer,) = [
                m for m in run.native if isinstance(m, Response) and m.id == steer.id
            ]
            assert answer.error is not msgspec.UNSET
            assert answer.error.code == ErrorCode.AMBIGUOUS_DISCONNECT

            # a read on the dead link is refused at once, not queued for later
            down = await run.request(
                "thread/read", ThreadReadParams(thread_id=thread_id), mutation=False
            )
            assert down.error is not msgspec.UNSET
            assert down.error.code == ErrorCode.DISCONNECTED

            # reconnect: the bridge re-initializes; nothing else goes out
            run.new_link(await codex.open())
            run.start_pump()
            await run.dispatch(run.bridge.codex_connected())
            await run.until(
                lambda: any(m.get("method") == "initialized" for m in run.sent[1])
            )
            assert [m.get("method") for m in run.sent[1]] == [
                "initialize",
                "initialized",
            ]
            assert steer_line["id"] not in [m.get("id") for m in run.sent[1]]

            # the native side reconnects too and resumes from its checkpoint
            run.bridge.native_connected()
            await run.request(
                "connection/initialize",
                InitializeParams(versions=["1.0"], capabilities=GROUPS),
                mutation=False,
            )
            resumed: list[Notification] = []
            cursor = checkpoint
            while True:
                page = await run.request(
                    "stream/resume",
                    StreamResumeParams(stream_id=stream_id, cursor=cursor),
                    mutation=False,
                )
                assert page.error is msgspec.UNSET, page.error
                result = page.result
                assert isinstance(result, StreamResumeResult)
                resumed += result.events
                cursor = result.cursor
                if not result.has_more:
                    break
            assert {e.stream_id for e in resumed} == {stream_id}
            # contiguous from the checkpoint: no event lost, none twice
            cursors = [e.cursor for e in resumed]
            assert cursors == list(range(checkpoint + 1, checkpoint + 1 + len(resumed)))
            # exactly the events the bridge had sent live after the checkpoint
            after = live[[m.cursor for m in live].index(checkpoint) + 1 :]
            assert len(resumed) >= len(after) > 0
            assert [encode(e) for e in resumed[: len(after)]] == [
                encode(m) for m in after
            ]
            # processed + resumed deltas: the model's text so far, in order
            text = _text(live_deltas[:2]) + _text(resumed)
            assert len(_text(arrived)) <= len(text) < len(CUT_TEXT)
            assert CUT_TEXT.startswith(text)
            # the native reconnect and the resume sent nothing to Codex either
            assert [m.get("method") for m in run.sent[1]] == [
                "initialize",
                "initialized",
            ]
            model.hold.set()

    asyncio.run(main())


def test_websocket_listener_facts(tmp_path: Path) -> None:
    """401 without the bearer token, 403 for an Origin header, /readyz 200."""

    async def main() -> None:
        async with codex_session("websocket", tmp_path, [rec.text_reply("x")]) as (
            _,
            codex,
            _m,
        ):
            http = codex.url.replace("ws://", "http://")
            assert await asyncio.to_thread(_status, f"{http}/readyz") == 200
            assert await _upgrade_status(codex.url, {}) == 401
            bearer = {"Authorization": f"Bearer {codex.token}"}
            assert (
                await _upgrade_status(
                    codex.url, {**bearer, "Origin": "http://127.0.0.1"}
                )
                == 403
            )
            assert await _upgrade_status(codex.url + "/any/path", bearer) == 101

    asyncio.run(main())
