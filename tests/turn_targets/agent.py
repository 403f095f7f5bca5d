"""A minimal agent for the await-within-turn tests: how it ends a prompt's turn is chosen by argv[1].

plain: answers the prompt, then reports idle (no tool call ever).
idle-first: reports a bare idle snapshot, then a tool call update, then answers (the update must still be found).
no-idle: answers the prompt and never reports idle (the wait must fall back to its timeout).
refuse: answers every prompt with -32602 (no turn, so no idle is owed).
until-cancel: answers the prompt, reports running, and ends the turn (idle, cancelled) only on session/cancel.
stream: answers the prompt, reports running, and streams a message chunk every 20 ms from then on.
queue: the first prompt's turn runs until a second prompt comes; that one is held until the first turn has
    reported idle, then answered, and its own turn runs and ends (idle after its answer, as a held prompt's).
"""

import json
import sys
import threading
import time

MODE = sys.argv[1]
PROMPTS: list = []  # ids of the prompts seen (queue)


WRITING = threading.Lock()  # stream's thread writes too


def send(msg):
    with WRITING:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def update(sid, body):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": body}})


def stream(sid):
    while True:
        time.sleep(0.02)
        update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": "msg_1",
                     "content": {"type": "text", "text": "."}})


for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "capabilities": {},
                                                    "info": {"name": "turn-target", "version": "0"}}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess_1"}})
    elif method == "session/prompt" and MODE == "refuse":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params"}})
    elif method == "session/prompt" and MODE == "queue":
        sid = m["params"]["sessionId"]
        if not PROMPTS:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
            update(sid, {"sessionUpdate": "state_update", "state": "running"})
        else:
            update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
            update(sid, {"sessionUpdate": "state_update", "state": "running"})
            update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        PROMPTS.append(rid)
    elif method == "session/prompt" and MODE == "stream":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
        update(m["params"]["sessionId"], {"sessionUpdate": "state_update", "state": "running"})
        threading.Thread(target=stream, args=(m["params"]["sessionId"],), daemon=True).start()
    elif method == "session/prompt" and MODE == "until-cancel":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
        update(m["params"]["sessionId"], {"sessionUpdate": "state_update", "state": "running"})
    elif method == "session/cancel" and MODE == "until-cancel":
        update(m["params"]["sessionId"], {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    elif method == "session/prompt":
        sid = m["params"]["sessionId"]
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        if MODE == "idle-first":
            update(sid, {"sessionUpdate": "state_update", "state": "idle"})
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"})
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
            if MODE == "plain":
                update(sid, idle)
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
