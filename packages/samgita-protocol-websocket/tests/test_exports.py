"""The public surface of samgita_protocol_websocket: __all__ is exact and resolvable.

Add a name to EXPECTED when you export it; an accidental export fails here
(the way websockets' tests/test_exports.py guards its API).
"""

from __future__ import annotations

import importlib.metadata
import types

import samgita_protocol_websocket

EXPECTED: frozenset[str] = frozenset(
    {
        "AgentConnection",
        "Authenticator",
        "BearerTokenAuthenticator",
        "CloseCode",
        "ConnectError",
        "ConnectionInfo",
        "HandshakeRejected",
        "HandshakeRequest",
        "Listener",
        "RedactingLogger",
        "Secret",
        "Session",
        "connect",
        "is_credential_header",
        "redact_text",
        "serve",
    }
)


def test_all_is_exact_and_resolvable() -> None:
    exported = list(samgita_protocol_websocket.__all__)
    assert len(exported) == len(set(exported)), "duplicate names in __all__"
    assert set(exported) == EXPECTED
    for name in exported:
        assert hasattr(samgita_protocol_websocket, name), name
    public = {
        name
        for name, value in vars(samgita_protocol_websocket).items()
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(value, types.ModuleType)
    }
    assert public <= set(exported), (
        f"public but not in __all__: {public - set(exported)}"
    )


def test_depends_on_the_core_by_version_range() -> None:
    requires = importlib.metadata.requires("samgita-protocol-websocket") or []
    core = [r for r in requires if ";" not in r and r.startswith("samgita-protocol")]
    assert len(core) == 1, requires
    name, spec = core[0][: len("samgita-protocol")], core[0][len("samgita-protocol") :]
    assert name == "samgita-protocol"
    assert set(spec.replace(" ", "").split(",")) == {">=0.1", "<0.2"}, core
