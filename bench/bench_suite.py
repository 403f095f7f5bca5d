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
   floor for each (the prompt lifecycle of 1 through a raw stdio driver against that same agent), each with
   the --acp-run-ahead values of --run-ahead (default 0,5: ratios and rule verdicts beside the first).
Timings are medians of a few repetitions; the ratio is what to quote, since the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import signal
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


def realistic(prompts: int, names: list[str], workers_list: list[int], before: Path | None = None,
              aheads: list[int] | None = None) -> None:
    """Each target, each -n, each --acp-run-ahead K (``aheads``; the first is the base the others are compared
    with: time ratio and rule verdicts), beside the floor of that run's own exchanges."""
    aheads = aheads or [None]
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
        for workers in workers_list:
            base: tuple[float, dict] | None = None
            for k in aheads:
                with tempfile.TemporaryDirectory() as keep:
                    dt, summary, rules = whole_suite(agent, workers, keep=Path(keep), run_ahead=k)
                    floor = replay_floor(Path(keep) / "transcripts", agent, max(workers, 1))
                vs = ""
                if base is None:
                    base = (dt, rules)
                else:
                    vs = f"; / run-ahead {aheads[0]}: {dt / base[0]:.2f}, {_same(base[1], rules)}"
                ka = "default" if k is None else k
                print(f"{name}: whole agent suite, -n {workers}, run-ahead {ka}: {dt:6.1f} s  ({summary}); floor "
                      f"(the same exchanges replayed by a raw stdio script) {floor:6.1f} s: ratio {dt / floor:.2f}"
                      f"{vs}", flush=True)
            if before is not None:
                bdt, bsummary, brules = whole_suite(agent, workers, before=before)
                print(f"{name}: before ({before}), -n {workers}: {bdt:6.1f} s  ({bsummary}); "
                      f"now / before {base[0] / bdt:.2f}; {_same(brules, base[1])}", flush=True)


def _same(a: dict, b: dict) -> str:
    if a == b:
        return "identical rule verdicts"
    return "rule verdicts differ: " + ", ".join(f"{r} {a.get(r)} -> {b.get(r)}" for r in sorted(set(a) | set(b))
                                               if a.get(r) != b.get(r))


def replay_floor(transcripts: Path, agent: list[str], workers: int = 1) -> float:
    """Seconds a raw stdio script takes to drive ``agent`` through the exchanges of a suite run's transcripts
    (``workers`` at a time): the agent's own time, without the suite's drivers, monitors, settles and reports."""
    files = sorted(transcripts.glob("*.jsonl"))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda f: _replay_transcript(f, agent), files))
    return time.perf_counter() - t0


def _replay_transcript(path: Path, agent: list[str]) -> None:
    """Each connection of one test, in a fresh directory: start the agent, send each frame the suite sent once
    the agent has written as many lines as it had then (or once the run's own time to it has passed), with the
    agent's ids of this run in place of those of the recorded one; close stdin, wait for the exit."""
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    old_cwd = next((e["detail"].get("cwd") for e in entries if e.get("event") == "start"), None)
    mapping: dict[str, str] = {}  # '"old sessionId"' -> '"new sessionId"' (string ids the agent made)
    with tempfile.TemporaryDirectory() as workdir:
        for conn in sorted({e["conn"] for e in entries}):
            _replay_connection([e for e in entries if e["conn"] == conn], agent, workdir, old_cwd, mapping)


def _replay_connection(entries: list[dict], agent: list[str], workdir: str, old_cwd: str | None,
                       mapping: dict[str, str]) -> None:
    if not any(e.get("event") == "start" for e in entries):
        return
    p = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         cwd=workdir, start_new_session=True)
    got: list[bytes] = []
    changed = threading.Condition()

    def read() -> None:
        for line in p.stdout:
            with changed:
                got.append(line)
                changed.notify_all()
        with changed:
            got.append(b"")  # end of output
            changed.notify_all()

    threading.Thread(target=read, daemon=True).start()
    t_prev = None  # the recorded time of the frame before the next send
    old: list[dict] = []  # what the agent wrote in the recorded run, so far
    try:
        for e in entries:
            if e["dir"] == "received":
                old.append(e)
                t_prev = e["t"]
                continue
            if e["dir"] == "event" and e["event"] != "stdin-closed":
                t_prev = e["t"] if t_prev is None else t_prev
                continue
            # the agent's lines decide (a frame sent early would race its start-up or its turn); a run that
            # writes fewer than the recorded one (timing) costs the recorded pause plus the suite's 10 s timeout
            with changed:
                changed.wait_for(lambda: len(got) >= len(old) or (got and got[-1] == b""),
                                 timeout=max(0.0, e["t"] - (t_prev if t_prev is not None else e["t"])) + 10.0)
                seen = list(got)
            _learn(old, seen, mapping)
            if e["dir"] == "event":  # stdin-closed, once the agent has written what it wrote in the run
                break
            t_prev = e["t"]
            raw = e.get("raw", "")
            for a, b in mapping.items():
                raw = raw.replace(a, b)
            if old_cwd:
                raw = raw.replace(old_cwd, workdir)
            try:
                p.stdin.write(raw.encode("utf-8", "surrogateescape") + b"\n")
                p.stdin.flush()
            except OSError:
                break
    finally:
        with contextlib.suppress(OSError):
            p.stdin.close()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _learn(old: list[dict], seen: list[bytes], mapping: dict[str, str]) -> None:
    """The string ids the agent made in this run (sessionId, messageId, toolCallId, terminalId, the ids of its
    own requests...) for those of the recorded one: the agent's lines are paired with the recorded ones in order
    (a pair whose method or id differs is left out) and every string under a key ending in "Id" is mapped."""
    for e, line in zip(old, seen):
        try:
            a, b = json.loads(e.get("raw", "")), json.loads(line)
        except ValueError:
            continue
        if not (isinstance(a, dict) and isinstance(b, dict)) or a.get("method") != b.get("method"):
            continue
        if "method" not in a and a.get("id") != b.get("id"):
            continue
        if "method" in a and "id" in a and isinstance(a["id"], str) and isinstance(b.get("id"), str):
            mapping[json.dumps(a["id"])] = json.dumps(b["id"])  # a request of the agent's: our answer names it
        _map_ids(a, b, mapping)


def _map_ids(a: Any, b: Any, mapping: dict[str, str], key: str = "") -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            _map_ids(a[k], b[k], mapping, k)
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b):
            _map_ids(x, y, mapping, key)
    elif isinstance(a, str) and isinstance(b, str) and key.endswith("Id") and a != b:
        mapping[json.dumps(a)] = json.dumps(b)


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
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="a checkout of another revision (git worktree add DIR REV): its whole-suite times and "
                         "verdicts beside these, in the same run")
    a = ap.parse_args()
    if a.before is not None and not (a.before / "acp_conformance" / "plugin").exists() \
            and not (a.before / "acp_conformance" / "plugin.py").is_file():
        ap.error(f"--before: {a.before} is not a checkout of this project (no acp_conformance/plugin)")
    if a.whole or a.whole_only:
        realistic(min(a.prompts, 10), [t for t in a.targets.split(",") if t],
                  [int(w) for w in a.workers.split(",") if w], a.before,
                  [int(k) for k in a.run_ahead.split(",") if k])
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
