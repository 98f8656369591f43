"""samgita_protocol_codex: limited translation between SamgitaProtocol 1.0 and Codex 0.163.0.

:class:`CodexBridge` is a sans-IO bridge (native envelopes and Codex JSON
lines in, :data:`Output` values out). What is translated and what is refused
is :data:`TRANSLATIONS` (the same table is in the package README). The
generated Codex types are private (``_generated.inbound`` tolerates unknown
fields, ``_generated.outbound`` forbids them).
"""

from ._bridge import (
    DEFAULT_APPROVAL_TIMEOUT,
    MAX_APPROVALS,
    MAX_PENDING,
    MAX_STREAMS,
    MAX_UNMAPPED_METHODS,
    UNMAPPED_OVERFLOW,
    CodexBridge,
)
from ._codex_lines import MAX_CODEX_DEPTH, MAX_CODEX_LINE_BYTES
from ._outputs import (
    ApprovalResolved,
    BridgeReport,
    CodexUnmapped,
    Output,
    ToCodex,
    ToNative,
)
from ._stdio import CodexStdio
from ._table import SUPPORTED_GROUPS, TRANSLATIONS, Translation, render_table
from ._translate import MAX_DELTA_CHARS, MAX_ITEM_TEXT_CHARS, MAX_THREAD_READ_TURNS
from ._ws import CodexWebSocket

__all__ = [
    # bridge (_bridge, _outputs; bounds from _codex_lines and _translate)
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
    # links (_stdio, _ws: needs the `websocket` extra when used)
    "CodexStdio",
    "CodexWebSocket",
    # table (_table)
    "SUPPORTED_GROUPS",
    "TRANSLATIONS",
    "Translation",
    "render_table",
]
