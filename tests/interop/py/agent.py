"""A small ACP v2 agent on the official Python SDK (agent-client-protocol 1.0.0rc3, acp.experimental.v2).

It mirrors the app-level behaviour of acp_conformance/reference/agent/ as far as the SDK lets
application code do it (see docs/interop.md): the SDK owns framing, routing, params validation,
version negotiation and the error codes of the JSON-RPC layer; this file owns sessions, the
user_message echo with a messageId, state updates, the "slowly" long turn and the "fail" turn,
cancel, resume with and without replay, close and list. Sessions persist as JSON files in ./.interop-agent/sessions/.

Run: tests/interop/.venv/bin/python tests/interop/py/agent.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from acp.exceptions import RequestError
from acp.experimental.v2 import run_agent

NOT_FOUND = -32002
STATE_DIR = os.path.join(os.getcwd(), ".interop-agent", "sessions")


def new_id(prefix: str) -> str:
    return prefix + os.urandom(12).hex()


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(model, "model_dump") else model


def not_found(session_id: str) -> RequestError:
    return RequestError(NOT_FOUND, "Session not found", {"sessionId": session_id})


class Session:
    def __init__(self, record: dict):
        self.record = record
        self.id = record["sessionId"]
        self.turn: asyncio.Task | None = None
        self.held: list[asyncio.Task] = []  # handler tasks of prompts waiting for the turn to end

    def save(self) -> None:
        self.record["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.makedirs(STATE_DIR, exist_ok=True)
        with open(os.path.join(STATE_DIR, self.id + ".json"), "w") as f:
            json.dump(self.record, f)


def load(session_id: str) -> dict | None:
    path = os.path.join(STATE_DIR, session_id + ".json")
    if "/" in session_id or not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


class InteropAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, Session] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def update(self, session: Session, update: dict) -> None:
        await self.conn.session_update(session_id=session.id, update=update)

    def live(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        return session

    # -- lifecycle ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, info: Any, capabilities: Any = None, **_: Any) -> dict:
        # The SDK itself rejects every protocolVersion other than 2 before this runs.
        return {"protocolVersion": 2, "info": {"name": "interop-python-agent", "version": "0.1.0"},
                "capabilities": {"session": {}}}

    async def new_session(self, cwd: str, mcp_servers: list | None = None, **_: Any) -> dict:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"details": "cwd must be an absolute path"})
        if mcp_servers:
            raise RequestError.invalid_params({"details": "MCP servers are not supported"})
        session = Session({"sessionId": new_id("sess_"), "cwd": cwd, "history": []})
        session.save()
        self.sessions[session.id] = session
        return {"sessionId": session.id, "configOptions": []}

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> dict:
        if cursor is not None:
            raise RequestError.invalid_params({"details": "invalid cursor"})
        names = sorted(os.listdir(STATE_DIR)) if os.path.isdir(STATE_DIR) else []
        records = [load(n[:-5]) for n in names if n.endswith(".json")]
        return {"sessions": [{k: r[k] for k in ("sessionId", "cwd", "title", "updatedAt") if r.get(k)}
                             for r in records if r and (cwd is None or r["cwd"] == cwd)]}

    async def close_session(self, session_id: str, **_: Any) -> dict:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await self.stop_session(session)
        return {}

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> dict:
        self.live(session_id)
        raise RequestError.invalid_params({"details": "this agent has no config options"})

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: list | None = None,
                             replay_from: Any = None, **_: Any) -> dict:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"details": "cwd must be an absolute path"})
        if mcp_servers:
            raise RequestError.invalid_params({"details": "MCP servers are not supported"})
        replay = dump(replay_from)
        if replay is not None and replay.get("type") != "start":
            raise RequestError.invalid_params({"details": "unsupported replayFrom"})
        session = self.sessions.get(session_id)
        if session is None:
            record = load(session_id)
            if record is None:
                raise not_found(session_id)
            session = self.sessions[session_id] = Session(record)
        if replay is not None:
            for entry in session.record["history"]:
                await self.update(session, entry)
            await self.update(session, {"sessionUpdate": "replay_complete"})
        state = "running" if session.turn is not None else "idle"
        await self.update(session, {"sessionUpdate": "state_update", "state": state})
        return {"configOptions": []}

    # -- prompts ---------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list, **_: Any) -> dict:
        session = self.live(session_id)
        blocks = [dump(b) for b in prompt]
        if not blocks or any(b.get("type") not in ("text", "resource_link") for b in blocks):
            raise RequestError.invalid_params({"details": "unsupported or empty prompt content"})
        me = asyncio.current_task()
        session.held.append(me)
        try:
            while session.turn is not None or session.held[0] is not me:  # one turn at a time
                await asyncio.sleep(0.02)
        finally:
            session.held.remove(me)
        message_id = new_id("msg_")
        user_message = {"sessionUpdate": "user_message", "messageId": message_id, "content": blocks}
        session.record["history"].append(user_message)
        session.record.setdefault("title", " ".join(b.get("text", "") for b in blocks)[:60])
        session.save()
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        # The turn runs in its own task, set before the first await so that no held prompt starts
        # meanwhile, and held back until the user_message is written. The SDK sends the response
        # when the handler returns, from another task: `running` may precede it.
        inserted = asyncio.Event()
        session.turn = asyncio.create_task(self.run_turn(session, text, inserted))
        try:
            await self.update(session, user_message)
        except asyncio.CancelledError:
            # $/cancel_request: the SDK cancels this handler's task at whatever await it has reached
            # (and would answer -32800). The user_message is already queued, so the prompt is
            # inserted: answer with its cancellation result, the messageId.
            pass
        inserted.set()
        return {"messageId": message_id}

    async def run_turn(self, session: Session, text: str, inserted: asyncio.Event) -> None:
        agent_id, chunks, stop, error = new_id("msg_"), [], "end_turn", None
        try:
            await inserted.wait()
            await self.update(session, {"sessionUpdate": "state_update", "state": "running"})
            if "fail" in text.lower():
                raise RuntimeError("Simulated failure: the prompt asked to fail")
            parts = ["%d " % i for i in range(1, 61)] if "slowly" in text.lower() else ["You said: ", text]
            for part in parts:
                chunks.append(part)
                await self.update(session, {"sessionUpdate": "agent_message_chunk", "messageId": agent_id,
                                            "content": {"type": "text", "text": part}})
                await asyncio.sleep(0.1 if len(parts) > 2 else 0.01)
        except asyncio.CancelledError:
            stop = "cancelled"
        except Exception as e:
            stop, error = "error", {"code": -32603, "message": str(e)}
        session.record["history"].append({"sessionUpdate": "agent_message", "messageId": agent_id,
                                          "content": [{"type": "text", "text": "".join(chunks)}]})
        session.save()
        session.turn = None
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop}
        await self.update(session, idle if error is None else {**idle, "error": error})

    async def stop_session(self, session: Session) -> None:
        for task in list(session.held):
            task.cancel()  # the SDK answers a cancelled handler with -32800
        turn = session.turn
        if turn is not None:
            turn.cancel()
            await asyncio.wait({turn})

    async def cancel_session(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            await self.stop_session(session)


if __name__ == "__main__":
    asyncio.run(run_agent(InteropAgent()))
