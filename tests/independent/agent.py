#!/usr/bin/env python3
"""An ACP v2 agent written apart from the suite, as an outside vendor would: from the v2 spec text (the schema
reference and the prompt lifecycle page), stdlib only, sharing no code with acp_conformance.

It makes its own legal choices, different from the suite's reference agent where the spec leaves room:

* sessions live in this process's memory (a new process knows none of them); ``--persist DIR`` keeps each
  session in DIR/<id>.json instead, read again at every request, so processes sharing DIR see one store;
* a JSON-RPC batch is answered member by member, each answer on its own line (the older JSON-RPC 2.0 reading);
* the response to session/prompt comes before the user_message update; a prompt that arrives while work runs
  joins that work (inserted at once, worked on after the current message), or with ``--hold`` is held until
  the work ends (then inserted and answered; refused with -32800 if the work is cancelled first);
* a prompt asking to do something slowly or at length streams small chunks for about 30 seconds unless
  cancelled; a prompt that mentions a tool reads a file as a tool call, one that mentions permission asks
  for it before a destructive tool call (neither with ``--minimal``);
* ``--minimal`` advertises only what is required: ``capabilities.session: {}`` (no session/delete, no embedded
  context, no tools).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid

VERSION = 2
SLOW_SECONDS = 30.0
SLOW_TICK = 0.05

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SESSION_NOT_FOUND, UNSUPPORTED_VERSION = -32002, -32022


class RpcError(Exception):
    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# -- where sessions are kept --------------------------------------------------------------------------------
class MemoryStore:
    def __init__(self):
        self.sessions: dict[str, dict] = {}

    def get(self, sid):
        return self.sessions.get(sid)

    def put(self, rec):
        self.sessions[rec["sessionId"]] = rec

    def delete(self, sid):
        self.sessions.pop(sid, None)

    def all(self):
        return list(self.sessions.values())


class DirStore:
    """One JSON file per session; read at every request so that processes sharing the directory agree."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)

    def _path(self, sid):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in sid)
        return os.path.join(self.root, safe + ".json")

    def get(self, sid):
        try:
            with open(self._path(sid), encoding="utf-8") as f:
                rec = json.load(f)
        except (OSError, ValueError):
            return None
        return rec if rec.get("sessionId") == sid else None

    def put(self, rec):
        path = self._path(rec["sessionId"])
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(rec, f)
        os.replace(tmp, path)

    def delete(self, sid):
        try:
            os.remove(self._path(sid))
        except OSError:
            pass

    def all(self):
        out = []
        for name in sorted(os.listdir(self.root)):
            if name.endswith(".json"):
                rec = self.get(name[:-5])
                if rec is not None:
                    out.append(rec)
        return out


# -- foreground work of one session -------------------------------------------------------------------------
class Work:
    def __init__(self):
        self.queue: list[tuple[str, list]] = []  # inserted user messages not yet worked on
        self.held: list[dict] = []  # --hold: prompts not inserted yet ({"ids", "blocks", "key"})
        self.cancel = threading.Event()
        self.thread: threading.Thread | None = None


class Agent:
    def __init__(self, store, minimal: bool, hold: bool = False):
        self.store = store
        self.minimal = minimal
        self.hold = hold
        self.out_lock = threading.Lock()
        self.lock = threading.RLock()
        self.initialized = False
        self.active: set[str] = set()  # sessions open on this connection
        self.work: dict[str, Work] = {}
        self.keys: dict[tuple[str, str], str] = {}  # (session, idempotencyKey) -> messageId
        self.asked: dict[str, dict] = {}  # our pending requests to the client: id -> {"event", "answer"}
        self.next_request = 0
        self._current_id = None  # the id of the request being handled (session/prompt answers it early)

    # -- output
    def send(self, msg: dict) -> None:
        line = json.dumps(msg, separators=(",", ":"))
        with self.out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def update(self, sid: str, update: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})

    # -- input
    def handle_line(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            self.send(error_msg(None, PARSE_ERROR, "Parse error"))
            return
        if isinstance(msg, list):
            if not msg:
                self.send(error_msg(None, INVALID_REQUEST, "Invalid Request: empty batch"))
                return
            for member in msg:  # each member answered on its own, as it comes
                self.handle_message(member)
            return
        self.handle_message(msg)

    def handle_message(self, msg) -> None:
        if not isinstance(msg, dict):
            self.send(error_msg(None, INVALID_REQUEST, "Invalid Request"))
            return
        if "method" not in msg and ("result" in msg or "error" in msg):
            with self.lock:  # an answer to a request of ours; one we gave up on (cancelled) is ignored
                slot = self.asked.get(msg.get("id")) if isinstance(msg.get("id"), str) else None
                if slot is not None:
                    slot["answer"] = msg
                    slot["event"].set()
            return
        rid = msg.get("id")
        id_ok = "id" in msg and (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)))
        if msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str) or ("id" in msg and not id_ok):
            self.send(error_msg(rid if id_ok else None, INVALID_REQUEST, "Invalid Request"))
            return
        method, params = msg["method"], msg.get("params", {})
        if "id" not in msg:
            self.notification(method, params)
            return
        try:
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "params must be an object")
            self._current_id = rid  # a handler that answers early (session/prompt) answers this id
            result = self.request(method, params)
        except RpcError as e:
            self.send(error_msg(rid, e.code, e.message, e.data))
            return
        except Exception as e:  # a defect of ours: say so, keep serving
            self.send(error_msg(rid, -32603, f"Internal error: {e}"))
            return
        if result is not None:
            self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def notification(self, method: str, params) -> None:
        if method == "session/cancel" and isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            self.cancel(params["sessionId"])
        # anything else ($/cancel_request included: we never hold a request) is ignored

    def request(self, method: str, params: dict):
        if method == "initialize":
            return self.initialize(params)
        if not self.initialized:
            raise RpcError(INVALID_REQUEST, "Connection not initialized: send initialize first")
        handler = {
            "session/new": self.session_new, "session/prompt": self.session_prompt,
            "session/resume": self.session_resume, "session/close": self.session_close,
            "session/list": self.session_list, "session/set_config_option": self.set_config_option,
            "session/delete": None if self.minimal else self.session_delete,
            "tool_call/cancel": self.cancel_one, "terminal/cancel": self.cancel_one,
        }.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler(params)

    # -- methods
    def initialize(self, p: dict):
        v = p.get("protocolVersion")
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 65535:
            raise RpcError(INVALID_PARAMS, "protocolVersion must be an integer from 0 to 65535")
        info = p.get("info")
        if not (isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
            raise RpcError(INVALID_PARAMS, "info with name and version is required")
        if v < VERSION:
            raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                           {"requested": v, "supported": [VERSION]})
        self.initialized = True
        session_caps: dict = {} if self.minimal else {"delete": {}, "prompt": {"embeddedContext": {}}}
        return {"protocolVersion": VERSION, "capabilities": {"session": session_caps},
                "info": {"name": "independent-agent", "version": "0.3.1"}}

    def _cwd(self, p: dict) -> str:
        cwd = p.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "cwd must be an absolute path")
        dirs = p.get("additionalDirectories")
        if dirs not in (None, []):
            raise RpcError(INVALID_PARAMS, "additional directories are not supported")
        if p.get("mcpServers") not in (None, []):
            raise RpcError(INVALID_PARAMS, "this agent connects to no MCP servers")
        return cwd

    def _session_id(self, p: dict) -> str:
        sid = p.get("sessionId")
        if not isinstance(sid, str):
            raise RpcError(INVALID_PARAMS, "sessionId must be a string")
        return sid

    def _known_active(self, sid: str) -> dict:
        rec = self.store.get(sid)
        if rec is None or sid not in self.active:
            raise RpcError(SESSION_NOT_FOUND, "Session not found", {"sessionId": sid})
        return rec

    def session_new(self, p: dict):
        cwd = self._cwd(p)
        sid = new_id("s")
        with self.lock:
            self.store.put({"sessionId": sid, "cwd": cwd, "title": None, "updatedAt": now_rfc3339(), "history": []})
            self.active.add(sid)
        return {"sessionId": sid}

    def session_prompt(self, p: dict):
        sid = self._session_id(p)
        blocks = p.get("prompt")
        with self.lock:
            self._known_active(sid)
            if not isinstance(blocks, list) or not blocks:
                raise RpcError(INVALID_PARAMS, "prompt must be a non-empty array of content blocks")
            allowed = {"text", "resource_link"} | (set() if self.minimal else {"resource"})
            for b in blocks:
                if not isinstance(b, dict) or b.get("type") not in allowed:
                    raise RpcError(INVALID_PARAMS, f"unsupported content block: {json.dumps(b)[:80]}")
                if b["type"] == "text" and not isinstance(b.get("text"), str):
                    raise RpcError(INVALID_PARAMS, "a text block needs text")
                if b["type"] == "resource_link" and not (isinstance(b.get("uri"), str) and isinstance(b.get("name"), str)):
                    raise RpcError(INVALID_PARAMS, "a resource_link needs name and uri")
                if b["type"] == "resource" and not isinstance(b.get("resource"), dict):
                    raise RpcError(INVALID_PARAMS, "a resource block needs its resource")
            key = p.get("idempotencyKey") if isinstance(p.get("idempotencyKey"), str) else None
            if key is not None and (sid, key) in self.keys:
                return {"messageId": self.keys[(sid, key)]}  # a retry: inserted once already
            w = self.work.get(sid)
            busy = w is not None and w.thread is not None and w.thread.is_alive() and not w.cancel.is_set()
            if busy and self.hold:  # held, not inserted: answered once inserted, after the running work
                held = next((h for h in w.held if key is not None and h["key"] == key), None)
                if held is not None:
                    held["ids"].append(self._current_id)  # a retry of a held submission: one insertion
                else:
                    w.held.append({"ids": [self._current_id], "blocks": blocks, "key": key})
                return None
            mid = self.insert(sid, [self._current_id], blocks, key)
            if busy:
                w.queue.append((mid, blocks))  # joins the running work
                return None
            self.start_work(sid, [(mid, blocks)])
        return None

    def insert(self, sid: str, ids: list, blocks: list, key) -> str:
        """The user message inserted: recorded, answered (each attempt under one key alike), reported."""
        mid = new_id("u")
        if key is not None:
            self.keys[(sid, key)] = mid
        rec = self.store.get(sid)
        rec["history"].append({"role": "user", "messageId": mid, "content": blocks})
        if rec.get("title") is None:
            rec["title"] = text_of(blocks)[:60] or "untitled"
        rec["updatedAt"] = now_rfc3339()
        self.store.put(rec)
        # the answer first, then the message it inserted, then the work
        for rid in ids:
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": mid}})
        self.update(sid, {"sessionUpdate": "user_message", "messageId": mid, "content": blocks})
        return mid

    def start_work(self, sid: str, queue: list, held: list | None = None) -> None:
        w = Work()
        w.queue.extend(queue)
        w.held.extend(held or [])
        self.work[sid] = w
        w.thread = threading.Thread(target=self.run_work, args=(sid, w), daemon=True)
        self.update(sid, {"sessionUpdate": "state_update", "state": "running"})
        w.thread.start()

    def run_work(self, sid: str, w: Work) -> None:
        while True:
            with self.lock:
                if w.cancel.is_set() or not w.queue:
                    break
                mid, blocks = w.queue.pop(0)
            self.answer(sid, w, text_of(blocks).lower())
        with self.lock:
            if self.work.get(sid) is w:
                del self.work[sid]
            if sid in self.active:
                self.update(sid, {"sessionUpdate": "state_update", "state": "idle",
                                  "stopReason": "cancelled" if w.cancel.is_set() else "end_turn"})
            if w.held and sid in self.active and not w.cancel.is_set():  # the next held prompt's turn
                first, *rest = w.held
                mid = self.insert(sid, first["ids"], first["blocks"], first["key"])
                self.start_work(sid, [(mid, first["blocks"])], rest)

    def answer(self, sid: str, w: Work, text: str) -> None:
        aid = new_id("a")
        said: list[str] = []

        def say(piece: str) -> None:
            with self.lock:
                if w.cancel.is_set() or sid not in self.active:
                    return
                said.append(piece)
                self.update(sid, {"sessionUpdate": "agent_message_chunk", "messageId": aid,
                                  "content": {"type": "text", "text": piece}})

        if not self.minimal and "permission" in text:
            self.ask_then_act(sid, w, say)
            return
        if not self.minimal and "tool" in text:
            self.tool_call(sid, w)
        if any(word in text for word in ("slow", "long", "count")):
            deadline, n = time.monotonic() + SLOW_SECONDS, 0
            while time.monotonic() < deadline and not w.cancel.wait(SLOW_TICK):
                n += 1
                say(f"{n}\n")
        else:
            for piece in ("Hello", ", ", "world", "."):
                say(piece)
        with self.lock:  # what was said stays in the history, cancelled or not
            rec = self.store.get(sid)
            if rec is not None and said:
                rec["history"].append({"role": "agent", "messageId": aid,
                                       "content": [{"type": "text", "text": "".join(said)}]})
                rec["updatedAt"] = now_rfc3339()
                self.store.put(rec)

    def tool_call(self, sid: str, w: Work) -> None:
        tid = new_id("t")
        with self.lock:
            if w.cancel.is_set():
                return
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "title": "Read notes.txt",
                              "kind": "read", "status": "in_progress"})
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                              "content": [{"type": "content", "content": {"type": "text", "text": "(empty)"}}]})

    def ask_then_act(self, sid: str, w: Work, say) -> None:
        """A destructive tool call, run only once the user allows it (session/request_permission)."""
        tid = new_id("t")
        slot = {"event": threading.Event(), "answer": None}
        with self.lock:
            if w.cancel.is_set():
                return
            self.next_request += 1
            rid = f"ask-{self.next_request}"
            self.asked[rid] = slot
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "title": "Remove build/",
                              "kind": "delete", "status": "pending"})
            self.send({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission", "params": {
                "sessionId": sid, "title": "Remove the build directory?",
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": tid}},
                "options": [{"optionId": "yes", "name": "Allow once", "kind": "allow_once"},
                            {"optionId": "no", "name": "Deny", "kind": "reject_once"}]}})
            self.update(sid, {"sessionUpdate": "state_update", "state": "requires_action"})
        while not slot["event"].wait(SLOW_TICK) and not w.cancel.is_set():
            pass
        with self.lock:
            self.asked.pop(rid, None)
            if slot["answer"] is None:  # cancelled while waiting: not approved, and the client is told
                self.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}})
                self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "cancelled"})
                return
            outcome = (slot["answer"].get("result") or {}).get("outcome")
            allowed = isinstance(outcome, dict) and outcome.get("outcome") == "selected" and outcome.get("optionId") == "yes"
            self.update(sid, {"sessionUpdate": "state_update", "state": "running"})
            if not allowed:  # rejected, cancelled, an error or an answer we do not understand: never approval
                self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "failed",
                                  "content": [{"type": "content", "content": {"type": "text", "text": "Not allowed."}}]})
            else:
                self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "in_progress"})
                self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed"})
        say("Done." if allowed else "I left build/ alone.")

    def refuse_held(self, w: Work) -> None:
        """Prompts held behind cancelled work are not inserted: -32800 (Request Cancelled)."""
        for h in w.held:
            for rid in h["ids"]:
                self.send(error_msg(rid, -32800, "Request cancelled: the prompt was not inserted"))
        w.held.clear()

    def stop_work(self, sid: str):
        """Cancel the session's running work (its queued prompts dropped, the held ones refused); the work,
        or None when there is none (then nothing is sent: no foreground work was active)."""
        with self.lock:
            w = self.work.get(sid)
            if w is not None:
                w.cancel.set()
                w.queue.clear()
                self.refuse_held(w)
        return w

    def cancel(self, sid: str) -> None:
        self.stop_work(sid)

    def session_close(self, p: dict):
        sid = self._session_id(p)
        w = self.stop_work(sid)
        if w is not None and w.thread is not None:
            w.thread.join(10)  # it sends the cancelled idle before we answer
        with self.lock:
            self.active.discard(sid)
        return {}  # unknown or already closed: success as well

    def session_resume(self, p: dict):
        sid = self._session_id(p)
        cwd = p.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "cwd must be an absolute path")
        replay = p.get("replayFrom")
        with self.lock:
            rec = self.store.get(sid)  # an unknown session first, whatever else is wrong
            if rec is None:
                raise RpcError(SESSION_NOT_FOUND, "Session not found", {"sessionId": sid})
            if replay is not None and not (isinstance(replay, dict) and replay.get("type") == "start"):
                raise RpcError(INVALID_PARAMS, "unsupported replay cursor: only {\"type\": \"start\"}")
            if p.get("mcpServers") not in (None, []):
                raise RpcError(INVALID_PARAMS, "this agent connects to no MCP servers")
            if os.path.normpath(cwd) != os.path.normpath(rec["cwd"]):
                raise RpcError(INVALID_PARAMS, "cwd differs from the session's working directory")
            self.active.add(sid)
            if replay is not None:
                for item in rec["history"]:
                    kind = "user_message" if item["role"] == "user" else "agent_message"
                    self.update(sid, {"sessionUpdate": kind, "messageId": item["messageId"],
                                      "content": item["content"]})
                self.update(sid, {"sessionUpdate": "replay_complete"})
            running = sid in self.work
            self.update(sid, {"sessionUpdate": "state_update", "state": "running" if running else "idle"})
        return {}

    def session_list(self, p: dict):
        cwd, cursor = p.get("cwd"), p.get("cursor")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise RpcError(INVALID_PARAMS, "cwd must be an absolute path")
        start = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.startswith("after:") and cursor[6:].isdigit()):
                raise RpcError(INVALID_PARAMS, "invalid cursor")
            start = int(cursor[6:])
        with self.lock:
            recs = [r for r in self.store.all() if cwd is None or os.path.normpath(r["cwd"]) == os.path.normpath(cwd)]
        page = recs[start:start + 20]
        out: dict = {"sessions": [{k: r[k] for k in ("sessionId", "cwd", "title", "updatedAt") if r.get(k) is not None}
                                  for r in page]}
        if start + 20 < len(recs):
            out["nextCursor"] = f"after:{start + 20}"
        return out

    def session_delete(self, p: dict):
        sid = self._session_id(p)
        w = self.stop_work(sid)
        if w is not None and w.thread is not None:
            w.thread.join(10)
        with self.lock:
            self.store.delete(sid)
            self.active.discard(sid)
        return {}

    def cancel_one(self, p: dict):
        """tool_call/cancel, terminal/cancel: no tool call of ours is cancellable and we run no terminals."""
        self._session_id(p)
        raise RpcError(INVALID_PARAMS, "no such cancellable tool call or terminal")

    def set_config_option(self, p: dict):
        sid = self._session_id(p)
        with self.lock:
            self._known_active(sid)
        raise RpcError(INVALID_PARAMS, f"unknown config option: {p.get('configId')!r} (this agent has none)")

    def serve(self) -> None:
        for line in sys.stdin:
            line = line.strip()
            if line:
                self.handle_line(line)
        with self.lock:
            works = list(self.work.values())
            for w in works:
                w.cancel.set()


def error_msg(rid, code, message, data=None) -> dict:
    err: dict = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def text_of(blocks: list) -> str:
    return " ".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persist", metavar="DIR", help="keep sessions in DIR (shared by every process given it)")
    ap.add_argument("--minimal", action="store_true", help="advertise only the required capabilities")
    ap.add_argument("--hold", action="store_true",
                    help="hold a prompt sent while work runs until that work ends (default: it joins the work)")
    args = ap.parse_args()
    store = DirStore(args.persist) if args.persist else MemoryStore()
    Agent(store, args.minimal, args.hold).serve()


if __name__ == "__main__":
    main()
