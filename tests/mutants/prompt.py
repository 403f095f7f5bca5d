"""Mutants of the PROMPT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import hashlib
import json

from acp_conformance.reference.agent import INTERNAL_ERROR, InvalidParams, ReferenceAgent, new_id


class Prompt001(ReferenceAgent):
    """The prompt result is the old upstream shape ``{}`` (no messageId)."""

    def prompt_result(self, message_id):
        return {}


class Prompt002(ReferenceAgent):
    """The user_message update carries another messageId than the response."""

    def emit_user_message(self, session, message_id, prompt):
        super().emit_user_message(session, message_id + "_echo", prompt)


class Prompt003(ReferenceAgent):
    """Echoes the user message, then answers the prompt with an error (and does no work)."""

    def insert_prompt(self, ctx, session, prompt):
        message_id = self.new_user_message_id(session, prompt)
        self.record_user_message(session, message_id, prompt)
        self.emit_user_message(session, message_id, prompt)
        self.respond_error(ctx, INTERNAL_ERROR, "Internal error")


class Prompt004(ReferenceAgent):
    """A rejected prompt (-32602) is reported as inserted anyway with a user_message."""

    def reject_prompt(self, ctx, session, prompt, reason):
        super().reject_prompt(ctx, session, prompt, reason)
        self.emit_user_message(session, new_id("msg_"), prompt)


class Prompt005(ReferenceAgent):
    """Holds the prompt response until the work has ended (after the idle update)."""

    def respond_prompt(self, ctx, session, message_id):
        pass  # answered in finish_work

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        self.respond(turn.ctx, self.prompt_result(turn.user_message_id))


class Prompt006(ReferenceAgent):
    """Identical prompts in a session get the same messageId (derived from the content)."""

    def new_user_message_id(self, session, prompt):
        digest = hashlib.sha1((session.id + json.dumps(prompt, sort_keys=True)).encode("utf-8"))
        return "msg_" + digest.hexdigest()[:24]


class Prompt011(ReferenceAgent):
    """Never reports the running state."""

    def report_running(self, session):
        if session.turn is not None:
            session.turn.waiting_for_user = False


class Prompt012(ReferenceAgent):
    """Never reports idle when work ends on its own (a cancel still gets its cancelled idle, so that
    only PROMPT-012 is broken)."""

    def finish_work(self, session, turn, stop_reason, error):
        if stop_reason == "cancelled":
            super().finish_work(session, turn, stop_reason, error)


class Prompt013(ReferenceAgent):
    """The idle update that ends work on its own carries no stopReason (the cancelled idle keeps
    its reason: that is CANCEL-001's business)."""

    def idle_update(self, stop_reason, error=None):
        update = super().idle_update(stop_reason, error)
        if stop_reason != "cancelled":
            update.pop("stopReason", None)
        return update


class PromptEmptyAccepted(ReferenceAgent):
    """Accepts an empty prompt [] with a messageId but never reports the user message it claims to have inserted."""

    def validate_prompt(self, prompt):
        if prompt:
            super().validate_prompt(prompt)

    def emit_user_message(self, session, message_id, prompt):
        if prompt:
            super().emit_user_message(session, message_id, prompt)


class Prompt008(ReferenceAgent):
    """Rejects resource_link blocks with -32602."""

    def validate_block(self, block):
        if isinstance(block, dict) and block.get("type") == "resource_link":
            raise InvalidParams("resource_link is not supported")
        super().validate_block(block)


class Prompt009(ReferenceAgent):
    """Accepts (and inserts) content blocks of any type."""

    def validate_block(self, block):
        if isinstance(block, dict) and isinstance(block.get("type"), str) and block["type"].startswith("_"):
            return
        super().validate_block(block)


class Prompt015(ReferenceAgent):
    """Failed work ends with stopReason error but no error object."""

    def idle_update(self, stop_reason, error=None):
        return super().idle_update(stop_reason, None)


class Prompt007(ReferenceAgent):
    """Replays user messages under fresh messageIds."""

    def history_update(self, entry):
        update = super().history_update(entry)
        if update is not None and update.get("sessionUpdate") == "user_message":
            update["messageId"] = update["messageId"] + "_replayed"
        return update


class Prompt014(ReferenceAgent):
    """Work that ends on its own reports stopReason "done" instead of "end_turn". An unknown value
    that is not `_`-prefixed is also a custom enum value EXT-005 forbids: any value PROMPT-014 fails
    fails EXT-005 as well."""

    def idle_update(self, stop_reason, error=None):
        return super().idle_update("done" if stop_reason == "end_turn" else stop_reason, error)


class Prompt017(ReferenceAgent):
    """A held prompt is answered twice when it is finally inserted (its messageId, then once more).
    Exactly one response is also ERR-004's rule, so the same frame fails it too."""

    def start_next_held(self, session):
        ctx = session.held[0][0] if session.held else None
        super().start_next_held(session)
        result = getattr(ctx, "prompt_result", None)
        if result is not None:
            self.write_line({"jsonrpc": "2.0", "id": ctx.id, "result": result})

    def respond_prompt(self, ctx, session, message_id):
        ctx.prompt_result = self.prompt_result(message_id)
        super().respond_prompt(ctx, session, message_id)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "prompt-001": (("PROMPT-001",), Prompt001),
    "prompt-002": (("PROMPT-002",), Prompt002),
    "prompt-003": (("PROMPT-003",), Prompt003),
    "prompt-004": (("PROMPT-004",), Prompt004),
    "prompt-005": (("PROMPT-005",), Prompt005),
    "prompt-006": (("PROMPT-006",), Prompt006),
    "prompt-011": (("PROMPT-011",), Prompt011),
    "prompt-012": (("PROMPT-012",), Prompt012),
    "prompt-013": (("PROMPT-013",), Prompt013),
    "prompt-empty-accepted": (("PROMPT-002",), PromptEmptyAccepted),
    "prompt-007": (("PROMPT-007",), Prompt007),
    "prompt-008": (("PROMPT-008",), Prompt008),
    "prompt-009": (("PROMPT-009",), Prompt009),
    "prompt-015": (("PROMPT-015",), Prompt015),
    "prompt-014": (("PROMPT-014", "EXT-005"), Prompt014),
    "prompt-017": (("PROMPT-017", "ERR-004"), Prompt017),
}
