"""The method table of wire schema 1.0 (docs/protocol.md section 4): each
method's kind, capability group, direction, whether it is a mutation, and
its params and result Structs (``_params``); what every other module reads
about a method."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

import msgspec

from . import _params
from ._options import known_name

__all__ = [
    "CAPABILITY_GROUPS",
    "METHODS",
    "MethodSpec",
    "method_spec",
    "request_methods",
]

# -- the method table ------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MethodSpec:
    """The facts of one method: how it travels (``kind``), its capability
    group (``None`` for ``connection/initialize``), its normal ``direction``
    (who sends it), whether it is a mutation (``command_id`` required) and
    its params and result Struct types (``result`` is ``None`` for a
    notification)."""

    name: str
    kind: Literal["request", "notification"]
    group: str | None
    direction: Literal["client", "server", "either"]
    mutation: bool
    params: type[msgspec.Struct]
    result: type[msgspec.Struct] | None


def _request(
    name: str,
    group: str | None,
    params: type[msgspec.Struct],
    result: type[msgspec.Struct],
    *,
    mutation: bool,
    direction: Literal["client", "server", "either"] = "client",
) -> MethodSpec:
    return MethodSpec(
        name=name,
        kind="request",
        group=group,
        direction=direction,
        mutation=mutation,
        params=params,
        result=result,
    )


def _notification(name: str, group: str, params: type[msgspec.Struct]) -> MethodSpec:
    return MethodSpec(
        name=name,
        kind="notification",
        group=group,
        direction="server",
        mutation=False,
        params=params,
        result=None,
    )


_EVENTS = "project_events.v1"
_SESSIONS = "sessions.v1"
_STREAMING = "streaming.v1"
_APPROVALS = "approvals.v1"
_CANCELLATION = "cancellation.v1"

METHODS: Final[Mapping[str, MethodSpec]] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            _request(
                "connection/initialize",
                None,
                _params.InitializeParams,
                _params.InitializeResult,
                mutation=False,
            ),
            _request(
                "project/event.receive",
                _EVENTS,
                _params.EventReceiveParams,
                _params.EventReceiveResult,
                mutation=True,
            ),
            _request(
                "project/event.status",
                _EVENTS,
                _params.EventStatusParams,
                _params.EventStatusResult,
                mutation=False,
            ),
            _request(
                "project/event.report",
                _EVENTS,
                _params.EventReportParams,
                _params.EventReportResult,
                mutation=True,
            ),
            _request(
                "thread/start",
                _SESSIONS,
                _params.ThreadStartParams,
                _params.ThreadStartResult,
                mutation=True,
            ),
            _request(
                "thread/read",
                _SESSIONS,
                _params.ThreadReadParams,
                _params.ThreadReadResult,
                mutation=False,
            ),
            _request(
                "thread/resume",
                _SESSIONS,
                _params.ThreadResumeParams,
                _params.ThreadResumeResult,
                mutation=True,
            ),
            _request(
                "turn/start",
                _SESSIONS,
                _params.TurnStartParams,
                _params.TurnStartResult,
                mutation=True,
            ),
            _request(
                "turn/steer",
                _SESSIONS,
                _params.TurnSteerParams,
                _params.TurnSteerResult,
                mutation=True,
            ),
            _request(
                "turn/interrupt",
                _SESSIONS,
                _params.TurnInterruptParams,
                _params.TurnInterruptResult,
                mutation=True,
            ),
            _notification("thread/started", _SESSIONS, _params.ThreadStartedParams),
            _notification("thread/closed", _SESSIONS, _params.ThreadClosedParams),
            _notification("turn/started", _SESSIONS, _params.TurnStartedParams),
            _notification("turn/completed", _SESSIONS, _params.TurnCompletedParams),
            _notification("item/started", _STREAMING, _params.ItemStartedParams),
            _notification("item/delta", _STREAMING, _params.ItemDeltaParams),
            _notification("item/completed", _STREAMING, _params.ItemCompletedParams),
            _request(
                "stream/resume",
                _STREAMING,
                _params.StreamResumeParams,
                _params.StreamResumeResult,
                mutation=False,
            ),
            _request(
                "approval/request",
                _APPROVALS,
                _params.ApprovalRequestParams,
                _params.ApprovalRequestResult,
                mutation=False,
                direction="either",
            ),
            _request(
                "request/cancel",
                _CANCELLATION,
                _params.CancelParams,
                _params.CancelResult,
                mutation=False,
                direction="either",
            ),
        )
    }
)
"""Every method of wire schema 1.0 by name, in documentation order (read-only)."""

CAPABILITY_GROUPS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        group: frozenset(name for name, spec in METHODS.items() if spec.group == group)
        for group in (_EVENTS, _SESSIONS, _STREAMING, _APPROVALS, _CANCELLATION)
    }
)
"""Each defined capability group and its request and notification methods."""


def request_methods(group: str) -> frozenset[str]:
    """The request methods of a capability group (what a handler advertising
    that group must implement).

    Raises:
        TypeError: ``group`` is not a string.
        ValueError: ``group`` is not a defined capability group (the
            message lists them).
    """
    known_name("group", group, CAPABILITY_GROUPS, "capability group")
    return frozenset(
        name for name in CAPABILITY_GROUPS[group] if METHODS[name].kind == "request"
    )


#: The method names of each kind, for refusing a caller's unknown one.
_KINDS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        kind: frozenset(name for name, spec in METHODS.items() if spec.kind == kind)
        for kind in ("request", "notification")
    }
)


def method_spec(
    name: str, value: object, kind: Literal["request", "notification"]
) -> MethodSpec:
    """The spec of the method a caller named in argument ``name``: a
    ``TypeError`` when ``value`` is not a string, a ``ValueError`` (listing
    the defined ones) when it is not a defined method of ``kind``. For
    method names given to the Python API; a method name in a message is
    checked by the codec (``unknown_method``)."""
    return METHODS[known_name(name, value, _KINDS[kind], f"{kind} method")]
