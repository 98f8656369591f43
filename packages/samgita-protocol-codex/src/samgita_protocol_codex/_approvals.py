"""Codex server requests: approvals forwarded as native ``approval/request``
until settled, the others refused.

The bridge never approves by itself: native ``approve`` becomes Codex
``accept``, native ``deny`` (or a native error) ``decline``, and only an
approval whose native deadline has passed is declined by the bridge. An
approval's native request (``approval_id``, ``action``, ``deadline``) is
built once, when Codex asks; every (re-)send is that same request.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType
from samgita_protocol import (
    Action,
    ApprovalRequestParams,
    ApprovalRequestResult,
    ErrorCode,
    ProtocolError,
    Request,
    Response,
    decode_result,
    encode,
)

from ._codex_lines import approval_answer, peer, refusal, server_request_params
from ._outputs import (
    ApprovalResolved,
    BridgeReport,
    CodexUnmapped,
    Output,
    ToCodex,
    ToNative,
)
from ._table import CODEX_APPROVAL_REQUESTS
from ._translate import timestamp

__all__ = ["Approval", "Approvals"]

_SORTED: Final = msgspec.json.Encoder(order="sorted")


class Approval(msgspec.Struct, kw_only=True):
    """One forwarded approval."""

    codex_id: int | str
    codex_method: str
    # the native request, built once: every (re-)send is this exact request,
    # so its approval_id, action and deadline are never refreshed
    request: Request
    data: bytes  # its wire bytes: every (re-)send is byte-identical
    deadline: _dt.datetime  # the instant ``request``'s deadline names
    sent: bool  # delivered to the current native session


def _expired_report(rid: str, approval: Approval) -> BridgeReport:
    return BridgeReport(
        kind="approval_expired",
        method=approval.codex_method,
        message=f"{rid}: its deadline {timestamp(approval.deadline)} passed; "
        "declined to Codex",
    )


def _decline(approval: Approval) -> ToCodex:
    return approval_answer(approval.codex_id, approval.codex_method, "decline")


def _action(method: str, params: Any, details: Any) -> Action:
    # details: the params exactly as Codex sent them, from the untyped
    # decode of the checked line (depth and repeated keys already
    # checked, so nothing is lost; the core encoder checks the native bounds)
    if method == "item/commandExecution/requestApproval":
        kind = "command_execution"
        description = (
            params.command if isinstance(params.command, str) else "run a command"
        )
    else:
        kind = "file_change"
        description = "apply a file change"
    return Action(
        kind=kind,
        description=description,
        details={"codex_method": method, "codex_params": details},
    )


class Approvals:
    """The forwarded approvals by native request id (``codex-approval-N``).

    Args:
        approval_timeout: the native ``deadline`` of each, from when Codex asks.
        now: the wall clock, read only when a method is called.
        max_approvals: bound of the table (``limit_exceeded`` above it).
    """

    def __init__(
        self,
        *,
        approval_timeout: _dt.timedelta,
        now: Callable[[], _dt.datetime],
        max_approvals: int,
    ) -> None:
        self._approval_timeout = approval_timeout
        self._now = now
        self._max_approvals = max_approvals
        self.by_id: dict[str, Approval] = {}
        self.asked = 0  # approvals ever asked: the N of the next one's id is this + 1

    def request(
        self,
        codex_id: int | str,
        method: str,
        raw: msgspec.Raw | UnsetType,
        details: Any,
        *,
        groups: frozenset[str] | None,
    ) -> list[Output]:
        """A Codex server request (``details``: its params, untyped).

        An approval is kept, and sent natively when a session is negotiated
        (``groups``); any other request, or any request while the session
        lacks ``approvals.v1``, is refused to Codex (typed: JSON-RPC error).
        """
        if method not in CODEX_APPROVAL_REQUESTS or (
            groups is not None and "approvals.v1" not in groups
        ):
            return [
                refusal(codex_id, method),
                CodexUnmapped(kind="request", method=method),
            ]
        params = server_request_params(method, raw)
        if len(self.by_id) >= self._max_approvals:
            raise peer(
                ErrorCode.LIMIT_EXCEEDED,
                "too many pending Codex approvals",
                limit=self._max_approvals,
            )
        why: str | UnsetType = (
            params.reason if isinstance(params.reason, str) else UNSET
        )
        rid = f"codex-approval-{self.asked + 1}"
        # whole seconds, as the wire shows it: the deadline is this instant
        deadline = (self._now() + self._approval_timeout).replace(microsecond=0)
        native = Request(
            method="approval/request",
            id=rid,
            correlation_id=rid,
            params=ApprovalRequestParams(
                approval_id=rid,
                action=_action(method, params, details),
                deadline=timestamp(deadline),
                thread_id=params.threadId,
                turn_id=params.turnId,
                reason=why,
            ),
        )
        data = encode(native)
        self.asked += 1
        self.by_id[rid] = Approval(
            codex_id=codex_id,
            codex_method=method,
            request=native,
            data=data,
            deadline=deadline,
            sent=groups is not None,
        )
        return [ToNative(message=native, data=data)] if groups is not None else []

    def answer(self, response: Response) -> list[Output]:
        """The native answer to a forwarded approval, as Codex's (see
        :meth:`CodexBridge.native_response`)."""
        approval = self.by_id.get(response.id)
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
                    del self.by_id[response.id]
                    return [_decline(approval), _expired_report(response.id, approval)]
                decision = "accept"
        del self.by_id[response.id]
        return [approval_answer(approval.codex_id, approval.codex_method, decision)]

    def expire(self) -> list[Output]:
        """Decline every approval whose deadline has passed (see
        :meth:`CodexBridge.expire_approvals`)."""
        now = self._now()
        out: list[Output] = []
        for rid, approval in list(self.by_id.items()):
            if now >= approval.deadline:
                out.extend(self._expire(rid, approval))
        return out

    def offer(self) -> list[Output]:
        """For a new native session with ``approvals.v1``: (re-)send what it
        has not seen, decline what expired meanwhile (never offered again)."""
        now = self._now()
        out: list[Output] = []
        for rid, approval in list(self.by_id.items()):
            if approval.sent:
                continue
            if now >= approval.deadline:
                # no approve can be valid any more: not offered again
                out.extend(self._expire(rid, approval))
                continue
            approval.sent = True
            out.append(ToNative(message=approval.request, data=approval.data))
        return out

    def refuse_all(self) -> list[Output]:
        """For a new native session without ``approvals.v1``: refuse every
        approval to Codex now."""
        out: list[Output] = []
        for rid, approval in list(self.by_id.items()):
            out.append(refusal(approval.codex_id, approval.codex_method))
            out.append(ApprovalResolved(request_id=rid))
        self.by_id.clear()
        return out

    def unsent(self) -> None:
        """The native connection was replaced: none has been sent to the next one."""
        for approval in self.by_id.values():
            approval.sent = False

    def settle(self) -> list[Output]:
        """The Codex link is gone: every approval ends (``ApprovalResolved``)."""
        out: list[Output] = [ApprovalResolved(request_id=rid) for rid in self.by_id]
        self.by_id.clear()
        return out

    def resolved(self, codex_id: int | str) -> list[Output]:
        """Codex settled its request ``codex_id`` itself (``serverRequest/resolved``)."""
        for rid, approval in list(self.by_id.items()):
            if approval.codex_id == codex_id:
                del self.by_id[rid]
                return [ApprovalResolved(request_id=rid)]
        return []

    def _expire(self, rid: str, approval: Approval) -> list[Output]:
        del self.by_id[rid]
        return [
            _decline(approval),
            ApprovalResolved(request_id=rid),
            _expired_report(rid, approval),
        ]
