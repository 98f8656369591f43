"""Wrong Python values (docs/protocol.md section 7, "Wrong Python values").

Every public function and method of the package, given an argument of the
wrong Python type, raises ``TypeError`` naming the argument (a value out of
range: ``ValueError`` naming it); never ``AttributeError``, a
``ProtocolError`` for the caller's own mistake, or a silent no-op. A session
or connection that refused a call is unchanged and keeps working.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import samgita_protocol as core

from samgita_protocol_websocket import (
    AgentConnection,
    BearerTokenAuthenticator,
    ConnectionInfo,
    HandshakeRejected,
    RedactingLogger,
    Secret,
    Session,
    connect,
    is_credential_header,
    redact_text,
    serve,
)
from samgita_protocol_websocket.fake_agent import AgentState, FakeAgent

TOKEN = "wrong-values-token-5d1e"
GROUPS = ["sessions.v1", "streaming.v1"]
URL = "ws://127.0.0.1:1/app-server"
DELTA = core.ItemDeltaParams(thread_id="t", turn_id="u", item_id="i", delta="d")


def _names(error: BaseException, argument: str) -> bool:
    """Whether the message names ``argument`` (this package words it
    ``argument must be ...``, the core ``expected argument to be ...``)."""
    text = str(error)
    return (
        text.startswith((f"{argument} must", f"{argument}: "))
        or f"expected {argument} " in text
    )


def _serve(**options: Any) -> serve:
    kwargs: dict[str, Any] = {"host": "127.0.0.1", "token": TOKEN, **options}
    return serve(FakeAgent.factory(AgentState()), **kwargs)


def _connect(**options: Any) -> connect:
    kwargs: dict[str, Any] = {"token": TOKEN, "capabilities": GROUPS, **options}
    return connect(kwargs.pop("url", URL), **kwargs)


T, V = TypeError, ValueError

#: name -> (call, exception, argument named)
SYNC: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    "serve(handler_factory None)": (
        lambda: serve(None, host="127.0.0.1", token=TOKEN),  # type: ignore[arg-type]
        T,
        "handler_factory",
    ),
    "serve(host None)": (lambda: _serve(host=None), T, "host"),
    "serve(port str)": (lambda: _serve(port="1"), T, "port"),
    "serve(capabilities str)": (
        lambda: _serve(capabilities="sessions.v1"),
        T,
        "capabilities",
    ),
    "serve(capabilities int item)": (
        lambda: _serve(capabilities=[5]),
        T,
        "capabilities",
    ),
    "serve(capabilities typo)": (
        lambda: _serve(capabilities=["sessions"]),
        V,
        "capabilities",
    ),
    "serve(host_id int)": (lambda: _serve(host_id=5), T, "host_id"),
    "serve(host_id empty)": (lambda: _serve(host_id=""), V, "host_id"),
    "serve(durable None)": (lambda: _serve(durable=None), T, "durable"),
    "serve(token int)": (lambda: _serve(token=5), T, "token"),
    "serve(authenticator int)": (
        lambda: serve(
            FakeAgent.factory(AgentState()),
            host="127.0.0.1",
            authenticator=5,  # type: ignore[arg-type]
        ),
        T,
        "authenticator",
    ),
    "serve(allowed_origins None)": (
        lambda: _serve(allowed_origins=None),
        T,
        "allowed_origins",
    ),
    "serve(allowed_origins str)": (
        lambda: _serve(allowed_origins="https://a"),
        T,
        "allowed_origins",
    ),
    "serve(ssl int)": (lambda: _serve(ssl=5), T, "ssl"),
    "serve(max_size str)": (lambda: _serve(max_size="1"), T, "max_size"),
    "serve(open_timeout str)": (lambda: _serve(open_timeout="1"), T, "open_timeout"),
    "serve(server_options int)": (
        lambda: _serve(server_options=5),
        T,
        "server_options",
    ),
    "serve(server_options unknown key)": (
        lambda: _serve(server_options={"nope": 1}),
        T,
        "server_options",
    ),
    "serve(logger int)": (lambda: _serve(logger=5), T, "logger"),
    "connect(url None)": (lambda: _connect(url=None), T, "url"),
    "connect(token None)": (lambda: _connect(token=None), T, "token"),
    "connect(capabilities None)": (
        lambda: _connect(capabilities=None),
        T,
        "capabilities",
    ),
    "connect(capabilities int item)": (
        lambda: _connect(capabilities=[5]),
        T,
        "capabilities",
    ),
    "connect(capabilities typo)": (
        lambda: _connect(capabilities=["sessions"]),
        V,
        "capabilities",
    ),
    "connect(required_capabilities None)": (
        lambda: _connect(required_capabilities=None),
        T,
        "required_capabilities",
    ),
    "connect(on_request int)": (lambda: _connect(on_request=5), T, "on_request"),
    "connect(host_id int)": (lambda: _connect(host_id=5), T, "host_id"),
    "connect(checkpoints int)": (
        lambda: _connect(host_id="h", checkpoints=5),
        T,
        "checkpoints",
    ),
    "connect(origin int)": (lambda: _connect(origin=5), T, "origin"),
    "connect(max_notifications str)": (
        lambda: _connect(max_notifications="1"),
        T,
        "max_notifications",
    ),
    "connect(client_options int)": (
        lambda: _connect(client_options=5),
        T,
        "client_options",
    ),
    "connect(client_options unknown key)": (
        lambda: _connect(client_options={"nope": 1}),
        T,
        "client_options",
    ),
    "connect(client_options key connect sets)": (
        lambda: _connect(client_options={"capabilities": []}),
        T,
        "client_options",
    ),
    "Secret(None)": (lambda: Secret(None), T, "value"),  # type: ignore[arg-type]
    "Secret(bytes)": (lambda: Secret(b"token"), T, "value"),  # type: ignore[arg-type]
    "Secret(empty)": (lambda: Secret(""), V, "value"),
    "BearerTokenAuthenticator(None)": (
        lambda: BearerTokenAuthenticator(None),  # type: ignore[arg-type]
        T,
        "token",
    ),
    "BearerTokenAuthenticator(...)(None)": (
        lambda: BearerTokenAuthenticator(TOKEN)(None),  # type: ignore[arg-type]
        T,
        "request",
    ),
    "is_credential_header(None)": (
        lambda: is_credential_header(None),  # type: ignore[arg-type]
        T,
        "name",
    ),
    "is_credential_header(bytes)": (
        lambda: is_credential_header(b"x-api-key"),  # type: ignore[arg-type]
        T,
        "name",
    ),
    "redact_text(None)": (lambda: redact_text(None), T, "text"),  # type: ignore[arg-type]
    "redact_text(secrets None)": (
        lambda: redact_text("x", None),  # type: ignore[arg-type]
        T,
        "secrets",
    ),
    "redact_text(secrets str)": (lambda: redact_text("abc", "ab"), T, "secrets"),
    "redact_text(secrets int item)": (
        lambda: redact_text("x", [5]),  # type: ignore[list-item]
        T,
        "secrets",
    ),
    "RedactingLogger(None)": (
        lambda: RedactingLogger(None),  # type: ignore[arg-type]
        T,
        "logger",
    ),
    "RedactingLogger(secrets str)": (
        lambda: RedactingLogger(logging.getLogger("x"), "ab"),
        T,
        "secrets",
    ),
    "HandshakeRejected(status None)": (
        lambda: HandshakeRejected(None, "m"),  # type: ignore[arg-type]
        T,
        "status",
    ),
    "HandshakeRejected(message None)": (
        lambda: HandshakeRejected(401, None),  # type: ignore[arg-type]
        T,
        "message",
    ),
}


@pytest.mark.parametrize("name", list(SYNC))
def test_a_wrong_argument_is_named(name: str) -> None:
    call, error, argument = SYNC[name]
    with pytest.raises(error) as info:
        call()
    assert type(info.value) is error, info.value
    assert _names(info.value, argument), info.value


#: name -> (call on the live session and its connection, exception, argument)
LIVE: dict[
    str,
    tuple[
        Callable[[Session, AgentConnection], Awaitable[object] | object],
        type[Exception],
        str,
    ],
] = {
    "session.request(method None)": (
        lambda s, c: s.request(None, {}),  # type: ignore[arg-type]
        T,
        "method",
    ),
    "session.request(unknown method)": (
        lambda s, c: s.request("nope/x", {}),
        V,
        "method",
    ),
    "session.request(params None)": (
        lambda s, c: s.request("thread/read", None),
        T,
        "params",
    ),
    "session.notify(method None)": (
        lambda s, c: s.notify(None, DELTA),  # type: ignore[arg-type]
        T,
        "method",
    ),
    "session.reply(request None)": (
        lambda s, c: s.reply(None, {}),
        T,
        "request",
    ),
    "session.reply_error(error None)": (
        lambda s, c: s.reply_error(None, None),
        T,
        "error",
    ),
    "session.next_notification(timeout str)": (
        lambda s, c: s.next_notification("1"),  # type: ignore[arg-type]
        T,
        "timeout",
    ),
    "session.resume(stream_id None)": (
        lambda s, c: s.resume(None),  # type: ignore[arg-type]
        T,
        "stream_id",
    ),
    "session.resume(cursor str)": (
        lambda s, c: s.resume("s", cursor="1"),  # type: ignore[arg-type]
        T,
        "cursor",
    ),
    "session.ack(None)": (lambda s, c: s.ack(None), T, "notification"),
    "session.ack(str)": (lambda s, c: s.ack("item/delta"), T, "notification"),
    "session.resolve_uncertain(request_id None)": (
        lambda s, c: s.resolve_uncertain(None, "applied"),  # type: ignore[arg-type]
        T,
        "request_id",
    ),
    "connection.notify(method None)": (
        lambda s, c: c.notify(None, DELTA),  # type: ignore[arg-type]
        T,
        "method",
    ),
    "connection.notify(unknown method)": (
        lambda s, c: c.notify("nope", DELTA),
        V,
        "method",
    ),
    "connection.request(method None)": (
        lambda s, c: c.request(None, {}),  # type: ignore[arg-type]
        T,
        "method",
    ),
    "connection.send_message(None)": (
        lambda s, c: c.send_message(None),
        T,
        "message",
    ),
    "connection.send_encoded(str)": (
        lambda s, c: c.send_encoded("{}"),  # type: ignore[arg-type]
        T,
        "data",
    ),
    "connection.close(code str)": (
        lambda s, c: c.close("1000"),  # type: ignore[arg-type]
        T,
        "code",
    ),
    "connection.close(code reserved)": (lambda s, c: c.close(1005), V, "code"),
    "connection.close(reason int)": (
        lambda s, c: c.close(1000, 5),  # type: ignore[arg-type]
        T,
        "reason",
    ),
    "connection.close(reason too long)": (
        lambda s, c: c.close(1000, "x" * 124),
        V,
        "reason",
    ),
}


def test_a_live_session_and_connection_name_the_wrong_argument() -> None:
    connections: list[AgentConnection] = []
    base = FakeAgent.factory(AgentState())

    def factory(info: ConnectionInfo) -> FakeAgent:
        connections.append(info.connection)
        return base(info)

    async def main() -> None:
        async with serve(factory, host="127.0.0.1", token=TOKEN) as listener:
            with pytest.raises(TypeError) as info:
                await listener.aclose(close_connections=None)  # type: ignore[arg-type]
            assert _names(info.value, "close_connections")
            async with connect(listener.url, token=TOKEN, capabilities=GROUPS) as s:
                (conn,) = connections
                for name, (call, error, argument) in LIVE.items():
                    before = (dict(s.client.pending), s.client.checkpoints())
                    with pytest.raises(error) as info:
                        result = call(s, conn)
                        if asyncio.iscoroutine(result):
                            await result
                    assert type(info.value) is error, (name, info.value)
                    assert _names(info.value, argument), (name, info.value)
                    assert (dict(s.client.pending), s.client.checkpoints()) == before
                    assert s.connected and not conn.closed, name
                # Both still work: a request round trip, a notification.
                result = await s.request("thread/start", {}, command_id="cmd-after")
                assert result.thread.thread_id
                await conn.notify("item/delta", DELTA)
                methods = []
                while not methods or methods[-1] != "item/delta":
                    note = await s.next_notification(timeout=5)
                    # An ephemeral one has nothing to acknowledge: refused,
                    # naming the argument, and nothing moves.
                    before = s.client.checkpoints()
                    with pytest.raises(ValueError) as info:
                        s.ack(note)
                    assert _names(info.value, "notification"), info.value
                    assert s.client.checkpoints() == before and s.connected
                    methods.append(note.method)

    asyncio.run(main())
