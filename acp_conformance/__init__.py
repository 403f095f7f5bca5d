"""acp-conformance: the conformance test suite and protocol fuzzer for the Agent Client Protocol v2."""

__version__ = "0.1.0"

# the spec text the suite judges by: the v2 base text with the v2 Preview changes (batches removed,
# replay_complete reworded, initialize repeatable) from the upstream release notes and RFDs
SPEC_REVISION = "ACP v2 Preview (2026-11-20)"
