"""state_update values and transitions: the state and stopReason vocabularies, leaving requires_action,
requires_action while blocked on a permission, the reserved "cancelled" stop reason, the error object.

Work of a session starts with its first running/requires_action after an idle (or the start of the
connection) and ends with the next idle. Idle snapshots sent while a session/resume of the session
is pending are resume snapshots, not ends of work.

Background work (seed 000 BackgroundWork, the `background` field of every state variant, session/cancel).

Per connection and session: once a state_update carried a `background` list, every later one carries
it (STATE-005); each listed item was announced before, is listed once, and is finished before the
snapshot that drops it (STATE-006); session/cancel does not stop work listed in the latest snapshot
(CANCEL-010). Subagent items (a draft feature) are only noted when unannounced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST, RESPONSE
from ._common import (AGENT_MESSAGE_KINDS, ENDING_METHODS, TOOL_KINDS, WORK_STATES, ConnLog, ConnMonitor, Msg, fr, js,
                      session_update, session_updates_after)


STATES = ("running", "idle", "requires_action", "unknown")
STOP_REASONS = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error")


@dataclass(eq=False)
class _S:
    active: Msg | None = None
    since: Msg | None = None  # the last idle ending work (or None: connection start)
    stops: list[Msg] = field(default_factory=list)  # user/client stop actions during the work
    # session/cancel sent during the work that ended last: it may reach the agent after that work ended and
    # legally stop a prompt held behind it ("cancel all ongoing work", queued prompts included)
    carried: list[Msg] = field(default_factory=list)
    waiting: Msg | None = None  # a requires_action still without a following running/idle
    unblocked: Msg | None = None  # a suite action after that requires_action that should unblock it


def _stop_choice(resp: Msg, req: Msg) -> bool:
    """Did the suite's answer to a permission (or other) request of the agent decline or cancel?"""
    if not resp.ok:
        return True
    res = resp.result if isinstance(resp.result, dict) else {}
    out = res.get("outcome")
    if isinstance(out, dict):
        if out.get("outcome") != "selected":
            return True
        opts = (req.params or {}).get("options") if isinstance(req.params, dict) else None
        for o in opts or []:
            if isinstance(o, dict) and o.get("optionId") == out.get("optionId"):
                return not str(o.get("kind", "")).startswith("allow")
        # an option that was not offered allows nothing (PERM-003): an agent that then stops the work (codex-acp:
        # stopReason "cancelled") ends it on the suite's answer, not by a choice of its own
        return True
    action = res.get("action")
    return isinstance(action, str) and action in ("decline", "cancel")


class StateLifecycleMonitor(ConnMonitor):
    rules = ("STATE-001", "STATE-002", "STATE-003", "STATE-007", "PROMPT-014", "PROMPT-015")

    def analyze(self, log: ConnLog) -> None:
        ss: dict[Any, _S] = {}
        perms: list[tuple[Msg, Any]] = []  # (agent request, sessionId)
        for m in log.msgs:
            if m.direction == SENT:
                sid = m.session_id
                if m.kind == NOTIFICATION and m.method == "session/cancel" and isinstance(sid, str):
                    self._stop(ss.setdefault(sid, _S()), m)
                elif m.kind == NOTIFICATION and m.method == "$/cancel_request":
                    for st in ss.values():
                        self._stop(st, m)
                elif m.kind == REQUEST and m.method in ENDING_METHODS and isinstance(sid, str):
                    self._stop(ss.setdefault(sid, _S()), m)
                elif m.kind == REQUEST and m.method == "session/resume" and isinstance(sid, str):
                    ss.setdefault(sid, _S())
                elif m.kind == RESPONSE and m.request is not None:
                    rsid = m.request.session_id
                    st = ss.get(rsid)
                    if st is not None:
                        if st.waiting is not None and st.unblocked is None:
                            st.unblocked = m
                        if _stop_choice(m, m.request):
                            self._stop(st, m)
                continue
            if m.direction != RECEIVED or m.kind == RESPONSE:
                continue
            if m.kind == REQUEST and m.method == "session/request_permission" and isinstance(m.session_id, str):
                perms.append((m, m.session_id))
            su = session_update(m)
            if su is None:
                continue
            sid, upd = su
            if upd.get("sessionUpdate") != "state_update":
                continue
            st = ss.setdefault(sid, _S())
            state = upd.get("state")
            self._state_value(m, state)
            if st.waiting is not None and state in ("running", "idle"):
                self.pass_few("STATE-002", f"requires_action for {sid!r} at t={st.waiting.t:.2f} was followed by "
                              f"{state} at t={m.t:.2f}.", [m, st.waiting])
                st.waiting, st.unblocked = None, None
            if state in WORK_STATES:
                if st.active is None:
                    st.active = m
                if state == "requires_action" and st.waiting is None:
                    st.waiting = m
            elif state == "idle":
                sr = upd.get("stopReason")
                self._stop_reason(m, upd, sr, after_stop=st.active is not None and bool(st.stops))
                model = log.sessions.session(sid)  # an idle while a resume of it is pending is a snapshot
                if st.active is not None and not (model is not None and model.resumes_pending_at(m)):
                    if sr == "cancelled":
                        self._judge_cancelled(m, sid, st)
                    carried = [x for x in st.stops if x.method in ENDING_METHODS or (
                        sr != "cancelled" and x.method == "session/cancel" and x.order > st.active.order)]
                    st.active, st.since, st.stops, st.carried = None, m, [], carried
        for st in ss.values():
            if st.waiting is not None:
                if st.unblocked is not None:
                    self.failed("STATE-002", f"requires_action at t={st.waiting.t:.2f}: the suite answered "
                                f"(t={st.unblocked.t:.2f}) but neither running nor idle followed ({log.end_desc}).",
                                fr([st.waiting, st.unblocked]))
                else:
                    self.untested("STATE-002", f"requires_action at t={st.waiting.t:.2f} was still pending at the "
                                  f"end ({log.end_desc}); nothing unblocked it.", fr([st.waiting]))
        self._judge_perms(log, perms)

    @staticmethod
    def _stop(st: _S, m: Msg) -> None:
        st.stops.append(m)

    def _state_value(self, m: Msg, state: Any) -> None:
        if state in STATES:
            self.pass_few("STATE-001", f"state_update state {js(state)} at t={m.t:.2f}.", [m], key=state, limit=1)
        elif isinstance(state, str) and state.startswith("_"):
            self.noted("STATE-001", f"custom state {js(state)} at t={m.t:.2f} (the suite advertises no custom "
                       "states; a standard state should still be reported).", fr([m]))
        else:
            self.failed("STATE-001", f"state_update with state {js(state)} at t={m.t:.2f}, not a defined or "
                        "\"_\"-prefixed state.", fr([m]))

    def _stop_reason(self, m: Msg, upd: dict, sr: Any, after_stop: bool = False) -> None:
        if sr is None:
            return
        if sr in STOP_REASONS or (isinstance(sr, str) and sr.startswith("_")):
            self.pass_few("PROMPT-014", f"idle stopReason {js(sr)} at t={m.t:.2f}.", [m], key=sr, limit=1)
        elif isinstance(sr, str):
            self.failed("PROMPT-014", f"idle with stopReason {js(sr)} at t={m.t:.2f}: not a defined value and "
                        "not \"_\"-prefixed.", fr([m]))
        else:
            self.noted("PROMPT-014", f"idle with a non-string stopReason {js(sr)} at t={m.t:.2f} (the schema "
                       "judges its type).", fr([m]))
        if sr == "error" and after_stop:
            self.noted("PROMPT-015", f"idle stopReason \"error\" at t={m.t:.2f} ended work the suite had cancelled or "
                       "closed: CANCEL-002 judges that; its error object is not judged here.", fr([m]))
        elif sr == "error":
            err = upd.get("error")
            if err is None:
                self.warned("PROMPT-015", f"idle stopReason \"error\" at t={m.t:.2f} without an error object.",
                            fr([m]))
            elif (isinstance(err, dict) and isinstance(err.get("code"), int) and not isinstance(err.get("code"), bool)
                  and isinstance(err.get("message"), str)):
                self.pass_few("PROMPT-015", f"idle stopReason \"error\" at t={m.t:.2f} carries error {js(err)}.", [m])
            else:
                self.failed("PROMPT-015", f"idle stopReason \"error\" at t={m.t:.2f} carries error {js(err)}, not "
                            "{code: integer, message: string}.", fr([m]))

    def _judge_cancelled(self, m: Msg, sid: str, st: _S) -> None:
        start = st.since.t if st.since is not None else None
        what = f"idle stopReason \"cancelled\" for {sid!r} at t={m.t:.2f} (work since t={st.active.t:.2f})"
        if st.stops:
            s = st.stops[0]
            self.pass_few("STATE-007", f"{what} followed a stop the suite chose ({s.method or 'a declined answer'} "
                          f"at t={s.t:.2f}).", [m, s])
        elif (c := next((x for x in st.carried if x.method in ENDING_METHODS), None)) is not None:
            # a close or delete ends all of the session's work: held work that started after it was sent, before the
            # agent took it (the work before ended on its own meanwhile), is stopped by it too
            self.pass_few("STATE-007", f"{what} followed a stop the suite chose ({c.method} at t={c.t:.2f}, sent while "
                          f"the work before this one ran: it ends all of the session's work).", [m, c])
        elif st.carried:
            c = st.carried[-1]
            self.noted("STATE-007", f"{what}: the suite's session/cancel at t={c.t:.2f} was sent while the work before "
                       f"this one ran, which ended without it; it may have reached the agent after that end and "
                       f"stopped this work, held behind it (a race the spec does not settle).", fr([m, c]))
        else:
            since = f" since the previous idle at t={start:.2f}" if start is not None else ""
            self.failed("STATE-007", f"{what}: the suite sent no session/cancel, session/close, session/delete or "
                        f"$/cancel_request and declined nothing{since}.", fr([m, st.active]))

    @staticmethod
    def _requires_action_before(log: ConnLog, req: Msg, sid: str) -> Msg | None:
        """The session's requires_action state_update when it is the last state the session reported before ``req``."""
        last = None
        for m in log.msgs:
            if m.order >= req.order:
                break
            su = session_update(m)
            if su is not None and su[0] == sid and su[1].get("sessionUpdate") == "state_update":
                last = m if su[1].get("state") == "requires_action" else None
        return last

    def _judge_perms(self, log: ConnLog, perms: list[tuple[Msg, Any]]) -> None:
        for req, sid in perms:
            # the state may change to requires_action just before the request that it announces is written
            # (claude-agent-acp, codex-acp): that one counts as well as one that follows
            ra = self._requires_action_before(log, req, sid)
            resumed = None
            answer = req.responses[0] if req.responses else None
            for m, upd, kind in session_updates_after(log.msgs, req, sid):
                if kind == "state_update":
                    state = upd.get("state")
                    if state == "requires_action" and ra is None:
                        ra = m
                    elif state == "running" and ra is not None:
                        resumed = m
                        break
                    elif state == "idle":
                        break
                elif ra is not None and (kind in AGENT_MESSAGE_KINDS or kind in TOOL_KINDS) and answer is not None \
                        and m.order > answer.order and upd.get("status") not in ("failed", "cancelled"):
                    self.warned("STATE-003", f"after the permission answer (t={answer.t:.2f}) work went on "
                                f"({kind} at t={m.t:.2f}) before any running state_update.", fr([m, ra, answer]))
                    break
            label = f"session/request_permission id={js(req.id)} for {sid!r} at t={req.t:.2f}"
            if ra is None:
                self.warned("STATE-003", f"{label}: no requires_action state_update for the session followed "
                            "while the work waited for the answer.", fr([req, answer]))
            elif resumed is not None:
                self.pass_few("STATE-003", f"{label}: requires_action at t={ra.t:.2f}, running again at "
                              f"t={resumed.t:.2f} after the answer.", [ra, resumed, req])


FINAL_TOOL = ("completed", "failed", "cancelled")
HOW = ("a prompt that makes the agent start background work (the reference agent: a prompt containing "
       "\"background\"; --acp-tool-prompt or --acp-long-prompt set to such a text)")


@dataclass(eq=False)
class _Background:
    reported: Msg | None = None  # the first state_update with a background list
    listed: list[tuple[str, str]] = field(default_factory=list)  # the latest snapshot's items
    terminals: dict[str, Msg] = field(default_factory=dict)  # announced terminalId -> first update
    exited: dict[str, Msg] = field(default_factory=dict)  # terminalId -> update with exitStatus
    tools: dict[str, Msg] = field(default_factory=dict)
    final: dict[str, Msg] = field(default_factory=dict)  # toolCallId -> update with a final status
    tool_terms: dict[str, set] = field(default_factory=dict)  # toolCallId -> terminals its content shows
    children: set = field(default_factory=set)
    stopped: set = field(default_factory=set)  # ids the suite stopped explicitly (terminal/tool_call cancel)
    cancel: tuple[Msg, list] | None = None  # a session/cancel and the items listed when it was sent


def _items(bg: list) -> list[tuple[str, str]]:
    out = []
    for it in bg:
        if not isinstance(it, dict):
            continue
        t = it.get("type")
        key = {"terminal": "terminalId", "tool_call": "toolCallId", "subagent": "sessionId"}.get(t)
        if key is not None and isinstance(it.get(key), str):
            out.append((t, it[key]))
    return out


class BackgroundMonitor(ConnMonitor):
    rules = ("STATE-005", "STATE-006", "CANCEL-010")

    def analyze(self, log: ConnLog) -> None:
        ss: dict[Any, _Background] = {}
        cancels = 0
        for m in log.msgs:
            sid = m.session_id
            if m.direction == SENT:
                if not isinstance(sid, str):
                    continue
                st = ss.setdefault(sid, _Background())
                if m.kind == NOTIFICATION and m.method == "session/cancel":
                    cancels += 1
                    if st.listed and st.cancel is None:
                        st.cancel = (m, list(st.listed))
                elif m.kind == REQUEST and m.method in ("terminal/cancel", "tool_call/cancel"):
                    p = m.params if isinstance(m.params, dict) else {}
                    st.stopped.add(p.get("terminalId") if m.method == "terminal/cancel" else p.get("toolCallId"))
                elif m.kind == REQUEST and m.method == "session/close":
                    st.cancel = None  # closing stops background work too
                continue
            if m.direction != RECEIVED:
                continue
            su = session_update(m)
            if su is None:
                continue
            sid, upd = su
            st = ss.setdefault(sid, _Background())
            kind = upd.get("sessionUpdate")
            if kind == "terminal_update" and isinstance(upd.get("terminalId"), str):
                tid = upd["terminalId"]
                st.terminals.setdefault(tid, m)
                if upd.get("exitStatus") is not None and tid not in st.exited:
                    st.exited[tid] = m
                    self._judge_cancel_stop(st, "terminal", tid, m, "got exitStatus "
                                            f"{js(upd.get('exitStatus'))}", bool((upd["exitStatus"] or {}).get("signal"))
                                            if isinstance(upd["exitStatus"], dict) else True)
            elif kind in ("tool_call_update", "tool_call") and isinstance(upd.get("toolCallId"), str):
                cid = upd["toolCallId"]
                st.tools.setdefault(cid, m)
                for c in upd.get("content") or [] if isinstance(upd.get("content"), list) else []:
                    if isinstance(c, dict) and c.get("type") == "terminal" and isinstance(c.get("terminalId"), str):
                        st.tool_terms.setdefault(cid, set()).add(c["terminalId"])
                status = upd.get("status")
                if status in FINAL_TOOL and cid not in st.final:
                    st.final[cid] = m
                    self._judge_cancel_stop(st, "tool_call", cid, m, f"got status {js(status)}",
                                            status == "cancelled")
            elif kind == "tool_call_content_chunk" and isinstance(upd.get("toolCallId"), str):
                c = upd.get("content")
                if isinstance(c, dict) and c.get("type") == "terminal" and isinstance(c.get("terminalId"), str):
                    st.tool_terms.setdefault(upd["toolCallId"], set()).add(c["terminalId"])
            elif kind == "subagent_update":
                for k in ("sessionId", "childSessionId", "subagentSessionId"):
                    if isinstance(upd.get(k), str):
                        st.children.add(upd[k])
            elif kind == "state_update":
                self._snapshot(sid, st, m, upd)
        if cancels and not any(st.reported for st in ss.values()):
            self.untested("CANCEL-010", f"{cancels} session/cancel sent, but the agent never reported background "
                          f"work; {HOW} would exercise it.")

    def _snapshot(self, sid: str, st: _Background, m: Msg, upd: dict) -> None:
        bg = upd.get("background")
        if bg is None:
            if st.reported is not None:
                self.failed("STATE-005", f"state_update {js(upd.get('state'))} for {sid!r} at t={m.t:.2f} has no "
                            f"`background`, though the agent reported background work at t={st.reported.t:.2f}.",
                            fr([m, st.reported]))
            return
        if not isinstance(bg, list):
            self.noted("STATE-005", f"state_update at t={m.t:.2f} carries a malformed background {js(bg)} (treated "
                       "as not reported; the schema judges its shape).", fr([m]))
            return
        if st.reported is None:
            st.reported = m
        else:
            self.pass_few("STATE-005", f"state_update at t={m.t:.2f} for {sid!r} still carries background "
                          f"({len(bg)} item(s)).", [m, st.reported], limit=1)
        items = _items(bg)
        self._judge_items(sid, st, m, items)
        if st.cancel is not None:
            self._judge_cancel_kept(sid, st, m, items, upd)
        st.listed = items

    def _judge_items(self, sid: str, st: _Background, m: Msg, items: list[tuple[str, str]]) -> None:
        where = f"background snapshot for {sid!r} at t={m.t:.2f}"
        bad = False
        seen: set = set()
        for it in items:
            t, i = it
            if it in seen:
                bad = True
                self.failed("STATE-006", f"{where} lists {t} {i!r} twice.", fr([m]))
            seen.add(it)
            if t == "subagent":
                if i not in st.children:
                    self.noted("STATE-006", f"{where} lists subagent {i!r} with no earlier subagent_update (a draft "
                               "feature: noted only).", fr([m]))
                continue
            first = (st.terminals if t == "terminal" else st.tools).get(i)
            if first is None:
                bad = True
                self.failed("STATE-006", f"{where} lists {t} {i!r}, which no earlier "
                            f"{'terminal_update' if t == 'terminal' else 'tool_call_update'} announced.", fr([m]))
        listed_terms = {i for t, i in items if t == "terminal"}
        for t, i in items:
            if t == "tool_call" and st.tool_terms.get(i, set()) & listed_terms:
                bad = True
                self.failed("STATE-006", f"{where} lists tool call {i!r} and also the terminal it shows "
                            f"({', '.join(sorted(st.tool_terms[i] & listed_terms))}): process-backed work is "
                            "listed as its terminal only.", fr([m, st.tools.get(i)]))
        for t, i in st.listed:
            if (t, i) in seen or t == "subagent":
                continue
            done = (st.exited if t == "terminal" else st.final).get(i)
            if done is None:
                bad = True
                self.failed("STATE-006", f"{where} drops {t} {i!r} without reporting its "
                            f"{'exitStatus' if t == 'terminal' else 'final status'} first.",
                            fr([m, (st.terminals if t == 'terminal' else st.tools).get(i)]))
        if not bad and (items or st.listed):
            self.pass_few("STATE-006", f"{where}: {len(items)} item(s), each announced and listed once; dropped "
                          "items were finished first.", [m], limit=2)

    def _judge_cancel_stop(self, st: _Background, t: str, i: str, m: Msg, what: str, stopped: bool) -> None:
        """A listed item ends between the session/cancel and the snapshot after it."""
        if st.cancel is None or (t, i) not in st.cancel[1] or i in st.stopped:
            return
        c = st.cancel[0]
        if stopped:
            self.failed("CANCEL-010", f"{t} {i!r}, listed as background work when session/cancel was sent "
                        f"(t={c.t:.2f}), {what} at t={m.t:.2f} with no {t}/cancel for it: the cancel stopped it.",
                        fr([c, m]))
        else:
            self.noted("CANCEL-010", f"background {t} {i!r} {what} at t={m.t:.2f}, after session/cancel at "
                       f"t={c.t:.2f}: it finished on its own (inconclusive).", fr([c, m]))
        st.cancel = (c, [x for x in st.cancel[1] if x != (t, i)])

    def _judge_cancel_kept(self, sid: str, st: _Background, m: Msg, items: list[tuple[str, str]], upd: dict) -> None:
        """The first idle snapshot after the cancel still lists the background work that was not finished."""
        if upd.get("state") != "idle":
            return
        c, before = st.cancel
        st.cancel = None
        for t, i in before:
            if (t, i) in items:
                self.pass_few("CANCEL-010", f"background {t} {i!r} listed at session/cancel (t={c.t:.2f}) is still "
                              f"listed in the idle snapshot at t={m.t:.2f}.", [c, m], limit=1)
            elif i not in st.stopped and (st.exited if t == "terminal" else st.final).get(i) is None:
                self.noted("CANCEL-010", f"background {t} {i!r} listed at session/cancel (t={c.t:.2f}) is missing "
                           f"from the idle snapshot at t={m.t:.2f} without finishing: STATE-006 judges that.",
                           fr([c, m]))
