"""Gaps a review found (issue 12): each test failed before its fix."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
import samgita_protocol as core
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from samgita_protocol_websocket import (
    CloseCode,
    HandshakeRejected,
    HandshakeRequest,
    connect,
    serve,
)
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

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


async def _status(url: str, token: str) -> int | None:
    try:
        async with connect(url, token=token, capabilities=["sessions.v1"]):
            return None
    except HandshakeRejected as exc:
        return exc.status


@pytest.mark.parametrize("refusal", [False, None, 0, "", {}])
def test_authenticator_returning_false_or_falsy_refuses_401(refusal: object) -> None:
    def predicate(request: HandshakeRequest) -> object:
        return True if request.authorization == ("Bearer right",) else refusal

    async def main() -> None:
        async with serve(factory(), host="127.0.0.1", authenticator=predicate) as lis:
            assert await _status(lis.url, "WRONG") == 401
            assert await _status(lis.url, "right") is None

    asyncio.run(asyncio.wait_for(main(), 20))


def _init_response(msg: dict[str, Any]) -> str:
    return json.dumps(
        {
            "schema_version": "1.0",
            "type": "response",
            "id": msg["id"],
            "correlation_id": msg["correlation_id"],
            "result": {
                "version": "1.0",
                "capabilities": msg["params"]["capabilities"],
                "connection_id": "c1",
                "host_id": "h",
            },
        }
    )


def _closed_notification(cursor: int) -> str:
    return json.dumps(
        {
            "schema_version": "1.0",
            "type": "notification",
            "method": "thread/closed",
            "params": {"thread_id": "t"},
            "stream_id": "s1",
            "cursor": cursor,
        }
    )


def test_cursor_gap_from_the_peer_closes_1002_and_the_mutation_turns_uncertain() -> (
    None
):
    seen_close: list[int | None] = []

    async def raw_server(ws: Any) -> None:
        try:
            async for text in ws:
                msg = json.loads(text)
                if msg["method"] == "connection/initialize":
                    await ws.send(_init_response(msg))
                elif msg["method"] == "thread/start":
                    for cursor in (1, 3):  # cursor 2 skipped
                        await ws.send(_closed_notification(cursor))
        except ConnectionClosed:
            pass
        seen_close.append(ws.close_code)

    async def main() -> None:
        async with ws_serve(raw_server, "127.0.0.1", 0) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["sessions.v1", "streaming.v1"],
            ) as s:
                with pytest.raises(core.ProtocolError) as err:
                    await s.request("thread/start", {}, command_id="cmd-1")
                assert err.value.code == core.ErrorCode.AMBIGUOUS_DISCONNECT
                assert [r.command_id for r in s.uncertain.values()] == ["cmd-1"]
                await s.wait_disconnected()
                assert not s.connected
                assert s.close_code == CloseCode.PROTOCOL_ERROR
                assert s.close_reason is not None and "cursor_gap" in s.close_reason
                delivered = [n.cursor for n in s.take_notifications()]
                assert delivered == [1]  # 3 was never handed out
        assert seen_close == [CloseCode.PROTOCOL_ERROR]

    asyncio.run(asyncio.wait_for(main(), 20))


async def _turn_run_while_away(state: AgentState, s: Any) -> tuple[str, list[int]]:
    """Start a turn, cut the connection at once, let the turn finish, reconnect."""
    thread = (await s.request("thread/start", {}, command_id="a")).thread
    turn = (
        await s.request(
            "turn/start",
            {"thread_id": thread.thread_id, "input": [{"type": "text", "text": "x"}]},
            command_id="b",
        )
    ).turn
    s.abort()
    await s.wait_disconnected()
    while state.turns[turn.turn_id].turn.status == "in_progress":
        await asyncio.sleep(0.02)
    await s.reconnect()
    return turn.turn_id, []


def _take_all(s: Any, into: list[int]) -> None:
    for n in s.take_notifications():
        if n.cursor is not core.UNSET:
            into.append(n.cursor)
            s.ack(n)


def test_resume_larger_than_the_notification_queue_returns_and_loses_nothing() -> None:
    state = AgentState(message_deltas=20, delta_interval=0.0, approval_timeout=0.1)

    async def main() -> None:
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token="tok"
        ) as lis:
            async with connect(
                lis.url,
                token="tok",
                capabilities=GROUPS,
                max_notifications=10,
                on_request=ignore_requests,
            ) as s:
                stream_id, cursors = await _turn_run_while_away(state, s)
                last = state.store.replay_log.last_cursor(stream_id)
                assert last > 20
                # Returns although the caller has taken nothing yet.
                held = await asyncio.wait_for(s.resume(stream_id), 5)
                assert held >= 1
                _take_all(s, cursors)
                assert cursors == list(range(1, last + 1))

    asyncio.run(asyncio.wait_for(main(), 30))


def test_cancelled_resume_loses_no_event_and_a_second_resume_continues() -> None:
    state = AgentState(message_deltas=150, delta_interval=0.0, approval_timeout=0.1)

    async def main() -> None:
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token="tok"
        ) as lis:
            async with connect(
                lis.url,
                token="tok",
                capabilities=GROUPS,
                max_notifications=10,
                client_options={"max_buffered_notifications": 130},
                on_request=ignore_requests,
            ) as s:
                stream_id, cursors = await _turn_run_while_away(state, s)
                last = state.store.replay_log.last_cursor(stream_id)
                assert last > 260  # more than two pages of 128
                # The second page does not fit the core's buffer until the
                # caller takes notifications: the caller gives up instead.
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(s.resume(stream_id), 1.0)
                _take_all(s, cursors)
                assert cursors and cursors == list(range(1, len(cursors) + 1))
                while cursors[-1] < last:
                    task = asyncio.create_task(s.resume(stream_id))
                    while not task.done():
                        _take_all(s, cursors)
                        await asyncio.sleep(0.01)
                    await task
                    _take_all(s, cursors)
                assert cursors == list(range(1, last + 1))

    asyncio.run(asyncio.wait_for(main(), 30))


def test_request_whose_send_fails_raises_the_cores_protocol_error() -> None:
    # A peer that stops reading after initialize: sends time out.
    stop = asyncio.Event()

    async def raw_server(ws: Any) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for text in ws:
                msg = json.loads(text)
                if msg["method"] == "connection/initialize":
                    await ws.send(_init_response(msg))
                    ws.transport.pause_reading()
                    await stop.wait()
                    ws.transport.abort()

    async def one(s: Any, i: int, payload: str) -> Any:
        event = core.Event(
            event_id=f"e{i}",
            delivery_attempt_id="a",
            created_at="2026-12-03T10:00:00Z",
            correlation_id="c",
            event_type="t",
            payload={"b": payload},
        )
        try:
            await s.request(
                "project/event.receive", {"event": event}, command_id=f"cmd{i}"
            )
        except BaseException as exc:  # noqa: BLE001 - the kind is the assertion
            return exc
        return None

    async def main() -> None:
        async with ws_serve(raw_server, "127.0.0.1", 0, max_size=None) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["project_events.v1"],
                send_timeout=0.5,
                write_limit=1024,
                close_timeout=0.5,
            ) as s:
                payload = "x" * 900_000
                outcomes = await asyncio.gather(
                    *(one(s, i, payload) for i in range(24))
                )
                kinds = {type(o).__name__ for o in outcomes}
                assert kinds == {"ProtocolError"}, kinds
                assert {o.code for o in outcomes} == {
                    core.ErrorCode.AMBIGUOUS_DISCONNECT
                }
                assert len(s.uncertain) == 24
                assert not s.connected
                stop.set()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_reader_treats_a_failed_reply_as_the_disconnect() -> None:
    # The peer sends a request the client refuses (a group not negotiated)
    # and closes at once: the reader's own reply fails; it must not escape.
    async def raw_server(ws: Any) -> None:
        async for text in ws:
            msg = json.loads(text)
            if msg["method"] == "connection/initialize":
                await ws.send(_init_response(msg))
                for i in range(20):
                    await ws.send(
                        json.dumps(
                            {
                                "schema_version": "1.0",
                                "type": "request",
                                "id": f"s{i}",
                                "correlation_id": f"s{i}",
                                "method": "request/cancel",
                                "params": {"request_id": "x"},
                            }
                        )
                    )
                ws.transport.abort()
                return

    async def main() -> None:
        async with ws_serve(raw_server, "127.0.0.1", 0) as srv:
            port = srv.sockets[0].getsockname()[1]
            async with connect(
                f"ws://127.0.0.1:{port}/app-server",
                token="tok",
                capabilities=["sessions.v1"],
            ) as s:
                reader = s._reader
                assert reader is not None
                await s.wait_disconnected()
                await asyncio.sleep(0)
                assert reader.done() and reader.exception() is None

    asyncio.run(asyncio.wait_for(main(), 20))


async def _raw_initialized_peer(port: int, conns: list[Any]) -> Any:
    """A raw-socket client that upgrades, initializes and then never reads."""
    import socket

    from rawws import TEXT, frame, upgrade_headers

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    lines = [
        "GET /app-server HTTP/1.1",
        "Host: x",
        *(f"{k}: {v}" for k, v in upgrade_headers("tok")),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
    init = (
        '{"schema_version":"1.0","type":"request","id":"1","correlation_id":"1",'
        '"method":"connection/initialize","params":{"versions":["1.0"],'
        '"capabilities":["sessions.v1","streaming.v1"]}}'
    )
    writer.write(frame(TEXT, init.encode()))
    for _ in range(300):
        if conns and conns[0]._server is not None and conns[0].server.state != "new":
            break
        await asyncio.sleep(0.01)
    return writer


def test_listener_writer_send_is_bounded_by_send_timeout_and_one_send_at_a_time() -> (
    None
):
    from samgita_protocol_websocket._server_loop import NOT_READING

    conns: list[Any] = []
    concurrent = [0, 0]  # now, maximum

    def make(info: Any) -> Any:
        conns.append(info.connection)
        return factory()(info)

    async def main() -> None:
        async with serve(
            make,
            host="127.0.0.1",
            token="tok",
            send_timeout=0.5,
            write_limit=1024,
            ping_interval=None,
        ) as lis:
            writer = await _raw_initialized_peer(lis.port, conns)
            conn = conns[0]
            real_send = conn._ws.send

            calls = [0]

            async def counting_send(*args: Any, **kwargs: Any) -> Any:
                concurrent[0] += 1
                concurrent[1] = max(concurrent)
                calls[0] += 1
                try:
                    if calls[0] == 1:
                        # The first (direct) send is slow, so the others
                        # queue and the writer is the one that gets stuck.
                        await asyncio.sleep(0.2)
                    return await real_send(*args, **kwargs)
                finally:
                    concurrent[0] -= 1

            conn._ws.send = counting_send
            delta = core.ItemDeltaParams(
                thread_id="t", turn_id="u", item_id="i", delta="x" * 200_000
            )
            # Far fewer than max_outbound_messages (256): every producer is
            # queued at once, so only the writer's own send can notice.
            small = core.ItemDeltaParams(
                thread_id="t", turn_id="u", item_id="i", delta="x"
            )
            tasks = [asyncio.create_task(conn.notify("item/delta", small))]
            tasks += [
                asyncio.create_task(conn.notify("item/delta", delta)) for _ in range(19)
            ]
            outcomes = await asyncio.wait_for(
                asyncio.gather(*tasks, return_exceptions=True), 5
            )
            # Producers queued before the close return; the one sending and
            # any that found the queue closed learn the reason.
            assert all(
                isinstance(o, ConnectionError) or not isinstance(o, BaseException)
                for o in outcomes
            ), outcomes
            for _ in range(300):
                if conn.closed:
                    break
                await asyncio.sleep(0.01)
            # The direct send succeeded: the close came from the writer's
            # own bounded send, with the not-reading reason.
            assert not isinstance(outcomes[0], BaseException)
            assert conn.closed
            assert conn.close_reason == NOT_READING
            assert concurrent[1] == 1
            writer.transport.abort()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_fake_agent_closes_1011_when_a_stream_event_cannot_be_sent() -> None:
    def make(info: Any) -> Any:
        conn = info.connection
        real = conn.send_encoded

        # Streamed events go out as the bytes the Replay validated.
        async def refusing(data: bytes) -> None:
            if b'"method":"item/delta"' in data:
                raise core.ProtocolError(core.ErrorCode.MESSAGE_TOO_LARGE, "too big")
            await real(data)

        conn.send_encoded = refusing
        return factory()(info)

    async def main() -> None:
        async with serve(make, host="127.0.0.1", token="tok") as lis:
            async with connect(
                lis.url, token="tok", capabilities=GROUPS, on_request=ignore_requests
            ) as s:
                thread = (await s.request("thread/start", {}, command_id="a")).thread
                await s.request(
                    "turn/start",
                    {
                        "thread_id": thread.thread_id,
                        "input": [{"type": "text", "text": "x"}],
                    },
                    command_id="b",
                )
                await asyncio.wait_for(s.wait_disconnected(), 5)
                assert s.close_code == CloseCode.INTERNAL_ERROR
                assert s.close_reason == "cannot send item/delta: message_too_large"

    asyncio.run(asyncio.wait_for(main(), 20))


@pytest.mark.parametrize(
    "line",
    [
        "< GET app-server?access_token=LEAK HTTP/1.1",
        "< GET *?token=LEAK HTTP/1.1",
        "< GET http://127.0.0.1/x?token=LEAK HTTP/1.1",
        "< GET /app-server?access_token=LEAK HTTP/1.0",
        "< X-Api-Token: LEAK",
        "< Proxy-Authorization:LEAK",
        "< X-Auth-Token: LEAK",
    ],
)
def test_redact_text_query_without_leading_slash_and_token_headers(line: str) -> None:
    from samgita_protocol_websocket import redact_text

    assert "LEAK" not in redact_text(line)


def test_redact_text_keeps_ordinary_text() -> None:
    from samgita_protocol_websocket import redact_text

    text = "< Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ== | is it? yes"
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        (
            {"server_options": {"max_outstanding_requests": -1}},
            ValueError,
            "server_options",
        ),
        ({"server_options": {"bogus": 1}}, TypeError, "server_options"),
        (
            {"server_options": {"capabilities": ["sessions.v1"]}},
            TypeError,
            "server_options",
        ),
        ({"server_options": {"request_timeout": "soon"}}, TypeError, "server_options"),
        ({"capabilities": ["bogus.v1"]}, ValueError, "capabilities"),
        ({"capabilities": [1]}, TypeError, "capabilities"),
    ],
)
def test_serve_checks_core_server_arguments_at_construction(
    kwargs: dict[str, Any], exc: type[Exception], name: str
) -> None:
    with pytest.raises(exc, match=f"^{name}"):
        serve(factory(), host="127.0.0.1", token="tok", **kwargs)


def test_serve_accepts_good_core_server_arguments() -> None:
    serve(
        factory(),
        host="127.0.0.1",
        token="tok",
        capabilities=["sessions.v1"],
        server_options={"max_outstanding_requests": 8},
    )


def test_max_size_and_open_timeout_are_the_names_on_both_sides_with_aliases() -> None:
    for kwargs, name in (
        ({"max_size": 0}, "max_size"),
        ({"max_message_bytes": 0}, "max_message_bytes"),
        ({"open_timeout": 0}, "open_timeout"),
        ({"handshake_timeout": 0}, "handshake_timeout"),
    ):
        with pytest.raises(ValueError, match=name):
            serve(factory(), host="127.0.0.1", token="tok", **kwargs)
    with pytest.raises(ValueError, match="not both"):
        serve(
            factory(), host="127.0.0.1", token="tok", max_size=10, max_message_bytes=10
        )
    with pytest.raises(ValueError, match="not both"):
        serve(
            factory(),
            host="127.0.0.1",
            token="tok",
            open_timeout=1,
            handshake_timeout=1,
        )
    url = "ws://127.0.0.1:1/app-server"
    for kwargs, name in (
        ({"max_size": 0}, "max_size"),
        ({"max_message_bytes": 0}, "max_message_bytes"),
        ({"open_timeout": 0}, "open_timeout"),
    ):
        with pytest.raises(ValueError, match=name):
            connect(url, token="tok", capabilities=["sessions.v1"], **kwargs)
    with pytest.raises(ValueError, match="not both"):
        connect(
            url,
            token="tok",
            capabilities=["sessions.v1"],
            max_size=9,
            max_message_bytes=9,
        )


def test_max_size_bounds_both_sides() -> None:
    async def main() -> None:
        async with serve(
            factory(), host="127.0.0.1", token="tok", max_size=4096
        ) as lis:
            async with connect(
                lis.url, token="tok", capabilities=["project_events.v1"], max_size=4096
            ) as s:
                assert s.client.limits.max_message_bytes == 4096
                event = core.Event(
                    event_id="e",
                    delivery_attempt_id="a",
                    created_at="2026-12-03T10:00:00Z",
                    correlation_id="c",
                    event_type="t",
                    payload={"b": "x" * 5000},
                )
                with pytest.raises(core.ProtocolError) as err:
                    await s.request(
                        "project/event.receive", {"event": event}, command_id="c"
                    )
                assert err.value.code == core.ErrorCode.MESSAGE_TOO_LARGE

    asyncio.run(asyncio.wait_for(main(), 20))


@pytest.mark.parametrize(
    "caps",
    [["approvals.v1"], ["cancellation.v1"], ["sessions.v1", "approvals.v1"]],
)
def test_offering_incoming_request_groups_requires_on_request(caps: list[str]) -> None:
    url = "ws://127.0.0.1:1/app-server"
    with pytest.raises(ValueError, match="on_request is required"):
        connect(url, token="tok", capabilities=caps)
    connect(url, token="tok", capabilities=caps, on_request=ignore_requests)
    connect(url, token="tok", capabilities=["sessions.v1", "streaming.v1"])


def test_approval_without_an_answer_is_never_answered_by_the_session() -> None:
    seen: list[Any] = []
    state = AgentState(message_deltas=1, delta_interval=0.0, approval_timeout=0.5)

    async def main() -> None:
        async with serve(
            FakeAgent.factory(state), host="127.0.0.1", token="tok"
        ) as lis:
            async with connect(
                lis.url, token="tok", capabilities=GROUPS, on_request=seen.append
            ) as s:
                thread = (await s.request("thread/start", {}, command_id="a")).thread
                await s.request(
                    "turn/start",
                    {
                        "thread_id": thread.thread_id,
                        "input": [{"type": "text", "text": "x"}],
                    },
                    command_id="b",
                )
                while not state.approvals:
                    await asyncio.sleep(0.02)
        assert len(seen) == 1
        # The caller did not answer: the Agent's deadline decided, not the library.
        assert list(state.approvals.values()) == ["expired"]

    asyncio.run(asyncio.wait_for(main(), 20))
