"""The demo's Codex mode (``tools/demo --codex``): the same kind of checked
transcript as the fake-Agent flow, against the REAL ``codex app-server``.

Offline: a scripted Responses-API server on loopback (``tools/record_codex.py``'s
``ScriptedModel``, the one tests-integration/test_codex_real.py uses) plays
the model; a temporary ``CODEX_HOME`` points a custom model provider at it.
``codex app-server`` runs over stdio (``CodexStdio``), a ``CodexBridge`` sits
in front of it, and a native host client (a core ``Client``) drives the
bridge with encoded native messages: initialize (the negotiated groups; no
project events), thread/start, turn/start, an escalated ``exec_command``
approved by the client (its effect checked on disk), agent-message deltas as
native ``item/delta`` with contiguous cursors, the native link cut
mid-stream (what the bridge sent meanwhile is lost on the wire), reconnect,
re-initialize, ``stream/resume`` from the processed checkpoint, and the turn
completing: every cursor processed exactly once, the deltas adding up to the
completed message.

The binary is ``$CODEX_BIN`` when set, else the lockfile's install
(tests-integration/node_modules/.bin/codex); a missing binary or any version
other than 0.163.0 is a clear error (exit 2), never a skip.  Exit 0 only when
every check held, 1 when a check failed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import samgita_protocol as core
from samgita_protocol_codex import (
    SUPPORTED_GROUPS,
    ApprovalResolved,
    BridgeReport,
    CodexBridge,
    CodexStdio,
    CodexUnmapped,
    ToCodex,
    ToNative,
)

# The sibling tools below, also when this module is imported from elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_codex_types  # the pinned binary lookup and version check
import record_codex as scripted  # the scripted model test_codex_real.py uses too
from transcript import Transcript  # the transcript format of both demos

#: Every group the native client offers; the bridge must answer with exactly
#: the ones Codex can serve.
OFFER = list(core.CAPABILITY_GROUPS)
REQUIRED = ["sessions.v1", "streaming.v1", "approvals.v1"]
HOST_ID = "codex-demo-bridge"
ANSWER = (
    "Done: the approved command wrote its file. Each piece of this answer "
    "reached the client as a native item/delta with the next cursor, and the "
    "bridge kept it in a Replay, so a cut native link loses none of it."
)
CHUNKS = 12
#: Processed agent-message deltas after which the native link is cut.
CUT_AFTER = 4
TIMEOUT = 45.0


class DemoError(Exception):
    """A precondition failed (binary missing, wrong version, no node)."""


def codex_binary() -> Path:
    """``$CODEX_BIN`` or the lockfile install, checked to be codex-cli 0.163.0."""
    try:
        binary = gen_codex_types.codex_binary()
        gen_codex_types.check_codex_version(binary)
    except gen_codex_types.ToolError as exc:
        raise DemoError(str(exc)) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise DemoError(f"cannot run the Codex binary: {exc}") from None
    return Path(binary).absolute()


def codex_path() -> str:
    """PATH for Codex: node's directory first (the npm launcher is a node
    script), then the system directories; nothing else of ours."""
    parts = ["/usr/bin", "/bin"]
    node = shutil.which("node")
    if node is not None:
        parts.insert(0, str(Path(node).parent))
    return os.pathsep.join(parts)


def _short(data: bytes | str, limit: int = 150) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text.rstrip("\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wire(data: bytes, limit: int = 110) -> str:
    """One native message as it crossed: its size, kind, ids, then its body."""
    tree = msgspec.json.decode(data)
    head = [f"[{len(data)} B] {tree.get('type')}"]
    for key in ("method", "id", "command_id", "stream_id", "cursor"):
        if key in tree:
            head.append(f"{key}={tree[key]}")
    body = next((k for k in ("params", "result", "error") if k in tree), None)
    if body is not None:
        head.append(f"{body}={_short(msgspec.json.encode(tree[body]), limit)}")
    return " ".join(head)


class Session:
    """A native session: a core ``Client`` (the host client) and the bridge between it and Codex.

    Native messages cross as encoded bytes (``Client.encode`` -> ``decode`` ->
    bridge; bridge -> ``encode`` -> ``Client.receive``); Codex lines cross the
    stdio link.  While the native link is cut, what the bridge sends the
    client is lost (counted), as on a dead socket.
    """

    def __init__(self, t: Transcript, link: CodexStdio) -> None:
        self.t = t
        self.link = link
        self.bridge = CodexBridge(host_id=HOST_ID)
        self.client = core.Client(
            capabilities=OFFER, required_capabilities=REQUIRED, host_id=HOST_ID
        )
        self.native_up = True
        self.answers: dict[str, core.ResponseReceived | core.ErrorReceived] = {}
        self.incoming: list[core.Request] = []
        self.ephemeral: list[core.Notification] = []
        self.lost: list[core.Message] = []
        self.native_in = 0  # messages delivered to the host client
        self.native_out = 0  # messages the host client sent
        self.codex_methods: list[str] = []  # Codex -> bridge ("" = a response)
        self.sent_codex: list[str] = []  # bridge -> Codex
        self.unmapped: list[str] = []
        # the client's processing of its stream
        self.order: list[int] = []
        self.stream_ids: list[str] = []
        self.texts: dict[str, str] = {}
        self.started: dict[str, core.Item] = {}
        self.completed: dict[str, core.Item] = {}
        self.turns_done: list[core.Turn] = []
        self.deltas = 0
        self.on_processed: Callable[[core.Notification], None] | None = None
        self.changed = asyncio.Event()
        self.quiet_codex = False
        self._pump: asyncio.Task[None] | None = None

    # -- the Codex side --------------------------------------------------------

    def start_pump(self) -> None:
        self._pump = asyncio.create_task(self._read_codex())

    async def stop_pump(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            try:
                await self._pump
            except (asyncio.CancelledError, ConnectionError):
                pass
            self._pump = None

    async def _read_codex(self) -> None:
        while (line := await self.link.readline()) is not None:
            tree = msgspec.json.decode(line)
            method = tree.get("method", "") if isinstance(tree, dict) else ""
            self.codex_methods.append(method)
            if not (method and "id" not in tree and self.quiet_codex):
                # (quiet: Codex notifications are shown as what they became natively)
                self.t.say("<=", f"codex {_short(line)}")
            await self.route(self.bridge.receive_codex(line))
        self.changed.set()

    async def route(self, outputs: list[Any]) -> None:
        for out in outputs:
            if isinstance(out, ToCodex):
                self.t.say("=>", f"codex {_short(out.data)}")
                self.sent_codex.append(msgspec.json.decode(out.data).get("method", ""))
                await self.link.send(out.data)
            elif isinstance(out, ToNative):
                data = core.encode(out.message)
                if not self.native_up:
                    self.lost.append(out.message)
                    self.t.say(
                        "xx", f"lost on the cut native link: {_describe(out.message)}"
                    )
                    continue
                self.receive_native(data)
            elif isinstance(out, CodexUnmapped):
                self.unmapped.append(out.method)
            elif isinstance(out, BridgeReport):
                self.t.say(
                    "..", f"bridge report {out.kind}: {out.method} ({out.message})"
                )
            elif isinstance(out, ApprovalResolved):
                self.t.say("..", f"approval {out.request_id} resolved by Codex")
        self.changed.set()

    # -- the native side ---------------------------------------------------------

    def receive_native(self, data: bytes) -> None:
        self.native_in += 1
        for effect in self.client.receive(data):
            if isinstance(effect, (core.ResponseReceived, core.ErrorReceived)):
                self.t.say("<-", f"native {_wire(data)}")
                self.answers[effect.request.id] = effect
            elif isinstance(effect, core.RequestReceived):
                self.t.say("<-", f"native {_wire(data, 160)}")
                self.incoming.append(effect.request)
            elif isinstance(effect, core.NotificationReceived):
                self.t.say("<-", f"native {effect.notification.method} (ephemeral)")
                self.ephemeral.append(effect.notification)
            else:
                self.t.say("<-", f"native client produced {_short(data)}")
        for note in self.client.drain():
            self.process(note)

    def process(self, n: core.Notification) -> None:
        """The client processes one sequenced notification, then acknowledges it."""
        assert isinstance(n.cursor, int) and isinstance(n.stream_id, str)
        self.order.append(n.cursor)
        if n.stream_id not in self.stream_ids:
            self.stream_ids.append(n.stream_id)
        p: Any = n.params
        if n.method == "item/delta":
            self.deltas += 1
            self.texts[p.item_id] = self.texts.get(p.item_id, "") + p.delta
            self.t.say("<-", f"[{n.cursor}] item/delta {p.delta!r}")
        elif n.method == "item/started":
            self.started[p.item.item_id] = p.item
            self.t.say("<-", f"[{n.cursor}] item/started {p.item.type}")
        elif n.method == "item/completed":
            self.completed[p.item.item_id] = p.item
            text = "" if p.item.text is core.UNSET else f" {_short(p.item.text, 60)!r}"
            self.t.say(
                "<-", f"[{n.cursor}] item/completed {p.item.type} {p.item.status}{text}"
            )
        elif n.method == "turn/completed":
            self.turns_done.append(p.turn)
            self.t.say(
                "<-", f"[{n.cursor}] turn/completed {p.turn.turn_id}: {p.turn.status}"
            )
        else:
            self.t.say("<-", f"[{n.cursor}] {n.method}")
        self.client.ack(n)
        if self.on_processed is not None:
            self.on_processed(n)

    async def send_native(self, outgoing: core.Outgoing) -> None:
        """Send what the client built (a request or a reply): its ``data``."""
        data = outgoing.data
        self.native_out += 1
        self.t.say("->", f"native {_wire(data)}")
        decoded = core.decode(data)
        if isinstance(decoded, core.Request):
            await self.route(self.bridge.native_request(decoded))
        else:
            assert isinstance(decoded, core.Response)
            await self.route(self.bridge.native_response(decoded))

    async def request(
        self, method: str, params: Any, *, command_id: str | None = None
    ) -> Any:
        """Send a native request; the result Struct, or raise its ProtocolError."""
        out = self.client.request(method, params, command_id=command_id)
        req = out.message
        assert isinstance(req, core.Request)
        await self.send_native(out)
        await self.until(lambda: req.id in self.answers)
        answer = self.answers.pop(req.id)
        if isinstance(answer, core.ErrorReceived):
            raise answer.error
        return answer.result

    async def until(self, done: Callable[[], bool], timeout: float = TIMEOUT) -> None:
        async def wait() -> None:
            while not done():
                self.changed.clear()
                if self._pump is not None and self._pump.done():
                    self._pump.result()
                    raise ConnectionError("codex app-server closed its output")
                await self.changed.wait()

        await asyncio.wait_for(wait(), timeout)

    def cut_native(self) -> None:
        """The native transport drops (no close handshake)."""
        self.native_up = False
        for effect in self.client.disconnect():
            if isinstance(effect, core.ErrorReceived):
                self.t.say(
                    "..",
                    f"native client: {effect.request.method} ended {effect.error.code}",
                )


def _describe(m: core.Message) -> str:
    if isinstance(m, core.Notification):
        cursor = "" if m.cursor is core.UNSET else f"[{m.cursor}] "
        extra = ""
        if isinstance(m.params, core.ItemDeltaParams):
            extra = f" {m.params.delta!r}"
        return f"{cursor}{m.method}{extra}"
    if isinstance(m, core.Request):
        return f"request {m.method}"
    return f"response {m.id}"


async def run_flow(t: Transcript, session: Session, marker: Path) -> None:
    bridge, client = session.bridge, session.client

    t.step("1. initialize: the bridge offers only what Codex can do")
    init = await session.request("connection/initialize", {})
    t.say(
        "..",
        f"version {init.version}, capabilities {sorted(init.capabilities)}, "
        f"connection {init.connection_id}, host {init.host_id}",
    )
    t.check(
        sorted(init.capabilities) == sorted(SUPPORTED_GROUPS) == sorted(REQUIRED),
        f"negotiated exactly {sorted(REQUIRED)} out of the {len(OFFER)} offered groups",
    )
    absent = sorted(set(OFFER) - set(init.capabilities))
    t.check(
        "project_events.v1" in absent and "cancellation.v1" in absent,
        f"not offered back: {absent} (Codex has no project events, no request cancellation)",
    )
    t.check(
        session.sent_codex[:2] == ["initialize", "initialized"]
        and session.codex_methods[:1] == [""],
        "Codex answered `initialize`; the bridge then sent the Codex-only `initialized` notification",
    )
    try:
        client.request(
            "project/event.status", {"event_id": "evt-1"}
        )  # never leaves the client
        refused = "sent"
    except core.ProtocolError as exc:
        refused = str(exc.code)
    t.say("..", f"project/event.status before sending: {refused} (local)")
    t.check(
        refused == "unsupported",
        "the client refuses to send a project event method the session did not negotiate",
    )

    t.step("2. thread/start and turn/start over the stdio link")
    thread = (
        await session.request("thread/start", {}, command_id="cmd-thread-1")
    ).thread
    t.say("..", f"thread {thread.thread_id} ({thread.status})")
    session.quiet_codex = True
    t.say(
        "..",
        "(from here on Codex notifications are shown as what they became natively)",
    )
    turn = (
        await session.request(
            "turn/start",
            {
                "thread_id": thread.thread_id,
                "input": [{"type": "text", "text": "write the file, then explain"}],
            },
            command_id="cmd-turn-1",
        )
    ).turn
    t.say("..", f"turn {turn.turn_id} ({turn.status})")
    t.check(
        turn.status == "in_progress", "turn/start answered: the turn is in progress"
    )

    t.step("3. an approval: Codex asks, the client decides")
    await session.until(lambda: bool(session.incoming))
    stream_id = session.stream_ids[0] if session.stream_ids else None
    t.check(
        len(session.stream_ids) == 1
        and bridge.stream_id(thread.thread_id) == stream_id
        and str(stream_id).startswith("codex-"),
        f"the turn's events are sequenced on the thread's native stream {stream_id}, "
        f"cursors {session.order[0] if session.order else '-'}..{session.order[-1] if session.order else '-'}",
    )
    ask = session.incoming.pop(0)
    params = ask.params
    assert isinstance(params, core.ApprovalRequestParams)
    t.check(
        ask.method == "approval/request"
        and params.action.kind == "command_execution"
        and str(marker) in params.action.description,
        f"Codex's escalated exec_command arrived as native approval/request "
        f"{params.approval_id} ({params.action.kind})",
    )
    details: Any = params.action.details
    t.check(
        isinstance(details, dict)
        and details.get("codex_method") == "item/commandExecution/requestApproval",
        "its details name the Codex request and carry Codex's params as sent",
    )
    reason = "" if params.reason is core.UNSET else f"; reason {params.reason!r}"
    t.say("..", f"action {params.action.description!r}{reason}")
    t.check(not marker.exists(), "nothing ran before the client answered")
    reply = client.reply(
        ask,
        core.ApprovalRequestResult(
            approval_id=params.approval_id, action=params.action, decision="approve"
        ),
    )
    await session.send_native(reply)
    await session.until(
        lambda: any(i.type == "commandExecution" for i in session.completed.values())
    )
    command = next(
        i for i in session.completed.values() if i.type == "commandExecution"
    )
    t.check(command.status == "completed", "the approved command ran to completion")
    written = marker.read_text() if marker.exists() else None
    t.say("..", f"on disk: {marker.name} = {written!r}")
    t.check(
        written == "approved by the client\n",
        "the command's effect is on disk (Codex got `accept`)",
    )

    t.step(
        "4. agent-message deltas stream as native item/delta; the native link is cut"
    )
    checkpoint_box: list[int] = []

    def cut_when_enough(n: core.Notification) -> None:
        if (
            n.method == "item/delta"
            and session.deltas == CUT_AFTER
            and session.native_up
        ):
            session.cut_native()
            checkpoint_box.append(client.checkpoints()[str(n.stream_id)])
            t.say(
                "xx",
                f"native link cut after {CUT_AFTER} deltas, checkpoint {checkpoint_box[0]} "
                "(Codex keeps streaming into the bridge)",
            )

    session.on_processed = cut_when_enough
    await session.until(lambda: bool(checkpoint_box))
    checkpoint = checkpoint_box[0]
    t.check(
        session.order == list(range(1, len(session.order) + 1)),
        f"cursors 1..{checkpoint} arrived contiguous and were processed in order",
    )
    await session.until(lambda: "turn/completed" in session.codex_methods)
    t.say(
        "..",
        f"Codex finished the turn while the client was away; "
        f"{len(session.lost)} native messages were lost on the cut link",
    )
    t.check(
        len(session.lost) >= 2 and not session.turns_done,
        "the rest of the stream and turn/completed never reached the client live",
    )

    t.step("5. reconnect, initialize again, resume from the checkpoint")
    session.on_processed = None
    client.reconnect()
    await session.route(bridge.native_connected())
    session.native_up = True
    sent_before = len(session.sent_codex)
    init2 = await session.request("connection/initialize", {})
    t.say(
        "..",
        f"connection {init2.connection_id} (was {init.connection_id}), host {init2.host_id}",
    )
    t.check(
        init2.host_id == init.host_id
        and init2.connection_id != init.connection_id
        and len(session.sent_codex) == sent_before,
        "same host, new connection; no Codex call was needed (the Codex link stayed up)",
    )
    read = await session.request("thread/read", {"thread_id": thread.thread_id})
    status = next((x.status for x in read.turns if x.turn_id == turn.turn_id), None)
    t.say("..", f"thread/read: turn {turn.turn_id} is {status} on Codex")
    t.check(
        status == "completed",
        "a thread/read over the new connection confirms Codex finished the turn",
    )
    mark = len(session.order)
    replayed = 0
    cursor = client.checkpoints().get(str(stream_id), 0)
    t.check(
        cursor == checkpoint,
        f"the client resumes from its processed checkpoint {cursor}",
    )
    while True:
        page = await session.request(
            "stream/resume", {"stream_id": stream_id, "cursor": cursor}
        )
        replayed += client.receive_replay(page)
        for note in client.drain():
            session.process(note)
        if not page.has_more:
            break
        cursor = page.cursor
    resumed = session.order[mark:]
    t.say(
        "..",
        f"{replayed} events replayed: cursors "
        f"{resumed[0] if resumed else '-'}..{resumed[-1] if resumed else '-'}",
    )
    t.check(
        resumed == list(range(checkpoint + 1, checkpoint + 1 + len(resumed)))
        and len(resumed) == replayed,
        f"the replay starts at checkpoint + 1 ({checkpoint + 1}) and is contiguous",
    )
    lost_cursors = [m.cursor for m in session.lost if isinstance(m, core.Notification)]
    t.check(
        set(lost_cursors) <= set(resumed),
        "every event lost on the cut link came back in the replay",
    )

    t.step("6. checks")
    t.check(
        session.order == list(range(1, len(session.order) + 1)),
        f"the client processed cursors 1..{len(session.order)}, each exactly once: nothing lost or duplicated",
    )
    t.check(
        client.checkpoints()[str(stream_id)] == session.order[-1],
        "checkpoint = last processed cursor",
    )
    messages = [i for i in session.completed.values() if i.type == "agentMessage"]
    t.check(
        len(messages) == 1
        and session.texts.get(messages[0].item_id) == messages[0].text == ANSWER,
        f"the {session.deltas} deltas add up to the completed agent message, exactly the model's text",
    )
    t.check(
        session.deltas == CHUNKS,
        f"all {CHUNKS} streamed pieces arrived (live or replayed)",
    )
    t.check(
        bool(session.turns_done)
        and session.turns_done[0].turn_id == turn.turn_id
        and session.turns_done[0].status == "completed",
        "the turn completed",
    )
    t.check(not client.uncertain, "no command left uncertain")
    if session.unmapped:
        counts = dict(sorted(bridge.unmapped_notifications.items()))
        t.say(
            "..",
            f"Codex notifications without a native translation (counted): {counts}",
        )
    t.say(
        "..",
        f"wire totals: {len(session.sent_codex)} lines to Codex, {len(session.codex_methods)} from Codex; "
        f"{session.native_out} native messages to the bridge, {session.native_in} to the client, "
        f"{len(session.lost)} lost on the cut link",
    )


async def run(t: Transcript, binary: Path, tmp: Path) -> None:
    marker = tmp / "work" / "approved.txt"
    (tmp / "work").mkdir()
    command = f"echo approved by the client > {marker}"
    model = scripted.ScriptedModel(
        [scripted.exec_call(command), scripted.text_reply(ANSWER, chunks=CHUNKS)]
    )
    await model.start()
    home = tmp / "home"
    scripted.write_codex_home(home, model.port, approval_policy="on-request")
    print(
        f"scripted Responses-API model on http://127.0.0.1:{model.port}/v1 (loopback)"
    )
    link = await CodexStdio.start(
        binary=binary,
        codex_home=home,
        cwd=tmp / "work",
        env={"PATH": codex_path(), "HOME": str(home)},
    )
    print(
        f"codex app-server over stdio (pid {link.pid}), CODEX_HOME in a temporary directory"
    )
    session = Session(t, link)
    session.start_pump()
    try:
        await asyncio.wait_for(run_flow(t, session, marker), 90)
        t.check(
            len(model.requests) == 2,
            f"the model was asked {len(model.requests)} times (the call, then the answer after the command output)",
        )
    finally:
        await session.stop_pump()
        await link.close()
        await model.close()


async def main() -> int:
    t = Transcript()
    began = time.monotonic()
    try:
        binary = codex_binary()
    except DemoError as exc:
        print(f"demo --codex: {exc}", file=sys.stderr)
        return 2
    print(f"Codex: {binary} (codex-cli {gen_codex_types.CODEX_VERSION})")
    with tempfile.TemporaryDirectory(prefix="samgita-demo-codex-") as tmp:
        try:
            await run(t, binary, Path(tmp))
        except Exception as exc:  # noqa: BLE001 - any failure is a failed check in the transcript
            t.check(False, f"flow raised {type(exc).__name__}: {exc}")
    took = time.monotonic() - began
    return t.finish(" against the real Codex", f" ({took:.1f} s)")
