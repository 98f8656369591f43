"""Authenticated WebSocket transport for SamgitaProtocol at ``/app-server``.

``serve(...)`` is the listener, ``connect(...)`` the client session; both are
async context managers and nothing starts at import.  See the package README
for every argument and its default.  Failing to connect raises
``ConnectError`` (nothing listening, unknown host) or its subclass
``HandshakeRejected`` (the listener answered with an HTTP status: ``.status``).
"""

from ._auth import Authenticator, BearerTokenAuthenticator, HandshakeRequest
from ._codes import CloseCode
from ._connect import connect
from ._errors import ConnectError, HandshakeRejected
from ._listener import Listener, serve
from ._redact import RedactingLogger, Secret, is_credential_header, redact_text
from ._server_loop import AgentConnection, ConnectionInfo
from ._session import Session

__all__ = [
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
]
