"""A small ACP v1 agent (protocol version 1, as most agents released before v2 speak it): it answers
initialize with its latest version, 1, whatever version the client asks for, as the v1 spec says.

    python tests/careless/v1_agent.py [--echo-version [--bare] [--mcp-required]]

--echo-version answers initialize with the version it was asked for, then speaks v1 all the same (fast-agent
0.10.48 and the Python SDK's echo_agent.py do this); --bare leaves its initialize result at protocolVersion alone
(the echo agent's); --mcp-required refuses a session/new without mcpServers with -32602 (v1 requires them).

Standard library only; the v1 shapes (agentCapabilities, authMethods, session/new's cwd and
mcpServers, a prompt answered with stopReason) follow agentclientprotocol.com's v1 protocol pages.
"""

from __future__ import annotations

import json
import sys
import uuid


def send(msg) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> int:
    echo, bare, mcp_required = ("--echo-version" in sys.argv, "--bare" in sys.argv, "--mcp-required" in sys.argv)
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(req, dict) or "id" not in req or "method" not in req:
            continue
        method, rid = req["method"], req["id"]
        params = req.get("params") if isinstance(req.get("params"), dict) else {}
        if method == "initialize":
            version = params.get("protocolVersion", 1) if echo else 1
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": version} if bare else {
                "protocolVersion": version,
                "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                "authMethods": []}})
        elif method == "session/new" and mcp_required and "mcpServers" not in params:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params", "data": {
                "errors": [{"type": "missing", "loc": ["mcpServers"], "msg": "Field required"}]}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": uuid.uuid4().hex}})
        elif method == "session/prompt":
            sid = (req.get("params") or {}).get("sessionId")
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
