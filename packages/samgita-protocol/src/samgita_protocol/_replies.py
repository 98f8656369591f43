"""The responses a side answers with, proven by their own bytes (private).

`proven_result` is how a `Server` checks its handler's result: the
response's bytes decoded by the method's typed response decoder (the
``_plans.RESPONSE_PLANS`` one ``decode`` uses), instead of encoding the
result, checking it and encoding the response around it. Anything it cannot
prove goes to ``decode_result`` and ``encode``, which accept or name the
violation. `encode_response` is the same for a response a host or bridge
built itself.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET

from ._codec import encode
from ._errors import ProtocolError
from ._jsonscan import MAX_DEPTH, depth_within
from ._methods import method_spec
from ._options import DEFAULT_MAX_MESSAGE_BYTES, wrong_type
from ._plans import RESPONSE_PLANS, Plan
from ._results import decode_result
from ._schema import (
    Response,
    response_to,
)
from ._validate import (
    ENCODER,
    check_struct,
)

__all__ = [
    "checked_response",
    "encode_response",
    "proven_result",
]

_FAILURES: Final = (ValueError, TypeError, OverflowError, RecursionError)
_astuple: Final = msgspec.structs.astuple
# checked_response compares a response with its typed envelope by position.
assert Response.__struct_fields__[-1] == "error"


def proven_result(plan: Plan, request: Any, result: Any) -> tuple[bytes, Any] | None:
    """The wire bytes of ``response_to(request, result=result)`` and that
    response as its typed envelope (whose ``result`` is the result as
    ``decode_result`` makes it), or ``None`` (then the general path,
    ``encode`` and ``decode_result``, decides). ``request`` is anything with
    a request's identity fields (a `Request`, a typed request, a
    `Response`); ``plan`` is the plan of the method it answers.

    ``encode`` checks the envelope by decoding the bytes, ``decode_result``
    the result: it encodes the result, checks the bytes (UTF-8, depth,
    repeated keys), decodes them with the method's result decoder, walks
    the result and refuses a value that is not equal to what it decoded
    to. Here the response's bytes are msgspec's encoding of Structs (valid
    UTF-8: an unencodable string raises; no default filled in), pure ASCII
    (no identity byte length to check), decoded by the typed response
    decoder (the envelope's fields and the method's result type, so the
    same constraints), and the decoded result must equal ``result``: JSON
    decodes to string keys only, so an equal value holds no two keys of
    one object that encode alike, and therefore the bytes repeat no key.
    Depth (the result is the envelope's only container, one level down)
    and the walk are the same. The envelope is not compared: for a
    ``request`` that was decoded and validated (a Server's own answer) it
    echoes valid fields; :func:`checked_response` compares it otherwise.
    """
    if type(result) is not plan.payload_type:
        return None
    try:
        wire = ENCODER.encode(response_to(request, result=result))
        # msgspec's own output: ASCII bytes are ASCII strings (see above).
        if not wire.isascii():
            return None
        if plan.free_form and not depth_within(wire, MAX_DEPTH):
            return None
        typed = plan.typed.decode(wire)
        if plan.walk_ascii:
            check_struct(typed.result, "/result", True)
    except (*_FAILURES, ProtocolError):
        return None
    if typed.result != result:
        return None
    return wire, typed


def checked_response(plan: Plan, response: Response) -> tuple[bytes, Any] | None:
    """The wire bytes of ``response`` (a result response built around the
    method's result Struct) and the result as ``decode_result`` makes it,
    or ``None`` (then the general path, ``encode`` and ``decode_result``,
    decides): :func:`proven_result`, and the envelope that decoded must
    equal ``response`` field by field, with ``task_ref`` only beside
    ``project_ref``."""
    if response.error is not UNSET:
        return None
    proven = proven_result(plan, response, response.result)
    if proven is None:
        return None
    wire, typed = proven
    if typed.task_ref is not UNSET and typed.project_ref is UNSET:
        return None
    # Every field but ``error`` (the last; absent from the typed envelope).
    if _astuple(typed) != _astuple(response)[:-1]:
        return None
    return wire, typed.result


def encode_response(
    response: Response,
    method: str,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> bytes:
    """``encode(response)`` that also checks a ``result`` against the
    result schema of ``method``, the request method it answers (what the
    peer's ``decode_result`` will check); an error response is only
    encoded. For a host or bridge that builds responses itself (a `Server`
    checks its handler's results the same way).

    Raises:
        ProtocolError: origin ``local``: the codes of ``encode``;
            ``invalid_result`` (``data.reason``, ``data.path``) for a result
            its method's schema refuses.
        TypeError: ``response`` is not a `Response`, ``method`` is not a
            string or ``max_message_bytes`` is not an int (the message
            names it).
        ValueError: ``method`` is not a defined request method, or
            ``max_message_bytes`` is not positive.
    """
    try:
        plan = RESPONSE_PLANS.get(method)
    except TypeError:  # unhashable: refused by method_spec below
        plan = None
    if plan is not None and type(response) is Response:
        checked = checked_response(plan, response)
        if (
            checked is not None
            and type(max_message_bytes) is int
            and 0 < len(checked[0]) <= max_message_bytes
        ):
            return checked[0]
    method_spec("method", method, "request")
    if type(response) is not Response:
        raise wrong_type("response", response, "a Response")
    wire = encode(response, max_message_bytes=max_message_bytes)
    if response.result is not UNSET:
        try:
            decode_result(method, response.result)
        except ProtocolError as exc:
            raise exc.with_origin("local") from None
    return wire
