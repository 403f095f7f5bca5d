"""A small ACP v1 client: it launches its agent (the command after --), asks for protocol version 1 (its
latest, as a v1 client does), opens a session in v1's shape, and exits when its own stdin closes.

    python tests/careless/v1_client.py -- AGENT ARGS...

Standard library only; the v1 shapes (clientCapabilities, session/new's cwd and mcpServers) follow
agentclientprotocol.com's v1 protocol pages.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys


def main() -> int:
    if "--" not in sys.argv:
        sys.stderr.write("usage: v1_client.py -- AGENT ARGS...\n")
        return 2
    argv = sys.argv[sys.argv.index("--") + 1:]
    if len(argv) == 1:  # the agent's command line as one word (the suite's {agent})
        argv = shlex.split(argv[0])
    agent = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def call(id_, method, params):
        agent.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode())
        agent.stdin.flush()
        for line in agent.stdout:
            msg = json.loads(line)
            if msg.get("id") == id_ and "method" not in msg:
                return msg
        return None

    call(0, "initialize", {"protocolVersion": 1,
                           "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}}})
    call(1, "session/new", {"cwd": os.getcwd(), "mcpServers": []})
    sys.stdin.read()  # until the suite closes our stdin
    agent.stdin.close()
    agent.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
