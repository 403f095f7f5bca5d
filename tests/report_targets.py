"""Targets that hand secrets over the wire, for the redaction tests of tests/test_reports.py.

``python tests/report_targets.py client -- AGENT...``: the reference client, whose session/new carries
MCP servers with secret ``env`` values and ``headers`` (as a real editor passes its users' MCP config)
and a ``_meta`` field named like a key. ``python tests/report_targets.py agent``: the reference agent,
whose initialize result carries a ``_meta`` field named like a token. ``python tests/report_targets.py
client-quoted -- AGENT...``: that client, but its secrets break the schema where the SCHEMA-001 sentence
quotes them (``QUOTED``): its MCP server's ``env`` is an object, its ``info.version`` an object with an
``apiKey`` field.

Every secret is a distinctive string (``SECRETS``) so a test can look for it in every file a run wrote;
``VISIBLE`` are values beside them that must survive redaction.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference import agent as ref_agent  # noqa: E402
from acp_conformance.reference import client as ref_client  # noqa: E402

SECRETS = {
    "env": "envsecret-4b1d6c0e-GITHUB_TOKEN-value",
    "header": "Bearer hdrsecret-93a7f5e2",
    "field": "fieldsecret-apikey-5c2e81d0",
    "agent_field": "agentsecret-authtoken-7e19a4b3",
}
QUOTED = {  # the secrets of client-quoted, which the evidence sentences quote
    "env": "quotedenv-2f9c71aa-API_KEY-value",
    "field": "quotedfield-apikey-8d03be6c",
}
VISIBLE = {
    "env_name": "GITHUB_TOKEN",  # the names of env entries and headers stay; only their values go
    "header_name": "Authorization",
    "label": "visible-label-0d8c",  # a field whose name says nothing secret
    "agent_label": "visible-build-2f6a",
}


def interop_agents() -> dict[str, list[str]]:
    """The SDK-built interop agents of tests/interop/ that are installed (name -> argv); never installs them."""
    try:
        import test_interop as interop
    except Exception:  # pragma: no cover - the interop tests moved: no interop targets
        return {}
    out = {}
    for name, target in interop.TARGETS.items():
        if getattr(target, "side", "agent") != "agent":
            continue
        try:
            missing = interop._missing(getattr(target, "sdk", name))
        except Exception:  # pragma: no cover - a probe that breaks counts as missing
            missing = "probe failed"
        if missing is None:
            out[name] = list(getattr(target, "argv", target))
    return out


class SecretClient(ref_client.ReferenceClient):
    def new_session_params(self) -> dict:
        return {**super().new_session_params(),
                "mcpServers": [
                    {"type": "stdio", "name": "files", "command": "/usr/bin/true", "args": [],
                     "env": [{"name": VISIBLE["env_name"], "value": SECRETS["env"]}]},
                    {"type": "http", "name": "search", "url": "http://127.0.0.1:9/mcp",
                     "headers": [{"name": VISIBLE["header_name"], "value": SECRETS["header"]}]},
                ],
                "_meta": {"apiKey": SECRETS["field"], "label": VISIBLE["label"]}}


class QuotingClient(SecretClient):
    """Schema violations whose SCHEMA-001 sentence quotes the value: an object where the schema wants an
    array (``env``) or a string (``info.version``), as jsonschema says "{'API_KEY': '...'} is not of type"."""

    def initialize_params(self) -> dict:
        p = super().initialize_params()
        return {**p, "info": {**p["info"], "version": {"apiKey": QUOTED["field"]}}}

    def new_session_params(self) -> dict:
        return {**super().new_session_params(),
                "mcpServers": [{"type": "stdio", "name": "files", "command": "/usr/bin/true", "args": [],
                                "env": {"API_KEY": QUOTED["env"]}}]}


class SecretAgent(ref_agent.ReferenceAgent):
    def initialize_result(self, version: int) -> dict:
        return {**super().initialize_result(version),
                "_meta": {"authToken": SECRETS["agent_field"], "build": VISIBLE["agent_label"]}}


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else ""
    if role in ("client", "client-quoted"):
        sys.exit(ref_client.main(sys.argv[2:], cls=SecretClient if role == "client" else QuotingClient))
    if role == "agent":
        sys.exit(ref_agent.main(SecretAgent))
    sys.exit("usage: report_targets.py client|client-quoted -- AGENT... | report_targets.py agent")
