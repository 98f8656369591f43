"""A client (a `Client`) and an Agent (a `Server` around your own `Handler`)
in one process, the bytes carried by hand: no socket, no thread, no loop.

The Agent implements two capability groups fully, one method per operation
(sessions.v1: threads and turns; streaming.v1: `stream/resume`). The run
shows `connection/initialize`; a mutation with a `command_id` delivered
twice and executed once (the Agent answers the duplicate from its receipts,
the Client drops the identical second response); a turn whose notifications
carry a `stream_id` and `cursor` kept in the Agent's `Replay`, drained and
acknowledged by the client; typed errors (`ProtocolError`, a stable `code`)
for malformed bytes and for an unknown thread.

Run it from a checkout: python examples/in_memory.py
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import samgita_protocol as sp

GROUPS = ["sessions.v1", "streaming.v1"]


def not_found(what: str, **data: str) -> sp.ProtocolError:
    """A typed error for the peer, sent as built (keep secrets out of it)."""
    return sp.ProtocolError(sp.ErrorCode.NOT_FOUND, f"unknown {what}", data=data)


class Agent(sp.Handler):
    """Threads and turns in memory. A turn echoes its input as one message
    item, streamed word by word, and completes before `turn/start` returns."""

    def __init__(self) -> None:
        self.threads: dict[str, sp.Thread] = {}
        self.turns: dict[str, sp.Turn] = {}
        self.replay = sp.Replay("agent-events")  # served by stream/resume
        # command_id -> (request, result); a real Agent keeps its receipts in its
        # database, written in the same transaction as the effect
        self.receipts: dict[str, tuple[Any, Any]] = {}
        self.executed: Counter[str] = Counter()

    def handle_request(
        self, method: str, params: Any, context: sp.RequestContext
    ) -> Any:
        """Run each mutation once per `command_id`: idempotency is the Agent's
        job (the Server hands an identical request to the handler again)."""
        command_id = context.command_id
        if command_id is None:  # a read
            return super().handle_request(method, params, context)
        if command_id in self.receipts:
            request, answer = self.receipts[command_id]
            if request != (method, params):
                raise sp.ProtocolError(sp.ErrorCode.CONFLICT, "command_id reused")
            return answer  # a duplicate: answered from the receipts
        answer = super().handle_request(method, params, context)  # the operation
        self.receipts[command_id] = ((method, params), answer)
        self.executed[command_id] += 1
        return answer

    # -- sessions.v1 ------------------------------------------------------------

    def thread_start(
        self, params: sp.ThreadStartParams, context: sp.RequestContext
    ) -> sp.ThreadStartResult:
        thread_id = f"thread-{len(self.threads) + 1}"
        created_at = "2026-01-01T00:00:00Z"
        thread = sp.Thread(thread_id=thread_id, status="idle", created_at=created_at)
        self.threads[thread_id] = thread
        return sp.ThreadStartResult(thread=thread)

    def thread_read(
        self, params: sp.ThreadReadParams, context: sp.RequestContext
    ) -> sp.ThreadReadResult:
        thread = self._thread(params.thread_id)
        turns = [t for t in self.turns.values() if t.thread_id == thread.thread_id]
        return sp.ThreadReadResult(thread=thread, turns=turns[-256:])

    def thread_resume(
        self, params: sp.ThreadResumeParams, context: sp.RequestContext
    ) -> sp.ThreadResumeResult:
        return sp.ThreadResumeResult(thread=self._thread(params.thread_id))

    def turn_start(
        self, params: sp.TurnStartParams, context: sp.RequestContext
    ) -> sp.TurnStartResult:
        thread_id = self._thread(params.thread_id).thread_id
        turn_id = f"turn-{len(self.turns) + 1}"
        turn = sp.Turn(turn_id=turn_id, thread_id=thread_id, status="in_progress")
        self._emit(context, "turn/started", sp.TurnStartedParams(turn=turn))
        ids = {"thread_id": thread_id, "turn_id": turn_id}
        text = " ".join(item.text for item in params.input)
        item = sp.Item(item_id=f"{turn_id}-echo", type="message")
        self._emit(context, "item/started", sp.ItemStartedParams(**ids, item=item))
        for word in text.split(" "):  # the answer streams word by word
            delta = sp.ItemDeltaParams(**ids, item_id=item.item_id, delta=word + " ")
            self._emit(context, "item/delta", delta)
        item = msgspec.structs.replace(item, text=text, status="completed")
        self._emit(context, "item/completed", sp.ItemCompletedParams(**ids, item=item))
        turn = msgspec.structs.replace(turn, status="completed")
        self.turns[turn_id] = turn
        self._emit(context, "turn/completed", sp.TurnCompletedParams(turn=turn))
        return sp.TurnStartResult(turn=turn)

    def turn_steer(
        self, params: sp.TurnSteerParams, context: sp.RequestContext
    ) -> sp.TurnSteerResult:
        self._turn(params.thread_id, params.turn_id)  # known, but every turn ended
        raise not_found("in-progress turn", turn_id=params.turn_id)

    def turn_interrupt(
        self, params: sp.TurnInterruptParams, context: sp.RequestContext
    ) -> sp.TurnInterruptResult:
        turn = self._turn(params.thread_id, params.turn_id)
        return sp.TurnInterruptResult(
            thread_id=turn.thread_id,
            turn_id=turn.turn_id,
            interrupt_status="already_finished",
        )

    # -- streaming.v1 -----------------------------------------------------------

    def stream_resume(
        self, params: sp.StreamResumeParams, context: sp.RequestContext
    ) -> sp.StreamResumeResult:
        if params.stream_id != self.replay.stream_id:
            raise not_found("stream", stream_id=params.stream_id)
        return self.replay.page(params.cursor)  # the events after the cursor

    # -- helpers ----------------------------------------------------------------

    def _emit(self, context: sp.RequestContext, method: str, params: Any) -> None:
        """Queue a notification (it goes out after the response) at the
        stream's next cursor, and keep it in the Replay."""
        stream_id, cursor = self.replay.stream_id, self.replay.last_cursor + 1
        note = context.notify(method, params, stream_id=stream_id, cursor=cursor)
        self.replay.append(note)

    def _thread(self, thread_id: str) -> sp.Thread:
        if thread_id not in self.threads:
            raise not_found("thread", thread_id=thread_id)
        return self.threads[thread_id]

    def _turn(self, thread_id: str, turn_id: str) -> sp.Turn:
        turn = self.turns.get(turn_id)
        if turn is None or turn.thread_id != thread_id:
            raise not_found("turn", turn_id=turn_id)
        return turn


def main() -> None:
    agent = Agent()
    server = sp.Server(agent, capabilities=GROUPS, host_id="agent-1")
    client = sp.Client(capabilities=GROUPS, host_id="agent-1")
    print("the Agent implements:", ", ".join(sorted(agent.methods)))

    def send(data: bytes) -> list[sp.Effect]:
        """Your transport: one message's bytes to the Agent, its answers back."""
        effects: list[sp.Effect] = []
        for outgoing in server.receive(data):
            effects += client.receive(outgoing.data)
        return effects

    init = result(send(client.request("connection/initialize", {}).data))
    print("initialized:", ", ".join(init.capabilities), "with host_id", init.host_id)

    start = client.request("thread/start", {}, command_id="cmd-1")
    thread = result(send(start.data)).thread
    print(f"thread/start cmd-1 -> {thread.thread_id}")
    assert send(start.data) == []  # the network delivered the same bytes again
    runs = agent.executed["cmd-1"]
    print(f"duplicate of cmd-1 answered from the Agent's receipts (ran {runs} time)")

    text = [{"type": "text", "text": "hello in memory"}]
    params = {"thread_id": thread.thread_id, "input": text}
    turn = result(send(client.request("turn/start", params, command_id="cmd-2").data))
    print(f"turn/start cmd-2 -> {turn.turn.turn_id} ({turn.turn.status})")
    for note in client.drain():  # the sequenced notifications, in cursor order
        print(f"  [{note.stream_id} #{note.cursor}] {note.method}")
        client.ack(note)  # processed: the checkpoint moves
    print(
        f"checkpoints {client.checkpoints()}; {len(agent.replay)} events in the Replay"
    )

    try:
        server.receive(b'{"type": "request", "id": ')
    except sp.ProtocolError as error:
        print(f"malformed bytes refused: {error.code} (origin {error.origin})")
    [missing] = send(client.request("thread/read", {"thread_id": "thread-9"}).data)
    assert isinstance(missing, sp.ErrorReceived)
    print(f"thread/read thread-9 -> {missing.error.code}: {missing.error.message}")


def result(effects: list[sp.Effect]) -> Any:
    """The result of the one `ResponseReceived` a request produced."""
    [effect] = effects
    assert isinstance(effect, sp.ResponseReceived), effect
    return effect.result


if __name__ == "__main__":
    main()
