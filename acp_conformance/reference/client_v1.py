"""The reference client's version-1 mode (``python -m acp_conformance.reference.client --protocol 1 -- AGENT``,
or ACP_CLIENT_PROTOCOL=1): a small, correct ACP v1 client, written from the v1 pages of agentclientprotocol.com
(https://agentclientprotocol.com/protocol/v1/overview).

initialize asks for protocolVersion 1 with ``clientCapabilities`` (fs.readTextFile and fs.writeTextFile, no
terminal) and ``clientInfo``, and disconnects if the agent chose another version; session/new with the absolute
cwd and ``mcpServers: []`` (authenticate with the first advertised method when session/new asks for it, -32000);
each prompt (text only: the one content type every agent supports besides resource_link) waits for its response,
which carries the turn's stop reason; session/cancel answers every pending permission request of the session with
the cancelled outcome. session/list, session/resume and session/close are called only when the agent advertised
them under ``agentCapabilities.sessionCapabilities``, and session/load (``--load``) only when it advertised
``loadSession``.
fs/read_text_file and fs/write_text_file are served on absolute paths (a write creates the file).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .client import AUTH_REQUIRED, CLIENT_INFO, INVALID_PARAMS, METHOD_NOT_FOUND, ReferenceClient, RpcError, log


class V1ReferenceClient(ReferenceClient):
    protocol = 1

    def initialize_params(self) -> dict:
        return {"protocolVersion": 1, "clientInfo": CLIENT_INFO,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False}}

    async def initialize(self) -> bool:
        try:
            self.agent_init = await self.request("initialize", self.initialize_params()) or {}
        except RpcError as e:
            log(f"the agent refused initialize: {e}")
            return False
        if self.agent_init.get("protocolVersion") != 1:
            log(f"the agent chose protocol version {self.agent_init.get('protocolVersion')!r}; this client speaks "
                "only 1: disconnecting")
            return False
        return True

    def caps(self) -> dict:
        caps = self.agent_init.get("agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    def session_caps(self) -> dict:
        caps = self.caps().get("sessionCapabilities")
        return caps if isinstance(caps, dict) else {}

    def advertised(self, name: str) -> bool:
        return isinstance(self.session_caps().get(name), dict)

    def new_session_params(self) -> dict:
        return {"cwd": os.path.abspath(os.getcwd()), "mcpServers": []}

    async def new_session(self) -> str | None:
        try:
            res = await self.request("session/new", self.new_session_params())
        except RpcError as e:
            methods = [m for m in self.agent_init.get("authMethods") or [] if isinstance(m, dict)
                       and isinstance(m.get("id"), str)]
            if e.code != AUTH_REQUIRED or not methods:
                log(f"session/new failed: {e}")
                return None
            await self.request("authenticate", {"methodId": methods[0]["id"]})
            res = await self.request("session/new", self.new_session_params())
        self.new_session_result = res or {}
        return (res or {}).get("sessionId")

    def prompt_params(self, session_id: str, n: int) -> dict:
        return {"sessionId": session_id, "prompt": self.prompt_blocks(n)}

    async def prompt(self, session_id: str, n: int) -> None:
        canceller = None
        if self.opts.cancel_after is not None:
            canceller = asyncio.ensure_future(self.cancel_later(session_id, self.opts.cancel_after))
        try:
            res = await self.request("session/prompt", self.prompt_params(session_id, n))
            log(f"the turn ended: {(res or {}).get('stopReason')!r}")
        except RpcError as e:
            log(f"session/prompt failed: {e}")
        if canceller is not None:
            canceller.cancel()
        await self.answer_pending(session_id)  # nothing is left unanswered once the turn is over
        self.cancelled_sessions.discard(session_id)

    def on_update(self, session_id: Any, update: dict) -> None:
        pass  # a real client shows them; the turn ends with the prompt's response in version 1

    async def on_request(self, msg: dict) -> None:
        method, rid = msg["method"], msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method not in ("fs/read_text_file", "fs/write_text_file"):
            if method == "elicitation/create":  # no elicitation mode advertised in version 1
                await self.respond(rid, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
                return
            await super().on_request(msg)
            return
        path = params.get("path")
        if not isinstance(path, str) or not os.path.isabs(path):
            await self.respond(rid, error={"code": INVALID_PARAMS, "message": f"path must be absolute: {path!r}"})
            return
        try:
            if method == "fs/write_text_file":
                with open(path, "w", encoding="utf-8") as f:  # creates the file when it does not exist
                    f.write(str(params.get("content", "")))
                await self.respond(rid, None)
            else:
                with open(path, encoding="utf-8") as f:
                    lines = f.read().splitlines(keepends=True)
                start = max(int(params.get("line") or 1) - 1, 0)
                limit = params.get("limit")
                chosen = lines[start:start + int(limit)] if isinstance(limit, int) else lines[start:]
                await self.respond(rid, {"content": "".join(chosen)})
        except (OSError, ValueError) as e:
            await self.respond(rid, error={"code": -32603, "message": f"Internal error: {e}"})

    async def close_session(self, session_id: str) -> None:
        if self.advertised("close"):
            await super().close_session(session_id)

    async def converse(self) -> None:
        if not await self.initialize():
            return
        sid = await self.new_session()
        if sid is None:
            return
        self.session_id = sid
        if self.opts.list and self.advertised("list"):
            listed = await self.list_sessions()
            if self.opts.resume and self.advertised("resume") and listed \
                    and isinstance(listed[0].get("sessionId"), str):
                try:
                    await self.request("session/resume", {"sessionId": listed[0]["sessionId"],
                                                          "cwd": listed[0].get("cwd"), "mcpServers": []})
                except RpcError as e:
                    log(f"session/resume failed: {e}")
        for n in range(self.opts.prompts):
            await self.prompt(sid, n)
        if self.opts.load and self.caps().get("loadSession") is True:
            try:
                await self.request("session/load", {"sessionId": sid, **self.new_session_params()})
            except RpcError as e:
                log(f"session/load failed: {e}")
        await self.close_session(sid)
