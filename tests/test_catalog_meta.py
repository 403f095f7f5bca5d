"""The catalog, the monitors, the scenarios and the mutants agree, both ways.

* every catalog rule is checked, not observable, retired or listed as not checked yet (with why), and
  only one of these;
* every checked rule is bound to a scenario and broken by a mutant, or listed below with the reason it
  cannot be (yet);
* every rule a scenario or a mutant names is a catalog rule, and a scenario names no retired or
  unobservable rule.

(Each mutant being flagged for its rules is tests/test_suite_end_to_end.py's and
tests/test_client_end_to_end.py's job; the monitors' own sentences are tests/test_monitors.py's.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_conformance.rules.catalog import load_catalog, load_not_observable, load_retired, load_unchecked
from acp_conformance.rules.explain import MUTANT_SCRIPTS, bundled_scenarios, load_mutants
from acp_conformance.rules.monitors import RULES_CHECKED

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog()

# checked rules that no mutant breaks, with the reason (a rule leaves this list when a mutant is written)
NO_MUTANT = {
    "EXT-008": "informational: the monitor records the capability _meta keys a target advertises and never "
               "fails or warns, so there is nothing for a mutant to break",
    "CANCEL-008": "a MAY: the monitor only notes (INFO) a response to, or a failed prompt after, a cancel of an "
                  "idle session; it never fails or warns",
    "EXT-002": "a MAY: a `$/` notification may be ignored; the monitor only notes (INFO) an answer to one or "
               "a connection that ends after it, never fails or warns",
}


def _mutant_rules() -> dict[str, set[str]]:
    """rule -> the names of the mutants (agent and client, flagged or only warning) that break it."""
    out: dict[str, set[str]] = {}
    for side, rel in MUTANT_SCRIPTS:
        flagged, unflagged = load_mutants(ROOT / rel)
        for name, (rules, _cls) in {**flagged, **unflagged}.items():
            for rule in rules:
                out.setdefault(rule, set()).add(f"{side}:{name}")
    return out


def _scenario_rules() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for side, path, scn in bundled_scenarios():
        for rule in scn.rules:
            out.setdefault(rule, []).append(f"{side}:{path.name}:{scn.name}")
    return out


def test_every_catalog_rule_is_checked_not_observable_retired_or_listed_unchecked_and_only_one():
    groups = {"checked": set(RULES_CHECKED), "not observable": set(load_not_observable()),
              "retired": set(load_retired()), "not checked yet": set(load_unchecked())}
    for name, ids in groups.items():
        assert ids <= set(CATALOG), f"{name} names rules outside the catalog: {sorted(ids - set(CATALOG))}"
    names = list(groups)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not groups[a] & groups[b], f"{a} and {b} both hold {sorted(groups[a] & groups[b])}"
    nowhere = set(CATALOG) - set().union(*groups.values())
    assert not nowhere, f"catalog rules neither checked, not observable, retired nor listed unchecked: {sorted(nowhere)}"


@pytest.mark.parametrize("loader", [load_not_observable, load_retired, load_unchecked])
def test_every_rule_left_unchecked_says_why_in_a_sentence(loader):
    for rule, why in loader().items():
        assert isinstance(why, str) and len(why.split()) >= 5, (rule, why)


def test_every_checked_rule_is_bound_to_a_scenario():
    bound = _scenario_rules()
    missing = sorted(set(RULES_CHECKED) - set(bound))
    assert not missing, f"checked rules that no scenario names: {missing}"


def test_every_scenario_names_only_catalog_rules_it_can_exercise():
    # a rule not checked yet may be named (the scenario drives its situation); a retired or unobservable one not
    for rule, where in _scenario_rules().items():
        assert rule in CATALOG, (rule, where)
        assert rule in RULES_CHECKED or rule in load_unchecked(), f"{where} names {rule}, which nothing can judge"


def test_every_checked_rule_has_a_mutant_or_a_reason():
    broken = _mutant_rules()
    assert set(broken) <= set(CATALOG), sorted(set(broken) - set(CATALOG))
    missing = sorted(set(RULES_CHECKED) - set(broken) - set(NO_MUTANT))
    assert not missing, f"checked rules that no mutant breaks (write one, or list it with the reason): {missing}"
    stale = sorted(set(NO_MUTANT) & set(broken))
    assert not stale, f"listed as having no mutant, yet one breaks them: {stale}"
    assert set(NO_MUTANT) <= set(RULES_CHECKED), sorted(set(NO_MUTANT) - set(RULES_CHECKED))


# the prefix each registry loads its area modules under (tests/mutant_areas.py), and the modules of no area
AREA_MODULES = {"agent": ("mutants_", {"hostile"}), "client": ("client_mutants_", set())}


@pytest.mark.parametrize("side, rel", MUTANT_SCRIPTS)
def test_each_mutant_lives_in_the_module_of_its_rule_area(side, rel):
    """tests/mutants/<area>.py and tests/client_mutants/<area>.py hold the mutants of that catalog area
    (hostile.py: agents that break no rule of their own), so a rule's mutant is found from its ID."""
    prefix, no_area = AREA_MODULES[side]
    flagged, unflagged = load_mutants(ROOT / rel)
    assert flagged
    for name, (rules, cls) in {**flagged, **unflagged}.items():
        assert cls.__module__.startswith(prefix), f"{name}: {cls.__module__} is not an area module of {rel}"
        module = cls.__module__.removeprefix(prefix)
        assert module in no_area | {CATALOG[rules[0]].area.lower().replace("-", "_")}, \
            f"{name} ({rules[0]}) lives in {module}.py"


def test_every_catalog_row_carries_its_tier_and_revisions_explicitly():
    """One row per rule with an explicit tier (never derived from the source text) and revisions."""
    import json

    from acp_conformance.protocol.revisions import V1, names
    from acp_conformance.rules.catalog import CATALOG_PATH, EXTRA_PATH, TIERS, V1_PATH
    rows = [r for p in (CATALOG_PATH, EXTRA_PATH, V1_PATH) for r in json.loads(p.read_text(encoding="utf-8"))]
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "one row per rule"
    for r in rows:
        assert r.get("tier") in TIERS[r["level"]], (r["id"], r.get("tier"))
        allowed = {V1} if r["id"].startswith("V1-") else set(names())  # a v1 rule belongs to v1 alone
        assert r.get("revisions") and set(r["revisions"]) <= allowed, (r["id"], r.get("revisions"))


def test_a_row_without_a_tier_is_a_sentence_not_a_guess():
    from acp_conformance.rules import catalog
    row = {"id": "X-001", "level": "MUST", "revisions": ["base"]}
    with pytest.raises(catalog.CatalogError, match="X-001: 'tier' must be one of mandatory, advisory"):
        catalog._tier(row)
    with pytest.raises(catalog.CatalogError, match="X-001: 'revisions'"):
        catalog._revisions({"id": "X-001", "revisions": []})
