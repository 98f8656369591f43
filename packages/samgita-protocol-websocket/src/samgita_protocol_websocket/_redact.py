"""Secrets that never print, and a logger adapter that scrubs what websockets logs.

``websockets`` logs every handshake header at DEBUG (``< Authorization: ...``
on the server, ``> Authorization: ...`` on the client) and formats tracebacks
of handshake failures.  Both sides of this package hand ``websockets`` a
:class:`RedactingLogger` instead of a plain logger, so the record that reaches
any handler is already scrubbed: credential headers, query strings and every
registered secret are replaced before formatting leaves this module.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, MutableMapping
from typing import Any, Final, NoReturn

from ._checks import check_strings

__all__ = [
    "REDACTED",
    "RedactingLogger",
    "Secret",
    "as_secret",
    "is_credential_header",
    "redact_text",
]

REDACTED: Final = "[redacted]"

#: A header whose lower-cased name contains one of these carries a credential
#: (RFC 9110 section 11.6, RFC 6265, and the X-Api-Token, X-Auth-Token,
#: X-Secret, X-Session-Id kind): its value is redacted in logs, and the header
#: is kept from handlers (``HandshakeRequest.headers``, ``ConnectionInfo.headers``).
CREDENTIAL_WORDS: Final = (
    "auth",
    "token",
    "secret",
    "cookie",
    "password",
    "passwd",
    "session",
    "credential",
)
#: So does a name with a ``-``/``_`` part ending in "key" (X-Api-Key,
#: X-ApiKey, Private_Key), except these public ones (RFC 6455's handshake
#: nonce).
PUBLIC_KEY_HEADERS: Final = frozenset({"sec-websocket-key"})

# What ends a query string or a bearer value in log text.
_STOP: Final = frozenset(" \t\r\n\f\v'\"")
_TOKEN_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/="
)
_NAME_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
)
#: The shortest piece of a secret that counts as a leak when it borders an
#: elision ("..."): websockets shortens each logged frame to its first 48 and
#: last 24 characters, which can cut a token in a payload in two.
MIN_FRAGMENT: Final = 4
_ELISION: Final = "..."


def is_credential_header(name: str) -> bool:
    """Whether a header named ``name`` carries a credential (see
    ``CREDENTIAL_WORDS``): it is redacted in logs and never shown to a handler.
    Raises ``TypeError`` when ``name`` is not a ``str``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    lower = name.lower()
    if lower in PUBLIC_KEY_HEADERS:
        return False
    if any(word in lower for word in CREDENTIAL_WORDS):
        return True
    return any(part.endswith("key") for part in lower.replace("_", "-").split("-"))


class Secret:
    """A credential that does not show itself in ``repr``, ``str`` or f-strings.

    Call :meth:`reveal` at the one place that needs the value (the handshake
    header).  Raises ``TypeError`` when ``value`` is neither a ``str`` nor a
    ``Secret`` and ``ValueError`` when it is empty or not printable ASCII (an
    HTTP header cannot carry it otherwise), each naming ``value``.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        self._value = _secret_text("value", value)

    def reveal(self) -> str:
        """Return the secret value."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return NotImplemented

    __hash__ = object.__hash__

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled")


def _secret_text(name: str, value: object) -> str:
    """The text of a credential given as argument ``name`` (a ``str`` or a
    :class:`Secret`); ``TypeError`` / ``ValueError`` naming ``name``."""
    if isinstance(value, Secret):
        return value.reveal()
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or Secret, not {type(value).__name__}")
    if (
        not value
        or not value.isascii()
        or not value.isprintable()
        or value != value.strip()
    ):
        raise ValueError(
            f"{name} must be non-empty printable ASCII without surrounding spaces"
        )
    return value


def as_secret(name: str, value: object) -> Secret:
    """``Secret(value)`` for a credential given as argument ``name`` (a
    token), naming ``name`` in its ``TypeError`` / ``ValueError``."""
    secret = Secret.__new__(Secret)
    secret._value = _secret_text(name, value)
    return secret


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with ``secrets`` (also a piece of one cut by a log's
    ``...`` elision), credential header values, bearer values and query
    strings replaced.

    Linear in ``len(text)`` whatever it holds: plain string searches and
    scans forward, no backtracking pattern (a header line of 8 KiB, the most
    ``websockets`` accepts, is redacted before authentication).  Raises
    ``TypeError`` when ``text`` is not a ``str`` or ``secrets`` is not a
    collection of ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    for secret in check_strings("secrets", secrets):
        if secret:
            text = _redact_secret(text, secret)
    text = "".join(_redact_line(line) for line in text.splitlines(keepends=True))
    text = _redact_bearer(text)
    return _redact_queries(text)


def _redact_secret(text: str, secret: str) -> str:
    text = text.replace(secret, REDACTED)
    if len(secret) <= MIN_FRAGMENT or _ELISION not in text:
        return text
    out: list[str] = []
    done = 0
    at = text.find(_ELISION)
    while at != -1:
        end = at + len(_ELISION)
        start = at - _prefix_before(text, at, secret)
        after = end + _suffix_after(text, end, secret)
        if start < done:
            start = done
        if start < at or after > end:
            out.append(text[done:start])
            out.append(REDACTED if start < at else "")
            out.append(_ELISION + (REDACTED if after > end else ""))
            done = after
        at = text.find(_ELISION, max(end, done))
    out.append(text[done:])
    return "".join(out)


def _prefix_before(text: str, at: int, secret: str) -> int:
    """The length of the longest start of ``secret`` (at least
    ``MIN_FRAGMENT``) that ``text`` ends with just before ``at``, or 0."""
    window = max(0, at - len(secret))
    head = secret[:MIN_FRAGMENT]
    found = text.find(head, window, at)
    while found != -1:
        if secret.startswith(text[found:at]):
            return at - found
        found = text.find(head, found + 1, at)
    return 0


def _suffix_after(text: str, end: int, secret: str) -> int:
    """The length of the longest end of ``secret`` (at least
    ``MIN_FRAGMENT``) that ``text`` starts with at ``end``, or 0."""
    tail = secret[-MIN_FRAGMENT:]
    found = text.rfind(tail, end, end + len(secret))
    while found != -1:
        if secret.endswith(text[end : found + MIN_FRAGMENT]):
            return found + MIN_FRAGMENT - end
        found = text.rfind(tail, end, found + MIN_FRAGMENT - 1)
    return 0


def _redact_line(line: str) -> str:
    """``line`` with everything after the first ``name:`` whose name is a
    credential header's replaced. Each colon looks back over the name before
    it, which stops at the previous colon: linear."""
    at = line.find(":")
    while at != -1:
        name_end = at
        while name_end > 0 and line[name_end - 1] in " \t":
            name_end -= 1
        start = name_end
        while start > 0 and line[start - 1] in _NAME_CHARS:
            start -= 1
        if start < name_end and is_credential_header(line[start:name_end]):
            value = at + 1
            while value < len(line) and line[value] in " \t":
                value += 1
            newline = len(line) - len(line.rstrip("\r\n"))
            return line[:value] + REDACTED + line[len(line) - newline :]
        at = line.find(":", at + 1)
    return line


def _redact_bearer(text: str) -> str:
    """``text`` with the value after each word "bearer" (any case) replaced."""
    lower = text.lower()
    out: list[str] = []
    done = 0
    at = lower.find("bearer")
    while at != -1:
        end = at + len("bearer")
        if at > 0 and (lower[at - 1] in _NAME_CHARS and lower[at - 1] != "-"):
            at = lower.find("bearer", end)  # inside a word
            continue
        value = end
        while value < len(text) and text[value].isspace():
            value += 1
        stop = value
        while stop < len(text) and text[stop] in _TOKEN_CHARS:
            stop += 1
        if value > end and stop > value:
            out.append(text[done:end] + " " + REDACTED)
            done = stop
        at = lower.find("bearer", max(end, done))
    out.append(text[done:])
    return "".join(out)


def _redact_queries(text: str) -> str:
    """``text`` with every query string (a ``?`` and what follows it up to a
    space or quote; a token may travel there, RFC 6750 section 2.3: we refuse
    such requests and must not log the token while refusing them) replaced."""
    out: list[str] = []
    done = 0
    at = text.find("?")
    while at != -1:
        stop = at + 1
        while stop < len(text) and text[stop] not in _STOP:
            stop += 1
        if stop > at + 1:
            out.append(text[done : at + 1] + REDACTED)
            done = stop
        at = text.find("?", stop)
    out.append(text[done:])
    return "".join(out)


class RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """A ``LoggerAdapter`` that formats each record eagerly and scrubs it.

    The message with its arguments and any traceback is rendered, passed
    through :func:`redact_text`, and logged as a plain string without
    ``exc_info``; a handler or formatter downstream never sees the raw
    arguments.  Formatting happens only for enabled levels.  Raises
    ``TypeError`` when ``logger`` is not a ``logging.Logger`` or ``secrets``
    is not a collection of ``str``.
    """

    def __init__(self, logger: logging.Logger, secrets: Iterable[str] = ()) -> None:
        if not isinstance(logger, logging.Logger):
            raise TypeError(
                f"logger must be a logging.Logger, not {type(logger).__name__}"
            )
        super().__init__(logger, {})
        self._secrets = tuple(s for s in check_strings("secrets", secrets) if s)

    def __repr__(self) -> str:
        return f"RedactingLogger({self.logger.name!r})"

    def process(
        self, msg: object, kwargs: MutableMapping[str, object]
    ) -> tuple[object, MutableMapping[str, object]]:
        return msg, kwargs

    # kwargs: Logger.log's keywords (exc_info, stacklevel, extra, ...), each
    # of its own type; passed on to it.
    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        try:
            text = str(msg) % args if args else str(msg)
        except Exception:  # a bad format string must not leak its arguments either
            text = f"{msg} (unformattable arguments)"
        exc_info = kwargs.pop("exc_info", None)
        if exc_info:
            if isinstance(exc_info, BaseException):
                exc: BaseException | None = exc_info
            elif isinstance(exc_info, tuple):
                exc = exc_info[1]
            else:
                import sys

                exc = sys.exc_info()[1]
            if exc is not None:
                text += "\n" + "".join(traceback.format_exception(exc)).rstrip()
        kwargs.pop("stack_info", None)
        kwargs.setdefault("stacklevel", 2)
        self.logger.log(level, redact_text(text, self._secrets), **kwargs)
