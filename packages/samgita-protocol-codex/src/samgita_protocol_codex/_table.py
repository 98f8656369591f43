"""The translation table: one source for the code and the README.

Every native method of SamgitaProtocol 1.0 and every Codex 0.163.0 method the
bridge reacts to has a row. ``kind="refused"`` rows are answered
``unsupported`` naming the method (native side); ``kind="handled_locally"``
rows are served by the bridge itself; Codex server requests without a row get
a JSON-RPC error naming them; nothing is dropped, there is no fallback.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal

import msgspec

__all__ = [
    "SUPPORTED_GROUPS",
    "TRANSLATIONS",
    "Translation",
    "render_table",
]

Direction = Literal["native->codex", "codex->native"]


Kind = Literal["codex", "handled_locally", "refused"]


class Translation(msgspec.Struct, frozen=True, kw_only=True):
    """One row: ``native`` method <-> ``codex`` methods.

    ``kind``: ``codex`` (translated to/from the ``codex`` methods),
    ``handled_locally`` (answered by the bridge itself, e.g. from its Replay;
    no Codex call), ``refused`` (answered ``unsupported``).
    """

    native: str
    codex: tuple[str, ...]
    direction: Direction
    group: str | None
    note: str
    kind: Kind = "codex"


#: Groups the bridge advertises in its native initialize result. Codex has no
#: project events and no request cancellation.
SUPPORTED_GROUPS: Final = frozenset({"sessions.v1", "streaming.v1", "approvals.v1"})

_N2C: Final = "native->codex"
_C2N: Final = "codex->native"

TRANSLATIONS: Final[tuple[Translation, ...]] = (
    Translation(native="connection/initialize", codex=("initialize", "initialized"), direction=_N2C, group=None,
                note="Codex `initialize`, then the Codex-only `initialized` notification; result advertises only supported groups"),
    Translation(native="thread/start", codex=("thread/start",), direction=_N2C, group="sessions.v1",
                note="`instructions` -> `developerInstructions`; `metadata` is refused (no Codex field)"),
    Translation(native="thread/read", codex=("thread/read",), direction=_N2C, group="sessions.v1",
                note="`includeTurns: true`; the native result holds at most 256 turns: the newest 256 are kept "
                     "(reported as a `truncated` `BridgeReport`)"),
    Translation(native="thread/resume", codex=("thread/resume",), direction=_N2C, group="sessions.v1", note=""),
    Translation(native="turn/start", codex=("turn/start",), direction=_N2C, group="sessions.v1",
                note="text input items only"),
    Translation(native="turn/steer", codex=("turn/steer",), direction=_N2C, group="sessions.v1",
                note="`turn_id` -> `expectedTurnId`"),
    Translation(native="turn/interrupt", codex=("turn/interrupt",), direction=_N2C, group="sessions.v1",
                note="result `interrupt_status: requested`; `turn/completed` is the evidence"),
    Translation(native="stream/resume", codex=(), direction=_N2C, group="streaming.v1", kind="handled_locally",
                note="answered by the bridge from its per-thread Replay (no Codex call)"),
    Translation(native="approval/request", codex=(), direction=_N2C, group="approvals.v1", kind="refused",
                note="refused when sent by the native client: Codex cannot be asked to approve"),
    Translation(native="project/event.receive", codex=(), direction=_N2C, group="project_events.v1", kind="refused",
                note="refused: Codex has no project events"),
    Translation(native="project/event.status", codex=(), direction=_N2C, group="project_events.v1", kind="refused",
                note="refused: Codex has no project events"),
    Translation(native="project/event.report", codex=(), direction=_N2C, group="project_events.v1", kind="refused",
                note="refused: Codex has no project events"),
    Translation(native="request/cancel", codex=(), direction=_N2C, group="cancellation.v1", kind="refused",
                note="refused: Codex has no request cancellation"),
    Translation(native="thread/started", codex=("thread/started",), direction=_C2N, group="sessions.v1", note=""),
    Translation(native="thread/closed", codex=("thread/closed",), direction=_C2N, group="sessions.v1", note=""),
    Translation(native="thread/closed", codex=("thread/status/changed",), direction=_C2N, group="sessions.v1",
                note="status `systemError` -> `thread/closed`; `idle`, `notLoaded`, `active` are not forwarded "
                     "(counted in `not_forwarded`)"),
    Translation(native="turn/started", codex=("turn/started",), direction=_C2N, group="sessions.v1", note=""),
    Translation(native="turn/completed", codex=("turn/completed",), direction=_C2N, group="sessions.v1", note=""),
    Translation(native="item/started", codex=("item/started",), direction=_C2N, group="streaming.v1",
                note="bridge-assigned `stream_id` per thread, contiguous `cursor`, kept in a Replay"),
    Translation(native="item/delta", codex=("item/agentMessage/delta", "item/reasoning/textDelta",
                "item/reasoning/summaryTextDelta", "item/commandExecution/outputDelta"),
                direction=_C2N, group="streaming.v1",
                note="one generic delta; a delta over 131072 code points becomes several `item/delta` "
                     "with contiguous cursors"),
    Translation(native="item/completed", codex=("item/completed",), direction=_C2N, group="streaming.v1",
                note="`text` over 131072 code points is cut, ending in a `[samgita bridge: text truncated, N code points in Codex]` marker"),
    Translation(native="approval/request", codex=("item/commandExecution/requestApproval",
                "item/fileChange/requestApproval"), direction=_C2N, group="approvals.v1",
                note="approve -> `accept`, deny -> `decline`; never approved by the bridge itself: without a native session it waits "
                     "and is sent after the next native initialize; re-sent unchanged (same `approval_id`, `action`, `deadline`) "
                     "after a native reconnect; past its deadline declined, never re-offered; refused (JSON-RPC error) only when "
                     "the session lacks approvals.v1"),
    Translation(native="-", codex=("serverRequest/resolved",), direction=_C2N, group="approvals.v1",
                note="ends the pending approval; a later native answer is refused (`unknown_request`)"),
)  # fmt: skip

#: Codex notification method -> native method (a delta row maps many to one).
CODEX_NOTIFICATIONS: Final = MappingProxyType(
    {
        codex: row.native
        for row in TRANSLATIONS
        if row.direction == _C2N and row.native != "approval/request"
        for codex in row.codex
    }
)

#: Codex server requests the bridge forwards as native ``approval/request``.
CODEX_APPROVAL_REQUESTS: Final = frozenset(
    codex
    for row in TRANSLATIONS
    if row.native == "approval/request"
    for codex in row.codex
)

#: Native request method -> its row (native -> codex direction).
NATIVE_REQUESTS: Final = MappingProxyType(
    {row.native: row for row in TRANSLATIONS if row.direction == _N2C}
)


def render_table() -> str:
    """The README's translation table (Markdown) rendered from :data:`TRANSLATIONS`."""
    lines = [
        "| Native | Direction | Codex 0.163.0 | Group | Note |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in TRANSLATIONS:
        if row.kind == "refused":
            codex = "**refused** (`unsupported`)"
        elif row.kind == "handled_locally":
            codex = "**served by the bridge** (no Codex call)"
        else:
            codex = ", ".join(f"`{m}`" for m in row.codex)
        native = f"`{row.native}`" if row.native != "-" else "-"
        lines.append(
            f"| {native} | {row.direction} | {codex} | {row.group or '-'} | {row.note} |"
        )
    lines.append(
        "| any other Codex notification | codex->native | - | - | "
        "counted in `unmapped_notifications` and surfaced as `CodexUnmapped` |"
    )
    lines.append(
        "| any other Codex server request | codex->native | - | - | "
        "answered with a JSON-RPC error naming the method, surfaced as `CodexUnmapped` |"
    )
    return "\n".join(lines) + "\n"
