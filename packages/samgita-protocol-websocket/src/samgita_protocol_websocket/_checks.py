"""Argument validation shared by the listener and the client (TypeError/ValueError naming the argument)."""

from __future__ import annotations

import ipaddress
import math
import ssl
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "APP_SERVER_PATH",
    "check_bool",
    "check_callable",
    "check_int",
    "check_optional_seconds",
    "check_seconds",
    "check_ssl",
    "check_write_buffer",
    "is_loopback_host",
]

APP_SERVER_PATH: Final = "/app-server"

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
    name: str, value: Any, *, minimum: int, maximum: int | None = None
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


def check_write_buffer(value: Any, *, write_limit: int, max_size: int) -> int:
    """``max_write_buffer`` (``None``: the default), checked against the bounds it must exceed.

    A send writes its whole frame and only then waits while more than
    ``write_limit`` bytes are queued, so a peer that reads slowly can leave
    ``write_limit`` + one ``max_size`` message queued (plus a few control
    frames; on the client one message per concurrent sender).  Answers to
    the peer's control frames (pongs) never wait, so this bound, at least
    ``MIN_WRITE_BUFFER_FACTOR`` times that and by default
    ``DEFAULT_WRITE_BUFFER_FACTOR`` times, is what stops them piling up
    (``_textconn``).
    """
    in_flight = write_limit + max_size
    if value is None:
        return DEFAULT_WRITE_BUFFER_FACTOR * in_flight
    return check_int(
        "max_write_buffer", value, minimum=MIN_WRITE_BUFFER_FACTOR * in_flight
    )


def check_seconds(name: str, value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(
            f"{name} must be a number of seconds, not {type(value).__name__}"
        )
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be a positive finite number of seconds, got {value!r}"
        )
    return float(value)


def check_optional_seconds(name: str, value: Any) -> float | None:
    return None if value is None else check_seconds(name, value)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def check_callable(name: str, value: Any) -> Callable[..., Any]:
    if not callable(value):
        raise TypeError(f"{name} must be callable, not {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def check_ssl(name: str, value: Any) -> ssl.SSLContext | None:
    if value is not None and not isinstance(value, ssl.SSLContext):
        raise TypeError(
            f"{name} must be an ssl.SSLContext or None, not {type(value).__name__}"
        )
    return value


def pick_alias(
    name: str, value: Any, alias: str, alias_value: Any, default: Any
) -> tuple[str, Any]:
    """The argument given under ``name`` or its older alias (``ValueError`` when both are).

    Returns the name the caller used (for error messages) and the value
    (``default`` when neither was given).
    """
    if value is not None and alias_value is not None:
        raise ValueError(f"pass {name} or its alias {alias}, not both")
    if alias_value is not None:
        return alias, alias_value
    return name, default if value is None else value
