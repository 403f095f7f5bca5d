"""The scenario interpreter: drives a target through a scenario's steps, playing the Client.

It only drives; it judges nothing. Every frame goes to the transcript, whose listeners (the
monitors) judge. The runner's own outcome is whether it could finish the steps: a target that
hangs, dies or refuses the setup the scenario needs ends the run with a sentence saying so.

The step handlers live in modules of their own (steps_setup, steps_send, steps_await), as do the answers to
the target's requests (target_requests) and the idle bookkeeping (idle_owed); this module holds the runner's
state, its variables, its connections and the run itself.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any, Callable

import anyio

from ..wire.peer import Peer, Pending, TargetGone, WaitTimeout
from ..wire.transcript import EV_NOTE, EV_TIMEOUT, Frame, Transcript
from ..wire.transport import TargetClosed, TargetError, Transport
from .bounded_run import run_bounded, shut_down
from .model import Scenario, Step
from .run_types import (AUTH_REQUIRED, SUITE_INFO, TARGET_UPDATE_KINDS, AuthBlocked, HarnessError,  # noqa: F401
                        RunResult, RunSettings, ScenarioAbort, ScenarioSkip, TargetSpec)
from .idle_owed import _IdleOwed  # noqa: F401  (re-exported: imported from here)
from .frame_match import _is_permission_request, _is_update, _turn_ended  # noqa: F401
from .steps_await import AwaitSteps
from .steps_fault import FaultSteps
from .steps_send import SendSteps
from .steps_setup import SetupSteps
from .target_requests import TargetRequests, _permission_outcome  # noqa: F401
from .values import _select_values, _short, _text, _version  # noqa: F401

_VAR = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")
_WHOLE = re.compile(r"^\$([A-Za-z_][\w.]*)$")


class Runner(SetupSteps, SendSteps, AwaitSteps, FaultSteps, TargetRequests):
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
            if isinstance(value, Pending) and part == "request_id":  # the id it was sent with ($/cancel_request)
                value = value.id
                continue
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
                self.result.target_gone = True
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
        if not await shut_down(self):
            return
        if self._scope is not None:
            self._scope.cancel()
        self.transport = None
        self.peer = None

    async def _step_restart(self, a: dict[str, Any], step: Step) -> None:
        await self.disconnect()
        self.transcript.conn += 1
        # (asked once the old process has exited: a started process that could not run beside it is gone by now)
        started = self.take_started() if self.take_started is not None and not a.get("env") else None
        await self.connect(a.get("env"), started=started)

    # -- running ------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        async def steps(tg) -> None:
            started, self._started = self._started, None
            await self.connect(started=started)
            for step in self.scenario.steps:
                await self.step(step)
        return await run_bounded(self, steps, "the scenario", self._stopped, self.disconnect)

    def _stopped(self, e: Exception) -> bool:
        """Records why the steps stopped early in the result (False: not an ending the runner knows)."""
        if isinstance(e, ScenarioSkip):
            self.result.skipped = str(e)
        elif isinstance(e, AuthBlocked):
            self.result.error = self.result.auth_blocked = str(e)
        elif isinstance(e, ScenarioAbort):
            self.result.error = str(e)
            self._blocked_by_auth()
        elif isinstance(e, (WaitTimeout, TargetGone, TargetClosed)):
            self.transcript.event(EV_TIMEOUT if isinstance(e, WaitTimeout) else EV_NOTE, what=str(e))
            self.result.error = str(e)
            self.result.target_gone = not isinstance(e, WaitTimeout)
            if self.result.error_kind is None and isinstance(e, WaitTimeout):
                self.result.error_kind = "timeout"
            self._blocked_by_auth()
        elif isinstance(e, HarnessError):
            self.result.harness_error = str(e)
        else:
            return False
        return True

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
        if self.settings.validate_sent is not None and self.settings.protocol == 2:  # our schema is v2's
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
