"""What tells the protocol versions apart on the wire, where an agent's word (protocolVersion) is not enough:
fast-agent and the Python SDK's echo agent answer whatever version they are asked for and speak version 1."""

from __future__ import annotations

from typing import Any

# InitializeResponse's names in each version (agentclientprotocol.com, the v1 and v2 schemas)
V1_INIT_NAMES = ("agentCapabilities", "agentInfo")
V2_INIT_NAMES = ("info", "capabilities")


def v1_names_only(result: Any) -> list[str]:
    """The version-1 names of an initialize result that has none of version 2's ([] otherwise)."""
    if not isinstance(result, dict) or any(k in result for k in V2_INIT_NAMES):
        return []
    return [k for k in V1_INIT_NAMES if k in result]


def negotiated(response: Any) -> int | None:
    """The protocol version an initialize response settles on, for judging: 1 for protocolVersion 1 or for a "2"
    said in version 1's words only (an agent that echoes the version asked), 2 for any other successful answer,
    None for an error or no result (a later initialize decides)."""
    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        return None
    v = result.get("protocolVersion")
    return 1 if v == 1 and not isinstance(v, bool) or v1_names_only(result) else 2
