"""Reference agents with planted bugs that only a sequence or an odd value reaches.

The fuzzer must find each within a fixed budget without being aimed at it (the strategies know
nothing of these values). Run one with ``python tests/planted/planted_agents.py NAME``.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import ReferenceAgent, main  # noqa: E402
from acp_conformance.reference.alt_agent import AltAgent  # noqa: E402


class ThreeBlocks(ReferenceAgent):
    """A prompt of three or more content blocks is answered without its messageId (PROMPT-001)."""

    def insert_prompt(self, ctx, session, prompt):
        if len(prompt) >= 3:
            message_id = self.new_user_message_id(session, prompt)
            self.record_user_message(session, message_id, prompt)
            self.emit_user_message(session, message_id, prompt)
            self.respond(ctx, {})
            self.start_work(ctx, session, message_id, prompt)
            return
        super().insert_prompt(ctx, session, prompt)


class FivePrompts(ReferenceAgent):
    """The sixth prompt of one session kills the process."""

    def insert_prompt(self, ctx, session, prompt):
        n = getattr(session, "fuzz_prompts", 0) + 1
        session.fuzz_prompts = n
        if n > 5:
            os._exit(3)
        super().insert_prompt(ctx, session, prompt)


class BigId(ReferenceAgent):
    """A request id above 2^31 is echoed truncated to 32 bits (ERR-004/ERR-008)."""

    def _send_response(self, ctx, response):
        rid = response.get("id")
        if isinstance(rid, int) and not isinstance(rid, bool) and rid > 2 ** 31:
            response = dict(response, id=rid & 0x7FFFFFFF)
        super()._send_response(ctx, response)


class DeleteWhileOtherRuns(ReferenceAgent):
    """Deleting a session while another session's work runs kills the process."""

    def handle_session_delete(self, ctx, params):
        sid = params.get("sessionId")
        if any(s.turn is not None for k, s in self.sessions.items() if k != sid):
            os._exit(4)
        super().handle_session_delete(ctx, params)


class EmptyEmbeddedText(ReferenceAgent):
    """An embedded resource whose text is empty makes the prompt fail after insertion (PROMPT-003)."""

    def insert_prompt(self, ctx, session, prompt):
        if any(isinstance(b, dict) and b.get("type") == "resource" and isinstance(b.get("resource"), dict)
               and b["resource"].get("text") == "" for b in prompt):
            message_id = self.new_user_message_id(session, prompt)
            self.record_user_message(session, message_id, prompt)
            self.emit_user_message(session, message_id, prompt)
            self.respond_error(ctx, -32603, "Internal error")
            return
        super().insert_prompt(ctx, session, prompt)


# The same bugs planted in the alternative personality (acp_conformance/reference/alt_agent.py): the
# fuzzer must reach them on an agent whose legal choices differ from the reference agent's (a prompt
# sent during running work joins it, running comes before the response, chunked user messages, ...).


class AltThreeBlocks(AltAgent):
    """ThreeBlocks on the alternative personality: a prompt of three or more blocks (inserted as its own
    turn or into running work) is answered without its messageId."""

    blocks = 0

    def handle_session_prompt(self, ctx, params):
        prompt = params.get("prompt")
        self.blocks = len(prompt) if isinstance(prompt, list) else 0
        super().handle_session_prompt(ctx, params)

    def respond_prompt(self, ctx, session, message_id):
        if self.blocks >= 3:
            self.respond(ctx, {})
            return
        super().respond_prompt(ctx, session, message_id)


class AltFivePrompts(FivePrompts, AltAgent):
    """FivePrompts on the alternative personality (a prompt that joins running work is not counted)."""


class AltBigId(BigId, AltAgent):
    """BigId on the alternative personality."""


PLANTED = {"alt-three-blocks": AltThreeBlocks, "alt-five-prompts": AltFivePrompts, "alt-big-id": AltBigId,
           "three-blocks": ThreeBlocks, "five-prompts": FivePrompts, "big-id": BigId,
           "delete-while-other-runs": DeleteWhileOtherRuns, "empty-embedded-text": EmptyEmbeddedText}


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PLANTED:
        sys.stderr.write("usage: planted_agents.py NAME\nnames: %s\n" % ", ".join(sorted(PLANTED)))
        sys.exit(2)
    sys.exit(main(PLANTED[sys.argv[1]]))
