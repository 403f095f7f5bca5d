"""Hostile targets: agents that are broken in the ways that hang or crash test harnesses.

    python tests/hostile/target.py MODE

Each mode answers just enough ACP (initialize, session/new) to reach the place where it turns
hostile. Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MODES = ("never-answer", "hang-after-init", "exit-mid-turn", "crash-signal", "garbage-stdout",
         "stderr-flood", "huge-line", "flood", "slow-start", "ignore-term", "grandchildren", "escaped-grandchildren",
         "close-stdout")


def send(msg) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer(req, result) -> None:
    send({"jsonrpc": "2.0", "id": req["id"], "result": result})


def update(sid, u) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})


INIT = {"protocolVersion": 2, "capabilities": {"session": {}}, "info": {"name": "hostile", "version": "0"}}


def serve(mode: str) -> None:
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        method = req.get("method")
        if mode == "never-answer" or "id" not in req:
            continue
        if method == "initialize":
            if mode == "garbage-stdout":
                junk = os.urandom(5 * 1024 * 1024)
                sys.stdout.buffer.write(junk.replace(b"\n", b"x") + b"\n")
                sys.stdout.flush()
            if mode == "stderr-flood":
                block = b"e" * (1 << 20)
                for _ in range(50):
                    sys.stderr.buffer.write(block)
                sys.stderr.flush()
            answer(req, INIT)
            if mode == "hang-after-init":
                while True:
                    time.sleep(3600)
            if mode == "crash-signal":
                os.kill(os.getpid(), signal.SIGSEGV)
            if mode == "close-stdout":
                sys.stdout.close()
                os.close(1)
                while True:
                    time.sleep(3600)
            if mode == "grandchildren":
                for _ in range(3):
                    subprocess.Popen(["sleep", "1000"])
            if mode == "escaped-grandchildren":
                # one in a session of its own, one orphaned by a double fork (its parent exits at once)
                kids = [subprocess.Popen(["sleep", "1000"], start_new_session=True).pid]
                mid = subprocess.Popen([sys.executable, "-c", "import subprocess,sys; "
                                        "p=subprocess.Popen(['sleep','1000'],start_new_session=True,stdout=subprocess.DEVNULL); print(p.pid)"],
                                       stdout=subprocess.PIPE, text=True)
                kids.append(int(mid.communicate()[0]))
                sys.stderr.write("ESCAPED %s\n" % " ".join(map(str, kids)))
                sys.stderr.flush()
            continue
        if method == "session/new":
            answer(req, {"sessionId": "sess_h"})
            continue
        if method == "session/prompt":
            sid = req["params"]["sessionId"]
            update(sid, {"sessionUpdate": "user_message", "messageId": "u1", "content": req["params"]["prompt"]})
            answer(req, {"messageId": "u1"})
            update(sid, {"sessionUpdate": "state_update", "state": "running"})
            if mode == "exit-mid-turn":
                os._exit(3)
            if mode == "huge-line":
                update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": "a1",
                             "content": {"type": "text", "text": "x" * (40 * 1024 * 1024)}})
            if mode == "flood":
                for i in range(20_000):
                    update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": "a1",
                                 "content": {"type": "text", "text": str(i)}})
            update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
            continue
        send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "Method not found"}})
    if mode in ("ignore-term", "grandchildren"):
        while True:  # stdin is closed: a well-behaved agent exits here; these do not
            time.sleep(3600)


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in MODES:
        sys.stderr.write(f"usage: target.py MODE  (modes: {', '.join(MODES)})\n")
        return 2
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "slow-start":
        time.sleep(5)
        mode = "normal"
    serve(mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
