"""Authenticated WebSocket transport for SamgitaProtocol at ``/app-server``.

``serve(...)`` is the listener, ``connect(...)`` the client session; both are
async context managers and nothing starts at import.  See the package README
for every argument and its default.
"""

from ._auth import (
    Authenticator,
    BearerTokenAuthenticator,
    ConnectionInfo,
    HandshakeRequest,
)
from ._codes import CloseCode
from ._listener import Listener, serve
from ._redact import RedactingLogger, Secret, redact_text
from ._server_loop import AgentConnection

__all__ = [
    "AgentConnection",
    "Authenticator",
    "BearerTokenAuthenticator",
    "CloseCode",
    "ConnectionInfo",
    "HandshakeRequest",
    "Listener",
    "RedactingLogger",
    "Secret",
    "redact_text",
    "serve",
]
