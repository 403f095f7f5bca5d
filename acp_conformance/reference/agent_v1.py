"""The reference agent's ACP v1 mode: a small, correct agent of protocol version 1 (JSON-RPC 2.0 over stdio,
standard library only), written from the v1 pages (https://agentclientprotocol.com/protocol/v1/overview).

Run it as ``python -m acp_conformance.reference.agent --protocol 1``. It answers initialize with protocolVersion 1
(whatever version is asked: 1 is the latest it supports), ``agentCapabilities`` {loadSession: true,
promptCapabilities: {embeddedContext: true}} and ``agentInfo``; sessions keep their history in a folder of the
system's temporary directory, so ``session/load`` in a new process replays it (user_message_chunk and
agent_message_chunk updates) before answering. A turn answers session/prompt with its ``stopReason`` after every
update of the turn. Steering words of the prompt text (case-insensitive): ``slowly`` (about 6 s of chunks),
``permission`` (a tool call asking session/request_permission), ``tool`` (a read tool call), ``terminal`` (a
terminal when the client advertised one: create, output, release), ``read`` (fs/read_text_file when advertised).
Each behaviour sits in a small method a mutant (tests/mutants/v1_*.py) overrides.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from typing import Any

from .. import __version__

STATE_DIR = os.path.join(tempfile.gettempdir(), "acp-conformance-reference-v1")
MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]
MODELS = [{"value": "small", "name": "Small"}, {"value": "large", "name": "Large"}]


class Turn:
    def __init__(self, request_id: Any, session_id: str):
        self.id = request_id
        self.session_id = session_id
        self.cancelled = threading.Event()


class V1ReferenceAgent:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.next_id = 0
        self.waiting: dict[Any, Any] = {}  # our request id -> [Event, response]
        self.turns: dict[str, Turn] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.client_caps: dict[str, Any] = {}

    # -- the wire ---------------------------------------------------------------------------------
    def write(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def respond(self, request_id: Any, result: Any = None, error: dict | None = None) -> None:
        msg = {"jsonrpc": "2.0", "id": request_id}
        msg.update({"error": error} if error is not None else {"result": result})
        self.write(msg)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def update(self, sid: str, update: dict[str, Any]) -> None:
        self.notify("session/update", {"sessionId": sid, "update": update})

    def request(self, method: str, params: dict[str, Any], turn: Turn | None = None) -> dict[str, Any]:
        """Ask the client and wait for its answer (the response message)."""
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            slot = self.waiting[rid] = [threading.Event(), None]
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        slot[0].wait(60)
        return slot[1] or {}

    def run(self) -> int:
        for raw in sys.stdin.buffer:
            try:
                msg = json.loads(raw)
            except ValueError:
                if raw.strip():
                    self.respond(None, error={"code": -32700, "message": "Parse error"})
                continue
            if not isinstance(msg, dict):
                self.respond(None, error={"code": -32600, "message": "Invalid Request"})
                continue
            self.dispatch(msg)
        return 0

    def dispatch(self, msg: dict[str, Any]) -> None:
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method is None:  # a response to one of our requests
            slot = self.waiting.pop(rid, None)
            if slot is not None:
                slot[1] = msg
                slot[0].set()
            return
        handler = getattr(self, "on_" + str(method).replace("/", "_").replace("$", "dollar"), None)
        if "id" not in msg:
            if handler is not None:
                handler(params)
            return
        if handler is None:
            self.respond(rid, error={"code": -32601, "message": f"Method not found: {method}"})
            return
        try:
            result = handler(params, rid)
        except ValueError as e:
            self.respond(rid, error={"code": -32602, "message": f"Invalid params: {e}"})
            return
        if result is not None:
            self.respond(rid, result)

    # -- initialization and sessions -----------------------------------------------------------
    def on_initialize(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        caps = params.get("clientCapabilities")
        self.client_caps = caps if isinstance(caps, dict) else {}
        return {"protocolVersion": self.version(params.get("protocolVersion")),
                "agentCapabilities": {"loadSession": True, "promptCapabilities": {"embeddedContext": True},
                                      "sessionCapabilities": {"list": {}, "close": {}, "resume": {}}},
                "agentInfo": {"name": "acp-conformance-reference-agent-v1", "version": __version__},
                "authMethods": []}

    def version(self, asked: Any) -> int:
        return 1  # the latest (and only) version this mode speaks

    def on_authenticate(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        raise ValueError(f"no authentication method {params.get('methodId')!r}")

    def on_session_new(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or not isinstance(params.get("mcpServers"), list):
            raise ValueError("session/new needs an absolute cwd and an mcpServers array")
        sid = self.new_session_id()
        self.sessions[sid] = {"cwd": cwd, "history": [], "mode": "ask", "model": "small"}
        self.save(sid)
        return {"sessionId": sid, "modes": self.modes(sid), "configOptions": self.config_options(sid)}

    def config_options(self, sid: str) -> list[dict[str, Any]]:
        return [{"id": "model", "name": "Model", "category": "model", "type": "select",
                 "currentValue": self.sessions[sid].get("model", "small"), "options": MODELS}]

    def on_session_set_config_option(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        sid, value = params.get("sessionId"), params.get("value")
        if sid not in self.sessions or params.get("configId") != "model" or value not in [m["value"] for m in MODELS]:
            raise ValueError("unknown session, option or value")
        self.sessions[sid]["model"] = value
        return {"configOptions": self.config_options(sid)}

    def on_session_list(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        return {"sessions": [{"sessionId": sid, "cwd": s["cwd"]} for sid, s in self.sessions.items()]}

    def new_session_id(self) -> str:
        return "sess_" + os.urandom(12).hex()

    def modes(self, sid: str) -> dict[str, Any]:
        return {"currentModeId": self.sessions[sid]["mode"], "availableModes": MODES}

    def on_session_load(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        sid = params.get("sessionId")
        if sid not in self.sessions:
            try:
                with open(os.path.join(STATE_DIR, f"{sid}.json"), encoding="utf-8") as f:
                    self.sessions[sid] = json.load(f)
            except (OSError, ValueError, TypeError):
                raise ValueError(f"unknown session {sid!r}") from None
        self.replay(sid)
        return {"modes": self.modes(sid), "configOptions": self.config_options(sid)}

    def replay(self, sid: str) -> None:
        """The whole conversation as session/update notifications, before the load is answered."""
        for role, text in self.sessions[sid]["history"]:
            self.update(sid, {"sessionUpdate": f"{role}_message_chunk", "content": {"type": "text", "text": text}})

    def save(self, sid: str) -> None:
        os.makedirs(STATE_DIR, exist_ok=True)
        with open(os.path.join(STATE_DIR, f"{sid}.json"), "w", encoding="utf-8") as f:
            json.dump(self.sessions[sid], f)

    def on_session_resume(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        """The session restored without replaying its history (unlike session/load)."""
        sid = params.get("sessionId")
        if sid not in self.sessions:
            try:
                with open(os.path.join(STATE_DIR, f"{sid}.json"), encoding="utf-8") as f:
                    self.sessions[sid] = json.load(f)
            except (OSError, ValueError, TypeError):
                raise ValueError(f"unknown session {sid!r}") from None
        return {"modes": self.modes(sid), "configOptions": self.config_options(sid)}

    def on_session_close(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        """The session's work cancelled as by session/cancel, then the session freed."""
        sid = params.get("sessionId")
        self.close_work(sid)
        self.sessions.pop(sid, None)
        return {}

    def close_work(self, sid: Any) -> None:
        turn = self.turns.get(sid)
        if turn is not None:
            turn.cancelled.set()

    def on_dollar_cancel_request(self, params: dict[str, Any]) -> None:
        """$/cancel_request of a running prompt: the turn ends with stopReason cancelled (its response)."""
        for turn in list(self.turns.values()):
            if turn.id == params.get("requestId"):
                turn.cancelled.set()

    def on_session_set_mode(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        sid, mode = params.get("sessionId"), params.get("modeId")
        if sid not in self.sessions or mode not in [m["id"] for m in MODES]:
            raise ValueError("unknown session or mode")
        self.sessions[sid]["mode"] = mode
        self.update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": mode})
        return {}

    # -- the prompt turn ---------------------------------------------------------------------
    def on_session_prompt(self, params: dict[str, Any], rid: Any) -> None:
        sid = params.get("sessionId")
        blocks = params.get("prompt")
        if sid not in self.sessions or not isinstance(blocks, list):
            raise ValueError("unknown session or no prompt")
        text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        turn = self.turns[sid] = Turn(rid, sid)
        threading.Thread(target=self.work, args=(turn, text or "(resource)"), daemon=True).start()
        return None  # answered when the turn ends

    def work(self, turn: Turn, text: str) -> None:
        sid, low = turn.session_id, text.lower()
        self.sessions[sid]["history"].append(("user", text))
        if "permission" in low:
            self.permission_tool(turn)
        elif "tool" in low:
            self.read_tool(turn)
        if "terminal" in low and self.client_caps.get("terminal") is True:
            self.terminal(turn)
        if "read" in low and (self.client_caps.get("fs") or {}).get("readTextFile") is True:
            self.request("fs/read_text_file", {"sessionId": sid,
                                               "path": os.path.join(self.sessions[sid]["cwd"], "README.md")})
        chunks = 30 if "slowly" in low else 1
        for i in range(chunks):
            if turn.cancelled.wait(0.2 if chunks > 1 else 0):
                break
            self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"Hello {i}. "}})
        if sid in self.sessions:  # not closed meanwhile
            self.sessions[sid]["history"].append(("agent", "Hello."))
            self.save(sid)
        self.end_turn(turn)

    def end_turn(self, turn: Turn) -> None:
        """Every update of the turn is sent: answer the prompt with its stopReason."""
        if self.turns.get(turn.session_id) is turn:
            del self.turns[turn.session_id]
        self.respond(turn.id, {"stopReason": self.stop_reason(turn)})

    def stop_reason(self, turn: Turn) -> str:
        return "cancelled" if turn.cancelled.is_set() else "end_turn"

    def on_session_cancel(self, params: dict[str, Any]) -> None:
        turn = self.turns.get(params.get("sessionId"))
        if turn is not None:
            turn.cancelled.set()

    def read_tool(self, turn: Turn) -> None:
        sid, tid = turn.session_id, "call_" + os.urandom(6).hex()
        path = os.path.join(self.sessions[sid]["cwd"], "README.md")
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": "Reading README.md",
                          "kind": "read", "status": "pending", "locations": [{"path": path}]})
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "in_progress"})
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                          "content": [{"type": "content", "content": {"type": "text", "text": "# README"}}]})

    def permission_tool(self, turn: Turn) -> None:
        sid, tid = turn.session_id, "call_" + os.urandom(6).hex()
        self.update(sid, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": "Editing a file", "kind": "edit",
                          "status": "pending"})
        answer = self.request("session/request_permission", self.permission_params(sid, tid), turn)
        outcome = ((answer.get("result") or {}).get("outcome") or {}) if isinstance(answer.get("result"), dict) else {}
        allowed = outcome.get("outcome") == "selected" and outcome.get("optionId") == "allow"
        self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tid,
                          "status": "completed" if allowed and not turn.cancelled.is_set() else "failed"})

    def permission_params(self, sid: str, tid: str) -> dict[str, Any]:
        return {"sessionId": sid, "toolCall": {"toolCallId": tid},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}

    def terminal(self, turn: Turn) -> None:
        sid = turn.session_id
        made = self.request("terminal/create", {"sessionId": sid, "command": "echo", "args": ["hello"],
                                                "cwd": self.sessions[sid]["cwd"]})
        tid = (made.get("result") or {}).get("terminalId") if isinstance(made.get("result"), dict) else None
        if isinstance(tid, str):
            self.request("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
            self.request("terminal/output", {"sessionId": sid, "terminalId": tid})
            self.release_terminal(sid, tid)

    def release_terminal(self, sid: str, tid: str) -> None:
        self.request("terminal/release", {"sessionId": sid, "terminalId": tid})


def main(agent_class: type = V1ReferenceAgent) -> int:
    return agent_class().run()
