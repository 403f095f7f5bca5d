"""``pytest --acp-fuzz``: the fuzzer as one more test of the suite (a pytest plugin of its own,
loaded by ``plugin/`` like ``run_control``).

With ``--agent-cmd`` (or ``--client-cmd``, where client-side fuzzing is installed) and ``--acp-fuzz``,
collection gets one more item, ``acp-fuzz``, which runs the same ``fuzz()`` as
``acp-conformance fuzz`` with ``--acp-fuzz-seed``, ``--acp-fuzz-max-examples``, ``--acp-fuzz-budget``
and ``--acp-fuzz-steps``, against the same command, environment and timeouts as the scenarios.

A finding fails the item, naming the rules and the shrunk scenario written into
``--acp-report-dir`` (``fuzz-counterexample.yaml``, with ``fuzz-report.json``), and the command that
replays it. It is judged like any scenario test (``plugin/judging.py``: ``judge_run``), so the rules the fuzzer broke are failed in ``report.json`` with the
counterexample's transcript as their evidence, and the verdict counts them. A run with no finding
adds no finding: the fuzzer's passing judgements are not evidence of coverage (the scenarios bind
the rules), so a rule the scenarios leave untested stays untested.
"""

from __future__ import annotations


import pytest

from ..plugin.judging import RunFacts, judge_run
from ..plugin.outcome import JudgedItem
from ..plugin.state import suite_state

FUZZ_ITEM = "acp-fuzz"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    state = suite_state(config)  # the fuzz options are read with every other option (plugin/options.py)
    if state is None or state.run.fuzz is None or state.side != "client":
        return
    try:
        _client_fuzzer(state)  # a usage error now, not after the scenarios ran
    except _Unavailable as e:
        pytest.exit(f"acp-conformance: {e}", returncode=2)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    state = suite_state(config)
    if state is None or state.run.fuzz is None:
        return
    items.append(FuzzItem.from_parent(session, name=FUZZ_ITEM, nodeid=FUZZ_ITEM))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = suite_state(config)
    lines = state.record.summaries.get(FUZZ_ITEM) if state is not None else None
    if lines:
        terminalreporter.section("ACP fuzz")
        for line in lines:
            terminalreporter.line(line)


class _Unavailable(Exception):
    pass


def _client_fuzzer(state):
    from .client_entry import ClientFuzzUnavailable, client_fuzzer
    r = state.run
    try:
        return client_fuzzer(list(r.argv), env=dict(r.env), cwd=r.cwd, timeout=r.timeout,
                             startup_timeout=r.startup_timeout, strict=r.strict, revision=r.revision,
                             schema_path=r.schema_path)
    except ClientFuzzUnavailable as e:
        raise _Unavailable(f"--acp-fuzz with --client-cmd: {e}") from None


class FuzzItem(JudgedItem):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.user_properties.append(("rules", ""))
        self.user_properties.append(("scenario", FUZZ_ITEM))

    def reportinfo(self):
        return self.path, None, FUZZ_ITEM

    def runtest(self) -> None:
        from .explain import fuzz_summary
        state = suite_state(self.config)
        r, opts = state.run, state.run.fuzz
        kw = dict(seed=opts["seed"], max_examples=opts["max_examples"], budget=opts["budget"],
                  step_count=opts["steps"], report_dir=r.report_dir)
        if state.side == "client":
            client = _client_fuzzer(state)
            result = client.fuzz(client.config, **kw)
        else:
            from .run import fuzz
            result = fuzz(self._agent_config(state), **kw)
        rules = list(dict.fromkeys(result.rules))
        self.user_properties[:] = [("rules", " ".join(rules)) if k == "rules" else (k, v)
                                   for k, v in self.user_properties]
        summary = fuzz_summary(result, state.side, list(r.argv))
        failure = None
        if result.failure:  # the finding first (pytest's short summary shows the first line)
            finding = [ln for ln in summary if ln.startswith("FINDING")]
            failure = "\n".join(finding + [ln for ln in summary[1:] if ln not in finding])
        # its blocking findings (the fuzzer's judge uses the run's policy) feed the verdict like a scenario's
        facts = RunFacts(self.nodeid, rules, list(getattr(result, "findings", [])),
                         transcript=self._write_transcript(state, result) if result.transcript else None,
                         failure=failure, summary=summary)
        self.acp_outcome, decision = judge_run(state, facts)
        decision.enact()

    def _agent_config(self, state):
        from .config import FuzzConfig
        r = state.run
        prompts = {k: v for k, v in r.prompts.items() if isinstance(v, str)}
        return FuzzConfig(list(r.argv), env=dict(r.env), prompts={**FuzzConfig([]).prompts, **prompts},
                          schema_path=r.schema_path, thresholds=r.thresholds, faults=r.faults)

    def _write_transcript(self, state, result) -> str:
        from ..report.transcripts import write_transcript  # secrets masked in the file, as for the scenarios
        return str(write_transcript(state.run.report_dir / "transcripts", FUZZ_ITEM, result.transcript,
                                    redact=not state.run.no_redact))
