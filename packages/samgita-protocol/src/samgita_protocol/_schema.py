"""The executable wire schema 1.0: msgspec Structs and the method table.

Every envelope, error object, params and result object of docs/protocol.md
sections 2, 4 and 5 is a frozen ``msgspec.Struct`` that forbids unknown
fields. Optional wire fields default to ``msgspec.UNSET`` and are absent on
the wire when unset (never ``null``), so presence round-trips. The envelopes
are tagged by ``type``. ``omit_defaults`` is not used: every optional field
is ``UNSET`` (always omitted), and omitting defaults would drop the required
``schema_version`` (whose only value is its default) from the wire.

What the Structs cannot express, the codec checks (docs/protocol.md
section 12): identity lengths in UTF-8 bytes, calendar validity of
timestamps, ``task_ref`` requiring ``project_ref``, presence of
``schema_version``, per-method ``command_id``, paired ``stream_id`` /
``cursor`` and exactly one of ``result`` / ``error``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ._error_codes import ErrorCode
from ._options import MAX_ID_BYTES, known_name, wrong_type

__all__ = [
    "CAPABILITY_GROUPS",
    "METHODS",
    "SCHEMA_VERSION",
    "UNSET",
    "Action",
    "ApprovalRequestParams",
    "ApprovalRequestResult",
    "CancelParams",
    "CancelResult",
    "ErrorObject",
    "Event",
    "EventReceiveParams",
    "EventReceiveResult",
    "EventReportParams",
    "EventReportResult",
    "EventStatusParams",
    "EventStatusResult",
    "InitializeParams",
    "InitializeResult",
    "InputItem",
    "Item",
    "ItemCompletedParams",
    "ItemDeltaParams",
    "ItemStartedParams",
    "ManagementRequest",
    "Message",
    "MethodSpec",
    "Notification",
    "Request",
    "Response",
    "StreamResumeParams",
    "StreamResumeResult",
    "Thread",
    "ThreadClosedParams",
    "ThreadReadParams",
    "ThreadReadResult",
    "ThreadResumeParams",
    "ThreadResumeResult",
    "ThreadStartParams",
    "ThreadStartResult",
    "ThreadStartedParams",
    "Turn",
    "TurnCompletedParams",
    "TurnInterruptParams",
    "TurnInterruptResult",
    "TurnStartParams",
    "TurnStartResult",
    "TurnStartedParams",
    "TurnSteerParams",
    "TurnSteerResult",
    "method_spec",
    "request_methods",
    "response_to",
]

SCHEMA_VERSION: Final = "1.0"
"""The native wire schema version; independent of package versions."""


# -- primitive types (docs/protocol.md section 5, "Primitive types") ---------

Id: TypeAlias = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_ID_BYTES,
        description="An opaque identity: a string of 1 to 256 UTF-8 bytes "
        "(maxLength counts code points; the byte bound is checked at runtime).",
    ),
]
Text: TypeAlias = Annotated[
    str, Meta(description="Any string (bounded by the message size).")
]
Timestamp: TypeAlias = Annotated[
    str,
    Meta(
        pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$",
        description="A UTC ISO-8601 timestamp YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z "
        "naming a real calendar date and time (checked at runtime).",
    ),
]
MAX_CURSOR: Final = 2**53 - 1
"""The largest cursor or stream position: JavaScript's largest safe integer,
so JSON peers that parse numbers as doubles read every cursor exactly."""

Cursor: TypeAlias = Annotated[
    int,
    Meta(
        ge=0,
        le=MAX_CURSOR,
        description="A resume position: an integer from 0 to 2^53 - 1.",
    ),
]
Position: TypeAlias = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_CURSOR,
        description="A stream sequence number: an integer from 1 to 2^53 - 1.",
    ),
]
FreeForm: TypeAlias = Annotated[
    dict[str, Any], Meta(description="A free-form JSON object (host payload).")
]

if TYPE_CHECKING:
    # For type checkers a payload is whatever the caller put there (a params
    # or result Struct); at runtime the envelope decoder keeps it as raw JSON
    # bytes (`msgspec.Raw`) until the method's own decoder has read it.
    _Payload: TypeAlias = Any
else:
    _Payload = msgspec.Raw


# -- shared definitions (section 5) ------------------------------------------


class Event(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A project event (one delivery attempt of it).

    ``event_id``, ``created_at``, ``correlation_id``, ``causation_id``, the
    refs, ``event_type`` and ``payload`` are the original event and never
    change across deliveries; ``delivery_attempt_id`` is fresh for each
    attempt. ``task_ref`` requires ``project_ref``.
    """

    event_id: Id
    delivery_attempt_id: Id
    created_at: Timestamp
    correlation_id: Id
    event_type: Id
    payload: FreeForm
    causation_id: Id | UnsetType = UNSET
    project_ref: Id | UnsetType = UNSET
    task_ref: Id | UnsetType = UNSET

    def retry(self, new_attempt_id: str) -> Event:
        """The same event for a new delivery attempt: every field except
        ``delivery_attempt_id`` is preserved. Raises nothing (the new ID is
        validated when the request carrying the event is encoded)."""
        return msgspec.structs.replace(self, delivery_attempt_id=new_attempt_id)


class Thread(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """An execution thread."""

    thread_id: Id
    status: Literal["idle", "active", "closed"]
    created_at: Timestamp


class Turn(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One turn of a thread."""

    turn_id: Id
    thread_id: Id
    status: Literal["in_progress", "completed", "interrupted", "failed"]


class Item(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One item of a turn (message, tool call, ...); ``type`` is opaque."""

    item_id: Id
    type: Id
    text: Text | UnsetType = UNSET
    status: Literal["completed", "failed"] | UnsetType = UNSET


class InputItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One input item of ``turn/start`` / ``turn/steer``."""

    type: Literal["text"]
    text: Text


class Action(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The action an ``approval/request`` asks to approve or deny."""

    kind: Id
    description: Text
    details: FreeForm | UnsetType = UNSET


class ManagementRequest(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """A requested management transition of the Project/Task."""

    transition: Id
    reason: Text | UnsetType = UNSET


class ErrorObject(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """A typed error: ``code`` is a defined error code (docs/protocol.md
    section 7); ``data`` holds only protocol facts, never secrets."""

    code: ErrorCode
    message: Text
    data: FreeForm | UnsetType = UNSET


# -- envelopes (section 2) -----------------------------------------------------


class Request(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="type",
    tag="request",
):
    """A request; expects exactly one response with the same ``id``.

    ``schema_version`` is required on the wire (the Python default only saves
    callers typing it). ``command_id`` is required on mutations and forbidden
    on other methods; ``task_ref`` requires ``project_ref``. After ``decode``,
    ``params`` is the method's params Struct.
    """

    schema_version: Literal["1.0"] = "1.0"
    method: Id
    id: Id
    correlation_id: Id
    params: _Payload
    command_id: Id | UnsetType = UNSET
    causation_id: Id | UnsetType = UNSET
    project_ref: Id | UnsetType = UNSET
    task_ref: Id | UnsetType = UNSET

    @property
    def type(self) -> Literal["request"]:
        """The message kind (the wire ``type`` tag)."""
        return "request"


class Response(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="type",
    tag="response",
):
    """A response: exactly one of an object ``result`` or a typed ``error``.

    ``schema_version`` is required on the wire. The identity fields echo the
    request's exactly. After ``decode``, ``result`` is the raw JSON
    (``msgspec.Raw``) of an object, validated against the pending request
    with ``decode_result``; built locally it is the method's result Struct.
    """

    schema_version: Literal["1.0"] = "1.0"
    id: Id
    correlation_id: Id
    command_id: Id | UnsetType = UNSET
    causation_id: Id | UnsetType = UNSET
    project_ref: Id | UnsetType = UNSET
    task_ref: Id | UnsetType = UNSET
    result: _Payload | UnsetType = UNSET
    error: ErrorObject | UnsetType = UNSET

    @property
    def type(self) -> Literal["response"]:
        """The message kind (the wire ``type`` tag)."""
        return "response"


class Notification(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="type",
    tag="notification",
):
    """A notification; gets no response.

    ``schema_version`` is required on the wire. ``stream_id`` and ``cursor``
    appear together (a replayable notification) or not at all (ephemeral);
    ``task_ref`` requires ``project_ref``. After ``decode``, ``params`` is the
    method's params Struct.
    """

    schema_version: Literal["1.0"] = "1.0"
    method: Id
    params: _Payload
    stream_id: Id | UnsetType = UNSET
    cursor: Position | UnsetType = UNSET
    correlation_id: Id | UnsetType = UNSET
    causation_id: Id | UnsetType = UNSET
    project_ref: Id | UnsetType = UNSET
    task_ref: Id | UnsetType = UNSET

    @property
    def type(self) -> Literal["notification"]:
        """The message kind (the wire ``type`` tag)."""
        return "notification"


Message: TypeAlias = Request | Response | Notification
"""Any native message."""

# -- methods (section 4) ---------------------------------------------------------

_Versions = Annotated[list[Id], Meta(min_length=1, max_length=16)]
_Groups = Annotated[list[Id], Meta(min_length=0, max_length=16)]
_Input = Annotated[list[InputItem], Meta(min_length=1, max_length=64)]
_Acceptance = Literal["received", "durable"]
_ProcessingStatus = Literal["pending", "processing", "completed", "failed", "rejected"]


class InitializeParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``connection/initialize`` params: offered versions and groups."""

    versions: _Versions
    capabilities: _Groups
    required_capabilities: _Groups | UnsetType = UNSET


class InitializeResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``connection/initialize`` result: the selected version, the supported
    intersection of groups, the connection's and the host's identity."""

    version: Id
    capabilities: _Groups
    connection_id: Id
    host_id: Id


class EventReceiveParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.receive`` params: one delivery attempt of an event."""

    event: Event


class EventReceiveResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.receive`` result; echoes the event's identities."""

    event_id: Id
    delivery_attempt_id: Id
    acceptance: _Acceptance
    processing_status: _ProcessingStatus


class EventStatusParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.status`` params."""

    event_id: Id


class EventStatusResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.status`` result."""

    event_id: Id
    acceptance: _Acceptance
    processing_status: _ProcessingStatus


class EventReportParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.report`` params: a decision or result for an event."""

    event_id: Id
    outcome: Literal["completed", "failed", "rejected"]
    summary: Text
    details: FreeForm | UnsetType = UNSET
    management_request: ManagementRequest | UnsetType = UNSET


class EventReportResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``project/event.report`` result."""

    event_id: Id
    report_status: Literal["recorded"]
    management_acceptance: Literal["accepted", "rejected", "not_requested"]


class ThreadStartParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/start`` params."""

    instructions: Text | UnsetType = UNSET
    metadata: FreeForm | UnsetType = UNSET


class ThreadStartResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/start`` result."""

    thread: Thread


class ThreadReadParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/read`` params."""

    thread_id: Id


class ThreadReadResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/read`` result: the thread and up to 256 turns."""

    thread: Thread
    turns: Annotated[list[Turn], Meta(min_length=0, max_length=256)]


class ThreadResumeParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/resume`` params."""

    thread_id: Id


class ThreadResumeResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/resume`` result."""

    thread: Thread


class TurnStartParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/start`` params: 1 to 64 input items."""

    thread_id: Id
    input: _Input


class TurnStartResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/start`` result."""

    turn: Turn


class TurnSteerParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/steer`` params: input added to a turn in progress."""

    thread_id: Id
    turn_id: Id
    input: _Input


class TurnSteerResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/steer`` result."""

    turn: Turn


class TurnInterruptParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/interrupt`` params."""

    thread_id: Id
    turn_id: Id


class TurnInterruptResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/interrupt`` result."""

    thread_id: Id
    turn_id: Id
    interrupt_status: Literal["requested", "interrupted", "already_finished"]


class ThreadStartedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/started`` notification params."""

    thread: Thread


class ThreadClosedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``thread/closed`` notification params."""

    thread_id: Id


class TurnStartedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/started`` notification params."""

    turn: Turn


class TurnCompletedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``turn/completed`` notification params."""

    turn: Turn


class ItemStartedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``item/started`` notification params."""

    thread_id: Id
    turn_id: Id
    item: Item


class ItemDeltaParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``item/delta`` notification params: one generic delta of an item."""

    thread_id: Id
    turn_id: Id
    item_id: Id
    delta: Text


class ItemCompletedParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``item/completed`` notification params."""

    thread_id: Id
    turn_id: Id
    item: Item


class StreamResumeParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``stream/resume`` params: the last processed cursor (0 = from the start)."""

    stream_id: Id
    cursor: Cursor


class StreamResumeResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``stream/resume`` result: up to 128 complete notification envelopes
    after the requested cursor; ``cursor`` is the last event's (or the
    requested one when empty)."""

    stream_id: Id
    cursor: Cursor
    events: Annotated[list[Notification], Meta(min_length=0, max_length=128)]
    has_more: bool


class ApprovalRequestParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``approval/request`` params: one action to approve or deny before
    ``deadline``."""

    approval_id: Id
    action: Action
    deadline: Timestamp
    thread_id: Id | UnsetType = UNSET
    turn_id: Id | UnsetType = UNSET
    reason: Text | UnsetType = UNSET


class ApprovalRequestResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``approval/request`` result, bound to the requested approval and action."""

    approval_id: Id
    action: Action
    decision: Literal["approve", "deny"]
    reason: Text | UnsetType = UNSET


class CancelParams(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``request/cancel`` params."""

    request_id: Id
    reason: Text | UnsetType = UNSET


class CancelResult(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """``request/cancel`` result."""

    request_id: Id
    cancel_status: Literal["requested", "already_finished"]


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
                InitializeParams,
                InitializeResult,
                mutation=False,
            ),
            _request(
                "project/event.receive",
                _EVENTS,
                EventReceiveParams,
                EventReceiveResult,
                mutation=True,
            ),
            _request(
                "project/event.status",
                _EVENTS,
                EventStatusParams,
                EventStatusResult,
                mutation=False,
            ),
            _request(
                "project/event.report",
                _EVENTS,
                EventReportParams,
                EventReportResult,
                mutation=True,
            ),
            _request(
                "thread/start",
                _SESSIONS,
                ThreadStartParams,
                ThreadStartResult,
                mutation=True,
            ),
            _request(
                "thread/read",
                _SESSIONS,
                ThreadReadParams,
                ThreadReadResult,
                mutation=False,
            ),
            _request(
                "thread/resume",
                _SESSIONS,
                ThreadResumeParams,
                ThreadResumeResult,
                mutation=True,
            ),
            _request(
                "turn/start", _SESSIONS, TurnStartParams, TurnStartResult, mutation=True
            ),
            _request(
                "turn/steer", _SESSIONS, TurnSteerParams, TurnSteerResult, mutation=True
            ),
            _request(
                "turn/interrupt",
                _SESSIONS,
                TurnInterruptParams,
                TurnInterruptResult,
                mutation=True,
            ),
            _notification("thread/started", _SESSIONS, ThreadStartedParams),
            _notification("thread/closed", _SESSIONS, ThreadClosedParams),
            _notification("turn/started", _SESSIONS, TurnStartedParams),
            _notification("turn/completed", _SESSIONS, TurnCompletedParams),
            _notification("item/started", _STREAMING, ItemStartedParams),
            _notification("item/delta", _STREAMING, ItemDeltaParams),
            _notification("item/completed", _STREAMING, ItemCompletedParams),
            _request(
                "stream/resume",
                _STREAMING,
                StreamResumeParams,
                StreamResumeResult,
                mutation=False,
            ),
            _request(
                "approval/request",
                _APPROVALS,
                ApprovalRequestParams,
                ApprovalRequestResult,
                mutation=False,
                direction="either",
            ),
            _request(
                "request/cancel",
                _CANCELLATION,
                CancelParams,
                CancelResult,
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


def response_to(
    request: Request, *, result: Any = UNSET, error: Any = UNSET
) -> Response:
    """The response answering ``request``: its ``id``, and its
    ``correlation_id``, ``command_id``, ``causation_id``, ``project_ref`` and
    ``task_ref`` echoed exactly (what the peer checks: otherwise
    ``mismatched_response``), with ``result`` (the method's result Struct)
    or ``error`` (an ``ErrorObject``, e.g. ``ProtocolError.to_wire()``).
    Nothing else is validated here: ``encode`` (or ``encode_response``,
    which also checks the result against the method) refuses a response
    with both or neither.

    Raises:
        TypeError: ``request`` is not a `Request`.
    """
    try:
        return Response(
            id=request.id,
            correlation_id=request.correlation_id,
            command_id=request.command_id,
            causation_id=request.causation_id,
            project_ref=request.project_ref,
            task_ref=request.task_ref,
            result=result,
            error=error,
        )
    except AttributeError:
        raise wrong_type("request", request, "a Request") from None


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


# -- validation helpers (implemented with the codec's checks) ----------------------
