"""Standalone wire-level tests of the reference agent (and a smoke test of its mutants).

No dependency on the rest of the suite: the agent runs as a subprocess in a temporary directory
and every frame is checked against WIRE-NOTES section 2. Every wait has a timeout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT = [sys.executable, "-m", "acp_conformance.reference.agent"]
MUTANTS_SCRIPT = os.path.join(ROOT, "tests", "mutants", "agent_mutants.py")
INIT = {"protocolVersion": 2, "capabilities": {}, "info": {"name": "unit", "version": "0.0.1"}}
WAIT = 5.0


class Agent:
    """The agent as a subprocess: send JSON lines, receive parsed frames with timeouts."""

    def __init__(self, cwd: str, argv: list[str] | None = None):
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("ACP_REFERENCE_STATE_DIR", None)
        self.proc = subprocess.Popen(
            argv or AGENT, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        self.next_id = 100
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    # -- sending ----------------------------------------------------------------------------
    def send_raw(self, text: str) -> None:
        self.proc.stdin.write(text.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def send(self, obj) -> None:
        self.send_raw(json.dumps(obj))

    def request(self, method: str, params: dict, request_id=None):
        if request_id is None:
            request_id = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- receiving ----------------------------------------------------------------------------
    def recv_raw(self, timeout: float = WAIT) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no frame from the agent within %.1f s" % timeout) from None
        if line is None:
            raise AssertionError("agent stdout closed")
        return line

    def recv(self, timeout: float = WAIT):
        return json.loads(self.recv_raw(timeout))

    def until(self, pred, timeout: float = WAIT) -> list:
        """Frames up to and including the first that satisfies pred."""
        frames, deadline = [], time.monotonic() + timeout
        while True:
            frame = self.recv(max(0.01, deadline - time.monotonic()))
            frames.append(frame)
            if pred(frame):
                return frames

    def until_response(self, request_id, timeout: float = WAIT) -> list:
        return self.until(lambda f: is_response(f, request_id), timeout)

    def call(self, method: str, params: dict, timeout: float = WAIT) -> dict:
        rid = self.request(method, params)
        return self.until_response(rid, timeout)[-1]

    def silence(self, duration: float) -> list:
        """Frames that arrive within duration (expected: none)."""
        frames, deadline = [], time.monotonic() + duration
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return frames
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return frames
            if line is None:
                return frames
            frames.append(json.loads(line))

    def initialize(self) -> dict:
        return self.call("initialize", INIT)

    def new_session(self, cwd: str = "/home/user/project") -> str:
        return self.call("session/new", {"cwd": cwd})["result"]["sessionId"]

    def close(self) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)
            raise AssertionError("agent did not exit after stdin EOF") from None
        finally:
            self.release()

    def release(self) -> None:
        """After the process has ended: let the readers finish, close the pipes."""
        for t in self._threads:
            t.join(timeout=1)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


def is_response(frame, request_id) -> bool:
    return isinstance(frame, dict) and "method" not in frame and frame.get("id") == request_id and (
        type(frame.get("id")) is type(request_id)
    )


def update(frame) -> dict | None:
    if isinstance(frame, dict) and frame.get("method") == "session/update":
        return frame["params"]["update"]
    return None


def kinds(frames) -> list[str]:
    """A compact reading of a frame list: update kinds / state, 'response' or the method."""
    out = []
    for f in frames:
        u = update(f)
        if u is None:
            out.append(f.get("method") or ("error" if "error" in f else "response"))
        elif u["sessionUpdate"] == "state_update":
            out.append("%s:%s" % (u["state"], u.get("stopReason") or ""))
        else:
            out.append(u["sessionUpdate"])
    return out


class ReferenceAgentTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name
        self.agents: list[Agent] = []

    def tearDown(self) -> None:
        for agent in self.agents:
            if agent.proc.poll() is None:
                agent.proc.kill()
                agent.proc.wait(timeout=WAIT)
            agent.release()
        self._tmp.cleanup()

    def start(self, argv=None) -> Agent:
        agent = Agent(self.dir, argv)
        self.agents.append(agent)
        return agent

    # ------------------------------------------------------------------------------------------
    def test_initialize_versions(self) -> None:
        a = self.start()
        r = a.call("session/list", {})
        self.assertEqual(r["error"]["code"], -32600)  # before initialize
        r = a.call("initialize", dict(INIT, protocolVersion=2))
        self.assertEqual(r["result"]["protocolVersion"], 2)
        self.assertEqual(r["result"]["info"]["name"], "acp-conformance-reference-agent")
        self.assertEqual(r["result"]["capabilities"], {"session": {"delete": {}, "prompt": {"embeddedContext": {}}}})
        self.assertNotIn("authMethods", r["result"])
        r = a.call("initialize", dict(INIT, protocolVersion=2))  # repeated initialize
        self.assertEqual(r["result"]["protocolVersion"], 2)
        self.assertEqual(a.close(), 0)

        b = self.start()
        self.assertEqual(b.call("initialize", dict(INIT, protocolVersion=3))["result"]["protocolVersion"], 2)
        self.assertEqual(b.close(), 0)

        c = self.start()
        r = c.call("initialize", dict(INIT, protocolVersion=0))
        self.assertEqual(r["error"]["code"], -32022)
        self.assertEqual(r["error"]["data"], {"requested": 0, "supported": [2]})
        self.assertEqual(c.call("session/list", {})["error"]["code"], -32600)  # still uninitialized
        self.assertEqual(c.call("initialize", INIT)["result"]["protocolVersion"], 2)
        self.assertEqual(c.call("initialize", {"protocolVersion": 2})["error"]["code"], -32602)  # no info
        self.assertEqual(c.close(), 0)

    def test_prompt_lifecycle_and_hygiene(self) -> None:
        a = self.start()
        a.initialize()
        self.assertEqual(a.call("session/new", {"cwd": "relative/dir"})["error"]["code"], -32602)
        mcp = [{"type": "stdio", "name": "x", "command": "/bin/true"}]
        self.assertEqual(a.call("session/new", {"cwd": "/tmp", "mcpServers": mcp})["error"]["code"], -32602)
        r = a.call("session/new", {"cwd": "/home/user/project"})
        sid = r["result"]["sessionId"]
        self.assertEqual([o["configId"] for o in r["result"]["configOptions"]], ["mode", "verbose"])

        rid = a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "idle")
        self.assertEqual(
            kinds(frames),
            ["user_message", "response", "running:", "agent_message_chunk", "agent_message_chunk", "idle:end_turn"],
        )
        user, resp = update(frames[0]), frames[1]
        self.assertTrue(is_response(resp, rid))
        self.assertEqual(resp["result"], {"messageId": user["messageId"]})
        self.assertEqual(user["content"], [{"type": "text", "text": "Say hello"}])
        chunk_ids = {update(f)["messageId"] for f in frames[3:5]}
        self.assertEqual(len(chunk_ids), 1)
        self.assertNotIn(user["messageId"], chunk_ids)
        self.assertEqual("".join(update(f)["content"]["text"] for f in frames[3:5]), "You said: Say hello")
        self.assertEqual(frames[0]["params"]["sessionId"], sid)

        # same prompt again: a fresh messageId
        r2 = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]})
        self.assertNotEqual(r2["result"]["messageId"], resp["result"]["messageId"])
        a.until(lambda f: (update(f) or {}).get("state") == "idle")

        # rejected prompts: error, no insertion
        for prompt in ([{"type": "_conformance/unknown_block"}], [], [{"type": "text"}],
                       [{"type": "image", "data": "AA==", "mimeType": "image/png"}]):
            r = a.call("session/prompt", {"sessionId": sid, "prompt": prompt})
            self.assertEqual(r["error"]["code"], -32602, prompt)
        r = a.call("session/prompt", {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]})
        self.assertEqual(r["error"], {"code": -32002, "message": "Session not found", "data": {"sessionId": "sess_nope"}})

        # unknown method, extension request, notifications, malformed input
        self.assertEqual(a.call("session/frobnicate", {})["error"]["code"], -32601)
        a.send({"jsonrpc": "2.0", "id": "ext-1", "method": "_example.com/x", "params": {}})
        self.assertEqual(a.recv(), {"jsonrpc": "2.0", "id": "ext-1", "error": {"code": -32601, "message": "Method not found"}})
        a.notify("_example.com/file_opened", {"path": "/x"})
        a.notify("$/conformance_probe", {})
        a.notify("session/cancel", {"sessionId": sid})  # idle session: nothing
        a.send_raw('{"jsonrpc":"2.0","id":18,"method":"session/list",')
        self.assertEqual(a.recv(), {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        a.send_raw("[]")
        self.assertEqual(a.recv()["error"]["code"], -32600)
        # ACP v2 has no batches: every array is one invalid request, refused whole, no member served
        a.send_raw('[{"jsonrpc":"2.0","method":"_n1"},{"jsonrpc":"2.0","method":"_n2","params":{}}]')
        refusal = a.recv()
        self.assertEqual((refusal["id"], refusal["error"]["code"]), (None, -32600))
        a.send_raw('[{"jsonrpc":"2.0","id":20,"method":"session/list","params":{}},1]')
        refusal = a.recv()
        self.assertEqual((refusal["id"], refusal["error"]["code"]), (None, -32600))
        a.send({"jsonrpc": "2.0", "id": "1", "method": "session/list", "params": {}})
        self.assertEqual(a.recv()["id"], "1")
        self.assertEqual(a.silence(0.3), [])
        self.assertEqual(a.close(), 0)

    def test_cancel_slowly(self) -> None:
        a = self.start()
        a.initialize()
        sid = a.new_session()
        rid = a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Count SLOWLY to 60"}]})
        frames = a.until(lambda f: (update(f) or {}).get("sessionUpdate") == "agent_message_chunk")
        self.assertEqual(kinds(frames), ["user_message", "response", "running:", "agent_message_chunk"])
        self.assertTrue(is_response(frames[1], rid))
        held = a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "held"}]})
        a.notify("session/cancel", {"sessionId": sid})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "idle", timeout=2)
        self.assertEqual(update(frames[-1])["stopReason"], "cancelled")
        held_answer = [f for f in frames if is_response(f, held)]
        self.assertEqual(held_answer[0]["error"]["code"], -32800)
        self.assertNotIn("user_message", kinds(frames))
        self.assertEqual(a.silence(0.4), [])  # nothing after the cancelled idle
        # the session is still usable
        a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]})
        self.assertEqual(update(a.until(lambda f: (update(f) or {}).get("state") == "idle")[-1])["stopReason"], "end_turn")
        self.assertEqual(a.close(), 0)

    def test_idempotency_keys(self) -> None:
        """A retry under the key of a running, a held or a finished submission gets the original messageId, with
        no second user message and no second turn; a held original's retries wait for it (-32800 with it);
        the keys survive a restart with the session."""
        a = self.start()
        a.initialize()
        sid = a.new_session()

        def keyed(text, key):
            return a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}],
                                                "idempotencyKey": key})

        first = keyed("Count SLOWLY to 60", "k-slow")
        frames = a.until_response(first)
        mid = frames[-1]["result"]["messageId"]
        retry = keyed("Count SLOWLY to 60", "k-slow")  # while its turn runs
        frames = a.until_response(retry)
        self.assertEqual(frames[-1]["result"]["messageId"], mid)
        held = keyed("held", "k-held")  # held behind the running turn
        held_retry = keyed("held", "k-held")
        self.assertEqual([f for f in a.silence(0.3) if "id" in f], [])  # both wait for the turn
        frames = a.until(lambda f: is_response(f, held_retry), timeout=10)
        answers = {f["id"]: f["result"]["messageId"] for f in frames if f.get("id") in (held, held_retry)}
        self.assertEqual(len(answers), 2)
        self.assertEqual(answers[held], answers[held_retry])
        self.assertNotEqual(answers[held], mid)
        a.until(lambda f: (update(f) or {}).get("state") == "idle")  # the held submission's turn ends
        self.assertEqual([f for f in a.silence(0.3) if (update(f) or {}).get("state") == "running"], [])
        after = keyed("held", "k-held")  # after its turn ended
        frames = a.until_response(after)
        self.assertEqual(frames[-1]["result"]["messageId"], answers[held])
        self.assertEqual(kinds(a.silence(0.4)), [])  # no user message, no turn
        # a held submission cancelled before insertion takes its waiting retries with it
        slow = keyed("Count SLOWLY to 60", "k-slow2")
        a.until(lambda f: (update(f) or {}).get("state") == "running")
        gone, gone_retry = keyed("held", "k-gone"), keyed("held", "k-gone")
        a.notify("session/cancel", {"sessionId": sid})
        frames = a.until(lambda f: is_response(f, gone_retry))
        codes = {f["id"]: f["error"]["code"] for f in frames if f.get("id") in (gone, gone_retry)}
        self.assertEqual(codes, {gone: -32800, gone_retry: -32800})
        del slow
        a.until(lambda f: (update(f) or {}).get("state") == "idle")
        self.assertEqual(a.close(), 0)
        b = self.start()
        b.initialize()
        b.call("session/resume", {"sessionId": sid, "cwd": "/home/user/project"})
        r = b.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Count SLOWLY to 60"}],
                                      "idempotencyKey": "k-slow"})
        self.assertEqual(r["result"]["messageId"], mid)
        self.assertEqual(b.silence(0.4), [])
        self.assertEqual(b.close(), 0)

    def test_permission(self) -> None:
        a = self.start()
        a.initialize()
        sid = a.new_session()
        a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "permission to delete build/"}]})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "requires_action")
        req = [f for f in frames if f.get("method") == "session/request_permission"][0]
        self.assertEqual(req["id"], 0)
        self.assertEqual([o["kind"] for o in req["params"]["options"]], ["allow_once", "reject_once"])
        a.send({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "idle")
        statuses = [update(f).get("status") for f in frames if (update(f) or {}).get("sessionUpdate") == "tool_call_update"]
        self.assertEqual(statuses, ["in_progress", "completed"])
        self.assertEqual(update(frames[-1])["stopReason"], "end_turn")
        # cancelled while waiting: $/cancel_request, tool call cancelled, idle cancelled
        a.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "permission to edit"}]})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "requires_action")
        pid = [f for f in frames if f.get("method") == "session/request_permission"][0]["id"]
        self.assertEqual(pid, 1)
        a.notify("session/cancel", {"sessionId": sid})
        frames = a.until(lambda f: (update(f) or {}).get("state") == "idle")
        self.assertEqual(kinds(frames), ["$/cancel_request", "tool_call_update", "idle:cancelled"])
        self.assertEqual(frames[0]["params"], {"requestId": pid})
        a.send({"jsonrpc": "2.0", "id": pid, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        self.assertEqual(a.silence(0.3), [])  # late answer ignored
        self.assertEqual(a.close(), 0)

    def test_restart_resume_close_list(self) -> None:
        a = self.start()
        a.initialize()
        sid = a.new_session("/home/user/project")
        empty = a.new_session("/home/user/project")
        other = a.new_session("/home/user/other")
        r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]})
        user_id = r["result"]["messageId"]
        frames = a.until(lambda f: (update(f) or {}).get("state") == "idle")
        agent_id = [update(f)["messageId"] for f in frames if kinds([f]) == ["agent_message_chunk"]][0]
        r = a.call("session/set_config_option", {"sessionId": sid, "configId": "mode", "type": "id", "value": "code"})
        self.assertEqual(r["result"]["configOptions"][0]["currentValue"], "code")
        self.assertEqual(a.call("session/set_config_option", {"sessionId": sid, "configId": "mode", "type": "boolean", "value": True})["error"]["code"], -32602)
        self.assertEqual(a.call("session/set_config_option", {"sessionId": "nope", "configId": "x", "type": "id", "value": "y"})["error"]["code"], -32002)
        self.assertEqual(a.close(), 0)
        self.assertTrue(os.path.isdir(os.path.join(self.dir, ".acp-reference-agent", "sessions")))

        # new process, same directory: the session must be resumed before use
        b = self.start()
        b.initialize()
        self.assertEqual(b.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})["error"]["code"], -32002)
        for bad in ({"type": "_conformance/from_message", "messageId": "x"}, {}, "start", 7, {"type": 7}):
            rid = b.request("session/resume", {"sessionId": sid, "cwd": "/home/user/project", "replayFrom": bad})
            frames = b.until_response(rid)
            self.assertEqual(kinds(frames), ["error"], bad)
            self.assertEqual(frames[-1]["error"]["code"], -32602)
        rid = b.request("session/resume", {"sessionId": sid, "cwd": "/home/user/project"})
        frames = b.until_response(rid)
        self.assertEqual(kinds(frames), ["idle:", "response"])
        self.assertEqual(frames[-1]["result"]["configOptions"][0]["currentValue"], "code")
        self.assertEqual(b.silence(0.2), [])
        # closing while work runs: cancelled idle before the close response, then nothing
        b.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "slowly"}]})
        b.until(lambda f: (update(f) or {}).get("sessionUpdate") == "agent_message_chunk")
        cid = b.request("session/close", {"sessionId": sid})
        frames = b.until_response(cid, timeout=2)
        self.assertEqual(kinds(frames)[-2:], ["idle:cancelled", "response"])
        self.assertEqual(frames[-1]["result"], {})
        self.assertEqual(b.silence(0.3), [])
        self.assertEqual(b.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})["error"]["code"], -32002)
        self.assertEqual(b.call("session/close", {"sessionId": "sess_nope"})["result"], {})
        self.assertEqual(b.close(), 0)

        # third process: replay from the start
        c = self.start()
        c.initialize()
        rid = c.request("session/resume", {"sessionId": sid, "cwd": "/home/user/project", "replayFrom": {"type": "start"}})
        frames = c.until_response(rid)
        self.assertEqual(
            kinds(frames),
            ["user_message", "agent_message", "user_message", "agent_message", "replay_complete", "idle:", "response"],
        )
        self.assertEqual(update(frames[0]), {"sessionUpdate": "user_message", "messageId": user_id,
                                             "content": [{"type": "text", "text": "Say hello"}]})
        self.assertEqual(update(frames[1]), {"sessionUpdate": "agent_message", "messageId": agent_id,
                                             "content": [{"type": "text", "text": "You said: Say hello"}]})
        self.assertTrue(update(frames[3])["content"][0]["text"].startswith("1 "))  # the partial (cancelled) reply
        rid = c.request("session/resume", {"sessionId": empty, "cwd": "/home/user/project", "replayFrom": {"type": "start"}})
        self.assertEqual(kinds(c.until_response(rid)), ["replay_complete", "idle:", "response"])
        r = c.call("session/resume", {"sessionId": "sess_nope", "cwd": "/tmp", "replayFrom": {"type": "start"}})
        self.assertEqual(r["error"]["data"], {"sessionId": "sess_nope"})

        # list: cwd filter, invalid cursor, delete
        listed = c.call("session/list", {})["result"]
        self.assertNotIn("nextCursor", listed)
        self.assertEqual({s["sessionId"] for s in listed["sessions"]}, {sid, empty, other})
        entry = [s for s in listed["sessions"] if s["sessionId"] == sid][0]
        self.assertEqual(entry["title"], "Say hello")
        self.assertRegex(entry["updatedAt"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
        only = c.call("session/list", {"cwd": "/home/user/other"})["result"]["sessions"]
        self.assertEqual([s["sessionId"] for s in only], [other])
        self.assertEqual(c.call("session/list", {"cwd": "/nonexistent"})["result"], {"sessions": []})
        self.assertEqual(c.call("session/list", {"cursor": "!!conformance-invalid-cursor!!"})["error"]["code"], -32602)
        self.assertEqual(c.call("session/delete", {"sessionId": other})["result"], {})
        self.assertEqual(c.call("session/delete", {"sessionId": "sess_never"})["result"], {})
        self.assertNotIn(other, {s["sessionId"] for s in c.call("session/list", {})["result"]["sessions"]})
        self.assertEqual(c.call("session/resume", {"sessionId": other, "cwd": "/home/user/other"})["error"]["code"], -32002)
        self.assertEqual(c.close(), 0)

    def test_list_pagination(self) -> None:
        a = self.start()
        a.initialize()
        created = {a.new_session("/p") for _ in range(53)}
        first = a.call("session/list", {})["result"]
        self.assertEqual(len(first["sessions"]), 50)
        second = a.call("session/list", {"cursor": first["nextCursor"]})["result"]
        self.assertNotIn("nextCursor", second)
        self.assertEqual({s["sessionId"] for s in first["sessions"] + second["sessions"]}, created)
        self.assertEqual(a.close(), 0)

    def test_mutants_start(self) -> None:
        spec = importlib.util.spec_from_file_location("agent_mutants", MUTANTS_SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # puts the repo root on sys.path itself
        MUTANTS = module.MUTANTS
        # a deadline for the first answer, not a pause: 160 interpreters start on a loaded 2-core machine
        startup = 60.0

        def probe(name: str):
            agent = Agent(self.dir, [sys.executable, MUTANTS_SCRIPT, name])
            self.agents.append(agent)
            agent.request("initialize", INIT, request_id=0)
            try:
                if name == "silent":
                    return name, agent.silence(0.5) == []
                if name == "transport-003":
                    if agent.recv_raw(startup) != b"Agent starting...\n":
                        return name, False
                if name.startswith("v1-") and name != "v1-agent":  # the v1 mutants (some answer a wrong version)
                    return name, "result" in agent.recv(startup)
                expected = 1 if name == "v1-agent" else 2  # that mutant negotiates v1 on purpose
                return name, agent.recv(startup)["result"]["protocolVersion"] == expected
            finally:
                agent.close()

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = dict(pool.map(probe, sorted(MUTANTS)))
        self.assertEqual([n for n, ok in results.items() if not ok], [])
        for name, (rules, cls) in MUTANTS.items():
            self.assertTrue(rules and all(isinstance(r, str) for r in rules), name)
            self.assertTrue(isinstance(cls, type), name)


if __name__ == "__main__":
    unittest.main()


class WorkScaleTest(unittest.TestCase):
    """ACP_REFERENCE_WORK_SCALE: a factor on the simulated work; a bad value says so and keeps 1."""

    def test_values(self):
        from acp_conformance.reference.agent import _work_scale
        import contextlib
        import io
        self.assertEqual(_work_scale(None), 1.0)
        self.assertEqual(_work_scale("0"), 0.0)
        self.assertEqual(_work_scale("0.25"), 0.25)
        for bad in ("fast", "-1", "nan"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(_work_scale(bad), 1.0)
            self.assertIn("ACP_REFERENCE_WORK_SCALE", err.getvalue())
