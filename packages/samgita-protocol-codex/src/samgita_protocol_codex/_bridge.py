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
  generated types, and decodes Codex input with the tolerant (``inbound``)
  ones, params in a second stage from ``msgspec.Raw``;
* sequences thread-scoped notifications per Codex thread into a core
  :class:`~samgita_protocol.Replay` with a bridge-assigned ``stream_id``, so
  ``stream/resume`` is answered after a native reconnect;
* never answers an approval itself.
"""

from __future__ import annotations

import datetime as _dt
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
    "ApprovalResolved",
    "CodexBridge",
    "CodexUnmapped",
    "Output",
    "ToCodex",
    "ToNative",
]

#: Default time a native client has to answer a forwarded approval (the
#: native ``deadline``); Codex itself waits without a bound.
DEFAULT_APPROVAL_TIMEOUT: Final = _dt.timedelta(minutes=5)

#: JSON-RPC "method not found", sent for Codex server requests the bridge refuses.
_METHOD_NOT_FOUND: Final = -32601


class ToCodex(msgspec.Struct, frozen=True, kw_only=True):
    """One JSON line (newline-terminated) to write to the Codex link."""

    data: bytes


class ToNative(msgspec.Struct, frozen=True, kw_only=True):
    """One native envelope to send to the native peer."""

    message: Message


class CodexUnmapped(msgspec.Struct, frozen=True, kw_only=True):
    """A Codex notification or server request with no native translation."""

    kind: Literal["notification", "request"]
    method: str


class ApprovalResolved(msgspec.Struct, frozen=True, kw_only=True):
    """Codex settled a forwarded approval itself (``serverRequest/resolved``) or went away."""

    request_id: str


Output = ToCodex | ToNative | CodexUnmapped | ApprovalResolved


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
_STRICT_REQUEST: Final = msgspec.json.Decoder(outbound.ClientRequest)
_STRICT_NOTIFICATION: Final = msgspec.json.Decoder(outbound.ClientNotification)
_CLIENT_TYPES: Final = request_types(inbound.ClientRequest)
_SERVER_TYPES: Final = request_types(inbound.ServerRequest)
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
_TURN_STATUS: Final = {
    "inProgress": "in_progress",
    "completed": "completed",
    "interrupted": "interrupted",
    "failed": "failed",
}
_THREAD_STATUS: Final = {"idle": "idle", "notLoaded": "idle", "active": "active"}


def _timestamp(value: _dt.datetime) -> str:
    return value.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _thread(thread: Any) -> Thread:
    status = _THREAD_STATUS.get(thread.status.__struct_config__.tag, "closed")
    created = _dt.datetime.fromtimestamp(thread.createdAt, _dt.UTC)
    return Thread(thread_id=thread.id, status=status, created_at=_timestamp(created))  # type: ignore[arg-type]


def _turn(turn: Any, thread_id: str) -> Turn:
    return Turn(turn_id=turn.id, thread_id=thread_id, status=_TURN_STATUS[turn.status])  # type: ignore[arg-type]


def _item(item: Any, *, completed: bool) -> Item:
    kind = item.__struct_config__.tag
    text: str | UnsetType = UNSET
    if kind == "agentMessage":
        text = item.text
    elif kind == "commandExecution" and isinstance(item.aggregatedOutput, str):
        text = item.aggregatedOutput
    status: Any = UNSET
    if completed:
        failed = getattr(item, "status", "completed") in ("failed", "declined")
        status = "failed" if failed else "completed"
    return Item(item_id=item.id, type=kind, text=text, status=status)


def _text_input(items: Any) -> list[outbound.TextUserInput]:
    return [outbound.TextUserInput(text=item.text) for item in items]


def _error(request: Request, code: ErrorCode, message: str, **data: Any) -> ToNative:
    error = ErrorObject(code=code, message=message, data=data or UNSET)
    return ToNative(
        message=Response(
            id=request.id,
            correlation_id=request.correlation_id,
            command_id=request.command_id,
            error=error,
        )
    )


def _reply(request: Request, result: msgspec.Struct) -> ToNative:
    return ToNative(
        message=Response(
            id=request.id,
            correlation_id=request.correlation_id,
            command_id=request.command_id,
            result=result,
        )
    )


class _Pending(msgspec.Struct, kw_only=True):
    method: str  # the Codex method
    native: Request


class _Approval(msgspec.Struct, kw_only=True):
    codex_id: int | str
    codex_method: str
    request: Request


class CodexBridge:
    """One native connection's host, bridged to one Codex app-server link.

    Args:
        host_id: the native ``host_id`` this bridge reports (keep it stable
            across restarts so clients keep their stream checkpoints).
        client_name, client_version: Codex ``clientInfo``.
        approval_timeout: native ``deadline`` of forwarded approvals.
        now: the wall clock (tests pass a fixed one).
        max_events, max_bytes: bounds of each per-thread :class:`Replay`.
    """

    def __init__(
        self,
        *,
        host_id: str,
        client_name: str = "samgita-protocol-codex",
        client_version: str = "0.1.0",
        approval_timeout: _dt.timedelta = DEFAULT_APPROVAL_TIMEOUT,
        now: Callable[[], _dt.datetime] | None = None,
        max_events: int = 1024,
        max_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self._host_id = host_id
        self._client_info = outbound.ClientInfo(
            name=client_name, version=client_version
        )
        self._approval_timeout = approval_timeout
        self._now = now or (lambda: _dt.datetime.now(_dt.UTC))
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._next_codex_id = 0
        self._next_native_id = 0
        self._codex: Literal["fresh", "initializing", "ready", "down"] = "fresh"
        self._native_groups: frozenset[str] | None = None
        self._pending: dict[int, _Pending] = {}
        self._approvals: dict[str, _Approval] = {}
        self._streams: dict[str, Replay] = {}  # Codex thread id -> its native stream
        self._connection_seq = 0
        #: Codex notifications without a native translation, by method.
        self.unmapped_notifications: Counter[str] = Counter()

    # ------------------------------------------------------------ native side

    def native_connected(self) -> None:
        """A new native connection: it must ``connection/initialize`` again."""
        self._native_groups = None

    def stream_id(self, thread_id: str) -> str | None:
        """The native ``stream_id`` of a Codex thread, once it has one."""
        replay = self._streams.get(thread_id)
        return replay.stream_id if replay is not None else None

    def native_request(self, request: Request) -> list[Output]:
        """Translate one decoded native request.

        Refusals come back as native error responses (``not_initialized``,
        ``unsupported`` naming the method, ``disconnected`` while the Codex
        link is down, ``not_found`` for an unknown stream); nothing is raised
        for a well-formed request.

        Raises:
            ProtocolError: ``invalid_message`` when ``request`` is not a Request.
        """
        if not isinstance(request, Request):
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "expected a native Request")
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
        if row is None or row.group not in self._native_groups:
            return [
                _error(
                    request,
                    ErrorCode.UNSUPPORTED,
                    f"{method} is not supported by the Codex bridge",
                    method=method,
                )
            ]
        if method == "stream/resume":
            return [self._stream_resume(request)]
        if not row.codex:
            return [
                _error(
                    request,
                    ErrorCode.UNSUPPORTED,
                    f"{method} is not supported by the Codex bridge",
                    method=method,
                )
            ]
        if self._codex != "ready":
            return [
                _error(request, ErrorCode.DISCONNECTED, "the Codex link is not ready")
            ]
        try:
            codex_method, params = self._codex_params(request)
        except ProtocolError as exc:
            return [_error(request, exc.code, exc.message, **(exc.data or {}))]
        return [self._send_codex_request(codex_method, params, request)]

    def native_response(self, response: Response) -> list[Output]:
        """The native peer's answer to a forwarded ``approval/request``.

        ``approve`` becomes Codex ``accept``, ``deny`` (or a native error)
        ``decline``.

        Raises:
            ProtocolError: ``unknown_request`` for a response to no pending
                approval (never asked, already answered, or settled by Codex);
                ``approval_mismatch`` when the result's ``approval_id`` or
                ``action`` differ from the request; ``invalid_result`` for a
                malformed result.
        """
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
            if (
                result.approval_id != params.approval_id
                or result.action != params.action
            ):
                raise ProtocolError(
                    ErrorCode.APPROVAL_MISMATCH,
                    "result does not match the approval request",
                )
            decision = "accept" if result.decision == "approve" else "decline"
        del self._approvals[response.id]
        body = _ENCODER.encode(
            {"id": approval.codex_id, "result": {"decision": decision}}
        )
        _STRICT_APPROVAL_RESULT[approval.codex_method].decode(
            _ENCODER.encode({"decision": decision})
        )
        return [ToCodex(data=body + b"\n")]

    # ------------------------------------------------------------- codex side

    def codex_connected(self) -> list[Output]:
        """A (re)opened Codex link: re-initializes it when a native session exists."""
        self._codex = "fresh"
        if self._native_groups is None:
            return []
        self._codex = "initializing"
        return [self._send_codex_request("initialize", self._initialize_params(), None)]

    def codex_disconnected(self) -> list[Output]:
        """The Codex link is gone: settle everything in flight, re-send nothing.

        A pending mutation becomes ``ambiguous_disconnect`` (Codex may have
        performed it), a pending read ``disconnected``; forwarded approvals
        end with :class:`ApprovalResolved`. Streams are kept.
        """
        self._codex = "down"
        out: list[Output] = []
        for pending in self._pending.values():
            native = pending.native
            spec = METHODS.get(native.method)
            if spec is not None and spec.mutation:
                out.append(
                    _error(
                        native,
                        ErrorCode.AMBIGUOUS_DISCONNECT,
                        "Codex link lost mid-request",
                    )
                )
            else:
                out.append(_error(native, ErrorCode.DISCONNECTED, "Codex link lost"))
        self._pending.clear()
        out.extend(ApprovalResolved(request_id=rid) for rid in self._approvals)
        self._approvals.clear()
        return out

    def receive_codex(self, line: bytes) -> list[Output]:
        """Translate one JSON line from Codex.

        Raises:
            ProtocolError: ``invalid_message`` for a line that is not a
                JSON-RPC message of the pinned schema (the link is broken;
                the caller should close it).
        """
        try:
            msg = _ENVELOPE.decode(line)
        except msgspec.DecodeError as exc:
            raise ProtocolError(
                ErrorCode.INVALID_MESSAGE, f"bad Codex message: {exc}", origin="peer"
            ) from None
        try:
            if msg.method is UNSET:
                return self._codex_response(msg)
            if msg.id is UNSET:
                return self._codex_notification(msg.method, msg.params)
            return self._codex_server_request(msg.id, msg.method, msg.params)
        except msgspec.ValidationError as exc:
            raise ProtocolError(
                ErrorCode.INVALID_MESSAGE,
                f"Codex message does not match the 0.163.0 schema: {exc}",
                origin="peer",
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
            return [self._initialized(request)]
        if any(p.method == "initialize" for p in self._pending.values()):
            return [_error(request, ErrorCode.CONFLICT, "an initialize is in progress")]
        return [
            self._send_codex_request("initialize", self._initialize_params(), request)
        ]

    def _initialized(self, request: Request) -> ToNative:
        params = request.params
        assert isinstance(params, InitializeParams)
        groups = sorted(SUPPORTED_GROUPS.intersection(params.capabilities))
        self._native_groups = frozenset(groups)
        self._connection_seq += 1
        return _reply(
            request,
            InitializeResult(
                version="1.0",
                capabilities=groups,
                connection_id=f"{self._host_id}-{self._connection_seq}",
                host_id=self._host_id,
            ),
        )

    def _codex_params(self, request: Request) -> tuple[str, msgspec.Struct]:
        p = request.params
        if isinstance(p, ThreadStartParams):
            if p.metadata is not UNSET:
                raise ProtocolError(
                    ErrorCode.UNSUPPORTED,
                    "thread/start metadata has no Codex equivalent",
                    data={"method": "thread/start", "field": "metadata"},
                )
            dev = p.instructions if p.instructions is not UNSET else UNSET
            return "thread/start", outbound.ThreadStartParams(developerInstructions=dev)
        if isinstance(p, ThreadReadParams):
            return "thread/read", outbound.ThreadReadParams(
                threadId=p.thread_id, includeTurns=True
            )
        if isinstance(p, ThreadResumeParams):
            return "thread/resume", outbound.ThreadResumeParams(threadId=p.thread_id)
        if isinstance(p, TurnStartParams):
            return "turn/start", outbound.TurnStartParams(
                threadId=p.thread_id,
                input=_text_input(p.input),  # type: ignore[arg-type]
            )
        if isinstance(p, TurnSteerParams):
            return "turn/steer", outbound.TurnSteerParams(
                threadId=p.thread_id,
                expectedTurnId=p.turn_id,
                input=_text_input(p.input),  # type: ignore[arg-type]
            )
        if isinstance(p, TurnInterruptParams):
            return "turn/interrupt", outbound.TurnInterruptParams(
                threadId=p.thread_id, turnId=p.turn_id
            )
        raise ProtocolError(
            ErrorCode.UNSUPPORTED, f"{request.method} is not translated"
        )

    def _send_codex_request(
        self, method: str, params: msgspec.Struct, native: Request | None
    ) -> ToCodex:
        codex_id = self._next_codex_id
        data = _ENCODER.encode({"id": codex_id, "method": method, "params": params})
        _STRICT_REQUEST.decode(data)  # outbound validation: unknown fields forbidden
        self._next_codex_id += 1
        if native is not None:
            self._pending[codex_id] = _Pending(method=method, native=native)
        elif method == "initialize":
            self._pending[codex_id] = _Pending(method=method, native=_REINITIALIZE)
        return ToCodex(data=data + b"\n")

    def _codex_response(self, msg: _CodexIn) -> list[Output]:
        if not isinstance(msg.id, int) or msg.id not in self._pending:
            raise ProtocolError(
                ErrorCode.UNKNOWN_RESPONSE,
                "Codex answered a request the bridge did not send",
                data={"id": str(msg.id)},
                origin="peer",
            )
        pending = self._pending.pop(msg.id)
        native = pending.native
        if msg.error is not UNSET:
            if pending.method == "initialize":
                self._codex = "fresh"
            if native is _REINITIALIZE:
                return []
            return [
                _error(
                    native,
                    ErrorCode.INTERNAL_ERROR,
                    f"Codex {pending.method} failed: {msg.error.message}"[:1024],
                    codex_code=msg.error.code,
                )
            ]
        raw = msg.result if msg.result is not UNSET else msgspec.Raw(b"null")
        result = msgspec.json.decode(raw, type=_CLIENT_TYPES[pending.method][1])
        if pending.method == "initialize":
            self._codex = "ready"
            note = _ENCODER.encode({"method": "initialized"})
            _STRICT_NOTIFICATION.decode(note)
            out: list[Output] = [ToCodex(data=note + b"\n")]
            if native is not _REINITIALIZE:
                out.append(self._initialized(native))
            return out
        return [self._native_result(native, result)]

    def _native_result(self, native: Request, result: Any) -> ToNative:
        p = native.params
        if isinstance(p, ThreadStartParams):
            return _reply(native, ThreadStartResult(thread=_thread(result.thread)))
        if isinstance(p, ThreadResumeParams):
            return _reply(native, ThreadResumeResult(thread=_thread(result.thread)))
        if isinstance(p, ThreadReadParams):
            turns = [_turn(t, result.thread.id) for t in (result.thread.turns or [])][
                :256
            ]
            return _reply(
                native, ThreadReadResult(thread=_thread(result.thread), turns=turns)
            )
        if isinstance(p, TurnStartParams):
            return _reply(native, TurnStartResult(turn=_turn(result.turn, p.thread_id)))
        if isinstance(p, TurnSteerParams):
            turn = Turn(
                turn_id=result.turnId, thread_id=p.thread_id, status="in_progress"
            )
            return _reply(native, TurnSteerResult(turn=turn))
        if isinstance(p, TurnInterruptParams):
            return _reply(
                native,
                TurnInterruptResult(
                    thread_id=p.thread_id,
                    turn_id=p.turn_id,
                    interrupt_status="requested",
                ),
            )
        return _error(native, ErrorCode.INTERNAL_ERROR, "untranslated Codex result")

    def _sequenced(
        self, thread_id: str, method: str, params: msgspec.Struct
    ) -> ToNative:
        replay = self._streams.get(thread_id)
        if replay is None:
            replay = Replay(
                f"codex-stream-{len(self._streams) + 1}",
                max_events=self._max_events,
                max_bytes=self._max_bytes,
            )
            self._streams[thread_id] = replay
        return ToNative(
            message=replay.append(Notification(method=method, params=params))
        )

    def _codex_notification(
        self, method: str, raw: msgspec.Raw | UnsetType
    ) -> list[Output]:
        native = CODEX_NOTIFICATIONS.get(method)
        if native is None:
            self.unmapped_notifications[method] += 1
            return [CodexUnmapped(kind="notification", method=method)]
        params = _NOTIFICATION_DECODERS[method].decode(
            raw if raw is not UNSET else b"{}"
        )
        if method == "serverRequest/resolved":
            return self._resolved(params.requestId)
        if self._native_groups is None:
            return []  # no native session yet: nothing to deliver to
        if method == "thread/started":
            note = Notification(
                method=native, params=ThreadStartedParams(thread=_thread(params.thread))
            )
            return [ToNative(message=note)]
        if method == "thread/closed":
            note = Notification(
                method=native, params=ThreadClosedParams(thread_id=params.threadId)
            )
            return [ToNative(message=note)]
        if method in ("turn/started", "turn/completed"):
            cls = TurnStartedParams if method == "turn/started" else TurnCompletedParams
            return [
                self._sequenced(
                    params.threadId,
                    native,
                    cls(turn=_turn(params.turn, params.threadId)),
                )
            ]
        if "streaming.v1" not in self._native_groups:
            return []
        if method in ("item/started", "item/completed"):
            done = method == "item/completed"
            cls2 = ItemCompletedParams if done else ItemStartedParams
            item_params = cls2(
                thread_id=params.threadId,
                turn_id=params.turnId,
                item=_item(params.item, completed=done),
            )
            return [self._sequenced(params.threadId, native, item_params)]
        delta = ItemDeltaParams(
            thread_id=params.threadId,
            turn_id=params.turnId,
            item_id=params.itemId,
            delta=params.delta,
        )
        return [self._sequenced(params.threadId, native, delta)]

    def _resolved(self, codex_id: int | str) -> list[Output]:
        for rid, approval in list(self._approvals.items()):
            if approval.codex_id == codex_id:
                del self._approvals[rid]
                return [ApprovalResolved(request_id=rid)]
        return []

    def _codex_server_request(
        self, codex_id: int | str, method: str, raw: msgspec.Raw | UnsetType
    ) -> list[Output]:
        groups = self._native_groups or frozenset()
        if method not in CODEX_APPROVAL_REQUESTS or "approvals.v1" not in groups:
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
            return [
                ToCodex(data=_ENCODER.encode(body) + b"\n"),
                CodexUnmapped(kind="request", method=method),
            ]
        params = msgspec.json.decode(
            raw if raw is not UNSET else b"null", type=_SERVER_TYPES[method][0]
        )
        details = msgspec.json.decode(raw) if raw is not UNSET else {}
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
        self._next_native_id += 1
        rid = f"codex-approval-{self._next_native_id}"
        native = Request(
            method="approval/request",
            id=rid,
            correlation_id=rid,
            params=ApprovalRequestParams(
                approval_id=f"codex-{method}-{codex_id}",
                action=Action(
                    kind=kind,
                    description=description,
                    details={"codex_method": method, "codex_params": details},
                ),
                deadline=_timestamp(self._now() + self._approval_timeout),
                thread_id=params.threadId,
                turn_id=params.turnId,
                reason=why,
            ),
        )
        self._approvals[rid] = _Approval(
            codex_id=codex_id, codex_method=method, request=native
        )
        return [ToNative(message=native)]

    def _stream_resume(self, request: Request) -> ToNative:
        params = request.params
        assert isinstance(params, StreamResumeParams)
        for replay in self._streams.values():
            if replay.stream_id == params.stream_id:
                try:
                    return _reply(request, replay.page(params.cursor))
                except ProtocolError as exc:
                    return _error(request, exc.code, exc.message, **(exc.data or {}))
        return _error(
            request, ErrorCode.NOT_FOUND, "unknown stream", stream_id=params.stream_id
        )


# The pending entry of a Codex re-initialize, which has no native request.
_REINITIALIZE: Final = Request(
    method="connection/initialize",
    id="codex-reinitialize",
    correlation_id="codex-reinitialize",
    params=InitializeParams(versions=["1.0"], capabilities=[]),
)
