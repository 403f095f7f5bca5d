"""One run of a client against a scripted agent, and its verdict (for the client fuzzer and its replay).

The ordinary ``ClientRunner`` plays the script; every frame goes to ``ClientJudge``, the fuzzer's
``Judge`` over the client monitors. ``run_failures`` says what failed: blocking findings of the
client's rules, and what no rule names (the client died, left in the middle of a turn, or the run
could not finish). The client, the relay and whatever they started are stopped when the run ends.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.validate import Validator
from ..rules.findings import Finding
from ..rules.monitor import MonitorContext
from ..rules.monitors import CLIENT_MONITORS
from ..scenarios.model import Scenario
from ..scenarios.runner import RunResult, RunSettings, TargetSpec
from ..wire.transcript import EV_EOF, EV_EXIT, EV_STDIN_CLOSED, RECEIVED, SENT
from ..thresholds import FUZZ, Thresholds
from .config import StepStats
from .judge import Judge

if TYPE_CHECKING:
    from .client_fuzz import ClientFuzzConfig


class ClientJudge(Judge):
    """The fuzzer's ``Judge`` (frames in, timed; blocking failures out) over the client monitors."""

    def __init__(self, validator: Validator, options: dict[str, Any], stats: StepStats,
                 thresholds: Thresholds = FUZZ):
        super().__init__(validator, options, stats, thresholds)
        self.ctx = MonitorContext(target_side="client", options={"validator": validator,
                                                                 **thresholds.monitor_options(), **options})
        self.ctx.add_monitors(CLIENT_MONITORS)

    def blocking(self, findings: list[Finding]) -> list[Finding]:
        # A both-side monitor also speaks of agent-only rules; only the client's count (as in the plugin).
        mine = [f for f in findings if f.rule in self.catalog and self.catalog[f.rule].side in ("client", "both")]
        return self.policy.blocking_findings(self.catalog, mine)


def _status(frame) -> str:
    d = frame.detail or {}
    return str(d.get("status") or f"returncode {d.get('returncode')}")


def _last_sent(frames, before: int) -> str:
    last = next((f for f in reversed(frames[:before]) if f.direction == SENT), None)
    return f"frame #{last.seq}: {last.text(200)}" if last is not None else "nothing"


def run_failures(judge: ClientJudge, result: RunResult) -> tuple[list[str], list[str]]:
    """What failed in one finished client run: (messages, rule ids). Empty: the client passed.

    Blocking findings of the client monitors, plus what no rule names: the client died (a failure
    status or a signal before the suite ended the connection), left in the middle of a turn, or the
    run could not finish."""
    failures: list[str] = []
    if harness_error(result):
        failures.append(f"harness error (a defect of the suite): {result.harness_error}")
    if result.error:
        failures.append(f"the client run did not finish: {result.error}")
    frames = judge.ctx.frames
    closed = next((f.seq for f in frames if f.event == EV_STDIN_CLOSED), None)  # the suite ended its side
    # a script whose agent dies (``exit``) hangs up first and records it after the connection's end
    hung_up = any(f.event == EV_STDIN_CLOSED and (f.detail or {}).get("hang_up") for f in frames)
    ex = next((f for f in frames if f.event == EV_EXIT), None)
    rc = (ex.detail or {}).get("returncode") if ex is not None else None
    if ex is not None and isinstance(rc, int) and rc != 0 and (closed is None or ex.seq < closed) and not hung_up:
        failures.append(f"the client died ({_status(ex)}); the last thing the suite sent was "
                        f"{_last_sent(frames, ex.seq)}")
    elif not hung_up:
        eof = next((f for f in frames if f.event == EV_EOF), None)
        if eof is not None and (closed is None or eof.seq < closed):
            open_turn = _open_turn(frames[:eof.seq])
            if open_turn is not None:
                failures.append(f"the client closed the connection in the middle of the turn of its session/prompt "
                                f"(frame #{open_turn}), before the idle state that ends it; the last thing the "
                                f"suite sent was {_last_sent(frames, eof.seq)}")
    rules: list[str] = []
    for f in judge.blocking(judge.ctx.findings):  # after a death: what the monitors make of it
        failures.append(f"{f.rule} failed: {f.message}")
        rules.append(f.rule)
    return failures, list(dict.fromkeys(rules))


def harness_error(result: RunResult) -> str | None:
    """The runner's own error, except TargetGone: the client left while the runner awaited its answer
    (which ends the runner's task group); what the client did is judged from the transcript."""
    if result.harness_error and "TargetGone" not in result.harness_error:
        return result.harness_error
    return None


def _open_turn(frames) -> int | None:
    """The frame of a successfully answered session/prompt whose turn had not ended (no idle yet),
    when the client did not cancel it."""
    prompts: dict[str, tuple[int, Any]] = {}  # id key -> (seq, sessionId)
    started: list[tuple[int, Any]] = []
    idles: dict[Any, int] = {}
    cancelled: set = set()
    for f in frames:
        m = f.msg
        if not isinstance(m, dict):
            continue
        p = m.get("params") if isinstance(m.get("params"), dict) else {}
        if f.direction == RECEIVED and m.get("method") == "session/prompt" and "id" in m:
            prompts[json.dumps(m["id"])] = (f.seq, p.get("sessionId"))
        elif f.direction == RECEIVED and m.get("method") == "session/cancel":
            cancelled.add(p.get("sessionId"))
        elif f.direction == SENT and "result" in m and json.dumps(m.get("id")) in prompts:
            started.append(prompts.pop(json.dumps(m.get("id"))))
        elif f.direction == SENT and m.get("method") == "session/update":
            u = p.get("update") if isinstance(p.get("update"), dict) else {}
            if u.get("sessionUpdate") == "state_update" and u.get("state") == "idle":
                idles[p.get("sessionId")] = idles.get(p.get("sessionId"), 0) + 1
    for seq, sid in started:
        if sid in cancelled:
            continue
        if idles.get(sid, 0) > 0:
            idles[sid] -= 1
        else:
            return seq
    return None


def run_client_scenario(scn: Scenario, config: "ClientFuzzConfig", judge: ClientJudge) -> RunResult:
    """One run of the ordinary client runner; every frame to ``judge``; the client and relay stopped."""
    import anyio

    from ..scenarios.client_runner import ClientRunner

    settings = RunSettings(timeout=config.timeout, startup_timeout=config.startup_timeout,
                           test_timeout=config.test_timeout, shutdown_grace=config.shutdown_grace)
    tmp = None if config.cwd else tempfile.mkdtemp(prefix="acp-fuzzc-")
    sock_dir = tempfile.mkdtemp(prefix="acp-sock-")  # short: a Unix socket path has ~100 bytes
    try:
        runner = ClientRunner(scn, TargetSpec(config.argv, config.env), settings, Path(config.cwd or tmp),
                              Path(sock_dir), listeners=[judge.feed])
        result = anyio.run(_run_and_release, runner)
        judge.ctx.finish()
    finally:
        for d in (tmp, sock_dir):
            if d:
                shutil.rmtree(d, ignore_errors=True)
    return result


async def _run_and_release(runner) -> RunResult:
    import anyio

    try:
        return await runner.run()
    finally:
        # the runner has stopped the client; its process handle and pipes (the client's own stdin
        # is left open when it talks through the relay) are released inside the event loop, not by
        # the garbage collector once the loop is gone (asyncio then warns "Event loop is closed")
        proc = getattr(runner.transport, "process", None)
        if proc is not None:
            with anyio.move_on_after(2.0, shield=True), contextlib.suppress(Exception):
                await proc.aclose()
