#!/usr/bin/env python3
"""An ACP v1 agent written apart from the suite, as an outside vendor would: from the v1 protocol pages of
agentclientprotocol.com (overview, initialization, session-setup, prompt-turn, content, tool-calls, file-system,
terminals), stdlib only, sharing no code with acp_conformance.

Its own legal choices, different from the suite's v1 reference agent where the pages leave room:

* it supports version 1 only and answers 1 to any initialize;
* sessions live in this process's memory (a new process loads none: -32002); ``--persist DIR`` keeps each
  session's history in DIR/<id>.json, so a later process loads it and replays it;
* no modes, no config options, no session/list; no authentication (authenticate is refused);
* a prompt that asks for something slowly or at length streams chunks for about 30 seconds unless cancelled;
  one that mentions a tool reports an in_progress tool call (reading through fs/read_text_file when the client
  can), one that mentions permission asks for it (allow_always / reject_once) before an edit, one that mentions a
  terminal runs ``echo`` in one when the client offers terminals, waits for it and releases it.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import uuid

SLOW_SECONDS, SLOW_TICK = 30.0, 0.05
METHOD_NOT_FOUND, INVALID_PARAMS, NOT_FOUND = -32601, -32602, -32002


class Failure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class Agent:
    def __init__(self, store: str | None):
        self.store = store
        self.out: queue.Queue = queue.Queue()
        self.sessions: dict[str, dict] = {}
        self.running: dict[str, threading.Event] = {}  # session -> the cancel flag of its running turn
        self.calls: dict[int, queue.Queue] = {}
        self.next_call = 100
        self.lock = threading.Lock()
        self.caps: dict = {}
        threading.Thread(target=self._writer, daemon=True).start()

    # the wire: one writer thread owns stdout
    def _writer(self) -> None:
        while True:
            msg = self.out.get()
            if msg is None:
                return
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()

    def send(self, msg: dict) -> None:
        self.out.put({"jsonrpc": "2.0", **msg})

    def update(self, sid: str, update: dict) -> None:
        self.send({"method": "session/update", "params": {"sessionId": sid, "update": update}})

    def call(self, method: str, params: dict) -> dict:
        with self.lock:
            self.next_call += 1
            cid, box = self.next_call, queue.Queue()
            self.calls[cid] = box
        self.send({"id": cid, "method": method, "params": params})
        try:
            return box.get(timeout=30)
        except queue.Empty:
            return {}

    def serve(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": -32700, "message": "Parse error"}})
                continue
            if not isinstance(msg, dict):
                self.send({"id": None, "error": {"code": -32600, "message": "Invalid Request"}})
            elif "method" not in msg:
                box = self.calls.pop(msg.get("id"), None)
                if box is not None:
                    box.put(msg)
            else:
                self.handle(msg)
        self.out.put(None)

    def handle(self, msg: dict) -> None:
        method, params, has_id = msg["method"], msg.get("params") or {}, "id" in msg
        if method == "session/cancel":
            flag = self.running.get(params.get("sessionId"))
            if flag is not None:
                flag.set()
            return
        if not has_id:
            return  # other notifications are ignored
        handler = {"initialize": self.initialize, "authenticate": self.authenticate, "session/new": self.new,
                   "session/load": self.load, "session/prompt": self.prompt}.get(method)
        try:
            if handler is None:
                raise Failure(METHOD_NOT_FOUND, f"Method not found: {method}")
            result = handler(params, msg["id"])
        except Failure as e:
            self.send({"id": msg["id"], "error": {"code": e.code, "message": str(e)}})
            return
        if result is not None:
            self.send({"id": msg["id"], "result": result})

    # initialization and sessions
    def initialize(self, params: dict, rid) -> dict:
        self.caps = params.get("clientCapabilities") if isinstance(params.get("clientCapabilities"), dict) else {}
        return {"protocolVersion": 1, "agentInfo": {"name": "independent-v1-agent", "version": "0.3.0"},
                "agentCapabilities": {"loadSession": True, "promptCapabilities": {}}, "authMethods": []}

    def authenticate(self, params: dict, rid) -> dict:
        raise Failure(INVALID_PARAMS, "this agent offers no authentication method")

    def new(self, params: dict, rid) -> dict:
        cwd = params.get("cwd")
        if not (isinstance(cwd, str) and os.path.isabs(cwd)) or not isinstance(params.get("mcpServers"), list):
            raise Failure(INVALID_PARAMS, "cwd must be absolute and mcpServers a list")
        sid = str(uuid.uuid4())
        self.sessions[sid] = {"cwd": cwd, "log": []}
        self.keep(sid)
        return {"sessionId": sid}

    def keep(self, sid: str) -> None:
        if self.store:
            os.makedirs(self.store, exist_ok=True)
            with open(os.path.join(self.store, sid + ".json"), "w") as f:
                json.dump(self.sessions[sid], f)

    def load(self, params: dict, rid) -> dict:
        sid = params.get("sessionId")
        if sid not in self.sessions and self.store and isinstance(sid, str):
            try:
                with open(os.path.join(self.store, os.path.basename(sid) + ".json")) as f:
                    self.sessions[sid] = json.load(f)
            except (OSError, ValueError):
                pass
        if sid not in self.sessions:
            raise Failure(NOT_FOUND, f"Resource not found: session {sid}")
        for kind, text in self.sessions[sid]["log"]:  # the whole conversation, before the answer
            self.update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
        return {}

    # the prompt turn
    def prompt(self, params: dict, rid):
        sid, blocks = params.get("sessionId"), params.get("prompt")
        if sid not in self.sessions:
            raise Failure(NOT_FOUND, f"Resource not found: session {sid}")
        if not isinstance(blocks, list) or not blocks:
            raise Failure(INVALID_PARAMS, "prompt must be a non-empty list of content blocks")
        words = " ".join(b.get("text", b.get("uri", "")) for b in blocks if isinstance(b, dict)).strip()
        flag = self.running[sid] = threading.Event()
        threading.Thread(target=self.turn, args=(sid, rid, words, flag), daemon=True).start()
        return None

    def turn(self, sid: str, rid, words: str, flag: threading.Event) -> None:
        low, session = words.lower(), self.sessions[sid]
        session["log"].append(("user_message_chunk", words))
        if "permission" in low:
            self.ask_then_edit(sid, flag)
        elif "tool" in low:
            self.read_tool(sid)
        if "terminal" in low and self.caps.get("terminal") is True:
            self.terminal(sid)
        ticks = int(SLOW_SECONDS / SLOW_TICK) if ("slowly" in low or "long" in low) else 1
        for n in range(ticks):
            if flag.is_set():
                break
            self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"{n} "}})
            flag.wait(SLOW_TICK if ticks > 1 else 0)
        session["log"].append(("agent_message_chunk", "done"))
        self.keep(sid)
        if self.running.get(sid) is flag:
            del self.running[sid]
        self.send({"id": rid, "result": {"stopReason": "cancelled" if flag.is_set() else "end_turn"}})

    def read_tool(self, sid: str) -> None:
        call = "tool-" + uuid.uuid4().hex[:8]
        path = os.path.join(self.sessions[sid]["cwd"], "notes.txt")
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": call, "title": "Read notes.txt", "kind": "read",
                          "status": "in_progress", "locations": [{"path": path}]})
        if (self.caps.get("fs") or {}).get("readTextFile") is True:
            self.call("fs/read_text_file", {"sessionId": sid, "path": path})
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed"})

    def ask_then_edit(self, sid: str, flag: threading.Event) -> None:
        call = "edit-" + uuid.uuid4().hex[:8]
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": call, "title": "Edit a file", "kind": "edit",
                          "status": "pending"})
        answer = self.call("session/request_permission", {
            "sessionId": sid, "toolCall": {"toolCallId": call, "title": "Edit a file"},
            "options": [{"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
        outcome = (answer.get("result") or {}).get("outcome") if isinstance(answer.get("result"), dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "cancelled":
            flag.set()  # the client cancelled the turn
        ok = isinstance(outcome, dict) and outcome.get("optionId") == "always" and not flag.is_set()
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call,
                          "status": "completed" if ok else "failed"})

    def terminal(self, sid: str) -> None:
        made = self.call("terminal/create", {"sessionId": sid, "command": "echo", "args": ["hi"],
                                             "cwd": self.sessions[sid]["cwd"]})
        tid = (made.get("result") or {}).get("terminalId") if isinstance(made.get("result"), dict) else None
        if isinstance(tid, str):
            self.call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
            self.call("terminal/release", {"sessionId": sid, "terminalId": tid})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persist", metavar="DIR", help="keep sessions in DIR, shared by the processes of a run")
    Agent(ap.parse_args().persist).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
