"""Every rule's source, as reports show it, names public documents only (issue: public references)."""

import json
import re

from acp_conformance.rules.catalog import CATALOG_PATH, load_catalog, load_kit_notes, public_source

TABLE = json.loads(CATALOG_PATH.with_name("public_sources.json").read_text(encoding="utf-8"))


def test_no_rule_shows_an_internal_file_name():
    for rule in load_catalog().values():
        shown = rule.public_source
        assert shown, rule.id
        leaks = [m for m in TABLE["internal_markers"] if m in shown]
        assert not leaks, (rule.id, leaks, shown)
        assert not re.search(r"\b[0-9a-f]{16}\b", shown), (rule.id, shown)  # no stored-file hash


def test_the_spec_texts_map_to_their_pages_with_the_section_kept():
    assert public_source("seed:001_a5255e8db1782e6d.txt § 3. Agent Reports Output") == (
        "ACP v2 Prompt Lifecycle (https://agentclientprotocol.com/protocol/v2/prompt-lifecycle) § 3. Agent Reports Output")
    assert public_source("upstream-doc:transports.mdx") == (
        "ACP v2 docs, transports (https://agentclientprotocol.com/protocol/v2/transports)")
    assert public_source("site-doc:agentclientprotocol.com/protocol/v2/error (stored copy) (Unknown Sessions)") == (
        "https://agentclientprotocol.com/protocol/v2/error (Unknown Sessions)")


def test_kit_notes_name_catalog_rules():
    catalog = load_catalog()
    notes = load_kit_notes()
    assert set(notes) <= set(catalog)
    assert "ACP-INIT-202" in notes["INIT-003"] and "-32022" in notes["INIT-003"]


def test_reports_carry_the_public_source_and_the_note():
    from acp_conformance.rules.findings import PASS, Finding
    from acp_conformance.rules.verdicts import compute
    catalog = load_catalog()
    v = compute(catalog, [Finding("INIT-003", PASS, "ok")], {"INIT-003"}, {}, {}, side="agent")
    entry = next(r for r in v.rules if r.rule.id == "INIT-003").to_json()
    assert entry["source"] == catalog["INIT-003"].public_source and "seed:" not in entry["source"]
    assert entry["note"] == load_kit_notes()["INIT-003"]
