"""A small ACP v1 agent (protocol version 1, as most agents released before v2 speak it): it answers
initialize with its latest version, 1, whatever version the client asks for, as the v1 spec says.

    python tests/careless/v1_agent.py

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
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(req, dict) or "id" not in req or "method" not in req:
            continue
        method, rid = req["method"], req["id"]
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                "authMethods": []}})
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
