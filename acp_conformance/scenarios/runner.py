"""The scenario interpreter: drives a target through a scenario's steps, playing the Client.

It only drives; it judges nothing. Every frame goes to the transcript, whose listeners (the
monitors) judge. The runner's own outcome is whether it could finish the steps: a target that
hangs, dies or refuses the setup the scenario needs ends the run with a sentence saying so.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio

from ..wire.peer import Peer, Pending, TargetGone, WaitTimeout
from ..wire.transcript import EV_NOTE, EV_TIMEOUT, RECEIVED, SENT, Frame, Transcript
from ..wire.transport import TargetClosed, TargetError, Transport
from ..rules.verdicts import NOT_EXERCISED_SKIP
from .model import Scenario, Step

SUITE_INFO = {"name": "acp-conformance", "title": "ACP Conformance Suite", "version": "0.1.0"}


@dataclass
class TargetSpec:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # a client's extra arguments (where {args} stands)


@dataclass
class RunSettings:
    timeout: float = 10.0  # per awaited response or update
    startup_timeout: float = 15.0  # for the first response of each connection
    test_timeout: float = 60.0
    shutdown_grace: float = 2.0
    prompts: dict[str, str] = field(default_factory=dict)  # simple, long, tool, permission
    permission_answer: str = "allow"  # allow | reject | cancelled | hold
    validate_sent: Callable[[dict[str, Any]], str | None] | None = None  # harness self-check
    auth_method: str | None = None  # --acp-auth-method: auth/login with it after initialize


class ScenarioAbort(Exception):
    """The scenario cannot go on; the message says why, for the report."""


AUTH_REQUIRED = -32000  # ACP's auth_required error code (schema: ErrorCode)


class AuthBlocked(ScenarioAbort):
    """The agent requires authentication the suite cannot give: session/new answered auth_required (-32000)
    without --acp-auth-method, or the login with it failed. The message names the methods it offers."""


class ScenarioSkip(Exception):
    """The scenario does not apply to this target (a capability it needs is not advertised)."""


# updates that only the target decides to send: a scenario that waited for one in vain was not exercised
TARGET_UPDATE_KINDS = frozenset({"tool_call_update", "tool_call_content_chunk", "terminal_update",
                                 "terminal_output_chunk", "plan_update", "usage_update", "available_commands_update",
                                 "session_info_update", "config_option_update", "subagent_update", "notice",
                                 "compaction_update"})


class HarnessError(Exception):
    """The suite itself did something wrong (for example it built an invalid frame)."""


@dataclass(repr=False)  # the default repr would render the whole transcript (see Frame.__repr__)
class RunResult:
    transcript: Transcript
    error: str | None = None  # why the steps could not be completed (None: completed)
    # "timeout": an awaited answer or update never came; "target-never": it was one only the target decides to send
    error_kind: str | None = None
    skipped: str | None = None
    harness_error: str | None = None
    stderr: list[str] = field(default_factory=list)  # one text per connection
    endings: list[str] = field(default_factory=list)  # how each connection ended
    agent_init: dict[str, Any] | None = None  # the initialize result, if any
    auth_blocked: str | None = None  # the scenario stopped at authentication (also in error); see AuthBlocked

    def __repr__(self) -> str:
        return f"RunResult({self.transcript!r}, error={self.error!r}, skipped={self.skipped!r})"


_VAR = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")
_WHOLE = re.compile(r"^\$([A-Za-z_][\w.]*)$")


class Runner:
    def __init__(self, scenario: Scenario, target: TargetSpec, settings: RunSettings, workdir: Path,
                 listeners: list[Callable[[Frame], None]] | None = None, started: Transport | None = None):
        self.scenario = scenario
        self._started = started  # a process of this target started ahead in workdir (prestart.py), or None
        self.target = target
        self.settings = settings
        self.workdir = Path(workdir).resolve()
        self.transcript = Transcript(listeners=list(listeners or []))
        self.result = RunResult(self.transcript)
        self.vars: dict[str, Any] = {
            "cwd": str(self.workdir),
            "unknown_session": f"sess_conformance_unknown_{uuid.uuid4().hex[:12]}",
            "opt": dict(settings.prompts),
        }
        self.sessions: dict[str, dict[str, Any]] = {}  # sessionId -> {cwd}
        self.last_sent: dict[str, int] = {}  # sessionId -> seq of the last frame the suite sent for it
        self._closed_here: set[str] = set()  # sessions this scenario closed (the form of a later resume)
        self.transport: Transport | None = None
        self.peer: Peer | None = None
        # a restart takes the process this returns, when it returns one: a process of the target already
        # started in this workdir (the fuzzer's, started while the connection before ran)
        self.take_started: Callable[[], Transport | None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._tg = None
        self._first_response_pending = True
        self._answered: dict[str, int] = {}  # options.permission_answers / elicitation_answers used so far
        self._held: list[dict[str, Any]] = []  # permission requests held unanswered (answer_held answers them)

    # -- variables ----------------------------------------------------------------------------
    def lookup(self, path: str) -> Any:
        head, *rest = path.split(".")
        if head not in self.vars:
            raise HarnessError(f"{self.scenario.name}: unknown variable ${head}")
        value = self.vars[head]
        for part in rest:
            if isinstance(value, Pending):
                value = value.msg or {}
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return None
        if isinstance(value, Pending) and rest:
            value = value.msg
        return value  # a bare $p stays the request handle, so that `await: {response: $p}` can wait on it

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            m = _WHOLE.match(value)
            if m:
                return self.lookup(m.group(1))
            return _VAR.sub(lambda mm: _text(self.lookup(mm.group(1))), value)
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value

    # -- connections --------------------------------------------------------------------------
    async def connect(self, extra_env: dict[str, str] | None = None, started: Transport | None = None) -> None:
        """Start the target (or take ``started``, a process of this target already started in this
        workdir, with no extra environment) and read its output."""
        if started is not None:
            transport = started
            transport.adopt(self.transcript)
        else:
            env = dict(self.target.env)
            if extra_env:
                env.update(extra_env)
            transport = Transport(self.target.argv, self.transcript, cwd=self.workdir, env=env)
        peer = Peer(transport, self.transcript, on_request=self._on_request)
        if started is None:
            try:
                await transport.spawn()
            except TargetError as e:
                raise ScenarioAbort(str(e)) from None
        self.transport, self.peer = transport, peer
        self._first_response_pending = True
        self._scope = await self._tg.start(self._serve, transport)

    async def _serve(self, transport: Transport, *, task_status) -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                transport.start_readers(tg)
                task_status.started(scope)

    async def disconnect(self) -> None:
        if self.transport is None:
            return
        how = await self.transport.shutdown(self.settings.shutdown_grace)
        self.result.endings.append(how)
        self.result.stderr.append(self.transport.stderr.text())
        if self._scope is not None:
            self._scope.cancel()
        self.transport = None
        self.peer = None

    def _on_request(self, frame: Frame, msg: dict[str, Any]) -> None:
        """Requests from the target: answered by the scenario's policy (run in the reader task)."""
        method = msg.get("method")
        if method == "session/request_permission":
            answer = self._scripted("permission_answers", self.settings.permission_answer)
            if answer == "hold":
                self._held.append(msg)
                return
            special = _ODD_PERMISSION_ANSWERS.get(answer)
            if special is not None:
                self._tg.start_soon(self._respond, msg["id"], special.get("result"), special.get("error"))
                return
            self._tg.start_soon(self._respond, msg["id"], {"outcome": _permission_outcome(msg, answer)}, None)
        elif method == "elicitation/create" and self.scenario.options.get("elicitation_answers"):
            answer = self._scripted("elicitation_answers", "decline")
            if answer == "hold":
                return
            if answer == "error":
                self._tg.start_soon(self._respond, msg["id"], None, {"code": -32603, "message": "Internal error"})
                return
            result = _ELICITATION_ANSWERS.get(answer) or {"action": answer}
            if answer == "accept":
                schema = (msg.get("params") or {}).get("requestedSchema") or {}
                props = schema.get("properties") if isinstance(schema, dict) else None
                result = {"action": "accept", "content": {k: _sample_value(v) for k, v in (props or {}).items()}}
            self._tg.start_soon(self._respond, msg["id"], result, None)
        else:
            self._tg.start_soon(self._respond, msg["id"], None,
                                {"code": -32601, "message": f"Method not found: {method}"})

    def _scripted(self, key: str, default: str) -> str:
        """The next answer of a scenario's ``options.<key>`` list (the last one repeats), else default."""
        answers = self.scenario.options.get(key)
        if not isinstance(answers, list) or not answers:
            return default
        n = self._answered.get(key, 0)
        self._answered[key] = n + 1
        return str(answers[min(n, len(answers) - 1)])

    async def _respond(self, id: Any, result: Any, error: Any) -> None:
        if self.peer is not None:
            try:
                await self.peer.respond(id, result, error)
            except TargetClosed:
                pass

    # -- running ------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    with anyio.move_on_after(self.settings.test_timeout) as scope:
                        started, self._started = self._started, None
                        await self.connect(started=started)
                        for step in self.scenario.steps:
                            await self.step(step)
                    if scope.cancelled_caught:
                        self.transcript.event(EV_TIMEOUT, what="test", seconds=self.settings.test_timeout)
                        self.result.error = (f"the scenario did not finish within the test timeout "
                                             f"({self.settings.test_timeout:g} s, --acp-test-timeout)")
                except ScenarioSkip as e:
                    self.result.skipped = str(e)
                except AuthBlocked as e:
                    self.result.error = self.result.auth_blocked = str(e)
                except ScenarioAbort as e:
                    self.result.error = str(e)
                    self._blocked_by_auth()
                except (WaitTimeout, TargetGone, TargetClosed) as e:
                    self.transcript.event(EV_TIMEOUT if isinstance(e, WaitTimeout) else EV_NOTE, what=str(e))
                    self.result.error = str(e)
                    if self.result.error_kind is None and isinstance(e, WaitTimeout):
                        self.result.error_kind = "timeout"
                    self._blocked_by_auth()
                except HarnessError as e:
                    self.result.harness_error = str(e)
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.disconnect()
                    tg.cancel_scope.cancel()
        except Exception as e:  # pragma: no cover - report, never lose the run
            if self.result.error is None and self.result.harness_error is None:
                self.result.harness_error = f"internal error in the suite: {e!r}"
        return self.result

    async def step(self, step: Step) -> None:
        handler = getattr(self, "_step_" + step.kind)
        args = step.args
        if "if_saved" in args:
            name = str(args["if_saved"]).lstrip("$")
            if self.vars.get(name) is None:
                self.transcript.event(EV_NOTE, text=f"{step.describe()} left out: ${name} was not saved")
                return
            args = {k: v for k, v in args.items() if k != "if_saved"}
        if self.peer is None and step.kind != "restart":
            raise ScenarioAbort(f"{step.describe()}: the target is not connected")
        await handler(self.resolve(args), step)

    def _timeout(self, override: Any = None) -> float:
        if override is not None:
            return float(override)
        if self._first_response_pending:
            return max(self.settings.startup_timeout, self.settings.timeout)
        return self.settings.timeout

    async def _send_request(self, method: str, params: Any, id: Any = None) -> Pending:
        msg = {"jsonrpc": "2.0", "id": 0, "method": method, "params": params}
        if self.settings.validate_sent is not None:
            problem = self.settings.validate_sent(msg)
            if problem:
                raise HarnessError(f"the suite built an invalid {method} request: {problem}")
        p = await self.peer.request(method, params, id=id)
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(sid, str):
            self.last_sent[sid] = p.frame.seq
        return p

    async def _await(self, p: Pending, timeout: Any = None) -> Pending:
        await self.peer.await_response(p, self._timeout(timeout))
        self._first_response_pending = False
        return p

    def _save(self, args: dict[str, Any], value: Any) -> None:
        if args.get("save"):
            self.vars[str(args["save"])] = value

    # -- steps --------------------------------------------------------------------------------
    async def _step_initialize(self, a: dict[str, Any], step: Step) -> None:
        params = dict(a.get("params") or {})
        params.setdefault("protocolVersion", a.get("protocolVersion", 2))
        params.setdefault("capabilities", a.get("capabilities", {}))
        params.setdefault("info", a.get("info", SUITE_INFO))
        p = await self._send_request("initialize", params)
        if a.get("wait") is False:
            self._save(a, p)
            return
        await self._await(p)
        self._save(a, p)
        expect = a.get("expect", "ok")
        if p.error is not None:
            if expect == "ok":
                raise ScenarioAbort(f"{step.describe()}: initialize failed: {_short(p.error)}; "
                                    "the scenario needs an initialized connection")
            return
        if isinstance(p.result, dict):
            v, asked = p.result.get("protocolVersion"), params.get("protocolVersion")
            if _version(asked) is not None and asked >= 2 and _version(v) is not None and v < 2:
                # an agent of an older protocol: what follows is v2 traffic it cannot serve (and would
                # only time out on); the plugin reports the version as the run's verdict
                raise ScenarioAbort(f"initialize negotiated protocol version {v}; the scenario needs version 2")
            self.result.agent_init = p.result
            self.vars["agent"] = p.result
            self._check_requires()
            if self.settings.auth_method:  # --acp-auth-method: log in before any session/new
                login = await self._await(await self._send_request("auth/login",
                                                                   {"methodId": self.settings.auth_method}))
                if login.error is not None:
                    raise AuthBlocked(f"blocked by authentication: auth/login with methodId "
                                      f"{self.settings.auth_method!r} failed: {_short(login.error)}; "
                                      f"{self._auth_offer()}")

    def _blocked_by_auth(self) -> None:
        """The scenario could not go on after the agent answered auth_required (-32000): to a request, or as
        the error of a turn that ended (a released agent checks its credentials at the first prompt)."""
        for f in self.transcript.frames:
            m = f.msg if f.direction == "received" and isinstance(f.msg, dict) else None
            if m is None:
                continue
            err = m.get("error")
            if "method" not in m and isinstance(err, dict) and err.get("code") == AUTH_REQUIRED:
                what = f"a request was answered auth_required (-32000) (frame #{f.seq})"
            else:
                u = (m.get("params") or {}).get("update") if m.get("method") == "session/update" else None
                err = u.get("error") if isinstance(u, dict) else None
                if not (isinstance(err, dict) and err.get("code") == AUTH_REQUIRED):
                    continue
                what = f"a turn ended with error auth_required (-32000) (frame #{f.seq})"
            how = (f" after auth/login with methodId {self.settings.auth_method!r}" if self.settings.auth_method
                   else "")
            self.result.auth_blocked = f"blocked by authentication: {what}{how}; {self._auth_offer()}"
            return

    def _auth_offer(self) -> str:
        """The authMethods of the initialize result, as the user needs them to pick --acp-auth-method."""
        methods = (self.result.agent_init or {}).get("authMethods")
        offered = []
        for m in methods if isinstance(methods, list) else []:
            if isinstance(m, dict):
                mid = m.get("methodId", m.get("id"))
                offered.append(f"{mid} ({m['type']})" if isinstance(m.get("type"), str) else str(mid))
        if not offered:
            return "the agent offers no authMethods in its initialize result"
        return f"the agent offers {', '.join(offered)}: give one with --acp-auth-method ID"

    def _check_requires(self) -> None:
        caps = (self.result.agent_init or {}).get("capabilities") or {}
        for path in self.scenario.requires:
            node: Any = caps
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if path.startswith("result."):  # a member of the initialize result: a non-empty list or object
                node = self.result.agent_init or {}
                for part in path.split(".")[1:]:
                    node = node.get(part) if isinstance(node, dict) else None
                if not node or not isinstance(node, (list, dict)):
                    raise ScenarioSkip(f"the agent's initialize result has no {path[7:]}")
                continue
            if not isinstance(node, dict):
                raise ScenarioSkip(f"the agent does not advertise capabilities.{path}")

    async def _step_new_session(self, a: dict[str, Any], step: Step) -> None:
        params = dict(a.get("params") or {})
        params.setdefault("cwd", a.get("cwd") or str(self.workdir))
        if a.get("mkdir"):  # the session's directory must exist (a subdirectory of the test's own)
            Path(params["cwd"]).mkdir(parents=True, exist_ok=True)
        p = await self._await(await self._send_request("session/new", params))
        if p.error is not None or not isinstance(p.result, dict) or not isinstance(p.result.get("sessionId"), str):
            if a.get("expect") == "any":
                return
            if isinstance(p.error, dict) and p.error.get("code") == AUTH_REQUIRED and not self.settings.auth_method:
                raise AuthBlocked(f"blocked by authentication: session/new was answered auth_required (-32000); "
                                  f"{self._auth_offer()}")
            raise ScenarioAbort(f"{step.describe()}: session/new did not create a session: "
                                f"{_short(p.error if p.error is not None else p.result)}")
        sid = p.result["sessionId"]
        self.sessions[sid] = {"cwd": params["cwd"], "config": p.result.get("configOptions")}
        self._save(a, sid)

    def _prompt_blocks(self, a: dict[str, Any]) -> list[Any]:
        if "blocks" in a:
            return a["blocks"]
        text = a.get("text")
        if text is None:
            text = self.settings.prompts.get("simple", "Say hello")
        return [{"type": "text", "text": _text(text)}]

    async def _step_prompt(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        params = {"sessionId": sid, "prompt": self._prompt_blocks(a)}
        if a.get("key") is not None:  # idempotencyKey: the same on every attempt of one submission
            params["idempotencyKey"] = _text(a["key"])
        p = await self._send_request("session/prompt", params)
        self._save(a, p)
        wait = a.get("wait", "idle")
        if wait in ("none", False):
            return
        await self._await(p)
        if wait == "idle" and p.error is None:
            await self._wait_idle(sid, since=p.frame.seq, what=f"the idle state_update ending the work of "
                                                                 f"session/prompt #{p.frame.seq}")

    async def _wait_idle(self, sid: Any, since: int, what: str, timeout: Any = None) -> Frame:
        """The idle after ``since``; when the session owes none (see _IdleOwed), the wait ends at once, or as soon
        as the last thing it owed is settled without one (a prompt answered with an error), with WaitTimeout."""
        frames = self.transcript.frames
        wanted = lambda f: _is_update(f, sid, "state_update", "idle")  # noqa: E731
        if not _IdleOwed(sid, frames).owed() and not any(f.seq > since and wanted(f) for f in frames[since:]):
            self._no_idle_owed(what, since)
        owed = _IdleOwed(sid, frames)  # read along with the wait, frame by frame: what was owed at each
        f = await self.peer.wait_for(lambda f: wanted(f) or not owed.owed(f.seq), self._timeout(timeout), what,
                                     since=since)
        if not wanted(f):
            self._no_idle_owed(what, since)
        return f

    def _no_idle_owed(self, what: str, since: int) -> None:
        why = (f"{what} will not come: none is owed (every turn of the session had ended and no prompt was "
               f"pending after frame #{since})")
        raise WaitTimeout(why)

    async def _step_await(self, a: dict[str, Any], step: Step) -> None:
        try:
            if "response" in a:
                p = a["response"]
                if not isinstance(p, Pending):
                    raise HarnessError(f"{step.describe()}: 'response' must name a saved request")
                await self._await(p, a.get("timeout"))
            elif "idle" in a:
                sid = a["idle"]
                since = self.last_sent.get(sid, 0)
                if "after" in a:  # the idle ending the turn of a prompt held behind another turn
                    p = a["after"]
                    if not isinstance(p, Pending):
                        raise HarnessError(f"{step.describe()}: 'after' must name a saved request")
                    await self._await(p, a.get("timeout"))
                    since = p.response.seq if p.response is not None else p.frame.seq
                await self._wait_idle(sid, since, f"an idle state_update for {sid}", a.get("timeout"))
            elif "permission" in a:  # a session/request_permission from the target for this session
                sid = a["permission"]
                since = self.last_sent.get(sid, 0)
                ended = _turn_ended(sid, since)
                what = f"a session/request_permission for {sid}"
                f = await self.peer.wait_for(lambda f: _is_permission_request(f, sid) or ended(f),
                                             self._timeout(a.get("timeout")), what, since=since)
                if not _is_permission_request(f, sid):
                    self.transcript.event(EV_NOTE, text=f"the turn ended (idle at t={f.t:.2f}) without {what}")
                    raise WaitTimeout(f"{what} did not arrive: the turn ended without it (idle at t={f.t:.2f})")
                self._save(a, f.msg)
            elif "update" in a:
                u = a["update"] or {}
                sid = u.get("session")
                kind = u.get("kind")
                state = u.get("state")
                what = (f"a {kind or 'session'} update"
                        + (f" ({' or '.join(state) if isinstance(state, list) else state})" if state else "")
                        + f" for {sid}")
                since = self.last_sent.get(sid, 0)
                wanted = lambda f: _is_update(f, sid, kind, state)  # noqa: E731
                if kind in TARGET_UPDATE_KINDS or state == "requires_action":
                    # only the target decides to send it: once its turn has ended without it, it will not come,
                    # so the wait ends there instead of at the timeout
                    ended = _turn_ended(sid, since)
                    f = await self.peer.wait_for(lambda f: wanted(f) or ended(f), self._timeout(a.get("timeout")),
                                                 what, since=since)
                    if not wanted(f):
                        self.transcript.event(EV_NOTE, text=f"the turn ended (idle at t={f.t:.2f}) without {what}")
                        raise WaitTimeout(f"{what} did not arrive: the turn ended without it (idle at t={f.t:.2f})")
                else:
                    f = await self.peer.wait_for(wanted, self._timeout(a.get("timeout")), what, since=since)
                self._save(a, f.msg if isinstance(f, Frame) else None)  # $u.params.update.toolCallId ...
            else:
                raise HarnessError(f"{step.describe()}: await needs response, idle or update")
        except WaitTimeout as e:
            if a.get("optional"):
                self.transcript.event(EV_NOTE, text=f"optional wait ended: {e}")
                return
            u = a.get("update") or {}
            if u.get("kind") in TARGET_UPDATE_KINDS or u.get("state") == "requires_action" or "permission" in a:
                self.result.error_kind = "target-never"  # only the target decides to do this: its right
            raise

    async def _step_cancel(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        f = await self.peer.notify("session/cancel", {"sessionId": sid})
        if isinstance(sid, str):
            self.last_sent[sid] = f.seq

    async def _step_resume(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        params = dict(a.get("params") or {})
        params.setdefault("sessionId", sid)
        params.setdefault("cwd", a.get("cwd") or self.sessions.get(sid, {}).get("cwd") or str(self.workdir))
        if "replay" in a:
            replay = a["replay"]
            if replay is True:
                params["replayFrom"] = {"type": "start"}
            elif replay is not False:
                params["replayFrom"] = replay  # null or a literal cursor
        p = await self._send_request("session/resume", params)
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)
            if p.error is not None and a.get("expect", "any") == "ok":
                if isinstance(p.error, dict) and p.error.get("code") == -32002:
                    # the agent does not keep the session for this form of resume: its right (insertion is no
                    # promise of durable storage); the other forms of resume judge the rules, and a rule no form
                    # reached stays not-tested, its reason listing the forms tried
                    raise ScenarioSkip(f"not exercised: the resume {self._resume_form(sid)} was answered -32002 "
                                       "(session not found): the agent does not keep the session for it")
                raise ScenarioAbort(f"{step.describe()}: session/resume failed: {_short(p.error)}")

    def _resume_form(self, sid: Any) -> str:
        """Which form of resume this is, for the reason a refused one gives."""
        if self.transcript.conn > 0:
            return "in a new agent process"
        if sid in self._closed_here:
            return "on the same connection after session/close"
        return "of a live session on the same connection"

    async def _step_close(self, a: dict[str, Any], step: Step) -> None:
        if isinstance(a.get("session"), str):
            self._closed_here.add(a["session"])
        p = await self._send_request("session/close", {"sessionId": a.get("session")})
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)

    async def _step_request(self, a: dict[str, Any], step: Step) -> None:
        if not isinstance(a.get("method"), str):
            raise HarnessError(f"{step.describe()}: request needs a method")
        p = await self._send_request(a["method"], a.get("params", {}), a.get("id"))
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)
            if a.get("expect") == "ok" and p.error is not None:
                raise ScenarioAbort(f"{step.describe()}: {a['method']} failed: {_short(p.error)}")

    async def _step_notify(self, a: dict[str, Any], step: Step) -> None:
        await self.peer.notify(a["method"], a.get("params"))

    async def _step_raw(self, a: dict[str, Any], step: Step) -> None:
        line = a.get("line")
        if isinstance(a.get("b64"), str):  # bytes that are not UTF-8 (the fuzzer's invalid-encoding cases)
            import base64
            await self.peer.send_raw(base64.b64decode(a["b64"]))
            return
        if not isinstance(line, str):
            raise HarnessError(f"{step.describe()}: raw needs a line (string) or b64 (base64 bytes)")
        await self.peer.send_raw(line.encode("utf-8"))

    async def _step_restart(self, a: dict[str, Any], step: Step) -> None:
        await self.disconnect()
        self.transcript.conn += 1
        # (asked once the old process has exited: a started process that could not run beside it is gone by now)
        started = self.take_started() if self.take_started is not None and not a.get("env") else None
        await self.connect(a.get("env"), started=started)

    async def _step_settle(self, a: dict[str, Any], step: Step) -> None:
        """Wait until the target has been quiet for ``seconds`` (bounded at five times that)."""
        quiet = float(a.get("seconds", 0.3))
        with anyio.move_on_after(quiet * 5):
            while True:
                mark = len(self.transcript.frames)
                try:
                    await self.peer.wait_for(lambda f: True, quiet, "any frame", since=mark)
                except WaitTimeout:
                    return
                except TargetGone:
                    return

    async def _step_set_config(self, a: dict[str, Any], step: Step) -> None:
        """session/set_config_option on the first advertised option of kind ``pick`` (select | boolean).

        ``to``: ``other`` (a different valid value), ``current`` (its current value), or a deliberately
        wrong request: ``unknown_id``, ``bad_value``, ``custom_type``, ``wrong_type``. No such option:
        the step does nothing (the config monitors then report the rule untested or skipped)."""
        sid = a.get("session")
        opts = (self.sessions.get(sid) or {}).get("config")
        kind = a.get("pick", "select")
        opt = next((o for o in opts or [] if isinstance(o, dict) and o.get("type") == kind
                    and isinstance(o.get("configId"), str)), None)
        if opt is None:
            return
        cur, to = opt.get("currentValue"), a.get("to", "other")
        values = [v.get("value") for v in _select_values(opt)] if kind == "select" else [True, False]
        vtype = "id" if kind == "select" else "boolean"
        params: dict[str, Any] = {"sessionId": sid, "configId": opt["configId"], "type": vtype}
        if to == "other":
            other = [v for v in values if v != cur]
            if not other:
                return
            params["value"] = other[0]
        elif to == "current":
            params["value"] = cur
        elif to == "unknown_id":
            params.update(configId="__conformance_unknown__", value=cur)
        elif to == "bad_value":
            params["value"] = "__conformance_bad_value__" if kind == "select" else "yes"
        elif to == "custom_type":
            params.update(type="_conformance/custom", value={})
        elif to == "wrong_type":
            params.update(type="boolean" if kind == "select" else "id", value=True if kind == "select" else "x")
        else:
            raise HarnessError(f"{step.describe()}: unknown set_config target {to!r}")
        if to in ("other", "current"):
            p = await self._await(await self._send_request("session/set_config_option", params))
        else:  # deliberately wrong: not checked against the schema
            p = await self._await(await self.peer.request("session/set_config_option", params))
        self._save(a, p)
        if p.error is None and isinstance(p.result, dict) and isinstance(p.result.get("configOptions"), list):
            self.sessions[sid]["config"] = p.result["configOptions"]

    async def _step_answer_held(self, a: dict[str, Any], step: Step) -> None:
        """Answer the permission requests held so far (of ``session``, else all) with ``with`` (default allow):
        a late answer, e.g. after the work that asked was cancelled. None held: the agent never asked, which
        is its right, so the scenario was not exercised."""
        sid = a.get("session")
        mine = [m for m in self._held if sid is None or (m.get("params") or {}).get("sessionId") == sid]
        if not mine:
            raise ScenarioSkip(f"{NOT_EXERCISED_SKIP}the agent asked no permission that the suite held, so there "
                               "was nothing to answer late")
        self._held = [m for m in self._held if m not in mine]
        for m in mine:
            await self._respond(m["id"], {"outcome": _permission_outcome(m, str(a.get("with", "allow")))}, None)

    async def _step_note(self, a: dict[str, Any], step: Step) -> None:
        self.transcript.event(EV_NOTE, text=str(a.get("text", "")))


# permission answers besides allow / reject / cancelled / hold (scenario options.permission_answers)
_ODD_PERMISSION_ANSWERS: dict[str, dict[str, Any]] = {
    "not_offered": {"result": {"outcome": {"outcome": "selected", "optionId": "__conformance_not_offered__"}}},
    "unknown": {"result": {"outcome": {"outcome": "_conformance/maybe"}}},
    "approved": {"result": {"outcome": {"outcome": "approved"}}},
    "error": {"error": {"code": -32603, "message": "Internal error"}},
}
# elicitation answers (scenario options.elicitation_answers); "accept" fills the requested schema
_ELICITATION_ANSWERS: dict[str, dict[str, Any]] = {
    "decline": {"action": "decline"},
    "cancel": {"action": "cancel"},
    "custom": {"action": "_conformance/custom"},
    "decline_content": {"action": "decline", "content": {"x": 1}},
}


def _permission_outcome(msg: dict[str, Any], answer: str) -> dict[str, Any]:
    """The outcome answering permission request ``msg`` with ``allow`` / ``reject`` (the first option of that
    kind; none offered: cancelled) or ``cancelled``."""
    options = (msg.get("params") or {}).get("options") or []
    if answer in ("allow", "reject"):
        chosen = next((o for o in options if isinstance(o, dict) and str(o.get("kind", "")).startswith(answer)), None)
        if chosen is not None:
            return {"outcome": "selected", "optionId": chosen.get("optionId")}
    return {"outcome": "cancelled"}


def _is_permission_request(f: Frame, sid: Any) -> bool:
    m = f.msg
    return (f.direction == RECEIVED and isinstance(m, dict) and m.get("method") == "session/request_permission"
            and "id" in m and isinstance(m.get("params"), dict) and m["params"].get("sessionId") == sid)


def _sample_value(prop: Any) -> Any:
    t = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(prop, dict) and isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    return {"number": 1, "integer": 1, "boolean": True}.get(t, "conformance")


def _turn_ended(sid: Any, since: int) -> Callable[[Frame], bool]:
    """A predicate over the frames after ``since``: the idle that ends a turn of ``sid``. An idle counts when it
    carries a stopReason or follows a running / requires_action of this turn (a bare idle snapshot before any
    work is not an end: repeated snapshots are idempotent)."""
    worked = False

    def ended(f: Frame) -> bool:
        nonlocal worked
        if f.seq <= since:
            return False
        if _is_update(f, sid, "state_update", ["running", "requires_action"]):
            worked = True
            return False
        if _is_update(f, sid, "state_update", "idle"):
            return worked or "stopReason" in f.msg["params"]["update"]
        return False
    return ended


class _IdleOwed:
    """Whether the target still owes an idle for session ``sid``, read from the frames so far: it does while a
    session/prompt for it is unanswered, or a prompt it accepted has no idle after the answer, or its last
    state_update is running / requires_action (an agent that ends a turn before answering its prompt is waited
    for as before: to the timeout). When it owes none (every turn has ended, nothing is
    held), an await of its idle has nothing to wait for: a session/cancel of an idle session, a prompt refused
    with an error, a turn that ended before the cancel reached it."""

    def __init__(self, sid: Any, frames: list[Frame]):
        self.sid, self.frames = sid, frames
        self.pos = 0
        self.conn: int | None = None
        self.pending: set[str] = set()  # ids of unanswered session/prompt requests for sid, on this connection
        self.accepted = -1  # seq of the last answer (a result) to a session/prompt for sid
        self.idle = -1  # seq of the last idle for sid
        self.busy = False  # the last state_update for sid was running or requires_action

    def owed(self, upto: int | None = None) -> bool:
        """Reads the frames up to seq ``upto`` (all of them: None) not read yet; then the answer."""
        end = len(self.frames) if upto is None else min(upto + 1, len(self.frames))
        while self.pos < end:
            self._read(self.frames[self.pos])
            self.pos += 1
        return bool(self.pending) or self.busy or self.accepted > self.idle

    def _read(self, f: Frame) -> None:
        m = f.msg
        if not isinstance(m, dict):
            return
        if f.conn != self.conn:  # a new process: what the old one owed died with it
            self.conn, self.pending, self.accepted, self.busy = f.conn, set(), -1, False
        if f.direction == SENT:
            params = m.get("params")
            if (m.get("method") == "session/prompt" and "id" in m and isinstance(params, dict)
                    and params.get("sessionId") == self.sid):
                self.pending.add(json.dumps(m["id"]))
            return
        if f.direction != RECEIVED:
            return
        if "method" not in m and "id" in m:
            key = json.dumps(m["id"])
            if key in self.pending:
                self.pending.discard(key)
                if "result" in m:  # its turn ends with an idle after this answer (a prompt held behind
                    # another turn is answered when its own starts, after the idle of the one before)
                    self.accepted = f.seq
        elif _is_update(f, self.sid, "state_update", None):
            state = m["params"]["update"].get("state")
            self.busy = state in ("running", "requires_action")
            if state == "idle":
                self.idle = f.seq


def _is_update(f: Frame, sid: Any, kind: str | None, state: str | None) -> bool:
    m = f.msg
    if f.direction != RECEIVED or not isinstance(m, dict) or m.get("method") != "session/update":
        return False
    params = m.get("params")
    if not isinstance(params, dict) or (sid is not None and params.get("sessionId") != sid):
        return False
    u = params.get("update")
    if not isinstance(u, dict):
        return False
    if kind is not None and u.get("sessionUpdate") != kind:
        return False
    return state is None or (u.get("state") in state if isinstance(state, list) else u.get("state") == state)


def _select_values(opt: dict[str, Any]) -> list[dict[str, Any]]:
    """The values of a select option, flattened over groups."""
    out = []
    for o in opt.get("options") or []:
        if isinstance(o, dict) and isinstance(o.get("options"), list):
            out.extend(x for x in o["options"] if isinstance(x, dict))
        elif isinstance(o, dict):
            out.append(o)
    return out


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _short(value: Any, limit: int = 300) -> str:
    s = json.dumps(value, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + "..."


def _version(v: Any) -> int | None:
    """A protocol version: an integer (a bool is not one)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None
