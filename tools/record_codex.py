#!/usr/bin/env python3
"""Record real `codex app-server` 0.163.0 traffic for the translation unit tests.

Runs the pinned binary offline over stdio with a temporary CODEX_HOME whose
config.toml points a custom model provider at a scripted Responses-API server
on loopback (server-sent events), drives one scenario and writes every
JSON-RPC line in both directions to a JSONL fixture:

    python tools/record_codex.py            # all scenarios into the package's fixtures

Each fixture line is {"dir": "send"|"recv", "msg": <the JSON message>}.
Volatile values (ids, timestamps, paths) are kept as recorded; tests compare
structure, not those values. The binary is $CODEX_BIN or the lockfile install.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "packages" / "samgita-protocol-codex" / "tests" / "recordings"
sys.path.insert(0, str(ROOT / "tools"))

import gen_codex_types  # pinned binary lookup and version check

Json = dict[str, Any]


# ------------------------------------------------------------- scripted model


def sse(event: Json) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def text_reply(
    text: str, *, chunks: int = 3, response_id: str = "resp_1"
) -> list[Json]:
    """Responses-API events of one assistant message streamed in `chunks` deltas."""
    size = max(1, -(-len(text) // chunks))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    events: list[Json] = [
        {"type": "response.created", "response": {"id": response_id}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": part}
        for part in parts
    ]  # fmt: skip
    done = {
        **item,
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": response_id, "usage": {
            "input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
            "output_tokens_details": None, "total_tokens": 15}}},
    ]  # fmt: skip
    return events


def exec_call(
    command: str, *, call_id: str = "call_1", escalated: bool = True
) -> list[Json]:
    """Responses-API events of one `exec_command` function call."""
    args: Json = {"cmd": command}
    if escalated:
        args["sandbox_permissions"] = "require_escalated"
        args["justification"] = "the test needs it"
    item = {"type": "function_call", "id": "fc_1", "call_id": call_id,
            "name": "exec_command", "arguments": json.dumps(args)}  # fmt: skip
    return [
        {"type": "response.created", "response": {"id": "resp_call"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"id": "resp_call"}},
    ]


class ScriptedModel:
    """A loopback Responses-API server answering POST /v1/responses from a script.

    `script` is a list of turns, each a list of SSE events; request n gets
    turn n (the last one repeats). `delay` seconds pass between events, and
    `hold` (an asyncio.Event) when set is awaited before the last event so a
    test can act while the model is still streaming.
    """

    def __init__(self, script: list[list[Json]], *, delay: float = 0.0) -> None:
        self.script = script
        self.delay = delay
        self.requests: list[Json] = []
        self.hold: asyncio.Event | None = None
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {
                k.lower(): v.strip()
                for k, _, v in (h.partition(":") for h in lines[1:] if h)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method != "POST" or not path.endswith("/responses"):
                writer.write(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                )
                return
            self.requests.append(json.loads(body) if body else {})
            events = self.script[min(len(self.requests), len(self.script)) - 1]
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-cache\r\nconnection: close\r\n\r\n"
            )
            for index, event in enumerate(events):
                if index == len(events) - 1 and self.hold is not None:
                    await writer.drain()
                    await self.hold.wait()
                writer.write(sse(event))
                await writer.drain()
                if self.delay:
                    await asyncio.sleep(self.delay)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()


def write_codex_home(home: Path, port: int, *, approval_policy: str = "never") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "scripted-model"\n'
        f'model_provider = "scripted"\n'
        f'approval_policy = "{approval_policy}"\n'
        f'sandbox_mode = "workspace-write"\n'
        f"\n[model_providers.scripted]\n"
        f'name = "scripted"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n'
        f'wire_api = "responses"\n'
        f"request_max_retries = 0\n"
        f"stream_max_retries = 0\n"
        f"supports_websockets = false\n"
    )


# ------------------------------------------------------------- stdio driver


class StdioCodex:
    """`codex app-server` over stdio, every line logged as {"dir", "msg"}."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.log: list[Json] = []
        self._next_id = 0

    async def send(self, msg: Json) -> None:
        assert self.proc.stdin is not None
        self.log.append({"dir": "send", "msg": msg})
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Json | None) -> int:
        rid = self._next_id
        self._next_id += 1
        msg: Json = {"id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        return rid

    async def recv(self, timeout: float = 30.0) -> Json:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise EOFError("codex app-server closed stdout")
        msg: Json = json.loads(line)
        self.log.append({"dir": "recv", "msg": msg})
        return msg

    async def until(self, pred: Callable[[Json], bool], timeout: float = 30.0) -> Json:
        while True:
            msg = await self.recv(timeout)
            if pred(msg):
                return msg


@contextlib.asynccontextmanager
async def codex_stdio(binary: Path, home: Path, cwd: Path) -> AsyncIterator[StdioCodex]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "CODEX_HOME": str(home), "RUST_LOG": "error"}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        str(binary), "app-server", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env, cwd=cwd,
        limit=16 * 1024 * 1024, start_new_session=True,
    )  # fmt: skip
    try:
        yield StdioCodex(proc)
    finally:
        # the npm `codex` is a node wrapper around the native binary; closing
        # stdin ends app-server, the process group kill covers both if not
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()


async def handshake(codex: StdioCodex) -> Json:
    rid = await codex.request(
        "initialize",
        {"clientInfo": {"name": "samgita-record", "title": None, "version": "0.1.0"}},
    )
    result = await codex.until(lambda m: m.get("id") == rid)
    await codex.send({"method": "initialized"})
    return result


def _is_response(rid: int) -> Callable[[Json], bool]:
    return lambda m: m.get("id") == rid and "method" not in m


def _turn_done(m: Json) -> bool:
    return m.get("method") == "turn/completed"


async def scenario_turn(binary: Path, tmp: Path) -> list[Json]:
    """initialize, thread/start, one turn whose agent message streams in deltas."""
    model = ScriptedModel([text_reply("Hello from the scripted model.")])
    await model.start()
    try:
        write_codex_home(tmp / "home", model.port)
        async with codex_stdio(binary, tmp / "home", tmp) as codex:
            await handshake(codex)
            rid = await codex.request("thread/start", {"cwd": str(tmp)})
            thread = (await codex.until(_is_response(rid)))["result"]["thread"]
            await codex.request(
                "turn/start",
                {"threadId": thread["id"], "input": [{"type": "text", "text": "hi"}]},
            )
            await codex.until(_turn_done)
            return codex.log
    finally:
        await model.close()


async def scenario_approval(binary: Path, tmp: Path, *, approve: bool) -> list[Json]:
    """on-request approval of an escalated exec_command, answered accept/decline."""
    marker = tmp / "approved.txt"
    model = ScriptedModel([exec_call(f"touch {marker}"), text_reply("done")])
    await model.start()
    try:
        write_codex_home(tmp / "home", model.port, approval_policy="on-request")
        async with codex_stdio(binary, tmp / "home", tmp) as codex:
            await handshake(codex)
            rid = await codex.request("thread/start", {"cwd": str(tmp)})
            thread = (await codex.until(_is_response(rid)))["result"]["thread"]
            await codex.request(
                "turn/start",
                {
                    "threadId": thread["id"],
                    "input": [{"type": "text", "text": "touch it"}],
                },
            )
            ask = await codex.until(lambda m: "method" in m and "id" in m)
            decision = "accept" if approve else "decline"
            await codex.send({"id": ask["id"], "result": {"decision": decision}})
            await codex.until(_turn_done, timeout=60)
            codex.log.append({"dir": "note", "msg": {"marker_exists": marker.exists()}})
            return codex.log
    finally:
        await model.close()


async def scenario_interrupt(binary: Path, tmp: Path) -> list[Json]:
    """turn/interrupt while the scripted model is still streaming."""
    model = ScriptedModel([text_reply("a long answer that never finishes", chunks=6)])
    model.hold = asyncio.Event()
    await model.start()
    try:
        write_codex_home(tmp / "home", model.port)
        async with codex_stdio(binary, tmp / "home", tmp) as codex:
            await handshake(codex)
            rid = await codex.request("thread/start", {"cwd": str(tmp)})
            thread = (await codex.until(_is_response(rid)))["result"]["thread"]
            rid = await codex.request(
                "turn/start",
                {"threadId": thread["id"], "input": [{"type": "text", "text": "go"}]},
            )
            turn = (await codex.until(_is_response(rid)))["result"]["turn"]
            await codex.until(lambda m: m.get("method") == "item/agentMessage/delta")
            await codex.request(
                "turn/interrupt", {"threadId": thread["id"], "turnId": turn["id"]}
            )
            await codex.until(_turn_done)
            model.hold.set()
            return codex.log
    finally:
        await model.close()


SCENARIOS = {
    "turn": lambda b, t: scenario_turn(b, t),
    "approval_accept": lambda b, t: scenario_approval(b, t, approve=True),
    "approval_decline": lambda b, t: scenario_approval(b, t, approve=False),
    "interrupt": lambda b, t: scenario_interrupt(b, t),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--out", type=Path, default=FIXTURES)
    args = parser.parse_args()
    binary = gen_codex_types.codex_binary()
    gen_codex_types.check_codex_version(binary)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenarios:
        with tempfile.TemporaryDirectory(prefix=f"codex-{name}-") as tmp:
            log = asyncio.run(SCENARIOS[name](binary, Path(tmp)))
        text = "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in log)
        (args.out / f"{name}.jsonl").write_text(text)
        print(f"{name}: {len(log)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
