"""Codex request method -> params and response types (the schema has no such map).

The bundle's ``ClientRequest``/``ServerRequest`` unions give each method its
params type; the response type follows ``XParams`` -> ``XResponse`` except for
the 13 methods in :data:`RESPONSE_OVERRIDES` (checked against the generated
types by the package tests).
"""

from __future__ import annotations

import typing
from types import MappingProxyType
from typing import Any, Final

import msgspec

from ._generated import inbound

__all__ = ["RESPONSE_OVERRIDES", "request_types"]

#: Methods whose response type name does not follow from their params type.
RESPONSE_OVERRIDES: Final = MappingProxyType(
    {
        "account/gatewayOAuth/read": "GatewayOAuthReadResponse",
        "account/gatewayOAuth/login": "GatewayOAuthLoginResponse",
        "account/gatewayOAuth/cancel": "GatewayOAuthCancelResponse",
        "config/mcpServer/reload": "McpServerRefreshResponse",
        "windowsSandbox/readiness": "WindowsSandboxReadinessResponse",
        "account/logout": "LogoutAccountResponse",
        "account/rateLimits/read": "GetAccountRateLimitsResponse",
        "account/usage/read": "GetAccountTokenUsageResponse",
        "account/workspaceMessages/read": "GetWorkspaceMessagesResponse",
        "externalAgentConfig/import/readHistories": (
            "ExternalAgentConfigImportHistoriesReadResponse"
        ),
        "config/value/write": "ConfigWriteResponse",
        "config/batchWrite": "ConfigWriteResponse",
        "configRequirements/read": "ConfigRequirementsReadResponse",
    }
)


def _variants(union: Any) -> tuple[type[msgspec.Struct], ...]:
    if typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    return typing.get_args(union) or (union,)


def _params_type(variant: type[msgspec.Struct]) -> Any:
    hints = typing.get_type_hints(variant, vars(inbound), include_extras=False)
    return hints.get("params")


def request_types(union: Any) -> MappingProxyType[str, tuple[Any, Any]]:
    """method -> (params type or None, response type) for a generated request union.

    Raises:
        LookupError: a method whose response type is missing from the
            generated module (a broken table; the tests catch it).
    """
    table: dict[str, tuple[Any, Any]] = {}
    for variant in _variants(union):
        method = variant.__struct_config__.tag
        assert isinstance(method, str)
        params = _params_type(variant)
        # the annotation keeps the schema's name even for a union alias
        params_name = str(variant.__annotations__.get("params", "")).split(" ")[0]
        name = RESPONSE_OVERRIDES.get(method)
        if name is None:
            name = params_name.removesuffix("Params") + "Response"
        response = getattr(inbound, name, None)
        if response is None:
            raise LookupError(f"no response type {name} for Codex method {method}")
        table[method] = (params, response)
    return MappingProxyType(table)
