"""Every generated Codex type builds a msgspec decoder; inbound tolerates, outbound forbids."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

import msgspec
import pytest

from samgita_protocol_codex._generated import inbound, outbound


def _public_types(module: types.ModuleType) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or name in {
            "Struct",
            "Any",
            "Annotated",
            "Literal",
            "TypeAlias",
        }:
            continue
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct):
            if obj.__module__ == module.__name__:
                found[name] = obj
        elif typing.get_origin(obj) is not None or isinstance(obj, types.UnionType):
            found[name] = obj
    return found


INBOUND = _public_types(inbound)
OUTBOUND = _public_types(outbound)


def test_counts() -> None:
    assert len(INBOUND) > 900
    assert set(INBOUND) == set(OUTBOUND)


@pytest.mark.parametrize("module", [inbound, outbound], ids=["inbound", "outbound"])
def test_every_type_builds_a_decoder(module: types.ModuleType) -> None:
    failures = {}
    for name, tp in _public_types(module).items():
        try:
            msgspec.json.Decoder(tp)
        except (TypeError, ValueError) as exc:
            failures[name] = str(exc)[:200]
    assert not failures


def test_no_numbered_class_names() -> None:
    numbered = [n for n in INBOUND if re.search(r"[a-z]\d+$", n)]
    assert numbered == []


def test_message_unions() -> None:
    sizes = {
        name: len(typing.get_args(typing.get_args(getattr(inbound, name))[0]) or [1])
        for name in ("ClientRequest", "ServerRequest", "ServerNotification")
    }
    assert sizes == {
        "ClientRequest": 105,
        "ServerRequest": 10,
        "ServerNotification": 85,
    }
    note = msgspec.json.decode(
        b'{"method":"initialized"}', type=outbound.ClientNotification
    )
    assert note.method == "initialized"


THREAD_START = (
    b'{"method":"thread/start","id":0,"params":{"cwd":"/w","experimentalX":1}}'
)


def test_inbound_ignores_unknown_fields_outbound_forbids_them() -> None:
    request = msgspec.json.decode(THREAD_START, type=inbound.ClientRequest)
    assert isinstance(request, inbound.ThreadStartRequest)
    assert request.params.cwd == "/w"
    with pytest.raises(msgspec.ValidationError, match="unknown field `experimentalX`"):
        msgspec.json.decode(THREAD_START, type=outbound.ClientRequest)


def test_outbound_round_trip_is_exact() -> None:
    raw = b'{"method":"turn/interrupt","id":"a","params":{"threadId":"t","turnId":"u"}}'
    request = msgspec.json.decode(raw, type=outbound.ClientRequest)
    assert msgspec.json.decode(msgspec.json.encode(request)) == msgspec.json.decode(raw)


@pytest.mark.parametrize(
    ("type_name", "value"),
    [
        # serde externally tagged enum: strings and single-key objects
        ("ReviewDecision", "approved"),
        (
            "ReviewDecision",
            {
                "approved_execpolicy_amendment": {
                    "proposed_execpolicy_amendment": ["ls"]
                }
            },
        ),
        (
            "ReviewDecision",
            {
                "network_policy_amendment": {
                    "network_policy_amendment": {"action": "allow", "host": "h"}
                }
            },
        ),
        # inner anyOf bodies of a tagged variant
        ("UserInput", {"type": "image", "url": "https://x/y.png"}),
        ("UserInput", {"type": "image", "fileId": "f"}),
        ("UserInput", {"type": "text", "text": "hi"}),
        # untagged object union
        ("ResourceContent", {"uri": "u", "text": "t"}),
        ("ResourceContent", {"uri": "u", "blob": "YQ=="}),
        # union with a catch-all branch
        ("CodexErrorInfo", "contextWindowExceeded"),
        ("CodexErrorInfo", {"httpConnectionFailed": {"httpStatusCode": 502}}),
        ("CodexErrorInfo", "aCodeFromTheFuture"),
    ],
)
def test_normalized_unions_accept_original_shapes(
    type_name: str, value: object
) -> None:
    for module in (inbound, outbound):
        tp = getattr(module, type_name)
        decoded = msgspec.to_builtins(msgspec.convert(value, tp))
        if isinstance(
            value, dict
        ):  # defaults (text_elements=[]) are added, nothing lost
            assert {k: decoded[k] for k in value} == value
        else:
            assert decoded == value
