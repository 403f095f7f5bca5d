"""What ``acp-conformance tap`` adds to a session, measured against a direct pipe in the same run.

    python bench/bench_tap.py [--rate 1000] [--seconds 2] [--rounds 10] [--frames 100000]

1. Latency. A stand-in editor sends a JSON-RPC notification every 1/rate s to an echo agent, which writes
   each line straight back; the editor times each round trip. Direct and through-tap blocks alternate
   (``--rounds`` of each, ``--seconds`` long), or with ``--side-by-side`` run at the same time from two
   processes, so that both meet the same load spikes of a shared machine. A round
   trip through tap crosses it twice, so the added latency per frame is half the added round trip; both
   are printed, at the median and the 99th percentile, with the ratio tap/direct.
2. Memory. One session of ``--frames`` frames (half each way, ~250 bytes each, as fast as the pipes go)
   through tap; the peak resident memory of the forwarding process and of the judging process come
   from the session's report.json, and the time the judge needed after the session ended.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ECHO = [sys.executable, "-u", "-c", "import sys\nfor line in sys.stdin.buffer:\n"
        "    sys.stdout.buffer.write(line.replace(b'_bench/ping', b'_bench/pong', 1)); sys.stdout.buffer.flush()"]
TAP = [sys.executable, "-m", "acp_conformance", "tap", "--quiet"]
PAD = "x" * 160


def frame(i: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "_bench/ping", "params": {"i": i, "pad": PAD}},
                      separators=(",", ":")).encode() + b"\n"


def round_trips(argv: list[str], rate: float, seconds: float, cwd: str) -> list[float]:
    """Round-trip times (s) of frames sent every 1/rate s for ``seconds``."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, bufsize=0)
    n = int(rate * seconds)
    sent = [0.0] * n
    got = [0.0] * n

    def read() -> None:
        for line in p.stdout:
            got[json.loads(line)["params"]["i"]] = time.perf_counter()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # a warm-up frame, answered before the clock starts (the agent, and tap's judge, are started)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "_bench/ping", "params": {"i": 0}}).encode() + b"\n")
    while not got[0]:
        time.sleep(0.001)
    got[0] = 0.0
    start = time.perf_counter()
    for i in range(1, n):
        due = start + i / rate
        while (now := time.perf_counter()) < due:
            if due - now > 0.0005:
                time.sleep(due - now - 0.0004)
        sent[i] = time.perf_counter()
        p.stdin.write(frame(i))
    p.stdin.close()
    reader.join(60)
    p.wait(120)
    return [got[i] - sent[i] for i in range(1, n) if got[i]]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def latency(rate: float, seconds: float, rounds: int, side_by_side: bool) -> None:
    """Alternating rounds (a load spike of a shared machine lands in one of them and decides its p99), or with
    ``side_by_side`` both sessions at once, each driven by a process of its own, so both meet the same spikes."""
    direct, tapped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            tap_argv = [*TAP, "--report-dir", f"{tmp}/r{r}", "--", *ECHO]
            if not side_by_side:
                direct += round_trips(ECHO, rate, seconds, tmp)
                tapped += round_trips(tap_argv, rate, seconds, tmp)
                continue
            workers = {k: subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(argv), "--rate", str(rate),
                                            "--seconds", str(seconds)], stdout=subprocess.PIPE, cwd=tmp)
                       for k, argv in (("direct", ECHO), ("tap", tap_argv))}
            out = {k: json.loads(w.communicate()[0]) for k, w in workers.items()}
            direct += out["direct"]
            tapped += out["tap"]
    how = "side by side, each driven by its own process" if side_by_side else "alternating"
    print(f"latency at {rate:g} frames/s, {len(direct)} frames direct and {len(tapped)} through tap "
          f"({rounds} rounds of {seconds:g} s, {how}):")
    for name, q in (("median", 0.5), ("p99", 0.99)):
        d, t = pct(direct, q) * 1e3, pct(tapped, q) * 1e3
        print(f"  {name:6}: round trip direct {d:.3f} ms, through tap {t:.3f} ms (ratio {t / d:.2f}); "
              f"added per round trip {t - d:.3f} ms, per frame (one crossing) {(t - d) / 2:.3f} ms")


def memory(frames: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.Popen([*TAP, "--report-dir", f"{tmp}/r", "--", *ECHO], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, cwd=tmp)
        n = frames // 2
        t0 = time.perf_counter()

        def write() -> None:
            for i in range(n):
                p.stdin.write(frame(i))
            p.stdin.close()

        w = threading.Thread(target=write)
        w.start()
        count = sum(1 for _ in p.stdout)
        ended = time.perf_counter()
        w.join()
        p.wait()
        done = time.perf_counter()
        tap = json.loads(Path(f"{tmp}/r/report.json").read_text())["tap"]
        size = len(frame(0))
        print(f"memory: a session of {2 * n} frames ({size} bytes each, {2 * n * size / 1e6:.0f} MB in all) through "
              f"tap: forwarded in {ended - t0:.1f} s ({count} echoed); the judge finished "
              f"{done - ended:.1f} s after the session ended; peak RSS forwarding process "
              f"{tap['proxy_peak_rss_kb'] / 1024:.0f} MB, judging process {tap['judge_peak_rss_kb'] / 1024:.0f} MB")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--frames", type=int, default=100_000)
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--side-by-side", action="store_true",
                   help="run the direct and the tapped session at the same time (each from its own process)")
    p.add_argument("--worker", metavar="ARGV_JSON", help=argparse.SUPPRESS)  # one session; prints its round trips
    a = p.parse_args()
    if a.worker:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(round_trips(json.loads(a.worker), a.rate, a.seconds, tmp)))
        return 0
    latency(a.rate, a.seconds, a.rounds, a.side_by_side)
    if not a.skip_memory:
        memory(a.frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
