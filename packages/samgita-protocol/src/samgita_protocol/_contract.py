"""Contextual result rules: what a result must satisfy given the request it
answers (``docs/protocol.md`` sections 3, 4 and 12).

Schema validation (shape) happens first (:func:`validate_result` runs
``decode_result`` and then :func:`check_result`); these rules need the
pending request, which the response envelope alone does not carry. All
functions are pure and raise :class:`ProtocolError` with ``origin="peer"``
by default (a peer's response broke the rule); pass ``origin="local"`` when
checking a result this side is about to send.

Clock: approval deadlines are compared with ``now``, a timezone-aware
:class:`datetime.datetime` (the wall clock). ``now=None`` reads
``datetime.now(timezone.utc)``, and only when a deadline is actually checked
(an ``approve`` decision).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from samgita_protocol._content import canonical
from samgita_protocol._errors import ErrorCode, Origin, ProtocolError
from samgita_protocol._params import (
    InitializeParams,
    InitializeResult,
    StreamResumeParams,
    StreamResumeResult,
)
from samgita_protocol._results import result_of
from samgita_protocol._schema import (
    SCHEMA_VERSION,
    Request,
    Response,
)

__all__ = [
    "RULES",
    "approval_expired",
    "check_echo",
    "check_initialize",
    "negotiate",
    "check_page",
    "check_result",
    "timestamp_ns",
    "validate_result",
    "wall_clock",
]

_UNSET: Final = msgspec.UNSET
_ECHO_FIELDS: Final = (
    "correlation_id",
    "command_id",
    "causation_id",
    "project_ref",
    "task_ref",
)

_TIMESTAMP: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z\Z", re.ASCII
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _absent(value: object) -> bool:
    return value is _UNSET or value is None


def wall_clock(now: object) -> datetime | None:
    """Checks a ``now`` argument meant for approval deadlines: ``None`` or an
    aware ``datetime``. Anything else (for example the float seconds of
    ``request``/``expire``) raises ``TypeError``; a naive datetime raises
    ``ValueError``."""
    if now is None:
        return None
    if not isinstance(now, datetime):
        raise TypeError(
            "expected now to be a timezone-aware datetime (the wall clock for approval "
            f"deadlines), got: {now!r}"
        )
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"expected now to be a timezone-aware datetime, got: {now!r}")
    return now


def timestamp_ns(value: str) -> int | None:
    """Nanoseconds since the epoch of a wire timestamp
    (``YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z``), or ``None`` when it is not one."""
    m = _TIMESTAMP.match(value)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    fraction = m.group(7) or ""
    return seconds * 1_000_000_000 + int(fraction.ljust(9, "0") or "0")


def _now_ns(now: datetime | None) -> int:
    moment = now if now is not None else datetime.now(UTC)
    delta = moment - _EPOCH
    return (
        delta.days * 86_400 + delta.seconds
    ) * 1_000_000_000 + delta.microseconds * 1_000


def approval_expired(deadline: str, now: datetime | None = None) -> bool:
    """True when ``now`` is at or after ``deadline`` (an unparseable deadline
    counts as expired: nothing is approved against a deadline nobody can read)."""
    limit = timestamp_ns(deadline)
    return limit is None or _now_ns(now) >= limit


def _error(
    code: ErrorCode, message: str, origin: Origin, data: dict[str, Any] | None = None
) -> ProtocolError:
    return ProtocolError(code, message, data=data, origin=origin)


def _invalid(
    message: str, origin: Origin, data: dict[str, Any] | None = None
) -> ProtocolError:
    return _error(ErrorCode.INVALID_RESULT, message, origin, data)


def _same(value: object, expected: object, field: str, origin: Origin) -> None:
    if value != expected:
        raise _invalid(f"{field} does not match the request", origin, {"field": field})


def check_echo(request: Request, response: Response) -> None:
    """A response must echo the request's ``correlation_id``, ``command_id``,
    ``causation_id``, ``project_ref`` and ``task_ref`` exactly (same value or
    both absent).

    Raises:
        ProtocolError: ``mismatched_response`` (origin ``peer``).
    """
    # One tuple comparison on the common path; the loop only names the field.
    if (
        request.correlation_id,
        request.command_id,
        request.causation_id,
        request.project_ref,
        request.task_ref,
    ) == (
        response.correlation_id,
        response.command_id,
        response.causation_id,
        response.project_ref,
        response.task_ref,
    ):
        return
    field = next(f for f in _ECHO_FIELDS if getattr(request, f) != getattr(response, f))
    raise _error(
        ErrorCode.MISMATCHED_RESPONSE,
        "response does not echo the request's identity",
        "peer",
        {"id": request.id, "field": field},
    )


# -- per-method rules ------------------------------------------------------------


def _event_receive(
    params: Any, result: Any, now: datetime | None, origin: Origin
) -> None:
    _same(result.event_id, params.event.event_id, "event_id", origin)
    _same(
        result.delivery_attempt_id,
        params.event.delivery_attempt_id,
        "delivery_attempt_id",
        origin,
    )


def _event_status(
    params: Any, result: Any, now: datetime | None, origin: Origin
) -> None:
    _same(result.event_id, params.event_id, "event_id", origin)


def _event_report(
    params: Any, result: Any, now: datetime | None, origin: Origin
) -> None:
    _same(result.event_id, params.event_id, "event_id", origin)
    requested = not _absent(params.management_request)
    acceptance = result.management_acceptance
    if requested and acceptance == "not_requested":
        raise _invalid(
            "management_acceptance must be accepted or rejected when a transition was requested",
            origin,
            {"field": "management_acceptance"},
        )
    if not requested and acceptance != "not_requested":
        raise _invalid(
            "management_acceptance must be not_requested when no transition was requested",
            origin,
            {"field": "management_acceptance"},
        )


def _thread_echo(
    params: Any, result: Any, now: datetime | None, origin: Origin
) -> None:
    _same(result.thread.thread_id, params.thread_id, "thread_id", origin)


def _turn_start(params: Any, result: Any, now: datetime | None, origin: Origin) -> None:
    _same(result.turn.thread_id, params.thread_id, "thread_id", origin)


def _turn_steer(params: Any, result: Any, now: datetime | None, origin: Origin) -> None:
    _same(result.turn.thread_id, params.thread_id, "thread_id", origin)
    _same(result.turn.turn_id, params.turn_id, "turn_id", origin)


def _turn_interrupt(
    params: Any, result: Any, now: datetime | None, origin: Origin
) -> None:
    _same(result.thread_id, params.thread_id, "thread_id", origin)
    _same(result.turn_id, params.turn_id, "turn_id", origin)


def _cancel(params: Any, result: Any, now: datetime | None, origin: Origin) -> None:
    # _same inline: this runs twice in every cancel round trip.
    if result.request_id != params.request_id:
        _same(result.request_id, params.request_id, "request_id", origin)


def _same_json(left: Any, right: Any) -> bool:
    # Exact JSON content: Python's == says True == 1 == 1.0, JSON does not.
    if left != right:
        return False
    try:
        return canonical(left) == canonical(right)
    except (TypeError, ValueError):
        return False


def _approval(params: Any, result: Any, now: datetime | None, origin: Origin) -> None:
    if result.approval_id != params.approval_id or not _same_json(
        result.action, params.action
    ):
        raise _error(
            ErrorCode.APPROVAL_MISMATCH,
            "the decision is not bound to the requested approval_id and action",
            origin,
            {"approval_id": params.approval_id},
        )
    if result.decision == "approve" and approval_expired(params.deadline, now):
        raise _error(
            ErrorCode.APPROVAL_EXPIRED,
            "the approval arrived at or after its deadline",
            origin,
            {"approval_id": params.approval_id, "deadline": params.deadline},
        )


def _resume(params: Any, result: Any, now: datetime | None, origin: Origin) -> None:
    check_page(params, result, origin=origin)


_Rule = Callable[[Any, Any, "datetime | None", Origin], None]

#: Method -> contextual rule. Methods absent here (``thread/start``,
#: ``connection/initialize``) have no rule beyond the schema; the initialize
#: result is checked against the offer by :func:`check_initialize`.
RULES: Final[Mapping[str, _Rule]] = {
    "project/event.receive": _event_receive,
    "project/event.status": _event_status,
    "project/event.report": _event_report,
    "thread/read": _thread_echo,
    "thread/resume": _thread_echo,
    "turn/start": _turn_start,
    "turn/steer": _turn_steer,
    "turn/interrupt": _turn_interrupt,
    "request/cancel": _cancel,
    "approval/request": _approval,
    "stream/resume": _resume,
}


def check_result(
    request: Request,
    result: Any,
    *,
    now: datetime | None = None,
    origin: Origin = "peer",
) -> None:
    """Checks the contextual rules of ``request.method`` for ``result`` (the
    method's result Struct, already schema-valid).

    ``now`` is the wall clock for approval deadlines (see the module
    docstring).

    Raises:
        ProtocolError: ``invalid_result`` (``data.field`` names the field),
            ``approval_mismatch``, ``approval_expired``, ``foreign_stream`` or
            ``cursor_gap``, with the given ``origin``.
    """
    rule = RULES.get(request.method)
    if rule is not None:
        rule(request.params, result, now, origin)


def validate_result(
    request: Request,
    result: Any,
    *,
    now: datetime | None = None,
    origin: Origin = "peer",
) -> Any:
    """Decodes ``result`` (``msgspec.Raw``, the result Struct or a mapping)
    into ``request.method``'s result Struct and checks its contextual rules.

    Returns:
        The result Struct.

    Raises:
        ProtocolError: ``invalid_result`` for a schema violation, and the
            codes of :func:`check_result`, all with the given ``origin``.
        TypeError: ``result`` is neither ``msgspec.Raw``, a Struct nor a
            mapping.
    """
    try:
        decoded = result_of(request.method, result, "result")
    except ProtocolError as exc:
        raise exc.with_origin(origin) from None
    check_result(request, decoded, now=now, origin=origin)
    return decoded


def check_page(
    params: StreamResumeParams, result: StreamResumeResult, *, origin: Origin = "peer"
) -> None:
    """A ``stream/resume`` page: the same stream, events contiguous from
    ``params.cursor + 1``, result ``cursor`` the last event's cursor (or
    ``params.cursor`` when empty), and no ``has_more`` on an empty page.

    Raises:
        ProtocolError: ``invalid_result`` (wrong ``stream_id``, ``cursor`` or
            ``has_more``), ``foreign_stream`` (an event of another stream),
            ``cursor_gap`` (skipped or reordered events).
    """
    stream_id = params.stream_id
    _same(result.stream_id, stream_id, "stream_id", origin)
    expected = params.cursor + 1
    for event in result.events:
        if event.stream_id != stream_id:
            raise _error(
                ErrorCode.FOREIGN_STREAM,
                "a replayed event belongs to another stream",
                origin,
                {"stream_id": stream_id},
            )
        if event.cursor != expected:
            raise _error(
                ErrorCode.CURSOR_GAP,
                "replayed events are not contiguous",
                origin,
                {"expected": expected, "cursor": event.cursor},
            )
        expected += 1
    last = expected - 1
    if result.cursor != last:
        raise _invalid(
            "cursor must be the last returned event's cursor (or the requested cursor)",
            origin,
            {"field": "cursor"},
        )
    if not result.events and result.has_more:
        raise _invalid(
            "an empty page cannot have more events", origin, {"field": "has_more"}
        )


def _listed(value: object) -> list[str]:
    if _absent(value):
        return []
    assert isinstance(value, Iterable)
    return list(value)


#: The schema versions this library speaks, in order of preference.
SUPPORTED_VERSIONS: Final = (SCHEMA_VERSION,)


def negotiate(
    offer: InitializeParams, advertised: Iterable[str]
) -> tuple[str, list[str]]:
    """The host's answer to an initialize offer: the version it selects and
    the groups of ``advertised`` the client offered (in advertised order;
    unknown optional offers are simply not part of the intersection). The
    counterpart of :func:`check_initialize`, which the client applies to the
    answer.

    Raises:
        ProtocolError (origin ``local``, sent as the error response):
            ``invalid_params`` (a required group that was not offered),
            ``no_common_version`` (``data.supported``),
            ``missing_required_capability`` (``data.missing``).
    """
    offered = list(offer.capabilities)
    required = _listed(offer.required_capabilities)
    if not set(required) <= set(offered):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            "required_capabilities must be among the offered capabilities",
            data={"path": "/params/required_capabilities"},
        )
    version = next((v for v in SUPPORTED_VERSIONS if v in offer.versions), None)
    if version is None:
        raise ProtocolError(
            ErrorCode.NO_COMMON_VERSION,
            "no common schema version",
            data={"supported": list(SUPPORTED_VERSIONS)},
        )
    advertised = list(advertised)
    missing = sorted(set(required) - set(advertised))
    if missing:
        raise ProtocolError(
            ErrorCode.MISSING_REQUIRED_CAPABILITY,
            "a required capability is not supported",
            data={"missing": missing},
        )
    return version, [group for group in advertised if group in offered]


def check_initialize(
    offer: InitializeParams, result: InitializeResult, *, host_id: str | None = None
) -> None:
    """The initialize result against the offer it answers: the selected
    version and groups were offered, every required group was selected, and
    the host is the expected one (when ``host_id`` is given).

    Raises:
        ProtocolError (origin ``peer``): ``invalid_result`` (a version or group
            that was not offered), ``missing_required_capability``
            (``data.missing``), ``host_mismatch``.
    """
    offered = set(_listed(offer.capabilities))
    selected = _listed(result.capabilities)
    if result.version not in _listed(offer.versions):
        raise _invalid(
            "the host selected a version that was not offered",
            "peer",
            {"field": "version"},
        )
    if len(set(selected)) != len(selected) or not offered.issuperset(selected):
        raise _invalid(
            "the host selected capabilities that were not offered",
            "peer",
            {"field": "capabilities"},
        )
    missing = sorted(set(_listed(offer.required_capabilities)) - set(selected))
    if missing:
        raise _error(
            ErrorCode.MISSING_REQUIRED_CAPABILITY,
            "the host does not support a required capability",
            "peer",
            {"missing": missing},
        )
    if host_id is not None and result.host_id != host_id:
        raise _error(
            ErrorCode.HOST_MISMATCH,
            "the host is not the one these checkpoints belong to",
            "peer",
            {"expected": host_id, "host_id": result.host_id},
        )
