"""The connection states of both roles, as data (in the manner of h11's ``_state.py``).

One table says how each role's state moves (``TRANSITIONS``: role, state,
event -> next state) and one what each state accepts (``ACCEPTS``: role,
state -> activities). `Client` and `Server` keep a :class:`ConnectionState`, change
it only through :func:`next_state` and ask :func:`refusal` before they act;
neither writes a state rule of its own.

    Client: NEW --send initialize--> INITIALIZING --result--> READY
            INITIALIZING --error result--> NEW
            any --disconnect--> DISCONNECTED --reconnect--> NEW
    Server: NEW --answered initialize--> READY
            any --disconnect--> DISCONNECTED (a Server is not reconnected:
            a new connection gets a new Server)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ._errors import ErrorCode, Origin, ProtocolError

__all__ = [
    "ACCEPTS",
    "TRANSITIONS",
    "Stateful",
    "Activity",
    "Event",
    "Role",
    "ConnectionState",
    "next_state",
    "refusal",
]


class ConnectionState(enum.StrEnum):
    """Where a `Client` or `Server` is in its connection's life (a ``str``:
    ``server.state == "ready"``)."""

    NEW = "new"
    """Created (or, a Client, reconnected): only ``connection/initialize``."""
    INITIALIZING = "initializing"
    """A Client's ``connection/initialize`` handed out, its result awaited."""
    READY = "ready"
    """Initialized: methods of the negotiated groups may be used."""
    DISCONNECTED = "disconnected"
    """The transport closed; a Client's ``reconnect()`` starts a new connection."""


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


class Event(enum.Enum):
    """What moves a state."""

    SEND_INITIALIZE = "send_initialize"
    INITIALIZED = "initialized"
    INITIALIZE_FAILED = "initialize_failed"
    DISCONNECT = "disconnect"
    RECONNECT = "reconnect"


class Activity(enum.Enum):
    """What a caller or a peer asks a connection to do."""

    # Members are singletons compared by identity: hashed in C (Enum's own
    # __hash__ is a Python call, on every message's permission check).
    __hash__ = object.__hash__

    INITIALIZE = "initialize"
    """Send (Client) or answer (Server) ``connection/initialize``."""
    EXCHANGE = "exchange"
    """Requests, responses and notifications of the negotiated groups."""
    RECONNECT = "reconnect"
    """A Client's ``reconnect()``."""
    TRAFFIC = "traffic"
    """Take a message from the peer, or answer one it sent (the message's
    own checks decide the rest): anything but a closed connection."""


_C, _S = Role.CLIENT, Role.SERVER
_NEW, _INITIALIZING, _READY, _DISCONNECTED = ConnectionState

#: Every legal move; a missing entry is an illegal one.
TRANSITIONS: Final[Mapping[tuple[Role, ConnectionState, Event], ConnectionState]] = (
    MappingProxyType(
        {
            (_C, _NEW, Event.SEND_INITIALIZE): _INITIALIZING,
            (_C, _INITIALIZING, Event.INITIALIZED): _READY,
            (_C, _INITIALIZING, Event.INITIALIZE_FAILED): _NEW,
            (_C, _DISCONNECTED, Event.RECONNECT): _NEW,
            (_S, _NEW, Event.INITIALIZED): _READY,
            **{
                (role, state, Event.DISCONNECT): _DISCONNECTED
                for role in Role
                for state in ConnectionState
                if (role, state) != (_S, _INITIALIZING)
            },
        }
    )
)

#: What each state accepts.
ACCEPTS: Final[Mapping[tuple[Role, ConnectionState], frozenset[Activity]]] = (
    MappingProxyType(
        {
            (_C, _NEW): frozenset({Activity.INITIALIZE, Activity.TRAFFIC}),
            (_C, _INITIALIZING): frozenset({Activity.TRAFFIC}),
            (_C, _READY): frozenset({Activity.EXCHANGE, Activity.TRAFFIC}),
            (_C, _DISCONNECTED): frozenset({Activity.RECONNECT}),
            (_S, _NEW): frozenset({Activity.INITIALIZE, Activity.TRAFFIC}),
            (_S, _READY): frozenset({Activity.EXCHANGE, Activity.TRAFFIC}),
            (_S, _DISCONNECTED): frozenset(),
        }
    )
)


def next_state(role: Role, state: ConnectionState, event: Event) -> ConnectionState:
    """The state after ``event``.

    Raises:
        RuntimeError: the move is not in the table (a bug of this library:
            every caller asks :func:`refusal` first).
    """
    moved = TRANSITIONS.get((role, state, event))
    if moved is None:
        raise RuntimeError(f"illegal move of a {role.value}: {event.value} in {state}")
    return moved


def refusal(
    role: Role,
    state: ConnectionState,
    activity: Activity,
    what: str,
    origin: Origin = "local",
) -> ProtocolError | None:
    """``None`` when ``state`` accepts ``activity``; else the error saying
    why ``what`` cannot be done now: ``disconnected`` once the connection is
    closed (always ``local``: the caller's connection, not the peer's
    message), ``already_initialized`` for a second initialize,
    ``not_initialized`` otherwise (with ``origin``: ``peer`` when the peer
    sent ``what`` too early)."""
    if activity in ACCEPTS[(role, state)]:
        return None
    if state is _DISCONNECTED:
        return ProtocolError(
            ErrorCode.DISCONNECTED, "the connection is closed; reconnect first"
        )
    if activity is Activity.INITIALIZE:
        return ProtocolError(
            ErrorCode.ALREADY_INITIALIZED,
            f"{what}: the connection is already initialized (or initializing)",
            origin=origin,
        )
    if activity is Activity.RECONNECT:
        return ProtocolError(
            ErrorCode.NOT_INITIALIZED,
            f"{what} requires a disconnected client; call disconnect() first",
            origin=origin,
        )
    return ProtocolError(
        ErrorCode.NOT_INITIALIZED,
        f"{what} needs an initialized connection (connection/initialize first)",
        origin=origin,
    )


class Stateful:
    """The state of one connection side: `Client` and `Server` derive from
    it. The state and what it accepts change together, only in `_move`
    (this module's tables); `_check` is one set membership on the path
    where the state accepts what is asked."""

    __slots__ = ("_role", "_state", "_accepts")

    def __init__(self, role: Role) -> None:
        self._role = role
        self._state = _NEW
        self._accepts = ACCEPTS[(role, _NEW)]

    @property
    def state(self) -> ConnectionState:
        """Where the connection is in its life (a `ConnectionState`, a
        ``str``: ``state == "ready"``)."""
        return self._state

    def _move(self, event: Event) -> None:
        self._state = state = next_state(self._role, self._state, event)
        self._accepts = ACCEPTS[(self._role, state)]

    def _check(self, activity: Activity, what: str, origin: Origin = "local") -> None:
        if activity not in self._accepts:
            problem = refusal(self._role, self._state, activity, what, origin)
            assert problem is not None
            raise problem
