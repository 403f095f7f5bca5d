"""The console script: ``acp-conformance agent [OPTIONS] [-- CMD ARGS...]``, ``acp-conformance rules``,
``acp-conformance fuzz`` and ``replay`` (the fuzzer of ``acp_conformance.fuzz``), ``tap`` and ``check``
(observed traffic, ``acp_conformance.tap``; ``tap`` exits with its agent's status instead).

``agent`` is a thin wrapper over pytest with this package's plugin; with no command it runs the
suite against the bundled reference agent, so a newcomer sees a full run in one command.
Exit status: 0 conformant, 1 not conformant, 2 usage error, 6 the target speaks another protocol
version than 2 (not judged), 128+N stopped by signal N.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path

REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]
# the bundled reference client, launching the suite's relay as its agent
REFERENCE_CLIENT = [sys.executable, "-m", "acp_conformance.reference.client", "--", "{agent}"]

# pytest as the console script runs it: no cache directory in the user's folder; no assertion rewriting (the
# suite's tests are scenario files, and this package, imported before pytest starts, cannot be rewritten:
# a PytestAssertRewriteWarning on every run of a regular install)
QUIET_PYTEST = ["-p", "no:cacheprovider", "--assert=plain"]

USAGE = """acp-conformance agent [PYTEST-OPTIONS] [-- CMD ARGS...]
  Run the conformance suite against an agent (default: the bundled reference agent).
  Options before -- go to pytest: --acp-report-dir DIR, --acp-timeout S, --junitxml FILE, -n 2, ...
  Your own scenario files: --acp-scenarios PATH (a file or folder) [--acp-no-bundled].
  acp-conformance agent --help lists the suite's options.

acp-conformance client [PYTEST-OPTIONS] [-- CMD ARGS...]
  Run the conformance suite against a client (default: the bundled reference client); the suite
  plays the agent. Where CMD holds {agent}, it becomes the path of an executable (one word) that the
  client launches as its agent, as argv (my-client -- {agent}) or inside a command-line string;
  without it the suite speaks to the client on its own stdio.

acp-conformance rules [--coverage] [--side agent|client] [--explain RULE-ID]
  List the rule catalog (with --coverage: which rules the suite checks, and how; with --explain: one
  rule's sentence, source, monitor file:line, scenarios, mutants and every file that names it).

acp-conformance compare REPORT.json... -o matrix.html
  One page with the implementations as columns and the rules as rows, each cell linking to its evidence.

acp-conformance fuzz [--seed N] [--max-examples N] [--budget S] [--steps N]
                     [--report-dir DIR] [--strict] [--timeout S] [--no-prestart | --prestart-restarts] -- CMD ARGS...
                     (or --agent-cmd CMD; a client: --client-cmd CMD [--acp-client-arg=ARG ...], ARG where {args} stands or at the end)
  Fuzz the target with generated traffic judged by every rule; a failure is shrunk and written as a
  scenario file (fuzz-counterexample.yaml) beside fuzz-report.json. Exit 0: no finding, 1: a finding.

acp-conformance tap [--report-dir DIR] [--live [FILE]] [--junitxml FILE] [--strict] [--wire-log] -- AGENT ARGS...
  Put this in your editor's agent configuration: it runs the agent, passes every byte through
  unchanged, judges both the editor and the agent on the real session, and writes the reports
  (default: reports/tap/<time>-<pid>/) when the session ends. Exits with the agent's own status.

acp-conformance check [--report-dir DIR] [--strict] TRANSCRIPT...
  Judge recorded sessions (our transcript .jsonl, or a plain log: "> " client to agent, "< " agent
  to client, "! " an event, one per line). Exit 0: no blocking rule broken, 1: broken, 2: unreadable file.

acp-conformance replay FILE [--timeout S] [--strict] [--report-dir DIR] -- CMD ARGS...
                       (or --agent-cmd CMD; a client: --client-cmd CMD [--acp-client-arg=ARG ...])
  Rerun a scenario file (a fuzz counterexample, or your own) with every monitor: each scenario passed,
  failed (with its rules) or skipped (with the reason), and the reports of a suite run.
  Exit 0: it passes, 1: it fails."""


def _split(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """The options before ``--`` and the command after it (None: no ``--``; [] : ``--`` with nothing after)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def _exit_status(code: int) -> int:
    """pytest's exit status as ours: 4 (its usage error) is 2; 6 (the target speaks another protocol
    version) and 128+N (stopped by signal N) stay."""
    if code == 4:
        return 2
    return code if code in (0, 1, 2, 6) or code > 128 else 1


def _wants_help(opts: list[str]) -> bool:
    return any(o in ("-h", "--help") for o in opts)


def suite_help(side: str) -> str:
    """``acp-conformance agent|client --help``: the suite's own options on one screen (pytest's 500 lines of
    help are one ``pytest --help`` away); one line per option, its help cut to its first clause."""
    import warnings

    from _pytest.config.argparsing import Parser
    from . import plugin, run_control
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the parser is pytest's, built here only to list our options
        parser = Parser(_ispytest=True)
    for module in (plugin, run_control):
        module.pytest_addoption(parser)
    other = "client" if side == "agent" else "agent"
    lines = [f"usage: acp-conformance {side} [OPTIONS] [-- CMD ARGS...]",
             f"  Run the conformance suite against the {side} CMD starts (default: the bundled reference {side}).",
             "  Exit status: 0 conformant, 1 not conformant, 2 usage error, 6 the target speaks another protocol",
             "  version (not judged), 128+N stopped by signal N.", "", "ACP options:"]
    for opt in parser.getgroup("acp-conformance").options:
        name = opt.names()[0]
        if name in (f"--{side}-cmd", f"--{other}-cmd") or name.startswith(f"--acp-{other}-"):
            continue
        attrs = opt.attrs()
        words = f"{name} {attrs['metavar']}" if attrs.get("metavar") else name
        text = " ".join(str(attrs.get("help") or "").split())
        if len(text) > 72:
            text = text[:71].rsplit(" ", 1)[0] + " ..."
        lines.append(f"  {words:34} {text}")
    lines += ["", "Other pytest options (-n 2, --junitxml FILE, -k EXPR, -q, ...) work too: see pytest --help."]
    return "\n".join(lines)


def run_agent(argv: list[str]) -> int:
    return _run_suite("agent", argv, REFERENCE_AGENT)


def run_client(argv: list[str]) -> int:
    return _run_suite("client", argv, REFERENCE_CLIENT)


def _run_suite(side: str, argv: list[str], reference: list[str]) -> int:
    """``acp-conformance agent|client [options] -- COMMAND``: pytest with the bundled suite on COMMAND."""
    import pytest
    opts, cmd = _split(argv)
    if _wants_help(opts):
        print(suite_help(side))
        return 0
    option = f"--{side}-cmd"
    if any(o == option or o.startswith(option + "=") for o in opts):
        print(f"acp-conformance {side}: give the {side} after --, not with {option}", file=sys.stderr)
        return 2
    if cmd is not None and (not cmd or not cmd[0].strip()):
        # `agent -- $AGENT` with the variable unset must not quietly judge the reference target and pass
        print(f"acp-conformance {side}: the command after -- is empty: give the command that starts your {side} "
              f"(with no -- at all, the bundled reference {side} is run)", file=sys.stderr)
        return 2
    target = cmd if cmd is not None else reference
    # shlex.join quotes "{agent}" only if it must; the plugin splits the line back into these words
    code = pytest.main([f"{option}={shlex.join(target)}", *QUIET_PYTEST, *opts], plugins=[])
    return _exit_status(int(code))


def run_rules(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="acp-conformance rules")
    p.add_argument("--coverage", action="store_true", help="show which rules are checked, and by what")
    p.add_argument("--side", choices=["agent", "client", "both"], default=None)
    p.add_argument("--retry-classes", action="store_true",
                   help="show each request method's retry class (as is / with a key / never)")
    p.add_argument("--explain", metavar="RULE-ID",
                   help="everything about one rule: its sentence, source, monitor (file:line), scenarios, mutants, "
                        "and every file that names it")
    a = p.parse_args(argv)
    if a.explain is not None:
        return _explain_rule(a.explain)
    if a.retry_classes:
        from .protocol.retry import load_retry_classes
        source, meanings, methods = load_retry_classes()
        for name, meaning in meanings.items():
            print(f"{name:9} {meaning}")
        print()
        for rc in methods.values():
            print(f"{rc.method:27} {rc.kind:9} {'(RFD)' if rc.basis == 'rfd' else '(reading)':9} {rc.why}")
        print(f"\nsource: {source}")
        return 0
    from .rules.catalog import load_catalog, load_not_observable, load_unchecked
    from .rules.monitors import checked_on
    RULES_CHECKED = checked_on(a.side)  # a both rule counts for a side only if that side's run checks it
    hidden = load_not_observable()
    catalog = load_catalog()
    rows = [r for r in catalog.values() if a.side is None or r.side in (a.side, "both")]
    if a.coverage:
        checked = sum(1 for r in rows if r.id in RULES_CHECKED)
        blocking = [r for r in rows if r.blocking]
        # created by: who creates the rule's situation (suite: not reaching it is inconclusive; target: not
        # exercised, which does not block unless --acp-require-coverage)
        print(f"{'rule':14} {'level':9} {'side':7} {'checked by':28} {'created by':10} summary")
        for r in rows:
            by = RULES_CHECKED.get(r.id) or ("not observable" if r.id in hidden else "-")
            creator = r.creator_on(a.side if a.side in ("agent", "client") else r.side if r.side != "both" else "agent")
            print(f"{r.id:14} {r.level:9} {r.side:7} {by:28} {creator if r.id in RULES_CHECKED else '-':10} "
                  f"{r.summary[:70]}")
        unchecked = load_unchecked()
        for r in rows:
            if r.id in hidden and r.id not in RULES_CHECKED:
                print(f"  {r.id}: not observable on the wire: {hidden[r.id]}")
            elif r.id in unchecked and r.id not in RULES_CHECKED:
                print(f"  {r.id}: not checked yet: {unchecked[r.id]}")
        print(f"\n{checked} of {len(rows)} rules checked, {sum(1 for r in rows if r.id in hidden)} not observable; "
              f"{sum(1 for r in blocking if r.id in RULES_CHECKED)} of {len(blocking)} blocking rules checked")
    else:
        for r in rows:
            print(f"{r.id:14} {r.level:9} {r.side:7} {r.summary}")
    return 0


def _explain_rule(rule_id: str) -> int:
    from .rules.catalog import load_catalog
    from .rules.explain import close_matches, explain
    wanted = rule_id.strip().upper()
    if wanted not in load_catalog():
        near = close_matches(rule_id)
        hint = f"; did you mean {', '.join(near)}?" if near else "; `acp-conformance rules` lists them all"
        print(f"acp-conformance rules: {rule_id!r} is not a rule of the catalog{hint}", file=sys.stderr)
        return 2
    print("\n".join(explain(wanted)))
    return 0


def run_compare(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="acp-conformance compare")
    p.add_argument("reports", nargs="+", metavar="REPORT.json")
    p.add_argument("-o", "--output", default="matrix.html", metavar="FILE")
    a = p.parse_args(argv)
    from .report.compare import CompareError, write_matrix
    try:
        out = write_matrix(a.reports, Path(a.output))
    except CompareError as e:
        print(f"acp-conformance compare: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"acp-conformance compare: cannot write {a.output!r} ({e.strerror or e})", file=sys.stderr)
        return 2
    print(f"matrix: {out}")
    return 0


class _Usage(Exception):
    """A usage error of fuzz/replay: one sentence, exit status 2."""


def _revision_kw(a: argparse.Namespace) -> dict:
    """--acp-revision for the fuzzer: whose rules fail an example, and our schema as that revision reads it."""
    from .protocol import revisions
    revision = revisions.check_name(getattr(a, "acp_revision", None))
    return {"revision": revision, "schema_path": revisions.schema_ref(revision)}


def _fuzz_parser(prog: str, replay: bool) -> argparse.ArgumentParser:
    from .protocol.revisions import names as revision_names
    from .thresholds import FUZZ
    p = argparse.ArgumentParser(prog=prog)
    if replay:
        p.add_argument("file", metavar="FILE", help="the scenario file to rerun (a fuzz counterexample)")
    target = p.add_mutually_exclusive_group()  # or the agent's command after --, as for `acp-conformance agent`
    target.add_argument("--agent-cmd", metavar="CMD", help="the agent's command line (the suite plays the client)")
    target.add_argument("--client-cmd", metavar="CMD", help="the client's command line (the suite plays the agent)")
    if replay:
        p.add_argument("--report-dir", default="reports", metavar="DIR",
                       help="where report.json, report.html and the transcripts go (default reports/; agents)")
    if not replay:
        p.add_argument("--seed", type=int, default=0, metavar="N",
                       help="the run's seed: the same seed against the same deterministic target gives the same run")
        p.add_argument("--max-examples", type=int, default=100, metavar="N", help="examples to run (default 100)")
        p.add_argument("--budget", type=float, default=120.0, metavar="S",
                       help="wall-clock seconds for the run (default 120); shrinking a failure gets half as much more")
        p.add_argument("--steps", type=int, default=100, metavar="N", help="rules per example (default 100)")
        p.add_argument("--report-dir", default="reports", metavar="DIR",
                       help="where fuzz-report.json and the shrunk counterexample go (default reports/)")
        p.add_argument("--prestart-restarts", action="store_true",
                       help="agents: start the process of a resume in a new process ahead too, in the example's "
                            "directory (only for an agent that reads what it stored when asked, not at start-up)")
        p.add_argument("--faults", action="store_true",
                       help="agents: interleave faults into the examples (docs/faults.md): the agent killed mid-turn "
                            "and resumed, a lost answer retried under its key, a duplicated prompt, a cancel held "
                            "past the idle, a pause in reading; shrunk to a scenario with its fault steps")
        p.add_argument("--no-prestart", action="store_true",
                       help="agents: start each example's process only when the example starts (by default it "
                            "starts while the example before runs, so two processes of the agent exist at once)")
    p.add_argument("--acp-client-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for the client, where {args} stands in --client-cmd or at its end "
                        "(repeatable; write --acp-client-arg=--flag for a value that starts with a dash)")
    p.add_argument("--strict", action="store_true", help="SHOULD-level failures count as findings too")
    p.add_argument("--acp-revision", choices=revision_names(), default=None,
                   help="the ACP v2 revision judged: base (v2 as released: no idempotencyKey sent, batches never "
                        "failed) or preview (the default)")
    p.add_argument("--timeout", type=float, default=FUZZ.timeout, metavar="S",
                   help=f"seconds to wait for each answer of the target (default {FUZZ.timeout:g})")
    return p


def _target_argv(a: argparse.Namespace) -> tuple[str, list[str]]:
    side, cmd = ("agent", a.agent_cmd) if a.agent_cmd is not None else ("client", a.client_cmd)
    from .target_command import CommandError, target_argv, with_extra_args
    try:
        argv = target_argv(side, cmd, anchor=Path.cwd())  # fuzz examples and replays run in fresh folders
    except CommandError as e:
        raise _Usage(str(e)) from None
    if a.acp_client_arg:
        if side != "client":
            raise _Usage("--acp-client-arg gives arguments to a client: use it with --client-cmd")
        argv = with_extra_args(argv, a.acp_client_arg)
    if not a.timeout > 0:
        raise _Usage(f"--timeout must be a positive number of seconds (got {a.timeout!r})")
    return side, argv


def _client_fuzzer(argv: list[str], a: argparse.Namespace):
    """The client fuzzer (imported only now) for the client's command line (its --acp-client-arg in place),
    or a usage error when this installation has none."""
    from .fuzz.client_entry import ClientFuzzUnavailable, client_fuzzer
    try:
        return client_fuzzer(argv, timeout=a.timeout, strict=a.strict, **_revision_kw(a))
    except ClientFuzzUnavailable as e:
        raise _Usage(f"--client-cmd: {e}") from None


def _parse_fuzz_args(prog: str, replay: bool, argv: list[str]) -> argparse.Namespace:
    """fuzz/replay options; the agent is given after ``--`` (as for ``acp-conformance agent``) or with
    --agent-cmd, a client with --client-cmd."""
    opts, cmd = _split(argv)
    a = _fuzz_parser(prog, replay).parse_args(opts)
    given = [o for o, v in (("--agent-cmd", a.agent_cmd), ("--client-cmd", a.client_cmd)) if v is not None]
    if cmd is not None:
        if given:
            raise _Usage(f"give the target once: after -- or with {given[0]}, not both")
        if not cmd or not cmd[0].strip():
            raise _Usage("the command after -- is empty: give the command that starts your agent")
        a.agent_cmd = shlex.join(cmd)
    elif not given:
        raise _Usage("give the agent after -- (acp-conformance fuzz -- my-agent --stdio), "
                     "or --agent-cmd CMD, or --client-cmd CMD")
    return a


def _not_judged_status(contact) -> int:
    """The suite's exit status for a target it cannot judge: 6 for another protocol version, else 1."""
    from .rules.first_contact import NOT_V2
    return 6 if contact.kind == NOT_V2 else 1


def run_fuzz(argv: list[str]) -> int:
    a = _parse_fuzz_args("acp-conformance fuzz", False, argv)
    side, target = _target_argv(a)
    for name, v in (("--max-examples", a.max_examples), ("--steps", a.steps), ("--budget", a.budget)):
        if not v > 0:
            raise _Usage(f"{name} must be a positive number (got {v!r})")
    report_dir = Path(a.report_dir)
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _Usage(f"--report-dir: cannot create {a.report_dir!r} ({e.strerror or e})") from None
    from .fuzz.explain import fuzz_summary
    kw = dict(seed=a.seed, max_examples=a.max_examples, budget=a.budget, step_count=a.steps, report_dir=report_dir)
    print(f"acp-conformance fuzz: {side} {shlex.join(target)}\n  seed {a.seed}, up to {a.max_examples} examples "
          f"of {a.steps} rules in {a.budget:g} s (a finding is then shrunk for up to {a.budget / 2:g} s more)",
          flush=True)
    if side == "client":
        client = _client_fuzzer(target, a)
        result = client.fuzz(client.config, **kw)
    else:
        from .fuzz.run import fuzz
        from .fuzz.config import FuzzConfig
        result = fuzz(FuzzConfig(target, timeout=a.timeout, strict=a.strict, prestart=not a.no_prestart,
                                          prestart_restarts=a.prestart_restarts, faults=a.faults,
                                          **_revision_kw(a)), **kw)
    print("\n".join(fuzz_summary(result, side, target)[1:]))  # the first line is printed above
    if result.first_contact is not None:
        return _not_judged_status(result.first_contact)
    return 1 if result.failure else 0


def run_replay(argv: list[str]) -> int:
    a = _parse_fuzz_args("acp-conformance replay", True, argv)
    side, target = _target_argv(a)
    from .fuzz.explain import replay_summary
    from .scenarios.model import ScenarioFileError
    try:
        if side == "client":
            client = _client_fuzzer(target, a)
            result = client.replay(a.file, client.config)
        else:
            from .fuzz.run import replay
            from .fuzz.config import FuzzConfig
            report_dir = Path(a.report_dir)
            try:
                report_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise _Usage(f"--report-dir: cannot create {a.report_dir!r} ({e.strerror or e})") from None
            result = replay(a.file, FuzzConfig(target, timeout=a.timeout, strict=a.strict, **_revision_kw(a)),
                            report_dir)
    except ScenarioFileError as e:
        raise _Usage(" ".join(str(e).split())) from None
    print("\n".join(replay_summary(a.file, result, side, target)))
    if getattr(result, "first_contact", None) is not None:
        return _not_judged_status(result.first_contact)
    return 1 if result.failed else 0


def _fuzz_command(fn, name: str, argv: list[str]) -> int:
    from .interruption import SignalGuard
    guard = SignalGuard(owner=True).install()  # SIGTERM/SIGHUP: every target killed at once, then unwind
    try:
        status = fn(argv)
    except SystemExit as e:  # argparse: it has printed the usage and the error
        return 2 if e.code else 0
    except _Usage as e:
        print(f"acp-conformance {name}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"acp-conformance {name}: {e or 'interrupted'}", file=sys.stderr)
        return guard.exit_status or 130
    except BaseException:
        # the signal's interrupt may surface wrapped (an exception group of a task group) or as what it broke
        # (a transport closed under a step): after a signal, the run was stopped, whatever unwound it
        if guard.signum is None:
            raise
        status = None
    finally:
        guard.sweep()
        guard.uninstall()
    if guard.signum is not None:  # a signal whose interrupt was swallowed (a finalizer) still stops the run
        print(f"acp-conformance {name}: stopped by {signal.Signals(guard.signum).name}", file=sys.stderr)
        return guard.exit_status
    return status


def _print_version() -> int:
    from . import SPEC_REVISION, __version__
    from .protocol.schema import load_schema
    schema = load_schema(None)
    print(f"acp-conformance {__version__}: judges {SPEC_REVISION}; schema {schema.revision} "
          f"(sha256 {schema.sha256[:12]}; --acp-schema swaps it)")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("--version", "-V", "version"):
        return _print_version()
    if cmd == "agent":
        return run_agent(rest)
    if cmd == "client":
        return run_client(rest)
    if cmd == "compare":
        try:
            return run_compare(rest)
        except SystemExit as e:
            return 2 if e.code else 0
    if cmd == "rules":
        try:
            return run_rules(rest)
        except SystemExit as e:
            return 2 if e.code else 0
    if cmd == "fuzz":
        return _fuzz_command(run_fuzz, "fuzz", rest)
    if cmd == "replay":
        return _fuzz_command(run_replay, "replay", rest)
    if cmd == "tap":
        from .tap.proxy import run_tap
        return run_tap(rest)
    if cmd == "check":
        from .tap.check import run_check
        return run_check(rest)
    print(f"acp-conformance: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
