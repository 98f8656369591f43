"""The stable error codes of wire schema 1.0 (docs/protocol.md section 7).

Their own module so that the schema (whose ``ErrorObject`` carries a code)
and the error type (whose ``to_wire`` builds an ``ErrorObject``) both import
them without importing each other. Public as ``samgita_protocol.ErrorCode``.
"""

from __future__ import annotations

import enum

__all__ = ["ErrorCode"]


class ErrorCode(enum.StrEnum):
    """Every stable error code of wire schema 1.0, in documentation order.

    The value is the wire form (``ErrorCode.LIMIT_EXCEEDED == "limit_exceeded"``);
    see docs/protocol.md section 7 for what each code means and who raises it.
    """

    # Codec (decode/encode of one message).
    MESSAGE_TOO_LARGE = "message_too_large"
    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    DEPTH_EXCEEDED = "depth_exceeded"
    DUPLICATE_KEY = "duplicate_key"
    INVALID_KEY = "invalid_key"
    INVALID_MESSAGE = "invalid_message"
    UNSUPPORTED_VERSION = "unsupported_version"
    INVALID_TYPE = "invalid_type"
    UNKNOWN_METHOD = "unknown_method"
    UNKNOWN_FIELD = "unknown_field"
    MISSING_FIELD = "missing_field"
    INVALID_FIELD = "invalid_field"
    INVALID_PARAMS = "invalid_params"
    MISSING_COMMAND_ID = "missing_command_id"
    UNEXPECTED_COMMAND_ID = "unexpected_command_id"
    TASK_REF_WITHOUT_PROJECT_REF = "task_ref_without_project_ref"
    UNPAIRED_STREAM_POSITION = "unpaired_stream_position"
    INVALID_RESPONSE = "invalid_response"
    # Connection.
    NOT_INITIALIZED = "not_initialized"
    ALREADY_INITIALIZED = "already_initialized"
    NO_COMMON_VERSION = "no_common_version"
    MISSING_REQUIRED_CAPABILITY = "missing_required_capability"
    UNSUPPORTED = "unsupported"
    HOST_MISMATCH = "host_mismatch"
    CONFLICT = "conflict"
    CONFLICTING_RESPONSE = "conflicting_response"
    UNKNOWN_RESPONSE = "unknown_response"
    MISMATCHED_RESPONSE = "mismatched_response"
    INVALID_RESULT = "invalid_result"
    UNKNOWN_REQUEST = "unknown_request"
    LIMIT_EXCEEDED = "limit_exceeded"
    AMBIGUOUS_DISCONNECT = "ambiguous_disconnect"
    DISCONNECTED = "disconnected"
    TIMEOUT = "timeout"
    UNKNOWN_UNCERTAIN = "unknown_uncertain"
    APPROVAL_MISMATCH = "approval_mismatch"
    APPROVAL_EXPIRED = "approval_expired"
    NO_RESPONSE_CALLBACK = "no_response_callback"
    INTERNAL_ERROR = "internal_error"
    NOT_FOUND = "not_found"
    # Replay and streams.
    REPLAY_GAP = "replay_gap"
    REPLAY_CONFLICT = "replay_conflict"
    CURSOR_GAP = "cursor_gap"
    FOREIGN_STREAM = "foreign_stream"
    INVALID_CURSOR = "invalid_cursor"
    UNCORRELATED_REPLAY = "uncorrelated_replay"
    UNACKNOWLEDGED_EVENTS = "unacknowledged_events"
