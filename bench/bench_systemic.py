"""How long a whole run takes against an agent with a defect in every exchange, beside the reference agent's.

    python bench/bench_systemic.py [--runs 1] [--run-ahead N]

Each target gets the whole bundled agent suite, serially (``acp-conformance agent -- CMD``), --runs times
(medians): the reference agent (and its memory-only mode), then the mutants of issue 31, each written after a
defect fixture of acp-tck's v2 suite (tests/mutants/err.py ``wrong-id-echo``, transport.py
``emits-batch-updates``, cancel.py ``cancel-wrong-stop-reason``). It prints each run's wall time, its ratio to
the reference agent's, the verdict line, and the one sentence of the cause when the run gave one (report.json's
verdict.reason, else the message of the one rule that failed). Target: every mutant under 60 s, a small multiple of the reference agent's time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "tests" / "mutants" / "agent_mutants.py"
TARGETS = [
    ("reference", [sys.executable, "-m", "acp_conformance.reference.agent"], {}),
    ("reference memory-only", [sys.executable, "-m", "acp_conformance.reference.agent"],
     {"ACP_REFERENCE_MEMORY_ONLY": "1"}),
    ("wrong-id-echo", [sys.executable, str(MUTANTS), "wrong-id-echo"], {}),
    ("emits-batch-updates", [sys.executable, str(MUTANTS), "emits-batch-updates"], {}),
    ("cancel-wrong-stop-reason", [sys.executable, str(MUTANTS), "cancel-wrong-stop-reason"], {}),
]


def run_once(argv: list[str], env: dict[str, str], extra: list[str]) -> tuple[float, str, str]:
    """(seconds, the verdict line, the verdict's reason) of one whole run."""
    with tempfile.TemporaryDirectory(prefix="bench-systemic-") as d:
        cmd = [sys.executable, "-m", "acp_conformance", "agent", f"--acp-report-dir={d}", *extra, "--", *argv]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=d, capture_output=True, text=True, env={**os.environ, **env}, timeout=1800)
        seconds = time.monotonic() - t0
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ACP verdict:")]
        try:
            report = json.loads((Path(d) / "report.json").read_text())
        except (OSError, ValueError):
            report = {}
        reason = (report.get("verdict") or {}).get("reason", "")
        failed = [r for r in report.get("rules", []) if r.get("status") == "fail"]
        if not reason and len(failed) == 1:  # no stop: the one failed rule is the cause
            reason = f"{failed[0]['id']}: {failed[0]['evidence'][0]['message']}"
        return seconds, lines[-1] if lines else f"(no verdict; exit {proc.returncode})", reason


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--run-ahead", type=int, default=None, help="--acp-run-ahead for every run (default: the suite's)")
    args = ap.parse_args()
    extra = [] if args.run_ahead is None else [f"--acp-run-ahead={args.run_ahead}"]
    base = None
    for name, argv, env in TARGETS:
        runs = [run_once(argv, env, extra) for _ in range(args.runs)]
        seconds = statistics.median(r[0] for r in runs)
        base = base or seconds
        print(f"{name:26} {seconds:7.1f} s  x{seconds / base:4.1f}  {runs[-1][1][:110]}")
        if runs[-1][2]:
            print(f"{'':26} cause: {runs[-1][2]}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
