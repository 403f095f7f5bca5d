"""Unit tests of the agent-side monitors, on synthetic transcripts.

The base transcripts are the reference transcripts of WIRE-NOTES section 2 (what a correct agent
does): every rule judged there passes with no fail or warn. Each broken variant changes a few
lines and must fail its rule, and no other rule (except where two rules judge the same fact).

The bench (transcripts, player, helpers) is tests/monitor_transcripts.py; this module holds the checks over
the whole bench, and tests/test_monitors_<area>.py the broken variants of each rule area.
"""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, NOT_TESTED, PASS, WARN
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import ALL_MONITORS, RULES_CHECKED

from monitor_transcripts import (
    BASE, INIT2, INITIALIZE, MY_RULES, SLICE_MONITORS, Player, bad, change, run, statuses,
)


# --- the correct transcripts --------------------------------------------------------------------

def test_reference_transcripts_pass_everything():
    findings = run(BASE, SLICE_MONITORS)
    problems = [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN, NOT_TESTED)]
    assert not problems, problems
    passed = {f.rule for f in findings if f.status == PASS}
    missing = MY_RULES - passed - {"INIT-003"}
    assert not missing, sorted(missing)


def test_initialize_transcript_passes():
    findings = run(INITIALIZE)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    for rule in ("INIT-001", "INIT-002", "INIT-003", "ERR-004", "TRANSPORT-003"):
        assert PASS in statuses(findings, rule), rule


def test_rules_checked_and_expected():
    assert set(RULES_CHECKED) >= {
        "PROMPT-001", "PROMPT-002", "PROMPT-003", "PROMPT-004", "PROMPT-005", "PROMPT-006", "PROMPT-011",
        "PROMPT-012", "PROMPT-013", "CANCEL-001", "CANCEL-002", "CANCEL-003", "RESUME-002", "RESUME-003",
        "RESUME-004", "RESUME-005", "ERR-001", "ERR-002", "ERR-004", "CLOSE-005", "INIT-001", "INIT-002",
        "INIT-003", "TRANSPORT-003"}
    for cls in ALL_MONITORS:
        for rule in cls.rules:
            assert cls.expected.get(rule, "").endswith("."), rule


def test_passes_are_few():
    findings = run(BASE, SLICE_MONITORS)
    counts = {}
    for f in findings:
        if f.status == PASS:
            counts[f.rule] = counts.get(f.rule, 0) + 1
    assert max(counts.values()) <= 3, counts


def test_every_finding_lists_frames_offending_first():
    findings = run(change(BASE, '"id":2,"result":{"messageId":"msg_u1"}', '"id":2,"result":{}'))
    f = next(f for f in findings if f.rule == "PROMPT-001" and f.status == FAIL)
    assert f.frames and f.expected
    # the offending frame is the response, then the request
    assert f.frames[0] > f.frames[1]


# --- streaming through a real Transcript --------------------------------------------------------

def test_transcript_listener():
    from acp_conformance.wire.transcript import Transcript
    ctx = MonitorContext(target_side="agent")
    ctx.add_monitors(ALL_MONITORS)
    tr = Transcript(listeners=[ctx.feed])
    tr.conn = 1
    tr.event("start", argv=["agent"], pid=1)
    for line in INIT2.splitlines():
        body = line[5:].split("    #")[0]
        if line.startswith("C->A"):
            tr.sent(body.encode(), json.loads(body))
        else:
            tr.received(body.encode())
    ctx.finish()
    assert PASS in statuses(ctx.findings, "INIT-001")
    assert PASS in statuses(ctx.findings, "ERR-004")


# --- robustness: odd shapes never raise ----------------------------------------------------------

ODD = [
    '{"jsonrpc":"2.0","method":"session/update","params":[]}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":[]}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message","messageId":[1]}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","background":{"x":1}}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":{"a":1}}}}',
    # (list/dict ids are left out: MonitorContext._read cannot key them; see the report)
    '{"jsonrpc":"2.0","id":true,"result":null}',
    '{"jsonrpc":"2.0","id":1.5,"error":"x"}',
    '{"jsonrpc":"2.0","id":0,"result":"x"}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"data":"s"}}',
    '[[],{}]', 'null', '"text"', '[]',
]


def test_odd_shapes_do_not_raise():
    p = Player()
    p.sent('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2"}}')
    p.sent('{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":"x"}}')
    p.sent('{"jsonrpc":"2.0","id":true,"method":"session/resume","params":null}')
    p.sent('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
    for line in ODD:
        p.received(line)
    p.sent('{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":"s"}}')
    p.received('{"jsonrpc":"2.0","id":2,"error":{"code":-32002}}')
    p.event("start")
    p.received(b"\xff\xfe")
    findings = p.finish()
    assert FAIL in statuses(findings, "TRANSPORT-003")
