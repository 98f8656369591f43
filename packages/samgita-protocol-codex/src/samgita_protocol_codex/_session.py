"""The native session: what the native peer negotiated, and what it may therefore ask.

One native connection at a time; :meth:`NativeSession.end` forgets it (the
next must ``connection/initialize`` again). The bridge advertises only
:data:`~._table.SUPPORTED_GROUPS`; each ``connection_id`` names the bridge
instance (``codex-<instance_id>-<n>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from samgita_protocol import ErrorCode, InitializeParams, InitializeResult, Request

from ._outputs import ToNative, native_error, native_reply
from ._table import NATIVE_REQUESTS, SUPPORTED_GROUPS, Translation
from ._translate import FORWARDED

__all__ = ["NativeSession"]


class NativeSession:
    """The negotiated groups (``None`` before a successful initialize) and
    the requests the session may forward to Codex, by native method:
    ``(params type, translation)``."""

    def __init__(self, *, host_id: str, instance_id: str) -> None:
        self._host_id = host_id
        self._instance_id = instance_id
        self._connection_seq = 0
        self.groups: frozenset[str] | None = None
        self.forward: dict[str, tuple[type, Callable[[Any], Any]]] = {}

    def takes(self, group: str) -> bool:
        """Whether a native session is negotiated with ``group``."""
        groups = self.groups
        return groups is not None and group in groups

    def end(self) -> None:
        """The native connection is gone (or replaced)."""
        self.groups = None
        self.forward = {}

    def refuse_initialize(self, request: Request) -> ToNative | None:
        """The error answer to a native initialize this bridge cannot take, or ``None``."""
        if self.groups is not None:
            return native_error(
                request, ErrorCode.ALREADY_INITIALIZED, "already initialized"
            )
        params = request.params
        assert isinstance(params, InitializeParams)
        if "1.0" not in params.versions:
            return native_error(
                request, ErrorCode.NO_COMMON_VERSION, "only 1.0 is supported"
            )
        required = set(params.required_capabilities or ())
        missing = sorted(required - SUPPORTED_GROUPS)
        if missing:
            return native_error(
                request,
                ErrorCode.MISSING_REQUIRED_CAPABILITY,
                "the Codex bridge lacks required groups",
                missing=missing,
            )
        return None

    def start(self, request: Request) -> ToNative:
        """The session a native initialize negotiates, and the reply to it."""
        params = request.params
        assert isinstance(params, InitializeParams)
        groups = sorted(SUPPORTED_GROUPS.intersection(params.capabilities))
        self.groups = frozenset(groups)
        self.forward = {
            method: (params_type, translate)
            for method, (group, params_type, translate) in FORWARDED.items()
            if group in self.groups
        }
        self._connection_seq += 1
        return native_reply(
            request,
            InitializeResult(
                version="1.0",
                capabilities=groups,
                connection_id=f"codex-{self._instance_id}-{self._connection_seq}",
                host_id=self._host_id,
            ),
        )

    def row(self, request: Request) -> Translation | ToNative:
        """The table row of a request the session may send (not an initialize),
        or the error answer (``not_initialized``, ``unsupported``)."""
        method = request.method
        if self.groups is None:
            return native_error(
                request, ErrorCode.NOT_INITIALIZED, f"{method} before initialize"
            )
        row = NATIVE_REQUESTS.get(method)
        if row is None or row.group not in self.groups or row.kind == "refused":
            return native_error(
                request,
                ErrorCode.UNSUPPORTED,
                f"{method} is not supported by the Codex bridge",
                method=method,
            )
        return row
