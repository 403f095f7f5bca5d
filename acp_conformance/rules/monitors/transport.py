"""stdout hygiene: every line the target writes is a JSON-RPC 2.0 message (or a batch of them).

stdio framing and batches: UTF-8, one JSON value per line, batch answers, shutdown on stdin EOF.

Batch answers are paired with the suite's lines as in ``_attribution.attribute``.
"""

from __future__ import annotations

from typing import Any

from ...wire.transcript import EV_EXIT, EV_STDIN_CLOSED, RECEIVED, SENT, Frame
from ..monitor import NOTIFICATION, REQUEST, RESPONSE, Monitor, Rpc, classify
from ._attribution import Sent, attribute, batch_owed, null_error
from ._common import ConnLog, ConnMonitor, FrameLogMixin, Msg, fr, js, secs, session_update


_OK = (REQUEST, NOTIFICATION, RESPONSE)


class TransportMonitor(Monitor):
    rules = ("TRANSPORT-003",)
    max_findings = 5  # per status; the rest is counted in one summary finding

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lines = 0
        self.counts = {"fail": 0, "warn": 0}
        self.extra = {"fail": [], "warn": []}

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction != RECEIVED:
            return
        self.lines += 1
        if frame.problem is not None:
            if not frame.raw.strip():
                self._report("warn", f"the target wrote an empty line to stdout (t={frame.t:.2f}, "
                             f"{len(frame.raw)} byte(s)).", frame)
            else:
                self._report("fail", f"the target wrote a line that is {frame.problem}: {self._quote(frame)}",
                             frame)
            return
        msg = frame.msg
        if isinstance(msg, list):
            if not msg:  # no noise but a batch answer: TRANSPORT-006/012 judge what answers a batch
                self.noted("TRANSPORT-003", f"the target wrote an empty array [] (t={frame.t:.2f}): a batch of "
                           "nothing, which the batch rules judge where it answers one; JSON-RPC writes nothing "
                           "instead.", [frame])
                return
            bad = [i for i, x in enumerate(msg) if classify(x) not in _OK]
            if bad:
                self._report("fail", f"the target wrote a batch whose member(s) {bad[:5]} are not JSON-RPC 2.0 "
                             f"messages: {self._quote(frame)}", frame)
            return
        kind = classify(msg)
        if kind not in _OK:
            self._report("fail", f"the target wrote JSON that is not a JSON-RPC 2.0 request, notification or "
                         f"response: {self._quote(frame)}", frame)

    @staticmethod
    def _quote(frame: Frame) -> str:
        s = frame.raw.decode("utf-8", errors="replace")
        return repr(s if len(s) <= 200 else s[:200] + "...")

    def _report(self, status: str, message: str, frame: Frame) -> None:
        self.counts[status] += 1
        if self.counts[status] <= self.max_findings:
            (self.failed if status == "fail" else self.warned)("TRANSPORT-003", message, [frame])
        else:
            self.extra[status].append(frame.seq)

    def finish(self) -> None:
        for status, seqs in self.extra.items():
            if seqs:
                what = "non-JSON-RPC" if status == "fail" else "empty"
                (self.failed if status == "fail" else self.warned)(
                    "TRANSPORT-003", f"{len(seqs)} more {what} line(s) on stdout (not listed one by one).", seqs[:20])
        if self.lines and not self.counts["fail"] and not self.counts["warn"]:
            self.passed("TRANSPORT-003", f"all {self.lines} line(s) the target wrote to stdout were JSON-RPC 2.0 "
                        "messages.")


class BatchLineMonitor(Monitor):
    """TRANSPORT-013: the agent writes no batch array. The suite reads a batch's members all the same (the
    peer dispatches them, the reading expands them), so one wrongly framed line costs one finding, never the
    rest of the run: the first array of a test is failed with its frame, the others counted in one line. Whether
    the rule applies is the revision's (protocol/revisions.json: the Preview's; v2 as released still described
    batches), as for every rule."""

    rules = ("TRANSPORT-013",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lines = 0
        self.batches: list[Frame] = []
        self.batch_sent: set[int] = set()  # connections on which the suite wrote a batch array

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        if frame.direction == SENT and isinstance(frame.msg, list):
            self.batch_sent.add(frame.conn)
        if frame.direction != RECEIVED or frame.problem is not None:
            return
        self.lines += 1
        if not isinstance(frame.msg, list):
            return
        if frame.conn in self.batch_sent and all(classify(x) == RESPONSE for x in frame.msg):
            return  # answers to the suite's batch in an array: the older reading TRANSPORT-012 notes
        self.batches.append(frame)
        if len(self.batches) == 1:
            what = ", ".join(_member(x) for x in frame.msg[:4]) + (", ..." if len(frame.msg) > 4 else "")
            self.failed("TRANSPORT-013", f"the agent wrote a JSON-RPC batch array of {len(frame.msg)} message(s) "
                        f"on one line (t={frame.t:.2f}: {what}); ACP v2 has no batches, a v2 client refuses the "
                        "array whole and never reads these messages.", [frame])

    def finish(self) -> None:
        if not self.lines:
            return
        n = len(self.batches)
        if n > 1:
            self.failed("TRANSPORT-013", f"{n - 1} more batch array(s) in this test (frames "
                        f"{', '.join('#%d' % f.seq for f in self.batches[1:11])}{', ...' if n > 11 else ''}).",
                        self.batches[1:11])
        elif not n:
            self.passed("TRANSPORT-013", f"all {self.lines} line(s) the agent wrote held one message each, no "
                        "batch array.")


def _member(x: Any) -> str:
    """A batch member as a reader names it: its method (and session/update kind), or a response's id."""
    if not isinstance(x, dict):
        return js(x, 30)
    if "method" in x:
        update = (x.get("params") or {}).get("update") if isinstance(x.get("params"), dict) else None
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        return f"{x['method']} {kind}" if isinstance(kind, str) else str(x["method"])
    return f"a response (id {js(x.get('id'), 30)})"


LIFECYCLE = ("initialize", "auth/login", "session/new", "session/resume", "session/prompt")
FRAGMENT_START = (b"{", b"[", b"}", b"]", b'"')


def _texts(blocks: Any) -> list[str]:
    if not isinstance(blocks, list):
        return []
    return [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _prompt_of(m: Msg) -> Any:
    return m.params.get("prompt") if isinstance(m.params, dict) else None


def _echoes(text: str, got: str) -> bool:
    """Does the echo ``got`` hold ``text`` unchanged, or (a chunk of it) an unchanged part of it?"""
    return text in got or (bool(got) and got in text)


def _nonascii(m: Msg) -> list[str]:
    """The text blocks of a prompt that hold non-ASCII characters (those whose echo can be mangled)."""
    return [t for t in _texts(_prompt_of(m)) if not t.isascii()]


class WireTransportMonitor(FrameLogMixin, ConnMonitor):
    side = "both"  # judges the target's frames in either role (ctx.target_side)
    # TRANSPORT-005/007/008 (the JSON-RPC 2.0 batch reading) are retired: ACP v2 has no batches (retired.json);
    # TRANSPORT-012 judges a batch as v2 reads it, and the older reading is noted, never failed
    rules = ("TRANSPORT-001", "TRANSPORT-002", "TRANSPORT-006", "TRANSPORT-009", "TRANSPORT-010", "TRANSPORT-011",
             "TRANSPORT-012")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lines = 0
        self.bad002 = False
        self.bad001 = False
        self.nonascii = 0

    # -- every received line ----------------------------------------------------------------
    def on_frame(self, frame: Frame, rpc) -> None:
        if frame.direction == RECEIVED:
            self._line(frame)
        super().on_frame(frame, rpc)

    def _line(self, f: Frame) -> None:
        self.lines += 1
        if f.problem is not None and "UTF-8" in f.problem:
            self.bad001 = True
            self.failed("TRANSPORT-001", f"the {self.ctx.target_side} wrote a line that is {f.problem}: "
                        f"{f.raw[:120]!r}.", [f])
            return
        if not f.raw.isascii():
            self.nonascii += 1
        if f.problem is not None:
            s = f.raw.strip()
            if s and (s.startswith(FRAGMENT_START) or s.endswith((b",", b"{", b"[")) or b'": ' in s):
                self.bad002 = True
                self.failed("TRANSPORT-002", f"the {self.ctx.target_side} wrote a line that is a fragment of JSON, not one complete "
                            f"message (a JSON value spread over several lines?): {f.text(160)!r}.", [f])
            return  # other non-JSON output is TRANSPORT-003's
        if not isinstance(f.msg, (dict, list)):
            self.bad002 = True
            self.failed("TRANSPORT-002", f"the {self.ctx.target_side} wrote a line holding the JSON value {f.text(80)}, not an "
                        "object or array.", [f])
        elif (f.detail or {}).get("unterminated"):
            self.warned("TRANSPORT-002", f"the {self.ctx.target_side}'s last line was not terminated by \\n before its stdout "
                        f"closed: {f.text(120)!r}.", [f])
        if isinstance(f.msg, list):
            for x in f.msg:
                if isinstance(x, dict) and x.get("method") in LIFECYCLE:
                    self.warned("TRANSPORT-010", f"the {self.ctx.target_side} sent {x.get('method')!r} inside a batch.", [f])
                    break

    # -- per connection ---------------------------------------------------------------------
    def analyze(self, log: ConnLog) -> None:
        sent, stray = attribute(self._frames_of(log.conn), log.msgs)
        for s in sent:
            if s.kind == "empty":
                self._judge_empty(s)
            elif s.kind == "parse" and s.batch_like:
                self._judge_parse_batch(s)
            elif s.kind == "batch":
                self._judge_batch(log, s, stray)
        self._roundtrip(log)
        self._shutdown(log)

    def undecided(self, rule: str, what: str, s: Sent) -> bool:
        if not s.ambiguous:
            return False
        self.noted(rule, f"{what}: the id-null answer at t={s.maybe[0].t:.2f} may be its answer but could not be "
                   "paired with it (another line was also awaiting an answer, or it came after a later request had "
                   "been answered); not judged.", fr([s.maybe[0], s.frame]))
        return True

    def _judge_empty(self, s: Sent) -> None:
        # TRANSPORT-006 (the older text) and TRANSPORT-012 (v2: a batch, [] included, is one invalid request) read
        # [] alike, as JSON-RPC 2.0 section 6 does: one -32600 object with id null, never an array
        if self.undecided("TRANSPORT-006", "the empty batch []", s):
            return
        for rule in ("TRANSPORT-006", "TRANSPORT-012"):
            if not s.answers:
                self.failed(rule, "the suite wrote the empty batch [] and got no answer; a single -32600 "
                            "object with id null is required.", [s.frame])
                continue
            a = s.answers[0]
            why = null_error(a.msg, -32600)
            if why is None:
                self.pass_few(rule, "the empty batch [] got a single -32600 object with id null.", [a, s.frame])
            else:
                self.failed(rule, f"the empty batch [] was answered with {why}.", [a, s.frame])

    def _judge_parse_batch(self, s: Sent) -> None:
        quoted = js(s.frame.raw.decode("utf-8", "replace"), 90)
        if self.undecided("TRANSPORT-009", f"the broken batch {quoted}", s):
            return
        if not s.answers:
            self.failed("TRANSPORT-009", f"the suite wrote the broken batch {quoted} and got no -32700 answer.",
                        [s.frame])
            return
        a = s.answers[0]
        why = null_error(a.msg, -32700)
        if why is None:
            self.pass_few("TRANSPORT-009", f"the broken batch {quoted} got one -32700 object with id null.",
                          [a, s.frame])
        else:
            self.failed("TRANSPORT-009", f"the broken batch {quoted} was answered with {why}.", [a, s.frame])

    def _judge_batch(self, log: ConnLog, s: Sent, stray: list) -> None:
        """TRANSPORT-012: v2 removed batching (ACP crate v1.14.0, #2625), so a batch is one invalid request:
        one -32600 with id null. Members answered one by one are the older JSON-RPC 2.0 reading: noted."""
        reqs, invalid, notes = batch_owed(s.value)
        label = f"the batch of {len(s.value)} ({reqs} request(s), {invalid} invalid, {notes} notification(s))"
        answers = list(s.answers) + [f for f, note in stray if note is s and f not in s.answers]
        members = [m for m in log.msgs if m.direction == SENT and m.frame is s.frame and m.index is not None]
        served = [r for m in members for r in m.responses]  # answers paired with a member's id
        refusals = [a for a in answers if a not in served and null_error(a.msg, -32600) is None]
        older = served or [a for a in answers if isinstance(a.msg, list)]
        if older and len(refusals) <= invalid and not any(isinstance(a.msg, list) for a in answers):
            # answered one by one, each invalid entry gets its own -32600 with id null (JSON-RPC 2.0 § 6):
            # those refusals are the members' answers, not a refusal of the whole batch
            refusals = []
        if older and refusals:
            self.failed("TRANSPORT-012", f"{label} was both refused as a whole ({js(refusals[0].msg, 120)}) and "
                        f"served member by member ({js(older[0].msg, 120)}): one reading or the other, not both.",
                        fr([refusals[0], older[0], s.frame]))
        elif older:  # a legal choice of this target: the v2 rule was not exercised, nothing failed
            self.not_exercised("TRANSPORT-012", f"{label} was answered member by member ({js(older[0].msg, 120)}): "
                               "the older JSON-RPC 2.0 batch reading. ACP v2 removed batches: a batch is one invalid "
                               "request, answered by a single -32600 with id null (not exercised, not failed).",
                               fr([older[0], s.frame]))
        elif len(refusals) == 1:
            self.pass_few("TRANSPORT-012", f"{label} was refused as one invalid request: a single -32600 with id "
                          "null, no member served.", [refusals[0], s.frame])
        elif refusals:
            self.not_exercised("TRANSPORT-012", f"{label} got {len(refusals)} -32600 answers with id null (one per "
                               "invalid entry, the older JSON-RPC 2.0 reading; v2 expects a single one): not "
                               "exercised, not failed.", fr([refusals[0], s.frame]))
        elif s.maybe:
            self.noted("TRANSPORT-012", f"{label}: an id-null answer at t={s.maybe[0].t:.2f} may be its answer but "
                       "could not be paired with it; not judged.", fr([s.maybe[0], s.frame]))
        elif answers:
            self.failed("TRANSPORT-012", f"{label} was answered with {null_error(answers[0].msg, -32600)}; "
                        "a single -32600 with id null is expected.", fr([answers[0], s.frame]))
        elif reqs or invalid:
            self.failed("TRANSPORT-012", f"{label} got no answer at all: ACP v2 answers a batch with one -32600 "
                        "(id null), and even the older JSON-RPC 2.0 reading answers its requests and invalid "
                        "entries.", [s.frame])
        else:
            self.not_exercised("TRANSPORT-012", f"{label} holds only notifications and got no answer: the older "
                               "JSON-RPC 2.0 reading (an all-notification batch produces no output); ACP v2 expects "
                               "one -32600 (not exercised, not failed).", [s.frame])

    def _roundtrip(self, log: ConnLog) -> None:
        prompts: dict[Any, list[Msg]] = {}  # sessionId -> the suite's prompts, in order
        by_message: dict[Any, Msg] = {}  # messageId of an accepted prompt -> that prompt
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST and m.method == "session/prompt":
                prompts.setdefault(m.session_id if isinstance(m.session_id, str) else None, []).append(m)
                mid = next((r.result.get("messageId") for r in m.responses if r.ok and isinstance(r.result, dict)), None)
                if isinstance(mid, str):
                    by_message[mid] = m
        if not any(_nonascii(p) for ps in prompts.values() for p in ps):
            return
        for m in log.msgs:
            su = session_update(m)
            if su is None or su[1].get("sessionUpdate") not in ("user_message", "user_message_chunk"):
                continue
            sid, upd = su
            content = upd.get("content")
            got = "".join(_texts(content if isinstance(content, list) else [content]))
            # judged against the prompt it echoes (by its messageId, else the prompts of the session before
            # it whose text it holds), not against every prompt: a generated prompt text may hold "Ã" itself
            mid = upd.get("messageId")
            echoed = by_message.get(mid) if isinstance(mid, str) else None
            cands = [echoed] if echoed is not None else [p for p in prompts.get(sid, []) if p.order < m.order]
            cands = [p for p in cands if any(_echoes(t, got) for t in _nonascii(p))] or cands
            for rq in cands:
                for t in _nonascii(rq):
                    if _echoes(t, got):
                        self.pass_few("TRANSPORT-001", f"the non-ASCII prompt text {t!r} came back unchanged in the "
                                      "user message.", [m, rq])
                    elif "\ufffd" in got or any(x in got for x in ("Ã", "â\x9c", "ä½")):
                        self.failed("TRANSPORT-001", f"the prompt text {t!r} came back as {got!r}: its code points "
                                    "were not preserved.", fr([m, rq]))

    def _shutdown(self, log: ConnLog) -> None:
        closed = next((e for e in log.events if e.event == EV_STDIN_CLOSED), None)
        if closed is None:
            return
        exited = next((e for e in log.events if e.event == EV_EXIT and e.t >= closed.t), None)
        if exited is None:
            return
        rc = (exited.detail or {}).get("returncode")
        took = exited.t - closed.t
        if isinstance(rc, int) and rc >= 0:
            self.pass_few("TRANSPORT-011", f"the agent exited (status {rc}) {secs(took)} after the suite closed its "
                          "stdin.", [exited, closed], limit=1)
        elif took >= 5.0:
            self.warned("TRANSPORT-011", f"the agent had not exited {secs(took)} after its stdin was closed.",
                        [exited, closed])
        else:
            self.noted("TRANSPORT-011", f"the agent did not exit within the suite's grace of {secs(took)} after its "
                       f"stdin was closed and was {(exited.detail or {}).get('status', 'stopped')}; the rule allows "
                       "5 s, which this run did not wait for.", [exited, closed])

    def finish_test(self) -> None:
        if self.lines and not self.bad001:
            self.passed("TRANSPORT-001", f"all {self.lines} line(s) the {self.ctx.target_side} wrote decoded as UTF-8"
                        f"{f' ({self.nonascii} with non-ASCII bytes)' if self.nonascii else ''}.")
        if self.lines and not self.bad002:
            self.passed("TRANSPORT-002", f"all {self.lines} line(s) the {self.ctx.target_side} wrote held one complete JSON object "
                        "or array.")
        if self.lines:
            self.pass_few("TRANSPORT-010", f"the {self.ctx.target_side} sent no lifecycle-sensitive message inside a batch.", [],
                          limit=1)
