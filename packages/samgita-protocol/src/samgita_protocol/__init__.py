"""samgita_protocol: the native SamgitaProtocol wire schema 1.0 for Python.

Errors: every failure is a :class:`ProtocolError` with an :class:`ErrorCode`.
"""

from ._client import Client
from ._codec import decode, encode, validate
from ._document import json_schema
from ._effects import (
    Effect,
    ErrorReceived,
    NotificationReceived,
    RequestReceived,
    ResponseReceived,
    SendMessage,
)
from ._errors import ErrorCode, Origin, ProtocolError
from ._handler import CallbackFailure, Handler, NotificationContext, RequestContext
from ._jsonscan import MAX_DEPTH
from ._methods import (
    CAPABILITY_GROUPS,
    METHODS,
    MethodSpec,
    request_methods,
)
from ._options import DEFAULT_MAX_MESSAGE_BYTES, MAX_ID_BYTES
from ._outgoing import Outgoing
from ._params import (
    ApprovalRequestParams,
    ApprovalRequestResult,
    CancelParams,
    CancelResult,
    EventReceiveParams,
    EventReceiveResult,
    EventReportParams,
    EventReportResult,
    EventStatusParams,
    EventStatusResult,
    InitializeParams,
    InitializeResult,
    ItemCompletedParams,
    ItemDeltaParams,
    ItemStartedParams,
    StreamResumeParams,
    StreamResumeResult,
    ThreadClosedParams,
    ThreadReadParams,
    ThreadReadResult,
    ThreadResumeParams,
    ThreadResumeResult,
    ThreadStartedParams,
    ThreadStartParams,
    ThreadStartResult,
    TurnCompletedParams,
    TurnInterruptParams,
    TurnInterruptResult,
    TurnStartedParams,
    TurnStartParams,
    TurnStartResult,
    TurnSteerParams,
    TurnSteerResult,
)
from ._rawjson import load_json
from ._replay import Replay
from ._replies import encode_response
from ._results import convert_params, decode_result
from ._schema import (
    MAX_CURSOR,
    SCHEMA_VERSION,
    UNSET,
    Action,
    ErrorObject,
    Event,
    InputItem,
    Item,
    ManagementRequest,
    Message,
    Notification,
    Request,
    Response,
    Thread,
    Turn,
    response_to,
)
from ._server import Server
from ._state import ConnectionState

__all__ = [
    # codec (_codec)
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_DEPTH",
    "decode",
    "encode",
    "encode_response",
    # untyped JSON under the codec's byte-level rules (_rawjson)
    "load_json",
    # errors (_errors)
    "ErrorCode",
    "Origin",
    "ProtocolError",
    # schema (_schema)
    "CAPABILITY_GROUPS",
    "MAX_CURSOR",
    "MAX_ID_BYTES",
    "METHODS",
    "SCHEMA_VERSION",
    "UNSET",
    "Action",
    "ApprovalRequestParams",
    "ApprovalRequestResult",
    "CancelParams",
    "CancelResult",
    "ErrorObject",
    "Event",
    "EventReceiveParams",
    "EventReceiveResult",
    "EventReportParams",
    "EventReportResult",
    "EventStatusParams",
    "EventStatusResult",
    "InitializeParams",
    "InitializeResult",
    "InputItem",
    "Item",
    "ItemCompletedParams",
    "ItemDeltaParams",
    "ItemStartedParams",
    "ManagementRequest",
    "Message",
    "MethodSpec",
    "Notification",
    "Request",
    "Response",
    "StreamResumeParams",
    "StreamResumeResult",
    "Thread",
    "ThreadClosedParams",
    "ThreadReadParams",
    "ThreadReadResult",
    "ThreadResumeParams",
    "ThreadResumeResult",
    "ThreadStartParams",
    "ThreadStartResult",
    "ThreadStartedParams",
    "Turn",
    "TurnCompletedParams",
    "TurnInterruptParams",
    "TurnInterruptResult",
    "TurnStartParams",
    "TurnStartResult",
    "TurnStartedParams",
    "TurnSteerParams",
    "TurnSteerResult",
    "convert_params",
    "decode_result",
    "request_methods",
    "response_to",
    "validate",
    # connection, client side (_client, _effects)
    "Client",
    "ConnectionState",
    "Effect",
    "ErrorReceived",
    "NotificationReceived",
    "RequestReceived",
    "ResponseReceived",
    "SendMessage",
    # what either side sends (_outgoing)
    "Outgoing",
    # connection, host side (_handler, _server)
    "CallbackFailure",
    "Handler",
    "NotificationContext",
    "RequestContext",
    "Server",
    # replay (_replay)
    "Replay",
    # JSON Schema artifact (_document)
    "json_schema",
]
