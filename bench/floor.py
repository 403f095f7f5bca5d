"""The floor of a suite run: the same exchanges, in the same schedule, driven by a raw stdio script.

What the suite's time is compared with (bench_suite.py). Each transcript a run wrote is one test's drive; the
floor starts the agent and writes what the suite wrote, each frame once the agent has written as many lines as it
had then, so that it costs only the agent's own time. It follows the run's schedule, read from the transcripts
(each connection's start event records ``wall`` and ``suite_pid``, wire/transport.py):

* each process of the suite (an xdist worker) is replayed beside the others, its tests in the order it started
  them (running ahead reorders the tests, and xdist deals them out);
* within one, the current test (the first not yet ended) with up to ``depth`` tests ahead running beside it, as
  far as the next test that runs alone and at most AHEAD_LIMIT ahead, as ``--acp-run-ahead depth`` does
  (acp_conformance/scenarios/run_ahead.py); a test that overlapped no other in the run (one that runs alone,
  driven again alone, or every test with ``--acp-run-ahead 0``) is replayed with nothing beside it;
* a test whose agent the run started during the test before (``prestarted``: acp_conformance/scenarios/
  prestart.py) has its agent started when the test before it starts, here too.

An agent that writes fewer lines than in the run before a frame the suite sent (its own timing) holds that frame
as long as the run waited there, and until the agent, having answered something, has been silent QUIET s (at most
SLACK s more); such sends are counted (ReplayStats.ran_out), since they are where the floor is less exact.

With ``windows``, the floor also keeps the suite's observation windows: at each ``settle`` of the run (a note in
its transcript) the script waits, as the settle did, until the agent has been quiet for the settle's seconds (at
most SETTLE_BOUND times that). A raw script that checked what those windows check (no late update after a
cancelled turn, no duplicate turn after a retried one) would have to wait there too: the suite's time against
this floor is what its own machinery costs (drivers, monitors, processes, scheduling, reports), the windows set
apart.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

try:
    from acp_conformance.scenarios.run_ahead import AHEAD_LIMIT
except ImportError:  # an older checkout: no limit
    AHEAD_LIMIT = 1 << 30
try:
    from acp_conformance.scenarios.steps_await import SETTLE_BOUND
except ImportError:  # an older checkout
    SETTLE_BOUND = 2

SLACK = 10.0  # s beyond the recorded pause before a frame is sent anyway (the agent wrote fewer lines this time)
QUIET = 0.5  # s: an agent that answered, then stayed silent this long (past the run's wait), has written what it will


@dataclass
class Recorded:
    """One test's drive as the run recorded it."""
    name: str
    entries: list[dict]
    worker: Any  # the suite process that drove it (its pid)
    start: float  # wall clock, s: its first connection's start
    end: float  # wall clock, s: its last frame
    prestarted: bool  # its first connection's agent was started during the test before
    alone: bool = False  # it overlapped no other test of its worker


def read_run(transcripts: Path) -> list[list[Recorded]]:
    """The tests of a run's transcript folder, per suite process, each in the order it started them, with
    ``alone`` set. A transcript without a start event (no agent was started) is left out; one whose start event
    has no ``wall`` was written by a revision that did not record it (ValueError)."""
    workers: dict[Any, list[Recorded]] = {}
    for path in sorted(transcripts.glob("*.jsonl")):
        entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        test = recorded(path.stem, entries)
        if test is not None:
            workers.setdefault(test.worker, []).append(test)
    out = []
    for tests in workers.values():
        tests.sort(key=lambda t: t.start)
        mark_alone(tests)
        out.append(tests)
    return sorted(out, key=lambda ts: ts[0].start)


def recorded(name: str, entries: list[dict]) -> Recorded | None:
    starts = [e for e in entries if e.get("dir") == "event" and e.get("event") == "start"]
    if not starts:
        return None
    first = starts[0]
    detail = first.get("detail") or {}
    if "wall" not in detail:
        raise ValueError(f"{name}: the transcript's start event records no start time (wall): it was written by "
                         f"a revision of the suite before the floor could follow a run's schedule")
    last = max(e.get("t", 0.0) for e in entries)
    return Recorded(name, entries, detail.get("suite_pid"), detail["wall"],
                    detail["wall"] + max(0.0, last - first.get("t", 0.0)), bool(detail.get("prestarted")))


def mark_alone(tests: list[Recorded]) -> None:
    """``alone``: the test's drive overlapped no other test of the same worker."""
    for t in tests:
        t.alone = not any(o is not t and o.start < t.end and t.start < o.end for o in tests)


def covered(tests: list[Recorded]) -> float:
    """Seconds in which at least one of ``tests`` was running (the length of the union of their intervals)."""
    total, reach = 0.0, float("-inf")
    for t in sorted(tests, key=lambda t: t.start):
        if t.end > reach:
            total += t.end - max(t.start, reach)
            reach = t.end
    return total


@dataclass
class FloorSchedule:
    """Which tests of one worker may start now: the current test (the first not yet ended), and up to ``depth``
    beside it, in order, as far as the next that runs alone and at most ``ahead_limit`` started ahead of the
    current one; a test that runs alone starts once every test before it has ended, with nothing beside it."""
    alone: list[bool]
    depth: int
    ahead_limit: int = AHEAD_LIMIT
    started: set[int] = field(default_factory=set)
    finished: set[int] = field(default_factory=set)

    @property
    def current(self) -> int | None:
        return next((i for i in range(len(self.alone)) if i not in self.finished), None)

    @property
    def done(self) -> bool:
        return len(self.finished) == len(self.alone)

    def startable(self) -> list[int]:
        cur = self.current
        if cur is None:
            return []
        running = self.started - self.finished
        out = []
        if cur not in self.started:
            if self.alone[cur] and running:
                return []
            out.append(cur)
        if self.alone[cur]:
            return out
        beside = sum(1 for i in running if i > cur)
        ahead = sum(1 for i in self.started if i > cur)
        j = cur + 1
        while beside < self.depth and j < len(self.alone) and not self.alone[j] and ahead < self.ahead_limit:
            if j not in self.started:
                out.append(j)
                beside += 1
                ahead += 1
            j += 1
        return out


def play(tests: list[Recorded], depth: int, run_one: Callable[[Recorded, Any], Any],
         prestart: Callable[[Recorded], Any] | None = None, discard: Callable[[Any], None] | None = None,
         ahead_limit: int = AHEAD_LIMIT) -> list[Any]:
    """Run ``run_one(test, spare)`` for each of one worker's tests in FloorSchedule's order, each in a thread;
    ``prestart(test)`` starts the agent of a prestarted test when the test before it starts (its ``spare``,
    else None; one not used is given to ``discard``). Returns run_one's results, in the order of ``tests``."""
    schedule = FloorSchedule([t.alone for t in tests], depth, ahead_limit)
    results: list[Any] = [None] * len(tests)
    errors: list[BaseException] = []
    spares: dict[int, Any] = {}
    changed = threading.Condition()

    def body(i: int) -> None:
        try:
            with changed:
                spare = spares.pop(i, None)
            results[i] = run_one(tests[i], spare)
        except BaseException as e:  # reported after the others end
            errors.append(e)
        finally:
            with changed:
                schedule.finished.add(i)
                changed.notify_all()

    threads = []
    with changed:
        while not schedule.done:
            for i in schedule.startable():
                schedule.started.add(i)
                nxt = i + 1
                if prestart is not None and nxt < len(tests) and tests[nxt].prestarted \
                        and nxt not in schedule.started and nxt not in spares:
                    spares[nxt] = prestart(tests[nxt])  # it boots while this test runs, as the run's spare did
                th = threading.Thread(target=body, args=(i,), daemon=True)
                threads.append(th)
                th.start()
            if not schedule.done:
                changed.wait()
    for th in threads:
        th.join()
    for spare in spares.values():
        if discard is not None:
            discard(spare)
    if errors:
        raise errors[0]
    return results


@dataclass
class ReplayStats:
    tests: int = 0
    connections: int = 0
    ran_out: int = 0  # frames sent before the agent had written as many lines as in the run (it wrote fewer)
    ran_out_in: list[str] = field(default_factory=list)  # each of those sends: where, and how many lines had come
    span: float = 0.0  # s from the run's first agent start to its last frame (the rest of its time is pytest's)
    covered: float = 0.0  # s of the span in which some test's drive ran (the rest is between tests: judging...)
    above: list[tuple[float, str, float, float]] = field(default_factory=list)  # (excess, test, run's, floor's)

    def add(self, other: "ReplayStats") -> None:
        self.tests += other.tests
        self.connections += other.connections
        self.ran_out += other.ran_out
        self.ran_out_in += other.ran_out_in

    def most_above(self, n: int = 3) -> str:
        """The tests whose drive in the run took longest beyond their replay."""
        return ", ".join(f"{name} {run:.1f} s vs {floor:.1f} s" for _, name, run, floor in sorted(self.above)[::-1][:n])


@dataclass
class Spare:
    process: subprocess.Popen
    workdir: tempfile.TemporaryDirectory


def start_agent(agent: list[str], workdir: str) -> subprocess.Popen:
    return subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=workdir, start_new_session=True)


def replay_floor(transcripts: Path, agent: list[str], depth: int = 0,
                 windows: bool = False) -> tuple[float, ReplayStats]:
    """(seconds, what was replayed): a raw stdio script drives ``agent`` through the exchanges of a run's
    transcripts in the run's schedule (``depth``: its --acp-run-ahead): the agent's own time, without the suite's
    drivers, monitors, settles and reports; with ``windows``, the settles kept (see the module docstring)."""
    workers = read_run(transcripts)
    stats = ReplayStats()
    if workers:
        stats.span = max(t.end for ts in workers for t in ts) - min(ts[0].start for ts in workers)
        stats.covered = covered([t for ts in workers for t in ts])
    lock = threading.Lock()

    def spare(test: Recorded) -> Spare:
        d = tempfile.TemporaryDirectory()
        return Spare(start_agent(agent, d.name), d)

    def discard(s: Spare) -> None:
        _end(s.process, wait=0)
        s.workdir.cleanup()

    def run_one(test: Recorded, s: Spare | None) -> None:
        t = time.perf_counter()
        got = replay_test(test.entries, agent, s, windows)
        took = time.perf_counter() - t
        got.ran_out_in = [f"{test.name} {x}" for x in got.ran_out_in]
        with lock:
            stats.add(got)
            stats.above.append((test.end - test.start - took, test.name, test.end - test.start, took))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=play, args=(tests, depth, run_one, spare, discard)) for tests in workers]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t0, stats


def replay_test(entries: list[dict], agent: list[str], spare: Spare | None = None,
                windows: bool = False) -> ReplayStats:
    """Each connection of one test, in a fresh directory (the spare's, whose agent serves the first connection):
    start the agent, send each frame the suite sent once the agent has written as many lines as it had then
    (or, when it writes fewer this time, as _await_lines says), with the agent's ids of this run in place of those
    of the recorded one; close stdin, wait for the exit."""
    old_cwd = next((e["detail"].get("cwd") for e in entries if e.get("event") == "start"), None)
    mapping: dict[str, str] = {}  # '"old sessionId"' -> '"new sessionId"' (string ids the agent made)
    stats = ReplayStats(tests=1)
    workdir = spare.workdir if spare is not None else tempfile.TemporaryDirectory()
    process = spare.process if spare is not None else None
    try:
        for conn in sorted({e["conn"] for e in entries}):
            mine = [e for e in entries if e["conn"] == conn]
            if not any(e.get("event") == "start" for e in mine):
                continue
            p, process = process or start_agent(agent, workdir.name), None
            stats.connections += 1
            late = _replay_connection(mine, p, workdir.name, old_cwd, mapping, windows)
            stats.ran_out += len(late)
            stats.ran_out_in += late
    finally:
        if process is not None:  # a spare no connection took
            _end(process, wait=0)
        workdir.cleanup()
    return stats


def _replay_connection(entries: list[dict], p: subprocess.Popen, workdir: str, old_cwd: str | None,
                       mapping: dict[str, str], windows: bool = False) -> list[str]:
    """Drive one connection; returns where a send did not wait for the run's count of lines, and how many had come."""
    got: list[bytes] = []
    last = [time.monotonic()]  # when the agent last wrote
    changed = threading.Condition()
    ran_out: list[str] = []

    def read() -> None:
        for line in p.stdout:
            with changed:
                got.append(line)
                last[0] = time.monotonic()
                changed.notify_all()
        with changed:
            got.append(b"")  # end of output
            changed.notify_all()

    threading.Thread(target=read, daemon=True).start()
    t_sent = None  # the recorded time of the suite's frame before this one (or of the start)
    old: list[dict] = []  # what the agent wrote in the recorded run, so far
    try:
        for e in entries:
            if e["dir"] == "received":
                old.append(e)
                continue
            if e["dir"] == "event" and e["event"] != "stdin-closed":
                quiet = (e.get("detail") or {}).get("settle") if windows and e["event"] == "note" else None
                if isinstance(quiet, (int, float)) and t_sent is not None:
                    with changed:  # what came before the settle, then the settle's quiet
                        _await_lines(changed, got, len(old), last, max(0.0, e["t"] - t_sent))
                        _settle(changed, got, last, float(quiet))
                    t_sent = e["t"]
                t_sent = e["t"] if t_sent is None else t_sent
                continue
            run_wait = max(0.0, e["t"] - (t_sent if t_sent is not None else e["t"]))
            with changed:
                short = _await_lines(changed, got, len(old), last, run_wait)
                if short:
                    ran_out.append(f"frame #{e.get('seq')}: {len(got)} of {len(old)} lines ({short})")
                seen = list(got)
            learn_ids(old, seen, mapping)
            if e["dir"] == "event":  # stdin-closed, once the agent has written what it wrote in the run
                break
            t_sent = e["t"]
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
        _end(p)
    return ran_out


def _await_lines(changed: threading.Condition, got: list[bytes], count: int, last: list[float],
                 run_wait: float) -> str | None:
    """Wait (holding ``changed``) until the agent has written ``count`` lines or ended its output: the agent's lines
    decide, since a frame sent early would race its start-up or its turn. An agent that writes fewer this time
    (its timing) is waited for as long as the run waited here (``run_wait``, since the frame before), and then
    until, having written something (it has started), it has been silent QUIET s: it waits for this frame (a
    cancel, say, that the run sent after lines the agent did not write this time). An agent that has written
    nothing yet (it is starting), at most SLACK s more. Returns None, or which of these let the send go."""
    t0 = time.monotonic()
    while not (len(got) >= count or (got and got[-1] == b"")):
        now = time.monotonic()
        if now >= t0 + run_wait + SLACK:
            return f"waited {run_wait + SLACK:.1f} s"
        if now >= t0 + run_wait and got and now - last[0] >= QUIET:
            return f"silent {now - last[0]:.1f} s"
        changed.wait(max(0.001, min(t0 + run_wait + SLACK, max(t0 + run_wait, last[0] + QUIET)) - now))
    return None


def _settle(changed: threading.Condition, got: list[bytes], last: list[float], quiet: float) -> None:
    """Wait (holding ``changed``) as the suite's settle does: until the agent has written nothing for ``quiet`` s
    since the wait began, at most SETTLE_BOUND * ``quiet`` s in all, or until its output ends."""
    t0 = time.monotonic()
    while not (got and got[-1] == b""):
        now = time.monotonic()
        since = max(t0, last[0])
        if now - since >= quiet or now - t0 >= quiet * SETTLE_BOUND:
            return
        changed.wait(max(0.001, min(since + quiet, t0 + quiet * SETTLE_BOUND) - now))


def _end(p: subprocess.Popen, wait: float = 10.0) -> None:
    """Close stdin and wait ``wait`` s for the exit; then kill the process group."""
    with contextlib.suppress(OSError):
        p.stdin.close()
    try:
        p.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    with contextlib.suppress(OSError):
        p.stdout.close()


def learn_ids(old: list[dict], seen: list[bytes], mapping: dict[str, str]) -> None:
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
