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
  generated types, and every native message it produces with the core
  :func:`~samgita_protocol.encode` (a response translated from a Codex
  result also with :func:`~samgita_protocol.decode_result` of its method);
* checks each Codex line on its bytes before decoding it (size, nesting
  depth, UTF-8, repeated keys: the core's :func:`~samgita_protocol.load_json`
  with Codex's bounds), then decodes it with the tolerant (``inbound``)
  types (a translated notification or a pending request's result in one
  typed decode of the line, anything else with params in a second stage
  from ``msgspec.Raw``); only
  :class:`~samgita_protocol.ProtocolError` (origin ``"peer"``) leaves
  :meth:`CodexBridge.receive_codex`, and on error the bridge is unchanged;
* sequences thread-scoped notifications per Codex thread into a core
  :class:`~samgita_protocol.Replay` with a ``stream_id`` made of the bridge's
  ``instance_id`` and the Codex thread id (unique per bridge instance, so a
  checkpoint from before a restart is ``not_found``), whether or not a native session is connected, so
  ``stream/resume`` is answered after a native reconnect;
* never approves by itself: while no native session is negotiated
  an approval waits, and it is (re-)sent after the next native initialize,
  always as the same request (``approval_id``, ``action`` and ``deadline``
  fixed when Codex asked); once its deadline has passed it is declined to
  Codex instead, never offered again.

:class:`CodexBridge` routes; its state is in parts it composes: the native
session (:mod:`._session`), the Codex link and its pending requests
(:mod:`._link`), the approvals (:mod:`._approvals`) and the streams
(:mod:`._streams`). The translations themselves are stateless
(:mod:`._translate`, beside :mod:`._table`), and so is reading and writing
Codex lines (:mod:`._codex_lines`).
"""

from __future__ import annotations

import datetime as _dt
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType
from samgita_protocol import (
    ErrorCode,
    Notification,
    ProtocolError,
    Request,
    Response,
    encode,
)

from ._approvals import Approvals
from ._checks import (
    check_callable,
    check_instance_id,
    check_positive_int,
    check_positive_timedelta,
    check_text,
    check_wire_id,
    wrong_type,
)
from ._codex_lines import (
    CodexIn,
    checked_line,
    decode_envelope,
    decode_result,
    delta_line,
    notification_params,
    peer,
    typed_notification,
    typed_result,
)
from ._generated import outbound
from ._link import CodexLink, Pending
from ._outputs import (
    BridgeReport,
    CodexUnmapped,
    Output,
    ToNative,
    native_error,
    native_refusal,
)
from ._session import NativeSession
from ._streams import Streams
from ._table import CODEX_NOTIFICATIONS
from ._translate import (
    CLOSING_STATUSES,
    MAX_DELTA_CHARS,
    codex_params,
    item_delta,
    item_params,
    pieces,
    thread_closed,
    thread_started,
    turn_params,
)

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "MAX_APPROVALS",
    "MAX_PENDING",
    "MAX_STREAMS",
    "MAX_UNMAPPED_METHODS",
    "UNMAPPED_OVERFLOW",
    "CodexBridge",
]

#: Default time a native client has to answer a forwarded approval (the
#: native ``deadline``); Codex itself waits without a bound.
DEFAULT_APPROVAL_TIMEOUT: Final = _dt.timedelta(minutes=5)
#: Default bound of Codex requests in flight (``limit_exceeded`` above it).
MAX_PENDING: Final = 1024
#: Default bound of forwarded, unanswered approvals.
MAX_APPROVALS: Final = 256
#: Default bound of per-thread streams (Replays) the bridge keeps.
MAX_STREAMS: Final = 1024
#: Distinct method keys of :attr:`CodexBridge.unmapped_notifications`; the
#: rest are counted under :data:`UNMAPPED_OVERFLOW`.
MAX_UNMAPPED_METHODS: Final = 256
UNMAPPED_OVERFLOW: Final = "(other)"


class CodexBridge:
    """One native connection's host, bridged to one Codex app-server link.

    Args:
        host_id: the native ``host_id`` this bridge reports. Keep it stable
            across restarts: the streams' ids change with the instance (see
            ``instance_id``), so a client's checkpoints from an earlier
            bridge get ``not_found`` from ``stream/resume``, never another
            stream's events, while its connection is accepted.
        instance_id: this bridge instance's part of every native
            ``stream_id`` (``codex-<instance_id>-<Codex thread id>``) and
            ``connection_id``; 1 to 32 of ``[A-Za-z0-9_-]``. Default: 16
            random hex digits, new for every bridge. The Replays live in
            memory, so a restarted bridge must not reuse an instance id (its
            cursors start at 1 again); give one only for reproducible ids
            in tests and logs.
        client_name, client_version: Codex ``clientInfo``.
        approval_timeout: native ``deadline`` of forwarded approvals.
        now: the wall clock (tests pass a fixed one).
        max_events, max_bytes: bounds of each per-thread :class:`Replay`.
        max_pending, max_approvals, max_streams, max_unmapped_methods: the
            bounds of the bridge's tables (see :data:`MAX_PENDING` etc.);
            overflow is ``limit_exceeded``.

    Raises:
        TypeError, ValueError: a bad argument (the message names it):
            ``host_id`` not a wire id (1 to 256 UTF-8 bytes), an empty or
            non-string ``client_name`` / ``client_version``, an
            ``approval_timeout`` that is not a positive ``timedelta``, a
            ``now`` that is not callable, a bound that is not a positive
            ``int``.
    """

    def __init__(
        self,
        *,
        host_id: str,
        instance_id: str | None = None,
        client_name: str = "samgita-protocol-codex",
        client_version: str = "0.1.0",
        approval_timeout: _dt.timedelta = DEFAULT_APPROVAL_TIMEOUT,
        now: Callable[[], _dt.datetime] | None = None,
        max_events: int = 1024,
        max_bytes: int = 8 * 1024 * 1024,
        max_pending: int = MAX_PENDING,
        max_approvals: int = MAX_APPROVALS,
        max_streams: int = MAX_STREAMS,
        max_unmapped_methods: int = MAX_UNMAPPED_METHODS,
    ) -> None:
        # every argument checked, in this order, before anything is built
        host = check_wire_id("host_id", host_id)
        self._instance_id = (
            secrets.token_hex(8)
            if instance_id is None
            else check_instance_id("instance_id", instance_id)
        )
        client_info = outbound.ClientInfo(
            name=check_text("client_name", client_name),
            version=check_text("client_version", client_version),
        )
        timeout = check_positive_timedelta("approval_timeout", approval_timeout)
        clock: Callable[[], _dt.datetime] = (
            (lambda: _dt.datetime.now(_dt.UTC))
            if now is None
            else check_callable("now", now)
        )
        events = check_positive_int("max_events", max_events)
        size = check_positive_int("max_bytes", max_bytes)
        pending = check_positive_int("max_pending", max_pending)
        approvals = check_positive_int("max_approvals", max_approvals)
        streams = check_positive_int("max_streams", max_streams)
        self._max_unmapped = check_positive_int(
            "max_unmapped_methods", max_unmapped_methods
        )
        self._link = CodexLink(client_info=client_info, max_pending=pending)
        self._approvals = Approvals(
            approval_timeout=timeout, now=clock, max_approvals=approvals
        )
        self._streams = Streams(
            instance_id=self._instance_id,
            max_streams=streams,
            max_events=events,
            max_bytes=size,
        )
        self._session = NativeSession(host_id=host, instance_id=self._instance_id)
        #: Codex notifications without a native translation, by method (at
        #: most ``max_unmapped_methods`` keys, then :data:`UNMAPPED_OVERFLOW`).
        self.unmapped_notifications: Counter[str] = Counter()
        #: Translated Codex notifications the table says are not forwarded,
        #: by ``method:detail`` (e.g. ``thread/status/changed:idle``).
        self.not_forwarded: Counter[str] = Counter()
        #: Native notifications that were neither deliverable (no native
        #: session with their group) nor replayable, by native method.
        self.undelivered: Counter[str] = Counter()

    # ------------------------------------------------------------ native side

    def native_connected(self) -> list[Output]:
        """A new native connection: it must ``connection/initialize`` again.

        Requests of the previous native connection still waiting for Codex
        are settled (``ambiguous_disconnect`` for a mutation, ``disconnected``
        for a read; addressed to the old connection, for the caller's log);
        Codex's later answers to them are absorbed, nothing is re-sent.
        Forwarded approvals stay pending and are re-sent after the next
        successful native initialize, unchanged (the same ``id``,
        ``approval_id``, ``action`` and ``deadline``: a reconnect does not
        refresh an approval's binding); one whose deadline has passed by
        then is declined to Codex (``ApprovalResolved`` and a
        ``BridgeReport(kind="approval_expired")``), not re-offered. Streams
        are kept.
        """
        self._session.end()
        out = self._link.orphan("native connection replaced")
        self._approvals.unsent()
        return out

    @property
    def instance_id(self) -> str:
        """This bridge instance's id, part of its stream and connection ids."""
        return self._instance_id

    def stream_id(self, thread_id: str) -> str | None:
        """The native ``stream_id`` of a Codex thread, once it has one.

        Raises:
            TypeError: ``thread_id`` is not a string.
        """
        if not isinstance(thread_id, str):
            raise wrong_type("thread_id", thread_id, "a string")
        return self._streams.stream_id(thread_id)

    def native_request(self, request: Request) -> list[Output]:
        """Translate one decoded native request.

        Refusals come back as native error responses (``not_initialized``,
        ``unsupported`` naming the method, ``disconnected`` while the Codex
        link is down, ``not_found`` for an unknown stream, ``limit_exceeded``
        with :data:`MAX_PENDING` requests in flight); nothing is raised for a
        well-formed request.

        Raises:
            TypeError: ``request`` is not a native `Request`.
        """
        # the common case first: a request the session may forward, with the
        # Codex link ready and room in the pending table (the same checks as
        # below, in fewer steps)
        forward = (
            self._session.forward.get(request.method)
            if type(request) is Request
            else None
        )
        link = self._link
        if (
            forward is not None
            and type(request.params) is forward[0]
            and link.state == "ready"
            and len(link.pending) < link.max_pending
        ):
            try:
                codex_method, params = forward[1](request.params)
            except ProtocolError as exc:
                return [native_refusal(request, exc)]
            return [link.send(codex_method, params, request)]
        if not isinstance(request, Request):
            raise wrong_type("request", request, "a native Request")
        if request.method == "connection/initialize":
            return self._native_initialize(request)
        row = self._session.row(request)
        if isinstance(row, ToNative):
            return [row]
        if row.kind == "handled_locally":
            assert request.method == "stream/resume"
            return [self._streams.resume(request)]
        if link.state != "ready":
            return [
                native_error(
                    request, ErrorCode.DISCONNECTED, "the Codex link is not ready"
                )
            ]
        if len(link.pending) >= link.max_pending:
            return [
                native_error(
                    request,
                    ErrorCode.LIMIT_EXCEEDED,
                    "too many Codex requests in flight",
                    limit=link.max_pending,
                )
            ]
        try:
            codex_method, params = codex_params(request)
        except ProtocolError as exc:
            return [native_refusal(request, exc)]
        return [link.send(codex_method, params, request)]

    def native_response(self, response: Response) -> list[Output]:
        """The native peer's answer to a forwarded ``approval/request``.

        ``approve`` becomes Codex ``accept``, ``deny`` (or a native error)
        ``decline``. An ``approve`` at or after the request's ``deadline``
        (the bridge's clock) is not an approval: Codex gets ``decline`` and
        the caller a ``BridgeReport(kind="approval_expired")``.

        Raises:
            ProtocolError: ``unknown_request`` for a response to no pending
                approval (never asked, already answered, expired or settled
                by Codex); ``approval_mismatch`` when the result's
                ``approval_id`` or ``action`` differ from the request (exact
                JSON: ``true``, ``1`` and ``1.0`` differ); ``invalid_result``
                for a malformed result. The approval stays pending then.
            TypeError: ``response`` is not a native `Response`.
        """
        if not isinstance(response, Response):
            raise wrong_type("response", response, "a native Response")
        return self._approvals.answer(response)

    def expire_approvals(self) -> list[Output]:
        """End every forwarded approval whose native ``deadline`` has passed.

        The native contract allows no ``approve`` at or after the deadline,
        so such an approval can only be refused: each is declined to Codex
        (``ToCodex``), with ``ApprovalResolved(request_id)`` and a
        ``BridgeReport(kind="approval_expired")``; nothing is approved.
        Call it periodically (sans-IO: the bridge reads its ``now`` clock
        only when called) so that a native session that never answers does
        not stall the Codex turn; without it such an approval waits for a
        native answer, a reconnect (after which it is not re-offered) or
        Codex's own ``serverRequest/resolved``.
        """
        return self._approvals.expire()

    # ------------------------------------------------------------- codex side

    def codex_connected(self) -> list[Output]:
        """A (re)opened Codex link: re-initializes it when a native session exists.

        Whatever was in flight on an earlier link is settled first, as by
        :meth:`codex_disconnected` (nothing is re-sent).
        """
        out = self._settle_codex()
        self._link.state = "fresh"
        if self._session.groups is None:
            return out
        self._link.state = "initializing"
        out.append(self._link.initialize(None))
        return out

    def codex_disconnected(self) -> list[Output]:
        """The Codex link is gone: settle everything in flight, re-send nothing.

        A pending mutation becomes ``ambiguous_disconnect`` (Codex may have
        performed it), a pending read ``disconnected``; forwarded approvals
        end with :class:`ApprovalResolved`. Streams are kept.
        """
        out = self._settle_codex()
        self._link.state = "down"
        return out

    def _settle_codex(self) -> list[Output]:
        out = self._link.settle("Codex link lost")
        out.extend(self._approvals.settle())
        return out

    def receive_codex(self, line: bytes) -> list[Output]:
        """Translate one JSON line from Codex.

        The line is checked before decoding (at most
        :data:`MAX_CODEX_LINE_BYTES`, nesting at most :data:`MAX_CODEX_DEPTH`,
        no repeated key); every native message produced is validated with the
        core encoder. On error nothing in the bridge changed.

        Raises:
            ProtocolError: always with origin ``"peer"`` (the link is broken;
                the caller should close it): ``message_too_large``,
                ``depth_exceeded``, ``invalid_json``, ``invalid_utf8``,
                ``duplicate_key``,
                ``invalid_message`` (not a JSON-RPC message of the pinned
                schema, or values the native schema cannot carry),
                ``unknown_response``, ``limit_exceeded`` (a table bound), or
                any code the core encoder raises for a translated message.
            TypeError: ``line`` is not ``bytes``, ``bytearray`` or
                ``memoryview`` (the caller's mistake, not Codex's).
        """
        try:
            if type(line) is bytes:
                delta = delta_line(line)
                if delta is not None:
                    return self._translate_notification(delta[0], delta[1], delta[2])
            data, tree = checked_line(line)
            if type(tree) is dict:
                # the common lines in one typed decode (see _codex_lines)
                if "id" not in tree:
                    typed = typed_notification(data, tree.get("method"))
                    if typed is not None:
                        return self._translate_notification(
                            typed[0], typed[1], typed[2]
                        )
                elif "method" not in tree and "error" not in tree:
                    codex_id = tree["id"]
                    pending = (
                        self._link.pending.get(codex_id)
                        if type(codex_id) is int
                        else None
                    )
                    if pending is not None:
                        result = typed_result(data, pending.method)
                        if result is not UNSET:
                            return self._codex_result(codex_id, pending, result)
            msg = decode_envelope(data)
            if msg.method is UNSET:
                return self._codex_response(msg)
            if msg.id is UNSET:
                return self._codex_notification(msg.method, msg.params)
            details = tree.get("params") if isinstance(tree, dict) else None
            return self._codex_server_request(msg.id, msg.method, msg.params, details)
        except msgspec.MsgspecError as exc:
            raise peer(
                ErrorCode.INVALID_MESSAGE,
                f"Codex message does not match the 0.163.0 schema: {exc}"[:1024],
            ) from None
        except ProtocolError as exc:
            raise exc if exc.origin == "peer" else exc.with_origin("peer") from None
        except (ValueError, OverflowError, OSError) as exc:
            raise peer(
                ErrorCode.INVALID_MESSAGE, f"Codex value out of range: {exc}"[:1024]
            ) from None

    # ---------------------------------------------------------------- helpers

    def _native_initialize(self, request: Request) -> list[Output]:
        refused = self._session.refuse_initialize(request)
        if refused is not None:
            return [refused]
        if self._link.state != "fresh":
            # Codex is (being) initialized or down: the native session does not
            # wait for it (stream/resume is answered from the Replay meanwhile)
            return self._session_started(request)
        return self._link.join_initialize(request)

    def _session_started(self, request: Request) -> list[Output]:
        """Reply to a native initialize, then (re-)send the waiting approvals."""
        out: list[Output] = [self._session.start(request)]
        if self._session.takes("approvals.v1"):
            out.extend(self._approvals.offer())
        else:
            # the new session cannot answer approvals: refuse them to Codex now
            out.extend(self._approvals.refuse_all())
        return out

    def _codex_response(self, msg: CodexIn) -> list[Output]:
        codex_id, pending = self._link.answered(msg.id)
        if msg.error is not UNSET:
            return self._link.failed(codex_id, pending, msg.error)
        # decode and translate first; the pending entry goes only afterwards
        try:
            result = decode_result(pending.method, msg.result)
        except (msgspec.MsgspecError, ValueError, OverflowError, OSError) as exc:
            return self._link.invalid(codex_id, pending, exc)
        return self._codex_result(codex_id, pending, result)

    def _codex_result(
        self, codex_id: int, pending: Pending, result: Any
    ) -> list[Output]:
        """A decoded Codex result of a pending request, translated."""
        if pending.method != "initialize":
            return self._link.result(codex_id, pending, result)
        out: list[Output] = [self._link.initialized(codex_id)]
        if pending.native is not None:
            out.extend(self._session_started(pending.native))
        return out

    def _unsequenced(self, method: str, params: msgspec.Struct) -> list[Output]:
        """A native notification that is not replayable: now or never."""
        note = Notification(method=method, params=params)
        data = encode(note)
        if not self._session.takes("sessions.v1"):
            self.undelivered[note.method] += 1
            return [
                BridgeReport(
                    kind="undelivered",
                    method=note.method,
                    message="no native session with sessions.v1; not replayable",
                )
            ]
        return [ToNative(message=note, data=data)]

    def _codex_notification(
        self, method: str, raw: msgspec.Raw | UnsetType
    ) -> list[Output]:
        native = CODEX_NOTIFICATIONS.get(method)
        if native is None:
            counter = self.unmapped_notifications
            if method in counter or len(counter) < self._max_unmapped:
                counter[method] += 1
            else:
                counter[UNMAPPED_OVERFLOW] += 1
            return [CodexUnmapped(kind="notification", method=method)]
        params = notification_params(method, raw)
        return self._translate_notification(method, native, params)

    def _translate_notification(
        self, method: str, native: str, params: Any
    ) -> list[Output]:
        """A decoded translated Codex notification (``native``: its table row)."""
        session = self._session
        if native == "item/delta":  # the most frequent by far: tested first
            delta = params.delta
            deliver = session.takes("streaming.v1")
            if len(delta) <= MAX_DELTA_CHARS:
                note = item_delta(params, delta)
                return self._streams.append(
                    params.threadId, native, note, deliver=deliver
                )
            notes = [item_delta(params, piece) for piece in pieces(delta)]
            return self._streams.append_all(
                params.threadId, native, notes, deliver=deliver
            )
        if method == "serverRequest/resolved":
            return self._approvals.resolved(params.requestId)
        if method == "thread/status/changed":
            status = params.status.__struct_config__.tag
            if status not in CLOSING_STATUSES:
                self.not_forwarded[f"{method}:{status}"] += 1
                return []
            return self._unsequenced(native, thread_closed(params))
        if method == "thread/started":
            return self._unsequenced(native, thread_started(params))
        if method == "thread/closed":
            return self._unsequenced(native, thread_closed(params))
        if method in ("turn/started", "turn/completed"):
            turn = turn_params(method, params)
            deliver = session.takes("sessions.v1")
            return self._streams.append(params.threadId, native, turn, deliver=deliver)
        if method in ("item/started", "item/completed"):
            item = item_params(method, params)
            deliver = session.takes("streaming.v1")
            return self._streams.append(params.threadId, native, item, deliver=deliver)
        raise AssertionError(f"untranslated Codex notification {method}")

    def _codex_server_request(
        self,
        codex_id: int | str,
        method: str,
        raw: msgspec.Raw | UnsetType,
        details: Any,
    ) -> list[Output]:
        return self._approvals.request(
            codex_id, method, raw, details, groups=self._session.groups
        )
