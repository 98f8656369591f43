"""The consumer reaches the installed core by name."""

from __future__ import annotations

import importlib.metadata

import samgita_protocol_consumer_example as consumer


def test_uses_the_installed_core_by_name() -> None:
    assert consumer.schema_id() == "urn:samgita-protocol:schema:1.0"
    requires = importlib.metadata.requires("samgita-protocol-consumer-example") or []
    assert [r for r in requires if r.startswith("samgita-protocol")] in (
        ["samgita-protocol<0.2,>=0.1"],
        ["samgita-protocol>=0.1,<0.2"],
    ), requires
