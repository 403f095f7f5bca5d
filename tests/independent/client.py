"""An ACP v2 client written apart from the suite, from the protocol's public text (the v2 schema and the
prompt-turn page), with choices of its own: the suite's independent target on the client side (issue 25).

    python client.py [--prompt TEXT] -- AGENT [ARGS...]

It starts AGENT, initializes (protocol version 2, no optional capability), creates a session in its working
directory, sends one text prompt and waits for the end of that turn (the prompt's answer and an idle state of
the session, in either order), closes the session and leaves. Its choices: it answers every permission request at
once (the first "allow" option, else the first one); it never cancels, lists, resumes or sets options on its own;
it offers no elicitation, so any elicitation/create is refused -32602; any other method of the agent is -32601;
every notification is taken without an answer (unknown updates are ignored). Standard library only; it does not
import the suite.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time

PROTOCOL_VERSION = 2
TURN_TIMEOUT = 30.0
ANSWER_TIMEOUT = 30.0


class Gone(Exception):
    """The agent closed its end."""


class Failed(Exception):
    def __init__(self, error: dict):
        super().__init__(str(error.get("message", error)) if isinstance(error, dict) else str(error))
        self.code = error.get("code") if isinstance(error, dict) else None


class Client:
    def __init__(self, agent: list[str]):
        self.proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lock = threading.Lock()
        self.last_id = 0
        self.waiting: dict[int, queue.Queue] = {}
        self.closed = threading.Event()
        self.changed = threading.Condition()
        self.idle_seen: set = set()  # sessions that reported idle since we last looked
        threading.Thread(target=self._read, daemon=True).start()

    # -- the wire: one JSON object a line, both ways ------------------------------------------
    def _write(self, msg: dict) -> None:
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self.lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                raise Gone() from None

    def call(self, method: str, params: dict) -> dict:
        with self.lock:
            self.last_id += 1
            rid = self.last_id
            box: queue.Queue = queue.Queue()
            self.waiting[rid] = box
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while True:
            try:
                msg = box.get(timeout=0.2)
                break
            except queue.Empty:
                if self.closed.is_set() or time.monotonic() > deadline:
                    self.waiting.pop(rid, None)
                    raise Gone()
        if "error" in msg:
            raise Failed(msg["error"])
        return msg.get("result") if isinstance(msg.get("result"), dict) else {}

    def _read(self) -> None:
        try:
            for line in self.proc.stdout:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue  # not JSON: nothing to answer
                for item in msg if isinstance(msg, list) else [msg]:
                    if isinstance(item, dict):
                        self._dispatch(item)
        finally:
            self.closed.set()
            with self.changed:
                self.changed.notify_all()

    def _dispatch(self, msg: dict) -> None:
        method = msg.get("method")
        if isinstance(method, str):
            if msg.get("id") is not None:
                self._answer(msg["id"], method, msg.get("params") if isinstance(msg.get("params"), dict) else {})
            else:
                self._notified(method, msg.get("params") if isinstance(msg.get("params"), dict) else {})
        elif "id" in msg and ("result" in msg or "error" in msg):
            box = self.waiting.pop(msg["id"], None) if type(msg["id"]) is int else None  # ours are integers
            if box is not None:
                box.put(msg)

    # -- what the agent asks and tells ------------------------------------------------------
    def _answer(self, rid, method: str, params: dict) -> None:
        if method == "session/request_permission":
            reply = {"result": {"outcome": self._choose(params.get("options"))}}
        elif method == "elicitation/create":  # no elicitation mode was offered in initialize
            reply = {"error": {"code": -32602, "message": "This client offers no elicitation"}}
        else:
            reply = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        try:
            self._write({"jsonrpc": "2.0", "id": rid, **reply})
        except Gone:
            pass

    @staticmethod
    def _choose(options) -> dict:
        offered = [o for o in options if isinstance(o, dict) and isinstance(o.get("optionId"), str)] \
            if isinstance(options, list) else []
        allow = [o for o in offered if str(o.get("kind", "")).startswith("allow")]
        if not (allow or offered):
            return {"outcome": "cancelled"}
        return {"outcome": "selected", "optionId": (allow or offered)[0]["optionId"]}

    def _notified(self, method: str, params: dict) -> None:
        if method != "session/update":
            return  # $/cancel_request (we hold no request), elicitation/complete, extensions: nothing to do
        update = params.get("update")
        if isinstance(update, dict) and update.get("sessionUpdate") == "state_update" \
                and update.get("state") == "idle":
            with self.changed:
                self.idle_seen.add(params.get("sessionId"))
                self.changed.notify_all()

    # -- the conversation ---------------------------------------------------------------------
    def run(self, prompt: str) -> int:
        init = self.call("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                        "info": {"name": "independent-test-client", "version": "0.1"}})
        if init.get("protocolVersion") != PROTOCOL_VERSION:
            print(f"the agent speaks protocol {init.get('protocolVersion')!r}, not 2", file=sys.stderr)
            return 1
        session = self.new_session(init)
        if session is None:
            return 1
        with self.changed:
            self.idle_seen.discard(session)
        try:
            self.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]})
        except Failed as e:  # any code: this request failed, the session and the connection did not
            print(f"the prompt failed: {e}", file=sys.stderr)
        else:
            with self.changed:  # the answer is not the end of the turn: an idle state of the session is
                self.changed.wait_for(lambda: session in self.idle_seen or self.closed.is_set(), TURN_TIMEOUT)
        try:
            self.call("session/close", {"sessionId": session})
        except Failed as e:
            if e.code != -32002:  # "not found": closed already, as good as closed
                print(f"session/close failed: {e}", file=sys.stderr)
        return 0

    def new_session(self, init: dict):
        params = {"cwd": os.path.abspath(os.getcwd())}
        try:
            return self.call("session/new", params).get("sessionId")
        except Failed as e:
            logins = [m for m in init.get("authMethods") or [] if isinstance(m, dict) and m.get("type") == "agent"]
            if e.code != -32000 or not logins:
                print(f"session/new failed: {e}", file=sys.stderr)
                return None
        self.call("auth/login", {"methodId": logins[0].get("methodId")})
        return self.call("session/new", params).get("sessionId")

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: client.py [--prompt TEXT] -- AGENT [ARGS...]", file=sys.stderr)
        return 2
    cut = argv.index("--")
    own, agent = argv[:cut], argv[cut + 1:]
    prompt = own[own.index("--prompt") + 1] if "--prompt" in own[:-1] else "Say hello"
    client = Client(agent)
    try:
        return client.run(prompt)
    except (Gone, Failed) as e:
        print(f"the agent went away or refused: {e or type(e).__name__}", file=sys.stderr)
        return 1
    finally:
        client.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
