"""Listener and client policy that the raw-socket suite does not reach: argument checks, TLS,
redirects, custom authenticators, backpressure, disconnect and reconnect."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import pytest
import samgita_protocol as core

from samgita_protocol_websocket import (
    BearerTokenAuthenticator,
    HandshakeRejected,
    HandshakeRequest,
    connect,
    serve,
)
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

from conftest import TOKEN

GROUPS = [
    "project_events.v1",
    "sessions.v1",
    "streaming.v1",
    "approvals.v1",
    "cancellation.v1",
]


def ignore_requests(request: Any) -> None:
    """``on_request`` for sessions that leave the Agent's requests (approvals) unanswered."""


def factory() -> Any:
    return FakeAgent.factory(AgentState(message_deltas=2, delta_interval=0.0))


# --- argument validation (nothing is bound or connected) ------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_non_loopback_bind_needs_tls_or_explicit_opt_out(host: str) -> None:
    with pytest.raises(ValueError, match="allow_insecure_non_loopback"):
        serve(factory(), host=host, token=TOKEN)
    serve(
        factory(), host=host, token=TOKEN, allow_insecure_non_loopback=True
    )  # constructs, binds nothing


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.3.4.5"])
def test_loopback_plain_ws_allowed(host: str) -> None:
    serve(factory(), host=host, token=TOKEN)


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"port": "80"}, TypeError, "port"),
        ({"port": 70000}, ValueError, "port"),
        ({"max_headers": 129}, ValueError, "max_headers"),
        ({"max_header_line": 9000}, ValueError, "max_header_line"),
        ({"max_message_bytes": 0}, ValueError, "max_message_bytes"),
        ({"handshake_timeout": 0}, ValueError, "handshake_timeout"),
        ({"handshake_timeout": float("inf")}, ValueError, "handshake_timeout"),
        ({"ping_interval": "20"}, TypeError, "ping_interval"),
        ({"max_connections": True}, TypeError, "max_connections"),
        ({"allowed_origins": "https://x"}, TypeError, "allowed_origins"),
        ({"ssl": object()}, TypeError, "ssl"),
        ({"send_timeout": -1}, ValueError, "send_timeout"),
        ({"allow_insecure_non_loopback": 1}, TypeError, "allow_insecure_non_loopback"),
    ],
)
def test_serve_arguments_checked_at_construction(
    kwargs: dict[str, Any], exc: type[Exception], name: str
) -> None:
    with pytest.raises(exc, match=name):
        serve(factory(), host="127.0.0.1", token=TOKEN, **kwargs)


def test_exactly_one_of_token_and_authenticator() -> None:
    with pytest.raises(ValueError, match="token and authenticator"):
        serve(factory(), host="127.0.0.1")
    with pytest.raises(ValueError, match="token and authenticator"):
        serve(factory(), host="127.0.0.1", token=TOKEN, authenticator=lambda r: "x")


@pytest.mark.parametrize("token", ["", " padded", "tab\there", "naïve"])
def test_bad_token_refused_without_echoing_it(token: str) -> None:
    with pytest.raises(ValueError) as err:
        serve(factory(), host="127.0.0.1", token=token)
    assert token.strip() == "" or token not in str(err.value)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        (f"ws://user:{TOKEN}@127.0.0.1:1/app-server", "credentials"),
        ("ws://user@127.0.0.1:1/app-server", "credentials"),
        (f"ws://127.0.0.1:1/app-server?token={TOKEN}", "query"),
        ("ws://127.0.0.1:1/app-server?", "query"),
        ("ws://127.0.0.1:1/app-server#x", "fragment"),
        ("http://127.0.0.1:1/app-server", "scheme"),
        ("ws://192.0.2.1:1/app-server", "loopback"),
        ("ws://example.com/app-server", "loopback"),
    ],
)
def test_client_url_refused(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        connect(url, token=TOKEN, capabilities=GROUPS, on_request=ignore_requests)
    assert TOKEN not in str(err.value)


def test_client_non_loopback_ws_needs_explicit_opt_out_and_wss_verifies_by_default() -> (
    None
):
    connect(
        "ws://192.0.2.1:1/app-server",
        token=TOKEN,
        capabilities=GROUPS,
        allow_insecure_non_loopback=True,
        on_request=ignore_requests,
    )
    c = connect(
        "wss://192.0.2.1:1/app-server",
        token=TOKEN,
        capabilities=GROUPS,
        on_request=ignore_requests,
    )
    tls = c._settings.ssl
    assert tls is not None
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname
    with pytest.raises(ValueError, match="ssl"):
        connect(
            "ws://127.0.0.1:1/app-server",
            token=TOKEN,
            capabilities=GROUPS,
            ssl=ssl.create_default_context(),
            on_request=ignore_requests,
        )
    assert TOKEN not in repr(c)


def test_bearer_authenticator_and_request_view_hide_credentials() -> None:
    auth = BearerTokenAuthenticator(TOKEN)
    req = HandshakeRequest(
        path="/app-server",
        remote_address=None,
        origin=None,
        headers={},
        authorization=(f"Bearer {TOKEN}",),
    )
    assert auth(req) == "bearer"
    assert TOKEN not in repr(auth) and TOKEN not in repr(req)
    wrong = HandshakeRequest(
        path="/",
        remote_address=None,
        origin=None,
        headers={},
        authorization=("Bearer x",),
    )
    assert auth(wrong) is None


# --- running listeners -----------------------------------------------------------------------


async def _refused(url: str, **kwargs: Any) -> int:
    with pytest.raises(HandshakeRejected) as err:
        async with connect(
            url, capabilities=GROUPS, **kwargs, on_request=ignore_requests
        ):
            pass
    return err.value.status


def test_custom_async_authenticator_principal_reaches_connection_info() -> None:
    seen: list[Any] = []

    async def authenticator(request: HandshakeRequest) -> object | None:
        await asyncio.sleep(0)
        if request.authorization == ("Bearer alice-key",):
            return {"user": "alice"}
        if request.authorization == ("Bearer boom",):
            raise RuntimeError("backend down")
        return None

    def make(info: Any) -> Any:
        seen.append(info)
        return factory()(info)

    async def main() -> None:
        async with serve(
            make, host="127.0.0.1", authenticator=authenticator
        ) as listener:
            async with connect(
                listener.url,
                token="alice-key",
                capabilities=GROUPS,
                on_request=ignore_requests,
            ) as s:
                assert s.initialize_result.host_id == listener.host_id
            assert await _refused(listener.url, token="bob-key") == 401
            assert await _refused(listener.url, token="boom") == 401

    asyncio.run(main())
    assert [i.principal for i in seen] == [{"user": "alice"}]
    assert "authorization" not in seen[0].headers


def test_redirect_is_an_error_never_followed() -> None:
    async def main() -> None:
        hits: list[bytes] = []

        async def redirecting(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            hits.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(
                b"HTTP/1.1 301 Moved\r\nLocation: ws://127.0.0.1:9/app-server\r\nContent-Length: 0\r\n\r\n"
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(redirecting, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            assert (
                await _refused(f"ws://127.0.0.1:{port}/app-server", token=TOKEN) == 301
            )
        assert len(hits) == 1  # one request, no second one to the Location

    asyncio.run(main())


# A committed self-signed certificate for localhost / 127.0.0.1 (valid until 2125), a test
# fixture with no secrecy: see tests/certs/README.md.
CERTS = Path(__file__).resolve().parent / "certs"


def _test_cert() -> tuple[Path, Path]:
    return CERTS / "test-only-localhost.pem", CERTS / "test-only-localhost.key"


def test_wss_verifies_peer_by_default() -> None:
    cert, key = _test_cert()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)

    async def main() -> None:
        async with serve(
            factory(), host="127.0.0.1", token=TOKEN, ssl=server_ctx
        ) as listener:
            assert listener.url.startswith("wss://")
            with pytest.raises(ssl.SSLCertVerificationError):
                async with connect(
                    listener.url,
                    token=TOKEN,
                    capabilities=GROUPS,
                    on_request=ignore_requests,
                ):
                    pass
            trusting = ssl.create_default_context(cafile=str(cert))
            async with connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                ssl=trusting,
                on_request=ignore_requests,
            ) as s:
                assert s.connected
            wrong_name = listener.url.replace("127.0.0.1", "localhost")
            async with connect(
                wrong_name,
                token=TOKEN,
                capabilities=GROUPS,
                ssl=trusting,
                on_request=ignore_requests,
            ) as s:
                assert s.connected  # localhost is in the certificate too

    asyncio.run(main())


def test_peer_not_reading_is_closed_1008_with_reason() -> None:
    import socket

    from rawws import TEXT, frame, upgrade_headers

    conns: list[Any] = []

    def make(info: Any) -> Any:
        conns.append(info.connection)
        return factory()(info)

    async def main() -> None:
        async with serve(
            make,
            host="127.0.0.1",
            token=TOKEN,
            max_outbound_messages=2,
            write_limit=1024,
            send_timeout=0.3,
        ) as listener:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(
                sock, ("127.0.0.1", listener.port)
            )
            reader, writer = await asyncio.open_connection(sock=sock)
            lines = [
                "GET /app-server HTTP/1.1",
                "Host: x",
                *(f"{k}: {v}" for k, v in upgrade_headers(TOKEN)),
            ]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
            assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
            init = (
                '{"schema_version":"1.0","type":"request","id":"1","correlation_id":"1",'
                '"method":"connection/initialize","params":{"versions":["1.0"],"capabilities":'
                '["sessions.v1","streaming.v1","project_events.v1","approvals.v1","cancellation.v1"]}}'
            )
            writer.write(frame(TEXT, init.encode()))
            for _ in range(200):
                if (
                    conns
                    and conns[0]._server is not None
                    and conns[0].server.state != "new"
                ):
                    break
                await asyncio.sleep(0.01)
            conn = conns[0]
            delta = core.ItemDeltaParams(
                thread_id="t", turn_id="u", item_id="i", delta="x" * 60_000
            )
            with pytest.raises(ConnectionError, match="not reading"):
                for _ in range(5000):  # this client never reads again
                    await conn.notify("item/delta", delta)
            assert conn.close_reason == "peer is not reading (outbound queue full)"
            writer.transport.abort()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_disconnect_makes_mutation_uncertain_and_reconnect_reinitializes() -> None:
    async def main() -> None:
        async with serve(factory(), host="127.0.0.1", token=TOKEN) as listener:
            async with connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                on_request=ignore_requests,
            ) as s:
                first = s.initialize_result.connection_id
                thread = (
                    await s.request("thread/start", {}, command_id="cmd-1")
                ).thread
                inflight = asyncio.create_task(
                    s.request(
                        "thread/resume",
                        {"thread_id": thread.thread_id},
                        command_id="cmd-2",
                    )
                )
                read = asyncio.create_task(
                    s.request("thread/read", {"thread_id": thread.thread_id})
                )
                await asyncio.sleep(0)
                s.abort()
                with pytest.raises(core.ProtocolError) as err:
                    await inflight
                assert err.value.code == "ambiguous_disconnect"
                with pytest.raises(core.ProtocolError) as err2:
                    await read
                assert err2.value.code == "disconnected"
                assert len(s.uncertain) == 1
                with pytest.raises(core.ProtocolError) as err3:
                    await s.request("thread/read", {"thread_id": thread.thread_id})
                assert (
                    err3.value.code == "disconnected"
                )  # refused by the core before sending
                await s.reconnect()
                assert s.initialize_result.connection_id != first
                assert s.initialize_result.host_id == listener.host_id
                assert len(s.uncertain) == 1  # kept; nothing re-sent
                (rid,) = s.uncertain
                s.resolve_uncertain(rid, "applied")
                assert not s.uncertain
                r = await s.request("thread/read", {"thread_id": thread.thread_id})
                assert r.thread.thread_id == thread.thread_id

    asyncio.run(main())


def test_approval_is_answered_only_by_the_caller_and_stream_resumes_from_checkpoint() -> (
    None
):
    async def main() -> None:
        state = AgentState(message_deltas=3, delta_interval=0.0)
        requests: list[Any] = []
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            async with connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                on_request=requests.append,
            ) as s:
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
                cursors: list[int] = []
                for _ in range(500):
                    if requests:
                        break
                    try:
                        n = await s.next_notification(timeout=0.01)
                    except TimeoutError:
                        continue
                    if n.cursor is not core.UNSET:
                        cursors.append(n.cursor)
                        s.ack(n)
                await asyncio.sleep(0.1)
                assert (
                    state.turns[turn.turn_id].turn.status == "in_progress"
                )  # waits for the caller
                for n in s.take_notifications():
                    if n.cursor is not core.UNSET:
                        cursors.append(n.cursor)
                        s.ack(n)
                await s.reconnect()  # the approval request of the old connection can no longer be answered
                p = requests[0].params
                # Resuming subscribes this connection; the Agent asks again on it.
                await s.resume(turn.turn_id)
                while len(requests) < 2:
                    await asyncio.sleep(0.01)
                await s.reply(
                    requests[1],
                    core.ApprovalRequestResult(
                        approval_id=p.approval_id, action=p.action, decision="deny"
                    ),
                )
                while True:
                    n = await s.next_notification(timeout=5)
                    if n.cursor is core.UNSET:
                        continue
                    cursors.append(n.cursor)
                    s.ack(n)
                    if n.method == "turn/completed":
                        break
                assert cursors == list(range(1, len(cursors) + 1))
                assert state.approvals == {p.approval_id: "deny"}

    asyncio.run(asyncio.wait_for(main(), 30))


def test_full_notification_queue_stops_reading_and_close_still_ends_iteration() -> None:
    async def main() -> None:
        state = AgentState(message_deltas=50, delta_interval=0.0)
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            ctx = connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                max_notifications=2,
                on_request=ignore_requests,
            )
            s = await ctx.__aenter__()
            thread = (await s.request("thread/start", {}, command_id="a")).thread
            await s.request(
                "turn/start",
                {
                    "thread_id": thread.thread_id,
                    "input": [{"type": "text", "text": "x"}],
                },
                command_id="b",
            )
            await asyncio.sleep(0.3)
            assert (
                s._notifications.qsize() == 2
            )  # bounded; the reader waits, nothing dropped
            assert s.client.buffered == 0 or s.client.buffered <= 128
            await ctx.__aexit__(None, None, None)
            got = [n.method async for n in s.notifications()]
            assert got == ["thread/started", "turn/started"]

    asyncio.run(asyncio.wait_for(main(), 20))


def test_reconnect_authenticates_again() -> None:
    calls: list[int] = []

    def once(request: HandshakeRequest) -> object | None:
        calls.append(1)
        return (
            "first" if len(calls) == 1 else None
        )  # credentials revoked after the first handshake

    async def main() -> None:
        async with serve(factory(), host="127.0.0.1", authenticator=once) as listener:
            async with connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                on_request=ignore_requests,
            ) as s:
                with pytest.raises(HandshakeRejected) as err:
                    await s.reconnect()
                assert err.value.status == 401
                assert not s.connected

    asyncio.run(main())
    assert len(calls) == 2


def test_fake_agent_interrupt_and_cancel() -> None:
    async def main() -> None:
        state = AgentState(message_deltas=200, delta_interval=0.01)
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            async with connect(
                listener.url,
                token=TOKEN,
                capabilities=GROUPS,
                on_request=ignore_requests,
            ) as s:
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
                ids = {"thread_id": thread.thread_id, "turn_id": turn.turn_id}
                r = await s.request("turn/interrupt", ids, command_id="c")
                assert (
                    r.interrupt_status == "requested"
                )  # intent only; the lifecycle event proves the end
                status = None
                while status is None:
                    n = await s.next_notification(timeout=5)
                    if n.cursor is not core.UNSET:
                        s.ack(n)
                    if n.method == "turn/completed":
                        status = n.params.turn.status
                assert status == "interrupted"
                r = await s.request("turn/interrupt", ids, command_id="d")
                assert r.interrupt_status == "already_finished"
                read = await s.request("thread/read", {"thread_id": thread.thread_id})
                assert [t.status for t in read.turns] == ["interrupted"]
                c = await s.request("request/cancel", {"request_id": "c1-3"})
                assert c.cancel_status == "already_finished"
                with pytest.raises(core.ProtocolError) as err:
                    await s.request("thread/read", {"thread_id": "nope"})
                assert err.value.origin == "remote"

    asyncio.run(asyncio.wait_for(main(), 20))


def test_fake_agent_sends_only_negotiated_groups() -> None:
    async def main() -> None:
        state = AgentState(message_deltas=2, delta_interval=0.0)
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token=TOKEN
        ) as listener:
            caps = ["sessions.v1", "approvals.v1"]  # no streaming.v1
            box: list[Any] = []

            async def approve(request: Any) -> None:
                p = request.params
                await box[0].reply(
                    request,
                    core.ApprovalRequestResult(
                        approval_id=p.approval_id, action=p.action, decision="approve"
                    ),
                )

            async with connect(
                listener.url, token=TOKEN, capabilities=caps, on_request=approve
            ) as s:
                box.append(s)
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
                methods = []
                while "turn/completed" not in methods:
                    n = await s.next_notification(timeout=5)
                    methods.append(n.method)
                    # Without streaming.v1 every event comes unsequenced:
                    # nothing to acknowledge (Session.ack refuses them).
                    assert n.cursor is core.UNSET
                assert not [m for m in methods if m.startswith("item/")]
                assert state.turns[turn.turn_id].turn.status == "completed"

    asyncio.run(asyncio.wait_for(main(), 20))
