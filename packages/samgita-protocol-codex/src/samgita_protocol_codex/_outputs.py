"""What the bridge hands its caller: the :data:`Output` values, and the native replies.

Every native reply is built here, so that each is validated by the core
(:func:`~samgita_protocol.encode`, and for a translated result
:func:`~samgita_protocol.encode_response`) as it is built.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET
from samgita_protocol import (
    METHODS,
    ErrorCode,
    ErrorObject,
    Message,
    ProtocolError,
    Request,
    encode,
    encode_response,
    response_to,
)

__all__ = [
    "ApprovalResolved",
    "BridgeReport",
    "CodexUnmapped",
    "Output",
    "ToCodex",
    "ToNative",
    "native_error",
    "native_refusal",
    "native_reply",
    "settled",
]


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


def native_error(
    request: Request, code: ErrorCode, message: str, **data: Any
) -> ToNative:
    """The native error response to ``request``, validated by the core encoder."""
    error = ErrorObject(code=code, message=message, data=data or UNSET)
    response = response_to(request, error=error)
    return ToNative(message=response, data=encode(response))


def native_refusal(request: Request, exc: ProtocolError) -> ToNative:
    """``exc`` (its code, message and data) as the native error response to ``request``."""
    return native_error(request, exc.code, exc.message, **(exc.data or {}))


def native_reply(request: Request, result: msgspec.Struct) -> ToNative:
    """A translated result: its bytes checked against the method's native
    result schema too (what the native peer's ``decode_result`` checks: a
    Codex value the schema cannot carry, a 300-byte turn id say, is an
    invalid reply, never a response the peer must refuse)."""
    response = response_to(request, result=result)
    return ToNative(message=response, data=encode_response(response, request.method))


def settled(native: Request, why: str) -> ToNative:
    """The answer to a request whose Codex call is cut off: a mutation is
    ``ambiguous_disconnect`` (Codex may have performed it), a read
    ``disconnected``."""
    spec = METHODS.get(native.method)
    if spec is not None and spec.mutation:
        return native_error(
            native, ErrorCode.AMBIGUOUS_DISCONNECT, f"{why} mid-request"
        )
    return native_error(native, ErrorCode.DISCONNECTED, why)
