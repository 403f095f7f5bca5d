"""Scenario files and scenario tests: a scenario run against the target, its frames judged by the monitors.

The agent side (the suite plays the client: ``Runner``) and the client side (the suite plays the agent:
``ClientRunner``) differ only in how the run is driven; both hand what they saw to ``judge_run``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ..rules.first_contact import is_response
from ..rules.monitor import MonitorContext
from .contact import KEPT_RULES, first_contact, turns_never_end
from .judging import RunFacts, judge_run
from .outcome import JudgedItem, TestOutcome
from .state import STATE, SuiteState


class ScenarioFile(pytest.File):
    def collect(self):
        from ..scenarios.model import ScenarioFileError, load_file
        state = self.config.stash[STATE]
        if state.side == "client":
            from ..scenarios.client_model import load_client_file as load_file  # the scripted-agent format
        try:
            scenarios = load_file(self.path, set(state.catalog))
        except ScenarioFileError as e:
            raise self.CollectError(str(e)) from None
        for scn in scenarios:
            item = ScenarioItem.from_parent(self, name=scn.name, scenario=scn)
            item.add_marker(pytest.mark.acp_rules(*scn.rules))
            yield item

    class CollectError(Exception):
        pass


class ScenarioItem(JudgedItem):
    def __init__(self, *, scenario, **kw):
        super().__init__(**kw)
        self.scenario = scenario
        self.user_properties.append(("rules", " ".join(scenario.rules)))
        self.user_properties.append(("scenario", scenario.name))

    def reportinfo(self):
        return self.path, None, f"{self.scenario.name} [{' '.join(self.scenario.rules)}]"

    def runtest(self) -> None:
        from ..early_stop import stopped
        state: SuiteState = self.config.stash[STATE]
        why = stopped(state.run.report_dir)
        if why is not None:  # the target is not one the suite can judge: the rest of the run is not run
            reason = f"not run: {why['sentence']}"
            self.acp_outcome = TestOutcome(rules=list(self.scenario.rules), skipped=reason, stopped=True)
            pytest.skip(reason)
        if self.fault_off(state):  # collected, so that its rules are not-exercised (not not-tested), never run
            from ..rules.verdicts import NOT_EXERCISED_SKIP
            from ..scenarios.run_types import RunResult
            from ..wire.transcript import EV_NOTE, Transcript
            reason = f"{NOT_EXERCISED_SKIP}a fault scenario (docs/faults.md): it runs with --acp-faults"
            result = RunResult(Transcript())
            result.transcript.event(EV_NOTE, text=reason)  # its transcript says why nothing ran
            self.acp_outcome = TestOutcome(rules=list(self.scenario.rules), skipped=reason,
                                           transcript=self._write_transcript(state, result))
            pytest.skip(reason)
        if state.validator is None:  # compiled once per process, reused by every test
            from ..protocol.validate import Validator
            state.validator = Validator(state.run.schema)
        facts = self._run_client(state) if state.side == "client" else self._run_agent(state)
        self.acp_outcome, decision = judge_run(state, facts)
        decision.enact()

    def _context(self, state: SuiteState, monitors) -> MonitorContext:
        ctx = MonitorContext(target_side=state.side, protocol=state.run.protocol, options={**state.run.monitor_options, **self.scenario.options,
                                                              "validator": state.validator})
        ctx.add_monitors(monitors)
        return ctx

    def _run_settings(self, state: SuiteState, **extra: Any):
        from ..scenarios.runner import RunSettings
        r = state.run
        return RunSettings(timeout=r.timeout, startup_timeout=r.startup_timeout, test_timeout=r.test_timeout,
                           prompts=dict(r.prompts), protocol=r.protocol, **extra)

    def _run_agent(self, state: SuiteState) -> RunFacts:
        """The suite plays the client: the scenario drives the agent, the agent monitors judge."""
        ahead = state.run_ahead
        if ahead is not None and ahead.on:  # the next tests' drives run beside this one (run_ahead.py)
            drive = ahead.drive(self.nodeid, lambda: self._agent_drive(state), self._upcoming(state))
            how = (f", ahead {drive.seconds - drive.waited:.2f} s" if drive.ahead else
                   f", driven again alone ({drive.why})" if drive.again else "")
            self.user_properties.append(("drive", f"{drive.seconds:.2f} s{how}"))  # its own time, beside pytest's
        else:  # its spare is this test's process, started during the last one (prestart.py)
            spare = state.test_loop.take(list(state.run.argv), dict(state.run.env), wanted=self._may_prestart())
            drive = self._agent_drive(state, spare)
        try:
            if drive.result is None:
                drive.result = state.test_loop.run(drive.body)
            ctx, result = drive.data, drive.result
            ctx.finish()
        finally:
            drive.cleanup()
        if result.auth_blocked:  # what came before is judged; the rest of the scenario is skipped, not failed
            result.skipped, result.error = result.auth_blocked, None
        contact = first_contact(state, ctx.frames, result)
        if contact is None:
            turns_never_end(state, ctx.frames, self.nodeid, state.run.timeout)
        findings = ctx.findings
        if contact is not None:  # not an ACP program, a v1 agent, ids never sent: judging v2 rules on it is noise
            findings = [f for f in findings if f.rule in KEPT_RULES.get(contact.kind, ())]
        return self._facts(state, findings, result, ctx, contact, target_may_decline=True,
                           driven_again=drive.driven_again)

    def fault_off(self, state: SuiteState) -> bool:
        """A fault scenario in a run without --acp-faults: skipped at once, before any process starts."""
        return state.side == "agent" and getattr(self.scenario, "faulty", False) and not state.run.faults

    def _may_prestart(self) -> bool:
        if getattr(self.scenario, "faulty", False):  # no spare wasted on a skipped one
            return bool(self.config.stash[STATE].run.faults)
        return self.scenario.options.get("prestart", True) is not False

    def runs_alone(self) -> bool:
        """Nothing runs beside this scenario: it must see its target start with it, or its verdict hangs on timing.
        A fault scenario runs alone too (a pause, a kill, a half-close must not share the machine's timing)."""
        return (not self._may_prestart() or self.scenario.options.get("run_ahead", True) is False
                or getattr(self.scenario, "faulty", False))

    def ahead_rank(self) -> int:
        """Its rank when running ahead reorders the tests (run_ahead.order_for_running_ahead): alone, long, the rest."""
        from ..scenarios.run_ahead import ALONE, ANY, LONG
        return ALONE if self.runs_alone() else LONG if self.scenario.long_turn else ANY

    def _upcoming(self, state: SuiteState):
        """The tests known to come next that may run beside this one (run_ahead.py), cut before one that runs alone."""
        if self.runs_alone():
            return []
        if hasattr(self.config, "workerinput"):  # an xdist worker knows its next test and its queue
            from .xdist_queue import queued_items
            nxt = state.run_ahead.nextitem
            following = [nxt, *queued_items(self.config, self.session)] if nxt is not None else []
        else:
            from ..scenarios.run_ahead import AHEAD_LIMIT
            items = self.session.items
            try:
                i = items.index(self)
            except ValueError:
                return []
            following = items[i + 1:i + 1 + AHEAD_LIMIT]
        out = []
        for item in following:
            if not isinstance(item, ScenarioItem) or item.runs_alone():
                break
            out.append((item.nodeid, lambda item=item: item._agent_drive(state)))
        return out

    def _agent_drive(self, state: SuiteState, spare=None):
        """This scenario's run against a target of its own (``spare``'s, or one it starts), its monitors fed as
        the frames come; judged by _run_agent."""
        from ..rules.monitors import ALL_MONITORS
        from ..scenarios.run_ahead import Drive
        from ..scenarios.runner import Runner, TargetSpec
        r = state.run
        ctx = self._context(state, ALL_MONITORS)
        validator = state.validator

        def validate_sent(msg: dict[str, Any]) -> str | None:
            v = validator.check_message(msg)
            return str(v) if v else None

        settings = self._run_settings(state, validate_sent=validate_sent, auth_method=r.auth_method)
        tmp = None if r.cwd else str(spare.workdir) if spare else tempfile.mkdtemp(prefix="acp-conformance-")
        answered = asyncio.Event()

        def answers(frame) -> None:  # the target started and answered a request: running ahead may begin
            if not answered.is_set() and frame.direction == "received" and is_response(frame.msg):
                answered.set()

        runner = Runner(self.scenario, TargetSpec(list(r.argv), dict(r.env)), settings, Path(r.cwd or tmp),
                        listeners=[ctx.feed, answers], started=spare.transport if spare else None)
        return Drive(runner.run, lambda: tmp and shutil.rmtree(tmp, ignore_errors=True), ctx, answered=answered)

    def _run_client(self, state: SuiteState) -> RunFacts:
        """The suite plays the agent: the scripted agent reacts to the client, the client monitors judge."""
        import anyio

        from ..rules.monitors import CLIENT_MONITORS
        from ..scenarios.client_runner import ClientRunner
        from ..scenarios.runner import TargetSpec
        r = state.run
        ctx = self._context(state, CLIENT_MONITORS)
        tmp = None if r.cwd else tempfile.mkdtemp(prefix="acp-conformance-")
        sock_dir = tempfile.mkdtemp(prefix="acp-sock-")  # short: a Unix socket path has ~100 bytes
        try:
            runner = ClientRunner(self.scenario, TargetSpec(list(r.template), dict(r.env), list(r.extra_args)),
                                  self._run_settings(state), Path(r.cwd or tmp), Path(sock_dir),
                                  listeners=[ctx.feed])
            result = anyio.run(runner.run)
            ctx.finish()
        finally:
            for d in (tmp, sock_dir):
                if d:
                    shutil.rmtree(d, ignore_errors=True)
        # a both-side monitor also speaks of agent-only rules; only the client's rules are judged here
        findings = [f for f in ctx.findings if f.rule in state.catalog
                    and state.catalog[f.rule].side in ("client", "both")]
        contact = first_contact(state, ctx.frames, result, client=True)
        if contact is not None:  # a v1 client: judging v2 rules on it is only noise
            findings = []
        return self._facts(state, findings, result, ctx, contact)

    def _facts(self, state: SuiteState, findings, result, ctx: MonitorContext, contact, **kw) -> RunFacts:
        if not state.run.no_redact:  # masked before the transcript and the failure text quote them
            from ..report.redact import redact_outcome
            redact_outcome(findings, result, result.transcript.frames)
        return RunFacts(self.nodeid, list(self.scenario.rules), findings, result, ctx.frames,
                        self._write_transcript(state, result), contact, **kw)

    def _write_transcript(self, state: SuiteState, result) -> str:
        from ..report.transcripts import write_transcript  # secrets are masked in the file, never for monitors
        stderr = "\n--- next connection ---\n".join(result.stderr) if any(result.stderr) else None
        return str(write_transcript(state.run.report_dir / "transcripts", self.nodeid.split("/")[-1],
                                    result.transcript.frames, redact=not state.run.no_redact, stderr=stderr))
