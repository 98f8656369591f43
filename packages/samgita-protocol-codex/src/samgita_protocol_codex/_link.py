"""The Codex link as the bridge sees it: its state, the bridge's request ids, what is pending.

JSON-RPC ids are the bridge's own (0, 1, 2, ...), never reused, not even
after a reconnect. A pending entry is removed only once Codex's answer has
been decoded and translated, so a bad answer leaves it in place until it is
answered ``invalid_result``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from samgita_protocol import ErrorCode, ProtocolError, Request

from ._codex_lines import CodexError, initialized_line, peer, request_line
from ._generated import outbound
from ._outputs import BridgeReport, Output, ToCodex, native_error, settled
from ._translate import native_result

__all__ = ["CodexLink", "Pending"]

LinkState = Literal["fresh", "initializing", "ready", "down"]


class Pending(msgspec.Struct, kw_only=True):
    """A bridge request Codex has not answered yet."""

    method: str  # the Codex method
    # None: the bridge's own re-initialize, or a request whose native
    # connection went away (its late answer is absorbed).
    native: Request | None


def _clean(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` code points, lone surrogates escaped (always encodable)."""
    return text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


class CodexLink:
    """The bridge's side of one Codex link (the link itself is the caller's).

    ``state``: ``fresh`` (not initialized), ``initializing``, ``ready``,
    ``down`` (a re-initialize failed: reconnect it).
    """

    def __init__(self, *, client_info: outbound.ClientInfo, max_pending: int) -> None:
        self._client_info = client_info
        self.max_pending = max_pending
        self.state: LinkState = "fresh"
        self.next_id = 0
        self.pending: dict[int, Pending] = {}

    def send(
        self, method: str, params: msgspec.Struct, native: Request | None
    ) -> ToCodex:
        """A bridge request to Codex (strictly checked), then pending."""
        codex_id = self.next_id
        data = request_line(codex_id, method, params)
        self.next_id = codex_id + 1
        self.pending[codex_id] = Pending(method=method, native=native)
        return ToCodex(data=data, id=codex_id)

    def initialize(self, native: Request | None) -> ToCodex:
        """Codex ``initialize`` (``native``: the native initialize waiting for it)."""
        return self.send(
            "initialize",
            outbound.InitializeParams(clientInfo=self._client_info),
            native,
        )

    def join_initialize(self, request: Request) -> list[Output]:
        """A native initialize while the link is ``fresh``: Codex ``initialize``
        is sent for it, unless one is in flight already."""
        for pending in self.pending.values():
            if pending.method == "initialize":
                if pending.native is None:
                    # an orphaned initialize (its native connection went
                    # away): this request takes its answer
                    pending.native = request
                    return []
                return [
                    native_error(
                        request, ErrorCode.CONFLICT, "an initialize is in progress"
                    )
                ]
        return [self.initialize(request)]

    def orphan(self, why: str) -> list[Output]:
        """The native connection went away: its pending requests are answered
        now, and Codex's later answers to them absorbed."""
        out: list[Output] = []
        for pending in self.pending.values():
            if pending.native is not None:
                out.append(settled(pending.native, why))
                pending.native = None
        return out

    def settle(self, why: str) -> list[Output]:
        """The Codex link is gone: every pending request ends, nothing is re-sent."""
        out: list[Output] = [
            settled(pending.native, why)
            for pending in self.pending.values()
            if pending.native is not None
        ]
        self.pending.clear()
        return out

    def answered(self, value: object) -> tuple[int, Pending]:
        """The pending request a Codex response's ``id`` answers.

        Raises:
            ProtocolError: ``unknown_response`` (origin ``"peer"``).
        """
        pending = self.pending.get(value) if type(value) is int else None
        if pending is None:
            raise peer(
                ErrorCode.UNKNOWN_RESPONSE,
                "Codex answered a request the bridge did not send",
                id=str(value)[:256],
            )
        return value, pending  # type: ignore[return-value]

    def initialized(self, codex_id: int) -> ToCodex:
        """Codex answered the bridge's ``initialize``: the link is ready."""
        del self.pending[codex_id]
        self.state = "ready"
        return initialized_line()

    def result(self, codex_id: int, pending: Pending, result: Any) -> list[Output]:
        """A decoded Codex result of a pending request other than
        ``initialize``, translated (an invalid one answered as such)."""
        native = pending.native
        try:
            # every ToNative is validated (result and envelope) as it is built
            out = native_result(native, result) if native is not None else []
        except (
            msgspec.MsgspecError,
            ProtocolError,
            ValueError,
            OverflowError,
            OSError,
        ) as exc:
            return self.invalid(codex_id, pending, exc)
        del self.pending[codex_id]
        return out

    def invalid(self, codex_id: int, pending: Pending, exc: Exception) -> list[Output]:
        """A Codex result that does not decode or translate: answered, reported."""
        native = pending.native
        del self.pending[codex_id]
        reason = _clean(str(exc), 512)
        report = BridgeReport(
            kind="invalid_reply", method=pending.method, message=reason
        )
        if pending.method == "initialize":
            self.state = "fresh" if native is not None else "down"
        if native is None:
            return [report]
        return [
            native_error(
                native,
                ErrorCode.INVALID_RESULT,
                f"Codex {pending.method} returned an invalid result",
                codex_method=pending.method,
                reason=reason,
            ),
            report,
        ]

    def failed(
        self, codex_id: int, pending: Pending, error: CodexError
    ) -> list[Output]:
        """Codex answered a pending request with a JSON-RPC error."""
        native = pending.native
        del self.pending[codex_id]
        text = _clean(f"Codex {pending.method} failed: {error.message}", 1024)
        if pending.method == "initialize":
            if native is None:
                self.state = "down"
                return [
                    BridgeReport(
                        kind="reinitialize_failed", method="initialize", message=text
                    )
                ]
            self.state = "fresh"
        if native is None:
            return []
        return [
            native_error(
                native,
                ErrorCode.INTERNAL_ERROR,
                text,
                codex_method=pending.method,
                codex_code=max(min(error.code, 2**53), -(2**53)),
            )
        ]
