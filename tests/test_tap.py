"""``acp-conformance tap`` and ``check``: observed traffic, judged from both sides.

* the proxy is transparent: each side receives exactly the bytes of a direct connection (invalid UTF-8, a
  40 MB line, partial lines, an agent that writes first), and tap exits as the agent did;
* between the reference client and the reference agent, the rules the session exercised get the statuses the
  scripted suite gives the same programs; mutants of either are caught through tap by their intended rules,
  blamed on the right side; a target that dies mid-turn still gets its report;
* ``check`` judges a recorded session as tap judged it live, reads plain logs, and refuses unreadable files
  with the line and the reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from suite_run import ROOT, run_suite

sys.path.insert(0, str(ROOT / "tests" / "client_mutants"))
from client_mutants import MUTANTS as CLIENT_MUTANTS  # noqa: E402

PY = sys.executable
TAP = [PY, "-m", "acp_conformance", "tap", "--quiet"]
CHECK = [PY, "-m", "acp_conformance", "check"]
REFERENCE_AGENT = [PY, "-m", "acp_conformance.reference.agent"]
REFERENCE_CLIENT = [PY, "-m", "acp_conformance.reference.client", "--timeout", "10"]
BYTE_AGENT = [PY, str(ROOT / "tests" / "tap_helpers" / "byte_agent.py")]
AGENT_MUTANTS = [PY, str(ROOT / "tests" / "mutants" / "agent_mutants.py")]
CLIENT_MUTANT_SCRIPT = str(ROOT / "tests" / "client_mutants" / "client_mutants.py")
BIG = 40 * 1024 * 1024
UNREACHED = {"not-tested", "not-exercised", "skip"}  # a scripted run's statuses of a rule whose situation never arose


def report(d: Path) -> dict:
    data = json.loads((d / "report.json").read_text())
    from acp_conformance.report.schema_check import report_errors
    assert not report_errors(data), report_errors(data)[:5]
    return data


def rules(data: dict) -> dict[str, dict]:
    return {r["id"]: r for r in data["rules"]}


def bad(data: dict) -> dict[str, tuple[str, list[str]]]:
    return {r["id"]: (r["status"], r["broken_by"]) for r in data["rules"] if r["status"] in ("fail", "warn", "flaky")}


# -- transparency ------------------------------------------------------------------------------------------
def _editor(argv: list[str], to_agent: bytes, cwd: Path) -> tuple[bytes, int, bytes]:
    """Play the editor: write ``to_agent`` in uneven pieces while reading everything the other side writes
    (stdout, and stderr, which editors show in their logs)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    err: list[bytes] = []
    errt = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    errt.start()

    def write() -> None:
        i, step = 0, 3
        while i < len(to_agent):
            proc.stdin.write(to_agent[i:i + step])
            proc.stdin.flush()
            i += step
            step = min(step * 3, 1 << 21)
        proc.stdin.close()

    t = threading.Thread(target=write)
    t.start()
    out = proc.stdout.read()
    t.join(120)
    rc = proc.wait(120)
    errt.join(120)
    return out, rc, err[0]


def _blob(side: str) -> bytes:
    init = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"e"}}}\n'
            if side == "client" else b'{"jsonrpc":"2.0","method":"_x/hello","params":{"text":"\xc3\xa9\xe2\x9c\x93"}}\n')
    return (init + b"\xff\xfe not UTF-8 \xc3\n" + b"\r\n" + b'{"jsonrpc":"2.0","method":"_x/big","params":{"s":"'
            + b"a" * BIG + b'"}}\n' + b'{"jsonrpc":"2.0","method":"_x/cr"}\r\n' + b'{"partial": "no newline at the end')


def test_tap_forwards_every_byte_unchanged_both_ways_and_exits_as_the_agent(tmp_path):
    to_client, to_agent = _blob("agent"), _blob("client")
    to_stderr = b"agent log \xff\n" * 1000 + b"no newline at the end"
    (tmp_path / "agent-out").write_bytes(to_client)
    (tmp_path / "agent-err").write_bytes(to_stderr)
    seen = {}
    for how in ("direct", "tap"):
        agent = [*BYTE_AGENT, str(tmp_path / "agent-out"), str(tmp_path / f"agent-in-{how}"), "7",
                 str(tmp_path / "agent-err")]
        argv = agent if how == "direct" else [*TAP, "--report-dir", str(tmp_path / "r"), "--", *agent]
        got, rc, err = _editor(argv, to_agent, tmp_path)
        seen[how] = (got, (tmp_path / f"agent-in-{how}").read_bytes(), rc, err)
    assert seen["direct"] == seen["tap"]  # what each side received (the editor: stdout and stderr), the status
    got, agent_in, rc, err = seen["tap"]
    assert got == to_client and agent_in == to_agent and rc == 7 and err == to_stderr
    assert (tmp_path / "r" / "transcripts" / "tap.stderr.txt").read_text().endswith("no newline at the end")
    data = report(tmp_path / "r")
    assert data["tap"]["agent_exit"]["returncode"] == 7
    assert data["sessions"][0]["frames"] == 12
    # the session was judged: each side's invalid UTF-8 is blamed on that side
    b = bad(data)
    assert b["TRANSPORT-001"][1] == ["agent", "client"]
    assert b["CLIENT-025"][1] == ["client"]
    lines = (tmp_path / "r" / "transcripts" / "tap.jsonl").read_text().splitlines()
    big = [json.loads(x) for x in lines if "_x/big" in x]
    assert len(big) == 2 and all(x["raw"].endswith(f"({BIG + 53} bytes)") for x in big)  # cut in the file only


def test_tap_nothing_of_its_own_reaches_either_side(tmp_path):
    """An agent that writes nothing: the editor reads nothing, even with --live and findings on the way."""
    (tmp_path / "empty").write_bytes(b"")
    agent = [*BYTE_AGENT, str(tmp_path / "empty"), str(tmp_path / "in"), "0"]
    proc = subprocess.run([*TAP[:-1], "--live", "--report-dir", str(tmp_path / "r"), "--", *agent],
                          input=b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}\n',
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.stdout == b"" and proc.returncode == 0
    assert (tmp_path / "in").read_bytes() == b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}\n'
    assert b"CLIENT-001" in proc.stderr  # the live finding went to stderr: a prompt before initialize
    assert b"ACP verdict: NOT CONFORMANT" in proc.stderr


def test_tap_usage_errors_are_one_sentence_and_exit_2(tmp_path):
    for args, words in ((["--", "/no/such/agent"], "cannot start the agent"), ([], "after --"),
                        (["--report-dir", "/proc/nope", "--", PY], "--report-dir")):
        p = subprocess.run([*TAP, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert p.stdout == ""


def test_tap_default_report_dir_is_a_new_timestamped_folder(tmp_path):
    for _ in range(2):
        subprocess.run([*REFERENCE_CLIENT, "--", *TAP, "--", *REFERENCE_AGENT], cwd=tmp_path, timeout=60,
                       capture_output=True, check=True)
    runs = sorted((tmp_path / "reports" / "tap").iterdir())
    assert len(runs) == 2 and all((r / "report.json").is_file() for r in runs)


# -- the reference pair, and the scripted suite ----------------------------------------------------------------
@pytest.fixture(scope="module")
def reference_tap(tmp_path_factory):
    d = tmp_path_factory.mktemp("tap-reference")
    p = subprocess.run([*REFERENCE_CLIENT, "--", *TAP, "--report-dir", str(d / "r"), "--junitxml", str(d / "j.xml"),
                        "--", *REFERENCE_AGENT], cwd=d, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return d, report(d / "r")


def test_reference_pair_through_tap_is_conformant_and_names_both_programs(reference_tap):
    d, data = reference_tap
    assert data["verdict"]["conformant"] and data["verdict"]["observed"]
    assert not bad(data)
    assert data["target"]["info"]["client"]["name"] == "acp-conformance-reference-client"
    assert data["target"]["info"]["agent"]["name"] == "acp-conformance-reference-agent"
    st = {r["status"] for r in data["rules"] if r["checked"]}
    assert st == {"pass", "not-exercised"}  # observed statuses only: no not-tested penalty
    passed = {r["id"] for r in data["rules"] if r["status"] == "pass"}
    assert {"INIT-001", "PROMPT-001", "CLIENT-001", "ERR-004"} <= passed
    junit = (d / "j.xml").read_text()
    assert 'failures="0"' in junit and "PROMPT-001" in junit
    etree = pytest.importorskip("lxml.etree", reason="lxml (the [test] extra) validates JUnit against schema/junit.xsd")
    xsd = etree.XMLSchema(etree.parse(str(ROOT / "schema" / "junit.xsd")))
    assert xsd.validate(etree.parse(str(d / "j.xml"))), xsd.error_log


def test_live_findings_go_to_a_file_and_junit_fails_the_broken_rule(tmp_path):
    d, live = tmp_path / "r", tmp_path / "live.log"
    subprocess.run([*REFERENCE_CLIENT, "--", *TAP, "--live", str(live), "--junitxml", str(tmp_path / "j.xml"),
                    "--report-dir", str(d), "--", *AGENT_MUTANTS, "prompt-001"], cwd=tmp_path, capture_output=True,
                   timeout=120)
    text = live.read_text()
    assert "FAIL PROMPT-001 (agent)" in text and "ACP verdict: NOT CONFORMANT" in text
    junit = (tmp_path / "j.xml").read_text()
    assert 'failures="1"' in junit and "PROMPT-001" in junit


def test_exercised_rules_get_the_statuses_of_the_scripted_suite(reference_tap, tmp_path):
    """The same pair under the scripted suite (agent run and client run), limited to the rules the tap
    session exercised: each of those rules has the same status there as through tap."""
    _, data = reference_tap
    exercised = {r["id"]: r for r in data["rules"] if r["status"] != "not-exercised" and r["checked"]}
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.monitors import checked_on
    catalog = load_catalog()  # each side's run judges the rules of that side (and both)
    agent_rules = sorted(x for x in exercised if x in checked_on("agent") and catalog[x].side in ("agent", "both"))
    client_rules = sorted(x for x in exercised if x in checked_on("client") and catalog[x].side in ("client", "both"))
    agent_run = run_suite(REFERENCE_AGENT, tmp_path / "a", f"--acp-rules={','.join(agent_rules)}", "-p", "no:xdist")
    client_run = run_client_suite(tmp_path / "c", f"--acp-rules={','.join(client_rules)}")
    scripted = {}
    for run, ids in ((agent_run, agent_rules), (client_run, client_rules)):
        assert run.report is not None, run.output[-3000:]
        for x in ids:
            scripted.setdefault(x, set()).add(run.status(x))
    for rule, r in exercised.items():  # a both-side rule may be exercised on one side only, in either run
        assert scripted[rule] - UNREACHED == {r["status"]}, (rule, r["status"], scripted[rule])
    assert len(exercised) >= 40
    # and check, over the scripted agent run's own transcripts, gives its agent rules the same statuses (the
    # suite's deliberate protocol violations there are the client side's, judged apart)
    transcripts = sorted(str(p) for p in (agent_run.report_dir / "transcripts").glob("*.jsonl"))
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "chk"), *transcripts], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode in (0, 1), p.stderr
    checked = rules(report(tmp_path / "chk"))
    for r in agent_run.report["rules"]:
        if r["checked"] and r["side"] == "agent":
            want = "not-exercised" if r["status"] in UNREACHED else r["status"]
            assert checked[r["id"]]["status"] == want, (r["id"], r["status"], checked[r["id"]]["status"])


def run_client_suite(workdir: Path, *extra: str):
    """``acp-conformance client`` against the bundled reference client (as tests/test_client_end_to_end.py)."""
    from suite_run import SuiteRun
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [PY, "-m", "acp_conformance", "client", f"--acp-report-dir={workdir / 'reports'}",
           f"--junitxml={workdir / 'junit.xml'}", "-q", "-p", "no:xdist", *extra]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600)
    f = workdir / "reports" / "report.json"
    return SuiteRun(proc.returncode, proc.stdout + proc.stderr, json.loads(f.read_text()) if f.exists() else None,
                    workdir / "reports", workdir / "junit.xml")


# -- mutants through tap ---------------------------------------------------------------------------------------
# the mutants whose broken rule the reference client's conversation reaches (initialize, session/new, a prompt,
# session/close) and those of the reference client that break a rule in it
AGENT_CASES = {"prompt-001": {"PROMPT-001": "fail"}, "prompt-002": {"PROMPT-002": "fail"},
               "prompt-003": {"PROMPT-003": "fail"}, "prompt-005": {"PROMPT-005": "warn"},
               "transport-003": {"TRANSPORT-003": "fail"}}
CLIENT_CASES = ["empty-prompt", "relative-cwd", "prompt-before-initialize", "reply-to-notification",
                "null-request-id", "reused-request-id", "not-utf8", "multi-line-json", "text-block-without-text"]


@pytest.mark.parametrize("name", sorted(AGENT_CASES))
def test_agent_mutant_is_caught_through_tap(name, tmp_path):
    d = tmp_path / "r"
    subprocess.run([*REFERENCE_CLIENT, "--", *TAP, "--report-dir", str(d), "--", *AGENT_MUTANTS, name],
                   cwd=tmp_path, capture_output=True, timeout=120)
    data = report(d)
    assert bad(data) == {rule: (status, ["agent"]) for rule, status in AGENT_CASES[name].items()}
    assert not data["verdict"]["conformant"] or all(s == "warn" for s in AGENT_CASES[name].values())


@pytest.mark.parametrize("name", CLIENT_CASES)
def test_client_mutant_is_caught_through_tap(name, tmp_path):
    d = tmp_path / "r"
    subprocess.run([PY, CLIENT_MUTANT_SCRIPT, name, "--", *TAP, "--report-dir", str(d), "--", *REFERENCE_AGENT],
                   cwd=tmp_path, capture_output=True, timeout=120)
    data = report(d)
    intended = set(CLIENT_MUTANTS[name][0])
    b = bad(data)
    assert set(b) == intended, b
    assert all(by == ["client"] and status == "fail" for status, by in b.values()), b
    assert data["verdict"]["conformant"] is False


def test_a_v1_client_and_agent_are_judged_by_the_v1_rules_of_both_sides_through_tap(tmp_path):
    """The v1 reference client and agent through tap: the V1 client rules judged beside the agent ones; the v1 client
    mutant with a relative cwd is caught there too (V1-SESSION-005, the client's)."""
    d = tmp_path / "r"
    subprocess.run([*REFERENCE_CLIENT, "--protocol", "1", "--", *TAP, "--report-dir", str(d), "--",
                    *REFERENCE_AGENT, "--protocol", "1"], cwd=tmp_path, capture_output=True, timeout=120)
    data = report(d)
    assert data["verdict"]["conformant"] is True and data["verdict"]["protocol"] == 1, data["verdict"]
    got = rules(data)
    for rid in ("V1-INIT-005", "V1-SESSION-005", "V1-CLIENT-001", "V1-CLIENT-002", "V1-CLIENT-003", "V1-INIT-001"):
        assert got[rid]["status"] == "pass", (rid, got[rid]["status"])
    d = tmp_path / "m"
    subprocess.run([PY, CLIENT_MUTANT_SCRIPT, "v1-session-relative-cwd", "--", *TAP, "--report-dir", str(d), "--",
                    *REFERENCE_AGENT, "--protocol", "1"], cwd=tmp_path, capture_output=True, timeout=120)
    assert bad(report(d)) == {"V1-SESSION-005": ("fail", ["client"])}


def test_agent_dying_mid_turn_still_gets_its_report(tmp_path):
    d = tmp_path / "r"
    p = subprocess.run([*REFERENCE_CLIENT, "--", *TAP, "--report-dir", str(d), "--", *AGENT_MUTANTS, "exit-mid-turn"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0  # the client saw its agent die
    data = report(d)
    assert data["tap"]["agent_exit"] == {"returncode": 3, "signal": None}
    events = [json.loads(x).get("event") for x in (d / "transcripts" / "tap.jsonl").read_text().splitlines()]
    assert "eof" in events and events[-1] == "exit"  # the client may close its side before or after the eof
    assert rules(data)["PROMPT-012"]["status"] == "not-exercised"  # the monitor does not judge a cut turn


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_tap_reaches_the_agent_and_the_report_is_written(sig, tmp_path):
    d = tmp_path / "r"
    # the signal's default disposition, even when this test runs under nohup (an ignored signal is inherited,
    # and the tap leaves it ignored)
    proc = subprocess.Popen([*TAP, "--report-dir", str(d), "--", *REFERENCE_AGENT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=tmp_path, preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}\n')
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()  # the agent answered: the session is under way
    proc.send_signal(sig)
    rc = proc.wait(60)
    data = report(d)
    exit_ = data["tap"]["agent_exit"]
    # the agent's own answer to the signal is passed on: its status, or its death by the signal (-N for both)
    assert rc == exit_["returncode"], (rc, exit_)
    assert sig.name in data["tap"]["end"]


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    """Poll ``predicate`` until it holds (an event in another process: a file written, a process gone)."""
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_tap_killed_outright_takes_the_agent_with_it_and_the_report_is_still_written(tmp_path):
    d = tmp_path / "r"
    proc = subprocess.Popen([*TAP, "--report-dir", str(d), "--", *REFERENCE_AGENT], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=tmp_path)
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}\n')
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()
    proc.kill()
    proc.wait(60)
    assert _wait_for(lambda: (d / "report.json").is_file())  # the judge saw its input end
    data = report(d)
    start = json.loads((d / "transcripts" / "tap.jsonl").read_text().splitlines()[0])
    pid = start["detail"]["pid"]

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert _wait_for(gone), "the agent outlived a tap killed with SIGKILL"
    # what the feeder thread had not yet handed over when the kill came is lost (the copies are queued, so that
    # the forwarding never waits on the judge): the start at least is there, and the report says how it ended
    assert data["tap"]["end"].startswith("the proxy")


# -- check -----------------------------------------------------------------------------------------------------
def test_check_judges_a_tap_transcript_as_tap_did(tmp_path):
    d = tmp_path / "r"
    subprocess.run([PY, CLIENT_MUTANT_SCRIPT, "reply-to-notification", "--", *TAP, "--report-dir", str(d), "--",
                    *AGENT_MUTANTS, "prompt-002"], cwd=tmp_path, capture_output=True, timeout=120)
    live = report(d)
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(d / "transcripts" / "tap.jsonl")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    again = report(tmp_path / "c")
    assert bad(again) == bad(live) == {"PROMPT-002": ("fail", ["agent"]), "CLIENT-016": ("fail", ["client"]),
                                       "ERR-011": ("fail", ["client"])}
    assert {k: v["status"] for k, v in rules(again).items()} == {k: v["status"] for k, v in rules(live).items()}
    assert "PROMPT-002" in p.stdout and "NOT CONFORMANT" in p.stdout


def test_check_reads_a_scripted_client_run_transcript_from_the_client(tmp_path):
    """A client run's transcript has the suite as the agent (sent = agent -> client): initialize tells."""
    from acp_conformance.tap.check import read_sessions
    f = tmp_path / "t.jsonl"
    f.write_text('{"seq":0,"conn":0,"dir":"received","t":0.1,"raw":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,'
                 '\\"method\\":\\"initialize\\",\\"params\\":{\\"protocolVersion\\":2}}"}\n'
                 '{"seq":1,"conn":0,"dir":"sent","t":0.2,"raw":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,\\"result\\":{}}"}\n'
                 '{"seq":2,"conn":0,"dir":"event","t":0.3,"event":"stdin-closed"}\n')
    [rec] = read_sessions(f)
    assert [k for k, _, _, _ in rec.items] == ["client->agent", "agent->client", "event"]
    assert rec.items[2][2][0] == "eof"  # the suite (as agent) hung up: the agent closed its output


def test_check_reads_a_plain_log(tmp_path):
    log = tmp_path / "session.log"
    log.write_bytes(b"# an editor's log\n"
                    b'0.01 > {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
                    b'"info":{"name":"ed","version":"1"}}}\n'
                    b'0.02 < {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"ag","version":"2"},'
                    b'"capabilities":{}}}\n'
                    b'> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}\n'
                    b'< {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n'
                    b'> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1",'
                    b'"prompt":[{"type":"text","text":"hi"}]}}\n'
                    b'< {"jsonrpc":"2.0","id":2,"result":{}}\n')
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(log)], capture_output=True, text=True,
                       timeout=120)
    data = report(tmp_path / "c")
    assert p.returncode == 1 and bad(data)["PROMPT-001"] == ("fail", ["agent"]), p.stdout
    assert data["sessions"][0]["client"]["info"]["name"] == "ed"
    assert rules(data)["INIT-001"]["status"] == "pass"


V1_SESSION = (b'> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
              b'< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}\n'
              b'> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}\n'
              b'< {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n'
              b'> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1",'
              b'"prompt":[{"type":"text","text":"hi"}]}}\n'
              b'< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{'
              b'"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}\n'
              b'< {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}\n')


@pytest.mark.parametrize("version_2_words", [False, True])
def test_check_judges_a_v1_session_by_the_v1_rules(tmp_path, version_2_words):
    # correct v1 traffic failed UPDATE-008, CONFIG-004/005, CLIENT-001 and PROMPT-001 (issue 25); since issue 28 it is
    # judged by the V1 rules, as is an agent that answers "2" in version 1's words (fast-agent, the Python SDK's echo
    # agent): no v2 rule, a v1 verdict
    log = tmp_path / "v1.log"
    log.write_bytes(V1_SESSION.replace(b'"protocolVersion":1', b'"protocolVersion":2') if version_2_words
                    else V1_SESSION)
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(log)], capture_output=True, text=True,
                       timeout=120)
    data = report(tmp_path / "c")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ACP verdict: CONFORMANT to ACP v1 on the observed traffic" in p.stdout, p.stdout
    assert data["verdict"]["protocol"] == 1 and data["verdict"]["revision"] == "v1"
    statuses = {r["id"]: r["status"] for r in data["rules"]}
    assert all(r.startswith("V1-") for r in statuses)
    assert statuses["V1-PROMPT-001"] == statuses["V1-PROMPT-002"] == statuses["V1-UPDATE-001"] == "pass"
    assert statuses["V1-INIT-003"] == "warn"  # no agentInfo: a SHOULD
    assert "not_judged" not in data["sessions"][0]


def test_check_judges_each_session_by_its_own_version(tmp_path):
    """A v2 recording and a v1 recording checked together: the v2 session by the v2 rules (its verdict sets the exit
    status), the v1 session by the V1 rules (its verdict reported beside it); no rule of one version sees the
    other's session."""
    (tmp_path / "v1.log").write_bytes(V1_SESSION.replace(b'"stopReason":"end_turn"', b'"stopReason":"done"'))
    rec = tmp_path / "v2.log"
    rec.write_bytes(b'> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
                    b'"capabilities":{},"info":{"name":"c","version":"1"}}}\n'
                    b'< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{},'
                    b'"info":{"name":"a","version":"1"}}}\n')
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(tmp_path / "v1.log"), str(rec)],
                       capture_output=True, text=True, timeout=120)
    data = report(tmp_path / "c")
    assert data["verdict"]["protocol"] == 2 and set(data["verdict"]["revisions"]) == {"base", "preview", "v1"}
    assert data["verdict"]["revisions"]["v1"]["blocking"] == ["V1-PROMPT-001"], data["verdict"]["revisions"]["v1"]
    statuses = {r["id"]: r["status"] for r in data["rules"]}
    assert "V1-PROMPT-001" not in statuses and statuses.get("INIT-001") == "pass", p.stdout
    assert not [r for r, s in statuses.items() if s in ("fail", "warn")], p.stdout


@pytest.mark.parametrize("content, words", [
    (b'> {"jsonrpc":"2.0"}\nhello\n', "session.log:2: no direction marker"),
    (b'{"seq":0,"dir":"sent","raw":"{}"}\nnot json\n', "session.log:2: not a JSON line"),
    (b'{"seq":0,"dir":"sideways","raw":"{}"}\n', "session.log:1:"),
    (b"", "the file is empty"),
    (b'! launched\n', "session.log:1: '!' marks an event"),
    (b'2.5 > {"jsonrpc":"2.0"}\n1.0 < {"jsonrpc":"2.0"}\n', "session.log:2: the time 1.0 s goes back"),
])
def test_check_unreadable_file_is_exit_2_with_line_and_reason(tmp_path, content, words):
    f = tmp_path / "session.log"
    f.write_bytes(content)
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(f)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr
    missing = subprocess.run([*CHECK, str(tmp_path / "nope.jsonl")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "cannot read it" in missing.stderr


# -- the verdict of observed traffic ---------------------------------------------------------------------------
def test_observed_verdict_has_no_not_tested_penalty():
    from acp_conformance.rules.findings import FAIL, NOT_TESTED, PASS, Finding
    from acp_conformance.tap.report import compute_observed
    v = compute_observed([Finding("PROMPT-001", PASS, "ok"), Finding("PROMPT-002", NOT_TESTED, "not reached")])
    st = {r.rule.id: r.status for r in v.rules}
    assert v.conformant and st["PROMPT-001"] == "pass" and st["PROMPT-002"] == "not-exercised"
    assert "not-tested" not in {r.status for r in v.rules if r.checked}
    assert "CONFORMANT to ACP v2 (preview) on the observed traffic" in v.summary_line()
    v = compute_observed([Finding("PROMPT-001", FAIL, "bad")])
    assert not v.conformant and [r.rule.id for r in v.blocking_failures] == ["PROMPT-001"]



# -- the SDK interop pair (tests/interop/install.sh; skipped without it) ----------------------------------------
RECORDER = [PY, str(ROOT / "tests" / "tap_helpers" / "recorder.py")]


@pytest.mark.parametrize("client, agent", [("typescript-client", "typescript"), ("python-client", "python"),
                                           ("typescript-client", "python")])
def test_sdk_pair_through_tap(client, agent, tmp_path):
    """An SDK client and an SDK agent with a byte recorder on each side of tap: each side received exactly what
    the other wrote; the session is judged with no failure (the SDKs' known failures in the scripted suite come
    from its hostile probes, which a real session does not send: tests/interop/expected.yaml)."""
    from test_interop import TARGETS, require_sdk
    for t in (client, agent):
        require_sdk(t)
    d = tmp_path / "r"
    rec = {k: tmp_path / k for k in ("c-up", "c-down", "a-up", "a-down")}
    argv = [*TARGETS[client].argv, "--", *RECORDER, str(rec["c-up"]), str(rec["c-down"]), "--", *TAP,
            "--report-dir", str(d), "--", *RECORDER, str(rec["a-up"]), str(rec["a-down"]), "--", *TARGETS[agent].argv]
    p = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    up, down = rec["c-up"].read_bytes(), rec["c-down"].read_bytes()
    assert up == rec["a-up"].read_bytes() and down == rec["a-down"].read_bytes()
    assert up.count(b"\n") >= 4 and down.count(b"\n") >= 4
    data = report(d)
    assert not bad(data), bad(data)
    assert data["verdict"]["conformant"]
    assert sum(1 for r in data["rules"] if r["status"] == "pass") >= 40
    names = data["target"]["info"]
    assert names["client"]["name"].startswith("interop-") and names["agent"]["name"].startswith("interop-")


def test_check_masks_secrets_in_every_report_file(tmp_path):
    log = tmp_path / "s.log"
    secret = "sk-live-0123456789abcdef"
    log.write_text('> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
                   '"info":{"name":"ed","version":"1","_meta":{"apiKey":"' + secret + '"}}}}\n'
                   '< {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{},"info":{"name":"ag",'
                   '"version":"1","_meta":{"token":"' + secret + '"}}}}\n')
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(log)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode in (0, 1), p.stderr
    for f in (tmp_path / "c").rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(errors="replace"), f


def test_live_lines_and_reports_carry_no_secret(tmp_path):
    secret = "sk-live-secret-value-1234"
    (tmp_path / "out").write_bytes(b'{"jsonrpc":"1.0","params":{"token":"' + secret.encode() + b'"}}\n')
    p = subprocess.run([*TAP[:-1], "--live", "--report-dir", str(tmp_path / "r"), "--", *BYTE_AGENT,
                        str(tmp_path / "out"), str(tmp_path / "in"), "0"], input=b"", capture_output=True, timeout=60)
    assert b"FAIL TRANSPORT-003 (agent)" in p.stderr and secret.encode() not in p.stderr
    assert p.stdout == b'{"jsonrpc":"1.0","params":{"token":"' + secret.encode() + b'"}}\n'  # forwarded as it was
    assert not [f for f in (tmp_path / "r").rglob("*") if f.is_file() and secret in f.read_text(errors="replace")]


def test_an_agent_that_will_not_exit_is_stopped_and_reported(tmp_path):
    """The editor closed the agent's stdin; the agent ignores it and SIGTERM: tap stops it (SIGTERM after
    --exit-grace, SIGKILL 5 s later), writes the report and dies of the agent's signal."""
    d = tmp_path / "r"
    p = subprocess.run([*TAP, "--exit-grace", "0.5", "--report-dir", str(d), "--", PY,
                        str(ROOT / "tests" / "tap_helpers" / "stubborn_agent.py")], input=b"", capture_output=True,
                       timeout=60)
    assert p.returncode == -signal.SIGKILL and p.stdout == b""
    data = report(d)
    assert data["tap"]["agent_exit"]["signal"] == "SIGKILL"
    notes = [json.loads(x) for x in (d / "transcripts" / "tap.jsonl").read_text().splitlines() if '"note"' in x]
    assert [n["detail"]["text"].split(": ")[-1] for n in notes] == ["SIGTERM from the tap", "SIGKILL from the tap"]


def test_check_of_taps_wire_log_gives_taps_verdict(tmp_path):
    """--wire-log keeps every frame's bytes (invalid UTF-8 included): check judges it as tap judged it live."""
    d = tmp_path / "r"
    subprocess.run([PY, CLIENT_MUTANT_SCRIPT, "not-utf8", "--", *TAP, "--wire-log", "--report-dir", str(d), "--",
                    *AGENT_MUTANTS, "prompt-001"], cwd=tmp_path, capture_output=True, timeout=120)
    live = report(d)
    p = subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(d / "wire.log")], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    again = report(tmp_path / "c")
    assert bad(live) == bad(again)
    assert bad(live)["TRANSPORT-001"] == ("fail", ["client"]) and bad(live)["PROMPT-001"] == ("fail", ["agent"])
    assert {k: v["status"] for k, v in rules(again).items()} == {k: v["status"] for k, v in rules(live).items()}


@pytest.mark.parametrize("quit_at, status", [(0.5, "not-exercised"), (30.0, "fail")])
def test_a_request_in_flight_when_the_client_quits_is_judged_only_past_the_suites_own_wait(tmp_path, quit_at,
                                                                                          status):
    """A real editor may end the session with a request unanswered (its user quit): ERR-004 fails only when the
    request had waited longer than a scripted run waits for an answer (10 s)."""
    log = tmp_path / "s.log"
    log.write_text('0 > {"jsonrpc":"2.0","id":0,"method":"session/list","params":{}}\n'
                   f'{quit_at} ! stdin-closed\n{quit_at + 0.1} ! eof\n{quit_at + 0.1} ! exit {{"returncode": 0}}\n')
    subprocess.run([*CHECK, "--report-dir", str(tmp_path / "c"), str(log)], capture_output=True, timeout=120)
    err004 = rules(report(tmp_path / "c"))["ERR-004"]
    assert err004["status"] == status, err004
    assert "got no response" in err004["evidence"][0]["message"]


def test_tap_report_page_names_both_programs_and_the_culprit_in_a_browser(tmp_path):
    """report.html of a tap session with a broken client and a broken agent, in headless Chromium (skipped
    without it): no script error, both programs named, each broken rule blamed on its side, evidence opens."""
    from report_browser import Browser, BrowserMissing
    d = tmp_path / "r"
    subprocess.run([PY, CLIENT_MUTANT_SCRIPT, "reply-to-notification", "--", *TAP, "--report-dir", str(d), "--",
                    *AGENT_MUTANTS, "prompt-002"], cwd=tmp_path, capture_output=True, timeout=120)
    try:
        b = Browser()
    except BrowserMissing as e:
        pytest.skip(f"the report page is not tested in a browser: {e}")
    with b:
        b.load(d / "report.html")
        assert not b.console_errors()
        target = b.js("return document.getElementById('target').textContent")
        assert "acp-conformance-reference-client" in target and "acp-conformance-reference-agent" in target
        rows = {r: b.js(f"return document.getElementById('rule-{r}').textContent") for r in ("PROMPT-002", "CLIENT-016")}
        assert "broken by the agent" in rows["PROMPT-002"] and "broken by the client" in rows["CLIENT-016"]
        b.open_rule("PROMPT-002")
        ev = b.js("return document.querySelector(\"tr.ev[data-for='PROMPT-002']\").textContent")
        assert "test: tap agent" in ev and "client" in ev and "agent" in ev


def test_tap_dies_of_the_signal_that_killed_its_agent(tmp_path):
    hostile = [PY, str(ROOT / "tests" / "hostile" / "target.py"), "crash-signal"]
    lines = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2}}\n'
             b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp"}}\n')
    direct = subprocess.run(hostile, input=lines, capture_output=True, timeout=60)
    tapped = subprocess.run([*TAP, "--report-dir", str(tmp_path / "r"), "--", *hostile], input=lines,
                            capture_output=True, timeout=60, cwd=tmp_path)
    assert direct.returncode < 0 and tapped.returncode == direct.returncode
    assert tapped.stdout == direct.stdout
    assert report(tmp_path / "r")["tap"]["agent_exit"]["signal"] == signal.Signals(-direct.returncode).name
