"""The reference client's version-1 mode (``python -m acp_conformance.reference.client --protocol 1 -- AGENT``,
or ACP_CLIENT_PROTOCOL=1): a small, correct ACP v1 client, written from the v1 pages of agentclientprotocol.com
(https://agentclientprotocol.com/protocol/v1/overview).

initialize asks for protocolVersion 1 with ``clientCapabilities`` (fs.readTextFile, fs.writeTextFile and
terminal) and ``clientInfo``, and disconnects if the agent chose another version; session/new with the absolute
cwd and ``mcpServers: []`` (authenticate with the first advertised method when session/new asks for it, -32000);
each prompt (text only: the one content type every agent supports besides resource_link) waits for its response,
which carries the turn's stop reason; session/cancel answers every pending permission request of the session with
the cancelled outcome. session/list, session/resume and session/close are called only when the agent advertised
them under ``agentCapabilities.sessionCapabilities``, and session/load (``--load``) only when it advertised
``loadSession``.
fs/read_text_file and fs/write_text_file are served on absolute paths (a write creates the file); terminals run
the command asked for and keep at most its outputByteLimit, the earlier output dropped at a character boundary.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .client import AUTH_REQUIRED, CLIENT_INFO, INVALID_PARAMS, METHOD_NOT_FOUND, ReferenceClient, RpcError, log


class V1ReferenceClient(ReferenceClient):
    protocol = 1

    def __init__(self, opts) -> None:
        super().__init__(opts)
        self.terminals: dict[str, dict] = {}  # terminalId -> its process, output kept and reader

    def initialize_params(self) -> dict:
        return {"protocolVersion": 1, "clientInfo": CLIENT_INFO,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}}

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
        if method.startswith("terminal/"):
            await self.on_terminal(method, rid, params)
            return
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

    # -- terminals (https://agentclientprotocol.com/protocol/v1/terminals) ---------------------------------------
    async def on_terminal(self, method: str, rid: Any, params: dict) -> None:
        terms = self.terminals
        try:
            if method == "terminal/create":
                await self.respond(rid, {"terminalId": await self.create_terminal(terms, params)})
                return
            term = terms.get(params.get("terminalId"))
            if term is None:
                await self.respond(rid, error={"code": INVALID_PARAMS, "message": "unknown terminalId"})
            elif method == "terminal/output":
                await self.respond(rid, self.terminal_output(term))
            elif method == "terminal/wait_for_exit":
                await term["reader"]
                await self.respond(rid, self.exit_status(term))
            elif method in ("terminal/kill", "terminal/release"):
                if term["proc"].returncode is None:
                    term["proc"].kill()
                if method == "terminal/release":
                    terms.pop(params.get("terminalId"), None)
                await self.respond(rid, None)
            else:
                await self.respond(rid, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
        except (OSError, ValueError, TypeError) as e:
            await self.respond(rid, error={"code": -32603, "message": f"Internal error: {e}"})

    async def create_terminal(self, terms: dict, params: dict) -> str:
        env = {**os.environ, **{v["name"]: v["value"] for v in params.get("env") or [] if isinstance(v, dict)}}
        proc = await asyncio.create_subprocess_exec(
            str(params["command"]), *[str(a) for a in params.get("args") or []], cwd=params.get("cwd") or None,
            env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        tid = f"term_{len(terms) + 1}_{proc.pid}"
        limit = params.get("outputByteLimit")
        term = {"proc": proc, "output": b"", "truncated": False, "limit": limit if isinstance(limit, int) else None}

        async def read() -> None:
            while chunk := await proc.stdout.read(65536):
                self.keep_output(term, chunk)
            await proc.wait()
        term["reader"] = asyncio.ensure_future(read())
        terms[tid] = term
        return tid

    def keep_output(self, term: dict, chunk: bytes) -> None:
        """The output within outputByteLimit: earlier output dropped, at a character boundary (never inside a
        UTF-8 sequence)."""
        out = term["output"] + chunk
        limit = term["limit"]
        if limit is not None and len(out) > limit:
            out = out[len(out) - limit:]
            while out and out[0] & 0xC0 == 0x80:  # a continuation byte: the rest of a cut character
                out = out[1:]
            term["truncated"] = True
        term["output"] = out

    def exit_status(self, term: dict) -> dict:
        code = term["proc"].returncode
        return {"exitCode": code, "signal": None} if code is None or code >= 0 else {"exitCode": None,
                                                                                     "signal": f"signal {-code}"}

    def terminal_output(self, term: dict) -> dict:
        res: dict = {"output": term["output"].decode("utf-8", "replace"), "truncated": term["truncated"]}
        if term["proc"].returncode is not None:
            res["exitStatus"] = self.exit_status(term)
        return res

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
