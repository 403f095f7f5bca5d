"""The agent-side monitors' test bench: the reference transcripts of WIRE-NOTES section 2 (what a correct
agent does), a player that feeds a transcript to the monitors, and small helpers to edit and read one.
Shared by tests/test_monitors*.py."""

from __future__ import annotations

import json

from acp_conformance.rules.findings import FAIL, WARN
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import ALL_MONITORS
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line


# the monitors of the first rule slice, by class (their modules now hold later families' monitors beside
# them): tests/test_monitors.py and its area modules judge them; every later family has its own tests
_SLICE_CLASSES = {"PromptMonitor", "CancelMonitor", "ResumeMonitor", "ResponseMonitor", "SessionErrorMonitor",
                  "InitializeMonitor", "TransportMonitor"}
SLICE_MONITORS = [c for c in ALL_MONITORS if c.__name__ in _SLICE_CLASSES]
MY_RULES = {r for c in SLICE_MONITORS for r in c.rules}

# --- WIRE-NOTES section 2 transcripts, verbatim ------------------------------------------------
INITIALIZE = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"acp-conformance","title":"ACP Conformance Harness","version":"0.1.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}    # protocolVersion 2 == requested
# --- new connection: client asks for a future version
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":3,"info":{"name":"future-client","version":"9.0.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}    # highest supported <= 3 is 2; not an error
# --- new connection: nothing supported at or below the request
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":0,"info":{"name":"old-client","version":"0.0.1"}}}
A->C {"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"requested":0,"supported":[2]}}}    # connection stays uninitialized; a corrected initialize may follow
# --- new connection: request before initialize
C->A {"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Connection not initialized"}}    # site-doc v2/error: -32600 before initialization
'''

SESSION_NEW = r'''
C->A {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project"}}
A->C {"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_1"}}    # configOptions/availableCommands omitted (if present: arrays, never null)
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"type":"command","name":"help","description":"Show help"}]}}}    # optional
'''

PROMPT = r'''
C->A {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Say hello"}]}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]}}}    # insertion reported (could also follow the response)
A->C {"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}    # same messageId as the user_message
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1","content":{"type":"text","text":"Hello"}}}}    # chunks: single ContentBlock, shared messageId
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1","content":{"type":"text","text":"!"}}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}    # work ended; ready for next prompt
# --- a rejected prompt: error, and no user-message update at all
C->A {"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"_conformance/unknown_block"}]}}
A->C {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unsupported content block type"}}
'''

CANCEL = r'''
C->A {"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Write a long story"}]}}
A->C {"jsonrpc":"2.0","id":4,"result":{"messageId":"msg_u2"}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u2","content":[{"type":"text","text":"Write a long story"}]}}}    # after the response this time: also valid
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a2","content":{"type":"text","text":"Once upon"}}}}
C->A {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}    # no response expected
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a2","content":{"type":"text","text":" a time"}}}}    # allowed: still before the cancelled idle
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}    # never stopReason error, never an error response
# --- variant with a pending permission request
C->A {"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Delete build/"}]}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u3","content":[{"type":"text","text":"Delete build/"}]}}}
A->C {"jsonrpc":"2.0","id":5,"result":{"messageId":"msg_u3"}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","title":"Delete build/","name":"delete_path","kind":"delete","status":"pending"}}}
A->C {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"sess_1","title":"Delete build/?","subject":{"type":"tool_call","toolCall":{"toolCallId":"call_1"}},"options":[{"optionId":"allow","name":"Allow once","kind":"allow_once"},{"optionId":"deny","name":"Reject","kind":"reject_once"}]}}    # agent's own id space
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"requires_action"}}}    # SHOULD
C->A {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}
A->C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}    # SHOULD: cancel the abandoned permission request
C->A {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}    # client answers exactly once
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"cancelled"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}
'''

RESUME_PLAIN = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"acp-conformance","title":"ACP Conformance Harness","version":"0.1.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}
C->A {"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project"}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state, before the response
A->C {"jsonrpc":"2.0","id":1,"result":{}}
'''

RESUME_REPLAY = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"acp-conformance","title":"ACP Conformance Harness","version":"0.1.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}
C->A {"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project","replayFrom":{"type":"_conformance/from_message","messageId":"msg_u2"}}}    # unsupported cursor
A->C {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported replay cursor"}}    # no substitution, no silent resume, no replay_complete
C->A {"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project","replayFrom":{"type":"start"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]}}}    # history
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message","messageId":"msg_a1","content":[{"type":"text","text":"Hello!"}]}}}    # history (materialized message)
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u2","content":[{"type":"text","text":"Write a long story"}]}}}    # history
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message","messageId":"msg_a2","content":[{"type":"text","text":"Once upon a time"}]}}}    # history
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"replay_complete"}}}    # end of history (shape inferred from seed)
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state
A->C {"jsonrpc":"2.0","id":2,"result":{}}
# --- same connection, another session that was created but never prompted: empty history, the marker is still sent
C->A {"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"sess_empty","cwd":"/home/user/project","replayFrom":{"type":"start"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_empty","update":{"sessionUpdate":"replay_complete"}}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_empty","update":{"sessionUpdate":"state_update","state":"idle"}}}
A->C {"jsonrpc":"2.0","id":3,"result":{}}
'''

CLOSE = r'''
C->A {"jsonrpc":"2.0","id":9,"method":"session/close","params":{"sessionId":"sess_empty"}}
A->C {"jsonrpc":"2.0","id":9,"result":{}}    # idle: no extra idle update needed
# --- closing while work is running
C->A {"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Refactor everything"}]}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u4","content":[{"type":"text","text":"Refactor everything"}]}}}
A->C {"jsonrpc":"2.0","id":10,"result":{"messageId":"msg_u4"}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}
C->A {"jsonrpc":"2.0","id":11,"method":"session/close","params":{"sessionId":"sess_1"}}
A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}    # before the close response
A->C {"jsonrpc":"2.0","id":11,"result":{}}    # nothing further for sess_1 on this connection
# --- unknown session
C->A {"jsonrpc":"2.0","id":12,"method":"session/close","params":{"sessionId":"sess_nope"}}
A->C {"jsonrpc":"2.0","id":12,"result":{}}    # preferred; {"error":{"code":-32002,"data":{"sessionId":"sess_nope"}}} tolerated
'''

LIST = r'''
C->A {"jsonrpc":"2.0","id":13,"method":"session/list","params":{}}
A->C {"jsonrpc":"2.0","id":13,"result":{"sessions":[{"sessionId":"sess_1","cwd":"/home/user/project","title":"Say hello","updatedAt":"2026-08-30T12:00:00Z"}],"nextCursor":"c2"}}
C->A {"jsonrpc":"2.0","id":14,"method":"session/list","params":{"cursor":"c2"}}
A->C {"jsonrpc":"2.0","id":14,"result":{"sessions":[{"sessionId":"sess_empty","cwd":"/home/user/project"}]}}    # no nextCursor: end
C->A {"jsonrpc":"2.0","id":15,"method":"session/list","params":{"cwd":"/home/user/other"}}
A->C {"jsonrpc":"2.0","id":15,"result":{"sessions":[]}}
C->A {"jsonrpc":"2.0","id":16,"method":"session/list","params":{"cursor":"not-a-cursor"}}
A->C {"jsonrpc":"2.0","id":16,"error":{"code":-32602,"message":"Invalid cursor"}}
'''

UNKNOWN_METHOD = r'''
C->A {"jsonrpc":"2.0","id":17,"method":"session/frobnicate","params":{}}
A->C {"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}
C->A {"jsonrpc":"2.0","id":"ext-1","method":"_example.com/workspace/buffers","params":{}}
A->C {"jsonrpc":"2.0","id":"ext-1","error":{"code":-32601,"message":"Method not found"}}    # string id echoed
C->A {"jsonrpc":"2.0","method":"_example.com/file_opened","params":{"path":"/home/user/project/a.rs"}}    # no reply
C->A {"jsonrpc":"2.0","method":"$/conformance_probe","params":{}}    # no reply
'''

MALFORMED = r'''
C->A {"jsonrpc":"2.0","id":18,"method":"session/list",    # truncated line
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
C->A {"jsonrpc":"2.0","id":19}    # no method
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}    # echoing id 19 is also accepted
C->A []    # empty batch
A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}    # a single object, not an array
C->A [{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},1]    # batch with an invalid entry
A->C [{"jsonrpc":"2.0","id":20,"result":{"sessions":[]}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]
'''

UNKNOWN_SESSION = r'''
C->A {"jsonrpc":"2.0","id":21,"method":"session/prompt","params":{"sessionId":"sess_nope","prompt":[{"type":"text","text":"hi"}]}}
A->C {"jsonrpc":"2.0","id":21,"error":{"code":-32002,"message":"Session not found","data":{"sessionId":"sess_nope"}}}
C->A {"jsonrpc":"2.0","id":22,"method":"session/set_config_option","params":{"sessionId":"sess_nope","configId":"mode","type":"id","value":"code"}}
A->C {"jsonrpc":"2.0","id":22,"error":{"code":-32002,"message":"Session not found","data":{"sessionId":"sess_nope"}}}
C->A {"jsonrpc":"2.0","id":23,"method":"session/resume","params":{"sessionId":"sess_nope","cwd":"/home/user/project","replayFrom":{"type":"start"}}}
A->C {"jsonrpc":"2.0","id":23,"error":{"code":-32002,"message":"Session not found","data":{"sessionId":"sess_nope"}}}    # no replay_complete
C->A {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_nope"}}    # no reply
'''

# --- a tiny player ------------------------------------------------------------------------------

SESS_EMPTY = r'''
C->A {"jsonrpc":"2.0","id":100,"method":"session/new","params":{"cwd":"/home/user/project"}}
A->C {"jsonrpc":"2.0","id":100,"result":{"sessionId":"sess_empty"}}
'''

INIT2 = "\n".join(INITIALIZE.strip().splitlines()[:2])

# One test's worth of a correct agent: one connection with everything, then two fresh connections
# for the resume transcripts (they carry their own initialize).
BLOCKS = dict(init=INIT2, new=SESSION_NEW, new_empty=SESS_EMPTY, prompt=PROMPT, cancel=CANCEL, list=LIST,
              unknown_method=UNKNOWN_METHOD, malformed=MALFORMED, unknown_session=UNKNOWN_SESSION, close=CLOSE,
              restart1="@start", resume_plain=RESUME_PLAIN, restart2="@start", resume_replay=RESUME_REPLAY)


def base(**over):
    """The composite correct transcript, with some blocks replaced."""
    assert set(over) <= set(BLOCKS), set(over) - set(BLOCKS)
    return "\n".join(b.strip("\n") for b in {**BLOCKS, **over}.values())


def edit(block, old, new, count=1):
    """``block`` with ``old`` replaced by ``new`` (``old`` must occur ``count`` times)."""
    assert block.count(old) == count, (old, block.count(old))
    return block.replace(old, new)


BASE = base()


class Player:
    def __init__(self, monitors=None, **options):
        self.ctx = MonitorContext(target_side="agent", options=options)
        self.ctx.add_monitors(ALL_MONITORS if monitors is None else monitors)
        self.seq = 0
        self.conn = 0
        self.t = 0.0
        self.event("start", argv=["agent"], pid=1)

    def _add(self, direction, raw=b"", msg=None, problem=None, event=None, detail=None, dt=0.05):
        self.t += dt
        f = Frame(self.seq, self.conn, direction, round(self.t, 4), raw, msg, problem, event, detail)
        self.seq += 1
        self.ctx.feed(f)
        return f

    def event(self, name, dt=0.0, **detail):
        if name == "start":
            self.conn += 1
        return self._add(EVENT, event=name, detail=detail or None, dt=dt)

    def sent(self, text, dt=0.05):
        raw = text.encode()
        msg, _problem = parse_line(raw)  # as the peer records a raw line: None when it is not JSON
        return self._add(SENT, raw, msg, dt=dt)

    def received(self, text, dt=0.05):
        raw = text.encode() if isinstance(text, str) else text
        msg, problem = parse_line(raw)
        return self._add(RECEIVED, raw, msg, problem, dt=dt)

    def play(self, script):
        for line in script.splitlines():
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.startswith("# ---"):
                if "new connection" in line:
                    self.event("start", argv=["agent"], pid=self.conn + 1)
                continue
            if line.startswith("@"):
                d = line[1:].strip()
                if d == "start":
                    self.event("start", argv=["agent"], pid=self.conn + 1)
                elif d.startswith("+"):
                    self.t += float(d[1:])
                elif d in ("exit", "eof", "stdin-closed"):
                    self.event(d, **({"returncode": 0, "signal": None} if d == "exit" else {}))
                elif d == "raw" or d.startswith("raw "):
                    self.received(line[5:].encode())
                else:
                    raise ValueError(line)
                continue
            direction, body = line[:4], line[5:]
            body = body.split("    #", 1)[0].rstrip()
            if direction == "C->A":
                self.sent(body)
            elif direction == "A->C":
                self.received(body)
            else:
                raise ValueError(line)
        return self

    def finish(self):
        self.ctx.finish()
        return self.ctx.findings


def run(script, monitors=None, **options):
    return Player(monitors, **options).play(script).finish()


def by_rule(findings):
    out = {}
    for f in findings:
        out.setdefault(f.rule, []).append(f)
    return out


def statuses(findings, rule):
    return [f.status for f in findings if f.rule == rule]


def bad(findings, levels=(FAIL, WARN)):
    return {f.rule for f in findings if f.status in levels}


def change(script, old, new, count=1):
    assert script.count(old) == count, (old, script.count(old))
    return script.replace(old, new)


def assert_fails(findings, rule, also=(), levels=(FAIL,)):
    got = bad(findings, levels)
    assert rule in got, f"{rule} did not {levels}: {[(f.rule, f.status, f.message) for f in findings if f.rule == rule]}"
    others = bad(findings) - {rule} - set(also)
    assert not others, [(f.rule, f.status, f.message) for f in findings if f.rule in others]


def msgs(findings, rule, status=None):
    return [f.message for f in findings if f.rule == rule and (status is None or f.status == status)]


def upd(sid, update):
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}},
                      separators=(",", ":"))


def U(sid, update):
    """The agent's session/update line for session ``sid``."""
    return "A->C " + upd(sid, update)


def A(obj):
    return "A->C " + (obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")))


def C(obj):
    return "C->A " + (obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")))


RUNNING = upd("sess_1", {"sessionUpdate": "state_update", "state": "running"})


LIST_LATER = "\n".join([C('{"jsonrpc":"2.0","id":90,"method":"session/list","params":{}}'),
                        A('{"jsonrpc":"2.0","id":90,"result":{"sessions":[]}}')])


# the minimal initialize exchange of the wire tests (tests/test_monitors_wire*.py)
INIT = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"acp-conformance","version":"0.1.0"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"minimal-agent","version":"1.0.0"}}}
'''
