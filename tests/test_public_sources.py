"""Every rule's source, as reports show it, names public documents a vendor can open (issue 12 part 6)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from acp_conformance.rules.catalog import load_catalog  # noqa: E402
from acp_conformance.rules.findings import FAIL, Finding  # noqa: E402
from acp_conformance.rules.sources import INTERNAL, _table, public_refs, public_source  # noqa: E402
from acp_conformance.rules.verdicts import compute  # noqa: E402

CAT = load_catalog()


def test_no_public_source_names_an_internal_file():
    leaks = {r.id: r.public_source for r in CAT.values() if INTERNAL.search(r.public_source)}
    assert not leaks


def test_every_reference_maps_to_a_public_url():
    words = set(_table()["words"].values())
    unmapped = {r.id: [x.text for x in public_refs(r.source) if x.url is None and x.text not in words]
                for r in CAT.values()}
    assert not {k: v for k, v in unmapped.items() if v}
    for r in CAT.values():
        for x in public_refs(r.source):
            assert x.url is None or x.url.startswith("https://"), (r.id, x)


def test_sections_become_page_anchors():
    assert public_source("seed:001_a5255e8db1782e6d.txt § 3. Agent Reports Output") == (
        "ACP v2 Prompt Lifecycle § 3. Agent Reports Output "
        "<https://agentclientprotocol.com/protocol/v2/prompt-lifecycle#3-agent-reports-output>")
    assert public_source("seed:000_e11535bf65ba7eaa.txt § ReplayComplete").endswith(
        "<https://agentclientprotocol.com/protocol/v2/schema#replaycomplete>")
    assert public_source("upstream-doc:transports.mdx (JSON-RPC Batch Messages)").endswith(
        "<https://agentclientprotocol.com/protocol/v2/transports#json-rpc-batch-messages>")
    # a remark in parentheses is no heading: the page without an anchor
    assert public_source("upstream-doc:extensibility.mdx (custom requests must be answered)").endswith(
        "<https://agentclientprotocol.com/protocol/v2/extensibility>")


def test_report_json_carries_the_public_source():
    fs = [Finding("PROMPT-001", FAIL, "no messageId")]
    v = compute(CAT, fs, {"PROMPT-001"}, {}, {})
    row = next(r for r in v.rules if r.rule.id == "PROMPT-001").to_json()
    assert "seed:" not in row["source"] and "agentclientprotocol.com/protocol/v2/schema#promptresponse" in row["source"]


def test_rule_notes_name_known_rules_and_reach_report_json():
    from acp_conformance.rules.catalog import load_rule_notes
    notes = load_rule_notes()
    assert set(notes) <= set(CAT)
    assert "ACP-INIT-202" in notes["INIT-003"] and "-32022" in notes["INIT-003"]
    v = compute(CAT, [Finding("INIT-003", FAIL, "x")], {"INIT-003"}, {}, {})
    assert "ACP-INIT-202" in next(r for r in v.rules if r.rule.id == "INIT-003").to_json()["note"]
    assert not any(INTERNAL.search(n) for n in notes.values())
