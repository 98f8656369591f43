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
import re
import traceback
from collections.abc import Iterable, MutableMapping
from typing import Any, Final

__all__ = ["REDACTED", "RedactingLogger", "Secret", "redact_text"]

REDACTED: Final = "[redacted]"

# Header names whose values are credentials (RFC 9110 section 11.6, RFC 6265).
# Also any header whose name says it carries a token, secret or API key
# (X-Api-Token, X-Auth-Token, X-Secret, ...).
_CREDENTIAL_HEADERS: Final = re.compile(
    r"(?im)\b(authorization|proxy-authorization|cookie|set-cookie|x-api-key"
    r"|[a-z0-9-]*(?:token|secret|api-key|auth)[a-z0-9-]*)(\s*:\s*)[^\r\n]*"
)
# A request target's query string may carry a token (RFC 6750 section 2.3); we
# refuse such requests, and must not log the token while refusing them.  The
# path before the "?" is optional and may be anything without spaces: origin
# form "/app-server?...", but also "app-server?...", "*?..." and absolute
# form "http://host/x?..." that a hostile client may send.
_QUERY: Final = re.compile(r"([^\s?'\"]*)\?[^\s'\"]+")
# Bearer credentials wherever they appear in free text.
_BEARER: Final = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*")


class Secret:
    """A credential that does not show itself in ``repr``, ``str`` or f-strings.

    Call :meth:`reveal` at the one place that needs the value (the handshake
    header).  Raises ``TypeError`` when ``value`` is not a ``str`` and
    ``ValueError`` when it is empty or not printable ASCII (an HTTP header
    cannot carry it otherwise).
    """

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError("token must be a str")
        if (
            not value
            or not value.isascii()
            or not value.isprintable()
            or value != value.strip()
        ):
            raise ValueError(
                "token must be non-empty printable ASCII without surrounding spaces"
            )
        self._value = value

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

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with credential headers, query strings, bearer values and ``secrets`` replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _CREDENTIAL_HEADERS.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text
    )
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _QUERY.sub(lambda m: f"{m.group(1)}?{REDACTED}", text)


class RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """A ``LoggerAdapter`` that formats each record eagerly and scrubs it.

    The message with its arguments and any traceback is rendered, passed
    through :func:`redact_text`, and logged as a plain string without
    ``exc_info``; a handler or formatter downstream never sees the raw
    arguments.  Formatting happens only for enabled levels.
    """

    def __init__(self, logger: logging.Logger, secrets: Iterable[str] = ()) -> None:
        super().__init__(logger, {})
        self._secrets = tuple(s for s in secrets if s)

    def __repr__(self) -> str:
        return f"RedactingLogger({self.logger.name!r})"

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs

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
