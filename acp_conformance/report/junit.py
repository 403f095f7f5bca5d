"""JUnit: after pytest's --junitxml has written its file, name every testcase by its scenario and rule IDs
and make each failure message the expected and observed behaviour (the full explanation stays the text)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path


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


def annotate_junit(path: Path) -> None:
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
    tree.write(path, encoding="utf-8", xml_declaration=True)
