"""JUnit: after pytest's --junitxml has written its file, name every testcase by its scenario and rule IDs
and make each failure message the expected and observed behaviour (the full explanation stays the text);
for a run no pytest stands behind (tap, check), one testcase per rule (``write_rule_junit``)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def _message(text: str) -> str:
    """'RULE (LEVEL) failed / expected: ... / observed: ...' blocks, as one line per rule."""
    out, rule, exp = [], None, ""
    for line in text.splitlines():
        m = re.match(r"^(\S+) \((\w[\w ]*)\) failed$", line)
        if m:
            rule, exp = m.group(1), ""
        elif rule and line.startswith("  expected: "):
            exp = line[len("  expected: "):]
        elif rule and line.startswith("  observed: "):
            out.append(f"{rule}: expected: {exp or '(see the rule)'} observed: {line[len('  observed: '):]}")
            rule = None
    return " | ".join(out) or (text.splitlines()[0] if text else "")


def annotate_junit(path: Path, verdict=None) -> None:
    """``verdict``: the run's Verdict; it becomes a testcase of its own ("ACP verdict"), failed when the run is
    not conformant (so a JUnit reader never sees only passes for a run that exits 1), with the coverage."""
    tree = ET.parse(path)
    for case in tree.getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        rules, scenario = props.get("rules"), props.get("scenario")
        if rules and scenario:
            case.set("name", f"{scenario} [{rules}]")
        for fail in list(case.findall("failure")) + list(case.findall("error")):
            msg = _message(fail.text or fail.get("message") or "")
            if msg:
                fail.set("message", msg)
    if verdict is not None:
        _verdict_case(tree.getroot(), verdict)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _revision_properties(verdict) -> list[tuple[str, str]]:
    """The revision judged, every revision's verdict and the Preview readiness (protocol/revisions.py)."""
    if not getattr(verdict, "revision", None):
        return []
    return [("acp_revision", verdict.revision),
            *((f"verdict_{name}", v.headline()) for name, v in verdict.by_revision.items()),
            ("preview_readiness", " ".join(v.rule.id for v in verdict.readiness))]


def _verdict_case(root: ET.Element, verdict) -> None:
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return
    cov = verdict.coverage()
    case = ET.SubElement(suite, "testcase", {"classname": "acp_conformance", "name": "ACP verdict", "time": "0"})
    props = ET.SubElement(case, "properties")
    for name, value in (("verdict", verdict.headline()), ("exercised", cov["exercised"]),
                        ("checked", cov["checked"]), ("not_exercised", cov["not_exercised"]),
                        ("blocking", " ".join(v.rule.id for v in verdict.blocking_failures)),
                        *_revision_properties(verdict)):
        ET.SubElement(props, "property", {"name": name, "value": str(value)})
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    if not verdict.conformant:
        fail = ET.SubElement(case, "failure", {"message": verdict.summary_line()})
        fail.text = "\n".join(f"{v.rule.id} ({v.rule.level}) {v.status}: {v.reason}" for v in verdict.blocking_failures)
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))


def write_rule_junit(path: Path, data: dict[str, Any]) -> Path:
    """One testcase per checked rule: failed (blocking fail/flaky, or any of them with --strict), skipped
    (not exercised), else passed; a warning stays a pass with its text in system-out."""
    blocking = set(data["verdict"].get("blocking") or [])
    suite = ET.Element("testsuite", name="acp-conformance observed session")
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in data["rules"]:
        if not r.get("checked"):
            continue
        n["tests"] += 1
        case = ET.SubElement(suite, "testcase", classname=f"acp.{r['area']}", name=f"{r['id']} ({r['level']})")
        ev = next((e for e in r.get("evidence", []) if e.get("status") == r["status"]), {})
        text = f"expected: {ev.get('expected') or r.get('expected') or r['summary']} observed: {r.get('reason', '')}"
        if r["id"] in blocking:
            n["failures"] += 1
            ET.SubElement(case, "failure", message=text[:1000]).text = json.dumps(ev, ensure_ascii=False)
        elif r["status"] == "not-exercised":
            n["skipped"] += 1
            ET.SubElement(case, "skipped", message=r.get("reason", ""))
        elif r["status"] in ("warn", "fail", "flaky"):
            ET.SubElement(case, "system-out").text = text
    for k, v in n.items():
        suite.set(k, str(v))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path
