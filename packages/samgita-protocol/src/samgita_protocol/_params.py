"""The params and result Struct of every method of wire schema 1.0
(docs/protocol.md section 4), each a ``WireStruct`` (frozen, forbidding
unknown fields) like the envelopes in ``_schema``; ``_methods`` ties each to
its method. Every Struct here is public: ``samgita_protocol.__all__`` is the
one list of them."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from msgspec import UNSET, Meta, UnsetType

from ._schema import (
    Action,
    Cursor,
    Event,
    FreeForm,
    Id,
    InputItem,
    Item,
    ManagementRequest,
    Notification,
    Text,
    Thread,
    Timestamp,
    Turn,
    WireStruct,
)

# -- methods (section 4) ---------------------------------------------------------

_Versions = Annotated[list[Id], Meta(min_length=1, max_length=16)]
_Groups = Annotated[list[Id], Meta(min_length=0, max_length=16)]
_Input = Annotated[list[InputItem], Meta(min_length=1, max_length=64)]
_Acceptance = Literal["received", "durable"]
_ProcessingStatus = Literal["pending", "processing", "completed", "failed", "rejected"]


class InitializeParams(WireStruct, frozen=True, kw_only=True):
    """``connection/initialize`` params: offered versions and groups."""

    versions: _Versions
    capabilities: _Groups
    required_capabilities: _Groups | UnsetType = UNSET


class InitializeResult(WireStruct, frozen=True, kw_only=True):
    """``connection/initialize`` result: the selected version, the supported
    intersection of groups, the connection's and the host's identity."""

    version: Id
    capabilities: _Groups
    connection_id: Id
    host_id: Id


class EventReceiveParams(WireStruct, frozen=True, kw_only=True):
    """``project/event.receive`` params: one delivery attempt of an event."""

    event: Event


class EventReceiveResult(WireStruct, frozen=True, kw_only=True):
    """``project/event.receive`` result; echoes the event's identities."""

    event_id: Id
    delivery_attempt_id: Id
    acceptance: _Acceptance
    processing_status: _ProcessingStatus


class EventStatusParams(WireStruct, frozen=True, kw_only=True):
    """``project/event.status`` params."""

    event_id: Id


class EventStatusResult(WireStruct, frozen=True, kw_only=True):
    """``project/event.status`` result."""

    event_id: Id
    acceptance: _Acceptance
    processing_status: _ProcessingStatus


class EventReportParams(WireStruct, frozen=True, kw_only=True):
    """``project/event.report`` params: a decision or result for an event."""

    event_id: Id
    outcome: Literal["completed", "failed", "rejected"]
    summary: Text
    details: FreeForm | UnsetType = UNSET
    management_request: ManagementRequest | UnsetType = UNSET


class EventReportResult(WireStruct, frozen=True, kw_only=True):
    """``project/event.report`` result."""

    event_id: Id
    report_status: Literal["recorded"]
    management_acceptance: Literal["accepted", "rejected", "not_requested"]


class ThreadStartParams(WireStruct, frozen=True, kw_only=True):
    """``thread/start`` params."""

    instructions: Text | UnsetType = UNSET
    metadata: FreeForm | UnsetType = UNSET


class ThreadStartResult(WireStruct, frozen=True, kw_only=True):
    """``thread/start`` result."""

    thread: Thread


class ThreadReadParams(WireStruct, frozen=True, kw_only=True):
    """``thread/read`` params."""

    thread_id: Id


class ThreadReadResult(WireStruct, frozen=True, kw_only=True):
    """``thread/read`` result: the thread and up to 256 turns."""

    thread: Thread
    turns: Annotated[list[Turn], Meta(min_length=0, max_length=256)]


class ThreadResumeParams(WireStruct, frozen=True, kw_only=True):
    """``thread/resume`` params."""

    thread_id: Id


class ThreadResumeResult(WireStruct, frozen=True, kw_only=True):
    """``thread/resume`` result."""

    thread: Thread


class TurnStartParams(WireStruct, frozen=True, kw_only=True):
    """``turn/start`` params: 1 to 64 input items."""

    thread_id: Id
    input: _Input


class TurnStartResult(WireStruct, frozen=True, kw_only=True):
    """``turn/start`` result."""

    turn: Turn


class TurnSteerParams(WireStruct, frozen=True, kw_only=True):
    """``turn/steer`` params: input added to a turn in progress."""

    thread_id: Id
    turn_id: Id
    input: _Input


class TurnSteerResult(WireStruct, frozen=True, kw_only=True):
    """``turn/steer`` result."""

    turn: Turn


class TurnInterruptParams(WireStruct, frozen=True, kw_only=True):
    """``turn/interrupt`` params."""

    thread_id: Id
    turn_id: Id


class TurnInterruptResult(WireStruct, frozen=True, kw_only=True):
    """``turn/interrupt`` result."""

    thread_id: Id
    turn_id: Id
    interrupt_status: Literal["requested", "interrupted", "already_finished"]


class ThreadStartedParams(WireStruct, frozen=True, kw_only=True):
    """``thread/started`` notification params."""

    thread: Thread


class ThreadClosedParams(WireStruct, frozen=True, kw_only=True):
    """``thread/closed`` notification params."""

    thread_id: Id


class TurnStartedParams(WireStruct, frozen=True, kw_only=True):
    """``turn/started`` notification params."""

    turn: Turn


class TurnCompletedParams(WireStruct, frozen=True, kw_only=True):
    """``turn/completed`` notification params."""

    turn: Turn


class ItemStartedParams(WireStruct, frozen=True, kw_only=True):
    """``item/started`` notification params."""

    thread_id: Id
    turn_id: Id
    item: Item


class ItemDeltaParams(WireStruct, frozen=True, kw_only=True):
    """``item/delta`` notification params: one generic delta of an item."""

    thread_id: Id
    turn_id: Id
    item_id: Id
    delta: Text


class ItemCompletedParams(WireStruct, frozen=True, kw_only=True):
    """``item/completed`` notification params."""

    thread_id: Id
    turn_id: Id
    item: Item


class StreamResumeParams(WireStruct, frozen=True, kw_only=True):
    """``stream/resume`` params: the last processed cursor (0 = from the start)."""

    stream_id: Id
    cursor: Cursor


#: The most events a ``stream/resume`` page carries (its ``maxItems``; a
#: `Replay` page).
PAGE_SIZE: Final = 128


class StreamResumeResult(WireStruct, frozen=True, kw_only=True):
    """``stream/resume`` result: up to 128 complete notification envelopes
    after the requested cursor; ``cursor`` is the last event's (or the
    requested one when empty)."""

    stream_id: Id
    cursor: Cursor
    events: Annotated[list[Notification], Meta(min_length=0, max_length=PAGE_SIZE)]
    has_more: bool


class ApprovalRequestParams(WireStruct, frozen=True, kw_only=True):
    """``approval/request`` params: one action to approve or deny before
    ``deadline``."""

    approval_id: Id
    action: Action
    deadline: Timestamp
    thread_id: Id | UnsetType = UNSET
    turn_id: Id | UnsetType = UNSET
    reason: Text | UnsetType = UNSET


class ApprovalRequestResult(WireStruct, frozen=True, kw_only=True):
    """``approval/request`` result, bound to the requested approval and action."""

    approval_id: Id
    action: Action
    decision: Literal["approve", "deny"]
    reason: Text | UnsetType = UNSET


class CancelParams(WireStruct, frozen=True, kw_only=True):
    """``request/cancel`` params."""

    request_id: Id
    reason: Text | UnsetType = UNSET


class CancelResult(WireStruct, frozen=True, kw_only=True):
    """``request/cancel`` result."""

    request_id: Id
    cancel_status: Literal["requested", "already_finished"]
