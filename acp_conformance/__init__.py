"""acp-conformance: the conformance test suite and protocol fuzzer for the Agent Client Protocol v2."""

__version__ = "0.1.0"

# the protocol text this version of the suite judges: the v2 base text with the changes of the v2 Preview
# (batches removed, idempotency keys, the replay wording, repeated initialize)
SPEC_REVISION = "ACP v2 Preview (2026-11-20)"
