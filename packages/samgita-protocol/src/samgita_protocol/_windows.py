"""Bounded identity windows (private; what they keep of content: ``_content``).

Two windows, both bounded by construction:

* :class:`RecentIds` - the terminal-identity window of an outbox (completed
  or expired request ids, ``max_completed``) and the Server's window of
  incoming request ids. A lookup finds exactly the keys among the newest
  ``max`` insertions; older keys are forgotten. Nothing is ever deleted.
* :class:`FifoWindow` - a bounded first-in-first-out mapping whose keys can
  be deleted (the Client's correlated ``stream/resume`` results waiting for
  ``receive_replay``).

"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Generic, TypeVar

__all__ = ["FifoWindow", "RecentIds"]

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Final = object()


class RecentIds(Generic[K, V]):
    """The values of the newest ``max`` keys inserted, exactly.

    Putting a key that is still remembered replaces its value without making
    it newer. One insertion is one dict store: keys go into ``current`` with
    their insertion number; when ``current`` holds ``max`` keys it becomes
    ``previous`` (the old ``previous``, all of whose keys are older than the
    newest ``max``, is dropped whole). An entry of ``previous`` is visible
    while fewer than ``max`` insertions came after it. Memory holds at most
    ``2 * max`` entries; lookups never see more than ``max``.
    """

    __slots__ = ("_count", "_current", "_max", "_previous")

    def __init__(self, max_size: int) -> None:
        if max_size < 1:
            raise ValueError("max_size must be a positive integer")
        self._max = max_size
        self._current: dict[K, tuple[int, V]] = {}
        self._previous: dict[K, tuple[int, V]] = {}
        self._count = 0

    @property
    def max_size(self) -> int:
        """The number of newest keys remembered."""
        return self._max

    def get(self, key: K) -> V | None:
        """The value of ``key`` if it is among the newest ``max``, else ``None``."""
        hit = self._current.get(key)
        if hit is not None:
            return hit[1]
        hit = self._previous.get(key)
        if hit is not None and hit[0] > self._count - self._max:
            return hit[1]
        return None

    def __contains__(self, key: object) -> bool:
        hit = self._current.get(key)  # type: ignore[arg-type]
        if hit is not None:
            return True
        hit = self._previous.get(key)  # type: ignore[arg-type]
        return hit is not None and hit[0] > self._count - self._max

    def __len__(self) -> int:
        """How many keys a lookup can find (at most ``max_size``)."""
        return min(self._count, self._max)

    def keys(self) -> Iterator[K]:
        """The remembered keys, oldest first."""
        floor = self._count - self._max
        for key, (n, _v) in self._previous.items():
            if n > floor and key not in self._current:
                yield key
        yield from self._current

    def put(self, key: K, value: V) -> None:
        """Remember ``value`` for ``key`` (replacing it when still remembered)."""
        hit = self._current.get(key)
        if hit is not None:
            self._current[key] = (hit[0], value)
            return
        hit = self._previous.get(key)
        if hit is not None and hit[0] > self._count - self._max:
            self._previous[key] = (hit[0], value)
            return
        self.add(key, value)

    def add_new(self, key: K, value: V) -> bool:
        """:meth:`add` when ``key`` is not remembered (True); otherwise
        nothing changes (False)."""
        current = self._current
        if key in current:
            return False
        hit = self._previous.get(key)
        if hit is not None and hit[0] > self._count - self._max:
            return False
        self._count += 1
        current[key] = (self._count, value)
        if len(current) >= self._max:
            self._previous = current
            self._current = {}
        return True

    def add(self, key: K, value: V) -> None:
        """:meth:`put` for a key the caller just found absent (no lookup)."""
        self._count += 1
        current = self._current
        current[key] = (self._count, value)
        if len(current) >= self._max:
            self._previous = current
            self._current = {}

    def clear(self) -> None:
        """Forget every key."""
        self._current = {}
        self._previous = {}
        self._count = 0

    def copy(self) -> RecentIds[K, V]:
        """An independent copy (values are shared, they are immutable)."""
        other: RecentIds[K, V] = RecentIds(self._max)
        other._current = dict(self._current)
        other._previous = dict(self._previous)
        other._count = self._count
        return other


class FifoWindow(Generic[K, V]):
    """A bounded insertion-ordered mapping: a full window evicts its oldest key.

    Putting a key already present replaces its value in place.
    """

    __slots__ = ("_items", "_max")

    def __init__(self, max_size: int) -> None:
        if max_size < 1:
            raise ValueError("max_size must be a positive integer")
        self._max = max_size
        self._items: dict[K, V] = {}

    @property
    def max_size(self) -> int:
        """The most keys held at once."""
        return self._max

    def get(self, key: K) -> V | None:
        """The value of ``key``, or ``None``."""
        return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def put(self, key: K, value: V) -> None:
        """Insert or replace ``key``; evicts the oldest key when full."""
        items = self._items
        if key not in items and len(items) >= self._max:
            del items[next(iter(items))]
        items[key] = value

    def delete(self, key: K) -> None:
        """Forget ``key`` (no-op when absent)."""
        self._items.pop(key, None)

    def clear(self) -> None:
        """Forget every key."""
        self._items.clear()

    def copy(self) -> FifoWindow[K, V]:
        """An independent copy."""
        other: FifoWindow[K, V] = FifoWindow(self._max)
        other._items = dict(self._items)
        return other
