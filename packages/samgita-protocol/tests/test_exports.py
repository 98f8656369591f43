"""The public surface of samgita_protocol: every export is intended.

Like websockets' tests/test_exports.py: ``EXPECTED`` lists, by section and
owner, every name the package may export. Exporting a name that is not
listed fails here, and so does dropping a listed one or leaving a public
attribute out of ``__all__``. When you export something, add it to its
section below.
"""

from __future__ import annotations

import types

import samgita_protocol

EXPECTED: dict[str, frozenset[str]] = {
    "errors (_errors)": frozenset({"ErrorCode", "Origin", "ProtocolError"}),
    "schema (_schema)": frozenset(
        {
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
            "ThreadStartedParams",
            "ThreadStartParams",
            "ThreadStartResult",
            "Turn",
            "TurnCompletedParams",
            "TurnInterruptParams",
            "TurnInterruptResult",
            "TurnStartedParams",
            "TurnStartParams",
            "TurnStartResult",
            "TurnSteerParams",
            "TurnSteerResult",
            "convert_params",
            "decode_result",
            "request_methods",
            "response_to",
            "validate",
        }
    ),
    "codec (_codec)": frozenset(
        {"DEFAULT_MAX_MESSAGE_BYTES", "MAX_DEPTH", "decode", "encode"}
    ),
    "raw JSON (_rawjson)": frozenset({"load_json"}),
    "result-checked response encoding (_replies)": frozenset({"encode_response"}),
    "connection (_client, _server, _handler, _effects)": frozenset(
        {
            "CallbackFailure",
            "Client",
            "ConnectionState",
            "Effect",
            "ErrorReceived",
            "Handler",
            "NotificationReceived",
            "NotificationContext",
            "RequestContext",
            "RequestReceived",
            "ResponseReceived",
            "SendMessage",
            "Server",
        }
    ),
    "what either side sends (_outgoing)": frozenset({"Outgoing"}),
    "replay (_replay)": frozenset({"Replay"}),
    "JSON Schema artifact (_document)": frozenset({"json_schema"}),
}
ALLOWED = frozenset().union(*EXPECTED.values())


def test_all_has_no_duplicates_and_resolves() -> None:
    exported = list(samgita_protocol.__all__)
    assert len(exported) == len(set(exported)), "duplicate names in __all__"
    missing = [name for name in exported if not hasattr(samgita_protocol, name)]
    assert not missing, f"in __all__ but not defined: {missing}"


def test_every_export_is_listed_here() -> None:
    exported = set(samgita_protocol.__all__)
    unexpected = exported - ALLOWED
    assert not unexpected, (
        f"exported but not listed in tests/test_exports.py EXPECTED: {sorted(unexpected)}"
    )
    missing = ALLOWED - exported
    assert not missing, f"listed in EXPECTED but no longer exported: {sorted(missing)}"


def test_no_public_name_outside_all() -> None:
    public = {
        name
        for name, value in vars(samgita_protocol).items()
        if not name.startswith("_")
        and name != "annotations"
        # submodules (samgita_protocol.testing) are reached by their path
        and not isinstance(value, types.ModuleType)
    }
    stray = public - set(samgita_protocol.__all__)
    assert not stray, f"public attributes not in __all__: {sorted(stray)}"
