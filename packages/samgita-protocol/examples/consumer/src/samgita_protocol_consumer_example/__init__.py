"""Example consumer of samgita-protocol (placeholder until the inbox lands).

Uses the core only through its public, installed API.
"""

from __future__ import annotations

import samgita_protocol

__all__ = ["schema_id"]


def schema_id() -> str:
    """Return the ``$id`` of the JSON Schema the installed core ships.

    Raises ``FileNotFoundError`` if the core's installation lacks the
    artifact.
    """
    document = samgita_protocol.json_schema()
    return str(document["$id"])
