"""The console script: ``acp-conformance agent [OPTIONS] [-- CMD ARGS...]``, ``acp-conformance rules``.

``agent`` is a thin wrapper over pytest with this package's plugin; with no command it runs the
suite against the bundled reference agent, so a newcomer sees a full run in one command.
Exit status: 0 conformant, 1 not conformant, 2 usage error.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

REFERENCE_AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]
# the bundled reference client, launching the suite's relay as its agent
REFERENCE_CLIENT = [sys.executable, "-m", "acp_conformance.reference.client", "--", "{agent}"]

USAGE = """acp-conformance agent [PYTEST-OPTIONS] [-- CMD ARGS...]
  Run the conformance suite against an agent (default: the bundled reference agent).
  Options before -- go to pytest: --acp-report-dir DIR, --acp-timeout S, --junitxml FILE, -n 2, ...

acp-conformance client [PYTEST-OPTIONS] [-- CMD ARGS...]
  Run the conformance suite against a client (default: the bundled reference client); the suite
  plays the agent. Where CMD holds {agent}, the client is to launch that command as its agent;
  without it the suite speaks to the client on its own stdio.

acp-conformance rules [--coverage] [--side agent|client]
  List the rule catalog (with --coverage: which rules the suite checks, and how).

acp-conformance compare REPORT.json... -o matrix.html
  One page with the implementations as columns and the rules as rows, each cell linking to its evidence."""


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def run_agent(argv: list[str]) -> int:
    import pytest
    opts, cmd = _split(argv)
    if any(o == "--agent-cmd" or o.startswith("--agent-cmd=") for o in opts):
        print("acp-conformance agent: give the agent after --, not with --agent-cmd", file=sys.stderr)
        return 2
    target = cmd or REFERENCE_AGENT
    code = pytest.main([f"--agent-cmd={shlex.join(target)}", "-p", "no:cacheprovider", *opts],
                       plugins=[])
    code = int(code)
    if code == 4:  # pytest's usage error
        return 2
    return code if code in (0, 1, 2) else 1


def run_client(argv: list[str]) -> int:
    import pytest
    opts, cmd = _split(argv)
    if any(o == "--client-cmd" or o.startswith("--client-cmd=") for o in opts):
        print("acp-conformance client: give the client after --, not with --client-cmd", file=sys.stderr)
        return 2
    target = cmd or REFERENCE_CLIENT
    # shlex.join quotes "{agent}" only if it must; the plugin splits the line back into these words
    code = int(pytest.main([f"--client-cmd={shlex.join(target)}", "-p", "no:cacheprovider", *opts], plugins=[]))
    if code == 4:  # pytest's usage error
        return 2
    return code if code in (0, 1, 2) else 1


def run_rules(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="acp-conformance rules")
    p.add_argument("--coverage", action="store_true", help="show which rules are checked, and by what")
    p.add_argument("--side", choices=["agent", "client", "both"], default=None)
    a = p.parse_args(argv)
    from .rules.catalog import load_catalog, load_not_observable
    from .rules.monitors import checked_on
    RULES_CHECKED = checked_on(a.side)  # a both rule counts for a side only if that side's run checks it
    hidden = load_not_observable()
    catalog = load_catalog()
    rows = [r for r in catalog.values() if a.side is None or r.side in (a.side, "both")]
    if a.coverage:
        checked = sum(1 for r in rows if r.id in RULES_CHECKED)
        blocking = [r for r in rows if r.blocking]
        print(f"{'rule':14} {'level':9} {'side':7} {'checked by':28} summary")
        for r in rows:
            by = RULES_CHECKED.get(r.id) or ("not observable" if r.id in hidden else "-")
            print(f"{r.id:14} {r.level:9} {r.side:7} {by:28} {r.summary[:70]}")
        for r in rows:
            if r.id in hidden and r.id not in RULES_CHECKED:
                print(f"  {r.id}: not observable on the wire: {hidden[r.id]}")
        print(f"\n{checked} of {len(rows)} rules checked, {sum(1 for r in rows if r.id in hidden)} not observable; "
              f"{sum(1 for r in blocking if r.id in RULES_CHECKED)} of {len(blocking)} blocking rules checked")
    else:
        for r in rows:
            print(f"{r.id:14} {r.level:9} {r.side:7} {r.summary}")
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
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
    print(f"acp-conformance: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
