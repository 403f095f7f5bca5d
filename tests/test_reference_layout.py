"""The reference agent's layout (issue 16): small modules and functions, and mutants that still bite.

``acp_conformance/reference/agent/`` is one mixin per responsibility. A mutant is a subclass of
``ReferenceAgent`` overriding one method; moving code between modules must never leave an override
behind that the agent no longer calls (a method turned into a free function, or renamed), and must
keep every name the mutants, tests and benches import from ``acp_conformance.reference.agent``.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import acp_conformance.reference as reference_pkg
import acp_conformance.reference.agent as agent_pkg
from acp_conformance.reference.agent import ReferenceAgent

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(reference_pkg.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _agent_mutants() -> dict:
    spec = importlib.util.spec_from_file_location("agent_mutants", ROOT / "tests" / "mutants" / "agent_mutants.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {**mod.MUTANTS, **mod.UNFLAGGED}


def test_no_reference_module_over_500_lines_and_no_function_over_80():
    too_long = []
    for path in sorted(REFERENCE.rglob("*.py")):
        text = path.read_text()
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(REFERENCE)}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(REFERENCE)}:{node.lineno} {node.name}: {n} lines")
    assert not too_long, too_long


def test_every_name_imported_from_the_agent_module_exists():
    # the mutants, planted bugs, benches and tests import these; a split must re-export each one
    missing = []
    for folder in ("tests", "bench", "acp_conformance"):
        for path in (ROOT / folder).rglob("*.py"):
            if any(part.startswith(".venv") or part == "node_modules" for part in path.parts):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == "acp_conformance.reference.agent":
                    missing += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names
                                if not hasattr(agent_pkg, a.name)]
    assert not missing, missing


def test_every_agent_mutant_override_is_a_member_the_agent_has():
    # a name a mutant defines that ReferenceAgent lacks is dead unless the mutant itself reaches it
    # (its own helper, or a handler it adds to REQUESTS)
    dead = []
    mutants = _agent_mutants()
    assert mutants
    for name, (_rules, cls) in sorted(mutants.items()):
        own = [k for k in cls.__mro__ if issubclass(k, ReferenceAgent) and k is not ReferenceAgent]
        source = "\n".join(inspect.getsource(k) for k in own)
        for k in own:
            for attr in vars(k):
                if attr.startswith("__") or hasattr(ReferenceAgent, attr) or attr == "SUITE_OPTIONS":
                    continue  # (SUITE_OPTIONS: the options its end-to-end test runs with, read by that test)
                if source.count(attr) < 2:  # defined, and named nowhere else in the mutant
                    dead.append(f"{name}: {k.__name__}.{attr}")
    assert not dead, f"overrides of members ReferenceAgent no longer has: {dead}"


def test_the_mixins_share_no_member():
    # one place per method: two mixins defining a name would make the MRO, not the reader, choose
    seen: dict[str, str] = {}
    clashes = []
    for mixin in ReferenceAgent.__mro__[1:-1]:
        for attr in vars(mixin):
            if attr.startswith("__"):
                continue
            if attr in seen:
                clashes.append(f"{attr}: {seen[attr]} and {mixin.__name__}")
            seen[attr] = mixin.__name__
    assert not clashes, clashes
