"""What the stores of the SQL backends share (private).

``samgita_protocol.stores.sqlite`` and ``samgita_protocol.stores.postgres``
each own a connection and its transactions; each of their stores runs its
statements through a :class:`Runner` on that connection, which makes each
call atomic. ``C`` is the backend's connection type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Generic, Protocol, TypeVar

__all__ = ["Runner", "RunnerStore", "Store", "T"]

T = TypeVar("T")
C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)


class Runner(Protocol[C_co]):
    """How a store's method runs its statements: atomically."""

    def write(self, work: Callable[[C_co], T]) -> T: ...

    def read(self, work: Callable[[C_co], T]) -> T: ...


class RunnerStore(Generic[C]):
    """A durable store whose methods run on a runner."""

    durable: Final = True

    def __init__(self, runner: Runner[C]) -> None:
        self._runner = runner


class Store(RunnerStore[C]):
    """What the stores of messages share: the runner, and the message
    bound of what they store."""

    def __init__(self, runner: Runner[C], max_message_bytes: int) -> None:
        super().__init__(runner)
        self._max_bytes = max_message_bytes
