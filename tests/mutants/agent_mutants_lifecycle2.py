"""Broken variants of the reference agent for the lifecycle family, second batch (CANCEL, PROMPT,
RESUME, STATE) and the AUTH-005 / CONFIG-006 leftovers of the session family.

Each subclasses ``ReferenceAgent`` and overrides one small method; ``MUTANTS`` maps a name to
(the rules the suite must flag, the class). Merged into agent_mutants.MUTANTS automatically.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling mutant files
from agent_mutants_session import _WithAuth  # noqa: E402
from acp_conformance.reference.agent import (  # noqa: E402
    FINAL_TOOL_STATUSES,
    INTERNAL_ERROR,
    REQUEST_CANCELLED,
    ReferenceAgent,
    request_key,
)

AUTH_REQUIRED = -32000


# -- session/cancel and $/cancel_request -------------------------------------------------------------


class Cancel004(ReferenceAgent):
    """Cancelled while waiting for a permission answer, it withdraws the request ($/cancel_request)
    but treats the permission as granted: the tool call reports ``completed`` before the cancelled idle."""

    def on_work_cancelled(self, session, turn):
        if not turn.pending_requests:
            return super().on_work_cancelled(session, turn)
        for request_id in list(turn.pending_requests):
            self.abandon_request(request_id)
        turn.pending_requests.clear()
        if turn.tool is not None and turn.tool.get("status") not in FINAL_TOOL_STATUSES:
            self.tool_update(session, turn, status="completed")


class Cancel009(ReferenceAgent):
    """A prompt held when its session is cancelled is answered -32800 twice. Exactly one response is
    also ERR-004's rule, so the same frame fails it too (any count but one breaks both)."""

    def cancel_held_prompts(self, session):
        while session.held:
            ctx, _prompt = session.held.popleft()
            self.inbound.pop(request_key(ctx.id), None)
            self.respond_error(ctx, REQUEST_CANCELLED, "Request cancelled")
            self.write_line({"jsonrpc": "2.0", "id": ctx.id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})


class Cancel011(ReferenceAgent):
    """A session whose last turn ended with idle "cancelled" refuses every later prompt with -32603."""

    def finish_work(self, session, turn, stop_reason, error):
        if stop_reason == "cancelled":
            self.__dict__.setdefault("_poisoned", set()).add(session.id)
        super().finish_work(session, turn, stop_reason, error)

    def insert_prompt(self, ctx, session, prompt):
        if session.id in self.__dict__.get("_poisoned", ()):
            self.respond_error(ctx, INTERNAL_ERROR, "Internal error: the session was cancelled")
            return
        super().insert_prompt(ctx, session, prompt)


class Cancel012(ReferenceAgent):
    """A held prompt named by $/cancel_request is answered -32800 twice. Exactly one response is also
    ERR-004's rule, so the same frame fails it too (any count but one breaks both)."""

    def hold_prompt(self, ctx, session, prompt):
        super().hold_prompt(ctx, session, prompt)
        cancel = self.inbound.get(request_key(ctx.id))

        def cancel_twice():
            cancel()
            self.write_line({"jsonrpc": "2.0", "id": ctx.id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})

        self.inbound[request_key(ctx.id)] = cancel_twice


class Cancel013(ReferenceAgent):
    """Answers a $/cancel_request for an id it has nothing pending for (already answered, or never
    used) with -32800 under that id. The answer is a second response to an answered request, or a
    response to no request: ERR-004 judges the same frame."""

    def handle_cancel_request(self, params):
        request_id = params.get("requestId")
        if self._valid_id(request_id) and request_key(request_id) not in self.inbound:
            self.write_line({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"}})
            return
        super().handle_cancel_request(params)


class Cancel014(ReferenceAgent):
    """Before answering the held prompts of a cancelled (or closed) session with -32800, it sends
    $/cancel_request naming their ids: requests of the client, not of the agent (mixed id spaces).
    No scenario is bound to CANCEL-014 yet: the whole suite runs, and cancel-with-held-prompt,
    cancel-request-for-pending-prompts and close-running-session flag it."""

    def cancel_held_prompts(self, session):
        for ctx, _prompt in list(session.held):
            self.notify("$/cancel_request", {"requestId": ctx.id})
        super().cancel_held_prompts(session)


# -- session/prompt and state_update ------------------------------------------------------------------


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


class State001(ReferenceAgent):
    """Reports a non-standard state "working" right after every running. A `_`-prefixed custom state
    is only noted, so the value STATE-001 fails is an unknown non-`_` one, which EXT-005 forbids too."""

    def report_running(self, session):
        super().report_running(session)
        self.send_update(session, {"sessionUpdate": "state_update", "state": "working"})


class State002(ReferenceAgent):
    """Reads the answer to its permission request but the work never learns of it: after
    requires_action nothing follows, neither running nor idle. The monitor fails STATE-002 only when
    no running/idle follows at all, so the turn never ends and PROMPT-012 (no idle) fails too."""

    def send_request(self, method, params):
        request_id, future = super().send_request(method, params)
        if method == "session/request_permission":
            return request_id, self.loop.create_future()  # never resolved; the real one is in pending_out
        return request_id, future


# -- session/resume ----------------------------------------------------------------------------------


class Resume001(ReferenceAgent):
    """With replayFrom {type: start} the marker and the state snapshot come before the response, but
    the history itself is replayed only after it."""

    def resume_sequence(self, session, replay):
        if replay:
            self.loop.call_soon(self.replay_history, session)
            self.replay_marker(session)
        self.resume_state_snapshot(session, replay)


class Resume011(ReferenceAgent):
    """The session/resume result carries configOptions: null. SESSION-003 states the same for
    session/new and session/resume results, so it fails on the same frame."""

    def resume_result(self, session):
        return {"configOptions": None}


# -- auth, config --------------------------------------------------------------------------------------


class Auth005(_WithAuth):
    """Lists an `agent` auth method; auth/login answers {} but leaves the agent logged out: from
    then on session/new answers -32000 (auth required). Without a login session/new works, so only
    the auth scenario sees the defect."""

    def handle_auth_login(self, ctx, params):
        if params.get("methodId") in [a["methodId"] for a in self.AUTH_METHODS]:
            self.__dict__["_logged_out"] = True  # the login flow wipes the credential it should have stored
        super().handle_auth_login(ctx, params)

    def handle_session_new(self, ctx, params):
        if self.__dict__.get("_logged_out"):
            self.respond_error(ctx, AUTH_REQUIRED, "Authentication required")
            return
        super().handle_session_new(ctx, params)


class Config006(ReferenceAgent):
    """At the end of every turn it switches its mode to "code" and reports that with a
    config_option_update carrying only the option that changed (a delta, not the complete
    configuration).

    Not in MUTANTS: the suite only *warns* about CONFIG-006 (SessionConfigMonitor.warned, as the
    catalog's check says: "WARN if options vanish"), while CONFIG-006 is a mandatory MUST, so
    test_mutant_is_flagged_for_its_rule (which expects "fail" for it) cannot pass. No scenario is
    bound to CONFIG-006 either. Run it by hand with
    ``python -c "import sys; sys.path.insert(0, 'tests/mutants'); import agent_mutants_lifecycle2 as m;
    from acp_conformance.reference.agent import main; main(m.Config006)"``."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        if session.closed:
            return
        session.record["config"] = dict(session.record.get("config") or self.default_config(), mode="code")
        self.save(session)
        changed = [o for o in self.config_options(session.record) if o["configId"] == "mode"]
        self.send_update(session, {"sessionUpdate": "config_option_update", "configOptions": changed})


MUTANTS = {
    "cancel-004": (("CANCEL-004",), Cancel004),
    "cancel-009": (("CANCEL-009", "ERR-004"), Cancel009),
    "cancel-011": (("CANCEL-011",), Cancel011),
    "cancel-012": (("CANCEL-012", "ERR-004"), Cancel012),
    "cancel-013": (("CANCEL-013", "ERR-004"), Cancel013),
    "cancel-014": (("CANCEL-014",), Cancel014),
    "prompt-014": (("PROMPT-014", "EXT-005"), Prompt014),
    "prompt-017": (("PROMPT-017", "ERR-004"), Prompt017),
    "state-001": (("STATE-001", "EXT-005"), State001),
    "state-002": (("STATE-002", "PROMPT-012"), State002),
    "resume-001": (("RESUME-001",), Resume001),
    "resume-011": (("RESUME-011", "SESSION-003"), Resume011),
    "auth-005": (("AUTH-005",), Auth005),
}

# flagged only as a warning although the rule is a MUST (see Config006): not run by the end-to-end test
UNFLAGGED = {
    "config-006": (("CONFIG-006",), Config006),
}
