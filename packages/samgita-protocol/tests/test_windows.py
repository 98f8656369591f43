"""The bounded identity windows: exact newest-N semantics and bounded memory
(what they remember of content: tests/test_content.py)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samgita_protocol._windows import FifoWindow, RecentIds


@given(
    size=st.integers(1, 6),
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, 15), st.integers()), max_size=80
    ),
)
def test_recent_ids_remember_exactly_the_newest_insertions(
    size: int, ops: list[tuple[bool, int, int]]
) -> None:
    window: RecentIds[int, int] = RecentIds(size)
    model: deque[int] = deque()  # keys in insertion order, newest last
    values: dict[int, int] = {}
    for is_put, key, value in ops:
        if is_put:
            window.put(key, value)
            if key in model:
                values[key] = value  # replaced in place, not made newer
            else:
                model.append(key)
                values[key] = value
                if len(model) > size:
                    values.pop(model.popleft())
        for probe in range(16):
            expected = values.get(probe) if probe in model else None
            assert window.get(probe) == expected
            assert (probe in window) == (probe in model)
        assert list(window.keys()) == list(model)
        assert len(window) == len(model)
        assert len(window._current) + len(window._previous) <= 2 * size


def test_recent_ids_clear_and_copy() -> None:
    window: RecentIds[str, int] = RecentIds(2)
    window.add("a", 1)
    other = window.copy()
    window.clear()
    assert "a" not in window and other.get("a") == 1
    with pytest.raises(ValueError):
        RecentIds(0)


def test_fifo_window_evicts_the_oldest_and_deletes() -> None:
    window: FifoWindow[str, int] = FifoWindow(2)
    window.put("a", 1)
    window.put("b", 2)
    window.put("a", 3)  # replace keeps position
    window.put("c", 4)
    assert list(window) == ["b", "c"]  # "a" kept its place, so it was oldest
    window.delete("b")
    window.delete("zzz")
    assert list(window) == ["c"] and len(window) == 1
    copy = window.copy()
    window.clear()
    assert list(copy) == ["c"] and list(window) == []
