"""The client side of ``connection/initialize`` (``docs/protocol.md``
section 4): what a `Client` offers (its checked options, and the initialize
params filled from them), the check of the host's result against the offer
and the expected host, and what the negotiated groups open: the request
methods the client may send (with their send plans) and the notifications
it accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from msgspec import UNSET

from ._contract import check_initialize
from ._errors import ErrorCode, ProtocolError
from ._methods import CAPABILITY_GROUPS, METHODS, method_spec
from ._options import known_names
from ._params import InitializeParams, InitializeResult
from ._plans import PLANS, Plan
from ._results import params_of
from ._schema import SCHEMA_VERSION
from ._state import Activity, ConnectionState, Role, refusal
from ._streams import ClientStreams

__all__ = ["INITIALIZE", "Handshake", "Offer", "check_offer", "restored"]

INITIALIZE: Final = "connection/initialize"

_GROUPS: Final = frozenset(CAPABILITY_GROUPS)


class Offer(NamedTuple):
    """What a Client offers, from its options (checked by `check_offer`)."""

    capabilities: tuple[str, ...]
    required: tuple[str, ...]
    versions: tuple[str, ...]


def _groups(name: str, value: object) -> tuple[str, ...]:
    groups = known_names(name, value, _GROUPS, "capability group")
    if len(set(groups)) != len(groups):
        raise ValueError(f"expected {name} without repeated groups, got: {groups!r}")
    return groups


def check_offer(
    capabilities: object, required_capabilities: object, versions: object
) -> Offer:
    """The options ``capabilities``, ``required_capabilities`` and
    ``versions`` of a `Client`, checked.

    Raises:
        TypeError, ValueError: a bad option (the message names it).
    """
    offered = _groups("capabilities", capabilities)
    required = _groups("required_capabilities", required_capabilities)
    if not set(required) <= set(offered):
        raise ValueError(
            "expected required_capabilities to be a subset of capabilities, "
            f"got: {list(required)!r}"
        )
    version_list = known_names(
        "versions", versions, (SCHEMA_VERSION,), "schema version"
    )
    if not version_list:
        raise ValueError(
            f"expected versions to list supported schema versions ([{SCHEMA_VERSION!r}]), "
            f"got: {list(version_list)!r}"
        )
    return Offer(offered, required, version_list)


def _check(state: ConnectionState, activity: Activity, method: str) -> None:
    problem = refusal(Role.CLIENT, state, activity, method)
    if problem is not None:
        raise problem


def restored(checkpoints: object, host_id: str | None) -> Mapping[str, int] | None:
    """The ``checkpoints`` option of a `Client` (they belong to ``host_id``,
    which must be given with them), checked as far as their owner
    (``ClientStreams``) does not.

    Raises:
        TypeError, ValueError: a bad option (the message names it).
    """
    if checkpoints is None:
        return None
    if not isinstance(checkpoints, Mapping):
        raise TypeError(
            "expected checkpoints to be the dict[str, int] of "
            f"Client.checkpoints(), got: {checkpoints!r}"
        )
    if host_id is None:
        raise ValueError("expected host_id to be given with checkpoints, got: None")
    return checkpoints


class Handshake:
    """One Client's negotiation: its ``offered`` options; the ``offer`` in
    flight (``None`` unless initializing); what the host's result settled
    (``negotiated`` groups, ``version``, ``connection_id``: cleared on
    reconnect), the host's ``host_id`` (configured, or learned and kept
    across connections); and what the negotiated groups open, ``lanes``
    (the request methods sendable, with their send plans) and
    ``notifications`` (the notification methods accepted): filled only
    while ready.
    """

    __slots__ = (
        "configured_host",
        "connection_id",
        "host_id",
        "lanes",
        "negotiated",
        "notifications",
        "offer",
        "offered",
        "version",
    )

    def __init__(self, offered: Offer, host_id: str | None) -> None:
        self.offered = offered
        self.configured_host = host_id
        self.host_id = host_id
        self.offer: InitializeParams | None = None
        self.negotiated: frozenset[str] = frozenset()
        self.lanes: dict[str, Plan] = {}
        self.notifications: frozenset[str] = frozenset()
        self.version: str | None = None
        self.connection_id: str | None = None

    def sendable(
        self, method: str, params: object, state: ConnectionState
    ) -> tuple[Any, bool, bool]:
        """A request to send, checked against what the connection allows:
        its params (converted from a mapping; a params Struct is validated
        with the envelope by encode, so it is not converted twice), whether
        it is a mutation, and whether it is ``connection/initialize``.

        Raises:
            as `initialize_params` for a method outside the ``lanes``, and
            the params' own codes (`params_of`).
        """
        try:
            plan = self.lanes.get(method)
        except TypeError:  # unhashable: refused below
            plan = None
        if plan is None:  # connection/initialize, or refused
            return self.initialize_params(method, params, state), False, True
        if type(params) is plan.payload_type:
            return params, plan.mutation, False
        return params_of(method, params, "params"), plan.mutation, False

    def initialize_params(
        self, method: str, params: object, state: ConnectionState
    ) -> InitializeParams:
        """The params of a request to send whose method is outside the
        ``lanes``: only ``connection/initialize`` on a new connection is
        sendable then; its params are the method's Struct, or a mapping
        whose missing ``versions``, ``capabilities`` and
        ``required_capabilities`` are filled from the options.

        Raises:
            TypeError: ``method`` is not a string, or ``params`` neither the
                Struct nor a mapping.
            ValueError: ``method`` is not a defined request method.
            ProtocolError (local): ``disconnected`` (before a bad method),
                ``already_initialized``, ``not_initialized``,
                ``unsupported`` (a group not negotiated, a server-only
                method, an undefined group offered), ``invalid_params`` (a
                required group not offered), the params' schema codes.
        """
        activity = Activity.INITIALIZE if method == INITIALIZE else Activity.EXCHANGE
        if state is ConnectionState.DISCONNECTED:
            _check(state, activity, method)  # disconnected before unknown_method
        spec = METHODS.get(method) if isinstance(method, str) else None
        if spec is None or spec.kind != "request":
            spec = method_spec("method", method, "request")
        _check(state, activity, method)
        if activity is Activity.EXCHANGE:
            # Ready, and not in the lanes (every other sendable method is).
            if spec.group not in self.negotiated:
                raise ProtocolError(
                    ErrorCode.UNSUPPORTED,
                    "the method's capability group was not negotiated",
                    data={"method": method, "group": spec.group},
                )
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "the method is sent by the server only",
                data={"method": method},
            )
        if isinstance(params, Mapping):
            filled = dict(params)
            filled.setdefault("versions", list(self.offered.versions))
            filled.setdefault("capabilities", list(self.offered.capabilities))
            if self.offered.required:
                filled.setdefault("required_capabilities", list(self.offered.required))
            params = filled
        offer = params_of(INITIALIZE, params, "params")
        assert isinstance(offer, InitializeParams)
        caps = list(offer.capabilities)
        if any(c not in _GROUPS for c in caps):
            raise ProtocolError(
                ErrorCode.UNSUPPORTED,
                "only defined capability groups may be advertised",
                data={"capabilities": caps},
            )
        required = (
            []
            if offer.required_capabilities is UNSET
            else list(offer.required_capabilities)
        )
        if any(r not in caps for r in required):
            raise ProtocolError(
                ErrorCode.INVALID_PARAMS,
                "required_capabilities must be among the offered capabilities",
                data={"required_capabilities": required},
            )
        return offer

    def checked(self, outcome: Any, streams: ClientStreams) -> Any:
        """The outcome of the offer in flight: the `InitializeResult`, or the
        `ProtocolError` it ended with (``outcome`` itself when it is one, or
        the result's violation of the offer or of the expected host)."""
        if isinstance(outcome, ProtocolError):
            return outcome
        assert self.offer is not None
        try:
            check_initialize(self.offer, outcome, host_id=self._expected_host(streams))
        except ProtocolError as exc:
            return exc
        return outcome

    def _expected_host(self, streams: ClientStreams) -> str | None:
        # The host_id an initialize result must carry: the configured one,
        # else the learned one while positions or buffered events from that
        # host are held; otherwise any host is accepted.
        if self.configured_host is not None:
            return self.configured_host
        if streams.buffered or streams.checkpoints():
            return self.host_id
        return None

    def settle(self, outcome: InitializeResult | ProtocolError | None) -> None:
        """Ends the offer in flight (cannot fail): a valid result opens what
        it negotiated; an error, or ``None`` (timed out), withdraws the
        offer."""
        if outcome is None or isinstance(outcome, ProtocolError):
            self.offer = None
            return
        negotiated = self.negotiated = frozenset(outcome.capabilities)
        self.lanes = {
            name: PLANS[name]
            for name, spec in METHODS.items()
            if spec.kind == "request"
            and spec.group in negotiated
            and spec.direction != "server"
        }
        self.notifications = frozenset(
            name
            for group in negotiated
            for name in CAPABILITY_GROUPS[group]
            if METHODS[name].kind == "notification"
        )
        self.version = outcome.version
        self.connection_id = outcome.connection_id
        self.host_id = outcome.host_id

    def close(self) -> None:
        """The connection closed: nothing is sendable or accepted."""
        self.lanes = {}
        self.notifications = frozenset()

    def reset(self) -> None:
        """A new connection: nothing negotiated yet (the host stays known)."""
        self.negotiated = frozenset()
        self.notifications = frozenset()
        self.version = None
        self.connection_id = None
        self.offer = None
