"""acp-conformance: the conformance test suite and protocol fuzzer for the Agent Client Protocol v2."""

__version__ = "0.1.0"
