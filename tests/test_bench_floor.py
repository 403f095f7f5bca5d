"""The bench's floor (bench/floor.py): a run's exchanges replayed in the schedule the run followed.

On synthetic transcripts, never timed: which tests a worker has and in what order, which ran alone, which may
start beside the current one, that a replay never runs more than the run did, that a prestarted agent is started
when the test before starts, and that a replay maps the agent's ids; and the start event that records the schedule.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from floor import (FloorSchedule, Recorded, ReplayStats, covered, mark_alone, play, read_run,  # noqa: E402
                   replay_floor, replay_test)

from acp_conformance.wire.transcript import Transcript  # noqa: E402
from acp_conformance.wire.transport import Transport  # noqa: E402


def _transcript(path: Path, wall: float, seconds: float, pid: int = 100, prestarted: bool = False,
                conns: int = 1) -> None:
    """A transcript file of one test whose first connection started at ``wall`` and whose last frame came
    ``seconds`` later (frame times are relative to the transcript's own start)."""
    lines = [{"seq": 0, "conn": 0, "dir": "event", "t": 0.0, "event": "note", "detail": {"text": "step 1"}}]
    for c in range(conns):
        detail = {"argv": ["agent"], "cwd": "/tmp/x", "pid": 1, "wall": wall + 0.5 + c, "suite_pid": pid}
        if prestarted and c == 0:
            detail["prestarted"] = True
        lines.append({"seq": len(lines), "conn": c, "dir": "event", "t": 0.5 + c, "event": "start", "detail": detail})
    lines.append({"seq": len(lines), "conn": conns - 1, "dir": "event", "t": 0.5 + seconds, "event": "exit"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def _test(name: str, start: float, end: float, worker: int = 1, prestarted: bool = False) -> Recorded:
    return Recorded(name, [], worker, start, end, prestarted)


# -- what the run recorded ------------------------------------------------------------------------------------

def test_a_run_is_read_per_suite_process_in_the_order_each_started_its_tests(tmp_path):
    _transcript(tmp_path / "b.jsonl", wall=1000.0, seconds=2.0, pid=7)
    _transcript(tmp_path / "a.jsonl", wall=1001.0, seconds=1.0, pid=7, prestarted=True)
    _transcript(tmp_path / "c.jsonl", wall=999.0, seconds=5.0, pid=8, conns=2)
    (tmp_path / "c.stderr.txt").write_text("noise")
    (tmp_path / "none.jsonl").write_text(json.dumps({"seq": 0, "conn": 0, "dir": "event", "t": 0, "event": "note"}))
    workers = read_run(tmp_path)
    assert [[t.name for t in ts] for ts in workers] == [["c"], ["b", "a"]]  # "none" started no agent
    c, (b, a) = workers[0][0], workers[1]
    assert (b.start, b.end) == (1000.5, 1002.5)  # from its first start to its last frame
    assert c.start == 999.5 and c.end == pytest.approx(1004.5) and c.worker == 8
    assert a.prestarted and not b.prestarted
    assert not a.alone and not b.alone and c.alone  # a began while b ran; c is alone in its process


def test_a_transcript_without_start_times_is_refused_with_a_sentence(tmp_path):
    (tmp_path / "old.jsonl").write_text(json.dumps({"seq": 0, "conn": 0, "dir": "event", "t": 0.0, "event": "start",
                                                    "detail": {"argv": ["a"], "cwd": "/", "pid": 1}}) + "\n")
    with pytest.raises(ValueError, match="records no start time"):
        read_run(tmp_path)


def test_alone_means_overlapping_no_other_test():
    tests = [_test("long", 0, 10), _test("inside", 2, 3), _test("after", 11, 12), _test("late", 9.5, 20),
             _test("touching", 20, 21)]
    mark_alone(tests)
    assert {t.name: t.alone for t in tests} == {"long": False, "inside": False, "after": False, "late": False,
                                                "touching": True}


def test_covered_is_the_time_in_which_some_test_ran():
    tests = [_test("a", 0, 10), _test("b", 2, 3), _test("c", 9, 12), _test("d", 15, 16)]
    assert covered(tests) == 13.0  # 0-12 and 15-16
    assert covered([]) == 0.0


def test_the_start_event_records_when_and_by_which_suite_process(tmp_path):
    before = time.time()
    first, adopted = Transcript(), Transcript()
    t = Transport([sys.executable, "-c", "import sys; sys.stdin.read()"], first, cwd=str(tmp_path))

    async def go():
        await t.spawn()
        t.adopt(adopted)  # a process started ahead, taken by its test
        await t.discard()

    anyio.run(go)
    start, taken = first.frames[0], adopted.frames[0]
    assert start.event == taken.event == "start"
    assert before <= start.detail["wall"] <= taken.detail["wall"] <= time.time() + 0.001
    assert start.detail["suite_pid"] == taken.detail["suite_pid"] == os.getpid() and taken.detail["prestarted"]


# -- the schedule: what may start now --------------------------------------------------------------------------

def test_serial_depth_zero_runs_one_test_at_a_time():
    s = FloorSchedule([False] * 3, depth=0)
    assert s.startable() == [0]
    s.started.add(0)
    assert s.startable() == []
    s.finished.add(0)
    assert s.startable() == [1]


def test_up_to_depth_beside_the_current_test_each_that_ends_making_room():
    s = FloorSchedule([False] * 8, depth=2)
    assert s.startable() == [0, 1, 2]
    s.started |= {0, 1, 2}
    s.finished.add(2)  # one ahead ended: the next takes its place while 0 still runs
    assert s.startable() == [3]
    s.started.add(3)
    s.finished.add(0)  # the current one ended: 1 is current, 3 runs beside it, one more may start
    assert s.current == 1 and s.startable() == [4]


def test_the_window_stops_before_a_test_that_runs_alone_which_then_runs_with_nothing_beside_it():
    s = FloorSchedule([False, False, True, False, False], depth=5)
    assert s.startable() == [0, 1]
    s.started |= {0, 1}
    s.finished.add(0)
    assert s.startable() == []  # 2 runs alone: not while 1 runs
    s.finished.add(1)
    assert s.startable() == [2]
    s.started.add(2)
    assert s.startable() == []  # nothing beside it
    s.finished.add(2)
    assert s.startable() == [3, 4]


def test_tests_started_ahead_are_bounded_by_the_ahead_limit():
    s = FloorSchedule([False] * 10, depth=2, ahead_limit=3)
    s.started |= {0, 1, 2}
    s.finished |= {1, 2}  # two ahead ended, still waiting for their test
    assert s.startable() == [3]  # 1, 2, 3 ahead of 0: the limit
    s.started.add(3)
    s.finished.add(3)
    assert s.startable() == []


# -- playing a worker's tests -----------------------------------------------------------------------------------

def test_play_never_runs_more_than_the_schedule_allows_and_runs_every_test_once():
    tests = [_test(f"t{i}", i, i + 1) for i in range(12)]
    for i in (5, 9):
        tests[i].alone = True
    lock = threading.Lock()
    running: list[int] = []
    seen: list[tuple[int, list[int]]] = []
    release = {i: threading.Event() for i in range(12)}

    def run_one(test: Recorded, spare) -> str:
        i = int(test.name[1:])
        with lock:
            seen.append((i, sorted(running)))
            running.append(i)
        if i == 0:  # the current test waits until the two beside it have started: they run while it does
            assert release[0].wait(30), "the tests ahead did not start beside the current one"
        with lock:
            running.remove(i)
            if len(seen) >= 3:
                release[0].set()
        return test.name

    assert play(tests, depth=2, run_one=run_one) == [t.name for t in tests]
    # (the threads record in the order the system runs them: what is asserted holds whatever that order)
    assert sorted(i for i, _ in seen) == list(range(12))
    for i, beside in seen:
        assert len(beside) <= 2  # the current one and at most one other were running when a third started
        if i in (5, 9):
            assert beside == []  # alone
        assert not any(b in (5, 9) for b in beside)
        assert i in (5, 9) or i < 5 and all(b < 5 for b in beside) or 5 < i < 9 and all(5 < b < 9 for b in beside) \
            or i > 9 and all(b > 9 for b in beside)  # nothing crosses a test that runs alone


def test_a_prestarted_agent_is_started_when_the_test_before_starts_and_a_spare_not_taken_is_discarded():
    tests = [_test("a", 0, 1), _test("b", 1, 2, prestarted=True), _test("c", 2, 3)]
    for t in tests:
        t.alone = True
    events: list[str] = []

    def prestart(test):
        events.append(f"prestart {test.name}")
        return f"spare of {test.name}"

    def run_one(test, spare):
        events.append(f"run {test.name} with {spare}")

    play(tests, 0, run_one, prestart, discard=lambda s: events.append(f"discard {s}"))
    assert events == ["prestart b", "run a with None", "run b with spare of b", "run c with None"]


def test_an_error_in_one_replay_is_raised_after_the_others_end():
    tests = [_test("a", 0, 1), _test("b", 1, 2)]
    ran = []

    def run_one(test, spare):
        ran.append(test.name)
        if test.name == "a":
            raise RuntimeError("agent exited")

    with pytest.raises(RuntimeError, match="agent exited"):
        play(tests, 1, run_one)
    assert sorted(ran) == ["a", "b"]


# -- replaying one test ----------------------------------------------------------------------------------------

ECHO_AGENT = [sys.executable, "-c", """
import json, sys, uuid
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "session/new":
        out = {"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": "s-" + uuid.uuid4().hex[:6]}}
    else:
        out = {"jsonrpc": "2.0", "id": m["id"], "result": {"echo": m.get("params")}}
    print(json.dumps(out), flush=True)
"""]


def _exchange(wall: float = 1.0, pid: int = 1) -> list[dict]:
    """A recorded connection: session/new, then a request naming the session the agent made."""
    def frame(seq, d, t, msg):
        return {"seq": seq, "conn": 0, "dir": d, "t": t, "raw": json.dumps(msg)}

    return [
        {"seq": 0, "conn": 0, "dir": "event", "t": 0.0, "event": "start",
         "detail": {"argv": ["a"], "cwd": "/old/cwd", "pid": 1, "wall": wall, "suite_pid": pid}},
        frame(1, "sent", 0.1, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/old/cwd"}}),
        frame(2, "received", 0.2, {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s-recorded"}}),
        frame(3, "sent", 0.3, {"jsonrpc": "2.0", "id": 2, "method": "x", "params": {"sessionId": "s-recorded"}}),
        frame(4, "received", 0.4, {"jsonrpc": "2.0", "id": 2, "result": {}}),
        {"seq": 5, "conn": 0, "dir": "event", "t": 0.5, "event": "stdin-closed"},
    ]


def test_a_replay_sends_what_the_suite_sent_with_the_ids_the_agent_made_this_time(tmp_path):
    entries = _exchange()
    log = tmp_path / "seen.jsonl"
    agent = [*ECHO_AGENT[:2], ECHO_AGENT[2].replace("for line in sys.stdin:",
                                                   f"log = open({str(log)!r}, 'w')\nfor line in sys.stdin:\n"
                                                   f"    log.write(line); log.flush()")]
    stats = replay_test(entries, agent)
    assert (stats.tests, stats.connections, stats.ran_out) == (1, 1, 0)
    sent = [json.loads(x) for x in log.read_text().splitlines()]
    assert sent[0]["params"]["cwd"] not in ("/old/cwd", "")  # its own fresh directory
    new_sid = sent[1]["params"]["sessionId"]
    assert new_sid.startswith("s-") and new_sid != "s-recorded"


def test_the_floor_of_a_run_replays_every_worker_and_says_where_the_run_spent_more(tmp_path):
    for name, wall, pid in (("a", 100.0, 1), ("b", 100.2, 2), ("c", 101.0, 1)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in _exchange(wall, pid)))
    seconds, stats = replay_floor(tmp_path, ECHO_AGENT, depth=1)
    assert (stats.tests, stats.connections, stats.ran_out) == (3, 3, 0) and seconds > 0
    assert stats.span == pytest.approx(1.5)  # from a's start to c's last frame
    assert sorted(name for _, name, _, _ in stats.above) == ["a", "b", "c"]


def test_the_tests_most_above_their_replay_come_first():
    stats = ReplayStats(above=[(0.1, "quick", 0.3, 0.2), (5.0, "settles", 6.0, 1.0), (-0.2, "faster", 0.1, 0.3)])
    assert stats.most_above(2) == "settles 6.0 s vs 1.0 s, quick 0.3 s vs 0.2 s"


# -- the bench's summary of repeated runs ----------------------------------------------------------------------

def test_the_verdicts_of_all_runs_of_a_target_are_compared_and_a_difference_is_named():
    from bench_suite import same_verdicts
    a = {"CLOSE-004": "pass", "INIT-001": "pass"}
    assert same_verdicts({"-n 0 run-ahead 0 run 1": a, "-n 2 run-ahead 5 run 1": dict(a)}) == \
        "identical rule verdicts in all 2 runs"
    got = same_verdicts({"r1": a, "r2": dict(a), "r3": {"CLOSE-004": "fail"}})
    assert got == ("rule verdicts differ between the 3 runs: CLOSE-004: pass in r1, r2; fail in r3 | "
                   "INIT-001: pass in r1, r2; None in r3")


def test_repeated_runs_are_reported_as_medians_with_the_suite_s_range():
    from bench_suite import WholeRun, _row
    from floor import ReplayStats
    runs = [WholeRun(s, "", {}, f, ReplayStats()) for s, f in ((30.0, 20.0), (40.0, 20.0), (33.0, 30.0))]
    assert _row("reference", 0, "5", runs, base=66.0) == \
        "| reference | 0 | 5 | 33.0 s (30.0-40.0) | 20.0 s | 1.50 | - | - | 0.50 |"
    assert _row("reference", 2, "0", runs[:1], base=None) == \
        "| reference | 2 | 0 | 30.0 s | 20.0 s | 1.50 | - | - |  |"
    kept = [WholeRun(s, "", {}, f, ReplayStats(), w) for s, f, w in ((30.0, 20.0, 25.0), (40.0, 20.0, 32.0))]
    assert _row("reference", 0, "5", kept, base=None) == \
        "| reference | 0 | 5 | 35.0 s (30.0-40.0) | 20.0 s | 1.75 | 28.5 s | 1.23 |  |"


def test_a_send_the_agent_s_lines_never_allow_goes_once_the_agent_is_silent_and_is_counted(tmp_path, monkeypatch):
    import floor
    monkeypatch.setattr(floor, "QUIET", 0.05)  # the agent will never write the line the run had: no race to lose
    entries = _exchange()
    extra = dict(entries[2], seq=2, raw=json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {}}))
    entries = entries[:3] + [extra] + [dict(e, seq=e["seq"] + 1) for e in entries[3:]]
    stats = replay_test(entries, ECHO_AGENT)
    # the request after the missing line, and the end of input (the run closed it after 3 lines)
    assert stats.ran_out == 2 and [x.split(" (")[0] for x in stats.ran_out_in] == \
        ["frame #4: 1 of 2 lines", "frame #6: 2 of 3 lines"]
    assert all(" (silent " in x for x in stats.ran_out_in)  # the agent's silence let them go, not the slack


def test_an_agent_slow_to_start_is_waited_for_however_long_it_is_silent(tmp_path, monkeypatch):
    import floor
    monkeypatch.setattr(floor, "QUIET", 0.05)  # far shorter than the agent's start-up below
    slow = [ECHO_AGENT[0], "-c", "import time; time.sleep(0.3)\n" + ECHO_AGENT[2]]
    stats = replay_test(_exchange(), slow)
    assert stats.ran_out == 0, stats.ran_out_in  # silent before it ever answered: not "done", still starting


def test_an_agent_silent_since_the_frame_before_is_sent_the_next_once_quiet_not_after_the_slack(monkeypatch):
    """The run had a line here that the agent does not write this time, and the agent wrote nothing since the frame
    before (a notification it does not answer): it waits for this frame, as after a cancel it has not seen."""
    import floor
    monkeypatch.setattr(floor, "QUIET", 0.05)
    monkeypatch.setattr(floor, "SLACK", 30.0)
    quiet_agent = [sys.executable, "-c", "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                   "    if 'id' in m:\n        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {}}), "
                   "flush=True)\n"]
    entries = _exchange()
    notify = dict(entries[3], seq=3, t=0.25, raw=json.dumps({"jsonrpc": "2.0", "method": "n", "params": {}}))
    update = dict(entries[2], seq=4, t=0.28, raw=json.dumps({"jsonrpc": "2.0", "method": "session/update",
                                                             "params": {}}))
    entries = entries[:3] + [notify, update] + [dict(e, seq=e["seq"] + 2) for e in entries[3:]]
    t = time.monotonic()
    stats = replay_test(entries, quiet_agent)
    assert time.monotonic() - t < 10, stats.ran_out_in  # not the 30 s slack
    assert stats.ran_out_in and all(" (silent " in x for x in stats.ran_out_in), stats.ran_out_in


# -- the floor with the suite's observation windows -------------------------------------------------------------

def _settled(entries: list[dict], seconds: float) -> list[dict]:
    """``entries`` with a settle of ``seconds`` after the first answer, as the runner notes it (steps_await.py)."""
    note = {"seq": 3, "conn": 0, "dir": "event", "t": 0.25, "event": "note",
            "detail": {"text": f"settle: waited {seconds:.2f} s; the target was quiet", "settle": seconds}}
    return entries[:3] + [note] + [dict(e, seq=e["seq"] + 1) for e in entries[3:]]


def test_the_floor_with_windows_waits_where_the_run_settled_and_the_plain_floor_does_not(tmp_path, monkeypatch):
    import floor
    log = tmp_path / "seen.txt"
    agent = [*ECHO_AGENT[:2], ECHO_AGENT[2].replace(
        "for line in sys.stdin:", f"import time\nlog = open({str(log)!r}, 'w')\nfor line in sys.stdin:\n"
                                  f"    log.write(repr(time.monotonic()) + '\\n'); log.flush()")]
    entries = _settled(_exchange(), 0.3)
    settles: list[float] = []
    real = floor._settle
    monkeypatch.setattr(floor, "_settle", lambda *a: (settles.append(a[-1]), real(*a)))
    replay_test(entries, agent)
    assert settles == []  # the agent's own time only
    stats = replay_test(entries, agent, windows=True)
    assert stats.ran_out == 0 and settles == [0.3]
    first, second = (float(x) for x in log.read_text().split())
    assert second - first >= 0.3  # the request after the settle went once the agent had been quiet that long


def test_a_window_ends_at_the_settle_s_bound_while_the_agent_streams():
    import floor
    changed, got, last = threading.Condition(), [b"x\n"], [time.monotonic()]
    stop = threading.Event()

    def stream() -> None:  # a line every 10 ms: never quiet for the 0.1 s asked
        while not stop.wait(0.01):
            with changed:
                got.append(b"x\n")
                last[0] = time.monotonic()
                changed.notify_all()

    th = threading.Thread(target=stream, daemon=True)
    th.start()
    try:
        t = time.monotonic()
        with changed:
            floor._settle(changed, got, last, 0.1)
        assert time.monotonic() - t >= 0.1 * floor.SETTLE_BOUND  # it waited the whole bound, as the runner does
        assert th.is_alive()  # and ended there, the agent still writing
    finally:
        stop.set()
        th.join()
