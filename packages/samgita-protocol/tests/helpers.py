"""A Client and a Server connected in one process over JSON bytes.

Every message crosses as its bytes (an `Outgoing`'s ``data``, or
``encode`` of a message a test built) and is decoded by the receiving
side, as a transport would carry it (in the manner of h11's
``tests/helpers.py`` ``ConnectionPair``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from samgita_protocol import (
    Client,
    Effect,
    Handler,
    Message,
    Outgoing,
    ProtocolError,
    ResponseReceived,
    Server,
    encode,
)
from samgita_protocol.testing import ALL_GROUPS, FakeHost

HOST_ID = "host-1"

EVENT: dict[str, Any] = {
    "event_id": "e1",
    "delivery_attempt_id": "a1",
    "created_at": "2026-01-01T00:00:00Z",
    "correlation_id": "corr-1",
    "event_type": "task.created",
    "payload": {"title": "x"},
}


def wire(message: Message | Outgoing) -> bytes:
    """The bytes a transport carries for ``message``: an `Outgoing`'s own
    validated bytes, or ``encode`` of a message."""
    if isinstance(message, Outgoing):
        return message.data
    return encode(message)


def raw_request(
    method: str, params: dict[str, Any], *, id: str = "x1", **extra: Any
) -> bytes:  # noqa: A002
    """A request's JSON, built by hand (for input the Client would refuse)."""
    import json

    message = {
        "schema_version": "1.0",
        "type": "request",
        "id": id,
        "correlation_id": extra.pop("correlation_id", id),
        "method": method,
        "params": params,
        **extra,
    }
    return json.dumps(message).encode()


class ConnectionPair:
    """A Client connected to a Server hosting ``handler`` (a `FakeHost` by default).

    ``client_options`` / ``server_options`` are passed to the constructors;
    ``capabilities`` are offered by the client and advertised by the server
    unless the options say otherwise.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        capabilities: Iterable[str] | None = None,
        client_options: dict[str, Any] | None = None,
        server_options: dict[str, Any] | None = None,
        initialize: bool = True,
    ) -> None:
        groups = list(ALL_GROUPS if capabilities is None else capabilities)
        self.host: Handler = (
            handler if handler is not None else FakeHost(capabilities=groups)
        )
        client_kw: dict[str, Any] = {"capabilities": groups, **(client_options or {})}
        server_kw: dict[str, Any] = {
            "capabilities": groups,
            "host_id": HOST_ID,
            **(server_options or {}),
        }
        self.client = Client(**client_kw)
        self.server = Server(self.host, **server_kw)
        self.init_result: Any = None
        if initialize:
            self.init_result = self.initialize()

    @property
    def fake(self) -> FakeHost:
        """The host, when it is a FakeHost."""
        assert isinstance(self.host, FakeHost)
        return self.host

    def initialize(self, params: dict[str, Any] | None = None) -> Any:
        """Initialize; return the initialize result (or raise on failure)."""
        effects = self.call("connection/initialize", params or {})
        assert len(effects) == 1, effects
        effect = effects[0]
        if not isinstance(effect, ResponseReceived):
            raise AssertionError(f"initialization failed: {effect!r}")
        return effect.result

    def to_server(
        self, message: Message | Outgoing | bytes, **options: Any
    ) -> list[Outgoing]:
        """Deliver ``message`` to the server; return what it sends back."""
        data = message if isinstance(message, bytes) else wire(message)
        return self.server.receive(data, **options)

    def to_client(
        self, message: Message | Outgoing | bytes, **options: Any
    ) -> list[Effect]:
        """Deliver ``message`` to the client; return its effects."""
        data = message if isinstance(message, bytes) else wire(message)
        return self.client.receive(data, **options)

    def exchange(self, message: Message | Outgoing, **options: Any) -> list[Effect]:
        """Deliver a client message to the server and everything the server
        sends back to the client; return the client's effects in order."""
        effects: list[Effect] = []
        for reply in self.to_server(message, **options):
            effects.extend(self.to_client(reply))
        return effects

    def call(self, method: str, params: Any, **options: Any) -> list[Effect]:
        """``client.request`` + `exchange`."""
        request = self.client.request(method, params, **options)
        return self.exchange(request)

    def result(self, method: str, params: Any, **options: Any) -> Any:
        """The result of one call that must succeed."""
        effects = self.call(method, params, **options)
        assert effects and isinstance(effects[0], ResponseReceived), effects
        return effects[0].result

    def error(self, method: str, params: Any, **options: Any) -> ProtocolError:
        """The error of one call that must fail with an error response."""
        effects = self.call(method, params, **options)
        assert effects, effects
        error = getattr(effects[0], "error", None)
        assert isinstance(error, ProtocolError), effects
        return error
