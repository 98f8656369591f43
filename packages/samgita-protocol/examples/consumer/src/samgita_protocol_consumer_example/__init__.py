"""Example consumer of samgita-protocol, built on its public, installed API only.

* `Inbox` - a host-side ``project_events.v1`` `samgita_protocol.Handler` that
  deduplicates by ``event_id`` and ``command_id``;
* `Reconciler`, `Resolution`, `redelivery` - client-side reconciliation of
  uncertain commands after a disconnect (never a blind re-send).
"""

from __future__ import annotations

import samgita_protocol

from .inbox import Inbox
from .reconcile import Reconciler, Resolution, redelivery

__all__ = ["Inbox", "Reconciler", "Resolution", "redelivery", "schema_id"]


def schema_id() -> str:
    """Return the ``$id`` of the JSON Schema the installed core ships.

    Raises ``FileNotFoundError`` if the core's installation lacks the
    artifact.
    """
    document = samgita_protocol.json_schema()
    return str(document["$id"])
