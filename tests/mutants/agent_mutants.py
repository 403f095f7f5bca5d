"""Broken variants of the reference agent, each violating one rule.

Every mutant is a small subclass of ``ReferenceAgent`` overriding one method. ``MUTANTS`` maps a
mutant name to (the rule IDs the suite must flag it for, the class). Run one with::

    python tests/mutants/agent_mutants.py NAME

The prompt-steering words of the reference agent apply (see acp_conformance/reference/agent.py):
"slowly" = about 6 s of work, "permission" = a permission request, "tool" = a tool call, "fail" =
the work fails after insertion.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import (  # noqa: E402
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    ReferenceAgent,
    main,
    new_id,
)

# -- session/prompt ----------------------------------------------------------------------------


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


# -- session/cancel ----------------------------------------------------------------------------


class Cancel001(ReferenceAgent):
    """After session/cancel the idle update says end_turn."""

    def cancelled_stop_reason(self):
        return "end_turn"


class Cancel002(ReferenceAgent):
    """Cancellation surfaces as a failure: an idle with stopReason error, then the cancelled idle."""

    def finish_work(self, session, turn, stop_reason, error):
        if stop_reason == "cancelled":
            self.send_update(session, self.idle_update("error", {"code": INTERNAL_ERROR, "message": "Aborted"}))
        super().finish_work(session, turn, stop_reason, error)


class Cancel003(ReferenceAgent):
    """A chunk of the cancelled work arrives after the cancelled idle."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        if stop_reason == "cancelled":
            if turn.agent_message_id is None:
                turn.agent_message_id = self.new_agent_message_id(session)
            self.send_update(
                session,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": turn.agent_message_id,
                    "content": {"type": "text", "text": " (late)"},
                },
            )


# -- session/resume ----------------------------------------------------------------------------


class Resume002(ReferenceAgent):
    """No replay_complete on a resume with replayFrom."""

    def replay_marker(self, session):
        pass


class Resume002Twice(ReferenceAgent):
    """Two replay_complete updates on one resume with replayFrom."""

    def replay_marker(self, session):
        super().replay_marker(session)
        super().replay_marker(session)


class Resume003(ReferenceAgent):
    """With replayFrom: the current state_update comes before replay_complete, none after it."""

    def resume_sequence(self, session, replay):
        if not replay:
            super().resume_sequence(session, replay)
            return
        self.replay_history(session)
        self.resume_state_snapshot(session, replay)
        self.replay_marker(session)


class Resume004(ReferenceAgent):
    """No state_update before the response on a resume without replayFrom."""

    def resume_state_snapshot(self, session, replay):
        if replay:
            super().resume_state_snapshot(session, replay)


class Resume005(ReferenceAgent):
    """A replay_complete on a resume without replayFrom."""

    def resume_sequence(self, session, replay):
        if not replay:
            self.replay_marker(session)
        super().resume_sequence(session, replay)


# -- errors ------------------------------------------------------------------------------------


class Err001(ReferenceAgent):
    """An unknown session is answered with -32602 instead of -32002."""

    def error_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, INVALID_PARAMS, "Unknown session", {"sessionId": session_id})


class Err002(ReferenceAgent):
    """-32002 without error.data."""

    def error_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, RESOURCE_NOT_FOUND, "Session not found")


class Err004(ReferenceAgent):
    """session/list is answered twice."""

    def respond(self, ctx, result):
        super().respond(ctx, result)
        if ctx.method == "session/list":
            self.write_line({"jsonrpc": "2.0", "id": ctx.id, "result": result})


class PromptEmptyAccepted(ReferenceAgent):
    """Accepts an empty prompt [] with a messageId but never reports the user message it claims to have inserted."""

    def validate_prompt(self, prompt):
        if prompt:
            super().validate_prompt(prompt)

    def emit_user_message(self, session, message_id, prompt):
        if prompt:
            super().emit_user_message(session, message_id, prompt)


class Close005(ReferenceAgent):
    """Closing an unknown session fails with -32603."""

    def close_unknown_session(self, ctx, session_id):
        self.respond_error(ctx, INTERNAL_ERROR, "No such session")


# -- initialize --------------------------------------------------------------------------------


class Init001(ReferenceAgent):
    """Only an exact version match is accepted: asked for 3, answers -32022."""

    def negotiate_version(self, requested):
        return 2 if requested == 2 else None


class Init002(ReferenceAgent):
    """Answers its latest version (2) to a request for 1 (old upstream rule)."""

    def negotiate_version(self, requested):
        return 2 if requested >= 1 else None


class Init003(ReferenceAgent):
    """An unsupported version is answered with -32600 instead of -32022 + data."""

    def unsupported_version(self, ctx, requested):
        self.respond_error(ctx, INVALID_REQUEST, "Unsupported protocol version")


# -- transport ---------------------------------------------------------------------------------


class Transport003(ReferenceAgent):
    """Prints a banner line on stdout before anything else."""

    def on_startup(self):
        sys.stdout.buffer.write(b"Agent starting...\n")
        sys.stdout.buffer.flush()


# -- hostile agents ----------------------------------------------------------------------------


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
    "prompt-001": (("PROMPT-001",), Prompt001),
    "prompt-002": (("PROMPT-002",), Prompt002),
    "prompt-003": (("PROMPT-003",), Prompt003),
    "prompt-004": (("PROMPT-004",), Prompt004),
    "prompt-005": (("PROMPT-005",), Prompt005),
    "prompt-006": (("PROMPT-006",), Prompt006),
    "prompt-011": (("PROMPT-011",), Prompt011),
    "prompt-012": (("PROMPT-012",), Prompt012),
    "prompt-013": (("PROMPT-013",), Prompt013),
    "cancel-001": (("CANCEL-001",), Cancel001),
    "cancel-002": (("CANCEL-002",), Cancel002),
    "cancel-003": (("CANCEL-003",), Cancel003),
    "resume-002": (("RESUME-002",), Resume002),
    "resume-002-twice": (("RESUME-002",), Resume002Twice),
    "resume-003": (("RESUME-003",), Resume003),
    "resume-004": (("RESUME-004",), Resume004),
    "resume-005": (("RESUME-005",), Resume005),
    "err-001": (("ERR-001",), Err001),
    "err-002": (("ERR-002",), Err002),
    "err-004": (("ERR-004",), Err004),
    "close-005": (("CLOSE-005", "ERR-001"), Close005),
    "prompt-empty-accepted": (("PROMPT-002",), PromptEmptyAccepted),
    "init-001": (("INIT-001",), Init001),
    "init-002": (("INIT-002",), Init002),
    "init-003": (("INIT-003",), Init003),
    "transport-003": (("TRANSPORT-003",), Transport003),
    # hostile agents: the suite must survive them (timeouts, exit detection), ERR-004 at least
    "silent": (("ERR-004",), Silent),
    "exit-mid-turn": (("PROMPT-012",), ExitMidTurn),
    "hang-after-init": (("ERR-004",), HangAfterInit),
}


def _merge_family_files() -> None:
    """Mutants of other rule families live in agent_mutants_<family>.py, each with its own MUTANTS."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.startswith("agent_mutants_") and name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(here, name))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            for key, value in mod.MUTANTS.items():
                if key in MUTANTS:
                    raise RuntimeError(f"mutant {key!r} is defined twice ({name})")
                MUTANTS[key] = value


_merge_family_files()


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in MUTANTS:
        sys.stderr.write("usage: agent_mutants.py NAME\nnames: %s\n" % ", ".join(sorted(MUTANTS)))
        return 2
    return main(MUTANTS[argv[0]][1])


if __name__ == "__main__":
    sys.exit(run())
