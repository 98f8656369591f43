"""Wrong Python values (docs/protocol.md section 7, "Wrong Python values").

Every public function and method of the package, given an argument of the
wrong Python type, raises ``TypeError`` naming the argument (a value out of
range: ``ValueError`` naming it); never ``AttributeError``, a
``ProtocolError`` for the caller's own mistake (``invalid_message`` was
raised for a line that is not bytes, as if Codex had sent it), or an
unchecked option that fails later. A bridge that refused a call is unchanged
and keeps working.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from samgita_protocol import InitializeParams, Request

from samgita_protocol_codex import (
    CodexBridge,
    CodexStdio,
    CodexWebSocket,
    ToCodex,
)

INITIALIZE = Request(
    id="init",
    correlation_id="init",
    method="connection/initialize",
    params=InitializeParams(versions=["1.0"], capabilities=["sessions.v1"]),
)

T, V = TypeError, ValueError

#: name -> (call given a fresh bridge, exception, argument named)
CASES: dict[str, tuple[Callable[[CodexBridge], object], type[Exception], str]] = {
    "CodexBridge(host_id None)": (
        lambda b: CodexBridge(host_id=None),  # type: ignore[arg-type]
        T,
        "host_id",
    ),
    "CodexBridge(host_id empty)": (lambda b: CodexBridge(host_id=""), V, "host_id"),
    "CodexBridge(instance_id int)": (
        lambda b: CodexBridge(host_id="h", instance_id=5),  # type: ignore[arg-type]
        T,
        "instance_id",
    ),
    "CodexBridge(client_name None)": (
        lambda b: CodexBridge(host_id="h", client_name=None),  # type: ignore[arg-type]
        T,
        "client_name",
    ),
    "CodexBridge(client_version int)": (
        lambda b: CodexBridge(host_id="h", client_version=5),  # type: ignore[arg-type]
        T,
        "client_version",
    ),
    "CodexBridge(approval_timeout int)": (
        lambda b: CodexBridge(host_id="h", approval_timeout=300),  # type: ignore[arg-type]
        T,
        "approval_timeout",
    ),
    "CodexBridge(now int)": (
        lambda b: CodexBridge(host_id="h", now=5),  # type: ignore[arg-type]
        T,
        "now",
    ),
    **{
        f"CodexBridge({bound} str)": (
            lambda b, bound=bound: CodexBridge(host_id="h", **{bound: "1"}),
            T,
            bound,
        )
        for bound in (
            "max_events",
            "max_bytes",
            "max_pending",
            "max_approvals",
            "max_streams",
            "max_unmapped_methods",
        )
    },
    "CodexBridge(max_streams zero)": (
        lambda b: CodexBridge(host_id="h", max_streams=0),
        V,
        "max_streams",
    ),
    "bridge.stream_id(None)": (
        lambda b: b.stream_id(None),  # type: ignore[arg-type]
        T,
        "thread_id",
    ),
    "bridge.stream_id(list)": (
        lambda b: b.stream_id([]),  # type: ignore[arg-type]
        T,
        "thread_id",
    ),
    "bridge.native_request(None)": (
        lambda b: b.native_request(None),  # type: ignore[arg-type]
        T,
        "request",
    ),
    "bridge.native_request(dict)": (
        lambda b: b.native_request({"method": "thread/start"}),  # type: ignore[arg-type]
        T,
        "request",
    ),
    "bridge.native_response(None)": (
        lambda b: b.native_response(None),  # type: ignore[arg-type]
        T,
        "response",
    ),
    "bridge.native_response(Request)": (
        lambda b: b.native_response(INITIALIZE),  # type: ignore[arg-type]
        T,
        "response",
    ),
    "bridge.receive_codex(None)": (
        lambda b: b.receive_codex(None),  # type: ignore[arg-type]
        T,
        "line",
    ),
    "bridge.receive_codex(str)": (
        lambda b: b.receive_codex('{"method":"x/y"}'),  # type: ignore[arg-type]
        T,
        "line",
    ),
    "CodexStdio(...).send(None)": (
        lambda b: asyncio.run(CodexStdio(process=None).send(None)),  # type: ignore[arg-type]
        T,
        "line",
    ),
    "CodexStdio(...).send(str)": (
        lambda b: asyncio.run(CodexStdio(process=None).send("{}")),  # type: ignore[arg-type]
        T,
        "line",
    ),
    "CodexWebSocket(...).send(None)": (
        lambda b: asyncio.run(CodexWebSocket(connection=None).send(None)),  # type: ignore[arg-type]
        T,
        "line",
    ),
}


def _start(**options: Any) -> Any:
    kwargs: dict[str, Any] = {"binary": "/bin/true", "codex_home": "/tmp", **options}
    return asyncio.run(CodexStdio.start(**kwargs))


def _connect(**options: Any) -> Any:
    kwargs: dict[str, Any] = {"url": "ws://127.0.0.1:1", "token": "t", **options}
    return asyncio.run(CodexWebSocket.connect(**kwargs))


# Refused before anything is started or connected.
CASES.update(
    {
        "CodexStdio.start(binary None)": (lambda b: _start(binary=None), T, "binary"),
        "CodexStdio.start(codex_home None)": (
            lambda b: _start(codex_home=None),
            T,
            "codex_home",
        ),
        "CodexStdio.start(args str)": (lambda b: _start(args="app"), T, "args"),
        "CodexStdio.start(args int item)": (lambda b: _start(args=[5]), T, "args"),
        "CodexStdio.start(cwd int)": (lambda b: _start(cwd=5), T, "cwd"),
        "CodexStdio.start(env int)": (lambda b: _start(env=5), T, "env"),
        "CodexStdio.start(max_line_bytes str)": (
            lambda b: _start(max_line_bytes="1"),
            T,
            "max_line_bytes",
        ),
        "CodexWebSocket.connect(url None)": (lambda b: _connect(url=None), T, "url"),
        "CodexWebSocket.connect(token None)": (
            lambda b: _connect(token=None),
            T,
            "token",
        ),
        "CodexWebSocket.connect(max_frame_bytes str)": (
            lambda b: _connect(max_frame_bytes="1"),
            T,
            "max_frame_bytes",
        ),
    }
)


def _seen(bridge: CodexBridge) -> tuple[Any, ...]:
    return (
        bridge.instance_id,
        dict(bridge.unmapped_notifications),
        dict(bridge.not_forwarded),
        dict(bridge.undelivered),
    )


@pytest.mark.parametrize("name", list(CASES))
def test_a_wrong_argument_is_named_and_changes_nothing(name: str) -> None:
    call, error, argument = CASES[name]
    bridge = CodexBridge(host_id="h", instance_id="same")
    before = _seen(bridge)
    with pytest.raises(error) as info:
        call(bridge)
    assert type(info.value) is error, info.value
    assert f"expected {argument} " in str(info.value), info.value
    assert _seen(bridge) == before
    # The bridge still works: the native initialize goes on to Codex.
    (out,) = bridge.native_request(INITIALIZE)
    assert isinstance(out, ToCodex)
    assert json.loads(out.data)["method"] == "initialize"
