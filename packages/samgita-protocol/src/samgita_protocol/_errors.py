"""The one error type of the core and its stable codes (docs/protocol.md section 7).

Every failure the library reports is a :class:`ProtocolError` carrying an
:class:`ErrorCode`. ``origin`` keeps apart "the caller used the API wrong or
hit a local bound" (``"local"``), "the peer sent something invalid"
(``"peer"``) and "the peer answered with a typed error response"
(``"remote"``). Errors never carry secrets, stack traces or host data:
``data`` only holds protocol facts (field paths, limits, identities).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from msgspec import UNSET

from ._error_codes import ErrorCode
from ._options import wrong_type
from ._schema import ErrorObject

__all__ = ["ErrorCode", "Origin", "ProtocolError"]

Origin: TypeAlias = Literal["local", "peer", "remote"]
_ORIGINS: frozenset[str] = frozenset(("local", "peer", "remote"))


class ProtocolError(Exception):
    """A protocol failure: a stable ``code``, a human ``message``, optional
    JSON ``data`` and the ``origin`` (``"local"``, ``"peer"`` or ``"remote"``).

    ``str(error)`` is ``"<code>: <message>"``. Two errors are equal when code,
    message, data and origin are equal.

    Raises:
        TypeError: ``code``, ``message`` or ``origin`` is not a ``str``, or
            ``data`` is not a ``dict`` or ``None`` (the message names it).
        ValueError: ``code`` is not a defined :class:`ErrorCode` value or
            ``origin`` is not one of the three origins.
    """

    __slots__ = ("code", "data", "message", "origin")

    code: ErrorCode
    message: str
    data: dict[str, Any] | None
    origin: Origin

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        *,
        data: dict[str, Any] | None = None,
        origin: Origin = "local",
    ) -> None:
        try:
            code = ErrorCode(code)
        except ValueError:
            if not isinstance(code, str):
                raise wrong_type("code", code, "an ErrorCode") from None
            raise ValueError(
                f"expected code to be a defined ErrorCode value, got: {code!r}"
            ) from None
        if not isinstance(message, str):
            raise wrong_type("message", message, "a string")
        if data is not None and not isinstance(data, dict):
            raise wrong_type("data", data, "a dict or None")
        if type(origin) is not str or origin not in _ORIGINS:
            if not isinstance(origin, str):
                raise wrong_type("origin", origin, "'local', 'peer' or 'remote'")
            raise ValueError(
                f"expected origin to be 'local', 'peer' or 'remote', got: {origin!r}"
            )
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data
        self.origin = origin

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"ProtocolError({self.code.value!r}, {self.message!r}, "
            f"data={self.data!r}, origin={self.origin!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProtocolError):
            return NotImplemented
        return (self.code, self.message, self.data, self.origin) == (
            other.code,
            other.message,
            other.data,
            other.origin,
        )

    def __hash__(self) -> int:
        return hash((self.code, self.message, self.origin))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.code.value, self.message, self.data, self.origin))

    def with_origin(self, origin: Origin) -> ProtocolError:
        """A copy of this error with another ``origin``.

        Raises:
            TypeError, ValueError: ``origin`` is not ``"local"``, ``"peer"``
                or ``"remote"``.
        """
        return ProtocolError(self.code, self.message, data=self.data, origin=origin)

    def to_wire(self) -> ErrorObject:
        """The wire form of this error (``origin`` is local knowledge, not sent)."""
        if self.data is None:
            return ErrorObject(code=self.code, message=self.message)
        return ErrorObject(code=self.code, message=self.message, data=self.data)

    @classmethod
    def from_wire(cls, obj: ErrorObject, *, origin: Origin = "remote") -> ProtocolError:
        """The error a peer sent in a response's ``error`` object.

        Raises:
            TypeError: ``obj`` is not an `ErrorObject`.
            ValueError: ``obj.code`` is not a defined code (an ``ErrorObject``
                that came out of ``decode`` always has a defined one).
        """
        if not isinstance(obj, ErrorObject):
            raise wrong_type("obj", obj, "an ErrorObject")
        data = None if obj.data is UNSET else obj.data
        return cls(obj.code, obj.message, data=data, origin=origin)


def _rebuild(
    code: str, message: str, data: dict[str, Any] | None, origin: Origin
) -> ProtocolError:
    return ProtocolError(code, message, data=data, origin=origin)
