"""Agent-owned terminals: terminal_update / terminal_output_chunk, and terminal/cancel.

Per connection a model of each terminal (by session and terminalId) is kept from the agent's
updates: its command, whether it has exited (a concrete exitStatus) and its stored
``capabilities.cancel`` (a ``capabilities`` field replaces the stored one). ``terminal/cancel``
requests the suite sends are judged against the model as it stood when the request was sent.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from ...wire.transcript import SENT
from ..monitor import NOTIFICATION, REQUEST
from ._common import (CancelCapable, ConnLog, ConnMonitor, Msg, fr, is_abs_path, js, secs, session_update,
                      session_update_kind)
from .tool import active_sessions


def strict_b64(s: Any) -> bool:
    if not isinstance(s, str):
        return False
    try:
        base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return False
    return len(s) % 4 == 0


@dataclass(eq=False)
class Term(CancelCapable):
    command: Any = None
    exited: Msg | None = None


class TerminalMonitor(ConnMonitor):
    rules = ("TERM-001", "TERM-002", "TERM-003", "TERM-004", "TERM-005", "TERM-006", "TERM-007", "TERM-008")

    def analyze(self, log: ConnLog) -> None:
        window = float(self.opt("terminal_cancel_window", 30.0))
        terms: dict[tuple[str, str], Term] = {}
        cancels: list[tuple[Msg, Term | None, bool]] = []
        for m in log.msgs:
            if m.direction == SENT and m.kind == REQUEST and m.method == "terminal/cancel":
                p = m.params if isinstance(m.params, dict) else {}
                t = terms.get((p.get("sessionId"), p.get("terminalId")))
                cancels.append((m, t, t is not None and t.exited is None and t.cancel is not None))
                continue
            su = session_update_kind(m)
            if su is None:
                continue
            sid, upd, kind = su
            if kind not in ("terminal_update", "terminal_output_chunk"):
                continue
            tid = upd.get("terminalId")
            if not isinstance(tid, str) or not tid:
                self.failed("TERM-001", f"a {kind} at t={m.t:.2f} has terminalId {js(tid)}.", fr([m]))
            elif kind == "terminal_output_chunk":
                self._on_output_chunk(m, upd, tid, terms.get((sid, tid)))
            else:
                self._on_terminal_update(m, upd, sid, tid, terms)
        for req, t, cancellable in cancels:
            self._judge_cancel(log, req, t, cancellable, window)

    def _on_output_chunk(self, m: Msg, upd: dict, tid: str, t: Term | None) -> None:
        """TERM-003: the chunk's data is strict base64; TERM-004: no output after the terminal exited."""
        if strict_b64(upd.get("data")):
            self.pass_few("TERM-003", f"terminal_output_chunk for {tid!r} is valid base64 on its own.", [m])
        else:
            self.failed("TERM-003", f"terminal_output_chunk for {tid!r} at t={m.t:.2f} has data "
                        f"{js(upd.get('data'), 80)}, not strict base64.", fr([m]))
        if t is not None and t.exited is not None:
            self.warned("TERM-004", f"terminal_output_chunk for {tid!r} at t={m.t:.2f} after its exitStatus "
                        f"(t={t.exited.t:.2f}).", fr([m, t.exited]))

    def _on_terminal_update(self, m: Msg, upd: dict, sid: str, tid: str, terms: dict[tuple[str, str], Term]) -> None:
        """TERM-001 (id not reused), TERM-002 (command, absolute cwd), TERM-003 (output.data), then the exit."""
        t = terms.get((sid, tid))
        if t is None:
            t = terms[(sid, tid)] = Term(sid, tid, m)
            if isinstance(upd.get("command"), str):
                self.pass_few("TERM-002", f"the first terminal_update of {tid!r} names its command "
                              f"{upd['command']!r}.", [m], key="command")
            else:
                self.warned("TERM-002", f"the first terminal_update of {tid!r} (t={m.t:.2f}) has no command.",
                            fr([m]))
        elif t.exited is not None:
            cmd = upd.get("command")
            if (cmd is not None and t.command is not None and cmd != t.command) or \
                    ("exitStatus" in upd and upd.get("exitStatus") is None):
                self.failed("TERM-001", f"terminal {tid!r} exited at t={t.exited.t:.2f}, then a terminal_update "
                            f"at t={m.t:.2f} {'sets command ' + js(cmd) if cmd is not None and cmd != t.command else 'clears exitStatus'}"
                            ": the id is reused for another terminal.", fr([m, t.exited]))
                return
        self.pass_few("TERM-001", f"terminal_update for {tid!r} (string terminalId, not reused).", [m])
        if upd.get("cwd") is not None:
            if is_abs_path(upd.get("cwd")):
                self.pass_few("TERM-002", f"terminal {tid!r}: cwd {upd['cwd']!r} is absolute.", [m], key="cwd")
            else:
                self.failed("TERM-002", f"terminal {tid!r} at t={m.t:.2f}: cwd {js(upd.get('cwd'))} is not "
                            "an absolute path.", fr([m]))
        out = upd.get("output")
        if isinstance(out, dict) and "data" in out:
            if strict_b64(out.get("data")):
                self.pass_few("TERM-003", f"terminal {tid!r}: output.data is valid base64.", [m])
            else:
                self.failed("TERM-003", f"terminal {tid!r} at t={m.t:.2f}: output.data {js(out.get('data'), 80)} "
                            "is not strict base64.", fr([m]))
        if upd.get("command") is not None:
            t.command = upd.get("command")
        self._on_exit_and_capabilities(m, upd, tid, t)

    def _on_exit_and_capabilities(self, m: Msg, upd: dict, tid: str, t: Term) -> None:
        """TERM-004: the exitStatus shape; TERM-008: an exited terminal withdraws capabilities.cancel."""
        ex = upd.get("exitStatus")
        if ex is not None:
            code = ex.get("exitCode") if isinstance(ex, dict) else None
            sig = ex.get("signal") if isinstance(ex, dict) else None
            if not isinstance(ex, dict) or (code is not None and (not isinstance(code, int) or isinstance(code, bool))) \
                    or (sig is not None and not isinstance(sig, str)):
                self.failed("TERM-004", f"terminal {tid!r} at t={m.t:.2f}: exitStatus {js(ex)} is not "
                            "{exitCode: integer|null, signal: string|null}.", fr([m]))
            else:
                self.pass_few("TERM-004", f"terminal {tid!r} exited with {js(ex)}.", [m])
            if t.exited is None:
                t.exited = m
        t.store_capabilities(upd)
        if t.exited is not None and t.had_cancel:
            if t.cancel is not None:
                self.warned("TERM-008", f"terminal {tid!r} reported exitStatus but still advertises "
                            f"capabilities.cancel (t={m.t:.2f}).", fr([m, t.exited]))
            elif m is t.exited or "capabilities" in upd:
                self.pass_few("TERM-008", f"terminal {tid!r} exited and withdrew capabilities.cancel.", [m])

    def _judge_cancel(self, log: ConnLog, req: Msg, t: Term | None, cancellable: bool, window: float) -> None:
        p = req.params if isinstance(req.params, dict) else {}
        sid, tid = p.get("sessionId"), p.get("terminalId")
        resp = req.responses[0] if req.responses else None
        label = f"terminal/cancel id={js(req.id)} for {js(tid)}"
        if resp is None:
            return
        if not cancellable:
            self._judge_not_cancellable(log, req, resp, t, sid, label)
            return
        later = [m for m in log.msgs if m.order > req.order]
        exits = [m for m in later if (su := session_update(m)) and su[0] == sid
                 and su[1].get("sessionUpdate") == "terminal_update" and su[1].get("terminalId") == tid
                 and su[1].get("exitStatus") is not None]
        idles = [m for m in later if (su := session_update(m)) and su[0] == sid
                 and su[1].get("sessionUpdate") == "state_update" and su[1].get("state") == "idle"]
        if not self._judge_cancel_ends_terminal(log, req, resp, label, exits, idles, window):
            return
        self._judge_cancel_scope(log, req, resp, sid, tid, label, later, idles)

    def _judge_not_cancellable(self, log: ConnLog, req: Msg, resp: Msg, t: Term | None, sid: Any,
                               label: str) -> None:
        """TERM-006: cancelling an unknown, exited or non-cancellable terminal of a live session is -32602."""
        if sid not in active_sessions(log, req):
            return
        why = ("an unknown terminal" if t is None else "an exited terminal" if t.exited is not None
               else "a terminal that does not advertise capabilities.cancel")
        if resp.error_code == -32602:
            self.pass_few("TERM-006", f"{label} ({why}) was rejected with -32602.", [resp, req], key=why)
        else:
            self.failed("TERM-006", f"{label} ({why}) was answered "
                        f"{'with ' + js(resp.result) if resp.ok else 'with error ' + js(resp.error_code)} "
                        "instead of -32602.", fr([resp, req]))

    def _judge_cancel_ends_terminal(self, log: ConnLog, req: Msg, resp: Msg, label: str, exits: list[Msg],
                                    idles: list[Msg], window: float) -> bool:
        """TERM-005: an accepted cancel is followed by the terminal's exitStatus. False when not accepted."""
        if not resp.ok or not isinstance(resp.result, dict):
            if not resp.ok and exits and exits[0].order < resp.order:
                self.noted("TERM-005", f"{label}: the terminal exited before the answer (error "
                           f"{js(resp.error_code)}).", fr([resp, req, exits[0]]))
            else:
                self.failed("TERM-005", f"{label} (the terminal advertised capabilities.cancel) was answered "
                            f"{js(resp.error if not resp.ok else resp.result)}.", fr([resp, req]))
            return False
        if exits:
            self.pass_few("TERM-005", f"{label} was answered {js(resp.result)} (t={resp.t:.2f}) and the terminal "
                          f"reported exitStatus {js(exits[0].msg['params']['update']['exitStatus'])} at "
                          f"t={exits[0].t:.2f}.", [exits[0], resp, req])
        elif idles or log.waited(resp.t) >= window:
            self.failed("TERM-005", f"{label} was accepted at t={resp.t:.2f} but no terminal_update with exitStatus "
                        "followed" + (f" before the turn ended (t={idles[0].t:.2f})." if idles
                                      else f" in {secs(log.waited(resp.t))}."), fr([resp, req] + idles[:1]))
        else:
            self.untested("TERM-005", f"{label} was accepted; the connection ended before an exitStatus.",
                          fr([resp, req]))
        return True

    def _judge_cancel_scope(self, log: ConnLog, req: Msg, resp: Msg, sid: Any, tid: Any, label: str,
                            later: list[Msg], idles: list[Msg]) -> None:
        """TERM-007: referencing tool calls are not cancelled by it; the turn is not ended as cancelled by it."""
        end = idles[0] if idles else None
        user = [m for m in later if (end is None or m.order < end.order) and m.direction == SENT
                and m.kind in (REQUEST, NOTIFICATION) and m.session_id == sid
                and m.method in ("session/cancel", "session/close", "session/delete", "tool_call/cancel")]
        refs = set()
        for m in log.msgs:
            su = session_update(m)
            if su and su[0] == sid and su[1].get("sessionUpdate") in ("tool_call_update", "tool_call_content_chunk"):
                c = su[1].get("content")
                items = c if isinstance(c, list) else [c]
                if any(isinstance(i, dict) and i.get("type") == "terminal" and i.get("terminalId") == tid for i in items) \
                        and isinstance(su[1].get("toolCallId"), str):  # any other id is the schema check's
                    refs.add(su[1]["toolCallId"])
        if user:
            return
        for m in later:
            if end is not None and m.order > end.order:
                break
            su = session_update(m)
            if su and su[0] == sid and su[1].get("sessionUpdate") == "tool_call_update" \
                    and isinstance(su[1].get("toolCallId"), str) and su[1]["toolCallId"] in refs \
                    and su[1].get("status") == "cancelled":
                self.failed("TERM-007", f"after {label} the tool call {su[1]['toolCallId']!r} that shows the "
                            f"terminal went 'cancelled' (t={m.t:.2f}) though only the terminal was cancelled.",
                            fr([m, req, resp]))
                return
        if end is not None:
            stop = end.msg["params"]["update"].get("stopReason")
            if stop == "cancelled":
                self.failed("TERM-007", f"after {label} the session went idle with stopReason 'cancelled' "
                            f"(t={end.t:.2f}) though the suite sent no session/cancel.", fr([end, req, resp]))
            else:
                self.pass_few("TERM-007", f"after {label} no referencing tool call was cancelled and the turn "
                              f"ended with {js(stop)} (t={end.t:.2f}).", [end, req])
