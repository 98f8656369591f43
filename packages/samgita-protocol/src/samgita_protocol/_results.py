"""Validation of values that are not whole wire messages: a method's params
built by the caller (``convert_params``), a response's result against its
method (``decode_result``) and a caller-built message (``validate``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET

from ._errors import ErrorCode, ProtocolError
from ._jsonscan import (
    MAX_DEPTH,
    ascii_only,
    checked_json,
    depth_within,
    error,
    pointer_segment,
    short_path,
)
from ._methods import (
    METHODS,
    MethodSpec,
    method_spec,
)
from ._options import known_name, wrong_type
from ._params import StreamResumeResult
from ._schema import Notification
from ._validate import (
    ENCODER,
    PARAMS_DECODERS,
    RESULT_DECODERS,
    check_struct,
    decode_params,
    from_validation_error,
    has_free_form,
    needs_walk,
)

#: What msgspec raises on bad input (see ``_codec``).
_DECODE_FAILURES: Final = (ValueError, RecursionError)
#: Per request method: whether its result can hold free-form JSON, and
#: whether an ASCII result needs the walk.
_FREE_FORM: Final = {
    n: has_free_form(s.result) for n, s in METHODS.items() if s.result is not None
}
_WALK: Final = {
    n: needs_walk(s.result, True) for n, s in METHODS.items() if s.result is not None
}

# -- results and caller-built values ---------------------------------------------------------


_INSERTION_ORDER: Final = msgspec.json.Encoder()


def as_json(value: object, code: ErrorCode, what: str) -> bytes:
    """``value`` encoded to JSON for validation, or the error naming why it
    cannot be."""
    try:
        try:
            return ENCODER.encode(value)
        except TypeError:
            # Keys the deterministic order cannot sort (an int beside a
            # str): encoded in insertion order, for the caller's checks
            # (``json_problem``) to name.
            return _INSERTION_ORDER.encode(value)
    except UnicodeEncodeError:
        raise ProtocolError(
            ErrorCode.INVALID_UTF8, f"{what} holds a string that is not valid Unicode"
        ) from None
    except RecursionError:
        raise ProtocolError(
            ErrorCode.DEPTH_EXCEEDED,
            f"{what} nests deeper than {MAX_DEPTH}",
            data={"max": MAX_DEPTH},
        ) from None
    except (TypeError, ValueError, OverflowError):
        raise ProtocolError(code, f"{what} is not representable as JSON") from None


def convert_params(
    method: str, value: msgspec.Struct | Mapping[str, Any]
) -> msgspec.Struct:
    """The validated params Struct of ``method`` from a params Struct or a
    mapping of wire field names (as JSON would carry them).

    Raises:
        TypeError: ``method`` is not a string, or ``value`` is neither a
            mapping nor the method's params Struct (the message names it).
        ValueError: ``method`` is not a defined method.
        ProtocolError: ``unknown_field``, ``missing_field``,
            ``invalid_field``, ``invalid_utf8``, ``depth_exceeded``,
            ``task_ref_without_project_ref`` for content that violates the
            schema (``data.path`` names the field, rooted at ``/params``).
            Origin ``local``.
    """
    return params_of(method, value, "value")


def params_of(method: str, value: object, name: str) -> msgspec.Struct:
    """:func:`convert_params`, naming the argument that held ``value`` (the
    ``params`` of ``Client.request`` and the like) in its ``TypeError``."""
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None:
        spec = METHODS[known_name("method", method, METHODS, "method")]
    if not isinstance(value, (spec.params, Mapping)):
        raise wrong_type(
            name,
            value,
            f"the params of {spec.name}: {spec.params.__name__} or a mapping",
        )
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    raw = as_json(value, ErrorCode.INVALID_FIELD, "params")
    try:
        checked_json(raw, MAX_DEPTH, "/params")
        params: msgspec.Struct = decode_params(spec, raw, ascii_only(raw))
    except ProtocolError as exc:
        raise exc.with_origin("local") from None
    # Values msgspec would change silently (non-string keys, tuples, NaN...).
    if params != value:
        problem = json_problem(value, "/params")
        if problem is not None:
            raise problem
    return params


def decode_result(
    method: str, raw: msgspec.Raw | msgspec.Struct | Mapping[str, Any]
) -> Any:
    """The validated result Struct of request ``method`` from a response's
    raw ``result`` (as ``decode`` leaves it), a result Struct or a mapping.

    Raises:
        ProtocolError: ``invalid_result`` (origin ``peer``) when the result
            violates the method's result schema; ``data.reason`` holds the
            underlying code (``unknown_field``, ``missing_field``,
            ``invalid_field``, ``duplicate_key``, ...) and ``data.path`` the
            JSON pointer.
        TypeError: ``method`` is not a string, or ``raw`` is neither
            ``msgspec.Raw``, a Struct nor a mapping (the message names it).
        ValueError: ``method`` is not a defined request method.
    """
    return result_of(method, raw, "raw")


def result_of(method: str, raw: object, name: str) -> Any:
    """:func:`decode_result`, naming the argument that held ``raw`` (the
    ``result`` of ``Client.reply``) in its ``TypeError``."""
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None or spec.result is None:
        spec = method_spec("method", method, "request")
    try:
        if isinstance(raw, msgspec.Raw):
            data = bytes(raw)
        elif isinstance(raw, (msgspec.Struct, Mapping)):
            if isinstance(raw, Mapping) and not isinstance(raw, dict):
                raw = dict(raw)
            data = as_json(raw, ErrorCode.INVALID_FIELD, "result")
        else:
            raise wrong_type(
                name,
                raw,
                f"the result of {spec.name}: a Struct, a mapping or msgspec.Raw",
            )
        result = _decode_result_bytes(spec, data)
        if not isinstance(raw, msgspec.Raw) and result != raw:
            problem = json_problem(raw, "/result")
            if problem is not None:
                raise problem
    except ProtocolError as exc:
        reason = exc.code.value
        extra = dict(exc.data or {})
        extra["reason"] = reason
        raise ProtocolError(
            ErrorCode.INVALID_RESULT,
            f"result of {method} is invalid: {exc.message}",
            data=extra,
            origin="peer",
        ) from None
    return result


def _decode_result_bytes(spec: MethodSpec, data: bytes) -> Any:
    # The typed decode first: bytes that are msgspec's own encoding of what
    # they decode to repeat no key and are UTF-8, and only free-form JSON
    # nests deeper than the schema; ASCII canonical bytes are ASCII strings.
    # Anything else takes the ordered byte checks below, which name the
    # first violation.
    if spec.result is not StreamResumeResult:
        try:
            result = RESULT_DECODERS[spec.name].decode(data)
        except _DECODE_FAILURES:
            result = None
        if (
            result is not None
            and data.isascii()
            and ENCODER.encode(result) == data
            and (not _FREE_FORM[spec.name] or depth_within(data, MAX_DEPTH - 1))
        ):
            if _WALK[spec.name]:
                check_struct(result, "/result", True)
            return result
    ascii_input = ascii_only(data)
    value = checked_json(data, MAX_DEPTH, "/result")
    try:
        result = RESULT_DECODERS[spec.name].decode(data)
    except msgspec.ValidationError as exc:
        raise from_validation_error(exc, "/result") from None
    if spec.result is not None and needs_walk(spec.result, ascii_input):
        check_struct(result, "/result", ascii_input)
    if isinstance(result, StreamResumeResult):
        events = [
            _nested_notification(n, raw, f"/result/events/{i}", ascii_input)
            for i, (n, raw) in enumerate(
                zip(result.events, value["events"], strict=True)
            )
        ]
        result = msgspec.structs.replace(result, events=events)
    return result


def _nested_notification(
    n: Notification, raw: dict[str, Any], path: str, ascii_input: bool
) -> Notification:
    """A notification inside a ``stream/resume`` result, checked like a
    top-level one (``raw`` is its undecoded JSON object, which shows the
    presence of the fields a standalone Struct decode fills in) and with
    its params decoded."""
    for name in ("schema_version", "type"):
        if name not in raw:
            raise error(
                ErrorCode.MISSING_FIELD, f"{name} is required", f"{path}/{name}"
            )
    spec = METHODS.get(n.method)
    if spec is None or spec.kind != "notification":
        raise error(
            ErrorCode.UNKNOWN_METHOD, "not a notification method", f"{path}/method"
        )
    if (n.stream_id is UNSET) != (n.cursor is UNSET):
        missing = "stream_id" if n.stream_id is UNSET else "cursor"
        raise error(
            ErrorCode.UNPAIRED_STREAM_POSITION,
            "stream_id and cursor must appear together",
            f"{path}/{missing}",
        )
    check_struct(n, path, ascii_input)
    if not isinstance(raw["params"], dict):
        raise error(
            ErrorCode.INVALID_PARAMS, "params must be an object", f"{path}/params"
        )
    try:
        params = PARAMS_DECODERS[spec.name].decode(n.params)
    except msgspec.ValidationError as exc:
        raise from_validation_error(exc, f"{path}/params") from None
    if needs_walk(spec.params, ascii_input):
        check_struct(params, f"{path}/params", ascii_input)
    return msgspec.structs.replace(n, params=params)


_JSON_SCALARS: Final = (str, int, float, bool, type(None))


def json_problem(value: Any, path: str) -> ProtocolError | None:
    """The ``invalid_key`` / ``invalid_field`` error (origin ``local``) for
    the first value in a caller-built message that JSON cannot carry as it
    is, or ``None``. Structs are walked by their fields; ``msgspec.Raw`` is
    already JSON."""
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            problem = json_problem(getattr(value, name), f"{path}/{name}")
            if problem is not None:
                return problem
        return None
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                return ProtocolError(
                    ErrorCode.INVALID_KEY,
                    "object keys must be strings",
                    data={"path": short_path(path)},
                )
            problem = json_problem(item, f"{path}/{pointer_segment(key)}")
            if problem is not None:
                return problem
        return None
    if type(value) is list:
        for i, item in enumerate(value):
            problem = json_problem(item, f"{path}/{i}")
            if problem is not None:
                return problem
        return None
    if value is UNSET or isinstance(value, msgspec.Raw | ErrorCode):
        return None
    if type(value) in _JSON_SCALARS and not (
        type(value) is float and not math.isfinite(value)
    ):
        return None
    return ProtocolError(
        ErrorCode.INVALID_FIELD,
        f"a {type(value).__name__} is not a JSON value",
        data={"path": short_path(path)},
    )
