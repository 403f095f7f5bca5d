"""A small, correct ACP v2 reference client (JSON-RPC 2.0 over the agent's stdio, standard library only).

``python -m acp_conformance.reference.client [OPTIONS] -- AGENT ARGS...`` launches the agent
(one argument after ``--`` that holds a whole command line is split like a shell would), then:
initialize (protocol version 2, its info, ``capabilities.elicitation.form``); disconnects if the
agent chose another version; session/new with the absolute cwd (and auth/login with an advertised
``agent`` method when session/new asks for authentication); one or more prompts of text, each
waiting for its response and the ``idle`` state that ends the turn (each prompt carries a fresh
``idempotencyKey``); session/close; then it closes
the agent's stdin and exits 0.

Requests from the agent: session/request_permission gets the first ``allow`` option (``cancelled``
once the client cancelled the turn); a form elicitation/create is declined, any other mode gets
-32602; ``$/cancel_request`` answers the named request at once with its cancelled result; any
other method gets -32601. Notifications are never answered. Unknown updates are ignored.

Options (or the environment variables in brackets, so that a scenario can steer it):
``--prompt TEXT`` [ACP_CLIENT_PROMPT], ``--prompts N`` [ACP_CLIENT_PROMPTS], ``--cancel-after S``
[ACP_CLIENT_CANCEL_AFTER: send session/cancel S seconds after each prompt],
``--permission allow|reject|cancelled|hold`` [ACP_CLIENT_PERMISSION; hold: the user has not
decided yet, so a pending request is answered cancelled when the turn is cancelled or ends], ``--list`` [ACP_CLIENT_LIST=1:
page through session/list], ``--resume`` [ACP_CLIENT_RESUME=1: resume the first listed session],
``--set-config`` [ACP_CLIENT_SET_CONFIG=1: set each select/boolean config option once],
``--protocol 1`` [ACP_CLIENT_PROTOCOL=1: the version-1 client of client_v1.py], ``--load``
[ACP_CLIENT_LOAD=1, version 1: session/load the session after the prompts when the agent advertised loadSession], ``--cancel-tools`` [ACP_CLIENT_CANCEL_TOOLS=1: tool_call/cancel every tool call that advertises
``capabilities.cancel``], ``--request-timeout S`` [ACP_CLIENT_REQUEST_TIMEOUT: a request unanswered after S seconds gets a
``$/cancel_request``, and its one answer is still awaited], ``--timeout S`` [ACP_CLIENT_TIMEOUT, default 20].
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import uuid
from typing import Any

CLIENT_INFO = {"name": "acp-conformance-reference-client", "version": "0.1.0"}
PROTOCOL_VERSION = 2
METHOD_NOT_FOUND, INVALID_PARAMS, CANCELLED, AUTH_REQUIRED, SESSION_NOT_FOUND = -32601, -32602, -32800, -32000, -32002


class AgentGone(Exception):
    pass


class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(error.get("message") if isinstance(error, dict) else str(error))
        self.error = error if isinstance(error, dict) else {}
        self.code = self.error.get("code")


def log(text: str) -> None:
    print(f"[reference-client] {text}", file=sys.stderr, flush=True)


class ReferenceClient:
    def __init__(self, opts: argparse.Namespace):
        self.opts = opts
        self.proc: asyncio.subprocess.Process | None = None
        self.next_id = 1
        self.pending: dict[Any, asyncio.Future] = {}
        self.incoming: dict[Any, dict] = {}  # agent requests not yet answered, by id
        self.agent_init: dict = {}
        self.session_id: str | None = None
        self.cancelled_sessions: set = set()
        self.turn_idle: asyncio.Event = asyncio.Event()
        self.cancelled_tools: set = set()
        self.write_lock = asyncio.Lock()
        self.gone = asyncio.Event()

    # -- the wire ---------------------------------------------------------------------------
    def encode(self, msg: dict) -> bytes:
        return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

    async def send(self, msg: dict) -> None:
        if self.gone.is_set():
            raise AgentGone("the agent is gone")
        async with self.write_lock:
            try:
                self.proc.stdin.write(self.encode(msg))
                await self.proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as e:
                raise AgentGone(f"the agent closed its stdin ({e})") from None

    def new_id(self) -> Any:
        i = self.next_id
        self.next_id += 1
        return i

    async def request(self, method: str, params: Any) -> Any:
        rid = self.new_id()
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        gone = asyncio.ensure_future(self.gone.wait())
        patience = self.opts.request_timeout
        if patience is not None and patience < self.opts.timeout:
            done, _ = await asyncio.wait({fut, gone}, timeout=patience, return_when=asyncio.FIRST_COMPLETED)
            if not done:  # the user gave up waiting: ask the agent to stop, and still take its one answer
                await self.notify("$/cancel_request", {"requestId": rid})
        done, _ = await asyncio.wait({fut, gone}, timeout=self.opts.timeout, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if fut not in done:
            self.pending.pop(rid, None)
            raise AgentGone(f"no answer to {method} ({'the agent exited' if self.gone.is_set() else 'timeout'})")
        msg = fut.result()
        if "error" in msg:
            raise RpcError(msg["error"])
        return msg.get("result")

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def respond(self, rid: Any, result: Any = None, error: dict | None = None) -> None:
        if self.incoming.pop(json.dumps(rid), None) is None:
            return  # answered already (a $/cancel_request raced with the answer): exactly one response
        msg: dict = {"jsonrpc": "2.0", "id": rid}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result if result is not None else {}
        try:
            await self.send(msg)
        except AgentGone:
            pass

    async def read_loop(self) -> None:
        try:
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    log(f"ignored a line that is not JSON: {line[:80]!r}")
                    continue
                for item in (msg if isinstance(msg, list) else [msg]):
                    if isinstance(item, dict):
                        self.dispatch(item)
        finally:
            self.gone.set()
            self.turn_idle.set()

    def dispatch(self, msg: dict) -> None:
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg and msg["id"] is not None:
                self.incoming[json.dumps(msg["id"])] = msg
                asyncio.ensure_future(self.on_request(msg))
            else:
                self.on_notification(method, msg.get("params") if isinstance(msg.get("params"), dict) else {})
        elif "id" in msg:
            fut = self.pending.pop(msg["id"], None) if not isinstance(msg["id"], (list, dict)) else None
            if fut is not None and not fut.done():
                fut.set_result(msg)

    # -- the agent's requests and notifications ------------------------------------------------
    async def on_request(self, msg: dict) -> None:
        method, rid = msg["method"], msg["id"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        try:
            if method == "session/request_permission":
                if self.opts.permission == "hold" and params.get("sessionId") not in self.cancelled_sessions:
                    return  # the user has not decided yet: answered cancelled when the turn is cancelled or over
                await self.respond(rid, {"outcome": self.permission_outcome(params)})
            elif method == "elicitation/create":
                if params.get("mode") == "form":
                    await self.respond(rid, {"action": "decline"})
                else:
                    await self.respond(rid, error={"code": INVALID_PARAMS,
                                                   "message": f"Elicitation mode {params.get('mode')!r} is not supported"})
            else:
                await self.respond(rid, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
        except Exception as e:  # never leave a request unanswered
            await self.respond(rid, error={"code": -32603, "message": f"Internal error: {e}"})

    def permission_outcome(self, params: dict) -> dict:
        if params.get("sessionId") in self.cancelled_sessions or self.opts.permission == "cancelled":
            return {"outcome": "cancelled"}
        options = [o for o in params.get("options") or [] if isinstance(o, dict) and isinstance(o.get("optionId"), str)]
        want = "allow" if self.opts.permission == "allow" else "reject"
        chosen = next((o for o in options if str(o.get("kind", "")).startswith(want)), None)
        if chosen is None:
            return {"outcome": "cancelled"}
        return {"outcome": "selected", "optionId": chosen["optionId"]}

    def on_notification(self, method: str, params: dict) -> None:
        if method == "session/update":
            update = params.get("update") if isinstance(params.get("update"), dict) else {}
            self.on_update(params.get("sessionId"), update)
        elif method == "$/cancel_request":
            rid = params.get("requestId")
            req = self.incoming.get(json.dumps(rid))
            if req is not None:
                if req.get("method") == "session/request_permission":
                    asyncio.ensure_future(self.respond(rid, {"outcome": {"outcome": "cancelled"}}))
                else:
                    asyncio.ensure_future(self.respond(rid, error={"code": CANCELLED, "message": "Request cancelled"}))
        # elicitation/complete and unknown notifications: nothing to do, and never an answer

    def on_update(self, session_id: Any, update: dict) -> None:
        kind = update.get("sessionUpdate")
        if kind == "state_update" and update.get("state") == "idle" and session_id == self.session_id:
            self.turn_idle.set()
        elif kind == "tool_call_update" and self.opts.cancel_tools:
            tid = update.get("toolCallId")
            caps = update.get("capabilities")
            if isinstance(caps, dict) and caps.get("cancel") is not None and tid not in self.cancelled_tools:
                self.cancelled_tools.add(tid)
                asyncio.ensure_future(self.cancel_tool(session_id, tid))
        # anything else (unknown variants included) is shown generically by a real client; ignored here

    async def cancel_tool(self, session_id: Any, tool_call_id: Any) -> None:
        try:
            await self.request("tool_call/cancel", {"sessionId": session_id, "toolCallId": tool_call_id})
        except (RpcError, AgentGone):
            pass

    # -- the conversation -------------------------------------------------------------------------
    def initialize_params(self) -> dict:
        # an extension advertised the way EXT-008 asks (inside the capability object), and W3C trace context
        return {"protocolVersion": PROTOCOL_VERSION, "info": CLIENT_INFO,
                "capabilities": {"elicitation": {"form": {}}, "_meta": {"acp-conformance.dev/reference-client": {}}},
                "_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}

    def new_session_params(self) -> dict:
        return {"cwd": os.path.abspath(os.getcwd())}

    def prompt_params(self, session_id: str, n: int) -> dict:
        # a fresh idempotencyKey per submission (RFD "v2 Idempotency Keys"): a resend of these very
        # params would be a retry of the same submission
        return {"sessionId": session_id, "prompt": self.prompt_blocks(n), "idempotencyKey": uuid.uuid4().hex}

    def prompt_blocks(self, n: int) -> list:
        return [{"type": "text", "text": self.opts.prompt if n == 0 else f"{self.opts.prompt} ({n + 1})"}]

    async def initialize(self) -> bool:
        try:
            self.agent_init = await self.request("initialize", self.initialize_params()) or {}
        except RpcError as e:
            log(f"the agent refused initialize: {e}")
            return False
        if self.agent_init.get("protocolVersion") != PROTOCOL_VERSION:
            log(f"the agent chose protocol version {self.agent_init.get('protocolVersion')!r}; this client speaks "
                f"only {PROTOCOL_VERSION}: disconnecting")
            return False
        return True

    async def new_session(self) -> str | None:
        try:
            res = await self.request("session/new", self.new_session_params())
        except RpcError as e:
            methods = [m for m in self.agent_init.get("authMethods") or [] if isinstance(m, dict)
                       and m.get("type") == "agent" and isinstance(m.get("methodId"), str)]
            if e.code != AUTH_REQUIRED or not methods:
                log(f"session/new failed: {e}")
                return None
            await self.request("auth/login", {"methodId": methods[0]["methodId"]})
            res = await self.request("session/new", self.new_session_params())
        self.new_session_result = res or {}
        return (res or {}).get("sessionId")

    async def list_sessions(self) -> list:
        sessions, cursor, pages = [], None, 0
        while pages < 20:
            params = {} if pages == 0 else {"cursor": cursor}
            res = await self.request("session/list", params) or {}
            sessions += [s for s in res.get("sessions") or [] if isinstance(s, dict)]
            pages += 1
            if res.get("nextCursor") is None:  # missing or null: the last page ("" is a real cursor)
                break
            cursor = res["nextCursor"]
        return sessions

    async def set_config(self, session_id: str) -> None:
        for opt in self.new_session_result.get("configOptions") or []:
            if not isinstance(opt, dict):
                continue
            if opt.get("type") == "select":
                values = [o.get("value") for o in opt.get("options") or [] if isinstance(o, dict)]
                if values:
                    value = {"type": "id", "value": values[-1]}
                else:
                    continue
            elif opt.get("type") == "boolean":
                value = {"type": "boolean", "value": not bool(opt.get("currentValue"))}
            else:
                continue  # an option type this client does not know is never set
            try:
                await self.request("session/set_config_option",
                                   {"sessionId": session_id, "configId": opt.get("configId"), **value})
            except RpcError as e:
                log(f"set_config_option {opt.get('configId')!r} failed: {e}")

    async def prompt(self, session_id: str, n: int) -> None:
        self.turn_idle = asyncio.Event()
        task = asyncio.ensure_future(self.request("session/prompt", self.prompt_params(session_id, n)))
        canceller = None
        if self.opts.cancel_after is not None:
            canceller = asyncio.ensure_future(self.cancel_later(session_id, self.opts.cancel_after))
        try:
            await task
        except RpcError as e:
            log(f"session/prompt failed: {e}")
            self.turn_idle.set()
        try:
            await asyncio.wait_for(self.turn_idle.wait(), self.opts.timeout)
        except asyncio.TimeoutError:
            log("the turn did not end in time")
        if canceller is not None:
            canceller.cancel()
        await self.answer_pending(session_id)  # nothing is left unanswered once the turn is over
        self.cancelled_sessions.discard(session_id)

    async def cancel_later(self, session_id: str, delay: float) -> None:
        await asyncio.sleep(delay)  # the user presses "stop" after a while: that delay is the behaviour
        await self.cancel(session_id)

    async def cancel(self, session_id: str) -> None:
        self.cancelled_sessions.add(session_id)
        await self.notify("session/cancel", {"sessionId": session_id})
        await self.answer_pending(session_id)

    async def answer_pending(self, session_id: str) -> None:
        for key, req in list(self.incoming.items()):  # every pending permission request: cancelled
            p = req.get("params") if isinstance(req.get("params"), dict) else {}
            if req.get("method") == "session/request_permission" and p.get("sessionId") == session_id:
                await self.respond(req["id"], {"outcome": {"outcome": "cancelled"}})

    async def close_session(self, session_id: str) -> None:
        try:
            await self.request("session/close", {"sessionId": session_id})
        except RpcError as e:
            if e.code != SESSION_NOT_FOUND:  # -32002: already gone, which is what closing wanted
                log(f"session/close failed: {e}")

    async def converse(self) -> None:
        if not await self.initialize():
            return
        sid = await self.new_session()
        if sid is None:
            return
        self.session_id = sid
        if self.opts.list:
            listed = await self.list_sessions()
            if self.opts.resume and listed and isinstance(listed[0].get("sessionId"), str):
                try:
                    await self.request("session/resume", {"sessionId": listed[0]["sessionId"],
                                                          "cwd": listed[0].get("cwd")})
                except RpcError as e:
                    log(f"session/resume failed: {e}")
        if self.opts.set_config:
            await self.set_config(sid)
        for n in range(self.opts.prompts):
            await self.prompt(sid, n)
        await self.close_session(sid)

    async def main(self, argv: list[str]) -> int:
        try:
            self.proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                             stdout=asyncio.subprocess.PIPE, limit=1 << 30)
        except OSError as e:
            log(f"cannot start the agent {shlex.join(argv)}: {e}")
            return 2
        reader = asyncio.ensure_future(self.read_loop())
        code = 0
        try:
            await self.converse()
        except AgentGone as e:
            log(f"the agent went away: {e}")
            code = 1
        except RpcError as e:
            log(f"a request failed: {e}")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.terminate()
            await self.proc.wait()
        reader.cancel()
        return code


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m acp_conformance.reference.client [OPTIONS] -- AGENT ARGS...")
    i = argv.index("--")
    own, agent = argv[:i], argv[i + 1:]
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m acp_conformance.reference.client")
    p.add_argument("--prompt", default=env("ACP_CLIENT_PROMPT", "Say hello"))
    p.add_argument("--prompts", type=int, default=int(env("ACP_CLIENT_PROMPTS", "1")))
    p.add_argument("--cancel-after", type=float, default=float(env("ACP_CLIENT_CANCEL_AFTER"))
                   if env("ACP_CLIENT_CANCEL_AFTER") else None)
    p.add_argument("--permission", choices=["allow", "reject", "cancelled", "hold"], default=env("ACP_CLIENT_PERMISSION", "allow"))
    p.add_argument("--list", action="store_true", default=env("ACP_CLIENT_LIST") == "1")
    p.add_argument("--resume", action="store_true", default=env("ACP_CLIENT_RESUME") == "1")
    p.add_argument("--set-config", action="store_true", default=env("ACP_CLIENT_SET_CONFIG") == "1")
    p.add_argument("--cancel-tools", action="store_true", default=env("ACP_CLIENT_CANCEL_TOOLS") == "1")
    p.add_argument("--request-timeout", type=float, default=float(env("ACP_CLIENT_REQUEST_TIMEOUT"))
                   if env("ACP_CLIENT_REQUEST_TIMEOUT") else None)
    p.add_argument("--timeout", type=float, default=float(env("ACP_CLIENT_TIMEOUT", "20")))
    p.add_argument("--load", action="store_true", default=env("ACP_CLIENT_LOAD") == "1")
    p.add_argument("--protocol", type=int, choices=[1, 2], default=int(env("ACP_CLIENT_PROTOCOL", "2")))
    opts = p.parse_args(own)
    if len(agent) == 1 and not os.path.exists(agent[0]):
        agent = shlex.split(agent[0])  # the agent given as one command line (the suite's {agent})
    if not agent:
        raise SystemExit("give the agent's command after --")
    return opts, agent


def main(argv: list[str] | None = None, cls: type[ReferenceClient] = ReferenceClient) -> int:
    opts, agent = parse(list(sys.argv[1:] if argv is None else argv))
    if opts.protocol == 1 and cls is ReferenceClient:
        from .client_v1 import V1ReferenceClient  # version 1 (a subclass: imported only when asked for)
        cls = V1ReferenceClient
    return asyncio.run(cls(opts).main(agent))


if __name__ == "__main__":
    sys.exit(main())
