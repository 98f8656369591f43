"""The translations themselves: native <-> Codex values, without any state.

What is translated is :data:`~._table.TRANSLATIONS`; this module says how:
native params -> Codex params (:func:`codex_params`), a Codex result -> the
native result (:func:`native_result`), a Codex notification's params -> the
native ones. The bridge (:mod:`._bridge`) keeps the state around them.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType
from samgita_protocol import (
    METHODS,
    ErrorCode,
    Item,
    ItemCompletedParams,
    ItemDeltaParams,
    ItemStartedParams,
    ProtocolError,
    Request,
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
)

from ._codex_lines import peer
from ._generated import outbound
from ._outputs import BridgeReport, Output, native_error, native_reply
from ._table import NATIVE_REQUESTS

__all__ = [
    "CLOSING_STATUSES",
    "FORWARDED",
    "MAX_DELTA_CHARS",
    "MAX_ITEM_TEXT_CHARS",
    "MAX_THREAD_READ_TURNS",
    "codex_params",
    "item_delta",
    "item_params",
    "native_result",
    "pieces",
    "thread",
    "thread_closed",
    "thread_started",
    "timestamp",
    "turn_params",
]

#: A Codex delta longer than this many code points becomes several native
#: ``item/delta`` notifications with contiguous cursors (at most 6 bytes a
#: code point when escaped, so each stays well under the 1 MiB message bound).
MAX_DELTA_CHARS: Final = 128 * 1024
#: ``Item.text`` (agent message text, command ``aggregatedOutput``) longer
#: than this is cut to it, followed by :data:`_TRUNCATED` naming the full length.
MAX_ITEM_TEXT_CHARS: Final = 128 * 1024
#: The native ``thread/read`` result holds at most 256 turns: the newest are kept.
MAX_THREAD_READ_TURNS: Final = 256

_TRUNCATED: Final = "\n[samgita bridge: text truncated, {total} code points in Codex]"

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
CLOSING_STATUSES: Final = frozenset({"systemError"})

# Largest epoch second a native timestamp (year <= 9999) can show.
_MAX_EPOCH: Final = 253_402_300_799
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


# ---------------------------------------------------------------- values


def timestamp(value: _dt.datetime) -> str:
    """``value`` as a native timestamp (UTC, whole seconds)."""
    return value.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch_timestamp(seconds: int) -> str:
    if not 0 <= seconds <= _MAX_EPOCH:
        raise peer(
            ErrorCode.INVALID_MESSAGE,
            "Codex createdAt is out of the range a timestamp can show",
            value=str(seconds)[:64],
        )
    return timestamp(_EPOCH + _dt.timedelta(seconds=seconds))


def thread(codex_thread: Any) -> Thread:
    """A Codex ``Thread`` as the native one."""
    status = _THREAD_STATUS.get(codex_thread.status.__struct_config__.tag, "closed")
    created = _epoch_timestamp(codex_thread.createdAt)
    return Thread(thread_id=codex_thread.id, status=status, created_at=created)  # type: ignore[arg-type]


def _turn(turn: Any, thread_id: str) -> Turn:
    status = _TURN_STATUS.get(turn.status)
    if status is None:
        raise peer(ErrorCode.INVALID_MESSAGE, "unknown Codex turn status")
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


def _text_input(items: Any) -> list[outbound.TextUserInput]:
    return [outbound.TextUserInput(text=item.text) for item in items]


def _by_subclass(table: Mapping[type, Any], params: object) -> Any:
    """``table``'s entry for a subclass of one of its types, or ``None``
    (the exact type is looked up first, by the caller)."""
    return next((fn for tp, fn in table.items() if isinstance(params, tp)), None)


# ----------------------------------------------------- native -> Codex requests


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
FORWARDED: Final[
    Mapping[str, tuple[str | None, type, Callable[[Any], tuple[str, msgspec.Struct]]]]
] = {
    method: (row.group, METHODS[method].params, _TO_CODEX[METHODS[method].params])
    for method, row in NATIVE_REQUESTS.items()
    if row.kind == "codex" and method != "connection/initialize"
}


def codex_params(request: Request) -> tuple[str, msgspec.Struct]:
    """The Codex method and params a forwarded native request becomes.

    Raises:
        ProtocolError: ``unsupported`` (a native field Codex has no place
            for, or a request with no translation).
    """
    p = request.params
    translate = _TO_CODEX.get(type(p)) or _by_subclass(_TO_CODEX, p)
    if translate is None:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED, f"{request.method} is not translated"
        )
    return translate(p)


# ------------------------------------------------------ Codex -> native results

_Translated = tuple[msgspec.Struct, BridgeReport | None]


def _thread_start_result(p: ThreadStartParams, result: Any) -> _Translated:
    return ThreadStartResult(thread=thread(result.thread)), None


def _thread_resume_result(p: ThreadResumeParams, result: Any) -> _Translated:
    return ThreadResumeResult(thread=thread(result.thread)), None


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
    return ThreadReadResult(thread=thread(result.thread), turns=turns), report


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


def native_result(native: Request, result: Any) -> list[Output]:
    """The native response to ``native`` made of Codex's decoded ``result``
    (validated as it is built), and a report when something was cut.

    Raises:
        msgspec.MsgspecError, ProtocolError, ValueError, OverflowError,
        OSError: a result the native schema cannot carry.
    """
    p = native.params
    translate = _TO_NATIVE.get(type(p)) or _by_subclass(_TO_NATIVE, p)
    if translate is None:
        return [
            native_error(native, ErrorCode.INTERNAL_ERROR, "untranslated Codex result")
        ]
    result_, report = translate(p, result)
    reply = native_reply(native, result_)
    return [reply] if report is None else [reply, report]


# ------------------------------------------------- Codex -> native notifications


def pieces(delta: str) -> list[str]:
    """``delta`` in pieces of at most :data:`MAX_DELTA_CHARS` code points."""
    if len(delta) <= MAX_DELTA_CHARS:
        return [delta]
    return [
        delta[i : i + MAX_DELTA_CHARS] for i in range(0, len(delta), MAX_DELTA_CHARS)
    ]


def item_delta(params: Any, delta: str) -> ItemDeltaParams:
    """A Codex delta notification's ids with ``delta`` (all of it or a piece)."""
    return ItemDeltaParams(
        thread_id=params.threadId,
        turn_id=params.turnId,
        item_id=params.itemId,
        delta=delta,
    )


def thread_closed(params: Any) -> ThreadClosedParams:
    """``thread/closed`` of a Codex ``thread/closed`` or closing status change."""
    return ThreadClosedParams(thread_id=params.threadId)


def thread_started(params: Any) -> ThreadStartedParams:
    """``thread/started`` of Codex's."""
    return ThreadStartedParams(thread=thread(params.thread))


def turn_params(method: str, params: Any) -> msgspec.Struct:
    """``turn/started`` or ``turn/completed`` (``method``) of Codex's."""
    cls = TurnStartedParams if method == "turn/started" else TurnCompletedParams
    return cls(turn=_turn(params.turn, params.threadId))


def item_params(method: str, params: Any) -> msgspec.Struct:
    """``item/started`` or ``item/completed`` (``method``) of Codex's."""
    done = method == "item/completed"
    cls = ItemCompletedParams if done else ItemStartedParams
    return cls(
        thread_id=params.threadId,
        turn_id=params.turnId,
        item=_item(params.item, completed=done),
    )
