"""The bridge's line intake costs time linear in the line, on any line.

``receive_codex`` checks a line with the core's ``load_json`` rules before
anything else; a check quadratic on some shape would let Codex (or whatever
writes its pipe) stall the bridge with one line (issue 18). For each
pathological shape the cost of 256 KiB is held to at most ``LIMIT`` times the
cost of 32 KiB (linear is 8x, quadratic 64x): best of alternating runs,
measured again before it fails, never an absolute time. The core's own
``tests/test_cost.py`` covers its entry points the same way.
"""

from __future__ import annotations

import msgspec
import pytest
from samgita_protocol import ErrorCode, ProtocolError
from samgita_protocol.testing import cost_ratio

from samgita_protocol_codex import CodexBridge

SMALL = 32 * 1024
LARGE = 256 * 1024
LIMIT = 16.0  # twice linear: a garbage collection or a busy machine passes

_NOTE = b'{"method":"item/agentMessage/delta","params":{"threadId":"t","delta":'

#: name -> (head, unit repeated to the size, tail)
SHAPES = {
    # past MAX_CODEX_DEPTH (128) brackets, so the depth is not a mere count
    "unterminated string of escaped quotes": (b"[" * 129 + b'"', b'\\"', b""),
    "brackets inside an unterminated string": (_NOTE + b'"', b'[{\\"', b""),
    "deep nesting then garbage": (b"[" * 129, b" ", b"x"),
    "many keys, one repeated": (b'{"params":{', b'"k":1,', b'"k":2}}'),
    "lone surrogate escapes": (_NOTE + b'"', b"\\udc00\\\\", b'"}}'),
}


def _line(shape: tuple[bytes, bytes, bytes], size: int) -> bytes:
    head, unit, tail = shape
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def _parse(line: bytes) -> object:
    """msgspec's own parse of the line: the objects any decoder builds."""
    try:
        return msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None


def _intake(bridge: CodexBridge, line: bytes) -> ErrorCode | None:
    try:
        bridge.receive_codex(line)
    except ProtocolError as exc:
        return exc.code
    return None


@pytest.mark.parametrize("shape", SHAPES)
def test_line_intake_cost_is_linear(shape: str) -> None:
    bridge = CodexBridge(host_id="cost")
    small, large = _line(SHAPES[shape], SMALL), _line(SHAPES[shape], LARGE)
    ratio = cost_ratio(
        lambda line: _intake(bridge, line), small, large, limit=LIMIT, baseline=_parse
    )
    assert ratio <= LIMIT, f"{shape!r}: 8x the line cost {ratio:.1f}x"


def test_an_unterminated_string_is_invalid_json_at_once() -> None:
    # 3 s before the fix (the depth scan retried its string pattern from
    # every quote); now msgspec's one pass refuses it first.
    line = b"[" * 129 + b'"' + b'\\"' * 16000
    assert _intake(CodexBridge(host_id="cost"), line) is ErrorCode.INVALID_JSON
