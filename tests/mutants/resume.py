"""Mutants of the RESUME rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

import asyncio

from acp_conformance.reference.agent import ReferenceAgent, new_id


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


class Resume007(ReferenceAgent):
    """An unsupported cursor type is replaced by a replay from the start (malformed ones stay -32602)."""

    @staticmethod
    def parse_replay_from(params):
        cursor = params.get("replayFrom")
        if isinstance(cursor, dict) and isinstance(cursor.get("type"), str):
            return True
        return ReferenceAgent.parse_replay_from(params)


class Resume006(ReferenceAgent):
    """Replays the history on every resume, also without replayFrom (no marker then)."""

    def resume_sequence(self, session, replay):
        if not replay:
            self.replay_history(session)
        super().resume_sequence(session, replay)


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


class Resume013(ReferenceAgent):
    """A replay that pauses after its first history update and serves other requests meanwhile, without
    holding their updates: a prompt written after session/resume reports running before replay_complete."""

    def handle_session_resume(self, ctx, params):
        session = self.sessions.get(params.get("sessionId")) if isinstance(params.get("sessionId"), str) else None
        if session is None or not session.record.get("history") or params.get("replayFrom") is None:
            return super().handle_session_resume(ctx, params)
        self.require_abs_path(params, "cwd")
        self.check_session_setup(params)
        self.parse_replay_from(params)
        history = [u for u in map(self.history_update, session.record.get("history", [])) if u is not None]
        if not history:
            return super().handle_session_resume(ctx, params)
        self.send_update(session, history[0])  # the replay has begun before the next line is read

        async def replay():
            await asyncio.sleep(0.5)  # the mutant's own pacing: the prompt is served meanwhile
            for update in history[1:]:
                self.send_update(session, update)
            self.replay_marker(session)
            self.resume_state_snapshot(session, True)
            self.respond(ctx, self.resume_result(session))

        self.spawn(replay(), ctx)


class DuplicatesAfterCrash(ReferenceAgent):
    """Recovering a session whose last turn never ended (the process died mid-turn), it re-inserts the interrupted
    prompt as a new user message: the replay holds the message twice. Reached by the fault scenarios
    (--acp-faults)."""

    SUITE_OPTIONS = ("--acp-faults",)

    def replay_history(self, session):
        history = session.record.get("history", [])
        if session.turn is None and history and history[-1].get("kind") == "user_message" \
                and not session.record.get("recovered"):
            history.append(dict(history[-1], messageId=new_id("msg_")))
            session.record["recovered"] = True
            self.save(session)
        super().replay_history(session)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "resume-002": (("RESUME-002",), Resume002),
    "resume-002-twice": (("RESUME-002",), Resume002Twice),
    "resume-003": (("RESUME-003",), Resume003),
    "resume-004": (("RESUME-004",), Resume004),
    "resume-005": (("RESUME-005",), Resume005),
    "resume-007": (("RESUME-007",), Resume007),
    "resume-006": (("RESUME-006",), Resume006),
    "resume-001": (("RESUME-001",), Resume001),
    "resume-011": (("RESUME-011", "SESSION-003"), Resume011),
    "resume-013": (("RESUME-013",), Resume013),
    "fault-duplicates-after-crash": (("RESUME-014",), DuplicatesAfterCrash),
}
