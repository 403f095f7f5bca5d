"""Command-line options of the report writers (HTML, badge, waivers, redaction, step summary)."""

from __future__ import annotations


def add_options(group) -> None:
    """Register the report options on the plugin's option group."""
