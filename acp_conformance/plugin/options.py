"""The suite's command-line options, and the run configuration built from them once, at configure.

``build_run_config`` reads every option, checks it (a bad value is a ``UsageError``: one sentence, exit 2)
and applies it once (the timeout multiplier scales the timeouts here): what it returns is frozen, and
every other part of the plugin reads it instead of the command line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pytest

from ..rules.catalog import load_catalog
from ..rules.verdicts import BlockingPolicy
from ..thresholds import Thresholds

DEFAULT_PROMPTS = {
    "simple": "Say hello",
    "long": "Count slowly to 500, one number per line.",
    "tool": "Use a tool to read the file notes.txt",
    "permission": "Delete the build directory; ask my permission first.",
    "cancellable": "Run the test suite as a cancellable tool call.",
    "terminal": "Run make test in a terminal.",
    "elicit": "Elicit from me (ask with a form) what the project should be called.",
    "elicit_url": "Elicit my consent to the licence through a URL I open in my browser.",
    "plan": "Make a plan for tidying notes.txt, then follow it.",
}


# the prompt options: (option, dest, DEFAULT_PROMPTS key, what the prompt makes the agent do)
_PROMPT_OPTIONS = (
    ("--acp-long-prompt", "acp_long_prompt", "long", "work long enough to be cancelled"),
    ("--acp-tool-prompt", "acp_tool_prompt", "tool", "call a tool"),
    ("--acp-permission-prompt", "acp_permission_prompt", "permission", "ask for permission"),
    ("--acp-cancellable-tool-prompt", "acp_cancellable_prompt", "cancellable",
     "run a tool call with capabilities.cancel"),
    ("--acp-terminal-prompt", "acp_terminal_prompt", "terminal", "run a command in a terminal it shows"),
    ("--acp-elicit-prompt", "acp_elicit_prompt", "elicit", "ask the user with a form (elicitation)"),
    ("--acp-elicit-url-prompt", "acp_elicit_url_prompt", "elicit_url",
     "send the user to a URL (URL-mode elicitation)"),
    ("--acp-plan-prompt", "acp_plan_prompt", "plan", "report a plan (plan_update)"),
)


# -- options ------------------------------------------------------------------------------------
def add_options(parser: pytest.Parser) -> None:
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
    g.addoption("--acp-protocol", dest="acp_protocol", default=None, metavar="1|2",
                help="the ACP protocol version judged: 1 (the V1 rules, scenarios/agent_v1) or 2; default: the "
                     "version the agent answers initialize in")
    g.addoption("--acp-revision", dest="acp_revision", default=None, metavar="base|preview",
                help="the ACP v2 revision whose verdict sets the exit status: base (v2 as released, the "
                     "TypeScript SDK 2.4.0's schema) or preview (the v2 Preview of 2026-11-20; the default). "
                     "Every report shows both verdicts and the Preview readiness")
    g.addoption("--acp-strict", dest="acp_strict", action="store_true", default=False,
                help="SHOULD-level warnings block conformance too")
    for option, dest, key, what in _PROMPT_OPTIONS:
        g.addoption(option, dest=dest, default=DEFAULT_PROMPTS[key], metavar="TEXT",
                    help=f"a prompt that makes the agent {what}")
    g.addoption("--acp-agent-env", dest="acp_agent_env", action="append", default=[], metavar="KEY=VAL",
                help="set an environment variable for the agent (repeatable)")
    g.addoption("--acp-model", dest="acp_model", action="store_true", default=False,
                help="serve the agent a scripted model on 127.0.0.1 (Anthropic and OpenAI APIs; ANTHROPIC_BASE_URL, "
                     "OPENAI_BASE_URL, dummy keys...): whole turns with tool calls and permission requests, without "
                     "credentials or network; every model request is logged beside the transcripts")
    g.addoption("--acp-agent-cwd", dest="acp_agent_cwd", default=None, metavar="DIR",
                help="run the agent in this directory instead of a fresh temporary one per test")
    g.addoption("--acp-work-threshold", dest="acp_work_threshold", default=5.0, metavar="S",
                help="PROMPT-005: work longer than this whose response came only after idle fails (default 5)")
    g.addoption("--acp-cancel-warn-after", dest="acp_cancel_warn_after", default=10.0, metavar="S",
                help="CANCEL-006: a cancelled idle later than this after session/cancel warns (default 10)")
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
    g.addoption("--acp-faults", dest="acp_faults", action="store_true", default=False,
                help="also run the fault scenarios (docs/faults.md), skipped otherwise: a lost response retried "
                     "after a restart, a crash mid-turn, a duplicated message, a cancel held past the idle, a "
                     "half-closed stdin, a slow client")
    g.addoption("--acp-auth-method", dest="acp_auth_method", default=None, metavar="ID",
                help="call auth/login with this methodId right after every initialize (before session/new)")
    # each concern registers its own options (one module each, so they stay apart)
    from ..fuzz.options import add_options as add_fuzz_options
    from ..report.options import add_options as add_report_options
    from ..scenarios.prestart import add_options as add_prestart_options
    from ..scenarios.run_ahead import add_options as add_run_ahead_options
    add_report_options(g)
    add_prestart_options(g)
    add_run_ahead_options(g)
    add_fuzz_options(g)


class UsageError(Exception):
    """A bad option value: the sentence the run exits with (status 2)."""


@dataclass(frozen=True)
class RunConfig:
    """Every option of the run, checked and applied (timeouts already scaled by the multiplier); its thresholds
    (timeouts, the monitors', strictness, coverage, revision) are one typed value, ``thresholds``, that the
    fuzzer of the run (--acp-fuzz) is given as it is."""

    side: str  # the target's role: "agent" (--agent-cmd, the suite plays the client) or "client"
    argv: list[str]  # the target's command line, run-wide extra arguments in place
    template: list[str]  # the same before the extra arguments (a client scenario adds its own there)
    extra_args: list[str]
    env: Mapping[str, str]
    cwd: str | None
    schema: Any  # the loaded ACP JSON Schema (protocol/schema.py)
    schema_path: str | None
    auth_method: str | None
    thresholds: Thresholds
    timeout_multiplier: float
    prompts: Mapping[str, str]
    report_dir: Path
    waivers: Mapping[str, Any]  # rule id -> Waiver (--acp-expected-failures)
    waivers_file: str | None
    no_redact: bool
    rules: frozenset[str]  # --acp-rules: run only the scenarios bound to these (empty: all)
    model_url: str | None  # --acp-model: the base URL of the scripted model server this process started
    fuzz: Mapping[str, Any] | None  # the --acp-fuzz settings, or None when it is off
    faults: bool = False  # --acp-faults: the fault scenarios run (docs/faults.md)
    protocol: int = 2  # the ACP version judged: --acp-protocol, else the one the agent answers in (plugin/probe.py)
    protocol_forced: bool = False  # --acp-protocol given

    # the thresholds by name, as the rest of the plugin reads them
    timeout = property(lambda self: self.thresholds.timeout)
    budget = property(lambda self: self.thresholds.budget)  # --acp-budget: seconds for the whole run, or None
    startup_timeout = property(lambda self: self.thresholds.startup_timeout)
    test_timeout = property(lambda self: self.thresholds.test_timeout)
    strict = property(lambda self: self.thresholds.strict)
    require_coverage = property(lambda self: self.thresholds.require_coverage)
    revision = property(lambda self: self.thresholds.revision)  # --acp-revision: whose verdict sets the exit status

    @property
    def monitor_options(self) -> dict[str, Any]:
        return self.thresholds.monitor_options()

    @property
    def policy(self) -> BlockingPolicy:
        return self.thresholds.policy


def side_of(config: pytest.Config) -> str | None:
    """``agent`` with --agent-cmd (the suite plays the client), ``client`` with --client-cmd, else None."""
    agent, client = config.getoption("acp_agent_cmd", default=None), config.getoption("acp_client_cmd", default=None)
    if agent is not None and client is not None:
        raise UsageError("give either --agent-cmd or --client-cmd, not both")
    # an empty --agent-cmd= is given, and a usage error (target_command.py), not a run without the suite
    return "agent" if agent is not None else "client" if client is not None else None


def _number(config: pytest.Config, name: str) -> float:
    # the options are parsed as text, so that a non-number is our usage error (exit 2), not argparse's
    v = config.getoption(name)
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _positive(config: pytest.Config, name: str, opt: str, what: str = " of seconds") -> float:
    f = _number(config, name)
    if not f > 0 or f == float("inf"):
        raise UsageError(f"{opt} must be a positive number{what} (got {config.getoption(name)!r})")
    return f


def _target(config: pytest.Config, who: str) -> dict[str, Any]:
    """The target's command line, environment and folder (--agent-cmd / --client-cmd and their options)."""
    from ..target_command import CommandError, target_argv, with_extra_args
    cwd = config.getoption(f"acp_{who}_cwd")
    try:  # without --acp-*-cwd each test runs the target in a fresh folder: paths are anchored here
        template = target_argv(who, config.getoption(f"acp_{who}_cmd"), anchor=None if cwd else Path.cwd())
    except CommandError as e:
        raise UsageError(str(e)) from None
    # run-wide extra arguments; a client scenario adds its own ``args`` at the same place (template)
    extra_args = list(config.getoption("acp_client_arg", default=[]) or []) if who == "client" else []
    env = {}
    for item in config.getoption(f"acp_{who}_env"):
        if "=" not in item or item.startswith("="):
            raise UsageError(f"--acp-{who}-env takes KEY=VAL (got {item!r})")
        k, v = item.split("=", 1)
        env[k] = v
    if cwd and not Path(cwd).is_dir():
        raise UsageError(f"--acp-{who}-cwd: {cwd!r} is not a directory")
    return {"template": template, "extra_args": extra_args, "argv": with_extra_args(template, extra_args),
            "env": env, "cwd": cwd}


def _revision(config: pytest.Config) -> str:
    from ..protocol import revisions
    try:
        return revisions.check_name(config.getoption("acp_revision", default=None))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _protocol(config: pytest.Config, side: str, target: dict[str, Any], startup: float) -> int | None:
    """--acp-protocol (checked), else the version an agent answers in, or a client asks for (plugin/probe.py)."""
    given = config.getoption("acp_protocol", default=None)
    if given is not None:
        if str(given).strip() not in ("1", "2"):
            raise UsageError(f"--acp-protocol takes 1 or 2 (got {given!r})")
        return int(given)
    from .probe import client_version, spoken_version
    if side != "agent":
        return client_version(target["template"], target["extra_args"], target["env"], target["cwd"], startup,
                              _report_dir(config), hasattr(config, "workerinput"))
    return spoken_version(target["argv"], target["env"], target["cwd"], startup, _report_dir(config),
                          hasattr(config, "workerinput"))


def _schema_path(config: pytest.Config) -> str | None:
    """--acp-schema, else our schema as the run's revision reads it (None: ours as it is)."""
    from ..protocol import revisions
    schema_path = config.getoption("acp_schema")
    return str(Path(schema_path).resolve()) if schema_path else revisions.schema_ref(_revision(config))


def _schema(config: pytest.Config):
    from ..protocol.schema import SchemaError, cached_schema
    try:
        return cached_schema(_schema_path(config))
    except SchemaError as e:
        raise UsageError(str(e)) from None


def _waivers(config: pytest.Config, side: str) -> Mapping[str, Any]:
    # read before any test runs: a bad waivers file is a usage error at once, not after the whole run
    from ..report.waivers import WaiverError, load_waivers
    waivers_file = config.getoption("acp_expected_failures", default=None)
    try:
        return load_waivers(waivers_file, load_catalog(), side) if waivers_file else {}
    except WaiverError as e:
        raise UsageError(str(e)) from None


def _report_dir(config: pytest.Config) -> Path:
    report_dir = Path(config.getoption("acp_report_dir")).resolve()
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--acp-report-dir: cannot create {str(report_dir)!r} ({e.strerror or e})") from None
    if not os.access(report_dir, os.W_OK | os.X_OK):
        raise UsageError(f"--acp-report-dir: {str(report_dir)!r} is not writable")
    return report_dir


def _rules(config: pytest.Config) -> frozenset[str]:
    wanted = {w.strip() for w in (config.getoption("acp_rules", None) or "").split(",") if w.strip()}
    unknown = sorted(wanted - set(load_catalog()))
    if unknown:
        raise UsageError(f"--acp-rules: unknown rule IDs {', '.join(unknown)}")
    return frozenset(wanted)


def _prompts(config: pytest.Config) -> dict[str, str]:
    return {"simple": DEFAULT_PROMPTS["simple"], "long": config.getoption("acp_long_prompt"),
            "tool": config.getoption("acp_tool_prompt"), "permission": config.getoption("acp_permission_prompt"),
            "cancellable": config.getoption("acp_cancellable_prompt"),
            "terminal": config.getoption("acp_terminal_prompt"), "elicit": config.getoption("acp_elicit_prompt"),
            "elicit_url": config.getoption("acp_elicit_url_prompt"), "plan": config.getoption("acp_plan_prompt")}


def _budget(config: pytest.Config) -> float | None:
    if config.getoption("acp_budget") is None:
        return None
    budget = _number(config, "acp_budget")
    if not budget > 0:
        raise UsageError(f"--acp-budget must be a positive number of seconds (got {config.getoption('acp_budget')!r})")
    return budget


def _fuzz(config: pytest.Config) -> Mapping[str, Any] | None:
    from ..fuzz.options import read_options
    try:
        return read_options(config)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _model(config: pytest.Config, side: str, report_dir: Path, env: dict[str, str]) -> str | None:
    """--acp-model: start the scripted model server of this process (an xdist worker has its own) and point the
    agent at it; the user's --acp-agent-env wins over the variables it sets. Returns its URL."""
    if not config.getoption("acp_model", default=False):
        return None
    if side != "agent":
        raise UsageError("--acp-model serves a model to an agent under --agent-cmd, not to a client")
    from ..model import serve_for_run
    worker = getattr(config, "workerinput", {}).get("workerid")
    log = report_dir / "transcripts" / f"model-requests{'-' + worker if worker else ''}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    server, model_env = serve_for_run(log)
    for key, value in model_env.items():
        env.setdefault(key, value)
    return server.url


def build_run_config(config: pytest.Config) -> RunConfig | None:
    """The run's configuration, or None when neither --agent-cmd nor --client-cmd is given (the plugin
    then does nothing). Raises ``UsageError``."""
    side = side_of(config)
    if side is None:
        return None
    target = _target(config, side)  # checked in this order: the first bad option is the one named
    revision = _revision(config)
    checked = dict(schema=_schema(config), waivers=_waivers(config, side), report_dir=_report_dir(config),
                   rules=_rules(config))
    timeouts = {name: _positive(config, f"acp_{name}", f"--acp-{name.replace('_', '-')}")
                for name in ("timeout", "startup_timeout", "test_timeout")}
    judging = dict(work_threshold=_positive(config, "acp_work_threshold", "--acp-work-threshold"),
                   cancel_warn_after=_positive(config, "acp_cancel_warn_after", "--acp-cancel-warn-after"),
                   stop_reason_required=not config.getoption("acp_stop_reason_should"))
    multiplier = _positive(config, "acp_timeout_multiplier", "--acp-timeout-multiplier", what="")
    ahead = config.getoption("acp_run_ahead", default=None)
    if ahead is not None and ahead < 0:
        raise UsageError(f"--acp-run-ahead takes a number of tests, 0 or more (got {ahead})")
    model_url = _model(config, side, checked["report_dir"], target["env"])
    protocol = _protocol(config, side, target, timeouts["startup_timeout"] * multiplier)
    if protocol == 1:
        from ..protocol.revisions import V1
        revision = V1
    thresholds = Thresholds(**{name: t * multiplier for name, t in timeouts.items()}, **judging, budget=_budget(config),
                            strict=bool(config.getoption("acp_strict")),
                            require_coverage=bool(config.getoption("acp_require_coverage")), revision=revision)
    return RunConfig(
        protocol=protocol or 2, protocol_forced=config.getoption("acp_protocol", default=None) is not None,
        side=side, **target, **checked,
        schema_path=_schema_path(config),
        auth_method=config.getoption("acp_auth_method"),
        thresholds=thresholds, timeout_multiplier=multiplier, prompts=_prompts(config),
        waivers_file=config.getoption("acp_expected_failures", default=None),
        no_redact=bool(config.getoption("acp_no_redact", default=False)), fuzz=_fuzz(config), model_url=model_url,
        faults=bool(config.getoption("acp_faults", default=False)))
