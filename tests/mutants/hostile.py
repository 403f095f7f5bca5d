"""Hostile agents: the suite must survive them (timeouts, exit detection) and say so in a sentence.
They break no rule of their own (tests/test_suite_end_to_end.py HOSTILE); ``MUTANTS`` maps a name to
(the rules a run against them must flag, the class). Collected by agent_mutants.py.
"""

from __future__ import annotations

import os

from acp_conformance.reference.agent import ReferenceAgent


class Silent(ReferenceAgent):
    """Reads stdin, never answers anything (exits on EOF)."""

    def on_line(self, raw):
        pass


class ExitMidTurn(ReferenceAgent):
    """Dies (exit status 3) right after reporting running for a prompt."""

    def report_running(self, session):
        super().report_running(session)
        os._exit(3)


class HangAfterInit(ReferenceAgent):
    """Answers initialize, then nothing at all."""

    def handle_message(self, msg, batch):
        if self.initialized:
            return
        super().handle_message(msg, batch)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    # hostile agents: the suite must survive them (timeouts, exit detection), ERR-004 at least
    "silent": (("ERR-004",), Silent),
    "exit-mid-turn": (("PROMPT-012",), ExitMidTurn),
    "hang-after-init": (("ERR-004",), HangAfterInit),
}
