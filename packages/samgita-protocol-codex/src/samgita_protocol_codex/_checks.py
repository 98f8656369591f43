"""Argument checks of this package (private).

The package's one home for the core's policy on wrong Python values
(``docs/protocol.md`` section 7, "Wrong Python values"): an argument of the
wrong type is a ``TypeError`` naming it, a wrong value a ``ValueError``
naming it, worded as the core words them. What a Codex line or a native
message holds is checked elsewhere and raised as ``ProtocolError``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from typing import Any, Final

from samgita_protocol import MAX_ID_BYTES

__all__ = [
    "check_callable",
    "check_instance_id",
    "check_line",
    "check_positive_int",
    "check_positive_timedelta",
    "check_text",
    "check_wire_id",
    "wrong_type",
]

#: How much of a wrong value an error message shows.
_SHOWN_CHARS: Final = 80
#: A bridge instance id (``instance_id``): short, and safe inside any id.
_INSTANCE_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")


def wrong_type(name: str, value: object, expected: str) -> TypeError:
    """The ``TypeError`` for argument ``name`` holding ``value``."""
    text = repr(value)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return TypeError(f"expected {name} to be {expected}, got: {text}")


def check_positive_int(name: str, value: object) -> int:
    """``value`` if it is a positive ``int`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(name, value, "a positive integer")
    if value <= 0:
        raise ValueError(f"expected {name} to be a positive integer, got: {value!r}")
    return value


def check_text(name: str, value: object) -> str:
    """``value`` if it is a non-empty ``str``."""
    if not isinstance(value, str):
        raise wrong_type(name, value, "a string")
    if not value:
        raise ValueError(f"expected {name} to be a non-empty string, got: ''")
    return value


def check_wire_id(name: str, value: object) -> str:
    """``value`` if it is a wire id: a string of 1 to ``MAX_ID_BYTES`` UTF-8 bytes."""
    if not isinstance(value, str):
        raise wrong_type(name, value, "a string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        size = 0
    if not 1 <= size <= MAX_ID_BYTES:
        raise ValueError(
            f"expected {name} to be a UTF-8 string of 1 to {MAX_ID_BYTES} bytes, "
            f"got: {value!r}"
        )
    return value


def check_instance_id(name: str, value: object) -> str:
    """``value`` if it is 1 to 32 of ``[A-Za-z0-9_-]`` (safe inside any id)."""
    if not isinstance(value, str):
        raise wrong_type(name, value, "a string")
    if _INSTANCE_ID.fullmatch(value) is None:
        raise ValueError(
            f"expected {name} to be 1 to 32 ASCII letters, digits, '_' or "
            f"'-', got: {value!r}"
        )
    return value


def check_positive_timedelta(name: str, value: object) -> _dt.timedelta:
    """``value`` if it is a positive ``datetime.timedelta``."""
    if not isinstance(value, _dt.timedelta):
        raise wrong_type(name, value, "a datetime.timedelta")
    if value <= _dt.timedelta(0):
        raise ValueError(f"expected {name} to be positive, got: {value!r}")
    return value


def check_callable(name: str, value: object) -> Callable[..., Any]:
    """``value`` if it is callable."""
    if not callable(value):
        raise wrong_type(name, value, "callable")
    return value


def check_line(name: str, value: object) -> bytes | bytearray | memoryview:
    """``value`` if it is one line's bytes (a ``str`` is refused: encode it)."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise wrong_type(name, value, "bytes, bytearray or memoryview")
    return value
