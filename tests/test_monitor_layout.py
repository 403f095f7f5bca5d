"""The monitors are laid out by rule area: from a rule ID to the module that checks it in one hop.

A monitor lives in ``rules/monitors/<area>.py`` (or ``<area>_*.py`` where an area needs two modules),
named after the rule-ID prefix of most of the rules it judges; the shared reading and helpers live in
the private modules (``_common``, ``_attribution``, ``_client``).
"""

from __future__ import annotations

import ast
import collections
import gc
import inspect
from pathlib import Path

from acp_conformance.rules.monitors import CLIENT_MONITORS, _ALL

# monitors whose module is not the area of most of their rules, and why
PLACED_APART = {
    # one schema validation pass over every frame: SCHEMA-001 for most messages, UPDATE-002/003 for session/update
    "SchemaMonitor": "SCHEMA",
}
MAX_LINES = 500
MAX_FUNCTION_LINES = 80
# functions still over the limit while issue 16 splits them: drop an entry once its function is split

def _area_of_module(cls: type) -> str:
    return cls.__module__.rsplit(".", 1)[-1].split("_")[0].upper()


def test_every_monitor_lives_in_the_module_of_its_area():
    misplaced = []
    for cls in _ALL:
        areas = collections.Counter(rule.split("-")[0] for rule in cls.rules)
        top = max(areas.values())
        want = {a for a, n in areas.items() if n == top} | {PLACED_APART.get(cls.__name__, "")}
        if _area_of_module(cls) not in want:
            misplaced.append(f"{cls.__name__} in {cls.__module__}: rules {dict(areas)}")
    assert not misplaced, misplaced


def test_no_module_of_the_package_is_over_the_size_limit():
    package = Path(inspect.getfile(_ALL[0])).parents[2]
    big = {str(p.relative_to(package)): n for p in package.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big


def test_no_function_of_the_package_is_over_the_size_limit():
    # a reader finds where a rule is judged: one method per rule or message kind, not one long walk
    package = Path(inspect.getfile(_ALL[0])).parents[2]
    long = []
    # no garbage collection while parsing: a finalizer run inside the AST constructor (a target's transport
    # left by an earlier test) trips CPython 3.11's "AST constructor recursion depth mismatch"
    gc.collect()
    gc.disable()
    try:
        trees = {p: ast.parse(p.read_text()) for p in sorted(package.rglob("*.py"))}
    finally:
        gc.enable()
    for p, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                long.append(f"{p.relative_to(package)}:{node.lineno} {node.name} "
                            f"({node.end_lineno - node.lineno + 1} lines)")
    assert not long, long


def test_client_side_monitors_of_other_areas_sit_in_those_areas():
    for cls in CLIENT_MONITORS:
        areas = {rule.split("-")[0] for rule in cls.rules}
        if areas != {"CLIENT"}:
            assert _area_of_module(cls) in areas, cls


def test_a_rules_expectation_is_the_catalogs_sentence():
    # the sentence lives in the catalog only: no monitor rewords it in an ``expected`` of its own
    from acp_conformance.rules.catalog import load_catalog
    from acp_conformance.rules.monitor import Monitor

    reworded = [cls.__name__ for cls in _ALL if any("expected" in vars(k) for k in cls.__mro__ if k is not Monitor)]
    assert not reworded, reworded
    catalog = load_catalog()
    for cls in _ALL:
        for rule in cls.rules:
            assert cls.expected[rule] == catalog[rule].summary
