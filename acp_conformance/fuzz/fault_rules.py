"""The fault rules of the agent state machine (``fuzz --faults``, ``--acp-fuzz --acp-faults``; docs/faults.md).

A subclass of the machine, used only with --faults: the rules of a run without it (and so the examples that a seed
draws) stay as they were. Each rule is scenario steps like the others (kill, restart, duplicate, delay,
pause_reading), so a counterexample keeps its fault steps and the same monitors judge them."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from .base_strategies import sampled
from .stateful import AgentMachine, request_ids


class FaultAgentMachine(AgentMachine):
    """The agent machine with the fault rules: each makes its situation happen; the monitors judge it."""

    @precondition(lambda self: self.known()
                  and not any(s.queued or s.pending for s in self.sessions.values()))
    @rule(data=st.data(), rid=request_ids, retry_rid=request_ids, mid_turn=st.booleans())
    def fault_crash(self, data, rid, retry_rid, mid_turn):
        """The agent is killed (mid-turn, when a turn runs and ``mid_turn``), started again, and a session resumed
        from the start; its last keyed prompt, whose answer the client acts as if lost, is sent again (IDEM-005,
        RESUME-014). A resume answered -32002 (sessions kept in memory only) leaves the session behind."""
        ref = self.pick(data, self.known())
        if not mid_turn:
            for r in list(self.sessions):
                self.idle(r)
        self.crash()
        s = self.sessions[ref]
        save = self.request("session/resume", {"sessionId": ref, "cwd": s.cwd or "$cwd",
                                               "replayFrom": {"type": "start"}}, rid)
        if self.ok(save):
            s.alive = True
            if s.keyed:
                self.request("session/prompt", dict(s.keyed), retry_rid)

    @precondition(lambda self: any(self.sessions[r].keyed_save for r in self.alive(busy=False)))
    @rule(data=st.data())
    def fault_duplicate(self, data):
        """The line of the session's last keyed prompt written again, its id and key, once it was answered."""
        ref = data.draw(sampled([r for r in self.alive(busy=False) if self.sessions[r].keyed_save]), label="session")
        self.idle(ref)
        self.do({"duplicate": {"request": "$" + self.sessions[ref].keyed_save}})

    @precondition(lambda self: any(self.sessions[r].ending and not self.sessions[r].queued
                                   for r in self.alive(busy=False)))
    @rule(data=st.data())
    def fault_delayed_cancel(self, data):
        """A cancel the client wrote while the turn ran, held back until just after its idle."""
        ref = data.draw(sampled([r for r in self.alive(busy=False) if self.sessions[r].ending
                                 and not self.sessions[r].queued]), label="session")
        self.sessions[ref].ending = False  # the delay's barrier is that turn's idle
        self.do({"delay": {"until": {"idle": ref}, "then": {"cancel": ref}}})

    @precondition(lambda self: any(s.ending or s.busy for s in self.sessions.values() if s.alive))
    @rule(seconds=st.sampled_from([0.2, 0.5, 1.0]))
    def fault_pause_reading(self, seconds):
        """A slow client: nothing is read for a moment while a turn runs."""
        self.do({"pause_reading": {"seconds": seconds}})
