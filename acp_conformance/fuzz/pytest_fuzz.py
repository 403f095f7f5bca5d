"""``pytest --acp-fuzz``: the fuzzer as one more test of the suite (a pytest plugin of its own,
loaded by ``plugin.py`` like ``run_control``).

With ``--agent-cmd`` (or ``--client-cmd``, where client-side fuzzing is installed) and ``--acp-fuzz``,
collection gets one more item, ``acp-fuzz``, which runs the same ``fuzz()`` as
``acp-conformance fuzz`` with ``--acp-fuzz-seed``, ``--acp-fuzz-max-examples``, ``--acp-fuzz-budget``
and ``--acp-fuzz-steps``, against the same command, environment and timeouts as the scenarios.

A finding fails the item, naming the rules and the shrunk scenario written into
``--acp-report-dir`` (``fuzz-counterexample.yaml``, with ``fuzz-report.json``), and the command that
replays it. Its blocking findings travel like those of any scenario test (the plugin's
``acp_findings`` user property), so the rules the fuzzer broke are failed in ``report.json`` with the
counterexample's transcript as their evidence, and the verdict counts them. A run with no finding
adds no finding: the fuzzer's passing judgements are not evidence of coverage (the scenarios bind
the rules), so a rule the scenarios leave untested stays untested.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .options import read_options

FUZZ_ITEM = "acp-fuzz"


def _state(config: pytest.Config):
    from ..plugin import STATE
    return config.stash.get(STATE, None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    try:
        opts = read_options(config)
        if opts is not None and state.side == "client":
            _client_fuzzer(state)  # a usage error now, not after the scenarios ran
    except (ValueError, _Unavailable) as e:
        pytest.exit(f"acp-conformance: {e}", returncode=2)
    state.fuzz_options = opts


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    state = _state(config)
    if state is None or getattr(state, "fuzz_options", None) is None:
        return
    items.append(FuzzItem.from_parent(session, name=FUZZ_ITEM, nodeid=FUZZ_ITEM))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # on the controller (also under xdist): keep the fuzzer's summary for the terminal
    if report.when == "call" and report.nodeid == FUZZ_ITEM:
        for key, value in report.user_properties:
            if key == SUMMARY_KEY:
                _SUMMARY[:] = value.splitlines()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if _SUMMARY:
        terminalreporter.section("ACP fuzz")
        for line in _SUMMARY:
            terminalreporter.line(line)


SUMMARY_KEY = "acp_fuzz"
_SUMMARY: list[str] = []


class _Unavailable(Exception):
    pass


def _client_fuzzer(state):
    from .client_entry import ClientFuzzUnavailable, client_fuzzer
    s = state.settings
    try:
        return client_fuzzer(s["argv"], env=s["env"], cwd=s["cwd"], timeout=s["timeout"],
                             startup_timeout=s["startup_timeout"], strict=s["strict"])
    except ClientFuzzUnavailable as e:
        raise _Unavailable(f"--acp-fuzz with --client-cmd: {e}") from None


class FuzzFinding(Exception):
    """The fuzzer found something: the message is the readable account."""


class FuzzItem(pytest.Item):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.user_properties.append(("rules", ""))
        self.user_properties.append(("scenario", FUZZ_ITEM))

    def reportinfo(self):
        return self.path, None, FUZZ_ITEM

    def runtest(self) -> None:
        from ..plugin import FINDINGS_KEY, META_KEY
        from .explain import fuzz_summary
        state = _state(self.config)
        s, opts = state.settings, state.fuzz_options
        report_dir: Path = s["report_dir"]
        kw = dict(seed=opts["seed"], max_examples=opts["max_examples"], budget=opts["budget"],
                  step_count=opts["steps"], report_dir=report_dir)
        if state.side == "client":
            client = _client_fuzzer(state)
            result = client.fuzz(client.config, **kw)
        else:
            from .run import fuzz
            result = fuzz(self._agent_config(state), **kw)
        transcript = self._write_transcript(state, result) if result.transcript else None
        findings = [self._finding_json(f) for f in getattr(result, "findings", [])]
        rules = list(dict.fromkeys(result.rules))
        self.user_properties.append((FINDINGS_KEY, json.dumps(findings)))
        self.user_properties.append((META_KEY, json.dumps({
            "rules": rules, "error": None, "skipped": None, "harness_error": None, "transcript": transcript,
            "agent_init": None, "endings": [], "negotiated_version": None})))
        summary = fuzz_summary(result, state.side, s["argv"])
        self.user_properties.append((SUMMARY_KEY, "\n".join(summary)))
        self.user_properties[:] = [("rules", " ".join(rules)) if k == "rules" else (k, v)
                                   for k, v in self.user_properties]
        if result.failure:  # the finding first (pytest's short summary shows the first line)
            finding = [ln for ln in summary if ln.startswith("FINDING")]
            raise FuzzFinding("\n".join(finding + [ln for ln in summary[1:] if ln not in finding]))

    def _agent_config(self, state):
        from .config import FuzzConfig
        s = state.settings
        schema_opt = self.config.getoption("acp_schema", default=None)
        prompts = {k: v for k, v in s["prompts"].items() if isinstance(v, str)}
        return FuzzConfig(list(s["argv"]), env=dict(s["env"]), timeout=s["timeout"],
                          startup_timeout=s["startup_timeout"], prompts={**FuzzConfig([]).prompts, **prompts},
                          schema_path=str(Path(schema_opt).resolve()) if schema_opt else None, strict=s["strict"])

    def _finding_json(self, f) -> dict[str, Any]:
        d = f.to_json()
        d["test"] = self.nodeid
        return d

    def _write_transcript(self, state, result) -> str:
        from ..report.redact import transcript_jsonl  # secrets masked in the file, as for the scenarios
        d = state.settings["report_dir"] / "transcripts"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{FUZZ_ITEM}.jsonl"
        path.write_text(transcript_jsonl(result.transcript, redact=not state.settings.get("no_redact", False)),
                        encoding="utf-8")
        return str(path)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, FuzzFinding):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)
