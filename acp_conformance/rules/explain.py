"""``acp-conformance rules --explain RULE-ID``: from one rule ID to everything the project holds about it.

Everything is found at run time, not from a table that could drift: the monitors by the rule IDs their
classes declare (wherever the classes live), the scenarios by the rules their files name, the mutants
by the rules they register (the tests/ folder of a source checkout; an installed wheel has none), and
every file that holds the rule by a search for its ID (``holding_files``): its catalog row and the data
files beside it, the monitors and the other code, the scenarios, the mutants, the tests and the docs.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from .catalog import Rule, load_catalog, load_not_observable, load_retired, load_unchecked

_PKG_PARENT = Path(__file__).resolve().parents[2]  # the checkout (or site-packages) holding acp_conformance/
# the mutant registries of a source checkout: (side, script that holds MUTANTS)
MUTANT_SCRIPTS = (("agent", Path("tests/mutants/agent_mutants.py")),
                  ("client", Path("tests/client_mutants/client_mutants.py")))


def _where(path: str | Path, line: int | None = None) -> str:
    p = Path(path).resolve()
    try:
        shown = str(p.relative_to(_PKG_PARENT))
    except ValueError:
        shown = str(p)
    return f"{shown}:{line}" if line else shown


def close_matches(rule_id: str) -> list[str]:
    ids = list(load_catalog())
    upper = rule_id.strip().upper()
    same_area = [i for i in ids if upper and i.split("-")[0] == upper.split("-")[0]]
    return difflib.get_close_matches(upper, ids, n=5, cutoff=0.6) or same_area[:5]


def monitor_lines(rule_id: str) -> list[str]:
    """Each monitor class that declares ``rule_id``: its side, class name and file:line, and the lines of
    its module that report the rule."""
    from .monitors import AGENT_MONITORS, CLIENT_MONITORS  # the discovered classes, wherever they live
    out = []
    for cls in dict.fromkeys([*AGENT_MONITORS, *CLIENT_MONITORS]):
        if rule_id not in cls.rules:
            continue
        path = inspect.getsourcefile(cls) or ""
        line = inspect.getsourcelines(cls)[1]
        out.append(f"{cls.__name__} ({getattr(cls, 'side', 'agent')} side) at {_where(path, line)}")
        reports = _report_lines(Path(path), rule_id)
        if reports:
            out.append(f"  reports it at line{'s' if len(reports) > 1 else ''} {', '.join(map(str, reports))}")
    return out


def _report_lines(path: Path, rule_id: str) -> list[int]:
    """Lines of a monitor module that name the rule in a call (not in its ``rules`` tuple or ``expected``)."""
    quoted = (f'"{rule_id}"', f"'{rule_id}'")
    found = []
    try:
        text = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for n, raw in enumerate(text, 1):
        line = raw.strip()
        # a rules tuple or an expected dict entry starts with a quoted ID; a report names it in a call
        if any(q in line for q in quoted) and not line.startswith(("rules", "expected", '"', "'")):
            found.append(n)
    return found


def scenario_lines(rule_id: str) -> list[str]:
    """The bundled scenarios (agent and client side) that name ``rule_id``, as side file: name."""
    return [f"{side:6} {_where(path)}: {scn.name}" for side, path, scn in bundled_scenarios() if rule_id in scn.rules]


def bundled_scenarios() -> list[tuple[str, Path, Any]]:
    """(side, file, scenario) for every bundled scenario of both sides."""
    from ..resources import SUITE_FOLDERS, suite_folder
    from ..scenarios.client_model import load_client_file
    from ..scenarios.model import load_file
    known = set(load_catalog())
    out = []
    for side, protocol in SUITE_FOLDERS:
        load = load_client_file if side == "client" else load_file
        for path in sorted(suite_folder(side, protocol).glob("*.yaml")):
            out += [(side, path, scn) for scn in load(path, known)]
    return out


def load_mutants(script: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(MUTANTS, UNFLAGGED) of a mutant script; its folder is put on sys.path for its own imports."""
    folder = str(script.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"_explain_{script.stem}", script)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        if added:
            sys.path.remove(folder)
    return dict(mod.MUTANTS), dict(getattr(mod, "UNFLAGGED", {}))


def mutant_lines(rule_id: str, root: Path = _PKG_PARENT) -> list[str] | None:
    """The mutants that break ``rule_id`` (name, side, class file:line), or None without a tests/ folder."""
    scripts = [(side, root / rel) for side, rel in MUTANT_SCRIPTS]
    if not any(p.is_file() for _, p in scripts):
        return None
    out = []
    for side, script in scripts:
        if not script.is_file():
            continue
        mutants, unflagged = load_mutants(script)
        for label, table in (("", mutants), (" (only warned or noted)", unflagged)):
            for name, (rules, cls) in sorted(table.items()):
                if rule_id in rules:
                    where = _class_place(script.parent, cls.__name__)
                    out.append(f"{side:6} {name}{label} ({cls.__name__} at {where})")
    return out


def _class_place(folder: Path, name: str) -> str:
    """file:line of ``class name`` among the mutant modules of ``folder`` (they are loaded by path, so
    inspect cannot always find them)."""
    head = f"class {name}("
    for path in sorted(folder.glob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith(head):
                return _where(path, n)
    return _where(folder)


# the places searched for a rule's ID, by what they hold: (kind, folder under the checkout or the package, globs)
_HOLDERS = (("catalog", "acp_conformance", ("rules/catalog*.json",)),
            ("data", "acp_conformance", ("rules/*.json", "protocol/*.json")),
            ("monitors", "acp_conformance", ("rules/monitors/*.py",)),
            ("code", "acp_conformance", ("**/*.py",)),
            ("scenarios", None, ("**/*.yaml",)),
            ("mutants", "tests", ("mutants/*.py", "client_mutants/*.py")),
            ("tests", "tests", ("**/*",)),
            ("docs", "docs", ("**/*.md",)))


def _id_pattern(rule_id: str) -> re.Pattern[str]:
    """The ID as a word: not inside a longer ID (one more digit, or a longer area before it)."""
    return re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(rule_id)}(?![0-9])")


def holding_files(rule_id: str, root: Path = _PKG_PARENT) -> dict[str, list[str]]:
    """Every file that names ``rule_id``, by what it holds (catalog, monitors, code, scenarios, mutants, tests,
    docs); each file under one kind only, the first that takes it. A folder absent from this installation (an
    installed wheel has no tests/ or docs/) gives nothing."""
    from ..resources import scenarios_dir
    pattern = _id_pattern(rule_id)
    seen: set[Path] = set()
    out: dict[str, list[str]] = {}
    for kind, folder, globs in _HOLDERS:
        base = scenarios_dir() if folder is None else (root / folder)
        if folder == "acp_conformance":
            base = Path(__file__).resolve().parents[1]  # the package itself, wherever it is installed
        found = []
        for glob in globs:
            for path in sorted(base.glob(glob)) if base.is_dir() else []:
                if path in seen or "__pycache__" in path.parts or not path.is_file():
                    continue
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if pattern.search(text):
                    seen.add(path)
                    found.append(_where(path))
        if found:
            out[kind] = found
    return out


def standing(rule: Rule) -> str:
    """Checked, not observable, retired or not checked yet, with the reason."""
    from .monitors import RULES_CHECKED
    if rule.id in load_retired():
        return f"retired: {load_retired()[rule.id]}"
    if rule.id in load_not_observable():
        return f"not observable on the wire: {load_not_observable()[rule.id]}"
    if rule.id in RULES_CHECKED:
        return "checked"
    return f"not checked yet: {load_unchecked().get(rule.id, 'no reason recorded')}"


def _situation(rule: Rule) -> str:
    sides = ("agent", "client") if rule.side == "both" else (rule.side,)
    creators = {s: rule.creator_on(s) for s in sides}
    who = ", ".join(f"{c} on the {s} side" for s, c in creators.items()) if len(set(creators.values())) > 1 \
        else next(iter(creators.values()))
    text = f"created by the {who}" if who in ("suite", "target") else f"created by: {who}"
    return text + (f"; reached by {rule.reach}" if rule.reach else "")


def _revisions(rule_id: str) -> str:
    """The ACP revisions the rule belongs to (its catalog row), and why where not every one (protocol/revisions.json)."""
    from ..protocol import revisions
    mine = load_catalog()[rule_id].revisions
    text = ", ".join(f"{r} ({revisions.title(r)})" for r in mine)
    if revisions.rule_protocol(rule_id) == 1:
        return text + " (protocol version 1's rules: no v2 revision)"
    return text + (f"; only these: {revisions.change(rule_id)}" if revisions.change(rule_id) else " (every revision)")


def explain(rule_id: str, root: Path = _PKG_PARENT) -> list[str]:
    """The lines ``rules --explain`` prints for a catalog rule (KeyError for an unknown ID)."""
    rule = load_catalog()[rule_id]
    lines = [f"{rule.id}  {rule.level} ({rule.tier}), area {rule.area}, judged on the "
             + ("agent and client sides" if rule.side == "both" else f"{rule.side} side"),
             f"rule:     {rule.summary}",
             f"check:    {rule.check}"]
    if rule.precondition and rule.precondition != "-":
        lines.append(f"needs:    {rule.precondition}")
    lines.append(f"source:   {rule.public_source}")
    if rule.note:
        lines.append(f"kit note: {rule.note}")
    lines.append(f"status:   {standing(rule)}")
    lines.append(f"revisions: {_revisions(rule.id)}")
    lines.append(f"situation: {_situation(rule)}")
    monitors = monitor_lines(rule.id)
    lines.append("monitors:" if monitors else "monitors: none")
    lines += [f"  {m}" for m in monitors]
    scenarios = scenario_lines(rule.id)
    lines.append("scenarios:" if scenarios else "scenarios: none names this rule")
    lines += [f"  {s}" for s in scenarios]
    mutants = mutant_lines(rule.id, root)
    if mutants is None:
        lines.append("mutants:  unknown here: the tests/ folder (a source checkout's) is absent from this installation")
    else:
        lines.append("mutants:" if mutants else "mutants:  none breaks this rule")
        lines += [f"  {m}" for m in mutants]
    holders = holding_files(rule_id, root)
    lines.append(f"files:    every file that names {rule_id}" if holders else "files:    none names it")
    lines += [f"  {kind:9} {path}" for kind, paths in holders.items() for path in paths]
    return lines
