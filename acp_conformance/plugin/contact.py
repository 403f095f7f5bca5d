"""First contact: whether this test's target can be judged at all (rules/first_contact.py), and the run's
early stop when it cannot (early_stop.py), in the words the failure shows."""

from __future__ import annotations

from ..rules.first_contact import NOT_V2, V1_HINT, V1_KEEP, WRONG_IDS
from ..wire.transcript import Frame
from .state import SuiteState

# the rules still judged on a test whose target cannot be judged at all, by why not: a v1 agent's negotiation,
# and the ERR-004 failure that names a target answering with ids never sent (the frames of its verdict)
KEPT_RULES = {NOT_V2: V1_KEEP, WRONG_IDS: ("ERR-004",)}


def negotiated_v1(frames: list[Frame]) -> Frame | None:
    """The response frame when an initialize of the test asked for 2 (or later) and got protocolVersion 1."""
    asked = {}
    for f in frames:
        m = f.msg
        if not isinstance(m, dict) or isinstance(m.get("id"), (dict, list)):
            continue
        key = (f.conn, type(m.get("id")).__name__, m.get("id"))
        if f.direction == "sent" and m.get("method") == "initialize" and isinstance(m.get("params"), dict):
            v = m["params"].get("protocolVersion")
            if isinstance(v, int) and not isinstance(v, bool) and v >= 2:
                asked[key] = f
        elif f.direction == "received" and "method" not in m and key in asked:
            del asked[key]
            res = m.get("result")
            if isinstance(res, dict) and res.get("protocolVersion") == 1:
                return f
    return None


def first_contact(state: SuiteState, frames: list[Frame], result, client: bool = False):
    """Why this test's target cannot be judged at all (rules/first_contact.py), while no test of the run has
    yet seen it answer initialize as a v2 peer; the run then stops (early_stop.py). Else None."""
    from ..early_stop import has_spoken_v2, spoke_v2, stop
    from ..rules.first_contact import FirstContact, judge_agent, judge_client, v1_behind_v2
    report_dir = state.run.report_dir
    waited = max(state.run.startup_timeout, state.run.timeout)
    if client:
        contact = judge_client(frames, waited, state.run.protocol, state.run.protocol_forced)
    else:
        contact = judge_agent(frames, waited, protocol=state.run.protocol, forced=state.run.protocol_forced)
    if client and contact is not None and contact.kind != NOT_V2 and getattr(result, "error", None):
        # the runner knows more of a client that sent nothing (it never started its agent, ended, hung)
        contact.sentence = "not an ACP client: " + " ".join(str(result.error).split())
    if contact is None and not client and state.run.protocol == 2:
        v1 = negotiated_v1(frames)  # a test that does not open with initialize
        if v1 is not None:
            contact = FirstContact(NOT_V2, f"the agent speaks ACP protocol version 1; {V1_HINT}",
                                   v1, 1)
        else:
            contact = v1_behind_v2(frames)
            if contact is not None:  # unambiguous, whatever an earlier test's answer to initialize looked like
                stop(report_dir, contact.kind, contact.sentence)
                return contact
    if contact is None:
        if result.agent_init is not None:
            spoke_v2(report_dir)
        return None
    if has_spoken_v2(report_dir):
        return None  # a v2 agent that failed this once: the rules judge it
    stop(report_dir, contact.kind, contact.sentence)
    return contact


def turns_never_end(state: SuiteState, frames: list[Frame], test: str, timeout: float) -> None:
    """Counts this test's evidence of a target whose turns never end by themselves (rules/turn_ends.py); the
    run stops (early_stop.py) once UNENDED_LIMIT tests showed a turn still running at the suite's timeout and
    none showed a turn that ended by itself."""
    from ..early_stop import TURNS_NEVER_END, UNENDED_LIMIT, stop, turn_ended, turn_unended
    from ..rules.turn_ends import turn_ends
    ends = turn_ends(frames)
    report_dir = state.run.report_dir
    if ends.ended is not None:
        turn_ended(report_dir)
        return
    if ends.unended is None:
        return
    n = turn_unended(report_dir, test)
    if n >= UNENDED_LIMIT:
        stop(report_dir, TURNS_NEVER_END,
             f"the agent's turns do not end by themselves: in {n} tests a turn was still running when the suite "
             f"gave up waiting for its idle state_update ({timeout:g} s, --acp-timeout), and no turn of the run "
             f"ended without a cancel; the tests left wait for turns to end and are not run (raise --acp-timeout "
             f"if its turns take longer)")


def stop_reason(state: SuiteState) -> dict | None:
    """Why the run stopped after judging some tests ({"kind", "sentence"}), when it did: a target whose turns
    never end by themselves. (A stop at first contact is ``state.first_contact``.)"""
    from ..early_stop import TURNS_NEVER_END, stopped
    if state.first_contact is not None:
        return None
    why = stopped(state.run.report_dir)
    return why if why is not None and why.get("kind") == TURNS_NEVER_END else None


def contact_text(contact, result, transcript: str) -> str:
    lines = [contact.sentence + "."]
    if contact.frame is not None:
        from ..report.redact import frame_text
        lines.append(f"  frame #{contact.frame.seq}: {frame_text(contact.frame, 300, True)}")
    if result.stderr and any(result.stderr):
        tail = result.stderr[-1][-800:]
        lines.append("target stderr (tail):\n" + "\n".join("  | " + ln for ln in tail.splitlines()[-8:]))
    lines.append("the remaining tests are not run; transcript: " + transcript)
    return "\n".join(lines)
