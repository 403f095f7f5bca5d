"""The scripted agent: plays the Agent for a client under test, as a client scenario says.

A client drives the conversation, so this runner reacts: every request (or notification) the
client sends is handled by the scenario's actions for that method, or by the default behaviour
of a small correct agent. It only drives; the monitors judge every frame. The run ends when the
client closes the connection or exits, when the scripted agent "dies" (``exit``), or when the
client has been quiet for ``options.quiet`` seconds with nothing left to do.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any, Callable

import anyio

from ..wire.peer import Peer, Pending, TargetGone, WaitTimeout
from ..wire.socket_transport import SocketTransport, uses_placeholder
from ..wire.transcript import EV_NOTE, EV_TIMEOUT, RECEIVED, Frame, Transcript
from ..wire.transport import TargetClosed, TargetError, Transport, describe_exit
from .bounded_run import run_bounded, shut_down
from .model import Scenario, Step
from .runner import RunResult, RunSettings, TargetSpec
from ..target_command import with_extra_args

AGENT_INFO = {"name": "acp-conformance-scripted-agent", "title": "ACP Conformance Suite (scripted agent)",
              "version": "0.1.0"}
METHOD_NOT_FOUND = -32601
DEFAULT_PROMPT = [Step("user_message", {}, 0), Step("respond", {}, 1), Step("state", {"state": "running"}, 2),
                  Step("message", {"text": "Hello from the scripted agent."}, 3), Step("state", {"state": "idle"}, 4)]
# version 1 (https://agentclientprotocol.com/protocol/v1/prompt-turn): the turn's updates, then the response
# carries the stop reason
DEFAULT_PROMPT_V1 = [Step("message", {"text": "Hello from the scripted agent."}, 0), Step("respond", {}, 1)]
_VAR = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")
_WHOLE = re.compile(r"^\$([A-Za-z_][\w.]*)$")


class ClientRunner:
    def __init__(self, scenario: Scenario, target: TargetSpec, settings: RunSettings, workdir: Path,
                 socket_dir: Path, listeners: list[Callable[[Frame], None]] | None = None):
        self.scenario = scenario
        self.target = target
        self.settings = settings
        self.workdir = Path(workdir).resolve()
        self.socket_dir = Path(socket_dir)
        self.transcript = Transcript(listeners=list(listeners or []))
        self.result = RunResult(self.transcript)
        self.handlers: dict[str, list[Step]] = getattr(scenario, "handlers", {})
        self.init_script: dict[str, Any] = getattr(scenario, "initialize", {})
        self.quiet = float(scenario.options.get("quiet", min(3.0, settings.timeout)))
        self.transport: Transport | None = None
        self.peer: Peer | None = None
        self.saved: dict[str, Any] = {}
        self.sessions: list[str] = []
        self.cancels: list[tuple[int, Any]] = []  # (frame seq, sessionId) of the client's session/cancel
        self.busy = 0
        self.calls: dict[str, int] = {}  # method -> how many times the client called it
        self.hung_up = False
        self._changed = anyio.Event()
        self._tg = None

    # -- wiring -------------------------------------------------------------------------------
    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _on_frame(self, frame: Frame) -> None:
        msg = frame.msg
        for item in (msg if isinstance(msg, list) else [msg]):
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                if "id" in item and item["id"] is not None:
                    continue  # requests go to the peer's on_request
                if item["method"] == "session/cancel":
                    sid = (item.get("params") or {}).get("sessionId") if isinstance(item.get("params"), dict) else None
                    self.cancels.append((frame.seq, sid))
                elif "id" in item:  # a request with id null: answered as JSON-RPC says, and judged by the monitors
                    self._tg.start_soon(self._respond, None, None,
                                        {"code": -32600, "message": "Invalid Request: the id is null"})
        self._wake()

    def _on_request(self, frame: Frame, msg: dict[str, Any]) -> None:
        self._tg.start_soon(self._handle, frame, msg)

    async def _respond(self, id: Any, result: Any, error: Any) -> None:
        if self.peer is not None and not self.hung_up:
            try:
                await self.peer.respond(id, result, error)
            except TargetClosed:
                pass

    # -- variables ----------------------------------------------------------------------------
    def resolve(self, value: Any, env: dict[str, Any]) -> Any:
        def look(path: str) -> Any:
            head, *rest = path.split(".")
            v = env.get(head, self.saved.get(head))
            for part in rest:
                if isinstance(v, Pending):
                    v = v.msg or {}
                v = v.get(part) if isinstance(v, dict) else None
            return v.id if isinstance(v, Pending) and not rest else v
        if isinstance(value, str):
            m = _WHOLE.match(value)
            if m:
                return look(m.group(1))
            return _VAR.sub(lambda mm: str(look(mm.group(1))), value)
        if isinstance(value, list):
            return [self.resolve(v, env) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v, env) for k, v in value.items()}
        return value

    # -- the scripted agent ---------------------------------------------------------------------
    def _default_result(self, method: str, params: dict[str, Any], env: dict[str, Any]) -> Any:
        if self.settings.protocol == 1:
            return self._default_result_v1(method, env)
        if method == "initialize":
            res = {"protocolVersion": 2, "info": AGENT_INFO, "capabilities": {"session": {}}}
            res.update({k: v for k, v in self.init_script.items() if k != "error"})
            return res
        if method == "session/new":
            return {"sessionId": env["sid"]}
        if method == "session/prompt":
            return {"messageId": env["messageId"]}
        if method == "session/list":
            return {"sessions": []}
        if method in ("session/resume", "session/close", "session/delete", "auth/login", "auth/logout",
                      "session/set_config_option", "tool_call/cancel", "terminal/cancel"):
            return {}
        return None

    def _default_result_v1(self, method: str, env: dict[str, Any]) -> Any:
        """A small correct v1 agent's answers (https://agentclientprotocol.com/protocol/v1/initialization): no
        optional capability unless the scenario's ``initialize`` advertises it."""
        if method == "initialize":
            res = {"protocolVersion": 1, "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                   "authMethods": [], "agentInfo": AGENT_INFO}
            res.update({k: v for k, v in self.init_script.items() if k != "error"})
            return res
        if method == "session/new":
            return {"sessionId": env["sid"]}
        if method == "session/prompt":
            return {"stopReason": "end_turn"}
        if method == "session/list":
            return {"sessions": []}
        if method in ("session/load", "session/resume", "session/close", "session/delete", "session/set_mode",
                      "session/set_config_option", "authenticate", "logout"):
            return {}
        return None

    async def _handle(self, frame: Frame, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        sid = params.get("sessionId")
        if method == "session/new":
            sid = f"sess_conformance_{len(self.sessions) + 1}_{uuid.uuid4().hex[:8]}"
            self.sessions.append(sid)
        env = {"sid": sid, "messageId": f"msg_{uuid.uuid4().hex[:12]}", "prompt": params.get("prompt"),
               "cwd": str(self.workdir), "params": params, "id": msg.get("id"), "since": frame.seq}
        self.calls[method] = n = self.calls.get(method, 0) + 1
        if method == "initialize" and self.init_script.get("error"):
            actions = [Step("respond", {"error": self.init_script["error"]}, 0)]
        elif f"{method}#{n}" in self.handlers:  # the n-th call of the method has a script of its own
            actions = self.handlers[f"{method}#{n}"]
        elif method in self.handlers:
            actions = self.handlers[method]
        elif method == "session/prompt":
            actions = DEFAULT_PROMPT_V1 if self.settings.protocol == 1 else DEFAULT_PROMPT
        elif self._default_result(method, params, env) is not None:
            actions = [Step("respond", {}, 0)]
        else:
            actions = [Step("respond", {"error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}},
                            0)]
        self.busy += 1
        env["answered"] = False
        try:
            for st in actions:
                if self.hung_up:
                    return
                await self._act(st, method, params, env)
            if not env["answered"]:
                await self._act(Step("respond", {}, 0), method, params, env)
        except (TargetClosed, TargetGone):
            pass  # the client went away mid-script: its end is in the transcript, judged there
        finally:
            self.busy -= 1
            self._wake()

    async def _act(self, st: Step, method: str, params: dict[str, Any], env: dict[str, Any]) -> None:
        a = self.resolve(st.args, env)
        k = st.kind
        if k == "respond":
            if env["answered"]:
                return
            env["answered"] = True
            if a.get("error") is not None:
                await self._respond(env["id"], None, a["error"])
                return
            result = self._default_result(method, params, env)
            if isinstance(a.get("result"), dict) and isinstance(result, dict):
                result = {**result, **a["result"]}
            elif "result" in a:
                result = a["result"]
            await self._respond(env["id"], result if result is not None else {}, None)
        elif k == "user_message":
            content = a.get("content", env.get("prompt"))
            await self._update(env["sid"], {"sessionUpdate": "user_message", "messageId": env["messageId"],
                                            "content": content if isinstance(content, list) else []})
        elif k == "state":
            upd = {"sessionUpdate": "state_update", "state": a.get("state", "idle")}
            if upd["state"] == "idle":
                upd["stopReason"] = a.get("stopReason", "end_turn")
            if a.get("error") is not None:
                upd["error"] = a["error"]
            await self._update(env["sid"], upd)
        elif k == "message":
            chunk = {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": str(a.get("text", ""))}}
            if self.settings.protocol != 1:  # v1 chunks carry no messageId
                chunk["messageId"] = env.setdefault("agentMessageId", f"msg_{uuid.uuid4().hex[:12]}")
            await self._update(env["sid"], chunk)
        elif k == "update":
            await self._update(a.get("session", env["sid"]), a["update"])
        elif k == "request":
            if not self._client_allows(a["method"]):
                self.transcript.event(EV_NOTE, text=f"{a['method']} not sent: the client did not advertise it")
                return
            p = await self.peer.request(a["method"], a.get("params"), id=a.get("id"))
            if a.get("save"):
                self.saved[str(a["save"])] = p
            if a.get("wait", True):
                try:
                    await self.peer.await_response(p, float(a.get("timeout", self.settings.timeout)))
                except WaitTimeout as e:
                    self.transcript.event(EV_TIMEOUT, what=str(e))
        elif k == "notify":
            await self.peer.notify(a["method"], a.get("params"))
        elif k == "cancel_request":
            target = self.saved.get(str(st.args.get("request", "")).lstrip("$"))
            rid = target.id if isinstance(target, Pending) else a.get("request")
            await self.peer.notify("$/cancel_request", {"requestId": rid})
        elif k == "await_answer":
            target = self.saved.get(str(st.args.get("request", "")).lstrip("$"))
            if isinstance(target, Pending):
                try:
                    await self.peer.await_response(target, float(a.get("timeout") or self.settings.timeout))
                except WaitTimeout as e:
                    self.transcript.event(EV_TIMEOUT, what=str(e))
        elif k == "await_cancel":
            timeout = float(a.get("timeout") or self.settings.timeout)
            sid = env["sid"]
            with anyio.move_on_after(timeout):
                while not any(seq >= env["since"] and s == sid for seq, s in self.cancels):
                    await self._changed.wait()
        elif k == "delay":
            await anyio.sleep(float(a.get("seconds", 0)))  # a scripted delay is the behaviour under test
        elif k == "raw":
            await self.peer.send_raw(str(a["line"]).encode("utf-8"))
        elif k == "note":
            self.transcript.event(EV_NOTE, text=str(a.get("text", "")))
        elif k == "exit":
            self.transcript.event(EV_NOTE, text="the scripted agent exits mid-turn")
            self.hung_up = True
            if isinstance(self.transport, SocketTransport):
                await self.transport.hang_up()
            else:
                await self.transport.close_stdin()
            self._wake()

    def _client_allows(self, method: str) -> bool:
        """Version 1: an agent calls fs/* and terminal/* only when the client's clientCapabilities advertised them
        (https://agentclientprotocol.com/protocol/v1/file-system); the scripted agent keeps that rule too."""
        if self.settings.protocol != 1 or not method.startswith(("fs/", "terminal/")):
            return True
        init = next((f.msg for f in self.transcript.frames if f.direction == RECEIVED and isinstance(f.msg, dict)
                     and f.msg.get("method") == "initialize"), {})
        caps = (init.get("params") or {}).get("clientCapabilities") if isinstance(init.get("params"), dict) else None
        caps = caps if isinstance(caps, dict) else {}
        if method.startswith("terminal/"):
            return caps.get("terminal") is True
        fs = caps.get("fs") if isinstance(caps.get("fs"), dict) else {}
        return fs.get({"fs/read_text_file": "readTextFile", "fs/write_text_file": "writeTextFile"}.get(method)) is True

    async def _update(self, sid: Any, update: dict[str, Any]) -> None:
        await self.peer.notify("session/update", {"sessionId": sid, "update": update})

    # -- running --------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        return await run_bounded(self, self._session, "the client", self._stopped, self._disconnect)

    def _stopped(self, e: Exception) -> bool:
        """A client that could not be started or sent nothing ends the run with a sentence (False: not that)."""
        if not isinstance(e, TargetError):
            return False
        self.transcript.event(EV_NOTE, what=str(e))
        self.result.error = str(e)
        return True

    async def _session(self, tg) -> None:
        env = {**self.target.env, **getattr(self.scenario, "env", {})}
        argv = with_extra_args(self.target.argv, [*self.target.args, *getattr(self.scenario, "args", [])])
        if uses_placeholder(argv):
            transport: Transport = SocketTransport(argv, self.transcript, cwd=self.workdir,
                                                   socket_dir=self.socket_dir, env=env,
                                                   connect_timeout=self.settings.startup_timeout)
        else:
            transport = Transport(argv, self.transcript, cwd=self.workdir, env=env)
        peer = Peer(transport, self.transcript, on_request=self._on_request)
        peer_frame = transport.on_frame

        def both(frame: Frame) -> None:
            peer_frame(frame)
            self._on_frame(frame)
        transport.on_frame = both
        self.transport, self.peer = transport, peer
        await transport.spawn()
        transport.start_readers(tg)
        if isinstance(transport, SocketTransport):
            await transport.accept(tg)
        await self._wait_first()
        await self._wait_end()

    async def _wait_first(self) -> None:
        t = self.settings.startup_timeout
        with anyio.move_on_after(t):
            while not any(f.direction == RECEIVED for f in self.transcript.frames):
                if self.transport.eof.is_set() or self.transport.exited.is_set():
                    break
                await self._wait_change()
        if not any(f.direction == RECEIVED for f in self.transcript.frames):
            if self.transport.eof.is_set() or self.transport.exited.is_set():
                with anyio.move_on_after(1.0):
                    await self.transport.exited.wait()
                how = describe_exit(self.transport.returncode) if self.transport.exited.is_set() else \
                    "closed the connection"
                raise TargetError(f"the client sent nothing to its agent and {how}")
            self.transcript.event(EV_TIMEOUT, what="the client's first message", seconds=t)
            raise TargetError(f"the client sent nothing to its agent within {t:g} s (--acp-startup-timeout)")

    async def _wait_change(self) -> None:
        ev = self._changed
        waiters = (self.transport.eof, self.transport.exited)
        async with anyio.create_task_group() as tg:
            async def on(e):
                await e.wait()
                tg.cancel_scope.cancel()
            tg.start_soon(on, ev)
            for w in waiters:
                tg.start_soon(on, w)

    async def _wait_end(self) -> None:
        while not (self.hung_up or self.transport.eof.is_set() or self.transport.exited.is_set()):
            with anyio.move_on_after(self.quiet) as scope:
                await self._wait_change()
            if scope.cancelled_caught and self.busy == 0:
                self.transcript.event(EV_NOTE, text=f"the client was quiet for {self.quiet:g} s; the test ends")
                return
        if self.hung_up:  # give the client the chance to notice its agent's death and exit
            with anyio.move_on_after(self.settings.shutdown_grace):
                await self.transport.exited.wait()
            return
        with anyio.move_on_after(self.settings.shutdown_grace):  # it closed its agent: it should exit now
            await self.transport.exited.wait()
        # how it exited is in the transcript's exit event: the monitors judge a crash by the rule it broke

    async def _disconnect(self) -> None:
        if not await shut_down(self):
            return
        init = next((f.msg for f in self.transcript.frames if f.direction == RECEIVED and isinstance(f.msg, dict)
                     and f.msg.get("method") == "initialize"), None)
        if init is not None and isinstance(init.get("params"), dict):
            self.result.agent_init = init["params"]  # the client's identity, for the report


def dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)
