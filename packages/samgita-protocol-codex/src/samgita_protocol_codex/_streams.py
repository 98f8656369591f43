"""The bridge's native streams: one core :class:`~samgita_protocol.Replay` per Codex thread.

Thread-scoped notifications are appended here whether or not a native
session is connected (the bridge decides what to deliver), so
``stream/resume`` is answered from them after a native reconnect.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec
from samgita_protocol import (
    ErrorCode,
    Notification,
    ProtocolError,
    Replay,
    Request,
    StreamResumeParams,
    encode,
)

from ._codex_lines import peer
from ._outputs import Output, ToNative, native_error, native_refusal, native_reply

__all__ = ["Streams", "stream_id_of"]


def stream_id_of(instance_id: str, thread_id: str) -> str:
    """``codex-<instance id>-<thread id>``, a digest of the thread id when too long.

    The instance id makes the id unique per bridge: a restarted bridge starts
    its streams at cursor 1 again, so it must not reuse an earlier bridge's
    stream ids (a client's old checkpoint would resume into other events).
    """
    candidate = f"codex-{instance_id}-{thread_id}"
    if 0 < len(thread_id) and len(candidate.encode("utf-8", "surrogatepass")) <= 256:
        return candidate
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"codex-{instance_id}-sha256-{digest}"


class Streams:
    """Codex thread id -> its native stream, and the same by native ``stream_id``.

    A stream is kept only once its first event is appended, and an append
    that fails leaves every stream as it was.
    """

    def __init__(
        self, *, instance_id: str, max_streams: int, max_events: int, max_bytes: int
    ) -> None:
        self._instance_id = instance_id
        self._max_streams = max_streams
        self._max_events = max_events
        self._max_bytes = max_bytes
        self.by_thread: dict[str, Replay] = {}
        self._by_stream_id: dict[str, Replay] = {}

    def stream_id(self, thread_id: str) -> str | None:
        """The ``stream_id`` of a Codex thread, once it has one."""
        replay = self.by_thread.get(thread_id)
        return replay.stream_id if replay is not None else None

    def append(
        self, thread_id: str, method: str, params: msgspec.Struct, *, deliver: bool
    ) -> list[Output]:
        """One event appended to the thread's stream, handed out when ``deliver``
        (else ``stream/resume`` serves it later)."""
        replay = self.by_thread.get(thread_id)
        new = replay is None
        if replay is None:
            replay = self._new(thread_id)
        # built already sequenced (the Replay's next cursor), so append
        # checks it and keeps it as it is
        note = Notification(
            method=method,
            params=params,
            stream_id=replay.stream_id,
            cursor=replay.last_cursor + 1,
        )
        kept = replay.append(note)
        if new:
            self._keep(thread_id, replay)
        # the bytes append validated, handed out without a second encode
        return [ToNative(message=kept.message, data=kept.data)] if deliver else []

    def append_all(
        self,
        thread_id: str,
        method: str,
        pieces: Sequence[msgspec.Struct],
        *,
        deliver: bool,
    ) -> list[Output]:
        """:meth:`append` for the pieces of one split delta, all or none."""
        replay = self.by_thread.get(thread_id)
        new = replay is None
        if replay is None:
            replay = self._new(thread_id)
        first = replay.last_cursor + 1
        notes = [
            Notification(
                method=method, params=p, stream_id=replay.stream_id, cursor=first + i
            )
            for i, p in enumerate(pieces)
        ]
        # the pieces share the ids and are bounded: check them all before the
        # first append, so an error leaves the Replay unchanged
        for note in notes:
            encode(note)
        kept = [replay.append(note) for note in notes]
        if new:
            self._keep(thread_id, replay)
        if not deliver:
            return []
        return [ToNative(message=k.message, data=k.data) for k in kept]

    def resume(self, request: Request) -> ToNative:
        """The answer to a native ``stream/resume``: a page of the stream, or an error."""
        params = request.params
        assert isinstance(params, StreamResumeParams)
        replay = self._by_stream_id.get(params.stream_id)
        if replay is not None:
            try:
                return native_reply(request, replay.page(params.cursor))
            except ProtocolError as exc:
                return native_refusal(request, exc)
        # also a checkpoint from an earlier bridge instance: its stream ids
        # are never reused, so it cannot resume into another stream's events
        return native_error(
            request,
            ErrorCode.NOT_FOUND,
            "unknown stream: not one of this bridge instance's streams",
            stream_id=params.stream_id,
        )

    def _keep(self, thread_id: str, replay: Replay) -> None:
        self.by_thread[thread_id] = replay
        self._by_stream_id[replay.stream_id] = replay

    def _new(self, thread_id: str) -> Replay:
        # not yet in by_thread: kept only once its first event is appended
        if len(self.by_thread) >= self._max_streams:
            raise peer(
                ErrorCode.LIMIT_EXCEEDED,
                "too many Codex threads",
                limit=self._max_streams,
            )
        return Replay(
            stream_id_of(self._instance_id, thread_id),
            max_events=self._max_events,
            max_bytes=self._max_bytes,
        )
