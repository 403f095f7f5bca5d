"""The fuzzer's rate against agents of three kinds, measured in one run, side by side.

    python bench/bench_fuzz_targets.py [--budget 20] [--seeds 1,2] [--targets reference,turn,typescript]
                                       [--baseline-code DIR] [--no-prestart]

Targets: ``reference`` (our reference agent), ``turn`` (``bench/turn_agent.py``: every prompt a plain reply
after 20-40 ms, no tools, no permission requests), ``typescript`` (the TypeScript SDK interop agent,
``tests/interop/ts/agent.mjs``; skipped unless ``tests/interop/install.sh`` installed it, here or in
``$ACP_INTEROP_DIR``). For each target and seed one fuzz run of ``--budget`` seconds (100 rules per
example, the default of ``acp-conformance fuzz``); the rate is protocol steps per second of the search,
up to the first finding (the TypeScript agent has known findings, IDEM-001 among them; shrinking is not
timed). Each run is a child process, so that runs compared are alike.

Baselines, measured in the same run and interleaved with it (so that both see the same load):

* ``--baseline-code DIR``: the same runs with the fuzzer of another checkout (``git worktree add`` or
  ``git archive`` of the commit before a change);
* ``--prestart-restarts``: the same runs with each restart's process started ahead too (opt-in);
* ``--no-prestart``: the same runs with no process started ahead (each example's and each restart's
  process starts when it is needed);
* the floor: the target's own cost of the exchanges, driven by a raw stdio script (start and initialize,
  a request's round trip, a prompt's turn to its idle).

Rates depend on the machine and its load: the script prints the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def interop_ts_agent() -> Path | None:
    for base in (os.environ.get("ACP_INTEROP_DIR"), ROOT / "tests" / "interop"):
        if base and (Path(base) / "ts" / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
            return Path(base) / "ts" / "agent.mjs"
    return None


def target_argv(name: str) -> list[str] | None:
    if name == "reference":
        return [sys.executable, "-m", "acp_conformance.reference.agent"]
    if name == "turn":
        return [sys.executable, str(ROOT / "bench" / "turn_agent.py")]
    if name == "typescript":
        agent = interop_ts_agent()
        return ["node", str(agent)] if agent is not None else None
    raise SystemExit(f"unknown target {name!r} (reference, turn, typescript)")


# -- one fuzz run (in a child process, with the fuzzer of --code) -----------------------------------------

def child(code: str, argv: list[str], seed: int, budget: float, prestart: str) -> dict:
    """One run: steps and seconds of the search (up to the first finding), and where the time went."""
    sys.path.insert(0, code)
    import acp_conformance.fuzz.run as run_mod
    try:
        from acp_conformance.fuzz.config import FuzzConfig, FuzzFailure, StepStats
    except ImportError:  # a checkout from before the fuzzer was split
        from acp_conformance.fuzz.stateful import FuzzConfig, FuzzFailure, StepStats

    stats: list = []
    first: list = []
    t0 = time.perf_counter()
    cpu0 = _cpu()
    init_stats, init_failure = StepStats.__init__, FuzzFailure.__init__

    def capture(self, *a, **kw):
        init_stats(self, *a, **kw)
        stats.append(self)

    def found(self, *a, **kw):
        init_failure(self, *a, **kw)
        if not first and stats:
            first.append((stats[0].steps, time.perf_counter() - t0, _cpu()))

    StepStats.__init__, FuzzFailure.__init__ = capture, found

    class NoShrink:  # the search is measured, not the shrinking
        def __init__(self, fs, rec, deadline):
            self.rec = rec

        def reduce(self):
            return self.rec

    run_mod.Reducer = NoShrink
    options = {"prestart": prestart != "none"}
    if prestart == "restarts":
        options["prestart_restarts"] = True
    result = run_mod.fuzz(FuzzConfig(argv, startup_timeout=30.0, **options), seed=seed,
                          max_examples=10 ** 6, budget=budget, step_count=100)
    s = result.stats
    steps, seconds, cpu = first[0] if first else (result.steps, result.seconds, _cpu())
    return {"steps": steps, "seconds": seconds, "examples": s.examples, "processes": s.processes,
            "cpu_fuzzer": cpu[0] - cpu0[0], "cpu_targets": cpu[1] - cpu0[1],
            "restart_spares": getattr(s, "restart_spares", 0), "spares_paused": getattr(s, "spares_paused", 0),
            "finding": (result.failure or "")[:60],
            "split": {k: round(v, 3) for k, v in run_mod.time_split(result).items()}}


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its children reaped so far (the target processes)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def measure(code: Path, name: str, seed: int, budget: float, prestart: str = "examples") -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(code), name, str(seed), str(budget), prestart],
                         capture_output=True, text=True, cwd=code)
    if out.returncode != 0:
        raise SystemExit(f"the run of {name} (seed {seed}, {code}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the floor: the same exchanges from a raw stdio script ---------------------------------------------------

def floor(argv: list[str], n: int = 100) -> dict:
    """The target's own costs: start + initialize, a session/list round trip, a prompt's turn to its idle."""
    cwd = tempfile.mkdtemp(prefix="acp-bench-raw-")
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    ids = iter(range(1, 10 ** 9))

    def request(method: str, params: dict, idle_of: str | None = None) -> dict:
        rid = next(ids)
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
        p.stdin.flush()
        answer, idle = None, idle_of is None
        while answer is None or not idle:
            line = p.stdout.readline()
            if not line:
                raise SystemExit(f"{argv}: the target ended during {method}")
            m = json.loads(line)
            if m.get("id") == rid and "method" not in m:
                answer = m
            elif "method" in m and "id" in m:  # a request of the agent: not supported here
                p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601,
                                                                                      "message": "no"}}) + "\n").encode())
                p.stdin.flush()
            elif m.get("method") == "session/update":
                u = (m.get("params") or {}).get("update") or {}
                idle = idle or (u.get("sessionUpdate") == "state_update" and u.get("state") == "idle")
        return answer

    try:
        request("initialize", {"protocolVersion": 2, "info": {"name": "bench", "version": "0"}})
        start = time.perf_counter() - t0
        sid = request("session/new", {"cwd": cwd})["result"]["sessionId"]
        t = time.perf_counter()
        for _ in range(n):
            request("session/list", {})
        rtt = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n // 4):
            request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]}, sid)
        turn = (time.perf_counter() - t) / (n // 4)
    finally:
        p.kill()
        p.wait()
    return {"start_ms": start * 1e3, "request_ms": rtt * 1e3, "turn_ms": turn * 1e3}


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        code, name, seed, budget, prestart = sys.argv[2:7]
        print(json.dumps(child(code, target_argv(name), int(seed), float(budget), prestart)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of fuzzing per run (default 20)")
    ap.add_argument("--seeds", default="1,2", help="one run per seed and variant (comma-separated)")
    ap.add_argument("--targets", default="reference,turn,typescript")
    ap.add_argument("--baseline-code", metavar="DIR", help="another checkout: its fuzzer is the baseline")
    ap.add_argument("--no-prestart", action="store_true", help="also the runs with no process started ahead")
    ap.add_argument("--prestart-restarts", action="store_true",
                    help="also the runs whose restarts take a process started ahead (FuzzConfig.prestart_restarts)")
    a = ap.parse_args()
    variants = [("this checkout", ROOT, "examples")]
    if a.baseline_code:
        variants.append((f"baseline {a.baseline_code}", Path(a.baseline_code).resolve(), "examples"))
    if a.prestart_restarts:
        variants.append(("restarts on processes started ahead", ROOT, "restarts"))
    if a.no_prestart:
        variants.append(("no process started ahead", ROOT, "none"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for name in a.targets.split(","):
        argv = target_argv(name)
        if argv is None:
            print(f"{name}: skipped (not installed: bash tests/interop/install.sh)")
            continue
        f = floor(argv)
        print(f"{name}: floor (raw stdio script): start + initialize {f['start_ms']:.0f} ms, a request's round "
              f"trip {f['request_ms']:.2f} ms, a prompt's turn to idle {f['turn_ms']:.1f} ms")
        totals: dict[str, list] = {label: [] for label, _, _ in variants}
        for seed in (int(s) for s in a.seeds.split(",")):
            for label, code, prestart in variants:  # interleaved: each variant sees the same load
                totals[label].append(measure(code, name, seed, a.budget, prestart))
        rates = {}
        for label, runs in totals.items():
            steps, seconds = sum(r["steps"] for r in runs), sum(r["seconds"] for r in runs)
            rates[label] = steps / seconds if seconds else 0.0
            split = {k: sum(r["split"].get(k, 0) for r in runs) / len(runs) for k in runs[0]["split"]}
            print(f"  {label}: {rates[label]:6.1f} steps/s ({steps} steps in {seconds:.1f} s of search; "
                  f"{sum(r['examples'] for r in runs)} examples, {sum(r['processes'] for r in runs)} processes, "
                  f"{sum(r['restart_spares'] for r in runs)} restarts on a process started ahead, "
                  f"{sum(r.get('spares_paused', 0) for r in runs)} with the next example's spare kept; "
                  f"findings: {'; '.join(sorted({r['finding'] for r in runs if r['finding']})) or 'none'})")
            print("    time: " + ", ".join(f"{k.replace('_', ' ')} {v:.0%}" for k, v in split.items()))
            if all("cpu_fuzzer" in r for r in runs):  # (a baseline checkout's child may predate the field)
                fz, tg = sum(r["cpu_fuzzer"] for r in runs), sum(r["cpu_targets"] for r in runs)
                print(f"    CPU: the fuzzer {fz:.1f} s, the target processes {tg:.1f} s (those ended), in {seconds:.1f} s: "
                      f"{(fz + tg) / seconds:.2f} of the machine's {os.cpu_count()} cores busy")
        mine = rates["this checkout"]
        for label, rate in rates.items():
            if label != "this checkout" and rate:
                print(f"  this checkout / {label}: {mine / rate:.2f}x")
        if mine:
            print(f"  per step: {1e3 / mine:.1f} ms; the target's request round trip {f['request_ms']:.2f} ms, "
                  f"its turn {f['turn_ms']:.1f} ms")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
