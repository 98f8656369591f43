"""An authenticated WebSocket Agent and a client, both in one asyncio
process on 127.0.0.1 (an ephemeral port).

The Agent side is `serve(...)`: a listener that checks a bearer token
before the upgrade and builds a core `Server` around a `Handler` for each
connection (here the package's `FakeAgent`, which streams each turn and asks
the client to approve a tool call). The client side is `connect(...)`: one
request, an `approval/request` from the Agent answered by the client (the
library never approves anything itself), the connection cut mid-turn, a
reconnect, and the stream resumed from the client's checkpoint, so every
event is processed exactly once.

The token comes from $SAMGITA_TOKEN, or a random one; it is never printed.
Run it from a checkout: python examples/websocket_session.py
"""

from __future__ import annotations

import asyncio
import os
import secrets

import samgita_protocol as sp
from samgita_protocol_websocket import HandshakeRejected, Session, connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

GROUPS = ["sessions.v1", "streaming.v1", "approvals.v1"]


class ClientApp:
    """The client's side of the session: it answers the Agent's approvals and
    processes (then acknowledges) every notification."""

    session: Session  # set once connected

    def __init__(self) -> None:
        self.cursors: list[int] = []  # every stream cursor processed, in order
        self.completed: list[str] = []  # item types, then "turn"

    async def approve(self, request: sp.Request) -> None:
        """`on_request`: the Agent asks, and only this code decides."""
        ask = request.params
        assert isinstance(ask, sp.ApprovalRequestParams)
        print(f"<- approval/request {ask.approval_id}: {ask.action.description}")
        answer = sp.ApprovalRequestResult(  # bound to this approval_id and action
            approval_id=ask.approval_id, action=ask.action, decision="approve"
        )
        await self.session.reply(request, answer)
        print("-> approve")

    async def next(self) -> None:
        self.handle(await self.session.next_notification(timeout=10))

    def handle(self, note: sp.Notification) -> None:
        """Process one notification, then acknowledge it if it is sequenced."""
        if note.method == "item/completed":
            self.completed.append(note.params.item.type)
        elif note.method == "turn/completed":
            self.completed.append("turn")
        if not isinstance(note.cursor, int):  # ephemeral: nothing to acknowledge
            print(f"  [-] {note.method}")
            return
        print(f"  [{note.cursor}] {note.method}")
        self.cursors.append(note.cursor)
        self.session.ack(note)  # processed: now the checkpoint may advance

    async def run(self) -> None:
        session = self.session
        print("initialized:", ", ".join(session.initialize_result.capabilities))
        thread = (await session.request("thread/start", {}, command_id="c1")).thread
        text = [{"type": "text", "text": "write the notes"}]
        params = {"thread_id": thread.thread_id, "input": text}
        turn = (await session.request("turn/start", params, command_id="c2")).turn
        print(f"turn/start -> {turn.turn_id}, streamed on stream {turn.turn_id}")
        while "tool_call" not in self.completed:  # until the approved call ran
            await self.next()

        session.abort()  # cut TCP mid-turn, as a network failure would
        await session.wait_disconnected()
        for note in session.take_notifications():  # what arrived before the cut
            self.handle(note)
        checkpoint = session.checkpoints()[turn.turn_id]
        print(f"connection cut; checkpoint {checkpoint}")
        again = await session.reconnect()  # authenticates and initializes again
        print(f"reconnected as {again.connection_id}")
        while True:  # meanwhile the Agent streams on, to nobody, until done
            read = await session.request("thread/read", {"thread_id": thread.thread_id})
            if read.turns[-1].status != "in_progress":
                break
            await asyncio.sleep(0.05)
        missed = await session.resume(turn.turn_id)  # pages from the checkpoint
        while "turn" not in self.completed:
            await self.next()
        print(f"resume delivered the {missed} missed events after cursor {checkpoint}")
        assert missed > 0 and self.cursors == list(range(1, len(self.cursors) + 1))
        print(f"every cursor 1..{self.cursors[-1]} processed exactly once, in order")


async def main() -> None:
    token = os.environ.get("SAMGITA_TOKEN") or secrets.token_urlsafe(32)
    state = AgentState(message_deltas=4, delta_interval=0.1)
    agent = FakeAgent.factory(state)  # a Handler for each accepted connection
    async with serve(agent, host="127.0.0.1", token=token) as listener:
        print(f"Agent listening at {listener.url} (bearer token required)")
        try:
            async with connect(
                listener.url, token="wrong", capabilities=["sessions.v1"]
            ):
                raise AssertionError("a wrong token was accepted")
        except HandshakeRejected as refused:
            print(f"a wrong token is refused before the upgrade: HTTP {refused.status}")

        client = ClientApp()
        async with connect(
            listener.url, token=token, capabilities=GROUPS, on_request=client.approve
        ) as session:
            client.session = session
            await client.run()


if __name__ == "__main__":
    asyncio.run(main())
