"""Command-line options of the fuzzer inside pytest (``--acp-fuzz`` and its budget)."""

from __future__ import annotations


def add_options(group) -> None:
    """Register the fuzz options on the plugin's option group."""
