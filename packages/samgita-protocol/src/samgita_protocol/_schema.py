"""The executable wire schema 1.0: primitive types, shared definitions and
envelopes (the methods' params and results are in ``_params``, the method
table in ``_methods``).

Every envelope, error object, params and result object of docs/protocol.md
sections 2, 4 and 5 is a :class:`WireStruct`: a frozen ``msgspec.Struct``
that forbids unknown fields. Optional wire fields default to
``msgspec.UNSET`` and are absent on the wire when unset (never ``null``), so
presence round-trips. The envelopes are tagged by ``type``.
``omit_defaults`` is not used: every optional field is ``UNSET`` (always
omitted), and omitting defaults would drop the required ``schema_version``
(whose only value is its default) from the wire.

What the Structs cannot express, the codec checks (docs/protocol.md
section 12): identity lengths in UTF-8 bytes, calendar validity of
timestamps, ``task_ref`` requiring ``project_ref``, presence of
``schema_version``, per-method ``command_id``, paired ``stream_id`` /
``cursor`` and exactly one of ``result`` / ``error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, Meta, UnsetType

from ._error_codes import ErrorCode
from ._options import MAX_ID_BYTES, wrong_type

__all__ = [
    "SCHEMA_VERSION",
    "UNSET",
    "Action",
    "ErrorObject",
    "Event",
    "InputItem",
    "Item",
    "ManagementRequest",
    "Message",
    "Notification",
    "Request",
    "Response",
    "Thread",
    "Turn",
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


class WireStruct(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The base of every wire Struct: frozen, refusing unknown fields.

    Each subclass still says ``frozen=True, kw_only=True``: msgspec does not
    inherit ``kw_only`` (built by keyword, a required field may follow an
    optional one), and type checkers do not inherit ``frozen`` (mypy refuses
    a subclass that leaves it out, so none can).
    """


# -- shared definitions (section 5) ------------------------------------------


class Event(WireStruct, frozen=True, kw_only=True):
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


class Thread(WireStruct, frozen=True, kw_only=True):
    """An execution thread."""

    thread_id: Id
    status: Literal["idle", "active", "closed"]
    created_at: Timestamp


class Turn(WireStruct, frozen=True, kw_only=True):
    """One turn of a thread."""

    turn_id: Id
    thread_id: Id
    status: Literal["in_progress", "completed", "interrupted", "failed"]


class Item(WireStruct, frozen=True, kw_only=True):
    """One item of a turn (message, tool call, ...); ``type`` is opaque."""

    item_id: Id
    type: Id
    text: Text | UnsetType = UNSET
    status: Literal["completed", "failed"] | UnsetType = UNSET


class InputItem(WireStruct, frozen=True, kw_only=True):
    """One input item of ``turn/start`` / ``turn/steer``."""

    type: Literal["text"]
    text: Text


class Action(WireStruct, frozen=True, kw_only=True):
    """The action an ``approval/request`` asks to approve or deny."""

    kind: Id
    description: Text
    details: FreeForm | UnsetType = UNSET


class ManagementRequest(WireStruct, frozen=True, kw_only=True):
    """A requested management transition of the Project/Task."""

    transition: Id
    reason: Text | UnsetType = UNSET


class ErrorObject(WireStruct, frozen=True, kw_only=True):
    """A typed error: ``code`` is a defined error code (docs/protocol.md
    section 7); ``data`` holds only protocol facts, never secrets."""

    code: ErrorCode
    message: Text
    data: FreeForm | UnsetType = UNSET


# -- envelopes (section 2) -----------------------------------------------------


class Request(WireStruct, frozen=True, kw_only=True, tag_field="type", tag="request"):
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


class Response(WireStruct, frozen=True, kw_only=True, tag_field="type", tag="response"):
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
    WireStruct, frozen=True, kw_only=True, tag_field="type", tag="notification"
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
