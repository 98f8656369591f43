"""Accept-only shortcuts for the connection's common case, in front of the
general checks (the way the Elixir reference put a fast checker in front of
its naming validator).

Each function here either returns a value that the general path
(``decode`` + ``decode_result``) would return for the same input, or
``None``: then the caller runs the general path, which accepts or names
the first violation exactly as before. Nothing is accepted here that the
general path refuses; the argument for each shortcut is in its docstring.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

import msgspec
from msgspec import UNSET

from ._codec import encode
from ._contract import RULES
from ._errors import Origin, ProtocolError
from ._jsonscan import MAX_DEPTH, depth_within
from ._options import DEFAULT_MAX_MESSAGE_BYTES, wrong_type
from ._plans import typed_envelope
from ._results import decode_result
from ._schema import (
    METHODS,
    Response,
    StreamResumeResult,
    method_spec,
    response_to,
)
from ._validate import (
    ENCODER,
    RESULT_DECODERS,
    check_struct,
    has_free_form,
    needs_walk,
)

__all__ = [
    "RESULT_PLANS",
    "ResultPlan",
    "WireCache",
    "checked_response",
    "encode_response",
    "proven_result",
]

_FAILURES: Final = (ValueError, TypeError, OverflowError, RecursionError)
_astuple: Final = msgspec.structs.astuple
# checked_response compares a response with its typed envelope by position.
assert Response.__struct_fields__[-1] == "error"


class ResultPlan(typing.NamedTuple):
    """What the shortcuts know of one request method, in one lookup."""

    result: type[Any]
    decoder: msgspec.json.Decoder[Any]
    response: msgspec.json.Decoder[Any]
    walk: bool
    free_form: bool
    #: The method's contextual rule (``_contract.RULES``), if any.
    rule: Callable[[Any, Any, datetime | None, Origin], None] | None
    #: Whether the result has an ``acceptance`` field (only a durable host
    #: may answer ``durable``).
    acceptance: bool


#: Every request method except ``stream/resume`` (whose result holds whole
#: notifications the general path checks one by one).
RESULT_PLANS: Final[Mapping[str, ResultPlan]] = {
    name: ResultPlan(
        result=spec.result,
        decoder=RESULT_DECODERS[name],
        response=msgspec.json.Decoder(
            typed_envelope(Response, "result", spec.result, drop="error")
        ),
        walk=needs_walk(spec.result, True),
        free_form=has_free_form(spec.result),
        rule=RULES.get(name),
        acceptance="acceptance" in spec.result.__struct_fields__,
    )
    for name, spec in METHODS.items()
    if spec.result is not None and spec.result is not StreamResumeResult
}


def proven_result(
    plan: ResultPlan, request: Any, result: Any
) -> tuple[bytes, Any] | None:
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
    if type(result) is not plan.result:
        return None
    try:
        wire = ENCODER.encode(response_to(request, result=result))
        # msgspec's own output: ASCII bytes are ASCII strings (see above).
        if not wire.isascii():
            return None
        if plan.free_form and not depth_within(wire, MAX_DEPTH):
            return None
        typed = plan.response.decode(wire)
        if plan.walk:
            check_struct(typed.result, "/result", True)
    except (*_FAILURES, ProtocolError):
        return None
    if typed.result != result:
        return None
    return wire, typed


def checked_response(plan: ResultPlan, response: Response) -> tuple[bytes, Any] | None:
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
        plan = RESULT_PLANS.get(method)
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


#: The bounds of what a connection keeps of the validated bytes of the
#: messages it built last: enough for a response and the notifications its
#: handler emitted, little memory even when nobody takes them (a caller that
#: sends with ``samgita_protocol.encode`` instead).
WIRE_CACHE_ENTRIES: Final = 64
WIRE_CACHE_BYTES: Final = 262_144
#: A larger message is not kept.
WIRE_CACHE_MAX_MESSAGE: Final = 65_536


class WireCache:
    """The validated wire bytes of the last messages a connection built, so
    that sending one needs no second encode and validation. Keyed by object
    identity (the entry holds the message, so its id is not reused while
    kept); each entry is handed out once; the oldest goes first, so at most
    ``WIRE_CACHE_ENTRIES`` entries and ``WIRE_CACHE_BYTES`` bytes are held.

    The entry kept last sits in its own slot: a message is almost always
    sent right after it is built, so keeping and taking it touch no dict.
    """

    __slots__ = ("_bytes", "_kept", "_last")

    def __init__(self) -> None:
        # The older entries, oldest first, and their bytes in all.
        self._kept: dict[int, tuple[object, bytes]] = {}
        self._bytes = 0
        self._last: tuple[object, bytes] | None = None

    def keep(self, message: object, wire: bytes) -> None:
        """Remembers ``wire`` as the validated bytes of ``message`` (replacing
        what was kept for it; a message over ``WIRE_CACHE_MAX_MESSAGE``
        bytes is not kept, and nothing older of it is left)."""
        size = len(wire)
        last = self._last
        if last is None and not self._kept and size <= WIRE_CACHE_MAX_MESSAGE:
            self._last = (message, wire)  # the common case: nothing else held
            return
        if last is not None and last[0] is message:
            last = self._last = None
        elif self._kept and id(message) in self._kept:
            self._forget(message)
        if size > WIRE_CACHE_MAX_MESSAGE:
            return
        kept = self._kept
        if last is not None:
            # The last entry (in no other place) joins the older ones.
            kept[id(last[0])] = last
            self._bytes += len(last[1])
        # The oldest go until the new entry fits the entry and byte bounds.
        while kept and (
            len(kept) >= WIRE_CACHE_ENTRIES or self._bytes + size > WIRE_CACHE_BYTES
        ):
            self._bytes -= len(kept.pop(next(iter(kept)))[1])
        self._last = (message, wire)

    def _forget(self, message: object) -> None:
        entry = self._kept.pop(id(message), None)
        if entry is not None:
            self._bytes -= len(entry[1])

    def take(self, message: object) -> bytes | None:
        """The bytes kept for exactly this object (then forgotten), or None."""
        last = self._last
        if last is not None and last[0] is message:
            self._last = None
            return last[1]
        if not self._kept:
            return None
        entry = self._kept.pop(id(message), None)
        if entry is None:
            return None
        # A kept message is alive, so no other object has its id.
        assert entry[0] is message
        self._bytes -= len(entry[1])
        return entry[1]
