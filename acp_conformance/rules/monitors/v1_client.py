"""ACP v1, the client side (the suite plays a v1 agent): what a v1 client asks for and in what order, the content
it sends, the capabilities it respects, its answers to permission requests after a cancel, the files it writes and
the lines it writes (https://agentclientprotocol.com/protocol/v1/overview). Here the client's messages are the
received ones and the suite's (the agent's) the sent ones. A rule whose situation the client never creates (it
never loads a session, never cancels, is never asked to write a file) gets no finding: not exercised."""

from __future__ import annotations

import re

from ...wire.transcript import RECEIVED, SENT, Frame
from ..monitor import INVALID, NOTIFICATION, REQUEST, RESPONSE, Rpc, classify
from ._common import js
from ._v1 import V1Monitor, error_of, first_answer, is_int, params, result_of

# the content block types of v1 (https://agentclientprotocol.com/protocol/v1/content) and the promptCapabilities
# flag each needs; text and resource_link need none
BLOCK_CAPS = {"text": None, "resource_link": None, "image": "image", "audio": "audio", "resource": "embeddedContext"}
# client requests an agent must have advertised under agentCapabilities.sessionCapabilities
SESSION_CAPS = {"session/list": "list", "session/resume": "resume", "session/close": "close",
                "session/delete": "delete"}
_ABSOLUTE = re.compile(r"^(/|[A-Za-z]:[\\/]|\\\\)")  # POSIX, a Windows drive, a UNC path


def is_absolute(path) -> bool:
    return isinstance(path, str) and bool(_ABSOLUTE.match(path))


def client_requests(msgs, method: str | None = None):
    return (m for m in msgs if m.kind == REQUEST and m.direction == RECEIVED and (method is None or m.method == method))


def answer_order(req):
    """The transcript position of a request's first answer (None: never answered)."""
    ans = first_answer(req)
    return ans.order if ans is not None else None


class V1ClientSetupMonitor(V1Monitor):
    """Initialization, session setup and prompts, as the client sends them."""

    side = "client"
    rules = ("V1-INIT-005", "V1-CLIENT-001", "V1-SESSION-004", "V1-SESSION-005", "V1-CLIENT-002",
             "V1-CLIENT-004")

    def judge(self, conn, msgs) -> None:
        init = next(client_requests(msgs, "initialize"), None)
        if init is not None:
            v = params(init).get("protocolVersion")
            if is_int(v):
                self.passed("V1-INIT-005", f"the client's initialize asked for protocolVersion {v}", [init.frame])
            else:
                self.failed("V1-INIT-005", f"the client's initialize carries protocolVersion {js(v, 40)}, not an "
                                           "integer", [init.frame])
        ready = answer_order(init) if init is not None and isinstance(result_of(first_answer(init)), dict) else None
        caps = agent_init_result(msgs)
        agent_caps = caps.get("agentCapabilities") if isinstance(caps.get("agentCapabilities"), dict) else {}
        known: set = set()  # sessions the client may prompt: created for it, or that it asked to load or resume
        for m in msgs:
            if m.direction == SENT and m.kind == RESPONSE and isinstance(result_of(m), dict) \
                    and isinstance(result_of(m).get("sessionId"), str):  # session/new, or an unstable fork
                known.add(js(result_of(m)["sessionId"]))
            if m.kind != REQUEST or m.direction != RECEIVED or not isinstance(m.method, str):
                continue
            p = params(m)
            if m.method == "session/new":
                if ready is None or m.order < ready:
                    self.failed("V1-CLIENT-001", "session/new before the connection was initialized (no initialize "
                                                 "answered before it)", [m.frame] + ([init.frame] if init else []))
                else:
                    self.passed("V1-CLIENT-001", "session/new after initialize was answered", [m.frame])
            if m.method in ("session/new", "session/load"):
                self._cwd(m, p.get("cwd"))
            if m.method in ("session/load", "session/resume"):
                known.add(js(p.get("sessionId")))
            if m.method == "session/load":
                loads = agent_caps.get("loadSession") is True
                (self.passed if loads else self.failed)(
                    "V1-SESSION-004", f"session/load while the agent's agentCapabilities.loadSession was "
                                      f"{js(agent_caps.get('loadSession'))}", [m.frame])
            if m.method in SESSION_CAPS:
                self._session_cap(m, agent_caps)
            if m.method == "session/prompt":
                sid = p.get("sessionId")
                if js(sid) in known:
                    self.passed("V1-CLIENT-001", f"session/prompt in session {js(sid, 60)}, set up before", [m.frame])
                else:
                    self.failed("V1-CLIENT-001", f"session/prompt in session {js(sid, 60)}, which no session/new "
                                                 "answer created and no session/load or session/resume set up before",
                                [m.frame])
                self._blocks(m, p.get("prompt"), agent_caps)

    def _cwd(self, m, cwd) -> None:
        if is_absolute(cwd):
            self.passed("V1-SESSION-005", f"{m.method} with the absolute cwd {js(cwd, 80)}", [m.frame])
        else:
            self.failed("V1-SESSION-005", f"{m.method} with cwd {js(cwd, 80)}, not an absolute path", [m.frame])

    def _session_cap(self, m, agent_caps) -> None:
        name = SESSION_CAPS[m.method]
        session_caps = agent_caps.get("sessionCapabilities")
        value = session_caps.get(name) if isinstance(session_caps, dict) else None
        if value is None or value is False:
            self.failed("V1-CLIENT-004", f"{m.method} while the agent's agentCapabilities.sessionCapabilities."
                                         f"{name} was not advertised ({js(session_caps, 120)})", [m.frame])
        else:
            self.passed("V1-CLIENT-004", f"{m.method}, advertised by sessionCapabilities.{name}", [m.frame])

    def _blocks(self, m, blocks, agent_caps) -> None:
        if not isinstance(blocks, list):
            return
        prompt_caps = agent_caps.get("promptCapabilities")
        prompt_caps = prompt_caps if isinstance(prompt_caps, dict) else {}
        kinds = [b.get("type") for b in blocks if isinstance(b, dict)]
        unadvertised = sorted({k for k in kinds if k in BLOCK_CAPS and BLOCK_CAPS[k] is not None
                               and prompt_caps.get(BLOCK_CAPS[k]) is not True})
        unknown = sorted({js(k, 40) for k in kinds if k not in BLOCK_CAPS})
        if unadvertised:
            self.failed("V1-CLIENT-002", f"a prompt with {', '.join(unadvertised)} blocks, while the agent's "
                                         f"promptCapabilities were {js(prompt_caps, 120)} (needed: "
                        f"{', '.join(BLOCK_CAPS[k] for k in unadvertised)})", [m.frame])
        elif unknown:  # not a v1 content type: an extension, or a later release; not this rule's to fail
            self.noted("V1-CLIENT-002", "a prompt with blocks of a type the v1 pages do not name: "
                                        f"{', '.join(unknown)}", [m.frame])
        elif kinds:
            self.passed("V1-CLIENT-002", f"a prompt of {', '.join(sorted(set(kinds)))} blocks, each allowed",
                        [m.frame])


def agent_init_result(msgs) -> dict:
    """The suite's (the agent's) answer to the client's initialize ({} when none)."""
    for m in client_requests(msgs, "initialize"):
        r = result_of(first_answer(m))
        if isinstance(r, dict):
            return r
    return {}


class V1ClientTurnMonitor(V1Monitor):
    """The client's answers to the agent's requests: permissions pending at a cancel, files it writes, terminal
    output it truncates."""

    side = "client"
    rules = ("V1-CANCEL-005", "V1-FS-003", "V1-TERM-003")

    def judge(self, conn, msgs) -> None:
        for m in msgs:
            if m.kind == NOTIFICATION and m.direction == RECEIVED and m.method == "session/cancel":
                self._cancel(m, msgs)
        writes = [m for m in msgs if m.kind == REQUEST and m.direction == SENT and m.method == "fs/write_text_file"]
        for w in writes:
            self._write(w, msgs)
        for m in msgs:
            if m.kind == REQUEST and m.direction == SENT and m.method == "terminal/output":
                self._output(m)

    def _output(self, req) -> None:
        """Truncated output that starts with U+FFFD (the replacement of a cut character's remaining bytes) was cut
        inside a character; other U+FFFD may be the command's own invalid output."""
        ans = first_answer(req)
        res = result_of(ans)
        if not isinstance(res, dict) or res.get("truncated") is not True or not isinstance(res.get("output"), str):
            return
        if res["output"].startswith("\ufffd"):
            self.failed("V1-TERM-003", f"truncated terminal output starts with U+FFFD, the rest of a character cut in "
                                       f"two: {js(res['output'][:40])}", [ans.frame, req.frame])
        else:
            self.passed("V1-TERM-003", f"truncated terminal output starts with a whole character: "
                                       f"{js(res['output'][:40])}", [ans.frame])

    def _cancel(self, cancel, msgs) -> None:
        sid = params(cancel).get("sessionId")
        for req in msgs:
            if req.kind != REQUEST or req.direction != SENT or req.method != "session/request_permission" \
                    or req.order > cancel.order or params(req).get("sessionId") != sid:
                continue
            ans = first_answer(req)
            if ans is not None and ans.order < cancel.order:
                continue  # answered before the cancel: not pending
            if ans is None:
                self.failed("V1-CANCEL-005", f"the permission request {js(req.msg.get('id'))} pending when the client "
                                             f"cancelled session {js(sid, 60)} was never answered",
                            [cancel.frame, req.frame])
                continue
            outcome = result_of(ans).get("outcome") if isinstance(result_of(ans), dict) else None
            if isinstance(error_of(ans), dict) and error_of(ans).get("code") == -32800:
                self.noted("V1-CANCEL-005", "a permission request pending at the cancel was answered with the error "
                                            "-32800 (request cancelled, as after a $/cancel_request), not with the "
                                            "cancelled outcome", [ans.frame, cancel.frame])
            elif isinstance(outcome, dict) and outcome.get("outcome") == "cancelled":
                self.passed("V1-CANCEL-005", "a permission request pending at the cancel was answered with the "
                                             "cancelled outcome", [ans.frame, cancel.frame])
            else:
                got = js(error_of(ans), 120) if error_of(ans) is not None else js(result_of(ans), 120)
                self.failed("V1-CANCEL-005", f"a permission request pending when the client cancelled was answered "
                                             f"{got}, not {{\"outcome\": {{\"outcome\": \"cancelled\"}}}}",
                            [ans.frame, cancel.frame, req.frame])

    def _write(self, w, msgs) -> None:
        ans = first_answer(w)
        path = params(w).get("path")
        if ans is None or error_of(ans) is not None:
            return  # refused (the user said no, outside the workspace): nothing was claimed written
        read = next((m for m in msgs if m.kind == REQUEST and m.direction == SENT and m.method == "fs/read_text_file"
                     and m.order > ans.order and params(m).get("path") == path), None)
        if read is None or first_answer(read) is None:
            return
        back = first_answer(read)
        if error_of(back) is not None:
            self.failed("V1-FS-003", f"fs/write_text_file of {js(path, 80)} was answered with success, yet reading "
                                     f"the file back failed: {js(error_of(back), 120)}",
                        [back.frame, ans.frame, w.frame])
            return
        wrote = str(params(w).get("content", "")).replace("\r\n", "\n")
        got = result_of(back).get("content") if isinstance(result_of(back), dict) else None
        if isinstance(got, str) and got.replace("\r\n", "\n") == wrote:
            self.passed("V1-FS-003", f"fs/write_text_file created {js(path, 80)}: reading it back gives what was "
                                     "written", [back.frame, w.frame])
        else:  # someone else (the user, a formatter) may have changed it in between
            self.noted("V1-FS-003", f"reading {js(path, 80)} back after the write gave {js(got, 80)}, not what was "
                                    "written", [back.frame, w.frame])


class V1ClientWireMonitor(V1Monitor):
    """What the client writes to the agent's stdin: one JSON-RPC message per line
    (https://agentclientprotocol.com/protocol/v1/transports)."""

    side = "client"
    rules = ("V1-CLIENT-003",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.lines: list[Frame] = []
        self.bad = False

    def on_frame(self, frame: Frame, rpc: Rpc | None) -> None:
        super().on_frame(frame, rpc)
        if frame.direction != RECEIVED:
            return
        self.lines.append(frame)
        items = frame.msg if isinstance(frame.msg, list) else [frame.msg]
        if frame.problem is not None:
            why = f"is {frame.problem}"
        elif isinstance(frame.msg, list) and not frame.msg or any(classify(x) == INVALID for x in items):
            why = "is not a JSON-RPC 2.0 message"
        else:
            return
        self.bad = True
        self.failed("V1-CLIENT-003", f"the client wrote a line to the agent's stdin that {why}: {frame.text(160)!r}",
                    [frame])

    def finish(self) -> None:
        if self.lines and not self.bad:
            self.passed("V1-CLIENT-003", f"each of the client's {len(self.lines)} lines was one JSON-RPC message",
                        [self.lines[0]])
