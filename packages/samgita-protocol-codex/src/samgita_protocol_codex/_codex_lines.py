"""Codex JSON lines: checked and decoded when read, strictly checked when written.

Reading: each line is checked on its bytes first (the core's
:func:`~samgita_protocol.load_json` with Codex's bounds), then decoded with
the tolerant generated ``inbound`` types: a translated notification or a
pending request's result in one typed decode of the whole line, anything
else in two stages (the JSON-RPC envelope with ``params``/``result`` left
raw, then the method's type). Writing: every line the bridge sends is
decoded again with the strict ``outbound`` types (unknown fields
forbidden), so a typo never reaches Codex. Every problem with what Codex
wrote is a :class:`~samgita_protocol.ProtocolError` with origin ``"peer"``
(:func:`peer`).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType
from samgita_protocol import ErrorCode, ProtocolError, load_json

from ._checks import check_line
from ._generated import inbound, outbound
from ._methods import request_types
from ._outputs import ToCodex
from ._table import CODEX_APPROVAL_REQUESTS, CODEX_NOTIFICATIONS

__all__ = [
    "MAX_CODEX_DEPTH",
    "MAX_CODEX_LINE_BYTES",
    "CodexError",
    "CodexIn",
    "approval_answer",
    "checked_line",
    "decode_envelope",
    "decode_result",
    "delta_line",
    "initialized_line",
    "notification_params",
    "peer",
    "refusal",
    "request_line",
    "server_request_params",
    "typed_notification",
    "typed_result",
]

#: Deepest container nesting accepted in one Codex line, checked on the
#: bytes before anything decodes them (msgspec recurses per level).
MAX_CODEX_DEPTH: Final = 128
#: Largest Codex line accepted (``message_too_large`` above it).
MAX_CODEX_LINE_BYTES: Final = 64 * 1024 * 1024

#: JSON-RPC "method not found", sent for Codex server requests the bridge refuses.
_METHOD_NOT_FOUND: Final = -32601


class CodexError(msgspec.Struct, frozen=True):
    """The ``error`` of a Codex JSON-RPC response."""

    code: int
    message: str


class CodexIn(msgspec.Struct, frozen=True):
    """First decoding stage: the JSON-RPC shape, ``params``/``result`` left raw."""

    id: int | str | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: CodexError | UnsetType = UNSET


_ENVELOPE: Final = msgspec.json.Decoder(CodexIn)
_ENCODER: Final = msgspec.json.Encoder()
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
# fields are those of the two stages (CodexIn, then the params or result
# type) that such a line can hold: ``error`` as CodexIn types it, ``params``
# or ``result`` typed; the fields left out (``method``, ``id``: the tree has
# their types; ``params`` of a response, ``result`` of a notification: any
# JSON in CodexIn) and unknown fields are ignored by both. So a line that
# decodes here decodes to the same values in two stages; one that does not is
# decoded in two stages again, which names the problem as it always did.
_NOTIFICATION_LINES: Final[Mapping[str, tuple[str, msgspec.json.Decoder[Any]]]] = {
    method: (
        CODEX_NOTIFICATIONS[method],
        _line_decoder(
            "_CodexNotificationLine",
            [("params", tp), ("error", CodexError | UnsetType, UNSET)],
        ),
    )
    for method, tp in _NOTIFICATION_PARAMS.items()
    if method in CODEX_NOTIFICATIONS
}
_RESULT_LINES: Final[Mapping[str, msgspec.json.Decoder[Any]]] = {
    method: _line_decoder("_CodexResultLine", [("result", _CLIENT_TYPES[method][1])])
    for method in _SENT_METHODS
}

# The agent-message delta line (the most frequent by far) proven without the
# untyped tree, kept for its figure: bench/translate.py's delta path costs
# 1.21-1.29x json with it, 1.48-1.55x without (about 20% more; 2026-12-05,
# 3 alternating runs each). codex-cli 0.163.0 writes it compact in this key
# order (tools/demo.py --codex): method, params (threadId, turnId, itemId,
# delta), emittedAtMs. A line that is exactly the encoding of what this strict
# type (unknown fields forbidden) decodes from it has no repeated key (a
# collapsed entry would be missing from the encoding), no other field, valid
# UTF-8 (every string was decoded) and the type's depth: what load_json
# proves. The params decode to the same values as the generated type's (same
# names and types, the wire's order); any other line takes the general path.
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


def delta_line(line: bytes) -> tuple[str, str, Any] | None:
    """``(method, native method, params)`` of a proven delta line, or ``None``."""
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


def peer(code: ErrorCode, message: str, **data: Any) -> ProtocolError:
    """A :class:`~samgita_protocol.ProtocolError` that blames Codex (origin ``"peer"``)."""
    return ProtocolError(code, message, data=data or None, origin="peer")


def checked_line(line: Any) -> tuple[bytes, Any]:
    """The line's bytes and its untyped JSON tree, or a peer ProtocolError.

    The byte-level rules are the core's (:func:`samgita_protocol.load_json`:
    size before parsing, depth on the bytes, UTF-8, one value, no repeated
    key) with Codex's bounds, and the core's error codes (a lone-surrogate
    ``\\u`` escape is ``invalid_utf8``, as in ``load_json`` and ``decode``:
    one rule for both), origin ``"peer"``.

    Raises:
        TypeError: ``line`` is not ``bytes``, ``bytearray`` or ``memoryview``.
    """
    if type(line) is not bytes:
        check_line("line", line)
    try:
        # sized before a bytearray or memoryview is copied
        tree = load_json(
            line, max_bytes=MAX_CODEX_LINE_BYTES, max_depth=MAX_CODEX_DEPTH
        )
    except ProtocolError as exc:
        raise peer(
            exc.code, f"Codex line: {exc.message}"[:512], **(exc.data or {})
        ) from None
    return bytes(line) if type(line) is not bytes else line, tree


def typed_notification(data: bytes, method: Any) -> tuple[str, str, Any] | None:
    """``(method, native method, params)`` of a translated notification line
    in one typed decode, or ``None`` (``method``: the tree's, any JSON)."""
    fast = _NOTIFICATION_LINES.get(method) if type(method) is str else None
    if fast is None:
        return None
    try:
        params = fast[1].decode(data).params
    except msgspec.MsgspecError:
        return None  # the two stages name the problem
    return method, fast[0], params


def typed_result(data: bytes, method: str) -> Any:
    """The result of a whole response line to a ``method`` request in one
    typed decode, or ``UNSET`` (the two stages name the problem)."""
    decoder = _RESULT_LINES.get(method)
    if decoder is None:
        return UNSET
    try:
        return decoder.decode(data).result
    except msgspec.MsgspecError:
        return UNSET


def decode_envelope(data: bytes) -> CodexIn:
    """First stage: the JSON-RPC envelope (raises ``msgspec.MsgspecError``)."""
    return _ENVELOPE.decode(data)


def decode_result(method: str, raw: msgspec.Raw | UnsetType) -> Any:
    """Second stage of a response to a ``method`` request: its typed result."""
    raw = raw if raw is not UNSET else msgspec.Raw(b"null")
    decoder = _RESULT_DECODERS.get(method)
    if decoder is not None:
        return decoder.decode(raw)
    return msgspec.json.decode(raw, type=_CLIENT_TYPES[method][1])


def notification_params(method: str, raw: msgspec.Raw | UnsetType) -> Any:
    """Second stage of a translated notification: its typed params."""
    return _NOTIFICATION_DECODERS[method].decode(raw if raw is not UNSET else b"{}")


def server_request_params(method: str, raw: msgspec.Raw | UnsetType) -> Any:
    """Second stage of a Codex server request: its typed params."""
    return msgspec.json.decode(
        raw if raw is not UNSET else b"null", type=_SERVER_TYPES[method][0]
    )


def request_line(codex_id: int, method: str, params: msgspec.Struct) -> bytes:
    """The bridge's Codex request, encoded and checked with the strict types."""
    strict = _STRICT_REQUESTS.get(method)
    if strict is not None:
        # the method's strict ClientRequest variant: built, encoded and
        # decoded again (outbound validation: unknown fields forbidden)
        data = _ENCODER.encode(strict[0](id=codex_id, params=params))
        strict[1].decode(data)
    else:
        data = _ENCODER.encode({"id": codex_id, "method": method, "params": params})
        _STRICT_REQUEST.decode(data)
    return data + b"\n"


def initialized_line() -> ToCodex:
    """Codex's ``initialized`` notification, strictly checked."""
    note = _ENCODER.encode({"method": "initialized"})
    _STRICT_NOTIFICATION.decode(note)
    return ToCodex(data=note + b"\n")


def approval_answer(codex_id: int | str, method: str, decision: str) -> ToCodex:
    """The answer to a Codex approval request, the result strictly checked."""
    body = _ENCODER.encode({"id": codex_id, "result": {"decision": decision}})
    _STRICT_APPROVAL_RESULT[method].decode(_ENCODER.encode({"decision": decision}))
    return ToCodex(data=body + b"\n", id=codex_id)


def refusal(codex_id: int | str, method: str) -> ToCodex:
    """A JSON-RPC error for a Codex server request the bridge does not serve."""
    reason = (
        "not supported" if method not in CODEX_APPROVAL_REQUESTS else "not negotiated"
    )
    body = {
        "id": codex_id,
        "error": {
            "code": _METHOD_NOT_FOUND,
            "message": f"samgita bridge: {method} is {reason}",
        },
    }
    return ToCodex(data=_ENCODER.encode(body) + b"\n", id=codex_id)
