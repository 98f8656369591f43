"""Connection bounds, and the checks of wrong Python values (private).

Every bound of ``docs/protocol.md`` section 9 is a keyword option with a
named default. Options are checked once, at construction; a bad value raises
``TypeError`` (wrong type) or ``ValueError`` (wrong value) naming the option.

The same policy covers every argument of the public API (``docs/protocol.md``
section 7, "Wrong Python values"): :func:`wrong_type` is the one place that
words a ``TypeError`` naming an argument, :func:`known_name` and
:func:`known_names` the one place that refuses a name missing from a table
(a capability group, a method) with a ``ValueError`` listing the known ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

__all__ = [
    "DEFAULT_MAX_BUFFERED_NOTIFICATIONS",
    "DEFAULT_MAX_COMPLETED",
    "DEFAULT_MAX_INCOMING_REQUESTS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_OUTSTANDING_REQUESTS",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_MAX_STREAM_HASHES",
    "DEFAULT_MAX_UNCERTAIN_COMMANDS",
    "DEFAULT_REQUEST_TIMEOUT",
    "Limits",
    "check_id",
    "check_limits",
    "check_timeout",
    "envelope_types",
    "is_id",
    "known_name",
    "known_names",
    "monotonic",
    "positive_int",
    "wrong_type",
]

#: Requests handed out and not yet answered: enough for a pipelining client,
#: few enough that a peer that never answers cannot grow memory.
DEFAULT_MAX_OUTSTANDING_REQUESTS: Final = 64
#: Mutations whose outcome is unknown; pending mutations count against it so
#: a disconnect can never overflow it.
DEFAULT_MAX_UNCERTAIN_COMMANDS: Final = 64
#: Incoming requests (approvals, cancels) waiting for ``reply``.
DEFAULT_MAX_INCOMING_REQUESTS: Final = 64
#: Sequenced notifications received and not yet drained (one resume page).
DEFAULT_MAX_BUFFERED_NOTIFICATIONS: Final = 128
#: Terminal-identity window: completed and expired request ids remembered to
#: suppress duplicates and detect conflicts.
DEFAULT_MAX_COMPLETED: Final = 128
#: Streams with a position (also bounds restored checkpoints).
DEFAULT_MAX_STREAMS: Final = 64
#: Per-stream retained content of received but unprocessed events.
DEFAULT_MAX_STREAM_HASHES: Final = 128
#: Largest message accepted or produced, in bytes (1 MiB).
DEFAULT_MAX_MESSAGE_BYTES: Final = 1_048_576
#: Seconds a request may wait for its response, applied by ``expire(now)``.
DEFAULT_REQUEST_TIMEOUT: Final = 30.0

#: The id type of the wire: a string of 1 to 256 UTF-8 bytes.
MAX_ID_BYTES: Final = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The validated bounds of one connection side."""

    max_outstanding_requests: int = DEFAULT_MAX_OUTSTANDING_REQUESTS
    max_uncertain_commands: int = DEFAULT_MAX_UNCERTAIN_COMMANDS
    max_incoming_requests: int = DEFAULT_MAX_INCOMING_REQUESTS
    max_buffered_notifications: int = DEFAULT_MAX_BUFFERED_NOTIFICATIONS
    max_completed: int = DEFAULT_MAX_COMPLETED
    max_streams: int = DEFAULT_MAX_STREAMS
    max_stream_hashes: int = DEFAULT_MAX_STREAM_HASHES
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT


_INT_LIMITS: Final = tuple(
    f.name for f in fields(Limits) if f.name != "request_timeout"
)


def positive_int(name: str, value: object) -> int:
    """``value`` if it is a positive ``int`` (not a ``bool``); else ``TypeError``
    (wrong type) or ``ValueError`` naming the option ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(name, value, "a positive integer")
    if value <= 0:
        raise ValueError(f"expected {name} to be a positive integer, got: {value!r}")
    return value


def check_timeout(request_timeout: object, request_timeout_ms: object) -> float:
    """The request timeout in seconds from the two spellings of the option
    (``request_timeout`` seconds, ``request_timeout_ms`` milliseconds as in
    the wire contract); at most one may be given."""
    if request_timeout is not None and request_timeout_ms is not None:
        raise ValueError(
            "give request_timeout (seconds) or request_timeout_ms, not both"
        )
    if request_timeout_ms is not None:
        return positive_int("request_timeout_ms", request_timeout_ms) / 1000.0
    if request_timeout is None:
        return DEFAULT_REQUEST_TIMEOUT
    if isinstance(request_timeout, bool) or not isinstance(
        request_timeout, (int, float)
    ):
        raise TypeError(
            f"expected request_timeout to be a positive number of seconds, got: {request_timeout!r}"
        )
    if not (math.isfinite(request_timeout) and request_timeout > 0):
        raise ValueError(
            f"expected request_timeout to be a positive number of seconds, got: {request_timeout!r}"
        )
    return float(request_timeout)


def check_limits(
    values: Mapping[str, Any],
    *,
    allowed: frozenset[str] | None = None,
) -> Limits:
    """Validated :class:`Limits` from keyword options (``None`` means the
    default). ``allowed`` restricts which integer bounds may be set (the
    Server enforces only some); giving another one is ``TypeError``.
    ``request_timeout``/``request_timeout_ms`` are always accepted."""
    checked: dict[str, Any] = {}
    for name, value in values.items():
        if name in ("request_timeout", "request_timeout_ms"):
            continue
        if name not in _INT_LIMITS:
            raise TypeError(f"unknown option {name!r}")
        if allowed is not None and name not in allowed and value is not None:
            raise TypeError(f"option {name!r} does not apply here")
        if value is not None:
            checked[name] = positive_int(name, value)
    checked["request_timeout"] = check_timeout(
        values.get("request_timeout"), values.get("request_timeout_ms")
    )
    return Limits(**checked)


def check_id(name: str, value: object, *, optional: bool = True) -> str | None:
    """An option holding a wire id: a string of 1 to 256 UTF-8 bytes."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise wrong_type(name, value, "a string")
    if not is_id(value):
        raise ValueError(
            f"expected {name} to be a UTF-8 string of 1 to {MAX_ID_BYTES} bytes, got: {value!r}"
        )
    return value


def is_id(value: object) -> bool:
    """Whether ``value`` is a wire id: a string of 1 to ``MAX_ID_BYTES`` UTF-8 bytes."""
    if not isinstance(value, str):
        return False
    try:
        return 1 <= len(value.encode("utf-8")) <= MAX_ID_BYTES
    except UnicodeEncodeError:
        return False


def monotonic(now: object) -> float:
    """The ``now`` a caller gave ``expire()`` (or the monotonic clock for
    ``None``): a finite number of seconds; ``TypeError`` / ``ValueError``
    naming ``now`` otherwise."""
    if now is None:
        return time.monotonic()
    if isinstance(now, bool) or not isinstance(now, int | float):
        raise TypeError(
            f"expected now to be seconds on the clock given to expire() (a number), got: {now!r}"
        )
    if not math.isfinite(now):
        raise ValueError(f"expected now to be a finite number of seconds, got: {now!r}")
    return float(now)


# -- wrong Python values (docs/protocol.md section 7) ---------------------------------

#: How much of a wrong value an error message shows.
_SHOWN_CHARS: Final = 80


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def wrong_type(name: str, value: object, expected: str) -> TypeError:
    """The ``TypeError`` for argument ``name`` holding ``value``, which is not
    ``expected`` (a phrase: ``"a string"``, ``"a Request"``)."""
    return TypeError(f"expected {name} to be {expected}, got: {_shown(value)}")


def _unknown(
    name: str, expected: str, known: Collection[str], value: object
) -> ValueError:
    # The one wording of a name missing from a table: every known one listed.
    return ValueError(
        f"expected {name} to {expected} ({', '.join(sorted(known))}), "
        f"got: {_shown(value)}"
    )


def known_name(name: str, value: object, known: Collection[str], what: str) -> str:
    """``value`` if it is one of the names ``known`` (a table's keys, each a
    ``what``): a ``TypeError`` when it is not a ``str``, a ``ValueError``
    naming ``name``, ``value`` and every known name otherwise."""
    if not isinstance(value, str):
        raise wrong_type(name, value, f"a {what} (a string)")
    if value not in known:
        raise _unknown(name, f"be a defined {what}", known, value)
    return value


def known_names(
    name: str, value: object, known: Collection[str], what: str
) -> tuple[str, ...]:
    """The names of ``value``, an iterable (not a ``str`` or ``bytes``) of
    names ``known`` (each a ``what``), in order: ``TypeError`` or
    ``ValueError`` naming ``name`` as :func:`known_name`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise wrong_type(name, value, f"a collection of {what}s")
    names = tuple(value)
    for item in names:
        if not isinstance(item, str):
            raise wrong_type(name, value, f"a collection of {what}s (strings)")
        if item not in known:
            raise _unknown(name, f"name only defined {what}s", known, item)
    return names


def envelope_types(**fields: object) -> None:
    """A ``TypeError`` naming the first of the envelope keywords a caller gave
    to build a message (``Client.request``, ``Server.notify``, ...) that has
    the wrong type: ``cursor`` must be an ``int``, every id and ref a ``str``
    (``None`` means absent). Called only once building the message failed,
    so a wrong type is named before the schema's code for it."""
    for name, value in fields.items():
        if value is None:
            continue
        if name == "cursor":
            if isinstance(value, bool) or not isinstance(value, int):
                raise wrong_type(name, value, "an int or None")
        elif not isinstance(value, str):
            raise wrong_type(name, value, "a string or None")
