"""Sans-IO bridge: native SamgitaProtocol host on one side, a Codex app-server client on the other.

Bytes and envelopes in, :data:`Output` values out; the caller owns both links
(see :mod:`samgita_protocol_codex` for the stdio link). The bridge:

* translates only the rows of :data:`~._table.TRANSLATIONS`; every other
  native method is answered ``unsupported`` naming the method, every other
  Codex server request gets a JSON-RPC error naming it, every other Codex
  notification is counted in :attr:`CodexBridge.unmapped_notifications` and
  surfaced as :class:`CodexUnmapped`;
* numbers its Codex requests itself (0, 1, ...), independent of the native
  ids and of Codex's own server-request ids;
* validates every Codex message it sends against the strict (``outbound``)
  generated types, and every native message it produces with the core
  :func:`~samgita_protocol.encode` (a response translated from a Codex
  result also with :func:`~samgita_protocol.decode_result` of its method);
* checks each Codex line on its bytes before decoding it (size, nesting
  depth, UTF-8, repeated keys: the core's :func:`~samgita_protocol.load_json`
  with Codex's bounds), then decodes it with the tolerant (``inbound``)
  types (a translated notification or a pending request's result in one
  typed decode of the line, anything else with params in a second stage
  from ``msgspec.Raw``); only
  :class:`~samgita_protocol.ProtocolError` (origin ``"peer"``) leaves
  :meth:`CodexBridge.receive_codex`, and on error the bridge is unchanged;
* sequences thread-scoped notifications per Codex thread into a core
  :class:`~samgita_protocol.Replay` with a ``stream_id`` made of the bridge's
  ``instance_id`` and the Codex thread id (unique per bridge instance, so a
  checkpoint from before a restart is ``not_found``), whether or not a native session is connected, so
  ``stream/resume`` is answered after a native reconnect;
* never approves by itself: while no native session is negotiated
  an approval waits, and it is (re-)sent after the next native initialize,
  always as the same request (``approval_id``, ``action`` and ``deadline``
  fixed when Codex asked); once its deadline has passed it is declined to
  Codex instead, never offered again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import secrets
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType
from samgita_protocol import (
    METHODS,
    Action,
    ApprovalRequestParams,
    ApprovalRequestResult,
    ErrorCode,
    ErrorObject,
    InitializeParams,
    InitializeResult,
    Item,
    ItemCompletedParams,
    ItemDeltaParams,
    ItemStartedParams,
    Message,
    Notification,
    ProtocolError,
    Replay,
    Request,
    Response,
    StreamResumeParams,
    Thread,
    ThreadClosedParams,
    ThreadReadParams,
    ThreadReadResult,
    ThreadResumeParams,
    ThreadResumeResult,
    ThreadStartedParams,
    ThreadStartParams,
    ThreadStartResult,
    Turn,
    TurnCompletedParams,
    TurnInterruptParams,
    TurnInterruptResult,
    TurnStartedParams,
    TurnStartParams,
    TurnStartResult,
    TurnSteerParams,
    TurnSteerResult,
    decode_result,
    encode,
    encode_response,
    load_json,
    response_to,
)

from ._checks import (
    check_callable,
    check_line,
    check_positive_int,
    check_positive_timedelta,
    check_text,
    check_wire_id,
    wrong_type,
)
from ._generated import inbound, outbound
from ._methods import request_types
from ._table import (
    CODEX_APPROVAL_REQUESTS,
    CODEX_NOTIFICATIONS,
    NATIVE_REQUESTS,
    SUPPORTED_GROUPS,
)

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "MAX_APPROVALS",
    "MAX_CODEX_DEPTH",
    "MAX_CODEX_LINE_BYTES",
    "MAX_DELTA_CHARS",
    "MAX_ITEM_TEXT_CHARS",
    "MAX_PENDING",
    "MAX_STREAMS",
    "MAX_THREAD_READ_TURNS",
    "MAX_UNMAPPED_METHODS",
    "UNMAPPED_OVERFLOW",
    "ApprovalResolved",
    "BridgeReport",
    "CodexBridge",
    "CodexUnmapped",
    "Output",
    "ToCodex",
    "ToNative",
]

#: Default time a native client has to answer a forwarded approval (the
#: native ``deadline``); Codex itself waits without a bound.
DEFAULT_APPROVAL_TIMEOUT: Final = _dt.timedelta(minutes=5)

#: Deepest container nesting accepted in one Codex line, checked on the
#: bytes before anything decodes them (msgspec recurses per level).
MAX_CODEX_DEPTH: Final = 128
#: Largest Codex line accepted (``message_too_large`` above it).
MAX_CODEX_LINE_BYTES: Final = 64 * 1024 * 1024
#: Default bound of Codex requests in flight (``limit_exceeded`` above it).
MAX_PENDING: Final = 1024
#: Default bound of forwarded, unanswered approvals.
MAX_APPROVALS: Final = 256
#: Default bound of per-thread streams (Replays) the bridge keeps.
MAX_STREAMS: Final = 1024
#: Distinct method keys of :attr:`CodexBridge.unmapped_notifications`; the
#: rest are counted under :data:`UNMAPPED_OVERFLOW`.
MAX_UNMAPPED_METHODS: Final = 256
UNMAPPED_OVERFLOW: Final = "(other)"
#: A Codex delta longer than this many code points becomes several native
#: ``item/delta`` notifications with contiguous cursors (at most 6 bytes a
#: code point when escaped, so each stays well under the 1 MiB message bound).
MAX_DELTA_CHARS: Final = 128 * 1024
#: ``Item.text`` (agent message text, command ``aggregatedOutput``) longer
#: than this is cut to it, followed by :data:`_TRUNCATED` naming the full length.
MAX_ITEM_TEXT_CHARS: Final = 128 * 1024
#: The native ``thread/read`` result holds at most 256 turns: the newest are kept.
MAX_THREAD_READ_TURNS: Final = 256

#: A bridge instance id (``instance_id``): short, and safe inside any id.
_INSTANCE_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")

_TRUNCATED: Final = "\n[samgita bridge: text truncated, {total} code points in Codex]"

#: JSON-RPC "method not found", sent for Codex server requests the bridge refuses.
_METHOD_NOT_FOUND: Final = -32601


class ToCodex(msgspec.Struct, frozen=True, kw_only=True):
    """One JSON line (newline-terminated) to write to the Codex link.

    ``id`` is the JSON-RPC id the line carries, for the caller's own
    correlation and logs: the bridge's id for a request it sends (Codex
    answers with the same id), Codex's id for the bridge's answer to a Codex
    server request, ``None`` for a notification (``initialized``).
    """

    data: bytes
    id: int | str | None = None


class ToNative(msgspec.Struct, frozen=True, kw_only=True):
    """One native envelope to send to the native peer.

    ``data`` is its wire form, produced and validated by the core
    :func:`~samgita_protocol.encode` (for a sequenced notification, the bytes
    its :class:`~samgita_protocol.Replay` validated when appending it): send
    these bytes; encoding ``message`` again gives the same bytes at the cost
    of a second validation.
    """

    message: Message
    data: bytes


class CodexUnmapped(msgspec.Struct, frozen=True, kw_only=True):
    """A Codex notification or server request with no native translation."""

    kind: Literal["notification", "request"]
    method: str


class ApprovalResolved(msgspec.Struct, frozen=True, kw_only=True):
    """Codex settled a forwarded approval itself (``serverRequest/resolved``) or went away."""

    request_id: str


class BridgeReport(msgspec.Struct, frozen=True, kw_only=True):
    """Something the caller must know about that is not a message to send.

    ``kind``:

    * ``invalid_reply``: Codex answered a bridge request with a result that
      does not match the schema or cannot be translated; the native request
      was answered ``invalid_result`` (the Codex link is suspect).
    * ``reinitialize_failed``: the bridge's own re-``initialize`` after
      :meth:`CodexBridge.codex_connected` failed; the Codex link is ``down``
      and the caller should reconnect it.
    * ``undelivered``: a native notification that is not replayable
      (``thread/started``, ``thread/closed``) arrived with no native session
      that negotiated its group; counted in :attr:`CodexBridge.undelivered`.
    * ``truncated``: a Codex result had more than the native schema holds
      (``thread/read`` turns beyond :data:`MAX_THREAD_READ_TURNS`).
    * ``approval_expired``: a forwarded approval's native ``deadline``
      passed before a valid answer (a native ``approve`` at or after it, or
      a native session that initialized only then); it was declined to
      Codex, never re-offered.
    """

    kind: Literal[
        "invalid_reply",
        "reinitialize_failed",
        "undelivered",
        "truncated",
        "approval_expired",
    ]
    method: str
    message: str


Output = ToCodex | ToNative | CodexUnmapped | ApprovalResolved | BridgeReport


class _CodexError(msgspec.Struct, frozen=True):
    code: int
    message: str


class _CodexIn(msgspec.Struct, frozen=True):
    # First decoding stage: the JSON-RPC shape, params/result left raw.
    id: int | str | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: _CodexError | UnsetType = UNSET


_ENVELOPE: Final = msgspec.json.Decoder(_CodexIn)
_ENCODER: Final = msgspec.json.Encoder()
_SORTED: Final = msgspec.json.Encoder(order="sorted")
_STRICT_REQUEST: Final = msgspec.json.Decoder(outbound.ClientRequest)
_STRICT_NOTIFICATION: Final = msgspec.json.Decoder(outbound.ClientNotification)
_CLIENT_TYPES: Final = request_types(inbound.ClientRequest)
_SERVER_TYPES: Final = request_types(inbound.ServerRequest)
#: The Codex requests the bridge sends.
_SENT_METHODS: Final = (
    "initialize",
    "thread/start",
    "thread/read",
    "thread/resume",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
)
_OUTBOUND_REQUESTS: Final = {
    variant.__struct_config__.tag: variant
    for variant in typing.get_args(typing.get_args(outbound.ClientRequest)[0])
}
#: method -> (its strict ``ClientRequest`` variant, a decoder of exactly that
#: variant). The union's decoder picks the variant by the ``method`` tag, so
#: a line of this method decodes under one variant's decoder exactly as under
#: the union's (the tag is checked too), one dispatch cheaper.
_STRICT_REQUESTS: Final[Mapping[str, tuple[Any, msgspec.json.Decoder[Any]]]] = {
    method: (
        _OUTBOUND_REQUESTS[method],
        msgspec.json.Decoder(_OUTBOUND_REQUESTS[method]),
    )
    for method in _SENT_METHODS
}
#: method -> a decoder of the result type of a Codex request the bridge sends.
_RESULT_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = {
    method: msgspec.json.Decoder(_CLIENT_TYPES[method][1]) for method in _SENT_METHODS
}
_STRICT_APPROVAL_RESULT: Final[Mapping[str, msgspec.json.Decoder[Any]]] = {
    "item/commandExecution/requestApproval": msgspec.json.Decoder(
        outbound.CommandExecutionRequestApprovalResponse
    ),
    "item/fileChange/requestApproval": msgspec.json.Decoder(
        outbound.FileChangeRequestApprovalResponse
    ),
}
_NOTIFICATION_PARAMS: Final[Mapping[str, Any]] = {
    "thread/started": inbound.ThreadStartedNotification,
    "thread/closed": inbound.ThreadClosedNotification,
    "thread/status/changed": inbound.ThreadStatusChangedNotification,
    "turn/started": inbound.TurnStartedNotification,
    "turn/completed": inbound.TurnCompletedNotification,
    "item/started": inbound.ItemStartedNotification,
    "item/completed": inbound.ItemCompletedNotification,
    "item/agentMessage/delta": inbound.AgentMessageDeltaNotification,
    "item/reasoning/textDelta": inbound.ReasoningTextDeltaNotification,
    "item/reasoning/summaryTextDelta": inbound.ReasoningSummaryTextDeltaNotification,
    "item/commandExecution/outputDelta": inbound.CommandExecutionOutputDeltaNotification,
    "serverRequest/resolved": inbound.ServerRequestResolvedNotification,
}
# One Decoder per translated Codex notification, built once (msgspec perf tip).
_NOTIFICATION_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = {
    method: msgspec.json.Decoder(tp) for method, tp in _NOTIFICATION_PARAMS.items()
}


def _line_decoder(name: str, fields: list[Any]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(msgspec.defstruct(name, fields, module=__name__))


# One typed decode of a whole line, for a line the untyped tree already shows
# to be a translated notification (a str ``method``, no ``id``) or an answer
# to a pending request (an int ``id``, no ``method``, no ``error``). The
# fields are those of the two stages (_CodexIn, then the params or result
# type) that such a line can hold: ``error`` as _CodexIn types it, ``params``
# or ``result`` typed; the fields left out (``method``, ``id``: the tree has
# their types; ``params`` of a response, ``result`` of a notification: any
# JSON in _CodexIn) and unknown fields are ignored by both. So a line that
# decodes here decodes to the same values in two stages; one that does not is
# decoded in two stages again, which names the problem as it always did.
_NOTIFICATION_LINES: Final[Mapping[str, tuple[str, msgspec.json.Decoder[Any]]]] = {
    method: (
        CODEX_NOTIFICATIONS[method],
        _line_decoder(
            "_CodexNotificationLine",
            [("params", tp), ("error", _CodexError | UnsetType, UNSET)],
        ),
    )
    for method, tp in _NOTIFICATION_PARAMS.items()
    if method in CODEX_NOTIFICATIONS
}
# The agent-message delta line, the most frequent by far, proven without the
# untyped tree. codex-cli 0.163.0 writes it compact, in this key order (seen on
# the wire: tools/demo.py --codex): method, params (threadId, turnId, itemId,
# delta), emittedAtMs (an experimental field). A line that is exactly the
# encoding of what this strict type decodes from it (unknown fields forbidden)
# has no repeated key (a collapsed entry would be missing from the encoding),
# no other field, valid UTF-8 (every string was decoded) and the depth of the
# type: what load_json proves, without building the tree. The params decode
# to the same values as the generated type's (same names and types, the wire's
# field order). Any other line takes the general path.
_AGENT_DELTA: Final = "item/agentMessage/delta"
_AgentDeltaParams: Final = msgspec.defstruct(
    "_AgentDeltaParams",
    [
        (f.name, f.type)
        for name in ("threadId", "turnId", "itemId", "delta")
        for f in msgspec.structs.fields(_NOTIFICATION_PARAMS[_AGENT_DELTA])
        if f.name == name
    ],
    kw_only=True,
    forbid_unknown_fields=True,
    module=__name__,
)
assert _AgentDeltaParams.__struct_fields__ == ("threadId", "turnId", "itemId", "delta")
_DELTA_LINES: Final[dict[bytes, tuple[str, str, msgspec.json.Decoder[Any]]]] = {
    _AGENT_DELTA.encode(): (
        _AGENT_DELTA,
        CODEX_NOTIFICATIONS[_AGENT_DELTA],
        msgspec.json.Decoder(
            msgspec.defstruct(
                "_CodexDeltaLine",
                [
                    ("method", str),
                    ("params", _AgentDeltaParams),
                    ("emittedAtMs", int | UnsetType, UNSET),
                ],
                kw_only=True,
                omit_defaults=True,
                forbid_unknown_fields=True,
                module=__name__,
            )
        ),
    )
}
_METHOD_FIRST: Final = b'{"method":"'


def _delta_line(line: bytes) -> tuple[str, str, Any] | None:
    """``(method, native method, params)`` of a delta line proven by its own
    encoding (see _DELTA_LINES), or ``None`` for the general path."""
    if not line.startswith(_METHOD_FIRST):
        return None
    entry = _DELTA_LINES.get(line[11 : line.find(b'"', 11)])
    if entry is None or len(line) > MAX_CODEX_LINE_BYTES:
        return None
    method, native, decoder = entry
    try:
        typed = decoder.decode(line)
        if typed.method != method or _ENCODER.encode(typed) != line:
            return None
    except (msgspec.MsgspecError, ValueError, OverflowError, RecursionError):
        return None
    return method, native, typed.params


_RESULT_LINES: Final[Mapping[str, msgspec.json.Decoder[Any]]] = {
    method: _line_decoder("_CodexResultLine", [("result", _CLIENT_TYPES[method][1])])
    for method in _SENT_METHODS
}
_TURN_STATUS: Final = {
    "inProgress": "in_progress",
    "completed": "completed",
    "interrupted": "interrupted",
    "failed": "failed",
}
_THREAD_STATUS: Final = {"idle": "idle", "notLoaded": "idle", "active": "active"}
#: Codex ``thread/status/changed`` statuses forwarded as native ``thread/closed``;
#: the others (``idle``, ``notLoaded``, ``active``) are counted in
#: :attr:`CodexBridge.not_forwarded`, not sent.
_CLOSING_STATUSES: Final = frozenset({"systemError"})

# Largest epoch second a native timestamp (year <= 9999) can show.
_MAX_EPOCH: Final = 253_402_300_799
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _peer(code: ErrorCode, message: str, **data: Any) -> ProtocolError:
    return ProtocolError(code, message, data=data or None, origin="peer")


def _checked_line(line: Any) -> tuple[bytes, Any]:
    """The line's bytes and its untyped JSON tree, or a peer ProtocolError.

    The byte-level rules are the core's (:func:`samgita_protocol.load_json`:
    size before parsing, depth on the bytes, UTF-8, one value, no repeated
    key) with Codex's bounds, and the core's error codes.
    """
    check_line("line", line)
    try:
        # sized before a bytearray or memoryview is copied
        tree = load_json(
            line, max_bytes=MAX_CODEX_LINE_BYTES, max_depth=MAX_CODEX_DEPTH
        )
    except ProtocolError as exc:
        raise _line_error(exc) from None
    return bytes(line) if type(line) is not bytes else line, tree


def _line_error(exc: ProtocolError) -> ProtocolError:
    """load_json's error for a Codex line, as the bridge raises it: the core's
    codes exactly (a lone-surrogate \\u escape is invalid_utf8, as in
    load_json and decode: one rule for both), origin peer."""
    return _peer(exc.code, f"Codex line: {exc.message}"[:512], **(exc.data or {}))


def _clean(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` code points, lone surrogates escaped (always encodable)."""
    return text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


def _timestamp(value: _dt.datetime) -> str:
    return value.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch_timestamp(seconds: int) -> str:
    if not 0 <= seconds <= _MAX_EPOCH:
        raise _peer(
            ErrorCode.INVALID_MESSAGE,
            "Codex createdAt is out of the range a timestamp can show",
            value=str(seconds)[:64],
        )
    return _timestamp(_EPOCH + _dt.timedelta(seconds=seconds))


def _thread(thread: Any) -> Thread:
    status = _THREAD_STATUS.get(thread.status.__struct_config__.tag, "closed")
    created = _epoch_timestamp(thread.createdAt)
    return Thread(thread_id=thread.id, status=status, created_at=created)  # type: ignore[arg-type]


def _turn(turn: Any, thread_id: str) -> Turn:
    status = _TURN_STATUS.get(turn.status)
    if status is None:
        raise _peer(ErrorCode.INVALID_MESSAGE, "unknown Codex turn status")
    return Turn(turn_id=turn.id, thread_id=thread_id, status=status)  # type: ignore[arg-type]


def _bounded_text(text: str) -> str:
    if len(text) <= MAX_ITEM_TEXT_CHARS:
        return text
    return text[:MAX_ITEM_TEXT_CHARS] + _TRUNCATED.format(total=len(text))


def _item(item: Any, *, completed: bool) -> Item:
    kind = item.__struct_config__.tag
    text: str | UnsetType = UNSET
    if kind == "agentMessage":
        text = _bounded_text(item.text)
    elif kind == "commandExecution" and isinstance(item.aggregatedOutput, str):
        text = _bounded_text(item.aggregatedOutput)
    status: Any = UNSET
    if completed:
        failed = getattr(item, "status", "completed") in ("failed", "declined")
        status = "failed" if failed else "completed"
    return Item(item_id=item.id, type=kind, text=text, status=status)


def _pieces(delta: str) -> list[str]:
    if len(delta) <= MAX_DELTA_CHARS:
        return [delta]
    return [
        delta[i : i + MAX_DELTA_CHARS] for i in range(0, len(delta), MAX_DELTA_CHARS)
    ]


def _stream_id(instance_id: str, thread_id: str) -> str:
    """``codex-<instance id>-<thread id>``, a digest of the thread id when too long.

    The instance id makes the id unique per bridge: a restarted bridge starts
    its streams at cursor 1 again, so it must not reuse an earlier bridge's
    stream ids (a client's old checkpoint would resume into other events).
    """
    candidate = f"codex-{instance_id}-{thread_id}"
    if 0 < len(thread_id) and len(candidate.encode("utf-8", "surrogatepass")) <= 256:
        return candidate
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"codex-{instance_id}-sha256-{digest}"


def _instance_id(value: object) -> str:
    if value is None:
        return secrets.token_hex(8)
    if not isinstance(value, str):
        raise wrong_type("instance_id", value, "a string")
    if _INSTANCE_ID.fullmatch(value) is None:
        raise ValueError(
            "expected instance_id to be 1 to 32 ASCII letters, digits, '_' or "
            f"'-', got: {value!r}"
        )
    return value


def _text_input(items: Any) -> list[outbound.TextUserInput]:
    return [outbound.TextUserInput(text=item.text) for item in items]


def _to_native(message: Message) -> ToNative:
    """``message`` with its validated wire bytes (any core encode error raised)."""
    return ToNative(message=message, data=encode(message))


def _error(request: Request, code: ErrorCode, message: str, **data: Any) -> ToNative:
    error = ErrorObject(code=code, message=message, data=data or UNSET)
    return _to_native(response_to(request, error=error))


def _reply(request: Request, result: msgspec.Struct) -> ToNative:
    """A translated result: its bytes checked against the method's native
    result schema too (what the native peer's ``decode_result`` checks: a
    Codex value the schema cannot carry, a 300-byte turn id say, is an
    invalid reply, never a response the peer must refuse)."""
    response = response_to(request, result=result)
    return ToNative(message=response, data=encode_response(response, request.method))


def _expired_report(rid: str, approval: _Approval) -> BridgeReport:
    return BridgeReport(
        kind="approval_expired",
        method=approval.codex_method,
        message=f"{rid}: its deadline {_timestamp(approval.deadline)} passed; "
        "declined to Codex",
    )


def _settled(native: Request, why: str) -> ToNative:
    spec = METHODS.get(native.method)
    if spec is not None and spec.mutation:
        return _error(native, ErrorCode.AMBIGUOUS_DISCONNECT, f"{why} mid-request")
    return _error(native, ErrorCode.DISCONNECTED, why)


def _thread_start_params(p: ThreadStartParams) -> tuple[str, msgspec.Struct]:
    if p.metadata is not UNSET:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED,
            "thread/start metadata has no Codex equivalent",
            data={"method": "thread/start", "field": "metadata"},
        )
    dev = p.instructions if p.instructions is not UNSET else UNSET
    return "thread/start", outbound.ThreadStartParams(developerInstructions=dev)


def _thread_read_params(p: ThreadReadParams) -> tuple[str, msgspec.Struct]:
    return "thread/read", outbound.ThreadReadParams(
        threadId=p.thread_id, includeTurns=True
    )


def _thread_resume_params(p: ThreadResumeParams) -> tuple[str, msgspec.Struct]:
    return "thread/resume", outbound.ThreadResumeParams(threadId=p.thread_id)


def _turn_start_params(p: TurnStartParams) -> tuple[str, msgspec.Struct]:
    return "turn/start", outbound.TurnStartParams(
        threadId=p.thread_id,
        input=_text_input(p.input),  # type: ignore[arg-type]
    )


def _turn_steer_params(p: TurnSteerParams) -> tuple[str, msgspec.Struct]:
    return "turn/steer", outbound.TurnSteerParams(
        threadId=p.thread_id,
        expectedTurnId=p.turn_id,
        input=_text_input(p.input),  # type: ignore[arg-type]
    )


def _turn_interrupt_params(p: TurnInterruptParams) -> tuple[str, msgspec.Struct]:
    return "turn/interrupt", outbound.TurnInterruptParams(
        threadId=p.thread_id, turnId=p.turn_id
    )


#: Native params type -> the Codex method and params it becomes.
_TO_CODEX: Final[Mapping[type, Callable[[Any], tuple[str, msgspec.Struct]]]] = {
    ThreadStartParams: _thread_start_params,
    ThreadReadParams: _thread_read_params,
    ThreadResumeParams: _thread_resume_params,
    TurnStartParams: _turn_start_params,
    TurnSteerParams: _turn_steer_params,
    TurnInterruptParams: _turn_interrupt_params,
}

#: Native method -> (its group, params type and translation), for every
#: request the table forwards to Codex (kind ``codex``) except
#: ``connection/initialize``.
_FORWARDED: Final[
    Mapping[str, tuple[str | None, type, Callable[[Any], tuple[str, msgspec.Struct]]]]
] = {
    method: (row.group, METHODS[method].params, _TO_CODEX[METHODS[method].params])
    for method, row in NATIVE_REQUESTS.items()
    if row.kind == "codex" and method != "connection/initialize"
}

_Translated = tuple[msgspec.Struct, "BridgeReport | None"]


def _thread_start_result(p: ThreadStartParams, result: Any) -> _Translated:
    return ThreadStartResult(thread=_thread(result.thread)), None


def _thread_resume_result(p: ThreadResumeParams, result: Any) -> _Translated:
    return ThreadResumeResult(thread=_thread(result.thread)), None


def _thread_read_result(p: ThreadReadParams, result: Any) -> _Translated:
    codex_turns = result.thread.turns or []
    turns = [_turn(t, result.thread.id) for t in codex_turns[-MAX_THREAD_READ_TURNS:]]
    report = None
    if len(codex_turns) > MAX_THREAD_READ_TURNS:
        report = BridgeReport(
            kind="truncated",
            method="thread/read",
            message=f"kept the newest {MAX_THREAD_READ_TURNS} of "
            f"{len(codex_turns)} turns",
        )
    return ThreadReadResult(thread=_thread(result.thread), turns=turns), report


def _turn_start_result(p: TurnStartParams, result: Any) -> _Translated:
    return TurnStartResult(turn=_turn(result.turn, p.thread_id)), None


def _turn_steer_result(p: TurnSteerParams, result: Any) -> _Translated:
    turn = Turn(turn_id=result.turnId, thread_id=p.thread_id, status="in_progress")
    return TurnSteerResult(turn=turn), None


def _turn_interrupt_result(p: TurnInterruptParams, result: Any) -> _Translated:
    return (
        TurnInterruptResult(
            thread_id=p.thread_id, turn_id=p.turn_id, interrupt_status="requested"
        ),
        None,
    )


#: Native params type -> its native result made of the Codex result (and a
#: report to add, if any).
_TO_NATIVE: Final[Mapping[type, Callable[[Any, Any], _Translated]]] = {
    ThreadStartParams: _thread_start_result,
    ThreadResumeParams: _thread_resume_result,
    ThreadReadParams: _thread_read_result,
    TurnStartParams: _turn_start_result,
    TurnSteerParams: _turn_steer_result,
    TurnInterruptParams: _turn_interrupt_result,
}


class _Pending(msgspec.Struct, kw_only=True):
    method: str  # the Codex method
    # None: the bridge's own re-initialize, or a request whose native
    # connection went away (its late answer is absorbed).
    native: Request | None


class _Approval(msgspec.Struct, kw_only=True):
    codex_id: int | str
    codex_method: str
    # the native request, built once: every (re-)send is this exact request,
    # so its approval_id, action and deadline are never refreshed
    request: Request
    data: bytes  # its wire bytes: every (re-)send is byte-identical
    deadline: _dt.datetime  # the instant ``request``'s deadline names
    sent: bool  # delivered to the current native session


class CodexBridge:
    """One native connection's host, bridged to one Codex app-server link.

    Args:
        host_id: the native ``host_id`` this bridge reports. Keep it stable
            across restarts: the streams' ids change with the instance (see
            ``instance_id``), so a client's checkpoints from an earlier
            bridge get ``not_found`` from ``stream/resume``, never another
            stream's events, while its connection is accepted.
        instance_id: this bridge instance's part of every native
            ``stream_id`` (``codex-<instance_id>-<Codex thread id>``) and
            ``connection_id``; 1 to 32 of ``[A-Za-z0-9_-]``. Default: 16
            random hex digits, new for every bridge. The Replays live in
            memory, so a restarted bridge must not reuse an instance id (its
            cursors start at 1 again); give one only for reproducible ids
            in tests and logs.
        client_name, client_version: Codex ``clientInfo``.
        approval_timeout: native ``deadline`` of forwarded approvals.
        now: the wall clock (tests pass a fixed one).
        max_events, max_bytes: bounds of each per-thread :class:`Replay`.
        max_pending, max_approvals, max_streams, max_unmapped_methods: the
            bounds of the bridge's tables (see :data:`MAX_PENDING` etc.);
            overflow is ``limit_exceeded``.

    Raises:
        TypeError, ValueError: a bad argument (the message names it):
            ``host_id`` not a wire id (1 to 256 UTF-8 bytes), an empty or
            non-string ``client_name`` / ``client_version``, an
            ``approval_timeout`` that is not a positive ``timedelta``, a
            ``now`` that is not callable, a bound that is not a positive
            ``int``.
    """

    def __init__(
        self,
        *,
        host_id: str,
        instance_id: str | None = None,
        client_name: str = "samgita-protocol-codex",
        client_version: str = "0.1.0",
        approval_timeout: _dt.timedelta = DEFAULT_APPROVAL_TIMEOUT,
        now: Callable[[], _dt.datetime] | None = None,
        max_events: int = 1024,
        max_bytes: int = 8 * 1024 * 1024,
        max_pending: int = MAX_PENDING,
        max_approvals: int = MAX_APPROVALS,
        max_streams: int = MAX_STREAMS,
        max_unmapped_methods: int = MAX_UNMAPPED_METHODS,
    ) -> None:
        self._host_id = check_wire_id("host_id", host_id)
        self._instance_id = _instance_id(instance_id)
        self._client_info = outbound.ClientInfo(
            name=check_text("client_name", client_name),
            version=check_text("client_version", client_version),
        )
        self._approval_timeout = check_positive_timedelta(
            "approval_timeout", approval_timeout
        )
        self._now: Callable[[], _dt.datetime] = (
            (lambda: _dt.datetime.now(_dt.UTC))
            if now is None
            else check_callable("now", now)
        )
        self._max_events = check_positive_int("max_events", max_events)
        self._max_bytes = check_positive_int("max_bytes", max_bytes)
        self._max_pending = check_positive_int("max_pending", max_pending)
        self._max_approvals = check_positive_int("max_approvals", max_approvals)
        self._max_streams = check_positive_int("max_streams", max_streams)
        self._max_unmapped = check_positive_int(
            "max_unmapped_methods", max_unmapped_methods
        )
        self._next_codex_id = 0
        self._next_native_id = 0
        self._codex: Literal["fresh", "initializing", "ready", "down"] = "fresh"
        self._native_groups: frozenset[str] | None = None
        # native method -> (params type, translation) of the requests the
        # negotiated session may forward to Codex (empty without a session)
        self._forward: dict[str, tuple[type, Callable[[Any], Any]]] = {}
        self._pending: dict[int, _Pending] = {}
        self._approvals: dict[str, _Approval] = {}
        self._streams: dict[str, Replay] = {}  # Codex thread id -> its native stream
        self._by_stream_id: dict[str, Replay] = {}  # the same, by native stream_id
        self._connection_seq = 0
        #: Codex notifications without a native translation, by method (at
        #: most ``max_unmapped_methods`` keys, then :data:`UNMAPPED_OVERFLOW`).
        self.unmapped_notifications: Counter[str] = Counter()
        #: Translated Codex notifications the table says are not forwarded,
        #: by ``method:detail`` (e.g. ``thread/status/changed:idle``).
        self.not_forwarded: Counter[str] = Counter()
        #: Native notifications that were neither deliverable (no native
        #: session with their group) nor replayable, by native method.
        self.undelivered: Counter[str] = Counter()

    # ------------------------------------------------------------ native side

    def native_connected(self) -> list[Output]:
        """A new native connection: it must ``connection/initialize`` again.

        Requests of the previous native connection still waiting for Codex
        are settled (``ambiguous_disconnect`` for a mutation, ``disconnected``
        for a read; addressed to the old connection, for the caller's log);
        Codex's later answers to them are absorbed, nothing is re-sent.
        Forwarded approvals stay pending and are re-sent after the next
        successful native initialize, unchanged (the same ``id``,
        ``approval_id``, ``action`` and ``deadline``: a reconnect does not
        refresh an approval's binding); one whose deadline has passed by
        then is declined to Codex (``ApprovalResolved`` and a
        ``BridgeReport(kind="approval_expired")``), not re-offered. Streams
        are kept.
        """
        self._native_groups = None
        self._forward = {}
        out: list[Output] = []
        for pending in self._pending.values():
            if pending.native is not None:
                out.append(_settled(pending.native, "native connection replaced"))
                pending.native = None
        for approval in self._approvals.values():
            approval.sent = False
        return out

    @property
    def instance_id(self) -> str:
        """This bridge instance's id, part of its stream and connection ids."""
        return self._instance_id

    def stream_id(self, thread_id: str) -> str | None:
        """The native ``stream_id`` of a Codex thread, once it has one.

        Raises:
            TypeError: ``thread_id`` is not a string.
        """
        if not isinstance(thread_id, str):
            raise wrong_type("thread_id", thread_id, "a string")
        replay = self._streams.get(thread_id)
        return replay.stream_id if replay is not None else None

    def native_request(self, request: Request) -> list[Output]:
        """Translate one decoded native request.

        Refusals come back as native error responses (``not_initialized``,
        ``unsupported`` naming the method, ``disconnected`` while the Codex
        link is down, ``not_found`` for an unknown stream, ``limit_exceeded``
        with :data:`MAX_PENDING` requests in flight); nothing is raised for a
        well-formed request.

        Raises:
            TypeError: ``request`` is not a native `Request`.
        """
        # the common case first: a request the session may forward, with the
        # Codex link ready and room in the pending table (the same checks as
        # below, in fewer steps)
        forward = (
            self._forward.get(request.method) if type(request) is Request else None
        )
        if (
            forward is not None
            and type(request.params) is forward[0]
            and self._codex == "ready"
            and len(self._pending) < self._max_pending
        ):
            try:
                codex_method, params = forward[1](request.params)
            except ProtocolError as exc:
                return [_error(request, exc.code, exc.message, **(exc.data or {}))]
            return [self._send_codex_request(codex_method, params, request)]
        if not isinstance(request, Request):
            raise wrong_type("request", request, "a native Request")
        method = request.method
        if method == "connection/initialize":
            return self._native_initialize(request)
        if self._native_groups is None:
            return [
                _error(
                    request, ErrorCode.NOT_INITIALIZED, f"{method} before initialize"
                )
            ]
        row = NATIVE_REQUESTS.get(method)
        if row is None or row.group not in self._native_groups or row.kind == "refused":
            return [
                _error(
                    request,
                    ErrorCode.UNSUPPORTED,
                    f"{method} is not supported by the Codex bridge",
                    method=method,
                )
            ]
        if row.kind == "handled_locally":
            assert method == "stream/resume"
            return [self._stream_resume(request)]
        if self._codex != "ready":
            return [
                _error(request, ErrorCode.DISCONNECTED, "the Codex link is not ready")
            ]
        if len(self._pending) >= self._max_pending:
            return [
                _error(
                    request,
                    ErrorCode.LIMIT_EXCEEDED,
                    "too many Codex requests in flight",
                    limit=self._max_pending,
                )
            ]
        try:
            codex_method, params = self._codex_params(request)
        except ProtocolError as exc:
            return [_error(request, exc.code, exc.message, **(exc.data or {}))]
        return [self._send_codex_request(codex_method, params, request)]

    def native_response(self, response: Response) -> list[Output]:
        """The native peer's answer to a forwarded ``approval/request``.

        ``approve`` becomes Codex ``accept``, ``deny`` (or a native error)
        ``decline``. An ``approve`` at or after the request's ``deadline``
        (the bridge's clock) is not an approval: Codex gets ``decline`` and
        the caller a ``BridgeReport(kind="approval_expired")``.

        Raises:
            ProtocolError: ``unknown_request`` for a response to no pending
                approval (never asked, already answered, expired or settled
                by Codex); ``approval_mismatch`` when the result's
                ``approval_id`` or ``action`` differ from the request (exact
                JSON: ``true``, ``1`` and ``1.0`` differ); ``invalid_result``
                for a malformed result. The approval stays pending then.
            TypeError: ``response`` is not a native `Response`.
        """
        if not isinstance(response, Response):
            raise wrong_type("response", response, "a native Response")
        approval = self._approvals.get(response.id)
        if approval is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_REQUEST,
                "no pending approval with this id",
                data={"id": response.id},
            )
        decision = "decline"
        if response.error is UNSET:
            result = decode_result("approval/request", response.result)  # type: ignore[arg-type]
            assert isinstance(result, ApprovalRequestResult)
            params = approval.request.params
            assert isinstance(params, ApprovalRequestParams)
            # the binding is exact JSON, as the core's (True, 1 and 1.0 differ)
            if result.approval_id != params.approval_id or _SORTED.encode(
                result.action
            ) != _SORTED.encode(params.action):
                raise ProtocolError(
                    ErrorCode.APPROVAL_MISMATCH,
                    "result does not match the approval request",
                    data={"approval_id": params.approval_id},
                )
            if result.decision == "approve":
                if self._now() >= approval.deadline:
                    del self._approvals[response.id]
                    return [
                        self._decline(approval),
                        _expired_report(response.id, approval),
                    ]
                decision = "accept"
        del self._approvals[response.id]
        return [self._answer_codex(approval, decision)]

    def expire_approvals(self) -> list[Output]:
        """End every forwarded approval whose native ``deadline`` has passed.

        The native contract allows no ``approve`` at or after the deadline,
        so such an approval can only be refused: each is declined to Codex
        (``ToCodex``), with ``ApprovalResolved(request_id)`` and a
        ``BridgeReport(kind="approval_expired")``; nothing is approved.
        Call it periodically (sans-IO: the bridge reads its ``now`` clock
        only when called) so that a native session that never answers does
        not stall the Codex turn; without it such an approval waits for a
        native answer, a reconnect (after which it is not re-offered) or
        Codex's own ``serverRequest/resolved``.
        """
        now = self._now()
        out: list[Output] = []
        for rid, approval in list(self._approvals.items()):
            if now >= approval.deadline:
                out.extend(self._expire(rid, approval))
        return out

    def _expire(self, rid: str, approval: _Approval) -> list[Output]:
        del self._approvals[rid]
        return [
            self._decline(approval),
            ApprovalResolved(request_id=rid),
            _expired_report(rid, approval),
        ]

    def _decline(self, approval: _Approval) -> ToCodex:
        return self._answer_codex(approval, "decline")

    def _answer_codex(self, approval: _Approval, decision: str) -> ToCodex:
        body = _ENCODER.encode(
            {"id": approval.codex_id, "result": {"decision": decision}}
        )
        _STRICT_APPROVAL_RESULT[approval.codex_method].decode(
            _ENCODER.encode({"decision": decision})
        )
        return ToCodex(data=body + b"\n", id=approval.codex_id)

    # ------------------------------------------------------------- codex side

    def codex_connected(self) -> list[Output]:
        """A (re)opened Codex link: re-initializes it when a native session exists.

        Whatever was in flight on an earlier link is settled first, as by
        :meth:`codex_disconnected` (nothing is re-sent).
        """
        out = self._settle_codex()
        self._codex = "fresh"
        if self._native_groups is None:
            return out
        self._codex = "initializing"
        out.append(
            self._send_codex_request("initialize", self._initialize_params(), None)
        )
        return out

    def codex_disconnected(self) -> list[Output]:
        """The Codex link is gone: settle everything in flight, re-send nothing.

        A pending mutation becomes ``ambiguous_disconnect`` (Codex may have
        performed it), a pending read ``disconnected``; forwarded approvals
        end with :class:`ApprovalResolved`. Streams are kept.
        """
        out = self._settle_codex()
        self._codex = "down"
        return out

    def _settle_codex(self) -> list[Output]:
        out: list[Output] = []
        for pending in self._pending.values():
            if pending.native is not None:
                out.append(_settled(pending.native, "Codex link lost"))
        self._pending.clear()
        out.extend(ApprovalResolved(request_id=rid) for rid in self._approvals)
        self._approvals.clear()
        return out

    def receive_codex(self, line: bytes) -> list[Output]:
        """Translate one JSON line from Codex.

        The line is checked before decoding (at most
        :data:`MAX_CODEX_LINE_BYTES`, nesting at most :data:`MAX_CODEX_DEPTH`,
        no repeated key); every native message produced is validated with the
        core encoder. On error nothing in the bridge changed.

        Raises:
            ProtocolError: always with origin ``"peer"`` (the link is broken;
                the caller should close it): ``message_too_large``,
                ``depth_exceeded``, ``invalid_json``, ``invalid_utf8``,
                ``duplicate_key``,
                ``invalid_message`` (not a JSON-RPC message of the pinned
                schema, or values the native schema cannot carry),
                ``unknown_response``, ``limit_exceeded`` (a table bound), or
                any code the core encoder raises for a translated message.
            TypeError: ``line`` is not ``bytes``, ``bytearray`` or
                ``memoryview`` (the caller's mistake, not Codex's).
        """
        if type(line) is bytes:
            delta = _delta_line(line)
            if delta is not None:
                return self._translate_notification(delta[0], delta[1], delta[2])
            # _checked_line's common case inline (bytes need no copy)
            data = line
            try:
                tree = load_json(
                    line, max_bytes=MAX_CODEX_LINE_BYTES, max_depth=MAX_CODEX_DEPTH
                )
            except ProtocolError as exc:
                raise _line_error(exc) from None
        else:
            data, tree = _checked_line(line)
        try:
            if type(tree) is dict:
                # the common lines in one typed decode (see _NOTIFICATION_LINES)
                if "id" not in tree:
                    method: Any = tree.get("method")
                    fast = (
                        _NOTIFICATION_LINES.get(method) if type(method) is str else None
                    )
                    if fast is not None:
                        try:
                            params = fast[1].decode(data).params
                        except msgspec.MsgspecError:
                            pass  # the two stages below name the problem
                        else:
                            return self._translate_notification(method, fast[0], params)
                elif "method" not in tree and "error" not in tree:
                    codex_id = tree["id"]
                    pending = (
                        self._pending.get(codex_id) if type(codex_id) is int else None
                    )
                    result_line = (
                        None if pending is None else _RESULT_LINES.get(pending.method)
                    )
                    if pending is not None and result_line is not None:
                        try:
                            result = result_line.decode(data).result
                        except msgspec.MsgspecError:
                            pass  # the two stages below name the problem
                        else:
                            return self._codex_result(codex_id, pending, result)
            msg = _ENVELOPE.decode(data)
            if msg.method is UNSET:
                return self._codex_response(msg)
            if msg.id is UNSET:
                return self._codex_notification(msg.method, msg.params)
            details = tree.get("params") if isinstance(tree, dict) else None
            return self._codex_server_request(msg.id, msg.method, msg.params, details)
        except msgspec.MsgspecError as exc:
            raise _peer(
                ErrorCode.INVALID_MESSAGE,
                f"Codex message does not match the 0.163.0 schema: {exc}"[:1024],
            ) from None
        except ProtocolError as exc:
            raise exc if exc.origin == "peer" else exc.with_origin("peer") from None
        except (ValueError, OverflowError, OSError) as exc:
            raise _peer(
                ErrorCode.INVALID_MESSAGE, f"Codex value out of range: {exc}"[:1024]
            ) from None

    # ---------------------------------------------------------------- helpers

    def _initialize_params(self) -> outbound.InitializeParams:
        return outbound.InitializeParams(clientInfo=self._client_info)

    def _native_initialize(self, request: Request) -> list[Output]:
        if self._native_groups is not None:
            return [
                _error(request, ErrorCode.ALREADY_INITIALIZED, "already initialized")
            ]
        params = request.params
        assert isinstance(params, InitializeParams)
        if "1.0" not in params.versions:
            return [
                _error(request, ErrorCode.NO_COMMON_VERSION, "only 1.0 is supported")
            ]
        required = set(params.required_capabilities or ())
        missing = sorted(required - SUPPORTED_GROUPS)
        if missing:
            return [
                _error(
                    request,
                    ErrorCode.MISSING_REQUIRED_CAPABILITY,
                    "the Codex bridge lacks required groups",
                    missing=missing,
                )
            ]
        if self._codex != "fresh":
            # Codex is (being) initialized or down: the native session does not
            # wait for it (stream/resume is answered from the Replay meanwhile)
            return self._session_started(request)
        for pending in self._pending.values():
            if pending.method == "initialize":
                if pending.native is None:
                    # an orphaned initialize (its native connection went
                    # away): this request takes its answer
                    pending.native = request
                    return []
                return [
                    _error(request, ErrorCode.CONFLICT, "an initialize is in progress")
                ]
        return [
            self._send_codex_request("initialize", self._initialize_params(), request)
        ]

    def _session_started(self, request: Request) -> list[Output]:
        """Reply to a native initialize, then (re-)send the waiting approvals."""
        params = request.params
        assert isinstance(params, InitializeParams)
        groups = sorted(SUPPORTED_GROUPS.intersection(params.capabilities))
        self._native_groups = frozenset(groups)
        self._forward = {
            method: (params_type, translate)
            for method, (group, params_type, translate) in _FORWARDED.items()
            if group in self._native_groups
        }
        self._connection_seq += 1
        out: list[Output] = [
            _reply(
                request,
                InitializeResult(
                    version="1.0",
                    capabilities=groups,
                    connection_id=f"codex-{self._instance_id}-{self._connection_seq}",
                    host_id=self._host_id,
                ),
            )
        ]
        if "approvals.v1" in self._native_groups:
            now = self._now()
            for rid, approval in list(self._approvals.items()):
                if approval.sent:
                    continue
                if now >= approval.deadline:
                    # no approve can be valid any more: not offered again
                    out.extend(self._expire(rid, approval))
                    continue
                approval.sent = True
                out.append(ToNative(message=approval.request, data=approval.data))
            return out
        # the new session cannot answer approvals: refuse them to Codex now
        for rid, approval in list(self._approvals.items()):
            out.append(self._refuse_codex(approval.codex_id, approval.codex_method))
            out.append(ApprovalResolved(request_id=rid))
        self._approvals.clear()
        return out

    def _codex_params(self, request: Request) -> tuple[str, msgspec.Struct]:
        p = request.params
        translate = _TO_CODEX.get(type(p))
        if translate is None:
            translate = next(
                (fn for tp, fn in _TO_CODEX.items() if isinstance(p, tp)), None
            )
            if translate is None:
                raise ProtocolError(
                    ErrorCode.UNSUPPORTED, f"{request.method} is not translated"
                )
        return translate(p)

    def _send_codex_request(
        self, method: str, params: msgspec.Struct, native: Request | None
    ) -> ToCodex:
        codex_id = self._next_codex_id
        strict = _STRICT_REQUESTS.get(method)
        if strict is not None:
            # the method's strict ClientRequest variant: built, encoded and
            # decoded again (outbound validation: unknown fields forbidden)
            data = _ENCODER.encode(strict[0](id=codex_id, params=params))
            strict[1].decode(data)
        else:
            data = _ENCODER.encode({"id": codex_id, "method": method, "params": params})
            _STRICT_REQUEST.decode(data)
        self._next_codex_id = codex_id + 1
        self._pending[codex_id] = _Pending(method=method, native=native)
        return ToCodex(data=data + b"\n", id=codex_id)

    def _codex_response(self, msg: _CodexIn) -> list[Output]:
        if not isinstance(msg.id, int) or msg.id not in self._pending:
            raise _peer(
                ErrorCode.UNKNOWN_RESPONSE,
                "Codex answered a request the bridge did not send",
                id=str(msg.id)[:256],
            )
        codex_id = msg.id
        pending = self._pending[codex_id]
        native = pending.native
        if msg.error is not UNSET:
            del self._pending[codex_id]
            text = _clean(f"Codex {pending.method} failed: {msg.error.message}", 1024)
            if pending.method == "initialize":
                if native is None:
                    self._codex = "down"
                    return [
                        BridgeReport(
                            kind="reinitialize_failed",
                            method="initialize",
                            message=text,
                        )
                    ]
                self._codex = "fresh"
            if native is None:
                return []
            return [
                _error(
                    native,
                    ErrorCode.INTERNAL_ERROR,
                    text,
                    codex_method=pending.method,
                    codex_code=max(min(msg.error.code, 2**53), -(2**53)),
                )
            ]
        # decode and translate first; the pending entry goes only afterwards
        raw = msg.result if msg.result is not UNSET else msgspec.Raw(b"null")
        decoder = _RESULT_DECODERS.get(pending.method)
        try:
            if decoder is not None:
                result = decoder.decode(raw)
            else:
                result = msgspec.json.decode(raw, type=_CLIENT_TYPES[pending.method][1])
        except (msgspec.MsgspecError, ValueError, OverflowError, OSError) as exc:
            return self._invalid_reply(codex_id, pending, exc)
        return self._codex_result(codex_id, pending, result)

    def _codex_result(
        self, codex_id: int, pending: _Pending, result: Any
    ) -> list[Output]:
        """A decoded Codex result of a pending request, translated."""
        native = pending.native
        try:
            out: list[Output] = []
            if pending.method != "initialize" and native is not None:
                # every ToNative is validated (result and envelope) as it is built
                out = self._native_result(native, result)
        except (
            msgspec.MsgspecError,
            ProtocolError,
            ValueError,
            OverflowError,
            OSError,
        ) as exc:
            return self._invalid_reply(codex_id, pending, exc)
        del self._pending[codex_id]
        if pending.method == "initialize":
            self._codex = "ready"
            note = _ENCODER.encode({"method": "initialized"})
            _STRICT_NOTIFICATION.decode(note)
            out = [ToCodex(data=note + b"\n")]
            if native is not None:
                out.extend(self._session_started(native))
        return out

    def _invalid_reply(
        self, codex_id: int, pending: _Pending, exc: Exception
    ) -> list[Output]:
        """A Codex result that does not decode or translate: answered, reported."""
        native = pending.native
        del self._pending[codex_id]
        reason = _clean(str(exc), 512)
        report = BridgeReport(
            kind="invalid_reply", method=pending.method, message=reason
        )
        if pending.method == "initialize":
            self._codex = "fresh" if native is not None else "down"
        if native is None:
            return [report]
        return [
            _error(
                native,
                ErrorCode.INVALID_RESULT,
                f"Codex {pending.method} returned an invalid result",
                codex_method=pending.method,
                reason=reason,
            ),
            report,
        ]

    def _native_result(self, native: Request, result: Any) -> list[Output]:
        p = native.params
        translate = _TO_NATIVE.get(type(p))
        if translate is None:
            translate = next(
                (fn for tp, fn in _TO_NATIVE.items() if isinstance(p, tp)), None
            )
            if translate is None:
                return [
                    _error(
                        native, ErrorCode.INTERNAL_ERROR, "untranslated Codex result"
                    )
                ]
        native_result, report = translate(p, result)
        reply = _reply(native, native_result)
        return [reply] if report is None else [reply, report]

    def _sequenced(
        self, thread_id: str, method: str, params: msgspec.Struct, group: str
    ) -> list[Output]:
        """Append to the thread's Replay always; deliver when the session can take it."""
        replay = self._streams.get(thread_id)
        new = replay is None
        if replay is None:
            replay = self._new_stream(thread_id)
        # built already sequenced (the Replay's next cursor), so append
        # checks it and keeps it as it is
        note = Notification(
            method=method,
            params=params,
            stream_id=replay.stream_id,
            cursor=replay.last_cursor + 1,
        )
        kept = replay.append(note)
        if new:
            self._keep_stream(thread_id, replay)
        groups = self._native_groups
        if groups is None or group not in groups:
            return []  # kept in the Replay: stream/resume serves it later
        # the bytes append validated, handed out without a second encode
        return [ToNative(message=kept.message, data=kept.data)]

    def _sequenced_pieces(
        self, thread_id: str, method: str, pieces: list[msgspec.Struct]
    ) -> list[Output]:
        """:meth:`_sequenced` for the pieces of one split delta, all or none."""
        replay = self._streams.get(thread_id)
        new = replay is None
        if replay is None:
            replay = self._new_stream(thread_id)
        first = replay.last_cursor + 1
        notes = [
            Notification(
                method=method, params=p, stream_id=replay.stream_id, cursor=first + i
            )
            for i, p in enumerate(pieces)
        ]
        # the pieces share the ids and are bounded: check them all before the
        # first append, so an error leaves the Replay unchanged
        for note in notes:
            encode(note)
        kept = [replay.append(note) for note in notes]
        if new:
            self._keep_stream(thread_id, replay)
        groups = self._native_groups
        if groups is None or "streaming.v1" not in groups:
            return []
        # the bytes each append validated, handed out without a second encode
        return [ToNative(message=k.message, data=k.data) for k in kept]

    def _keep_stream(self, thread_id: str, replay: Replay) -> None:
        self._streams[thread_id] = replay
        self._by_stream_id[replay.stream_id] = replay

    def _new_stream(self, thread_id: str) -> Replay:
        # not yet in self._streams: kept only once its first event is appended
        if len(self._streams) >= self._max_streams:
            raise _peer(
                ErrorCode.LIMIT_EXCEEDED,
                "too many Codex threads",
                limit=self._max_streams,
            )
        return Replay(
            _stream_id(self._instance_id, thread_id),
            max_events=self._max_events,
            max_bytes=self._max_bytes,
        )

    def _unsequenced(self, note: Notification) -> list[Output]:
        data = encode(note)
        groups = self._native_groups
        if groups is None or "sessions.v1" not in groups:
            self.undelivered[note.method] += 1
            return [
                BridgeReport(
                    kind="undelivered",
                    method=note.method,
                    message="no native session with sessions.v1; not replayable",
                )
            ]
        return [ToNative(message=note, data=data)]

    def _count_unmapped(self, method: str) -> None:
        counter = self.unmapped_notifications
        if method in counter or len(counter) < self._max_unmapped:
            counter[method] += 1
        else:
            counter[UNMAPPED_OVERFLOW] += 1

    def _codex_notification(
        self, method: str, raw: msgspec.Raw | UnsetType
    ) -> list[Output]:
        native = CODEX_NOTIFICATIONS.get(method)
        if native is None:
            self._count_unmapped(method)
            return [CodexUnmapped(kind="notification", method=method)]
        params = _NOTIFICATION_DECODERS[method].decode(
            raw if raw is not UNSET else b"{}"
        )
        return self._translate_notification(method, native, params)

    def _translate_notification(
        self, method: str, native: str, params: Any
    ) -> list[Output]:
        """A decoded translated Codex notification (``native``: its table row)."""
        if native == "item/delta":  # the most frequent by far: tested first
            delta = params.delta
            if len(delta) <= MAX_DELTA_CHARS:
                thread_id = params.threadId
                return self._sequenced(
                    thread_id,
                    native,
                    ItemDeltaParams(
                        thread_id=thread_id,
                        turn_id=params.turnId,
                        item_id=params.itemId,
                        delta=delta,
                    ),
                    "streaming.v1",
                )
            return self._sequenced_pieces(
                params.threadId,
                native,
                [
                    ItemDeltaParams(
                        thread_id=params.threadId,
                        turn_id=params.turnId,
                        item_id=params.itemId,
                        delta=piece,
                    )
                    for piece in _pieces(delta)
                ],
            )
        if method == "serverRequest/resolved":
            return self._resolved(params.requestId)
        if method == "thread/status/changed":
            status = params.status.__struct_config__.tag
            if status not in _CLOSING_STATUSES:
                self.not_forwarded[f"{method}:{status}"] += 1
                return []
            return self._unsequenced(
                Notification(
                    method=native, params=ThreadClosedParams(thread_id=params.threadId)
                )
            )
        if method == "thread/started":
            return self._unsequenced(
                Notification(
                    method=native,
                    params=ThreadStartedParams(thread=_thread(params.thread)),
                )
            )
        if method == "thread/closed":
            return self._unsequenced(
                Notification(
                    method=native, params=ThreadClosedParams(thread_id=params.threadId)
                )
            )
        if method in ("turn/started", "turn/completed"):
            cls = TurnStartedParams if method == "turn/started" else TurnCompletedParams
            turn = cls(turn=_turn(params.turn, params.threadId))
            return self._sequenced(params.threadId, native, turn, "sessions.v1")
        if method in ("item/started", "item/completed"):
            done = method == "item/completed"
            cls2 = ItemCompletedParams if done else ItemStartedParams
            item_params = cls2(
                thread_id=params.threadId,
                turn_id=params.turnId,
                item=_item(params.item, completed=done),
            )
            return self._sequenced(params.threadId, native, item_params, "streaming.v1")
        raise AssertionError(f"untranslated Codex notification {method}")

    def _resolved(self, codex_id: int | str) -> list[Output]:
        for rid, approval in list(self._approvals.items()):
            if approval.codex_id == codex_id:
                del self._approvals[rid]
                return [ApprovalResolved(request_id=rid)]
        return []

    def _refuse_codex(self, codex_id: int | str, method: str) -> ToCodex:
        reason = (
            "not supported"
            if method not in CODEX_APPROVAL_REQUESTS
            else "not negotiated"
        )
        body = {
            "id": codex_id,
            "error": {
                "code": _METHOD_NOT_FOUND,
                "message": f"samgita bridge: {method} is {reason}",
            },
        }
        return ToCodex(data=_ENCODER.encode(body) + b"\n", id=codex_id)

    def _codex_server_request(
        self,
        codex_id: int | str,
        method: str,
        raw: msgspec.Raw | UnsetType,
        details: Any,
    ) -> list[Output]:
        if method not in CODEX_APPROVAL_REQUESTS:
            return [
                self._refuse_codex(codex_id, method),
                CodexUnmapped(kind="request", method=method),
            ]
        groups = self._native_groups
        if groups is not None and "approvals.v1" not in groups:
            # the negotiated native session cannot approve: refuse, typed
            return [
                self._refuse_codex(codex_id, method),
                CodexUnmapped(kind="request", method=method),
            ]
        params = msgspec.json.decode(
            raw if raw is not UNSET else b"null", type=_SERVER_TYPES[method][0]
        )
        if len(self._approvals) >= self._max_approvals:
            raise _peer(
                ErrorCode.LIMIT_EXCEEDED,
                "too many pending Codex approvals",
                limit=self._max_approvals,
            )
        if method == "item/commandExecution/requestApproval":
            kind = "command_execution"
            description = (
                params.command if isinstance(params.command, str) else "run a command"
            )
        else:
            kind = "file_change"
            description = "apply a file change"
        why: str | UnsetType = (
            params.reason if isinstance(params.reason, str) else UNSET
        )
        rid = f"codex-approval-{self._next_native_id + 1}"
        # whole seconds, as the wire shows it: the deadline is this instant
        deadline = (self._now() + self._approval_timeout).replace(microsecond=0)
        # details: the params exactly as Codex sent them, from the untyped
        # decode of the checked line (depth and repeated keys already
        # checked, so nothing is lost; the core encoder checks the native bounds)
        native = Request(
            method="approval/request",
            id=rid,
            correlation_id=rid,
            params=ApprovalRequestParams(
                approval_id=rid,
                action=Action(
                    kind=kind,
                    description=description,
                    details={"codex_method": method, "codex_params": details},
                ),
                deadline=_timestamp(deadline),
                thread_id=params.threadId,
                turn_id=params.turnId,
                reason=why,
            ),
        )
        data = encode(native)
        self._next_native_id += 1
        deliver = groups is not None
        self._approvals[rid] = _Approval(
            codex_id=codex_id,
            codex_method=method,
            request=native,
            data=data,
            deadline=deadline,
            sent=deliver,
        )
        return [ToNative(message=native, data=data)] if deliver else []

    def _stream_resume(self, request: Request) -> ToNative:
        params = request.params
        assert isinstance(params, StreamResumeParams)
        replay = self._by_stream_id.get(params.stream_id)
        if replay is not None:
            try:
                return _reply(request, replay.page(params.cursor))
            except ProtocolError as exc:
                return _error(request, exc.code, exc.message, **(exc.data or {}))
        # also a checkpoint from an earlier bridge instance: its stream ids
        # are never reused, so it cannot resume into another stream's events
        return _error(
            request,
            ErrorCode.NOT_FOUND,
            "unknown stream: not one of this bridge instance's streams",
            stream_id=params.stream_id,
        )
