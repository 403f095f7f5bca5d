"""ACP v1 initialization (https://agentclientprotocol.com/protocol/v1/initialization): the answer to initialize,
the version negotiated, the baseline methods and content every agent supports."""

from __future__ import annotations

from ._common import js
from ._v1 import V1Monitor, error_of, first_answer, is_int, params, requests, result_of

BASELINE_CONTENT = ("text", "resource_link")


class V1InitMonitor(V1Monitor):
    rules = ("V1-INIT-001", "V1-INIT-002", "V1-INIT-003", "V1-INIT-004", "V1-CONTENT-001")

    def judge(self, conn, msgs) -> None:
        for req in requests(msgs, "initialize"):
            ans = first_answer(req)
            res = result_of(ans)
            if isinstance(res, dict):
                self._answer(req, ans, res)
        for method in ("session/new", "session/prompt"):
            for req in requests(msgs, method):
                self._baseline(req, first_answer(req))
        for req in requests(msgs, "session/prompt"):
            blocks = params(req).get("prompt")
            if isinstance(blocks, list) and blocks and all(isinstance(b, dict) and b.get("type") in BASELINE_CONTENT
                                                           for b in blocks):
                self._content(req, first_answer(req))

    def _answer(self, req, ans, res) -> None:
        wrong = [f"{k} is {js(res.get(k), 60)}" for k, t in (("agentCapabilities", dict), ("authMethods", list),
                                                             ("agentInfo", dict)) if k in res and not isinstance(res[k], t)]
        if not is_int(res.get("protocolVersion")) or res["protocolVersion"] < 0:
            wrong.insert(0, f"protocolVersion is {js(res.get('protocolVersion'), 40)}, not an integer")
        if wrong:
            self.failed("V1-INIT-001", f"initialize answered with {'; '.join(wrong)}", [ans.frame, req.frame])
        else:
            self.passed("V1-INIT-001", f"initialize answered protocolVersion {res['protocolVersion']}", [ans.frame])
        asked, got = params(req).get("protocolVersion"), res.get("protocolVersion")
        if is_int(asked) and is_int(got):
            if asked == 1 and got != 1:
                self.failed("V1-INIT-002", f"asked for version 1, which this agent speaks, it answered {got}",
                            [ans.frame, req.frame])
            elif got > asked:
                self.failed("V1-INIT-002", f"asked for version {asked}, it answered {got}, a version above the one "
                                           "asked", [ans.frame, req.frame])
            else:
                self.passed("V1-INIT-002", f"asked for version {asked}, it answered {got}", [ans.frame, req.frame])
        info = res.get("agentInfo")
        if isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
            self.passed("V1-INIT-003", f"agentInfo {js(info, 120)}", [ans.frame])
        else:
            self.failed("V1-INIT-003", f"initialize result without agentInfo name and version ({js(info, 80)})",
                        [ans.frame])

    def _baseline(self, req, ans) -> None:
        err = error_of(ans)
        if isinstance(err, dict) and err.get("code") == -32601:
            self.failed("V1-INIT-004", f"{req.method} answered -32601 (method not found): {js(err, 120)}",
                        [ans.frame, req.frame])
        elif req.method == "session/new" and isinstance(result_of(ans), dict) \
                and isinstance(result_of(ans).get("sessionId"), str):
            self.passed("V1-INIT-004", "session/new created a session", [ans.frame])

    def _content(self, req, ans) -> None:
        kinds = sorted({b["type"] for b in params(req)["prompt"]})
        err, res = error_of(ans), result_of(ans)
        if isinstance(err, dict):
            words = str(err.get("message", "")).lower()
            if err.get("code") == -32602 or "support" in words or "content" in words:  # a refusal of the blocks
                self.failed("V1-CONTENT-001", f"a prompt of {', '.join(kinds)} blocks was refused: {js(err, 160)}",
                            [ans.frame, req.frame])
            else:  # a failure of the turn (its model, a cancel), not of its content: not this rule's to judge
                self.noted("V1-CONTENT-001", f"a prompt of {', '.join(kinds)} blocks ended with an error that does "
                                             f"not speak of its content: {js(err, 160)}", [ans.frame])
        elif isinstance(res, dict) and "stopReason" in res:
            self.passed("V1-CONTENT-001", f"a prompt of {', '.join(kinds)} blocks was served "
                                          f"(stopReason {js(res.get('stopReason'), 40)})", [ans.frame])
