"""No monitor raises on what a target may send: wrong types, missing fields, dropped, repeated or late frames.

A monitor that raised used to cost the test every finding (now it costs its own rules: tests/test_monitor_crash.py);
either way it is a bug. Two sources of odd input:
* tests/data/perturbed_transcripts/: reference-agent transcripts with one value retyped or removed, or a frame
  dropped, repeated or delayed, each of which once made a monitor raise (a toolCallId that is an object, a
  sessionId that is a list, a prompt block type that is a list, $/cancel_request without params, ...);
* seeded perturbations of the correct transcripts of tests/monitor_transcripts.py, fresh on every run of the
  seed list (deterministic, so a failure reproduces from its seed).
The project's tests run with ACP_CONFORMANCE_MONITOR_ERRORS=raise (conftest.py): a monitor's exception fails here.
"""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path

import pytest

from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import AGENT_MONITORS
from acp_conformance.wire.transcript import EVENT, Frame, parse_line
from monitor_transcripts import BLOCKS, Player, base

DATA = Path(__file__).resolve().parent / "data" / "perturbed_transcripts"
ODD_VALUES = [None, "", 0, -1, 2, 70000, "x", [], {}, True, 1.5, "/abs/p", "rel/p", "idle", "running", "cancelled",
              [{"type": "text", "text": "hi"}], {"type": "text", "text": "hi"}, -32602, {"code": -32602}]


def judge_file(path: Path) -> list:
    ctx = MonitorContext(target_side="agent", options={})
    ctx.add_monitors(AGENT_MONITORS)
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        if d["dir"] == EVENT:
            ctx.feed(Frame(d["seq"], d["conn"], EVENT, d["t"], event=d["event"], detail=d.get("detail")))
        else:
            raw = d["raw"].encode()
            msg, problem = parse_line(raw)
            ctx.feed(Frame(d["seq"], d["conn"], d["dir"], d["t"], raw, msg, problem))
    ctx.finish()
    return ctx.findings


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.stem)
def test_a_transcript_that_once_made_a_monitor_raise_is_judged(path):
    assert judge_file(path)


def _paths(value, at=()):
    if at:
        yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _paths(inner, at + (key,))


def _retype(msg, rng: random.Random):
    paths = list(_paths(msg))
    if not paths:
        return msg
    where = rng.choice(paths)
    parent = msg
    for key in where[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[where[-1]]
    else:
        parent[where[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
    return msg


def perturbed(script: str, rng: random.Random) -> str:
    lines = script.splitlines()
    messages = [i for i, line in enumerate(lines) if line[:4] in ("C->A", "A->C")]
    for _ in range(rng.randint(1, 4)):
        i = rng.choice(messages)
        head, _, body = lines[i].partition(" ")
        roll = rng.random()
        if roll < 0.7:
            try:
                lines[i] = f"{head} {json.dumps(_retype(json.loads(body), rng), separators=(',', ':'))}"
            except ValueError:  # a line that is no JSON on purpose
                pass
        elif roll < 0.85:
            lines[i] = ""
        else:
            lines.insert(i + 1, lines[i])
    return "\n".join(lines)


SCRIPTS = {"composite": base(), **{name: f"{BLOCKS['init']}\n{BLOCKS['new']}\n{block}"
                                   for name, block in BLOCKS.items() if name not in ("init", "new")
                                   and not block.startswith("@")}}


@pytest.mark.parametrize("seed", range(int(os.environ.get("ACP_PERTURB_SEEDS", "40"))))
def test_perturbed_correct_transcripts_are_judged(seed):
    rng = random.Random(seed)
    for name, script in SCRIPTS.items():
        odd = perturbed(script, rng)
        Player().play(odd).finish()  # raises (ACP_CONFORMANCE_MONITOR_ERRORS=raise) if a monitor does
