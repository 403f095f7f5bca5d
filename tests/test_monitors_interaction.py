"""Unit tests of the TOOL / TERM / PERM monitors on synthetic transcripts."""

from __future__ import annotations

from acp_conformance.rules.findings import FAIL, PASS, WARN
from monitor_transcripts import run, statuses

INIT = r'''
C->A {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"capabilities":{},"info":{"name":"c","version":"1"}}}
A->C {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{"session":{}},"info":{"name":"a","version":"1"}}}
C->A {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/p"}}
A->C {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}
'''


def upd(u):
    import json
    return 'A->C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":%s}}\n' % json.dumps(u)


def test_tool_v1_variant_and_bad_values_fail():
    f = run(INIT + upd({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "x"})
            + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "y", "status": "done", "kind": "read"})
            + upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c2", "content": [{"type": "content"}]}))
    assert FAIL in statuses(f, "TOOL-001")
    assert FAIL in statuses(f, "TOOL-003") and PASS in statuses(f, "TOOL-003")
    assert statuses(f, "TOOL-004") == [FAIL]


def test_tool_cancel_accepted_then_final_and_capability_withdrawn():
    script = (INIT + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "t", "status": "in_progress",
                          "capabilities": {"cancel": {}}})
              + 'C->A {"jsonrpc":"2.0","id":2,"method":"tool_call/cancel","params":{"sessionId":"s1","toolCallId":"c1"}}\n'
              + 'A->C {"jsonrpc":"2.0","id":2,"result":{}}\n'
              + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "cancelled"})
              + upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
              + 'C->A {"jsonrpc":"2.0","id":3,"method":"tool_call/cancel","params":{"sessionId":"s1","toolCallId":"c1"}}\n'
              + 'A->C {"jsonrpc":"2.0","id":3,"result":{}}\n')
    f = run(script)
    assert statuses(f, "TOOL-006") == [PASS]
    assert statuses(f, "TOOL-008") == [FAIL]  # idle cancelled without session/cancel
    assert statuses(f, "TOOL-009") == [WARN]  # cancel still advertised after the final status
    assert statuses(f, "TOOL-007") == [FAIL]  # a final tool call cancelled with success


def test_terminal_rules():
    script = (INIT + upd({"sessionUpdate": "terminal_update", "terminalId": "t1", "cwd": "rel",
                          "capabilities": {"cancel": {}}})
              + upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "aGk"})
              + 'C->A {"jsonrpc":"2.0","id":2,"method":"terminal/cancel","params":{"sessionId":"s1","terminalId":"t1"}}\n'
              + 'A->C {"jsonrpc":"2.0","id":2,"result":{}}\n'
              + upd({"sessionUpdate": "terminal_update", "terminalId": "t1", "exitStatus": {"exitCode": 0}})
              + upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
              + 'C->A {"jsonrpc":"2.0","id":3,"method":"terminal/cancel","params":{"sessionId":"s1","terminalId":"t1"}}\n'
              + 'A->C {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"exited"}}\n')
    f = run(script)
    assert FAIL in statuses(f, "TERM-002") and WARN in statuses(f, "TERM-002")
    assert statuses(f, "TERM-003") == [FAIL]
    assert statuses(f, "TERM-005") == [PASS]
    assert statuses(f, "TERM-006") == [PASS]
    assert statuses(f, "TERM-007") == [PASS]
    assert WARN in statuses(f, "TERM-008")


PERM = (upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Delete", "status": "pending"})
        + 'A->C {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","title":"Delete?",'
          '"subject":{"type":"tool_call","toolCall":{"toolCallId":"c1"}},"options":[{"optionId":"a","name":"A",'
          '"kind":"allow_once"},{"optionId":"a","name":"R","kind":"nope"}]}}\n')


def test_permission_shape_and_proceeding_after_cancelled():
    f = run(INIT + PERM + 'C->A {"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}\n'
            + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}))
    assert statuses(f, "PERM-001") == [FAIL]
    assert statuses(f, "PERM-006") == [PASS]
    assert statuses(f, "PERM-002") == [FAIL]


def test_permission_error_answer_declined_passes():
    f = run(INIT + PERM + 'C->A {"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"x"}}\n'
            + upd({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"})
            + upd({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
    assert statuses(f, "PERM-005") == [PASS]


ASK = ('A->C {"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","title":"Delete?",'
       '"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}\n')


def test_permission_request_crossing_the_close_of_its_session():
    for method in ("session/close", "session/delete"):
        ending = 'C->A {"jsonrpc":"2.0","id":2,"method":"%s","params":{"sessionId":"s1"}}\n' % method
        answered = 'A->C {"jsonrpc":"2.0","id":2,"result":{}}\n'
        # written before the agent answered the close: it crossed the close on the wire, the session was active
        assert statuses(run(INIT + ending + ASK + answered), "PERM-001") == [PASS], method
        # written after the agent answered it: the session had ended
        assert statuses(run(INIT + ending + answered + ASK), "PERM-001") == [FAIL], method


def test_permission_request_after_a_refused_delete():
    # the alternative reference agent has no session/delete: -32601 leaves the session active (issue 11)
    delete = 'C->A {"jsonrpc":"2.0","id":2,"method":"session/delete","params":{"sessionId":"s1"}}\n'
    for answer, status in (('{"code":-32601,"message":"Method not found"}', PASS),
                           ('{"code":-32002,"message":"Session not found","data":{"sessionId":"s1"}}', FAIL)):
        refused = 'A->C {"jsonrpc":"2.0","id":2,"error":%s}\n' % answer
        assert statuses(run(INIT + delete + refused + ASK), "PERM-001") == [status], answer
