"""``acp-conformance rules --explain RULE-ID``: one rule's sentence, source, monitor, scenarios, mutants."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from acp_conformance.cli import main
from acp_conformance.rules import monitors
from acp_conformance.rules.catalog import load_catalog
from acp_conformance.rules.explain import explain, monitor_lines, mutant_lines

ROOT = Path(__file__).resolve().parents[1]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["rules", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_explain_gives_the_sentence_source_monitor_scenarios_and_mutants(capsys):
    code, out, err = _run(capsys, "--explain", "CLOSE-005")
    assert code == 0 and not err
    rule = load_catalog()["CLOSE-005"]
    assert rule.summary in out and rule.check in out
    assert "SHOULD (should)" in out
    assert rule.public_source in out and "seed:" not in out  # the public document, never an internal file
    assert "status:   checked" in out
    assert "situation: created by the suite" in out
    assert re.search(r"SessionErrorMonitor \(agent side\) at acp_conformance/rules/monitors/\S+\.py:\d+", out), out
    assert "scenarios/agent/close.yaml: close-unknown-session" in out
    assert re.search(r"agent +close-005 \(Close005 at tests/mutants/\S+\.py:\d+\)", out), out


def test_a_rule_both_sides_check_names_both_monitors_scenarios_and_mutants(capsys):
    code, out, _ = _run(capsys, "--explain", "cancel-014")  # any case
    assert code == 0
    assert "ClientCancelRequestMonitor (client side)" in out and "(agent side)" in out
    assert "client scenarios/client/" in out and "agent  scenarios/agent/" in out
    assert re.search(r"client cancel-foreign-id \(CancelForeignId at tests/client_mutants/", out), out
    assert "created by: target on the agent side, suite on the client side" in out


@pytest.mark.parametrize("rule, says", [
    ("CLIENT-030", "status:   not observable on the wire: UI obligations"),
    ("TRANSPORT-005", "status:   retired: ACP v2 removed JSON-RPC batching"),
    ("SESSION-006", "status:   not checked yet: Needs an MCP probe"),
])
def test_a_rule_nobody_checks_says_why(capsys, rule, says):
    code, out, _ = _run(capsys, "--explain", rule)
    assert code == 0 and says in out
    assert "monitors: none" in out


def test_the_kit_note_is_shown(capsys):
    _, out, _ = _run(capsys, "--explain", "INIT-003")
    assert "kit note: acp-tck" in out


@pytest.mark.parametrize("given, near", [("CLOSE-05", "CLOSE-005"), ("PROMPT-999", "PROMPT-")])
def test_an_unknown_id_is_one_sentence_with_close_matches_and_exit_2(capsys, given, near):
    code, out, err = _run(capsys, "--explain", given)
    assert code == 2 and not out
    assert err.count("\n") == 1 and f"{given!r} is not a rule of the catalog; did you mean" in err and near in err


def test_an_id_with_no_match_points_to_the_list(capsys):
    code, _, err = _run(capsys, "--explain", "frobnicate")
    assert code == 2 and "`acp-conformance rules` lists them all" in err


def test_every_monitor_place_is_the_line_of_its_class():
    for rule in monitors.RULES_CHECKED:
        places = [line for line in monitor_lines(rule) if not line.startswith(" ")]
        assert places, rule
        for place in places:
            name = place.split()[0]
            path, line = place.rsplit(" at ", 1)[1].rsplit(":", 1)
            text = (ROOT / path).read_text().splitlines()
            assert text[int(line) - 1].startswith(f"class {name}("), place
    lines = monitor_lines("CLOSE-005")
    path = ROOT / lines[0].rsplit(" at ", 1)[1].rsplit(":", 1)[0]
    reported = [int(n) for n in re.findall(r"\d+", lines[1])]
    assert reported and all("CLOSE-005" in path.read_text().splitlines()[n - 1] for n in reported)


def test_the_monitor_is_found_wherever_its_class_lives(tmp_path, monkeypatch):
    """--explain asks the classes, not a table of file names: a monitor moved to another module is found there."""
    mod_file = tmp_path / "moved_monitor.py"
    mod_file.write_text(textwrap.dedent('''
        from acp_conformance.rules.monitor import Monitor


        class MovedMonitor(Monitor):
            rules = ("PROMPT-010",)
            expected = {"PROMPT-010": "An empty prompt is rejected or echoed."}
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    import moved_monitor
    monkeypatch.setattr(monitors, "AGENT_MONITORS", [*monitors.AGENT_MONITORS, moved_monitor.MovedMonitor])
    [line] = monitor_lines("PROMPT-010")
    assert line == f"MovedMonitor (agent side) at {mod_file}:5"


def test_without_the_tests_folder_the_mutants_are_said_to_be_unknown(tmp_path):
    assert mutant_lines("CLOSE-005", root=tmp_path) is None
    assert any("the tests/ folder" in line and "absent" in line for line in explain("CLOSE-005", root=tmp_path))
    assert mutant_lines("CLOSE-005") == [line for line in mutant_lines("CLOSE-005", root=ROOT)]


def test_explain_names_every_file_that_holds_the_rule(capsys):
    """From a rule ID to every file that holds it: its catalog row, the data beside it, the monitor, the
    scenarios, the mutants, the tests and the docs that name it (issue 26: it named 3 of 14 for RESUME-003)."""
    code, out, _ = _run(capsys, "--explain", "RESUME-003")
    assert code == 0
    files = out.split("files:", 1)[1]
    for kind, path in (("catalog", "acp_conformance/rules/catalog.json"),
                       ("data", "acp_conformance/protocol/revisions.json"),
                       ("data", "acp_conformance/rules/situations.json"),
                       ("monitors", "acp_conformance/rules/monitors/resume.py"),
                       ("scenarios", "scenarios/agent/resume.yaml"), ("mutants", "tests/mutants/resume.py"),
                       ("tests", "tests/test_monitors_resume.py")):
        assert re.search(rf"^  {kind} +{re.escape(path)}$", files, re.M), (kind, path, files)


def test_the_files_are_every_file_of_the_checkout_that_names_the_rule_and_only_those():
    import subprocess

    from acp_conformance.rules.explain import holding_files
    listed = {p for paths in holding_files("CLOSE-005").values() for p in paths}
    tracked = subprocess.run(["git", "grep", "-l", "-P", r"(?<![A-Za-z0-9_-])CLOSE-005(?![0-9])", "--",
                              "acp_conformance", "scenarios", "tests", "docs"],
                             cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    assert listed == set(tracked.stdout.split()), listed ^ set(tracked.stdout.split())


def test_the_files_hold_the_monitors_scenarios_and_mutants_explain_names_for_every_checked_rule():
    from acp_conformance.rules.explain import holding_files, scenario_lines
    for rule in sorted(monitors.RULES_CHECKED)[::7]:  # a sample across the areas (each rule costs a search)
        listed = {p for paths in holding_files(rule).values() for p in paths}
        for place in monitor_lines(rule):
            if not place.startswith(" "):
                assert place.rsplit(" at ", 1)[1].rsplit(":", 1)[0] in listed, (rule, place)
        for line in scenario_lines(rule):
            assert line.split()[1].rstrip(":") in listed, (rule, line)
        for line in mutant_lines(rule) or []:
            assert line.rsplit(" at ", 1)[1].rsplit(":", 1)[0] in listed, (rule, line)
