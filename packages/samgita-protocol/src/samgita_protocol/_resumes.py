"""The ``stream/resume`` results a `Client` got on its connection, waiting
for :meth:`Client.receive_replay` (``docs/protocol.md`` section 10): only a
page this client received as the result of its own request is ingested,
and each one once. They are kept by content digest in a window of
``max_completed`` (the oldest forgotten first) and cleared on reconnect.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._content import digest
from ._errors import ErrorCode, ProtocolError
from ._options import wrong_type
from ._params import StreamResumeResult
from ._results import decode_result
from ._schema import Response
from ._windows import FifoWindow

__all__ = ["Resumes", "correlated_page", "resume_digest"]

#: Correlated results by content digest.
Resumes = FifoWindow[int, bool]


def resume_digest(result: Any) -> int:
    """What `Resumes` keeps of a ``stream/resume`` result (both sides of
    the comparison are results the codec decoded, so their encodings
    compare)."""
    return digest(msgspec.json.encode(result))


def correlated_page(
    resumes: Resumes, response_or_result: object
) -> tuple[StreamResumeResult, int]:
    """The page :meth:`Client.receive_replay` was given (the result, or the
    `Response` that carried it) and its digest in ``resumes``; nothing is
    taken (the caller deletes the digest once the page is ingested).

    Raises:
        ProtocolError: ``uncorrelated_replay`` (local): not a page, or not
            one this client is waiting to ingest.
        TypeError: ``response_or_result`` is neither a `Response` nor a
            `StreamResumeResult`.
    """
    result: object = response_or_result
    if isinstance(result, Response):
        try:
            result = (
                None
                if result.result is msgspec.UNSET
                else decode_result("stream/resume", result.result)
            )
        except (ProtocolError, TypeError):
            result = None  # not a page at all
    elif not isinstance(result, StreamResumeResult):
        raise wrong_type(
            "response_or_result", result, "a Response or a StreamResumeResult"
        )
    if not isinstance(result, StreamResumeResult):
        raise ProtocolError(
            ErrorCode.UNCORRELATED_REPLAY,
            "not a stream/resume result on this connection",
        )
    digest = resume_digest(result)
    if digest not in resumes:
        raise ProtocolError(
            ErrorCode.UNCORRELATED_REPLAY,
            "not the result of a stream/resume response on this connection",
        )
    return result, digest
