"""What the suite costs beyond the target itself, measured in one run against the reference agent.

    python bench/bench_suite.py [--prompts 50] [--frames 50000]

1. The same exchange (initialize, session/new, N prompts each awaited to its idle) through a
   minimal raw stdio driver and through the suite's runner with every monitor on; the ratio is
   the suite's overhead (target: at most 1.5).
2. Import time of the plugin and collection time of the bundled suite (target: under 1 s).
3. Per-frame cost of the transcript and all monitors, and peak memory for a 50,000-frame session
   (target: under 100 MB).
4. With --whole: the realistic cases, in the same run: the whole bundled agent suite against the
   reference agent with its default simulated work and against the TypeScript and Python SDK interop
   agents (when tests/interop/install.sh has installed them), each serial and with -n 2, beside the
   floor for each (the same exchanges replayed from the run's transcripts by a raw stdio script, in the schedule
   the run followed: floor.py), each with the --acp-run-ahead values of --run-ahead (default 0,5: time ratios
   beside the first), --runs times (medians); then whether every run of a target gave the same rule verdicts.
   Beside that floor, the floor with the suite's observation windows (its settles: the same replay waiting
   where the run settled, as a raw script checking the same things would; floor.py): the suite's time against
   it is what the suite's own machinery costs (--no-windows: leave it out).
Timings are medians of a few repetitions; the ratio is what to quote, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from floor import ReplayStats, replay_floor  # noqa: E402  (bench/, beside this script)

AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]


INTEROP = Path(os.environ.get("ACP_INTEROP_DIR") or ROOT / "tests" / "interop")  # where install.sh put the agents
TARGETS = {
    "reference": AGENT,
    "typescript": ["node", str(INTEROP / "ts" / "agent.mjs")],
    "python": [str(INTEROP / ".venv" / "bin" / "python"), str(INTEROP / "py" / "agent.py")],
}


def installed(name: str) -> bool:
    if name == "typescript":
        return (INTEROP / "ts" / "node_modules" / "@agentclientprotocol" / "sdk").is_dir()
    if name == "python":
        return Path(TARGETS["python"][0]).exists()
    return True


def raw_driver(prompts: int, workdir: str, agent: list[str] = AGENT) -> float:
    """Write each request, read lines until its answer (and, for prompts, the idle)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=workdir)

    def send(msg):
        p.stdin.write(json.dumps(msg).encode() + b"\n")
        p.stdin.flush()

    def until(pred):
        while True:
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("agent exited")
            m = json.loads(line)
            if pred(m):
                return m

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "raw", "version": "0"}}})
    until(lambda m: m.get("id") == 0)
    send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": workdir}})
    sid = until(lambda m: m.get("id") == 1)["result"]["sessionId"]
    for i in range(prompts):
        rid = 2 + i
        send({"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]}})
        got_resp = got_idle = False
        while not (got_resp and got_idle):
            m = until(lambda m: True)
            got_resp |= m.get("id") == rid
            u = (m.get("params") or {}).get("update") or {}
            got_idle |= u.get("sessionUpdate") == "state_update" and u.get("state") == "idle"
    p.stdin.close()
    p.wait()
    return time.perf_counter() - t0


def suite_run(prompts: int, workdir: str, agent: list[str] = AGENT) -> tuple[float, int]:
    import anyio

    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator
    from acp_conformance.rules.monitor import MonitorContext
    from acp_conformance.rules.monitors import ALL_MONITORS
    from acp_conformance.scenarios.model import Scenario, Step
    from acp_conformance.scenarios.runner import Runner, RunSettings, TargetSpec

    steps = [Step("initialize", {}, 0), Step("new_session", {"save": "s"}, 1)]
    steps += [Step("prompt", {"session": "$s", "text": "Say hello"}, 2 + i) for i in range(prompts)]
    scn = Scenario("bench", Path("bench"), [], steps)
    validator = BENCH_VALIDATOR.setdefault("v", Validator(cached_schema(None)))
    t0 = time.perf_counter()
    ctx = MonitorContext(options={"validator": validator})
    ctx.add_monitors(ALL_MONITORS)
    runner = Runner(scn, TargetSpec(agent), RunSettings(test_timeout=600, startup_timeout=60), Path(workdir), listeners=[ctx.feed])
    result = anyio.run(runner.run)
    ctx.finish()
    elapsed = time.perf_counter() - t0
    if result.error or result.harness_error:
        raise RuntimeError(result.error or result.harness_error)
    bad = [f for f in ctx.findings if f.status in ("fail", "warn")]
    if bad and agent is AGENT:
        raise RuntimeError(f"the reference agent was flagged in the benchmark: {bad[:3]}")
    return elapsed, len(result.transcript.frames)


BENCH_VALIDATOR: dict = {}


def median_of(fn, n: int):
    return statistics.median(fn() for _ in range(n))


def import_and_collect() -> tuple[float, float, float, float]:
    """(plugin import beyond bare python, pytest's own collection time of the suite, the whole
    collect-only process, the same process for an empty directory without the suite)."""
    t_import = median_of(lambda: _time([sys.executable, "-c", "import acp_conformance.plugin"]), 3)
    t_python = median_of(lambda: _time([sys.executable, "-c", "pass"]), 3)
    with tempfile.TemporaryDirectory() as d:
        base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        suite = base + [f"--agent-cmd={' '.join(AGENT)}", f"--acp-report-dir={d}"]
        collected = []

        def run_suite_collection() -> float:
            t0 = time.perf_counter()
            out = subprocess.run(suite, cwd=d, check=True, capture_output=True, text=True).stdout
            dt = time.perf_counter() - t0
            m = re.search(r"collected in ([0-9.]+)s", out)
            collected.append(float(m.group(1)) if m else float("nan"))
            return dt

        t_process = median_of(run_suite_collection, 3)
        # pytest and every installed plugin (hypothesis imports itself at the end of any run)
        t_empty = median_of(lambda: _time_ok(base, cwd=d), 3)
    return t_import - t_python, statistics.median(collected), t_process, t_empty


def _time_ok(cmd, cwd=None) -> float:
    """Like _time, for a command whose exit status does not matter (pytest exits 5 on no tests)."""
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True)
    return time.perf_counter() - t0


def _time(cmd, cwd=None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def frame_cost(n: int) -> tuple[float, float]:
    """(microseconds per frame, peak MB): timed without tracemalloc (it slows Python down several
    times), then measured again with it for the memory."""
    per_frame, _ = _feed_frames(n, trace=False)
    _, peak = _feed_frames(n, trace=True)
    return per_frame, peak


def _feed_frames(n: int, trace: bool) -> tuple[float, float]:
    """Feed n agent frames of a long streaming turn through transcript + monitors."""
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator
    from acp_conformance.rules.monitor import MonitorContext
    from acp_conformance.rules.monitors import ALL_MONITORS
    from acp_conformance.wire.transcript import Transcript

    sid = "sess_bench"

    def line(msg):
        return json.dumps(msg, separators=(",", ":")).encode()

    validator = Validator(cached_schema(None))
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    ctx = MonitorContext(options={"validator": validator})
    ctx.add_monitors(ALL_MONITORS)
    tr = Transcript(listeners=[ctx.feed])
    tr.event("start", argv=AGENT, cwd="/tmp", pid=1)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "b", "version": "0"}}}
    tr.sent(line(init), init)
    tr.received(line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2, "capabilities": {"session": {}},
                                                              "info": {"name": "a", "version": "1"}}}))
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}}
    tr.sent(line(new), new)
    tr.received(line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": sid}}))
    prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
              "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}}
    tr.sent(line(prompt), prompt)
    upd = lambda u: line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}})
    tr.received(upd({"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "go"}]}))
    tr.received(line({"jsonrpc": "2.0", "id": 2, "result": {"messageId": "u1"}}))
    tr.received(upd({"sessionUpdate": "state_update", "state": "running"}))
    for i in range(n):
        tr.received(upd({"sessionUpdate": "agent_message_chunk", "messageId": "a1",
                         "content": {"type": "text", "text": f"chunk {i} of a long answer"}}))
    tr.received(upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
    tr.event("stdin-closed")
    tr.event("eof")
    tr.event("exit", returncode=0, status="exited with status 0")
    ctx.finish()
    elapsed = time.perf_counter() - t0
    peak = 0
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    bad = [f for f in ctx.findings if f.status in ("fail", "warn")]
    assert not bad, bad[:3]
    # the cost of parsing (done by the transcript) is included: it is part of recording a frame
    return elapsed / (n + 10) * 1e6, peak / 2**20


def whole_suite(agent: list[str], workers: int, before: Path | None = None,
                keep: Path | None = None, run_ahead: int | None = None) -> tuple[float, str, dict]:
    """(seconds, pytest's summary line, rule -> status) for the whole bundled agent suite against ``agent``;
    ``before``: a checkout of another revision of the project, run instead of this one (put first on
    PYTHONPATH); ``keep``: where the report and transcripts go (else a temporary directory); ``run_ahead``: the
    --acp-run-ahead value (None: the default)."""
    env = dict(os.environ)
    # as on a user's machine: pytest caches the modules it rewrites (hypothesis, anyio: its plugins); without
    # bytecode every run parses them again, about a second of each run
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if before is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(before)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.TemporaryDirectory() as d:
        reports = keep or Path(d) / "reports"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
               f"--agent-cmd={' '.join(agent)}", f"--acp-report-dir={reports}", "--acp-startup-timeout=60"]
        if run_ahead is not None:
            cmd.append(f"--acp-run-ahead={run_ahead}")
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=d, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
        try:
            rules = {r["id"]: r["status"] for r in json.loads((reports / "report.json").read_text())["rules"]}
        except (OSError, ValueError, KeyError, TypeError):
            rules = {}
    lines = [x for x in out.stdout.splitlines() if re.search(r"\d+ (passed|failed|skipped).* in [0-9.]+s", x)]
    return dt, (lines[-1].strip("= ") if lines else f"exit {out.returncode}"), rules


@dataclass
class WholeRun:
    """One whole-suite run beside its floor."""
    seconds: float
    summary: str
    rules: dict
    floor: float
    replayed: ReplayStats
    windows: float | None = None  # the floor with the run's settles kept (None: not measured)


def realistic(prompts: int, names: list[str], workers_list: list[int], before: Path | None = None,
              aheads: list[int] | None = None, runs: int = 1, windows: bool = True) -> list[str]:
    """Each target, each -n, each --acp-run-ahead K (``aheads``; the first is the base the others are compared
    with), ``runs`` times, beside the floor of each run's own exchanges in its own schedule (floor.py); then the
    medians, and per target whether every run gave the same rule verdicts. Returns the table's rows."""
    aheads = aheads or [None]
    table = ["| target | -n | run-ahead | suite | floor | suite / floor | floor + windows | suite / (floor + windows) "
             "| / first run-ahead |", "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        agent = TARGETS[name]
        if not installed(name):
            print(f"{name}: not installed (bash tests/interop/install.sh), left out")
            continue
        with tempfile.TemporaryDirectory() as d:
            raw = raw_driver(prompts, d, agent)
            suite, _ = suite_run(prompts, d, agent)
        print(f"{name}: prompt lifecycle of {prompts}: raw {raw:.3f} s, suite {suite:.3f} s, "
              f"ratio {suite / raw:.2f} (target <= 1.3)", flush=True)
        verdicts: dict[str, dict] = {}  # "-n W, run-ahead K, run R" -> rule -> status
        for workers in workers_list:
            base: float | None = None
            for k in aheads:
                ka = "default" if k is None else str(k)
                done = []
                for r in range(runs):
                    one = whole_with_floor(agent, workers, k, windows)
                    done.append(one)
                    verdicts[f"-n {workers} run-ahead {ka} run {r + 1}"] = one.rules
                    print(f"{name}: whole agent suite, -n {workers}, run-ahead {ka}, run {r + 1}: {one.seconds:6.1f} s "
                          f"({one.summary}); floor {one.floor:6.1f} s ({_replayed(one.replayed)}): ratio "
                          f"{one.seconds / one.floor:.2f}"
                          + (f"; floor + windows {one.windows:6.1f} s: ratio {one.seconds / one.windows:.2f}"
                             if one.windows else ""), flush=True)
                table.append(_row(name, workers, ka, done, base))
                base = statistics.median(o.seconds for o in done) if base is None else base
            if before is not None:
                bdt, bsummary, brules = whole_suite(agent, workers, before=before)
                now = verdicts[f"-n {workers} run-ahead {'default' if aheads[0] is None else aheads[0]} run 1"]
                print(f"{name}: before ({before}), -n {workers}: {bdt:6.1f} s  ({bsummary}); "
                      f"now / before {base / bdt:.2f}; {_same(brules, now)}", flush=True)
        print(f"{name}: {same_verdicts(verdicts)}", flush=True)
    print("\n".join(table), flush=True)
    return table


def _row(name: str, workers: int, ka: str, done: list[WholeRun], base: float | None) -> str:
    """A table row: the medians of ``done`` (with the range of the suite's times when there are several)."""
    dt = statistics.median(o.seconds for o in done)
    floor = statistics.median(o.floor for o in done)
    ratio = statistics.median(o.seconds / o.floor for o in done)
    spread = f" ({min(o.seconds for o in done):.1f}-{max(o.seconds for o in done):.1f})" if len(done) > 1 else ""
    vs = "" if base is None else f"{dt / base:.2f}"
    kept = [o for o in done if o.windows]
    windows = (f"{statistics.median(o.windows for o in kept):.1f} s | "
               f"{statistics.median(o.seconds / o.windows for o in kept):.2f}") if kept else "- | -"
    return f"| {name} | {workers} | {ka} | {dt:.1f} s{spread} | {floor:.1f} s | {ratio:.2f} | {windows} | {vs} |"


def whole_with_floor(agent: list[str], workers: int, run_ahead: int | None, windows: bool = True) -> WholeRun:
    """The whole suite against ``agent``, then the floor of its transcripts, in the schedule it followed (and,
    with ``windows``, that floor again with the run's settles kept)."""
    from acp_conformance.scenarios.run_ahead import DEFAULT_DEPTH
    depth = DEFAULT_DEPTH if run_ahead is None else run_ahead
    with tempfile.TemporaryDirectory() as keep:
        dt, summary, rules = whole_suite(agent, workers, keep=Path(keep), run_ahead=run_ahead)
        floor, replayed = replay_floor(Path(keep) / "transcripts", agent, depth)
        kept = replay_floor(Path(keep) / "transcripts", agent, depth, windows=True)[0] if windows else None
    return WholeRun(dt, summary, rules, floor, replayed, kept)


def _replayed(stats: ReplayStats) -> str:
    out = f"{stats.tests} tests, {stats.connections} connections"
    if stats.ran_out:
        out += (f", {stats.ran_out} sends before the agent had written as many lines as in the run "
                f"({', '.join(stats.ran_out_in)})")
    return out + (f"; the run's agents ran from first start to last frame for {stats.span:.1f} s, "
                  f"{stats.covered:.1f} s of it in drives; "
                  f"drives most above their replay: {stats.most_above()}")


def _same(a: dict, b: dict) -> str:
    return same_verdicts({"before": a, "now": b})


def same_verdicts(runs: dict[str, dict]) -> str:
    """Whether every run (label -> rule -> status) gave the same verdict on each rule, else which differ and how."""
    if not runs:
        return "no runs"
    differ = []
    for rule in sorted(set().union(*runs.values())):
        seen: dict[str, list[str]] = {}
        for label, verdict in runs.items():
            seen.setdefault(str(verdict.get(rule)), []).append(label)
        if len(seen) > 1:
            differ.append(f"{rule}: " + "; ".join(f"{status} in {', '.join(labels)}"
                                                  for status, labels in seen.items()))
    if not differ:
        return f"identical rule verdicts in all {len(runs)} runs"
    return f"rule verdicts differ between the {len(runs)} runs: " + " | ".join(differ)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=50)
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--whole", action="store_true", help="also time the whole suite on realistic targets")
    ap.add_argument("--whole-only", action="store_true", help="only the realistic cases")
    ap.add_argument("--targets", default=",".join(TARGETS), help="realistic targets, comma-separated")
    ap.add_argument("--workers", default="0,2", help="-n values for the whole-suite runs, comma-separated")
    ap.add_argument("--run-ahead", default="0,5", metavar="K,K",
                    help="--acp-run-ahead values for the whole-suite runs, comma-separated (the first is the base)")
    ap.add_argument("--runs", type=int, default=1, metavar="N",
                    help="repeat each whole-suite run (and its floor) N times and report the medians")
    ap.add_argument("--no-windows", action="store_true",
                    help="leave out the floor with the suite's observation windows (its settles) kept")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="a checkout of another revision (git worktree add DIR REV): its whole-suite times and "
                         "verdicts beside these, in the same run")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error(f"--runs: {a.runs} is not a number of runs (1 or more)")
    if a.before is not None and not (a.before / "acp_conformance" / "plugin").exists() \
            and not (a.before / "acp_conformance" / "plugin.py").is_file():
        ap.error(f"--before: {a.before} is not a checkout of this project (no acp_conformance/plugin)")
    if a.whole or a.whole_only:
        realistic(min(a.prompts, 10), [t for t in a.targets.split(",") if t],
                  [int(w) for w in a.workers.split(",") if w], a.before,
                  [int(k) for k in a.run_ahead.split(",") if k], a.runs, not a.no_windows)
        if a.whole_only:
            return 0
    with tempfile.TemporaryDirectory() as d:
        suite_run(2, d)  # warm up: compile the schema, import everything
        raw = median_of(lambda: raw_driver(a.prompts, d), a.repeat)
        suite_times = [suite_run(a.prompts, d) for _ in range(a.repeat)]
    suite = statistics.median(t for t, _ in suite_times)
    frames = suite_times[0][1]
    imp, coll, coll_process, empty_process = import_and_collect()
    per_frame_us, peak_mb = frame_cost(a.frames)
    ratio = suite / raw
    print(f"prompt lifecycle, {a.prompts} prompts ({frames} frames) against the reference agent:")
    print(f"  raw stdio driver      {raw:7.3f} s")
    print(f"  suite (all monitors)  {suite:7.3f} s")
    print(f"  ratio suite/raw       {ratio:7.2f}   (target <= 1.5)")
    print(f"plugin import           {imp * 1000:7.0f} ms (beyond bare python startup)")
    print(f"collection (pytest)     {coll:7.3f} s   (pytest's 'collected in'; target < 1 s)")
    print(f"  whole collect-only    {coll_process:7.3f} s   (process; pytest with no suite in an empty "
          f"directory: {empty_process:.3f} s)")
    print(f"transcript + monitors   {per_frame_us:7.1f} us per frame over a {a.frames}-frame session")
    print(f"peak memory             {peak_mb:7.1f} MB for that session (target < 100 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
