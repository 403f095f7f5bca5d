"""An agent for benchmarks that behaves like a language-model agent without tools: every prompt, whatever
its text, is a plain reply after 20 to 40 ms of "thinking"; no tool calls, no permission requests, no
terminals, no elicitation, nothing that runs until cancelled.

    python bench/turn_agent.py

It is the reference agent's protocol handling (so a fuzz run finds nothing and measures only speed) with
the steering words switched off: what the fuzzer's steering prompts ask for never happens, as with an
agent written outside this project, and every wait for it must end with the turn.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_conformance.reference.agent import LiveSession, ReferenceAgent, Turn, main  # noqa: E402


class TurnAgent(ReferenceAgent):
    STEERING_WORDS = ()  # every prompt is "echo"

    async def work_echo(self, session: LiveSession, turn: Turn) -> tuple[str, dict | None]:
        self.agent_chunk(session, turn, "Thinking about it. ")
        await self.pause(random.uniform(0.02, 0.04))
        self.agent_chunk(session, turn, turn.text or "(no text)")
        return "end_turn", None


if __name__ == "__main__":
    sys.exit(main(TurnAgent))
