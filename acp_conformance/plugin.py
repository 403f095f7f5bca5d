"""The pytest plugin: options, collection of the bundled scenarios, running them, the verdict.

Loaded through the ``pytest11`` entry point wherever the package is installed. It does nothing
unless ``--agent-cmd`` is given; then it runs the bundled conformance suite, and only it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from .rules.catalog import load_catalog, load_not_observable
from .rules.findings import FAIL, WARN, Finding
from .rules.monitor import MonitorContext
from .rules.first_contact import NOT_V2
from .wire.transcript import Frame

# timeouts, the run's budget and reruns live in a plugin of their own, and so does --acp-fuzz
pytest_plugins = ["acp_conformance.run_control", "acp_conformance.fuzz.pytest_fuzz"]

FINDINGS_KEY = "acp_findings"
META_KEY = "acp_meta"
# the one negotiation rule that applies whatever version the agent speaks: it never answers above the request
V1_KEEP = ("INIT-002",)
NOT_V2_EXIT = 6  # the target speaks another protocol version: not judged (README, "Exit status")


def _negotiated_v1(frames: list[Frame]) -> Frame | None:
    """The response frame when an initialize of the test asked for 2 (or later) and got protocolVersion 1."""
    asked = {}
    for f in frames:
        m = f.msg
        if not isinstance(m, dict) or isinstance(m.get("id"), (dict, list)):
            continue
        key = (f.conn, type(m.get("id")).__name__, m.get("id"))
        if f.direction == "sent" and m.get("method") == "initialize" and isinstance(m.get("params"), dict):
            v = m["params"].get("protocolVersion")
            if isinstance(v, int) and not isinstance(v, bool) and v >= 2:
                asked[key] = f
        elif f.direction == "received" and "method" not in m and key in asked:
            del asked[key]
            res = m.get("result")
            if isinstance(res, dict) and res.get("protocolVersion") == 1:
                return f
    return None


DEFAULT_PROMPTS = {
    "simple": "Say hello",
    "long": "Count slowly to 500, one number per line.",
    "tool": "Use a tool to read the file notes.txt",
    "permission": "Delete the build directory; ask my permission first.",
    "cancellable": "Run the test suite as a cancellable tool call.",
    "terminal": "Run make test in a terminal.",
    "elicit": "Elicit from me (ask with a form) what the project should be called.",
    "elicit_url": "Elicit my consent to the licence through a URL I open in my browser.",
}


# -- options ------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("acp-conformance", "ACP conformance suite")
    g.addoption("--agent-cmd", dest="acp_agent_cmd", default=None, metavar="CMD",
                help="command line of the agent under test (the suite plays the Client)")
    g.addoption("--client-cmd", dest="acp_client_cmd", default=None, metavar="CMD",
                help="command line of the client under test (the suite plays the Agent); {agent} in it is "
                     "replaced by the path of the agent it should launch (a launcher of a relay back to the suite): one "
                     "word that works as argv (my-client -- {agent}) and inside a command-line string")
    g.addoption("--acp-client-env", dest="acp_client_env", action="append", default=[], metavar="KEY=VAL",
                help="set an environment variable for the client (repeatable; steers a scriptable client)")
    g.addoption("--acp-client-arg", dest="acp_client_arg", action="append", default=[], metavar="ARG",
                help="one more argument for the client, where {args} stands in --client-cmd or at its end "
                     "(repeatable; steers a client by its own flags)")
    g.addoption("--acp-client-cwd", dest="acp_client_cwd", default=None, metavar="DIR",
                help="run the client in this directory instead of a fresh temporary one per test")
    g.addoption("--acp-report-dir", dest="acp_report_dir", default="reports", metavar="DIR",
                help="where report.json and transcripts are written (default: reports/)")
    g.addoption("--acp-timeout", dest="acp_timeout", default=10.0, metavar="S",
                help="seconds to wait for each response or awaited update (default 10)")
    g.addoption("--acp-startup-timeout", dest="acp_startup_timeout", default=15.0, metavar="S",
                help="seconds to wait for the first response after the target starts (default 15)")
    g.addoption("--acp-test-timeout", dest="acp_test_timeout", default=60.0, metavar="S",
                help="seconds one test may take in all (default 60)")
    g.addoption("--acp-schema", dest="acp_schema", default=None, metavar="PATH",
                help="validate against another revision of the ACP JSON Schema")
    g.addoption("--acp-strict", dest="acp_strict", action="store_true", default=False,
                help="SHOULD-level warnings block conformance too")
    g.addoption("--acp-long-prompt", dest="acp_long_prompt", default=DEFAULT_PROMPTS["long"], metavar="TEXT",
                help="a prompt that makes the agent work long enough to be cancelled")
    g.addoption("--acp-tool-prompt", dest="acp_tool_prompt", default=DEFAULT_PROMPTS["tool"], metavar="TEXT",
                help="a prompt that makes the agent call a tool")
    g.addoption("--acp-permission-prompt", dest="acp_permission_prompt", default=DEFAULT_PROMPTS["permission"],
                metavar="TEXT", help="a prompt that makes the agent ask for permission")
    g.addoption("--acp-cancellable-tool-prompt", dest="acp_cancellable_prompt", default=DEFAULT_PROMPTS["cancellable"],
                metavar="TEXT", help="a prompt that makes the agent run a tool call with capabilities.cancel")
    g.addoption("--acp-terminal-prompt", dest="acp_terminal_prompt", default=DEFAULT_PROMPTS["terminal"],
                metavar="TEXT", help="a prompt that makes the agent run a command in a terminal it shows")
    g.addoption("--acp-elicit-prompt", dest="acp_elicit_prompt", default=DEFAULT_PROMPTS["elicit"],
                metavar="TEXT", help="a prompt that makes the agent ask the user with a form (elicitation)")
    g.addoption("--acp-elicit-url-prompt", dest="acp_elicit_url_prompt", default=DEFAULT_PROMPTS["elicit_url"],
                metavar="TEXT", help="a prompt that makes the agent send the user to a URL (URL-mode elicitation)")
    g.addoption("--acp-agent-env", dest="acp_agent_env", action="append", default=[], metavar="KEY=VAL",
                help="set an environment variable for the agent (repeatable)")
    g.addoption("--acp-agent-cwd", dest="acp_agent_cwd", default=None, metavar="DIR",
                help="run the agent in this directory instead of a fresh temporary one per test")
    g.addoption("--acp-work-threshold", dest="acp_work_threshold", default=5.0, metavar="S",
                help="PROMPT-005: work longer than this whose response came only after idle fails (default 5)")
    g.addoption("--acp-stop-reason-should", dest="acp_stop_reason_should", action="store_true", default=False,
                help="PROMPT-013: treat a missing stopReason as a warning (the schema's SHOULD) not a failure")
    g.addoption("--acp-rules", dest="acp_rules", default=None, metavar="IDS",
                help="run only the scenarios bound to these rule IDs (comma-separated); the verdict then "
                     "covers the run, so rules left out are not-tested")
    g.addoption("--acp-scenarios", dest="acp_scenarios", action="append", default=[], metavar="PATH",
                help="also run your own scenario files: a file or a folder of them (repeatable; docs/scenarios.md)")
    g.addoption("--acp-no-bundled", dest="acp_no_bundled", action="store_true", default=False,
                help="run only the --acp-scenarios files, not the bundled suite")
    g.addoption("--acp-require-coverage", dest="acp_require_coverage", action="store_true", default=False,
                help="certification: a rule whose situation the target never created (not-exercised) blocks too, "
                     "unless a waiver names it")
    g.addoption("--acp-auth-method", dest="acp_auth_method", default=None, metavar="ID",
                help="call auth/login with this methodId right after every initialize (before session/new)")
    # each concern registers its own options (one module each, so they stay apart)
    from .fuzz.options import add_options as add_fuzz_options
    from .report.options import add_options as add_report_options
    from .scenarios.prestart import add_options as add_prestart_options
    add_report_options(g)
    add_prestart_options(g)
    add_fuzz_options(g)


class UsageError(Exception):
    pass


def _positive(config: pytest.Config, name: str, opt: str) -> float:
    # the options are parsed as text, so that a non-number is our usage error (exit 2), not argparse's
    v = config.getoption(name)
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = float("nan")
    if not f > 0 or f == float("inf"):
        raise UsageError(f"{opt} must be a positive number of seconds (got {v!r})")
    return f


def _side(config: pytest.Config) -> str | None:
    """``agent`` with --agent-cmd (the suite plays the client), ``client`` with --client-cmd, else None."""
    agent, client = config.getoption("acp_agent_cmd", default=None), config.getoption("acp_client_cmd", default=None)
    if agent is not None and client is not None:
        raise UsageError("give either --agent-cmd or --client-cmd, not both")
    # an empty --agent-cmd= is given, and a usage error (target_command.py), not a run without the suite
    return "agent" if agent is not None else "client" if client is not None else None


def _settings(config: pytest.Config) -> dict[str, Any]:
    side = _side(config)
    who = side  # the target's role, in the option names: --agent-cmd / --client-cmd, --acp-agent-env, ...
    from .target_command import CommandError, target_argv, with_extra_args
    try:
        template = target_argv(who, config.getoption(f"acp_{who}_cmd"))
    except CommandError as e:
        raise UsageError(str(e)) from None
    # run-wide extra arguments; a client scenario adds its own ``args`` at the same place (template)
    extra_args = list(config.getoption("acp_client_arg", default=[]) or []) if who == "client" else []
    argv = with_extra_args(template, extra_args)
    env = {}
    for item in config.getoption(f"acp_{who}_env"):
        if "=" not in item or item.startswith("="):
            raise UsageError(f"--acp-{who}-env takes KEY=VAL (got {item!r})")
        k, v = item.split("=", 1)
        env[k] = v
    cwd = config.getoption(f"acp_{who}_cwd")
    if cwd and not Path(cwd).is_dir():
        raise UsageError(f"--acp-{who}-cwd: {cwd!r} is not a directory")
    from .protocol.schema import SchemaError, cached_schema
    schema_path = config.getoption("acp_schema")
    try:
        schema = cached_schema(str(Path(schema_path).resolve()) if schema_path else None)
    except SchemaError as e:
        raise UsageError(str(e)) from None
    # read before any test runs: a bad waivers file is a usage error at once, not after the whole run
    from .report.waivers import WaiverError, load_waivers
    waivers_file = config.getoption("acp_expected_failures", default=None)
    try:
        waivers = load_waivers(waivers_file, load_catalog(), side) if waivers_file else {}
    except WaiverError as e:
        raise UsageError(str(e)) from None
    report_dir = Path(config.getoption("acp_report_dir")).resolve()
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--acp-report-dir: cannot create {str(report_dir)!r} ({e.strerror or e})") from None
    if not os.access(report_dir, os.W_OK | os.X_OK):
        raise UsageError(f"--acp-report-dir: {str(report_dir)!r} is not writable")
    wanted = config.getoption("acp_rules", None)
    unknown = sorted({w.strip() for w in (wanted or "").split(",") if w.strip()} - set(load_catalog()))
    if unknown:
        raise UsageError(f"--acp-rules: unknown rule IDs {', '.join(unknown)}")
    return {
        "side": side, "argv": argv, "template": template, "extra_args": extra_args, "env": env, "cwd": cwd, "schema": schema, "auth_method": config.getoption("acp_auth_method"),
        "timeout": _positive(config, "acp_timeout", "--acp-timeout"),
        "startup_timeout": _positive(config, "acp_startup_timeout", "--acp-startup-timeout"),
        "test_timeout": _positive(config, "acp_test_timeout", "--acp-test-timeout"),
        "prompts": {"simple": DEFAULT_PROMPTS["simple"], "long": config.getoption("acp_long_prompt"),
                    "tool": config.getoption("acp_tool_prompt"),
                    "permission": config.getoption("acp_permission_prompt"),
                    "cancellable": config.getoption("acp_cancellable_prompt"),
                    "terminal": config.getoption("acp_terminal_prompt"),
                    "elicit": config.getoption("acp_elicit_prompt"),
                    "elicit_url": config.getoption("acp_elicit_url_prompt")},
        "monitor_options": {
            "insertion_work_threshold": _positive(config, "acp_work_threshold", "--acp-work-threshold"),
            "stop_reason_required": not config.getoption("acp_stop_reason_should"),
        },
        "report_dir": report_dir,
        "strict": bool(config.getoption("acp_strict")),
        "require_coverage": bool(config.getoption("acp_require_coverage")),
        "waivers": waivers, "waivers_file": waivers_file,
        "no_redact": bool(config.getoption("acp_no_redact", default=False)),
    }


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        if _side(config) is None:
            return
        settings = _settings(config)
    except UsageError as e:
        pytest.exit(f"acp-conformance: {e}", returncode=2)
    from .resources import scenarios_dir
    from .scenario_paths import ScenarioPathError, scenario_roots, user_paths
    suite_dir = (scenarios_dir() / settings["side"]).resolve()
    try:
        from _pytest.config import Config  # an xdist worker parses the same command line: the same roots
        positional = list(config.args) if config.args_source == Config.ArgsSource.ARGS else []
        config.option.acp_scenarios = user_paths(config.getoption("acp_scenarios"), positional)
        roots = scenario_roots(config.getoption("acp_scenarios"),
                               None if config.getoption("acp_no_bundled") else suite_dir,
                               settings["side"], set(load_catalog()))
    except ScenarioPathError as e:
        pytest.exit(f"acp-conformance: {e}", returncode=2)
    config.args[:] = [str(r) for r in roots]  # the bundled suite and the user's scenario files, and only them
    config.stash[STATE] = state = SuiteState(config, settings, suite_dir)
    state.scenario_roots = roots
    if not hasattr(config, "workerinput"):
        from .early_stop import reset
        reset(settings["report_dir"])
    from .interruption import SignalGuard  # SIGTERM/SIGHUP: kill the targets, then unwind with the partial report
    state.guard = SignalGuard(owner=not hasattr(config, "workerinput")).install()
    from .scenarios.prestart import for_run
    state.test_loop = for_run(config, settings)
    config.addinivalue_line("markers", "acp_rules(ids): rule IDs a scenario exists to exercise")


class SuiteState:
    """What the controller collects over the run: findings, bound tests, the target's identity."""

    def __init__(self, config: pytest.Config, settings: dict[str, Any], suite_dir: Path):
        self.config = config
        self.settings = settings
        self.side: str = settings.get("side", "agent")  # the target's role: "agent" or "client"
        self.suite_dir = suite_dir
        self.catalog = load_catalog()
        self.findings: list[Finding] = []
        self.bound: dict[str, list[str]] = {}
        self.skipped: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.transcripts: dict[str, str] = {}
        self.agent_init: dict[str, Any] | None = None
        self.negotiated_version: int | None = None  # 1 when the agent answered a v2 initialize with 1
        self.first_contact: dict[str, Any] | None = None  # {"kind", "sentence"}: why the target was not judged
        self.auth_blocked: list[str] = []  # the tests stopped at authentication, in the runner's words
        self.verdict = None
        self.validator = None
        self.guard = None  # the SignalGuard of the run (interruption.py)
        self.test_loop = None  # runs the agent tests, with the next test's process started ahead (prestart.py)
        self.scenario_roots: list[Path] = [suite_dir]  # what the run collects (scenario_paths.py)


STATE = pytest.StashKey[SuiteState]()


# -- collection ---------------------------------------------------------------------------------
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    state = config.stash.get(STATE, None)
    wanted = config.getoption("acp_rules", None)
    if state is None or not wanted:
        return
    ids = {w.strip() for w in wanted.split(",") if w.strip()}  # known IDs: checked at configure
    keep = [i for i in items if not isinstance(i, ScenarioItem) or ids & set(i.scenario.rules)]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    state = parent.config.stash.get(STATE, None)
    from .scenario_paths import collects
    if state is None or not collects(file_path, state.scenario_roots):
        return None
    if state.suite_dir in file_path.resolve().parents:
        return ScenarioFile.from_parent(parent, path=file_path)
    # the user's file: named as the user knows it (its path from the current folder), not by pytest's rootdir
    rel = os.path.relpath(file_path, parent.config.invocation_params.dir)
    return ScenarioFile.from_parent(parent, path=file_path, nodeid=file_path.name if rel.startswith("..") else rel)


class ScenarioFile(pytest.File):
    def collect(self):
        from .scenarios.model import ScenarioFileError, load_file
        state = self.config.stash[STATE]
        if state.side == "client":
            from .scenarios.client_model import load_client_file as load_file  # the scripted-agent format
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


class AcpFailure(Exception):
    """A test failed: the message is the readable verdict for this test."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario, **kw):
        super().__init__(**kw)
        self.scenario = scenario
        self.user_properties.append(("rules", " ".join(scenario.rules)))
        self.user_properties.append(("scenario", scenario.name))

    def reportinfo(self):
        return self.path, None, f"{self.scenario.name} [{' '.join(self.scenario.rules)}]"

    def runtest(self) -> None:
        from .early_stop import stopped
        why = stopped(self.config.stash[STATE].settings["report_dir"])
        if why is not None:  # the target is not one the suite can judge: the rest of the run is not run
            reason = f"not run: {why['sentence']}"
            self.user_properties.append((META_KEY, json.dumps({"rules": self.scenario.rules, "skipped": reason,
                                                               "stopped": True})))
            pytest.skip(reason)
        if self.config.stash[STATE].side == "client":
            return self._runtest_client()
        from .protocol.validate import Validator
        from .rules.monitors import ALL_MONITORS
        from .scenarios.runner import RunSettings, Runner, TargetSpec

        state: SuiteState = self.config.stash[STATE]
        s = state.settings
        if state.validator is None:  # compiled once per process, reused by every test
            state.validator = Validator(s["schema"])
        validator = state.validator
        ctx = MonitorContext(target_side="agent", options={**s["monitor_options"], **self.scenario.options,
                                                           "validator": validator})
        ctx.add_monitors(ALL_MONITORS)

        def validate_sent(msg: dict[str, Any]) -> str | None:
            v = validator.check_message(msg)
            return str(v) if v else None

        settings = RunSettings(timeout=s["timeout"], startup_timeout=s["startup_timeout"],
                               test_timeout=s["test_timeout"], prompts=s["prompts"],
                               validate_sent=validate_sent, auth_method=s.get("auth_method"))
        tmp = None
        loop = state.test_loop  # runs the test; its spare is this test's process, started during the last one
        spare = loop.take(s["argv"], s["env"], wanted=self.scenario.options.get("prestart", True))
        if s["cwd"]:
            workdir = Path(s["cwd"])
        else:
            tmp = str(spare.workdir) if spare else tempfile.mkdtemp(prefix="acp-conformance-")
            workdir = Path(tmp)
        try:
            runner = Runner(self.scenario, TargetSpec(s["argv"], s["env"]), settings, workdir,
                            listeners=[ctx.feed], started=spare.transport if spare else None)
            result = loop.run(runner.run)
            ctx.finish()
        finally:
            if tmp:
                shutil.rmtree(tmp, ignore_errors=True)
        if result.auth_blocked:  # what came before is judged; the rest of the scenario is skipped, not failed
            result.skipped, result.error = result.auth_blocked, None
        contact = _first_contact(state, ctx.frames, result)
        if contact is not None:  # not an ACP program, or a v1 agent: judging v2 rules on it is only noise
            ctx.findings = [f for f in ctx.findings if contact.kind == NOT_V2 and f.rule in V1_KEEP]
        _redact_outcome(state, ctx.findings, result)
        for f in ctx.findings:
            f.test = self.nodeid
        transcript_path = self._write_transcript(state, result)
        meta = {"rules": self.scenario.rules, "error": result.error, "skipped": result.skipped,
                "harness_error": result.harness_error, "transcript": transcript_path,
                "agent_init": result.agent_init, "endings": result.endings,
                "negotiated_version": contact.version if contact is not None else None,
                "first_contact": {"kind": contact.kind, "sentence": contact.sentence} if contact else None,
                "auth_blocked": result.auth_blocked}
        self.user_properties.append((FINDINGS_KEY, json.dumps([f.to_json() for f in ctx.findings])))
        self.user_properties.append((META_KEY, json.dumps(meta)))
        if result.harness_error:
            raise AcpFailure(f"HARNESS ERROR (a defect of the suite, not of the target): {result.harness_error}")
        blocking, waived = _waive(state, _blocking_failures(state, ctx.findings))
        if contact is not None:
            raise AcpFailure(_contact_text(contact, result, transcript_path))
        if result.skipped and not blocking:
            pytest.skip(result.skipped)
        if not blocking and _target_never_did_it(state, self.scenario.rules, result):
            from .rules.verdicts import NOT_EXERCISED_SKIP
            pytest.skip(f"{NOT_EXERCISED_SKIP}the target never did what this scenario waits for "
                        f"({' '.join(self.scenario.rules)}): {result.error}")
        if blocking or result.error:
            raise AcpFailure(_explain(state, blocking, result, ctx.frames, transcript_path))
        if waived:
            pytest.xfail(_waived_reason(state, waived))

    def _runtest_client(self) -> None:
        """The suite plays the agent: the scripted agent reacts to the client, the client monitors judge."""
        import anyio

        from .protocol.validate import Validator
        from .rules.monitors import CLIENT_MONITORS
        from .scenarios.client_runner import ClientRunner
        from .scenarios.runner import RunSettings, TargetSpec

        state: SuiteState = self.config.stash[STATE]
        s = state.settings
        if state.validator is None:
            state.validator = Validator(s["schema"])
        ctx = MonitorContext(target_side="client", options={**s["monitor_options"], **self.scenario.options,
                                                            "validator": state.validator})
        ctx.add_monitors(CLIENT_MONITORS)
        settings = RunSettings(timeout=s["timeout"], startup_timeout=s["startup_timeout"],
                               test_timeout=s["test_timeout"], prompts=s["prompts"])
        tmp = None if s["cwd"] else tempfile.mkdtemp(prefix="acp-conformance-")
        sock_dir = tempfile.mkdtemp(prefix="acp-sock-")  # short: a Unix socket path has ~100 bytes
        try:
            runner = ClientRunner(self.scenario, TargetSpec(s["template"], s["env"], s["extra_args"]), settings,
                                  Path(s["cwd"] or tmp), Path(sock_dir), listeners=[ctx.feed])
            result = anyio.run(runner.run)
            ctx.finish()
        finally:
            for d in (tmp, sock_dir):
                if d:
                    shutil.rmtree(d, ignore_errors=True)
        # a both-side monitor also speaks of agent-only rules; only the client's rules are judged here
        ctx.findings = [f for f in ctx.findings if f.rule in state.catalog
                        and state.catalog[f.rule].side in ("client", "both")]
        contact = _first_contact(state, ctx.frames, result, client=True)
        if contact is not None:  # a v1 client: judging v2 rules on it is only noise
            ctx.findings = []
        _redact_outcome(state, ctx.findings, result)
        for f in ctx.findings:
            f.test = self.nodeid
        transcript_path = self._write_transcript(state, result)
        meta = {"rules": self.scenario.rules, "error": result.error, "skipped": result.skipped,
                "harness_error": result.harness_error, "transcript": transcript_path,
                "agent_init": result.agent_init, "endings": result.endings,
                "negotiated_version": contact.version if contact is not None else None,
                "first_contact": {"kind": contact.kind, "sentence": contact.sentence} if contact else None}
        self.user_properties.append((FINDINGS_KEY, json.dumps([f.to_json() for f in ctx.findings])))
        self.user_properties.append((META_KEY, json.dumps(meta)))
        if result.harness_error:
            raise AcpFailure(f"HARNESS ERROR (a defect of the suite, not of the target): {result.harness_error}")
        if contact is not None:
            raise AcpFailure(_contact_text(contact, result, transcript_path))
        blocking, waived = _waive(state, _blocking_failures(state, ctx.findings))
        if result.skipped and not blocking:
            pytest.skip(result.skipped)
        if blocking or result.error:
            raise AcpFailure(_explain(state, blocking, result, ctx.frames, transcript_path))
        if waived:
            pytest.xfail(_waived_reason(state, waived))

    def _write_transcript(self, state: SuiteState, result) -> str:
        d = state.settings["report_dir"] / "transcripts"
        d.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.nodeid.split("/")[-1])[:150]
        path = d / f"{name}.jsonl"
        from .report.redact import transcript_jsonl  # secrets are masked in the file, never for monitors
        redact = not state.settings["no_redact"]
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(transcript_jsonl(result.transcript.frames, redact=redact))
        if any(result.stderr):
            (d / f"{name}.stderr.txt").write_text("\n--- next connection ---\n".join(result.stderr),
                                                  encoding="utf-8")
        return str(path)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, AcpFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


def _first_contact(state: SuiteState, frames: list[Frame], result, client: bool = False):
    """Why this test's target cannot be judged at all (rules/first_contact.py), while no test of the run has
    yet seen it answer initialize as a v2 peer; the run then stops (early_stop.py). Else None."""
    from .early_stop import has_spoken_v2, spoke_v2, stop
    from .rules.first_contact import FirstContact, judge_agent, judge_client
    report_dir = state.settings["report_dir"]
    s = state.settings
    contact = judge_client(frames) if client else judge_agent(frames, max(s["startup_timeout"], s["timeout"]))
    if contact is None and not client:
        v1 = _negotiated_v1(frames)  # a test that does not open with initialize
        if v1 is not None:
            contact = FirstContact(NOT_V2, "the agent speaks ACP protocol version 1; this suite judges version 2",
                                   v1, 1)
    if contact is None:
        if result.agent_init is not None:
            spoke_v2(report_dir)
        return None
    if has_spoken_v2(report_dir):
        return None  # a v2 agent that failed this once: the rules judge it
    stop(report_dir, contact.kind, contact.sentence)
    return contact


def _contact_text(contact, result, transcript: str) -> str:
    lines = [contact.sentence + "."]
    if contact.frame is not None:
        from .report.redact import frame_text
        lines.append(f"  frame #{contact.frame.seq}: {frame_text(contact.frame, 300, True)}")
    if result.stderr and any(result.stderr):
        tail = result.stderr[-1][-800:]
        lines.append("target stderr (tail):\n" + "\n".join("  | " + ln for ln in tail.splitlines()[-8:]))
    lines.append("the remaining tests are not run; transcript: " + transcript)
    return "\n".join(lines)


def _redact_outcome(state: SuiteState, findings: list[Finding], result) -> None:
    """The secret values of the test's frames, masked in its findings, errors and stderr (the text every report
    and the failure message quote) unless --acp-no-redact; here, where the frames are (an xdist worker)."""
    if not state.settings.get("no_redact", False):
        from .report.redact import redact_outcome
        redact_outcome(findings, result, result.transcript.frames)


def _blocking_failures(state: SuiteState, findings: list[Finding]) -> list[Finding]:
    out = []
    for f in findings:
        rule = state.catalog.get(f.rule)
        if rule is None:
            continue
        if f.status == FAIL and rule.blocking:
            out.append(f)
        elif state.settings["strict"] and f.status in (FAIL, WARN) and rule.level != "MAY":
            out.append(f)
    return out


def _target_never_did_it(state: SuiteState, rules: list[str], result) -> bool:
    """The scenario waited for something that only the target decides to do (a tool call, a permission
    request, background work...) and it never came: the target's right, not a failure. Either the await
    that ended it was for such an update, or it ended on an await's timeout and every rule the scenario
    exists for is target-created (a dead or garbling target is still a failure)."""
    kind = getattr(result, "error_kind", None)
    if not result.error or not rules or kind not in ("timeout", "target-never"):
        return False
    if kind == "target-never":  # it waited for a tool call, a terminal, a requires_action...
        return True
    from .rules.catalog import TARGET
    return all(r in state.catalog and state.catalog[r].creator_on(state.side) == TARGET for r in rules)


def _waive(state: SuiteState, failures: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(the failures that count, those of rules listed in --acp-expected-failures)."""
    waivers = state.settings.get("waivers") or {}
    return [f for f in failures if f.rule not in waivers], [f for f in failures if f.rule in waivers]


def _waived_reason(state: SuiteState, waived: list[Finding]) -> str:
    """The xfail reason of a test whose only blocking failures are waived (JUnit: a skipped pytest.xfail)."""
    waivers = state.settings["waivers"]
    parts = []
    for rule in dict.fromkeys(f.rule for f in waived):
        first = next(f for f in waived if f.rule == rule)
        parts.append(f"{rule} waived ({waivers[rule].reason}): {first.message}")
    return "expected failure: " + " | ".join(parts)


def _explain(state: SuiteState, failures: list[Finding], result, frames: list[Frame], transcript: str) -> str:
    from .report.redact import frame_text
    redact = not state.settings.get("no_redact", False)
    by_seq = {f.seq: f for f in frames}
    lines = []
    for f in failures:
        rule = state.catalog[f.rule]
        lines.append(f"{f.rule} ({rule.level}) failed")
        if f.expected:
            lines.append(f"  expected: {f.expected}")
        lines.append(f"  observed: {f.message}")
        for seq in f.frames[:6]:
            fr = by_seq.get(seq)
            if fr is not None:
                arrow = {"sent": "suite -> target", "received": "target -> suite"}.get(fr.direction, "event")
                lines.append(f"  frame #{seq} [{fr.t:.3f}s, {arrow}]: {frame_text(fr, 400, redact)}")
        lines.append(f"  spec: {rule.public_source}")
        if rule.note:
            lines.append(f"  note: {rule.note}")
    if result.error:
        lines.append(f"the scenario could not be completed: {result.error}")
    if result.stderr and any(result.stderr):
        tail = result.stderr[-1][-1500:]
        lines.append("target stderr (tail):\n" + "\n".join("  | " + ln for ln in tail.splitlines()[-15:]))
    lines.append(f"transcript: {transcript}")
    return "\n".join(lines)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash.get(STATE, None)
    if state is not None and state.guard is not None:
        state.guard.raise_if_stopped()  # a signal whose raise was swallowed still stops the run here


# -- collecting results (runs on the controller, also under xdist) ------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG.get("config")
    state = config.stash.get(STATE, None) if config else None
    if state is None or hasattr(config, "workerinput"):
        return  # under xdist the findings travel in the report to the controller, which collects them
    keep = []
    for key, value in report.user_properties:
        if key in (FINDINGS_KEY, META_KEY) and report.when != "call":
            continue  # every phase's report carries the item's properties; count them once
        if key == FINDINGS_KEY:
            for d in json.loads(value):
                state.findings.append(Finding(d["rule"], d["status"], d["message"], d.get("expected", ""),
                                              d.get("frames", []), report.nodeid))
        elif key == META_KEY:
            meta = json.loads(value)
            for r in meta["rules"]:
                state.bound.setdefault(r, [])
                if report.nodeid not in state.bound[r]:
                    state.bound[r].append(report.nodeid)
            if meta.get("skipped") and not meta.get("auth_blocked") and not meta.get("stopped"):
                # a skip is "does not apply to this target"; a test stopped at authentication, or not run
                # because the run stopped, applies, and its rules stay not-tested (never conformant on what
                # the suite could not reach)
                state.skipped[report.nodeid] = meta["skipped"]
            if meta.get("error") or meta.get("harness_error"):
                state.errors[report.nodeid] = meta.get("harness_error") or meta["error"]
            state.transcripts[report.nodeid] = meta.get("transcript")
            if meta.get("agent_init") and state.agent_init is None:
                state.agent_init = meta["agent_init"]
            if meta.get("negotiated_version") is not None:
                state.negotiated_version = meta["negotiated_version"]
            if meta.get("first_contact") and state.first_contact is None:
                state.first_contact = meta["first_contact"]
            if meta.get("auth_blocked"):
                state.auth_blocked.append(meta["auth_blocked"])
        else:
            keep.append((key, value))
    report.user_properties = keep


_CONFIG: dict[str, pytest.Config] = {}


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG["config"] = session.config


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None or hasattr(session.config, "workerinput") or session.config.option.collectonly:
        return  # xdist workers report to the controller, which judges; --collect-only judges nothing
    from .report.write import write_reports
    from .rules.monitors import checked_on
    from .rules.verdicts import compute
    if state.guard is not None:
        state.guard.sweep()  # what an interrupted test (Ctrl-C) or a killed xdist worker may have left running
    waivers = state.settings["waivers"]  # read (and checked) by _settings, before any test ran
    verdict = compute(state.catalog, state.findings, set(checked_on(state.side)), state.bound, state.skipped,
                      strict=state.settings["strict"], side=state.side, not_observable=load_not_observable(),
                      waivers=waivers, require_coverage=state.settings.get("require_coverage", False))
    state.verdict = verdict
    extra: dict[str, Any] = {}
    if state.first_contact is not None:  # one sentence instead of a verdict per rule
        extra = {"reason": state.first_contact["sentence"], "reason_kind": state.first_contact["kind"]}
        if state.negotiated_version is not None:
            extra["negotiated_version"] = state.negotiated_version
    elif state.auth_blocked:
        extra = {"reason": _auth_reason(state), "reason_kind": "auth-blocked"}
    stopped = state.guard.exit_status if state.guard is not None else None
    if stopped is not None:
        extra["interrupted"] = (f"the run was stopped by {_signal_name(stopped - 128)}: the tests not run "
                                "are not-tested")
    try:
        write_reports(state.settings["report_dir"], verdict, state, extra)  # json, html, badge, step summary
    except OSError as e:
        session.config.get_terminal_writer().line(f"acp-conformance: could not write the report: {e}", red=True)
    if stopped is not None:
        session.exitstatus = stopped  # 128 + the signal, as a shell reports a process it killed
    elif state.first_contact is not None and state.first_contact["kind"] == NOT_V2:
        session.exitstatus = NOT_V2_EXIT
    elif exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        ok = verdict.conformant and not verdict.stale_waivers  # a stale waiver fails the run
        session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED


def _signal_name(signum: int) -> str:
    import signal
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or state.verdict is None:
        return
    v = state.verdict
    tr = terminalreporter
    tr.section("ACP conformance")
    for rv in v.rules if state.first_contact is None else ():  # not judged: the sentence below says why
        if rv.checked and rv.status in (FAIL, WARN, "not-tested"):
            why = rv.reason or next((f.message for f in rv.findings if f.status in (FAIL, WARN)), "")
            tr.line(f"  {rv.status.upper():10} {rv.rule.id:14} {rv.rule.level:8} {why[:160]}")
        elif rv.status == "xfail" or rv.stale_waiver:
            why = ("STALE WAIVER: this rule passes now; remove it from the expected-failures file"
                   if rv.stale_waiver else rv.reason)
            tr.line(f"  {'STALE' if rv.stale_waiver else 'XFAIL':10} {rv.rule.id:14} {rv.rule.level:8} {why[:160]}",
                    red=rv.stale_waiver)
    if state.first_contact is None:
        _not_exercised_lines(tr, v)
    rd = state.settings["report_dir"]
    tr.line(f"report: {rd / 'report.json'}  (also report.html, badge.json)")
    xml = getattr(config.option, "xmlpath", None)  # pytest's --junitxml has written its file by now
    if xml and Path(xml).is_file() and not hasattr(config, "workerinput"):
        from .report.junit import annotate_junit
        try:
            annotate_junit(Path(xml), v)
        except (OSError, ValueError) as e:
            tr.line(f"acp-conformance: could not annotate {xml}: {e}", red=True)
    if state.first_contact is not None:
        tr.line(f"acp-conformance: {state.first_contact['sentence']}", bold=True, red=True)
    elif state.auth_blocked:
        tr.line(f"acp-conformance: {_auth_reason(state)}", bold=True, red=True)
    tr.line(_verdict_line(state), bold=True, green=v.conformant, red=not v.conformant)
    stopped = state.guard.exit_status if state.guard is not None else None
    if stopped is not None:
        tr.line(f"the run was stopped by {_signal_name(stopped - 128)}: the tests not run are not-tested; "
                f"exit status {stopped}", bold=True, red=True)
    elif not v.conformant and not tr.stats.get("failed") and not tr.stats.get("error"):
        # pytest's closing line would read "N passed": make it carry the verdict, so nobody reads a pass
        tr.stats.setdefault("blocking rules (not conformant)", []).extend(v.blocking_failures)
        cause = ("never reached (inconclusive)" if v.inconclusive and len(v.inconclusive) == len(v.blocking_failures)
                 else "blocking")
        tr.line(f"every test passed, yet the run is NOT CONFORMANT: {len(v.blocking_failures)} rule(s) {cause}: "
                f"{', '.join(r.rule.id for r in v.blocking_failures[:12])}; exit status 1", bold=True, red=True)


def _not_exercised_lines(tr, v) -> None:
    """The rules the target never gave a chance, grouped by what would reach them (one line per group)."""
    groups: dict[str, list[str]] = {}
    for rv in v.rules:
        if rv.checked and rv.status == "not-exercised":
            groups.setdefault(rv.rule.reach or "a target that creates the situation", []).append(rv.rule.id)
    if not groups:
        return
    tr.line(f"  not exercised (the target never created the situation; they do not block"
            f"{', but --acp-require-coverage is on' if v.require_coverage else ''}):")
    for reach, ids in groups.items():
        tr.line(f"    {', '.join(ids)}: reached by {reach}")


def _auth_reason(state: SuiteState) -> str:
    n = len(state.auth_blocked)
    return f"{state.auth_blocked[0]} ({n} test(s) stopped there: the rules they did not reach are not-tested, not failed)"


def _verdict_line(state: SuiteState) -> str:
    """The run's last line: the verdict, or the one sentence why the target could not be judged."""
    if state.first_contact is not None:
        return f"ACP verdict: NOT CONFORMANT: {state.first_contact['sentence']}"
    return state.verdict.summary_line()


def pytest_unconfigure(config: pytest.Config) -> None:
    # the very last line of the run is the verdict (pytest's own counts come just before it)
    state = config.stash.get(STATE, None)
    if state is not None and state.test_loop is not None:
        state.test_loop.close()  # the spare no test took
    if state is not None and state.guard is not None:
        state.guard.sweep()
        state.guard.uninstall()
    if state is not None and state.verdict is not None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(_verdict_line(state), bold=True, green=state.verdict.conformant,
                          red=not state.verdict.conformant)


def pytest_report_header(config: pytest.Config):
    state = config.stash.get(STATE, None)
    if state is None:
        return None
    s = state.settings
    return [f"acp-conformance: {state.side} {shlex.join(s['argv'])}",
            f"acp-conformance: schema {s['schema'].path} (sha256 {s['schema'].sha256[:12]})"]

