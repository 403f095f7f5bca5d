"""Command-line options of the report writers (HTML, badge, waivers, redaction, step summary)."""

from __future__ import annotations


def add_options(group) -> None:
    """Register the report options on the plugin's option group."""
    group.addoption("--acp-expected-failures", dest="acp_expected_failures", default=None, metavar="FILE",
                    help="YAML list of {rule, reason, link}: these rules may fail (reported xfail, not counted); "
                         "a listed rule that passes fails the run as a stale waiver")
    group.addoption("--acp-no-redact", dest="acp_no_redact", action="store_true", default=False,
                    help="write transcripts and findings as they were (by default MCP env/headers and fields "
                         "named like token, key, secret, password are redacted in the reports, and so are those "
                         "values wherever a finding, error or stderr quotes them)")
