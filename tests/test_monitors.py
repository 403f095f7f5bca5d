"""Unit tests of the agent-side monitors, on synthetic transcripts.

The base transcripts are the reference transcripts of WIRE-NOTES section 2 (what a correct agent
does): every rule judged there passes with no fail or warn. Each broken variant changes a few
lines and must fail its rule, and no other rule (except where two rules judge the same fact).
"""

from __future__ import annotations

import json

import pytest

from acp_conformance.rules.findings import FAIL, INFO, NOT_TESTED, PASS, WARN
from acp_conformance.rules.monitor import MonitorContext
from acp_conformance.rules.monitors import ALL_MONITORS, RULES_CHECKED
from acp_conformance.wire.transcript import EVENT, RECEIVED, SENT, Frame, parse_line

# this file covers the first rule slice; every later family has its own tests/test_monitors_<family>.py
# (the monitors of that slice, by class: their modules now hold later families' monitors beside them)
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


def A(obj):
    return "A->C " + (obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")))


def C(obj):
    return "C->A " + (obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")))


RUNNING = upd("sess_1", {"sessionUpdate": "state_update", "state": "running"})


# --- the correct transcripts --------------------------------------------------------------------

def test_reference_transcripts_pass_everything():
    findings = run(BASE, SLICE_MONITORS)
    problems = [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN, NOT_TESTED)]
    assert not problems, problems
    passed = {f.rule for f in findings if f.status == PASS}
    missing = MY_RULES - passed - {"INIT-003"}
    assert not missing, sorted(missing)


def test_initialize_transcript_passes():
    findings = run(INITIALIZE)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    for rule in ("INIT-001", "INIT-002", "INIT-003", "ERR-004", "TRANSPORT-003"):
        assert PASS in statuses(findings, rule), rule


def test_rules_checked_and_expected():
    assert set(RULES_CHECKED) >= {
        "PROMPT-001", "PROMPT-002", "PROMPT-003", "PROMPT-004", "PROMPT-005", "PROMPT-006", "PROMPT-011",
        "PROMPT-012", "PROMPT-013", "CANCEL-001", "CANCEL-002", "CANCEL-003", "RESUME-002", "RESUME-003",
        "RESUME-004", "RESUME-005", "ERR-001", "ERR-002", "ERR-004", "CLOSE-005", "INIT-001", "INIT-002",
        "INIT-003", "TRANSPORT-003"}
    for cls in ALL_MONITORS:
        for rule in cls.rules:
            assert cls.expected.get(rule, "").endswith("."), rule


def test_passes_are_few():
    findings = run(BASE, SLICE_MONITORS)
    counts = {}
    for f in findings:
        if f.status == PASS:
            counts[f.rule] = counts.get(f.rule, 0) + 1
    assert max(counts.values()) <= 3, counts


def test_every_finding_lists_frames_offending_first():
    findings = run(change(BASE, '"id":2,"result":{"messageId":"msg_u1"}', '"id":2,"result":{}'))
    f = next(f for f in findings if f.rule == "PROMPT-001" and f.status == FAIL)
    assert f.frames and f.expected
    # the offending frame is the response, then the request
    assert f.frames[0] > f.frames[1]


# --- PROMPT ---------------------------------------------------------------------------------------

R2 = '"id":2,"result":{"messageId":"msg_u1"}'


@pytest.mark.parametrize("result, status", [("{}", FAIL), ('{"messageId":null}', FAIL), ('{"messageId":7}', FAIL),
                                            ("[]", FAIL), ('{"messageId":""}', WARN)])
def test_prompt_001_result_shape(result, status):
    findings = run(change(BASE, R2, '"id":2,"result":' + result))
    # an empty id cannot match the echoed msg_u1: PROMPT-002 fails as well
    assert_fails(findings, "PROMPT-001", levels=(status,), also={"PROMPT-002"} if status == WARN else ())
    assert status in statuses(findings, "PROMPT-001")


def test_prompt_001_error_response_is_not_its_business():
    findings = run(UNKNOWN_SESSION)
    assert statuses(findings, "PROMPT-001") == []


def test_prompt_002_wrong_echo_id():
    s = base(prompt=edit(PROMPT, '"sessionUpdate":"user_message","messageId":"msg_u1"', '"sessionUpdate":"user_message","messageId":"msg_uX"'))
    findings = run(s)
    assert_fails(findings, "PROMPT-002")
    m = msgs(findings, "PROMPT-002", FAIL)
    assert any("no user_message" in x and "msg_u1" in x for x in m)
    assert any("msg_uX" in x for x in m)


def test_prompt_002_missing_echo_without_idle_names_the_wait():
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"}]}}'),
                   A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}'), A(RUNNING), "@+3", "@exit"])
    findings = run(s)
    assert FAIL in statuses(findings, "PROMPT-002")
    assert any("exited" in x for x in msgs(findings, "PROMPT-012", FAIL))


def test_prompt_002_chunks_and_content_warning():
    s = base(prompt=edit(PROMPT, A('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]}}}').split("    #")[0],
               A(upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "msg_u1", "content": {"type": "text", "text": "Say "}})) + "\n"
               + A(upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "msg_u1", "content": {"type": "text", "text": "hello"}}))))
    assert not bad(run(s))
    s2 = base(prompt=edit(PROMPT, '"messageId":"msg_u1","content":[{"type":"text","text":"Say hello"}]', '"messageId":"msg_u1","content":[{"type":"text","text":"Say goodbye"}]'))
    findings = run(s2)
    assert_fails(findings, "PROMPT-002", levels=(WARN,))
    assert FAIL not in statuses(findings, "PROMPT-002")


def test_prompt_003_error_after_insertion():
    s = change(BASE, '{"jsonrpc":"2.0","id":3,"error"',
               '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"user_message","messageId":"msg_bad"}}}\n'
               'A->C {"jsonrpc":"2.0","id":3,"error"')
    findings = run(s)
    assert_fails(findings, "PROMPT-003")
    assert any("msg_bad" in x for x in msgs(findings, "PROMPT-003", FAIL))


REJECT = 'A->C {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unsupported content block type"}}'
LATE_USER = A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_late"}))


def test_prompt_004_insertion_after_rejection():
    findings = run(change(BASE, REJECT, REJECT + "\n@+0.5\n" + LATE_USER))
    assert_fails(findings, "PROMPT-004")
    assert PASS in statuses(findings, "PROMPT-003")


def test_prompt_004_window():
    # later than rejection_window: not attributed
    findings = run(change(BASE, REJECT, REJECT + "\n@+3\n" + LATE_USER))
    assert FAIL not in statuses(findings, "PROMPT-004")
    findings = run(change(BASE, REJECT, REJECT + "\n@+3\n" + LATE_USER), rejection_window=5.0)
    assert FAIL in statuses(findings, "PROMPT-004")


def _slow_response(delay):
    # prompt id 2: the response only after the idle
    s = change(BASE, 'A->C {"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}    # same messageId as the user_message\n', "")
    idle = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}'
    return change(s, idle, f"@+{delay}\n" + idle + '\nA->C {"jsonrpc":"2.0","id":2,"result":{"messageId":"msg_u1"}}')


def test_prompt_005_response_after_long_work_fails():
    findings = run(_slow_response(6))
    assert_fails(findings, "PROMPT-005")
    assert any("waited" in x for x in msgs(findings, "PROMPT-005", FAIL))


def test_prompt_005_response_after_short_work_warns():
    findings = run(_slow_response(0))
    assert_fails(findings, "PROMPT-005", levels=(WARN,))
    assert FAIL not in statuses(findings, "PROMPT-005")
    findings = run(_slow_response(3), insertion_work_threshold=2.0)
    assert FAIL in statuses(findings, "PROMPT-005")


def test_prompt_006_duplicate_message_id():
    s = change(BASE, '"id":4,"result":{"messageId":"msg_u2"}', '"id":4,"result":{"messageId":"msg_u1"}')
    s = change(s, '"sessionUpdate":"user_message","messageId":"msg_u2","content":[{"type":"text","text":"Write a long story"}]}}}    # after',
               '"sessionUpdate":"user_message","messageId":"msg_u1","content":[{"type":"text","text":"Write a long story"}]}}}    # after')
    findings = run(s)
    assert_fails(findings, "PROMPT-006")


def test_prompt_011_no_running():
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"running"}}}\n'
                     'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1"',
               'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a1"')
    findings = run(s)
    assert_fails(findings, "PROMPT-011")
    assert PASS in statuses(findings, "PROMPT-012")


PROMPT_NO_IDLE = "\n".join(PROMPT.strip().splitlines()[:6])


LIST_LATER = "\n".join([C('{"jsonrpc":"2.0","id":90,"method":"session/list","params":{}}'),
                        A('{"jsonrpc":"2.0","id":90,"result":{"sessions":[]}}')])


def test_prompt_012_no_idle():
    # ten silent seconds, then other traffic: the work had stopped reporting, and no idle came
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+10", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")
    assert any("still running" in x for x in msgs(findings, "PROMPT-012", FAIL))
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+1"]), idle_grace=5.0)
    assert statuses(findings, "PROMPT-012") == [NOT_TESTED]


def test_prompt_012_not_judged_while_the_work_still_reports_progress():
    # a long task still streaming when the connection ends has not ended: there is no idle to owe yet
    chunk = A('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":'
              '{"sessionUpdate":"agent_message_chunk","messageId":"msg_a9","content":{"type":"text","text":"7 "}}}}')
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+5", chunk, "@+0.5"]))
    assert statuses(findings, "PROMPT-012") == [NOT_TESTED]
    assert any("still reporting progress" in f.message for f in findings if f.rule == "PROMPT-012")
    # the same update long before the end shows nothing about the end: no idle is a failure
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, chunk, "@+5", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")


def test_prompt_012_restart_ends_pending_work():
    findings = run("\n".join([INIT2, SESSION_NEW, PROMPT_NO_IDLE, "@+2", "@start", RESUME_PLAIN]))
    assert_fails(findings, "PROMPT-012")
    assert any("restarted" in x for x in msgs(findings, "PROMPT-012", FAIL))
    # the idle on the new connection is a resume snapshot: no PROMPT finding of connection 2 fails
    assert PASS in statuses(findings, "RESUME-004")


@pytest.mark.parametrize("required, status", [(True, FAIL), (False, WARN)])
def test_prompt_013_missing_stop_reason(required, status):
    s = change(BASE, '"state":"idle","stopReason":"end_turn"', '"state":"idle"')
    findings = run(s, stop_reason_required=required)
    assert_fails(findings, "PROMPT-013", levels=(status,))


def test_prompt_013_repeated_idle_is_exempt():
    idle = A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle"}))
    s = change(BASE, REJECT, REJECT + "\n" + idle)
    assert not bad(run(s))


def test_prompt_overlapping_prompts_are_not_misattributed():
    # two prompts in flight; the second is rejected while the first's user message is echoed
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"a"}]}}'),
                   C('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"b"}]}}'),
                   A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": "a"}]})),
                   A('{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"busy"}}'),
                   A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"m1"}}'),
                   A(RUNNING),
                   A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


# --- CANCEL ---------------------------------------------------------------------------------------

CANCELLED_IDLE_1 = ('A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}    # never stopReason error, never an error response')


def test_cancel_001_not_cancelled():
    s = change(BASE, CANCELLED_IDLE_1, "@+5\n" + CANCELLED_IDLE_1.replace('"cancelled"', '"end_turn"'))
    findings = run(s)
    assert_fails(findings, "CANCEL-001")
    assert any('"end_turn"' in x for x in msgs(findings, "CANCEL-001", FAIL))


def test_cancel_of_work_that_failed_for_authentication_is_not_judged():
    """claude-agent-acp 0.101.0 without credentials: the turn ends at once with error auth_required (-32000),
    whatever the cancel does; any other error still fails CANCEL-001/002."""
    err = CANCELLED_IDLE_1.replace('"stopReason":"cancelled"}',
                                   '"stopReason":"error","error":{"code":-32000,"message":"Authentication required"}}')
    findings = run(change(BASE, CANCELLED_IDLE_1, err))
    assert FAIL not in statuses(findings, "CANCEL-001") and FAIL not in statuses(findings, "CANCEL-002")
    findings = run(change(BASE, CANCELLED_IDLE_1, err.replace("-32000", "-32603")))
    assert_fails(findings, "CANCEL-001", also=("CANCEL-002",))
    assert_fails(findings, "CANCEL-002", also=("CANCEL-001",))


def test_cancel_001_race_is_inconclusive():
    # one end_turn right after the cancel (within cancel_race, 0.5 s by default) is inconclusive ...
    s = change(BASE, CANCELLED_IDLE_1, CANCELLED_IDLE_1.replace('"cancelled"', '"end_turn"'))
    findings = run(s)
    assert NOT_TESTED in statuses(findings, "CANCEL-001")
    assert not bad(findings)
    assert FAIL in statuses(run(s, cancel_race=0.0), "CANCEL-001")
    # ... but two such punctual "natural" ends in one test are not a coincidence
    second = ('A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"cancelled"}}}\n'
              'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}')
    s2 = change(s, second, second.replace('"stopReason":"cancelled"', '"stopReason":"end_turn"'))
    assert_fails(run(s2), "CANCEL-001")


def test_cancel_001_work_ended_before_cancel():
    s = "\n".join([INIT2, SESSION_NEW, PROMPT.strip().splitlines()[0], *PROMPT.strip().splitlines()[1:7],
                   C('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}')])
    findings = run(s)
    m = msgs(findings, "CANCEL-001", NOT_TESTED)
    assert m and "use a longer --acp-long-prompt" in m[0]
    assert not bad(findings)


def test_cancel_001_no_idle_after_cancel():
    lines = CANCEL.strip().splitlines()
    # an earlier prompt of the session ended with idle: the missing idle after the cancel is CANCEL-001's
    s = "\n".join([INIT2, SESSION_NEW, PROMPT, *lines[:7], "@+4", LIST_LATER])
    findings = run(s)
    assert_fails(findings, "CANCEL-001", also={"PROMPT-012"})
    assert any("waited" in x for x in msgs(findings, "CANCEL-001", FAIL))
    # an agent that never reports idle at all: that is PROMPT-012's failure, the cancel is not judged
    findings = run("\n".join([INIT2, SESSION_NEW, *lines[:7], "@+4", LIST_LATER]))
    assert_fails(findings, "PROMPT-012")
    assert statuses(findings, "CANCEL-001") == [NOT_TESTED]


def test_cancel_001_idle_without_stop_reason_is_prompt_013s():
    bare = CANCELLED_IDLE_1.replace(',"stopReason":"cancelled"', "")
    findings = run(change(BASE, CANCELLED_IDLE_1, bare))
    assert_fails(findings, "PROMPT-013")
    assert NOT_TESTED in statuses(findings, "CANCEL-001")


def test_cancel_002_error_idle_between():
    err = CANCELLED_IDLE_1.replace('"cancelled"', '"error"').split("    #")[0]
    findings = run(change(BASE, CANCELLED_IDLE_1, err + "\n" + CANCELLED_IDLE_1))
    assert_fails(findings, "CANCEL-002")
    assert PASS in statuses(findings, "CANCEL-001")


def test_cancel_002_work_ends_with_error():
    err = CANCELLED_IDLE_1.replace('"cancelled"', '"error"').split("    #")[0]
    findings = run(change(BASE, CANCELLED_IDLE_1, err))
    assert_fails(findings, "CANCEL-002", also={"CANCEL-001"})


def test_cancel_002_error_response_after_cancel():
    # prompt 5: the user message is echoed, then after the cancel the prompt gets an error
    s = change(BASE, 'A->C {"jsonrpc":"2.0","id":5,"result":{"messageId":"msg_u3"}}\n', "")
    s = change(s, 'A->C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}',
               'A->C {"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"aborted"}}\n'
               'A->C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}')
    findings = run(s)
    assert_fails(findings, "CANCEL-002", also={"PROMPT-003"})


def test_cancel_003_update_after_cancelled_idle():
    late = A(upd("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "msg_a2", "content": {"type": "text", "text": "!"}}))
    findings = run(change(BASE, CANCELLED_IDLE_1, CANCELLED_IDLE_1 + "\n" + late))
    assert_fails(findings, "CANCEL-003")
    assert any("msg_a2" in x for x in msgs(findings, "CANCEL-003", FAIL))


def test_cancel_003_background_tool_call_is_exempt():
    last_idle = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}}}\n'
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"cancelled"}}}\n' + last_idle,
               A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled",
                                "background": [{"type": "tool_call", "toolCallId": "call_1"}]})) + "\n"
               + A(upd("sess_1", {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed"})) + "\n")
    findings = run(s)
    assert FAIL not in statuses(findings, "CANCEL-003")
    s2 = s.replace('"background":[{"type":"tool_call","toolCallId":"call_1"}]', '"background":[]')
    assert FAIL in statuses(run(s2), "CANCEL-003")


def test_cancel_of_idle_session_is_not_judged():
    s = "\n".join([INIT2, SESSION_NEW, C('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}')])
    findings = run(s)
    # nothing to judge: at most a not-tested note that says what would exercise the rule
    assert not [f for f in findings if f.rule.startswith("CANCEL") and f.status != NOT_TESTED]
    assert any(f.rule == "CANCEL-010" for f in findings)


# --- RESUME ---------------------------------------------------------------------------------------

MARKER_1 = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"replay_complete"}}}    # end of history (shape inferred from seed)'
STATE_1 = 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state\n'


def test_resume_002_missing_marker():
    findings = run(change(BASE, MARKER_1, ""))
    assert_fails(findings, "RESUME-002")


def test_resume_002_two_markers():
    findings = run(change(BASE, MARKER_1, MARKER_1 + "\n" + MARKER_1))
    assert_fails(findings, "RESUME-002")


def test_resume_002_history_after_marker():
    hist = A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_u1", "content": [{"type": "text", "text": "Say hello"}]}))
    findings = run(change(BASE, MARKER_1, MARKER_1 + "\n" + hist))
    assert_fails(findings, "RESUME-002")


def test_resume_003_state_before_marker():
    s = change(BASE, STATE_1, "")
    s = change(s, MARKER_1, STATE_1 + MARKER_1)
    findings = run(s)
    assert_fails(findings, "RESUME-003", also={"RESUME-004"})


def test_resume_003_accepts_a_live_update_in_flight_before_replay_complete():
    # the reworded replay_complete (Rust SDK 5.5.0): a live update the agent sent before the client's resume
    # request may still arrive after it, i.e. among the replayed history: not a failure of RESUME-003
    live = A(upd("sess_1", {"sessionUpdate": "agent_message_chunk", "messageId": "msg_live",
                            "content": {"type": "text", "text": "still working"}}))
    findings = run(change(BASE, MARKER_1, live + "\n" + MARKER_1))
    assert PASS in statuses(findings, "RESUME-003")
    assert not bad(findings) & {"RESUME-002", "RESUME-003", "RESUME-004"}


def test_resume_004_no_state_without_replay():
    s = change(BASE, 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"state_update","state":"idle"}}}    # current state, before the response\n', "")
    findings = run(s)
    assert_fails(findings, "RESUME-004")


@pytest.mark.parametrize("delay, fails", [(None, True), (3, True), (6, False)])
def test_resume_005_marker_without_replay(delay, fails):
    marker = A(upd("sess_1", {"sessionUpdate": "replay_complete"}))
    resp = 'A->C {"jsonrpc":"2.0","id":1,"result":{}}'
    if delay is None:
        s = base(resume_plain=edit(RESUME_PLAIN, resp, marker + "\n" + resp))
    else:
        s = base(resume_plain=edit(RESUME_PLAIN, resp, f"{resp}\n@+{delay}\n{marker}"))
    findings = run(s)
    if fails:
        assert_fails(findings, "RESUME-005")
    else:
        assert FAIL not in statuses(findings, "RESUME-005")


def test_resume_005_null_replay_from():
    s = change(BASE, '"id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project"}}',
               '"id":1,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/home/user/project","replayFrom":null}}')
    findings = run(s)
    assert PASS in statuses(findings, "RESUME-005")
    assert not bad(findings)


def test_resume_error_is_not_judged():
    findings = run("\n".join(RESUME_REPLAY.strip().splitlines()[:4]))
    assert not [f for f in findings if f.rule in ("RESUME-002", "RESUME-003", "RESUME-004")]
    assert not bad(findings)


# --- ERR / CLOSE ----------------------------------------------------------------------------------

NOPE22 = '{"jsonrpc":"2.0","id":22,"error":{"code":-32002,"message":"Session not found","data":{"sessionId":"sess_nope"}}}'


@pytest.mark.parametrize("answer, status", [
    ('{"jsonrpc":"2.0","id":22,"result":{"configOptions":[]}}', FAIL),
    ('{"jsonrpc":"2.0","id":22,"error":{"code":-32602,"message":"bad"}}', FAIL),
])
def test_err_001_unknown_session(answer, status):
    findings = run(change(BASE, NOPE22, answer))
    assert_fails(findings, "ERR-001", levels=(status,))


def test_err_001_subordinate_cancels_warn_only():
    base = "\n".join([INIT2, SESSION_NEW])
    tc = C('{"jsonrpc":"2.0","id":30,"method":"tool_call/cancel","params":{"sessionId":"sess_x","toolCallId":"c"}}')
    f1 = run("\n".join([base, tc, A('{"jsonrpc":"2.0","id":30,"error":{"code":-32602,"message":"unknown"}}')]))
    assert statuses(f1, "ERR-001") == [INFO]
    f2 = run("\n".join([base, tc, A('{"jsonrpc":"2.0","id":30,"result":{}}')]))
    assert_fails(f2, "ERR-001", levels=(WARN,))
    assert FAIL not in statuses(f2, "ERR-001")


def test_err_001_not_judged_before_initialize_or_for_known_sessions():
    s = "\n".join([C('{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess_nope","prompt":[{"type":"text","text":"hi"}]}}'),
                   A('{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Connection not initialized"}}')])
    assert not statuses(run(s), "ERR-001")
    # a session listed by session/list is known: its success is not an ERR-001 failure
    s = "\n".join([INIT2, C('{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}'),
                   A('{"jsonrpc":"2.0","id":5,"result":{"sessions":[{"sessionId":"old","cwd":"/x"}]}}'),
                   C('{"jsonrpc":"2.0","id":6,"method":"session/resume","params":{"sessionId":"old","cwd":"/x"}}'),
                   A(upd("old", {"sessionUpdate": "state_update", "state": "idle"})),
                   A('{"jsonrpc":"2.0","id":6,"result":{}}')])
    findings = run(s)
    assert not statuses(findings, "ERR-001") and not bad(findings)


@pytest.mark.parametrize("data", ['null', '{"sessionId":"other"}', '"sess_nope"'])
def test_err_002_data(data):
    findings = run(change(BASE, NOPE22, NOPE22.replace('{"sessionId":"sess_nope"}', data)))
    assert_fails(findings, "ERR-002")


def test_err_004_duplicate_response():
    r = 'A->C {"jsonrpc":"2.0","id":15,"result":{"sessions":[]}}'
    findings = run(change(BASE, r, r + "\n" + r))
    assert_fails(findings, "ERR-004")


def test_err_004_missing_response():
    r = 'A->C {"jsonrpc":"2.0","id":17,"error":{"code":-32601,"message":"Method not found"}}\n'
    findings = run(change(BASE, r, ""))
    assert_fails(findings, "ERR-004")
    assert not statuses(findings, "ERR-004").count(PASS)


def test_err_004_wrong_id_type():
    r = 'A->C {"jsonrpc":"2.0","id":17,"error"'
    findings = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":"17","error"'))
    assert_fails(findings, "ERR-004", also=("ERR-008",))  # ERR-008 judges the same retyped id
    m = msgs(findings, "ERR-004", FAIL)
    assert len(m) == 2 and any("no response" in x for x in m) and any('"17"' in x for x in m)


def test_err_004_target_exit():
    s = "\n".join([INIT2, C('{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}'), "@+1", "@eof", "@exit"])
    findings = run(s)
    assert_fails(findings, "ERR-004")
    assert any("exited" in x or "closed its stdout" in x for x in msgs(findings, "ERR-004", FAIL))


def test_err_004_echoed_invalid_request_id_is_accepted():
    r = 'A->C {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}    # echoing id 19 is also accepted'
    findings = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":19,"error":{"code":-32600,"message":"Invalid Request"}}'))
    assert not bad(findings)


def test_close_005():
    r = 'A->C {"jsonrpc":"2.0","id":12,"result":{}}'
    f1 = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":12,"error":{"code":-32002,"message":"nf","data":{"sessionId":"sess_nope"}}}'))
    assert statuses(f1, "CLOSE-005") == [PASS]
    assert "tolerated" in msgs(f1, "CLOSE-005")[0]
    assert not bad(f1)
    f2 = run(change(BASE, r, 'A->C {"jsonrpc":"2.0","id":12,"error":{"code":-32603,"message":"boom"}}'))
    # neither success nor -32002: the SHOULD of CLOSE-005 and the MUST of ERR-001 (a missing session is -32002)
    assert_fails(f2, "CLOSE-005", also=("ERR-001",))
    assert FAIL in statuses(f2, "ERR-001")


def test_close_005_already_closed():
    s = "\n".join([INIT2, SESSION_NEW,
                   C('{"jsonrpc":"2.0","id":9,"method":"session/close","params":{"sessionId":"sess_1"}}'),
                   A('{"jsonrpc":"2.0","id":9,"result":{}}'),
                   C('{"jsonrpc":"2.0","id":10,"method":"session/close","params":{"sessionId":"sess_1"}}'),
                   A('{"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"no such session"}}')])
    findings = run(s)
    assert_fails(findings, "CLOSE-005", also=("ERR-001",))
    assert "already closed" in msgs(findings, "CLOSE-005", FAIL)[0]
    assert "already closed" in msgs(findings, "ERR-001", FAIL)[0]


# --- INIT -----------------------------------------------------------------------------------------

def _init(P, answer):
    return "\n".join([
        C({"jsonrpc": "2.0", "id": 0, "method": "initialize",
           "params": {"protocolVersion": P, "info": {"name": "acp-conformance", "version": "0.1.0"}, "capabilities": {}}}),
        A({"jsonrpc": "2.0", "id": 0, **answer})])


def _ok(v):
    return {"result": {"protocolVersion": v, "capabilities": {"session": {}}, "info": {"name": "a", "version": "1"}}}


def _err(code, data=None):
    return {"error": {"code": code, "message": "x", **({"data": data} if data is not None else {})}}


@pytest.mark.parametrize("P, answer, rule, status, also", [
    (2, _ok(1), "INIT-001", FAIL, ()),
    (3, _err(-32602), "INIT-001", FAIL, ()),
    (65535, _ok(3), "INIT-001", INFO, ()),
    (3, _ok(4), "INIT-002", FAIL, {"INIT-001"}),
    (1, _ok(2), "INIT-002", FAIL, ()),
    (0, _ok(2), "INIT-003", FAIL, {"INIT-002"}),
    (0, _err(-32600), "INIT-003", FAIL, ()),
    (0, _err(-32022, {"requested": 0, "supported": []}), "INIT-003", FAIL, ()),
    (1, _err(-32022, {"requested": 1, "supported": [1, 2]}), "INIT-003", FAIL, ()),
    (1, _err(-32022, {"requested": 1, "supported": [2]}), "INIT-003", PASS, ()),
    (1, _ok(1), "INIT-003", INFO, ()),
])
def test_init(P, answer, rule, status, also):
    findings = run(_init(P, answer))
    assert status in statuses(findings, rule), [(f.rule, f.status, f.message) for f in findings]
    if status in (FAIL, WARN):
        assert_fails(findings, rule, also=also, levels=(status,))
    else:
        assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_init_repeated_initialize_error_is_not_judged():
    s = _init(2, _ok(2)) + "\n" + _init(2, _err(-32600)).replace('"id":0', '"id":1')
    findings = run(s)
    assert not bad(findings) - {"INIT-006"}  # INIT-001..003 do not judge it; INIT-006 (repeat allowed) does


# --- TRANSPORT ------------------------------------------------------------------------------------

def test_transport_003_banner_fails():
    findings = run("@raw Starting agent v1.0...\n" + BASE)
    assert_fails(findings, "TRANSPORT-003")
    assert "Starting agent" in msgs(findings, "TRANSPORT-003", FAIL)[0]


def test_transport_003_non_jsonrpc_json_fails():
    findings = run(INIT2 + '\n@raw {"log":"hello"}')
    assert_fails(findings, "TRANSPORT-003")


def test_transport_003_empty_line_warns():
    findings = run("@raw \n" + BASE)
    assert_fails(findings, "TRANSPORT-003", levels=(WARN,))
    assert FAIL not in statuses(findings, "TRANSPORT-003")


def test_transport_003_many_bad_lines_are_summarised():
    findings = run("\n".join(["@raw log line %d" % i for i in range(12)]) + "\n" + INIT2)
    fails = [f for f in findings if f.rule == "TRANSPORT-003" and f.status == FAIL]
    assert len(fails) == 6 and "7 more" in fails[-1].message


def test_transport_003_long_line_is_cut():
    findings = run("@raw " + "x" * 500 + "\n" + INIT2)
    m = msgs(findings, "TRANSPORT-003", FAIL)[0]
    assert len(m) < 400


# --- streaming through a real Transcript --------------------------------------------------------

def test_transcript_listener():
    from acp_conformance.wire.transcript import Transcript
    ctx = MonitorContext(target_side="agent")
    ctx.add_monitors(ALL_MONITORS)
    tr = Transcript(listeners=[ctx.feed])
    tr.conn = 1
    tr.event("start", argv=["agent"], pid=1)
    for line in INIT2.splitlines():
        body = line[5:].split("    #")[0]
        if line.startswith("C->A"):
            tr.sent(body.encode(), json.loads(body))
        else:
            tr.received(body.encode())
    ctx.finish()
    assert PASS in statuses(ctx.findings, "INIT-001")
    assert PASS in statuses(ctx.findings, "ERR-004")


# --- robustness: odd shapes never raise ----------------------------------------------------------

ODD = [
    '{"jsonrpc":"2.0","method":"session/update","params":[]}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":[]}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message","messageId":[1]}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","background":{"x":1}}}}',
    '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":{"a":1}}}}',
    # (list/dict ids are left out: MonitorContext._read cannot key them; see the report)
    '{"jsonrpc":"2.0","id":true,"result":null}',
    '{"jsonrpc":"2.0","id":1.5,"error":"x"}',
    '{"jsonrpc":"2.0","id":0,"result":"x"}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"data":"s"}}',
    '[[],{}]', 'null', '"text"', '[]',
]


def test_odd_shapes_do_not_raise():
    p = Player()
    p.sent('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2"}}')
    p.sent('{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":"x"}}')
    p.sent('{"jsonrpc":"2.0","id":true,"method":"session/resume","params":null}')
    p.sent('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
    for line in ODD:
        p.received(line)
    p.sent('{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":"s"}}')
    p.received('{"jsonrpc":"2.0","id":2,"error":{"code":-32002}}')
    p.event("start")
    p.received(b"\xff\xfe")
    findings = p.finish()
    assert FAIL in statuses(findings, "TRANSPORT-003")


def test_stray_idle_crossing_the_next_prompt_is_not_its_end():
    # A second idle of earlier work that the agent wrote before it read the next prompt arrives before
    # that prompt's response: it is not the end of the new work (found by a CI run under load).
    stray = upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    s = "\n".join([INIT2, SESSION_NEW, PROMPT.strip().split("\n# ---")[0],
                   C('{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"again"}]}}'),
                   A(stray),
                   A('{"jsonrpc":"2.0","id":7,"result":{"messageId":"msg_u7"}}'),
                   A(upd("sess_1", {"sessionUpdate": "user_message", "messageId": "msg_u7",
                                    "content": [{"type": "text", "text": "again"}]})),
                   A(RUNNING),
                   A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s, SLICE_MONITORS)
    assert not bad(findings) & {"PROMPT-005", "PROMPT-011", "PROMPT-012"}, \
        [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    # with no running at all, the early idle still ends the work, and PROMPT-011 fails
    findings = run(s.replace(A(RUNNING) + "\n", "", 1), SLICE_MONITORS)
    assert FAIL in statuses(findings, "PROMPT-011")


# --- a prompt that joins running work (issue 11: frames of the alternative reference agent) --------
def _joined(end_with_idle: bool) -> str:
    """A long turn; a second prompt arrives while it runs and is inserted into it at once: its response and
    user message follow straight away, no second running, and the running work's idle (if any) ends both."""
    first = upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "nachricht-ü→1",
                           "content": {"type": "text", "text": "Count slowly to 500, one number per line."}})
    second = upd("sess_1", {"sessionUpdate": "user_message_chunk", "messageId": "nachricht-ü→2",
                            "content": {"type": "text", "text": "Say hello"}})
    reply = upd("sess_1", {"sessionUpdate": "agent_message", "messageId": "antwort-ü→1",
                           "content": [{"type": "text", "text": "1 "}]})
    lines = [INIT2, SESSION_NEW,
             C('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Count slowly to 500, one number per line."}]}}'),
             A(RUNNING), A('{"jsonrpc":"2.0","id":2,"result":{"messageId":"nachricht-ü→1"}}'),
             C('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Say hello"}]}}'),
             A(first), A(reply), A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}'), A(second),
             "@+3", A(reply)]
    if end_with_idle:
        lines.append(A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})))
    return "\n".join(lines)


@pytest.mark.parametrize("end_with_idle", [True, False])
def test_prompt_joining_running_work_is_not_a_missing_running(end_with_idle):
    findings = run(_joined(end_with_idle), SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]
    assert PASS in statuses(findings, "PROMPT-011")


def test_prompt_joined_then_later_updates():
    # after the busy work's idle: a message and a repeated idle snapshot (no work of its own), or real work
    late = "\n".join([A(upd("sess_1", {"sessionUpdate": "agent_message", "messageId": "antwort-ü→2",
                                        "content": [{"type": "text", "text": "hello"}]})),
                      A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(_joined(True) + "\n" + late, SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings) & {"PROMPT-011"}  # a repeated idle snapshot is not work of its own
    queued = _joined(True) + "\n" + A(RUNNING) + "\n" + late
    findings = run(queued, SLICE_MONITORS, idle_grace=1.0)
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_prompt_answered_after_the_busy_work_still_needs_its_running():
    # held behind the work (answered only after its idle): its own work must be reported running
    s = _joined(True).replace(A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}') + "\n", "")
    s += "\n" + "\n".join([A('{"jsonrpc":"2.0","id":3,"result":{"messageId":"nachricht-ü→2"}}'),
                           A(upd("sess_1", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))])
    findings = run(s, SLICE_MONITORS, idle_grace=1.0)
    assert FAIL in statuses(findings, "PROMPT-011")


# --- session/set_config_option from an agent without config options (issue 11: the alternative agent) ----
def _no_config_agent(with_options: bool) -> str:
    new = ('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_1"%s}}'
           % (',"configOptions":[{"configId":"mode","name":"Mode","type":"select","currentValue":"a","options":[{"value":"a","name":"A"}]}]'
              if with_options else ""))
    missing = '{"jsonrpc":"2.0","id":%d,"error":{"code":-32601,"message":"Method not found"}}'
    return "\n".join([INIT2, C('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project"}}'), A(new),
                      C('{"jsonrpc":"2.0","id":22,"method":"session/set_config_option","params":{"sessionId":"sess_nope","configId":"mode","type":"id","value":"code"}}'),
                      A(missing % 22),
                      C('{"jsonrpc":"2.0","id":"w-13d","method":"session/set_config_option","params":{"sessionId":"sess_1","type":"id","value":"code"}}'),
                      A(missing.replace("%d", '"w-13d"'))])


def test_set_config_option_missing_without_config_options_is_legal():
    findings = run(_no_config_agent(False))
    assert statuses(findings, "ERR-001") == [INFO]
    assert statuses(findings, "ERR-013") == [INFO]
    assert not bad(findings), [(f.rule, f.status, f.message) for f in findings if f.status in (FAIL, WARN)]


def test_set_config_option_missing_with_config_options_is_still_caught():
    findings = run(_no_config_agent(True))
    assert FAIL in statuses(findings, "ERR-001")
    assert WARN in statuses(findings, "ERR-013")
