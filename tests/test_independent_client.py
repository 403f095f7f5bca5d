"""The client suite against an ACP v2 client written apart from it (tests/independent/client.py, from the spec
text, with choices of its own): a correct client earns CONFORMANT with no option beyond its command (issue 25).

Its choices are legal and leave rules not-exercised, never inconclusive: it answers permission requests at once
(it never holds one, nor gives up a request of its own), never cancels, lists, resumes or sets options, and offers
no elicitation. CANCEL-014 is still judged: the suite's $/cancel_request names the client's own pending session/new.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from suite_run import run_and_read

CLIENT = Path(__file__).resolve().parent / "independent" / "client.py"
# the whole client suite on it takes ~14 s on an idle machine, 10 s of which two scenarios wait for a
# session/cancel this client never sends; the bound leaves room for a loaded machine, not for a hang
LONGEST_RUN = 90.0


def test_an_independent_client_is_conformant_with_no_option(tmp_path):
    report_dir, junit = tmp_path / "reports", tmp_path / "junit.xml"
    cmd = [sys.executable, "-m", "acp_conformance", "client", f"--acp-report-dir={report_dir}",
           f"--junitxml={junit}", "-q", "-p", "no:xdist", "--", sys.executable, str(CLIENT), "--", "{agent}"]
    start = time.monotonic()
    run = run_and_read(cmd, tmp_path, report_dir, junit, timeout=240)
    took = time.monotonic() - start
    assert run.report is not None, run.output[-4000:]
    failing = {r["id"]: r["reason"][:300] for r in run.report["rules"]
               if r["checked"] and r["status"] in ("fail", "flaky", "not-tested") and r["blocking"]}
    assert run.returncode == 0 and run.report["verdict"]["conformant"] is True, (failing, run.output[-3000:])
    # pytest's outcome and the verdict agree: no test failed, no rule failed or was left unreached
    assert not re.search(r"\b[1-9]\d* failed\b", run.output), run.output[-3000:]
    assert not run.with_status("fail") and not run.with_status("warn"), run.output[-3000:]
    assert not failing, failing
    # the suite creates CANCEL-012..014's situations itself: a client that answers at once is judged on them
    for rule in ("CANCEL-012", "CANCEL-013", "CANCEL-014", "CLIENT-013", "CLIENT-017", "CLIENT-028"):
        assert run.status(rule) == "pass", run.rule(rule)
    assert "session/new" in run.rule("CANCEL-014")["reason"]
    # what it never does on its own is not-exercised, with the reason
    for rule in ("CLIENT-012", "CLIENT-022", "CLIENT-024"):
        assert run.status(rule) == "not-exercised", run.rule(rule)
    assert took < LONGEST_RUN, f"the client suite took {took:.1f} s"


def test_the_independent_client_refuses_a_command_line_without_its_agent():
    import subprocess
    done = subprocess.run([sys.executable, str(CLIENT)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "usage" in done.stderr
