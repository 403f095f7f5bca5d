"""What the fuzzer costs and how fast it goes, measured in one run.

    python bench/bench_fuzz.py [--seconds 3] [--baseline-seconds 10] [--fuzz-budget 30] [--steps 100,300]

1. Generation of valid messages, each checked by the validator: ``session/update`` notifications and
   ``session/prompt`` requests, (a) from the schema walker's hypothesis strategies (what the state
   machine draws, shrinkable), (b) from the fast generator with hypothesis drawing its seed, (c) from
   the fast generator alone (bulk traffic); and, as the baseline, hypothesis-jsonschema alone on
   ``SessionUpdate`` (target: at least 1,000 valid messages per second each).
2. Validation on the hot path: ``Validator.check_message`` over a mix of generated messages, dispatched
   by method to one compiled definition (target: at least 100,000 messages per second).
3. Stateful fuzzing against the reference agent: protocol steps per second over a run of
   ``--fuzz-budget`` seconds, for examples of 100 and of 300 rules (longer examples start fewer agent
   processes per step), and where the time went: generation (hypothesis and the state machine),
   validation and monitors, the target (waiting for its answers), process start and stop (target: at
   least 200 steps per second); and, as the baseline, the same run with each example's agent process
   started when the example starts (no spare process started ahead); and the same run with the
   reference agent's simulated work (10 to 40 ms a turn, 6 s for the slow count) at a tenth, which
   shows how much of the rate is the agent's latency rather than the fuzzer.

Rates depend on the machine and its load: the script prints the load average beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]


class _TimeUp(BaseException):
    """Ends a hypothesis run from inside (a BaseException, so hypothesis does not shrink it)."""


def hypothesis_rate(strategy, seconds: float, check, per_example: int = 20) -> tuple[float, int, int]:
    """(values per second, values, invalid values) drawn from ``strategy`` inside @given for ``seconds``
    (``per_example`` draws per test case, as the state machine draws several per example). A
    SIGALRM stops a draw that alone takes longer than the whole allowance."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import strategies as st

    n, bad = [0], [0]
    t0 = time.perf_counter()

    @settings(max_examples=10 ** 9, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)  # (the stop is no failure)
    @given(st.data())
    def run(data):
        for _ in range(per_example):
            value = data.draw(strategy)
            n[0] += 1
            bad[0] += check(value) is not None
        if time.perf_counter() - t0 > seconds:
            raise _TimeUp()

    def alarm(*_):
        raise _TimeUp()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds * 3)
    try:
        run()
    except _TimeUp:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return n[0] / (time.perf_counter() - t0), n[0], bad[0]


def direct_rate(make, seconds: float, check) -> tuple[float, int, int]:
    n = bad = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(100):
            bad += check(make()) is not None
        n += 100
    return n / (time.perf_counter() - t0), n, bad


def generation(seconds: float, baseline_seconds: float) -> list[tuple[str, float, int, int]]:
    from hypothesis import strategies as st

    from acp_conformance.fuzz.strategies import FastGenerator, strategies_for

    gen = strategies_for()
    v = gen.validator
    fast = FastGenerator(gen.schema)
    rng = random.Random(0)
    update = lambda p: {"jsonrpc": "2.0", "method": "session/update", "params": p}  # noqa: E731
    ids = st.integers(0, 2 ** 53 - 1)
    prompt = lambda i, p: {"jsonrpc": "2.0", "id": i, "method": "session/prompt", "params": p}  # noqa: E731
    rows = []
    rows.append(("session/update, schema walker (hypothesis)",
                 *hypothesis_rate(gen.notification("session/update"), seconds, v.check_message)))
    rows.append(("session/update, fast generator (hypothesis draws the seed)",
                 *hypothesis_rate(fast.strategy(gen.schema.methods["session/update"].params).map(update), seconds,
                                  v.check_message)))
    rows.append(("session/update, fast generator alone",
                 *direct_rate(lambda: update(fast.params("session/update", rng)), seconds, v.check_message)))
    rows.append(("session/prompt, schema walker (hypothesis)",
                 *hypothesis_rate(gen.request("session/prompt"), seconds, v.check_message)))
    rows.append(("session/prompt, fast generator (hypothesis draws the seed)",
                 *hypothesis_rate(st.builds(prompt, ids, fast.strategy(gen.schema.methods["session/prompt"].params)),
                                  seconds, v.check_message)))
    rows.append(("session/prompt, fast generator alone",
                 *direct_rate(lambda: prompt(rng.randint(0, 2 ** 53 - 1), fast.params("session/prompt", rng)),
                              seconds, v.check_message)))
    try:
        from hypothesis_jsonschema import from_schema
    except ImportError:  # the extra schema-fallback; the baseline row is then left out
        return rows
    t0 = time.perf_counter()
    baseline = from_schema(gen.schema.definition_schema("SessionUpdate"))  # canonicalises the schema
    setup = time.perf_counter() - t0
    rate, n, bad = hypothesis_rate(baseline, baseline_seconds, lambda x: None if v.is_valid("SessionUpdate", x) else 1,
                                   per_example=1)
    rows.append((f"SessionUpdate, hypothesis-jsonschema alone (baseline; {setup:.0f} s to build)", rate, n, bad))
    rows.append(("SessionUpdate, schema walker (hypothesis)",
                 *hypothesis_rate(gen.definition("SessionUpdate"), seconds,
                                  lambda x: None if v.is_valid("SessionUpdate", x) else 1)))
    return rows


def validation(seconds: float) -> tuple[float, int]:
    """Messages per second through Validator.check_message, over a mix of generated messages."""
    from acp_conformance.fuzz.strategies import FastGenerator
    from acp_conformance.protocol.schema import cached_schema
    from acp_conformance.protocol.validate import Validator

    schema = cached_schema(None)
    v = Validator(schema)
    fast = FastGenerator(schema)
    rng = random.Random(1)
    msgs = []
    for i in range(3000):
        kind = i % 3
        if kind == 0:
            msgs.append(({"jsonrpc": "2.0", "method": "session/update", "params": fast.params("session/update", rng)},
                         None))
        elif kind == 1:
            msgs.append(({"jsonrpc": "2.0", "id": i, "method": "session/prompt",
                          "params": fast.params("session/prompt", rng)}, None))
        else:
            msgs.append(({"jsonrpc": "2.0", "id": i, "result": fast.definition("PromptResponse", rng)},
                         "session/prompt"))
    for m, method in msgs:  # compile every validator first, and check that all are valid
        assert v.check_message(m, method) is None, m
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for m, method in msgs:
            v.check_message(m, method)
        n += len(msgs)
    return n / (time.perf_counter() - t0), len(msgs)


def stateful(budget: float, steps: int, seed: int, prestart: bool = True, work_scale: float | None = None):
    """The run, its time split, and CPU seconds per step of the fuzzer and of the agent processes
    (which, unlike the wall clock, do not depend on what else the machine runs). ``prestart``: each
    example's agent process is started while the example before it runs (the default)."""
    from acp_conformance.fuzz.run import fuzz, time_split
    from acp_conformance.fuzz.config import FuzzConfig

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    me, kids = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    env = {"ACP_REFERENCE_WORK_SCALE": str(work_scale)} if work_scale is not None else {}
    result = fuzz(FuzzConfig(AGENT, env=env, prestart=prestart), seed=seed, max_examples=10 ** 6, budget=budget, step_count=steps)
    n = max(result.steps, 1)
    return result, time_split(result), (cpu(resource.RUSAGE_SELF) - me) / n, (cpu(resource.RUSAGE_CHILDREN) - kids) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per generation and validation measure")
    ap.add_argument("--baseline-seconds", type=float, default=10.0, help="for hypothesis-jsonschema")
    ap.add_argument("--fuzz-budget", type=float, default=30.0, help="seconds of stateful fuzzing")
    ap.add_argument("--steps", default="100,300",
                    help="rules per fuzz example, one stateful run for each (comma-separated; 100 is the default of "
                         "acp-conformance fuzz)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    warnings.simplefilter("ignore")  # hypothesis-jsonschema's strategies have reprs of 37 kB; it says so
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rows = generation(a.seconds, a.baseline_seconds)
    print("generation of valid messages (each checked by the validator; target >= 1,000/s):")
    for name, rate, n, bad in rows:
        print(f"  {name:62} {rate:10,.1f}/s  ({n} values, {bad} invalid)")
    base = next(r for r in rows if "baseline" in r[0])[1]
    walker = next(r for r in rows if r[0].startswith("SessionUpdate, schema walker"))[1]
    if base:
        print(f"  SessionUpdate: schema walker / hypothesis-jsonschema = {walker / base:,.0f}x")
    rate, distinct = validation(a.seconds)
    print(f"validation, Validator.check_message  {rate:12,.0f} msgs/s over {distinct} distinct messages "
          "(target >= 100,000/s)")
    print(f"stateful fuzzing of the reference agent, {a.fuzz_budget:g} s each, seed {a.seed} (target >= 200 steps/s):")
    runs = [(int(x), True, None) for x in a.steps.split(",")]
    n = runs[0][0]
    runs.insert(1, (n, False, None))  # the baseline: the default example length, one process at a time
    runs.append((n, True, 0.1))  # the agent's simulated work at a tenth: what is left is the fuzzer's
    rates = {}
    for steps, prestart, scale in runs:
        result, split, cpu_fuzzer, cpu_agent = stateful(a.fuzz_budget, steps, a.seed, prestart, scale)
        s = result.stats
        rates[steps, prestart, scale] = result.steps_per_second
        how = ("" if prestart else ", each process started when its example starts (no spare)") + \
            (f", the agent's simulated work x{scale:g} (ACP_REFERENCE_WORK_SCALE)" if scale is not None else "")
        print(f"  {steps} rules per example{how}: {result.steps} steps in {result.seconds:.1f} s, "
              f"{result.steps_per_second:,.0f} steps/s; {result.examples} examples, {s.processes} agent processes; "
              f"finding: {result.failure or 'none'}")
        print("    time: " + ", ".join(f"{k.replace('_', ' ')} {v:.0%}" for k, v in split.items()))
        print(f"    CPU per step: fuzzer {cpu_fuzzer * 1e3:.2f} ms, agent processes {cpu_agent * 1e3:.2f} ms "
              "(their start-up included)")
    if rates.get((n, False, None)):
        print(f"  spare process started ahead / none: {rates[n, True, None] / rates[n, False, None]:.2f}x "
              f"({n} rules per example)")
    if rates.get((n, True, None)):
        print(f"  simulated work x0.1 / x1: {rates[n, True, 0.1] / rates[n, True, None]:.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
