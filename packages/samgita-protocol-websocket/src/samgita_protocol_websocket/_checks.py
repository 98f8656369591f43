"""Argument validation shared by the listener and the client (TypeError/ValueError naming the argument).

The package's one home for the core's policy on wrong Python values
(``docs/protocol.md`` section 7): a wrong type is a ``TypeError`` naming the
argument, a wrong value a ``ValueError`` naming it.
"""

from __future__ import annotations

import ipaddress
import math
import ssl
from collections.abc import Iterable
from typing import Final, TypeVar

from websockets.frames import EXTERNAL_CLOSE_CODES

__all__ = [
    "APP_SERVER_PATH",
    "check_bool",
    "check_callable",
    "check_close",
    "check_int",
    "check_optional_seconds",
    "check_seconds",
    "check_ssl",
    "check_strings",
    "check_write_buffer",
    "is_loopback_host",
]

APP_SERVER_PATH: Final = "/app-server"

_T = TypeVar("_T")

MIN_WRITE_BUFFER_FACTOR: Final = 2
"""``max_write_buffer`` is at least this many times ``write_limit`` + ``max_size``."""
DEFAULT_WRITE_BUFFER_FACTOR: Final = 4
"""``max_write_buffer`` is by default this many times ``write_limit`` + ``max_size``
(4.25 MiB with the defaults)."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` names only the loopback interface (IP literal or ``localhost``)."""
    host = host.strip("[]")
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_int(
    name: str, value: object, *, minimum: int, maximum: int | None = None
) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = (
            f"between {minimum} and {maximum}"
            if maximum is not None
            else f">= {minimum}"
        )
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_write_buffer(value: object, *, write_limit: int, max_size: int) -> int:
    """``max_write_buffer`` (``None``: the default), checked against the bounds it must exceed.

    A send writes its whole frame and only then waits while more than
    ``write_limit`` bytes are queued, so a peer that reads slowly can leave
    ``write_limit`` + one ``max_size`` message queued (plus a few control
    frames; on the client one message per concurrent sender).  Answers to
    the peer's control frames (pongs) never wait, so this bound, at least
    ``MIN_WRITE_BUFFER_FACTOR`` times that and by default
    ``DEFAULT_WRITE_BUFFER_FACTOR`` times, is what stops them piling up
    (``_boundedconn``).
    """
    in_flight = write_limit + max_size
    if value is None:
        return DEFAULT_WRITE_BUFFER_FACTOR * in_flight
    return check_int(
        "max_write_buffer", value, minimum=MIN_WRITE_BUFFER_FACTOR * in_flight
    )


def check_seconds(name: str, value: object) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(
            f"{name} must be a number of seconds, not {type(value).__name__}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be a positive finite number of seconds, got {value!r}"
        )
    return float(value)


def check_optional_seconds(name: str, value: object) -> float | None:
    return None if value is None else check_seconds(name, value)


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def check_callable(name: str, value: _T) -> _T:
    """``value`` itself, once it is callable (its type as the caller declared it)."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, not {type(value).__name__}")
    return value


def check_strings(name: str, value: object) -> tuple[str, ...]:
    """The strings of ``value``, an iterable of ``str`` (not one ``str``)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(
            f"{name} must be a collection of str, not {type(value).__name__}"
        )
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(
                f"{name} must be a collection of str, not one holding "
                f"{type(item).__name__}"
            )
    return items


#: The longest close reason: a close frame's payload is at most 125 bytes,
#: two of them the code (RFC 6455 section 5.5).
MAX_CLOSE_REASON_BYTES: Final = 123


def check_close(code: object, reason: object) -> tuple[int, str]:
    """A close ``code`` one may send (RFC 6455 section 7.4: a defined code or
    3000-4999) and a ``reason`` of at most 123 UTF-8 bytes."""
    if isinstance(code, bool) or not isinstance(code, int):
        raise TypeError(f"code must be an int, not {type(code).__name__}")
    if code not in EXTERNAL_CLOSE_CODES and not 3000 <= code < 5000:
        raise ValueError(
            f"code must be a close code one may send (1000-1003, 1007-1014, "
            f"3000-4999), got {code}"
        )
    if not isinstance(reason, str):
        raise TypeError(f"reason must be a str, not {type(reason).__name__}")
    if len(reason.encode("utf-8", "surrogatepass")) > MAX_CLOSE_REASON_BYTES:
        raise ValueError(
            f"reason must be at most {MAX_CLOSE_REASON_BYTES} UTF-8 bytes, "
            f"got {len(reason.encode('utf-8', 'surrogatepass'))}"
        )
    return code, reason


def check_ssl(name: str, value: object) -> ssl.SSLContext | None:
    if value is not None and not isinstance(value, ssl.SSLContext):
        raise TypeError(
            f"{name} must be an ssl.SSLContext or None, not {type(value).__name__}"
        )
    return value


def pick_alias(
    name: str, value: _T | None, alias: str, alias_value: _T | None, default: _T
) -> tuple[str, _T]:
    """The argument given under ``name`` or its older alias (``ValueError`` when both are).

    Returns the name the caller used (for error messages) and the value
    (``default`` when neither was given).
    """
    if value is not None and alias_value is not None:
        raise ValueError(f"pass {name} or its alias {alias}, not both")
    if alias_value is not None:
        return alias, alias_value
    return name, default if value is None else value
