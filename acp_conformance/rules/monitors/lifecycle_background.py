"""Background work (seed 000 BackgroundWork, the `background` field of every state variant, session/cancel).

Per connection and session: once a state_update carried a `background` list, every later one carries
it (STATE-005); each listed item was announced before, is listed once, and is finished before the
snapshot that drops it (STATE-006); session/cancel does not stop work listed in the latest snapshot
(CANCEL-010). Subagent items (a draft feature) are only noted when unannounced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import NOTIFICATION, REQUEST
from ._common import ConnLog, ConnMonitor, Msg, fr, js, session_update

FINAL_TOOL = ("completed", "failed", "cancelled")
HOW = ("a prompt that makes the agent start background work (the reference agent: a prompt containing "
       "\"background\"; --acp-tool-prompt or --acp-long-prompt set to such a text)")


@dataclass(eq=False)
class _S:
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
    expected = {
        "STATE-005": "Once a state_update of a session carried `background`, every later state_update of that "
                     "session carries it (an array; [] when nothing runs).",
        "STATE-006": "Background items reference a terminal, tool call or subagent announced before the first "
                     "snapshot that lists them, are listed once (process-backed work as its terminal only), "
                     "and report exitStatus / a final status before the snapshot that drops them.",
        "CANCEL-010": "session/cancel does not stop work listed in the latest background snapshot: listed "
                      "terminals get no exitStatus and listed tool calls no `cancelled` status from the cancel, "
                      "and they stay listed until they finish.",
    }

    def analyze(self, log: ConnLog) -> None:
        ss: dict[Any, _S] = {}
        cancels = 0
        for m in log.msgs:
            sid = m.session_id
            if m.direction == SENT:
                if not isinstance(sid, str):
                    continue
                st = ss.setdefault(sid, _S())
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
            st = ss.setdefault(sid, _S())
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

    def _snapshot(self, sid: str, st: _S, m: Msg, upd: dict) -> None:
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

    def _judge_items(self, sid: str, st: _S, m: Msg, items: list[tuple[str, str]]) -> None:
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

    def _judge_cancel_stop(self, st: _S, t: str, i: str, m: Msg, what: str, stopped: bool) -> None:
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

    def _judge_cancel_kept(self, sid: str, st: _S, m: Msg, items: list[tuple[str, str]], upd: dict) -> None:
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
