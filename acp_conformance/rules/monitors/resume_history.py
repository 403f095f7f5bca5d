"""session/resume, across the connections of one test (the RESUME area's second module): replay of history, original ids, no replay
without replayFrom, unsupported cursors rejected, array-valued result members.

*History* of a session is what the test saw live (outside any resume window): user messages (id and
content of the live user_message), agent messages/thoughts and tool calls, by id. A replayed user
message "is" a live one when its content equals the live content (PROMPT-007). A resume window
is the time between a session/resume request and its response; the updates in it for the session are
the replay. The monitor keeps its own state across connections because history crosses restarts.

Each resume is tracked by its own request. When several resumes of one session are in flight on a
connection at once, each update in between goes to all of them and cannot be attributed: a finding
that depends on the attribution is then informational. What the response alone shows (a malformed
cursor accepted, the shape of the result) is judged whatever the overlap.

A resume may be sent while the session's work runs on the connection (running reported, no idle since):
the messages and tool calls that work has begun go on streaming, inside the resume's window or after its
response, under the ids they were first seen with. Those updates are the live work, not a replay of
history: they are neither RESUME-006's replay without replayFrom nor RESUME-001's history after the response.
The same holds, as a doubt, for the messages of the last work that ended cancelled (by session/cancel or
session/close): an update of one of them after its cancelled idle may be late output of that work (which
CANCEL-003 and CLOSE-003 judge) rather than a replay, so RESUME-006 only notes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...wire.transcript import RECEIVED, SENT
from ..monitor import REQUEST, RESPONSE
from ._common import AGENT_MESSAGE_KINDS, TOOL_KINDS, USER_KINDS, ConnLog, ConnMonitor, Msg, fr, hashable, js, session_update

_HISTORY = USER_KINDS + AGENT_MESSAGE_KINDS + TOOL_KINDS


def _cj(content: Any) -> str:
    return json.dumps(content, sort_keys=True)


def _ref(upd: dict) -> tuple[str, Any] | None:
    kind = upd.get("sessionUpdate")
    key = "toolCallId" if kind in TOOL_KINDS else "messageId"
    if kind in _HISTORY and hashable(upd.get(key)):
        return (key, upd.get(key))
    return None


@dataclass(eq=False)
class _Hist:
    refs: set = field(default_factory=set)
    users: dict = field(default_factory=dict)  # content (JSON) -> ids it was given live (echo and response)


@dataclass(eq=False)
class _R:
    req: Msg
    sid: str
    replay_from: Any
    resp: Msg | None = None
    inside: list[Msg] = field(default_factory=list)
    known: set = field(default_factory=set)  # history refs known when the resume was sent
    users: dict = field(default_factory=dict)
    after: list[Msg] = field(default_factory=list)  # history updates after the response, before new work
    after_open: bool = True
    overlaps: list["_R"] = field(default_factory=list)  # resumes of the session in flight at the same time
    # an earlier resume with replayFrom start, answered before it replayed the history it owed: its replay may
    # still be arriving, so history inside this resume's window is not provably this resume's
    unfinished: "_R | None" = None
    live: set = field(default_factory=set)  # refs of the work running when the resume was sent (they stream on)
    cut: set = field(default_factory=set)  # refs of the last work that ended cancelled before it was sent

    def overlap_note(self, label: str) -> str:
        ids = ", ".join(f"id={js(o.req.id)}" for o in self.overlaps)
        return (f"{label} overlapped another resume of the session on this connection ({ids}: one was sent before "
                "the other was answered), so the session's updates in between cannot be attributed to one of them")


def _snapshot_state(inside: list[Msg]) -> Any:
    """The state the last state_update before the resume's response reported (its current-state snapshot)."""
    for x in reversed(inside):
        u = x.msg["params"]["update"]
        if u.get("sessionUpdate") == "state_update":
            return u.get("state")
    return None


class ResumeLifecycleMonitor(ConnMonitor):
    rules = ("RESUME-001", "RESUME-006", "RESUME-007", "RESUME-011", "RESUME-014", "PROMPT-007")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.hist: dict[str, _Hist] = {}
        self.resumes: list[_R] = []
        self.open: dict[int, _R] = {}  # id() of the request -> the resume awaiting its response
        self.prompts: dict[int, tuple[str, Any]] = {}
        self.sent_prompts: list[Msg] = []  # the suite's session/prompt requests, every connection (RESUME-014)
        self.inserted: set[Any] = set()  # messageIds prompt responses returned: a live insertion, never a re-id
        # (conn, sessionId) -> the history refs of the work running now (running reported, no idle since)
        self.running: dict[tuple[int, str], set] = {}
        self.cut: dict[tuple[int, str], set] = {}  # (conn, sessionId) -> the refs of the last work ended cancelled

    def on_msg(self, log: ConnLog, m: Msg) -> None:
        if m.direction == SENT:
            if m.kind == REQUEST and isinstance(m.session_id, str):
                self._on_request(m)
            return
        if m.direction != RECEIVED:
            return
        if m.kind == RESPONSE:
            self._on_response(m)
            return
        su = session_update(m)
        if su is not None:
            self._on_update(m, *su)

    def _on_request(self, m: Msg) -> None:
        if m.method == "session/resume":
            h = self.hist.setdefault(m.session_id, _Hist())
            r = _R(m, m.session_id, m.params.get("replayFrom"), known=set(h.refs),
                   users={k: set(v) for k, v in h.users.items()},
                   live=set(self.running.get((m.conn, m.session_id), ())),
                   cut=set(self.cut.get((m.conn, m.session_id), ())))
            r.unfinished = self._unfinished_replay(m.conn, r.sid)
            for o in self.resumes:
                if o.sid == r.sid:
                    o.after_open = False
            for o in self._open_for(m.conn, r.sid):
                o.overlaps.append(r)
                r.overlaps.append(o)
            self.resumes.append(r)
            self.open[id(m)] = r
        elif m.method == "session/prompt":
            self.prompts[id(m)] = (m.session_id, m.params.get("prompt"))
            self.sent_prompts.append(m)

    def _on_response(self, m: Msg) -> None:
        rq = m.request
        if rq is None or m.duplicate:
            return
        if rq.method == "session/resume":
            r = self.open.pop(id(rq), None)
            if r is not None:
                r.resp = m
                if _snapshot_state(r.inside) in ("running", "requires_action"):
                    r.after_open = False  # work runs: what follows the response is live, not replay
        elif rq.method == "session/prompt" and m.ok and isinstance(m.result, dict) and id(rq) in self.prompts:
            sid, content = self.prompts[id(rq)]
            mid = m.result.get("messageId")
            if hashable(mid):
                self.inserted.add(mid)
            if isinstance(content, list) and hashable(mid):
                self.hist.setdefault(sid, _Hist()).users.setdefault(_cj(content), set()).add(mid)

    def _on_update(self, m: Msg, sid: str, upd: dict) -> None:
        self._follow_work(m.conn, sid, upd)
        inside = self._open_for(m.conn, sid)
        if inside:
            for r in inside:
                r.inside.append(m)
            return
        kind = upd.get("sessionUpdate")
        if kind == "state_update" and upd.get("state") in ("running", "requires_action"):
            for o in self.resumes:
                if o.sid == sid:
                    o.after_open = False
        ref = _ref(upd)
        if ref is None:
            return
        if kind == "user_message" and isinstance(upd.get("content"), list):
            self.hist.setdefault(sid, _Hist()).users.setdefault(_cj(upd["content"]), set()).add(upd.get("messageId"))
        for o in self.resumes:
            if o.sid == sid and o.resp is not None and o.after_open and o.req.conn == m.conn and ref in o.known \
                    and ref not in o.live and ref not in o.cut:
                o.after.append(m)
        if (m.conn, sid) in self.running:
            self.running[(m.conn, sid)].add(ref)
        self.hist.setdefault(sid, _Hist()).refs.add(ref)

    def _follow_work(self, conn: int, sid: str, upd: dict) -> None:
        """Whether the session's work runs on this connection (a state snapshot inside a resume's window
        counts too: it reports the state now)."""
        if upd.get("sessionUpdate") != "state_update":
            return
        if upd.get("state") in ("running", "requires_action"):
            self.running.setdefault((conn, sid), set())
        elif upd.get("state") == "idle":
            refs = self.running.pop((conn, sid), None)
            if refs and upd.get("stopReason") == "cancelled":
                self.cut[(conn, sid)] = refs

    def _unfinished_replay(self, conn: int, sid: str) -> _R | None:
        for o in reversed(self.resumes):
            if o.sid != sid or o.req.conn != conn:
                continue
            start = isinstance(o.replay_from, dict) and o.replay_from.get("type") == "start"
            replayed = {_ref(x.msg["params"]["update"]) for x in o.inside}
            return o if start and o.resp is not None and o.resp.ok and o.known - replayed else None
        return None

    def _open_for(self, conn: int, sid: str) -> list[_R]:
        return [r for r in self.open.values() if r.sid == sid and r.req.conn == conn]

    def finish_test(self) -> None:
        for r in self.resumes:
            self._judge(r)

    def _judge(self, r: _R) -> None:
        resp = r.resp
        if resp is None:
            return
        label = f"session/resume id={js(r.req.id)} of {r.sid!r} with replayFrom {js(r.replay_from, 80)}"
        rf = r.replay_from
        replayed = [m for m in r.inside if _ref(m.msg["params"]["update"]) is not None]
        if rf is not None and not (isinstance(rf, dict) and rf.get("type") == "start"):
            self._judge_bad_cursor(r, resp, label, replayed)
            return
        if not resp.ok:
            return
        self._judge_result_arrays(r, resp, label)
        if rf is None:
            self._judge_no_replay(r, resp, label, replayed)
            return
        # with replayFrom {type: start}
        if not r.known:
            return
        if r.overlaps:
            self.noted("RESUME-001", f"{r.overlap_note(label)}: which history updates were its replay is not "
                       "judged.", fr([resp, r.req]))
            return
        self._judge_replay_before_response(r, resp, label, replayed)
        self._judge_original_user_ids(r, resp, label, replayed)
        self._judge_replayed_once(r, resp, label)

    def _judge_bad_cursor(self, r: _R, resp: Msg, label: str, replayed: list[Msg]) -> None:
        """RESUME-007: a replayFrom other than absent or {type: start} is rejected with -32602, nothing replayed."""
        markers = [m for m in r.inside if m.msg["params"]["update"].get("sessionUpdate") == "replay_complete"]
        if resp.ok:
            self.failed("RESUME-007", f"{label} succeeded ({js(resp.result, 80)}) instead of -32602.",
                        fr([resp, r.req]))
        elif resp.error_code == -32602:
            if (markers or replayed) and r.overlaps:
                x = (markers + replayed)[0]
                self.noted("RESUME-007", f"{r.overlap_note(label)}: it was rejected with -32602 and a "
                           f"{x.msg['params']['update'].get('sessionUpdate')} for the session came before the "
                           f"error (t={x.t:.2f}), perhaps for the other resume.", fr([x, resp, r.req]))
            elif markers or replayed:
                x = (markers + replayed)[0]
                self.failed("RESUME-007", f"{label} was rejected with -32602 but a "
                            f"{x.msg['params']['update'].get('sessionUpdate')} came before the error "
                            f"(t={x.t:.2f}).", fr([x, resp, r.req]))
            else:
                self.pass_few("RESUME-007", f"{label} was rejected with -32602, nothing replayed.", [resp, r.req])
        elif resp.error_code == -32002:  # the agent does not keep the session for this form of resume: its right
            self.not_exercised("RESUME-007", f"{label} was answered -32002 (session not found): the agent does "
                               "not keep the session for this form of resume, so the cursor was not judged.",
                               fr([resp, r.req]))
        else:
            self.failed("RESUME-007", f"{label} was answered with error {js(resp.error)}, not -32602.",
                        fr([resp, r.req]))

    def _judge_result_arrays(self, r: _R, resp: Msg, label: str) -> None:
        """RESUME-011: configOptions and availableCommands of the result, when present, are arrays."""
        res = resp.result if isinstance(resp.result, dict) else {}
        bad = [k for k in ("configOptions", "availableCommands") if k in res and not isinstance(res[k], list)]
        if bad:
            self.failed("RESUME-011", f"{label}: result {bad[0]} is {js(res[bad[0]], 80)}, not an array.",
                        fr([resp, r.req]))
        else:
            present = [k for k in ("configOptions", "availableCommands") if k in res]
            self.pass_few("RESUME-011", f"{label}: result members {present or 'none'} "
                          f"{'are arrays' if present else 'of configOptions/availableCommands present'}.",
                          [resp, r.req])

    def _judge_no_replay(self, r: _R, resp: Msg, label: str, replayed: list[Msg]) -> None:
        """RESUME-006: without replayFrom, no earlier history is replayed before the response."""
        old: list[Msg] = []
        live: list[Msg] = []  # of the work running at the resume
        cut: list[Msg] = []  # of the last work ended cancelled
        for m in replayed:
            ref = _ref(m.msg["params"]["update"])
            if ref in r.known:
                (live if ref in r.live else cut if ref in r.cut else old).append(m)
        if live and not old:
            x = live[0]
            self.noted("RESUME-006", f"{label}: {x.msg['params']['update'].get('sessionUpdate')} "
                       f"{js(_ref(x.msg['params']['update']))} came at t={x.t:.2f}, before its response, but the "
                       "session's work was running when the resume was sent (no idle since its running state) and "
                       "had begun that message: its live work going on, not a replay.", fr([x, r.req, resp]))
        elif cut and not old:
            x = cut[0]
            self.noted("RESUME-006", f"{label}: {x.msg['params']['update'].get('sessionUpdate')} "
                       f"{js(_ref(x.msg['params']['update']))} came at t={x.t:.2f}, before its response; that "
                       "message belongs to the last work of the session, which had ended cancelled before the "
                       "resume was sent, so this may be late output of the cancelled work (CANCEL-003 and "
                       "CLOSE-003 judge updates after a cancellation) rather than a replay.", fr([x, r.req, resp]))
        if old and r.overlaps:
            x = old[0]
            self.noted("RESUME-006", f"{r.overlap_note(label)}: {x.msg['params']['update'].get('sessionUpdate')} "
                       f"{js(_ref(x.msg['params']['update']))} of the earlier history came at t={x.t:.2f}, before "
                       "its response, perhaps replayed for the other resume.", fr([x, r.req, resp]))
        elif old and r.unfinished is not None:
            x = old[0]
            self.noted("RESUME-006", f"{label}: {x.msg['params']['update'].get('sessionUpdate')} "
                       f"{js(_ref(x.msg['params']['update']))} of the earlier history came at t={x.t:.2f}, before "
                       f"its response; the earlier resume id={js(r.unfinished.req.id)} (replayFrom start) was "
                       "answered before replaying the history it owed, so this may be that replay arriving late "
                       "(RESUME-001 judges it).", fr([x, r.req, resp]))
        elif old:
            x = old[0]
            self.failed("RESUME-006", f"{label}: {x.msg['params']['update'].get('sessionUpdate')} "
                        f"{js(_ref(x.msg['params']['update']))} of the earlier history was replayed at "
                        f"t={x.t:.2f}, before the response.", fr([x, r.req, resp]))
        elif r.known:
            self.pass_few("RESUME-006", f"{label}: none of the {len(r.known)} known history id(s) was "
                          f"replayed before the response (t={resp.t:.2f}).", [resp, r.req])

    def _judge_replay_before_response(self, r: _R, resp: Msg, label: str, replayed: list[Msg]) -> None:
        """RESUME-001: with replayFrom start, the known history is replayed before the response, none after."""
        if r.after:
            x = r.after[0]
            self.failed("RESUME-001", f"{label}: history update {x.msg['params']['update'].get('sessionUpdate')} "
                        f"{js(_ref(x.msg['params']['update']))} was replayed at t={x.t:.2f}, after the response "
                        f"(t={resp.t:.2f}).", fr([x, resp, r.req]))
        elif replayed:
            self.pass_few("RESUME-001", f"{label}: {len(replayed)} history update(s) replayed before the response "
                          f"(t={resp.t:.2f}), none after it.", [replayed[0], resp, r.req])
        else:
            self.untested("RESUME-001", f"{label}: nothing of the {len(r.known)} known history id(s) was replayed "
                          "(retention is optional).", fr([resp, r.req]))

    def _judge_original_user_ids(self, r: _R, resp: Msg, label: str, replayed: list[Msg]) -> None:
        """PROMPT-007: a replayed user message keeps the messageId it was given live."""
        live_ids = set().union(*r.users.values()) if r.users else set()
        for content, mids in r.users.items():
            same = [m for m in replayed if m.msg["params"]["update"].get("sessionUpdate") in USER_KINDS
                    and isinstance(m.msg["params"]["update"].get("content"), list)
                    and _cj(m.msg["params"]["update"]["content"]) == content]
            if not same:
                continue
            ids = [m.msg["params"]["update"].get("messageId") for m in same]
            hit = [i for i in ids if i in mids]
            if hit:
                self.pass_few("PROMPT-007", f"{label}: the user message {js(hit[0])} was replayed with its original "
                              "messageId.", [same[ids.index(hit[0])], r.req])
            elif any(any(i in v for k, v in r.users.items() if k != content) for i in mids):
                self.noted("PROMPT-007", f"{label}: the user message with id(s) {js(sorted(mids, key=str))} was "
                           f"replayed as {js(ids[0])}, but that id was also given to other content (PROMPT-006 "
                           "judges duplicate ids).", fr([same[0], r.req]))
            elif not any(hashable(i) and (i in live_ids or i in self.inserted) for i in ids):
                self.failed("PROMPT-007", f"{label}: the user message inserted as {js(sorted(mids, key=str))} was "
                            f"replayed (same content) as {js(ids[0])}.", fr([same[0], r.req, resp]))

    def _judge_replayed_once(self, r: _R, resp: Msg, label: str) -> None:
        """RESUME-014: no more distinct replayed user messages of one text than submissions of it (one per
        idempotencyKey, none answered with an error), and no submission's message replayed cut short."""
        subs: dict[str, set] = {}  # prompt text -> its submissions
        ids: dict[Any, str] = {}  # messageId a submission was answered with -> its text
        live: set = set()  # messageIds of prompts sent during the resume: live insertions, not history
        for p in self.sent_prompts:
            # a prompt written while the resume runs may be inserted before its response (RESUME-013 judges when):
            # it counts as a submission, and its own messageId is no replay
            if p.session_id != r.sid or p.order > resp.order:
                continue
            a = next((x for x in p.responses if not x.duplicate), None)
            if a is not None and not a.ok:
                continue  # refused: not inserted (PROMPT-004)
            if p.order > r.req.order and a is not None and isinstance(a.result, dict) \
                    and hashable(a.result.get("messageId")):
                live.add(a.result["messageId"])
            text = _text_of(p.params.get("prompt"))
            if text:
                key = p.params.get("idempotencyKey")
                subs.setdefault(text, set()).add(("key", key) if isinstance(key, str) and key else ("req", id(p)))
                mid = a.result.get("messageId") if a is not None and isinstance(a.result, dict) else None
                if hashable(mid):
                    ids[mid] = text
        replayed: dict[Any, list[Msg]] = {}  # messageId -> its user-message updates in the replay
        for m in r.inside:
            u = m.msg["params"]["update"]
            if u.get("sessionUpdate") in USER_KINDS and hashable(u.get("messageId")) and u.get("messageId") not in live:
                replayed.setdefault(u.get("messageId"), []).append(m)
        texts = {mid: "".join(_text_of(x.msg["params"]["update"].get("content")) for x in ms)
                 for mid, ms in replayed.items()}
        judged = False
        for text, n in ((t, len(k)) for t, k in subs.items()):
            same = [mid for mid, t in texts.items() if t == text]
            if len(same) > n:
                self.failed("RESUME-014", f"{label}: the user message {text[:60]!r}, submitted {n} time(s), was "
                            f"replayed as {len(same)} messages ({js(same, 120)}): a message inserted once is in "
                            "the history twice.", fr([replayed[same[-1]][0], replayed[same[0]][0], r.req, resp]))
                return
            judged = judged or bool(same)
        for mid, text in ids.items():
            got = texts.get(mid)
            if got is not None and got != text and text.startswith(got):
                self.failed("RESUME-014", f"{label}: the user message {js(mid)} was replayed as {got[:60]!r}, "
                            f"a part of the submitted {text[:60]!r}: half inserted.",
                            fr([replayed[mid][0], r.req, resp]))
                return
        if judged:
            self.pass_few("RESUME-014", f"{label}: each submitted user message was replayed at most once, whole.",
                          [resp, r.req])
        elif subs:
            self.not_exercised("RESUME-014", f"{label}: none of the {sum(len(k) for k in subs.values())} submitted "
                               "user message(s) was replayed (retention is optional), so none could be replayed "
                               "twice.", fr([resp, r.req]))


def _text_of(content: Any) -> str:
    """The text of a content block or a list of them (what a duplicate or a cut message is compared by)."""
    blocks = content if isinstance(content, list) else [content]
    return "".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
