"""Interop with an independent WebSocket implementation (Node ``ws``, pinned in the lockfile).

A Node ``ws`` client runs a session against our listener (and our fake
Agent); our client runs against a Node ``ws`` server.  A missing ``node`` or
``ws`` fails these tests, never skips them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core
from peers import node_binary, require_peer, run_node
from samgita_protocol_websocket import HandshakeRejected, connect, serve
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

HERE = Path(__file__).resolve().parent
TOKEN = "interop-token-3f9a"
GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def ignore_requests(request: Any) -> None:
    """``on_request`` for sessions that leave the Agent's requests (approvals) unanswered."""


def test_node_ws_client_against_our_listener() -> None:
    require_peer("ws")

    async def main() -> subprocess.CompletedProcess[str]:
        state = AgentState(message_deltas=5, delta_interval=0.0)
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            return await asyncio.to_thread(
                run_node,
                HERE / "ws_client_session.mjs",
                listener.url,
                TOKEN,
                timeout=60,
            )

    proc = asyncio.run(main())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["refused"] == 401
    assert out["refusedWrong"] == 401
    assert out["initialize"]["version"] == "1.0"
    assert sorted(out["initialize"]["capabilities"]) == sorted(GROUPS)
    assert out["event"]["acceptance"] == "received"
    assert out["approvals"] == 1
    assert out["turn"] == "completed"
    assert out["deltas"] == sorted(out["deltas"]) and len(out["deltas"]) == 10
    assert out["closeCode"] == 1003


class NodeServer:
    def __init__(self, mode: str = "protocol") -> None:
        require_peer("ws")
        self.proc = subprocess.Popen(
            [node_binary(), str(HERE / "ws_server_peer.mjs"), TOKEN, mode],
            cwd=HERE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            self.proc.kill()
            pytest.fail("the Node ws server did not start")
        self.port = int(line)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def node_server() -> Any:
    server = NodeServer()
    yield server
    server.close()


def test_our_client_against_node_ws_server(node_server: NodeServer) -> None:
    url = f"ws://127.0.0.1:{node_server.port}/app-server"

    async def main() -> None:
        async with connect(
            url, token=TOKEN, capabilities=GROUPS, on_request=ignore_requests
        ) as s:
            assert s.initialize_result.host_id == "node-host"
            assert "approvals.v1" not in s.initialize_result.capabilities
            event = core.Event(
                event_id="e1",
                delivery_attempt_id="a1",
                created_at="2026-12-03T10:00:00Z",
                correlation_id="c1",
                event_type="t",
                payload={},
            )
            r = await s.request(
                "project/event.receive", {"event": event}, command_id="cmd-1"
            )
            assert r.acceptance == "received"
            n = await s.next_notification(timeout=5)
            assert (n.method, n.stream_id, n.cursor) == ("thread/closed", "s1", 1)
            s.ack(n)
            assert s.checkpoints() == {"s1": 1}
            st = await s.request("project/event.status", {"event_id": "e1"})
            assert st.processing_status == "completed"
            with pytest.raises(core.ProtocolError) as err:
                await s.request("approval/request", {})
            assert (
                err.value.code == core.ErrorCode.UNSUPPORTED
            )  # not negotiated: refused before sending

    asyncio.run(main())


def test_our_client_refuses_redirect_and_wrong_token(node_server: NodeServer) -> None:
    async def main() -> None:
        with pytest.raises(HandshakeRejected) as err:
            async with connect(
                f"ws://127.0.0.1:{node_server.port}/redirect",
                token=TOKEN,
                capabilities=GROUPS,
                on_request=ignore_requests,
            ):
                pass
        assert err.value.status == 302
        with pytest.raises(HandshakeRejected) as err:
            async with connect(
                f"ws://127.0.0.1:{node_server.port}/app-server",
                token="wrong",
                capabilities=GROUPS,
                on_request=ignore_requests,
            ):
                pass
        assert err.value.status == 401

    asyncio.run(main())
