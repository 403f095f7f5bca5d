"""Unit tests of the TRANSPORT checks of the agent-side monitors, on synthetic transcripts
(tests/monitor_transcripts.py: a broken variant of the reference transcripts must fail its rule and no other)."""

from __future__ import annotations

from acp_conformance.rules.findings import FAIL, WARN

from monitor_transcripts import BASE, INIT2, assert_fails, msgs, run, statuses


# --- TRANSPORT ------------------------------------------------------------------------------------

def test_transport_003_banner_fails():
    findings = run("@raw Starting agent v1.0...\n" + BASE)
    assert_fails(findings, "TRANSPORT-003")
    assert "Starting agent" in msgs(findings, "TRANSPORT-003", FAIL)[0]


def test_transport_003_non_jsonrpc_json_fails():
    findings = run(INIT2 + '\n@raw {"log":"hello"}')
    assert_fails(findings, "TRANSPORT-003")


def test_transport_003_empty_line_warns():
    findings = run("@raw \n" + BASE)
    assert_fails(findings, "TRANSPORT-003", levels=(WARN,))
    assert FAIL not in statuses(findings, "TRANSPORT-003")


def test_transport_003_many_bad_lines_are_summarised():
    findings = run("\n".join(["@raw log line %d" % i for i in range(12)]) + "\n" + INIT2)
    fails = [f for f in findings if f.rule == "TRANSPORT-003" and f.status == FAIL]
    assert len(fails) == 6 and "7 more" in fails[-1].message


def test_transport_003_long_line_is_cut():
    findings = run("@raw " + "x" * 500 + "\n" + INIT2)
    m = msgs(findings, "TRANSPORT-003", FAIL)[0]
    assert len(m) < 400
