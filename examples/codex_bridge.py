"""The Codex bridge fed a recorded `codex app-server` 0.163.0 transcript:
no Codex binary, no network, no model.

`CodexBridge` is sans-IO: native requests in (`native_request`), Codex JSON
lines in (`receive_codex`), and what to send out: `ToCodex` lines for Codex,
`ToNative` messages (with their validated bytes) for the native peer,
reports such as `CodexUnmapped`. Here the native peer is a core `Client`
asking for a thread and a turn, and the Codex side is the recording the
bridge's own tests replay (packages/samgita-protocol-codex/tests/
recordings/turn.jsonl, made by tools/record_codex.py). The run prints each
native message the bridge produces, then the turn's stream as the Client
drained it.

Run it from a checkout: python examples/codex_bridge.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import samgita_protocol as sp
from samgita_protocol_codex import CodexBridge, CodexUnmapped, Output, ToCodex, ToNative

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "packages/samgita-protocol-codex/tests/recordings/turn.jsonl"
GROUPS = ["sessions.v1", "streaming.v1"]


def main() -> None:
    bridge = CodexBridge(host_id="codex-example", instance_id="example")
    client = sp.Client(capabilities=GROUPS, host_id="codex-example")
    results: dict[str, Any] = {}  # native method -> its result

    def route(outputs: list[Output]) -> None:
        """Send what the bridge produced: here Codex is a recording, so lines
        for Codex are only shown; native messages go to the Client."""
        for out in outputs:
            if isinstance(out, ToCodex):
                print(f"  to Codex: {out.data.decode()[:72].rstrip()}")
            elif isinstance(out, ToNative):
                print(f"  native:   {describe(out.message)}")
                for effect in client.receive(out.data):  # sequenced: buffered
                    if isinstance(effect, sp.ResponseReceived):
                        results[effect.request.method] = effect.result
            elif isinstance(out, CodexUnmapped):
                print(f"  (no native form: Codex {out.kind} {out.method})")

    def ask(method: str, params: dict[str, Any], command_id: str | None = None) -> None:
        """The native client asks for `method`; the bridge takes the request
        decoded from its bytes, as the far end of a transport would."""
        print(f"native request {method}")
        request = sp.decode(client.request(method, params, command_id=command_id).data)
        assert isinstance(request, sp.Request)
        route(bridge.native_request(request))

    for line in RECORDING.read_text("utf-8").splitlines():
        entry = json.loads(line)
        sent, msg = entry["dir"] == "send", entry["msg"]
        if sent and msg.get("method") == "initialize":
            ask("connection/initialize", {})
        elif sent and msg.get("method") == "thread/start":
            ask("thread/start", {}, command_id="cmd-1")
        elif sent and msg.get("method") == "turn/start":
            thread_id = results["thread/start"].thread.thread_id
            hello = [{"type": "text", "text": "hi"}]
            params = {"thread_id": thread_id, "input": hello}
            ask("turn/start", params, command_id="cmd-2")
        elif not sent:  # a line Codex wrote: feed it to the bridge as bytes
            print("Codex:", msg.get("method") or f"result of request {msg['id']}")
            route(bridge.receive_codex(json.dumps(msg).encode()))

    notes = client.drain()  # the sequenced notifications, in cursor order
    for note in notes:
        client.ack(note)
    text = "".join(n.params.delta for n in notes if n.method == "item/delta")
    print(f"stream {notes[0].stream_id}: {len(notes)} events processed by the Client")
    print(f"the deltas add up to {text!r}")


def describe(message: sp.Message) -> str:
    """One line for a native message: its kind, stream position and gist."""
    if isinstance(message, sp.Response):
        return f"response {message.id}: {type(message.result).__name__}"
    assert isinstance(message, sp.Notification)
    position = f" #{message.cursor}" if isinstance(message.cursor, int) else ""
    match message.params:
        case sp.ItemDeltaParams(delta=delta):
            gist = repr(delta)
        case sp.ItemStartedParams(item=item) | sp.ItemCompletedParams(item=item):
            gist = item.type
        case sp.TurnStartedParams(turn=turn) | sp.TurnCompletedParams(turn=turn):
            gist = turn.status
        case _:
            gist = ""
    return f"{message.method}{position} {gist}".rstrip()


if __name__ == "__main__":
    main()
