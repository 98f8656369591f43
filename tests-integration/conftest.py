"""Fixtures for tests-integration/; the helpers themselves live in peers.py."""

from __future__ import annotations

import pytest
from peers import node_binary


@pytest.fixture
def node() -> str:
    """The ``node`` binary (fails, never skips, when missing)."""
    return node_binary()
