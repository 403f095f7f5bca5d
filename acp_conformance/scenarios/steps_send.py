"""Step handlers that send to the target: prompts, cancels, resume/close, raw and arbitrary requests,
set_config, late answers to held permission requests, and notes."""

from __future__ import annotations

from typing import Any

from ..rules.reading import id_key
from ..rules.verdicts import NOT_EXERCISED_SKIP
from ..wire.transcript import EV_NOTE
from .idle_owed import _IdleOwed
from .model import Step
from .run_types import HarnessError, ScenarioAbort, ScenarioSkip
from .target_requests import _permission_outcome
from .values import _select_values, _short, _text


class SendSteps:
    """Mixed into Runner."""

    def _prompt_blocks(self, a: dict[str, Any]) -> list[Any]:
        if "blocks" in a:
            return a["blocks"]
        text = a.get("text")
        if text is None:
            text = self.settings.prompts.get("simple", "Say hello")
        return [{"type": "text", "text": _text(text)}]

    async def _step_prompt(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        params = {"sessionId": sid, "prompt": self._prompt_blocks(a)}
        if a.get("key") is not None:  # idempotencyKey: the same on every attempt of one submission
            params["idempotencyKey"] = _text(a["key"])
        p = await self._send_request("session/prompt", params)
        self._save(a, p)
        wait = a.get("wait", "idle")
        if self.settings.protocol == 1 and wait == "idle":
            wait = "response"  # a v1 turn ends with its response (https://agentclientprotocol.com/protocol/v1/prompt-turn)
        if wait in ("none", False):
            return
        await self._await(p)
        if wait == "idle" and p.error is None:
            await self._wait_idle(sid, since=p.frame.seq, what=f"the idle state_update ending the work of "
                                                                 f"session/prompt #{p.frame.seq}")

    async def _step_cancel(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        if a.get("if_working") and not _IdleOwed(sid, self.transcript.frames).owed():
            # the scenario has what it needs and the work already ended: nothing to cancel
            self.transcript.event(EV_NOTE, text=f"{step.describe()} left out: the work of {sid} had ended")
            return
        f = await self.peer.notify("session/cancel", {"sessionId": sid})
        if isinstance(sid, str):
            self.last_sent[sid] = f.seq

    async def _step_resume(self, a: dict[str, Any], step: Step) -> None:
        sid = a.get("session")
        params = dict(a.get("params") or {})
        params.setdefault("sessionId", sid)
        params.setdefault("cwd", a.get("cwd") or self.sessions.get(sid, {}).get("cwd") or str(self.workdir))
        if "replay" in a:
            replay = a["replay"]
            if replay is True:
                params["replayFrom"] = {"type": "start"}
            elif replay is not False:
                params["replayFrom"] = replay  # null or a literal cursor
        p = await self._send_request("session/resume", params)
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)
            if p.error is not None and a.get("expect", "any") == "ok":
                if isinstance(p.error, dict) and p.error.get("code") == -32002:
                    # the agent does not keep the session for this form of resume: its right (insertion is no
                    # promise of durable storage); the other forms of resume judge the rules, and a rule no form
                    # reached stays not-tested, its reason listing the forms tried
                    raise ScenarioSkip(f"not exercised: the resume {self._resume_form(sid)} was answered -32002 "
                                       "(session not found): the agent does not keep the session for it")
                raise ScenarioAbort(f"{step.describe()}: session/resume failed: {_short(p.error)}")

    def _resume_form(self, sid: Any) -> str:
        """Which form of resume this is, for the reason a refused one gives."""
        if self.transcript.conn > 0:
            return "in a new agent process"
        if sid in self._closed_here:
            return "on the same connection after session/close"
        return "of a live session on the same connection"

    async def _step_close(self, a: dict[str, Any], step: Step) -> None:
        if isinstance(a.get("session"), str):
            self._closed_here.add(a["session"])
        p = await self._send_request("session/close", {"sessionId": a.get("session")})
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)

    async def _step_request(self, a: dict[str, Any], step: Step) -> None:
        if not isinstance(a.get("method"), str):
            raise HarnessError(f"{step.describe()}: request needs a method")
        p = await self._send_request(a["method"], a.get("params", {}), a.get("id"))
        self._save(a, p)
        if a.get("wait", True):
            await self._await(p)
            if a.get("expect") == "ok" and p.error is not None:
                raise ScenarioAbort(f"{step.describe()}: {a['method']} failed: {_short(p.error)}")

    async def _step_list_pages(self, a: dict[str, Any], step: Step) -> None:
        """session/list with ``params``, then with each nextCursor it gives (a string, "" included) until it gives
        none, gives one already followed (a loop: LIST-004 judges it, and following it again shows nothing more)
        or ``max`` pages (default 50) were read."""
        params = dict(a.get("params") or {})
        followed: set[str] = set()
        for _ in range(int(a.get("max", 50))):
            p = await self._send_request("session/list", params)
            await self._await(p)
            nxt = p.result.get("nextCursor") if isinstance(p.result, dict) else None
            if not isinstance(nxt, str) or nxt in followed:
                return
            followed.add(nxt)
            params = dict(params, cursor=nxt)

    async def _step_notify(self, a: dict[str, Any], step: Step) -> None:
        await self.peer.notify(a["method"], a.get("params"))

    async def _step_raw(self, a: dict[str, Any], step: Step) -> None:
        line = a.get("line")
        if isinstance(a.get("b64"), str):  # bytes that are not UTF-8 (the fuzzer's invalid-encoding cases)
            import base64
            await self.peer.send_raw(base64.b64decode(a["b64"]))
            return
        if not isinstance(line, str):
            raise HarnessError(f"{step.describe()}: raw needs a line (string) or b64 (base64 bytes)")
        mark = len(self.transcript.frames)
        await self.peer.send_raw(line.encode("utf-8"))
        if "answer" in a:  # the line is a request: wait for its answer (by id) before the next step
            want = id_key(a["answer"])  # by JSON type and value: "1" is not 1, true is not 1
            await self.peer.wait_for(lambda f: isinstance(f.msg, dict) and "method" not in f.msg
                                     and id_key(f.msg.get("id")) == want, self._timeout(),
                                     f"the answer to {a['answer']!r}", since=mark)

    async def _step_set_config(self, a: dict[str, Any], step: Step) -> None:
        """session/set_config_option on the first advertised option of kind ``pick`` (select | boolean).

        ``to``: ``other`` (a different valid value), ``current`` (its current value), or a deliberately
        wrong request: ``unknown_id``, ``bad_value``, ``custom_type``, ``wrong_type``. No such option:
        the step does nothing (the config monitors then report the rule untested or skipped)."""
        sid = a.get("session")
        opts = (self.sessions.get(sid) or {}).get("config")
        if self.settings.protocol == 1:
            await self._set_config_v1(a, sid, opts)
            return
        kind = a.get("pick", "select")
        opt = next((o for o in opts or [] if isinstance(o, dict) and o.get("type") == kind
                    and isinstance(o.get("configId"), str)), None)
        if opt is None:
            return
        cur, to = opt.get("currentValue"), a.get("to", "other")
        values = [v.get("value") for v in _select_values(opt)] if kind == "select" else [True, False]
        vtype = "id" if kind == "select" else "boolean"
        params: dict[str, Any] = {"sessionId": sid, "configId": opt["configId"], "type": vtype}
        if to == "other":
            other = [v for v in values if v != cur]
            if not other:
                return
            params["value"] = other[0]
        elif to == "current":
            params["value"] = cur
        elif to == "unknown_id":
            params.update(configId="__conformance_unknown__", value=cur)
        elif to == "bad_value":
            params["value"] = "__conformance_bad_value__" if kind == "select" else "yes"
        elif to == "custom_type":
            params.update(type="_conformance/custom", value={})
        elif to == "wrong_type":
            params.update(type="boolean" if kind == "select" else "id", value=True if kind == "select" else "x")
        else:
            raise HarnessError(f"{step.describe()}: unknown set_config target {to!r}")
        if to in ("other", "current"):
            p = await self._await(await self._send_request("session/set_config_option", params))
        else:  # deliberately wrong: not checked against the schema
            p = await self._await(await self.peer.request("session/set_config_option", params))
        self._save(a, p)
        if p.error is None and isinstance(p.result, dict) and isinstance(p.result.get("configOptions"), list):
            self.sessions[sid]["config"] = p.result["configOptions"]

    async def _set_config_v1(self, a: dict[str, Any], sid: Any, opts: Any) -> None:
        """session/set_config_option in version 1's words: another value of the first select option."""
        opt = next((o for o in opts or [] if isinstance(o, dict) and o.get("type") == "select"
                    and isinstance(o.get("id"), str)), None)
        other = [v for v in (_select_values(opt) if opt else []) if v.get("value") != opt.get("currentValue")]
        if not other:
            return
        p = await self._await(await self._send_request("session/set_config_option", {
            "sessionId": sid, "configId": opt["id"], "value": other[0].get("value")}))
        self._save(a, p)

    async def _step_answer_held(self, a: dict[str, Any], step: Step) -> None:
        """Answer the permission requests held so far (of ``session``, else all) with ``with`` (default allow):
        a late answer, e.g. after the work that asked was cancelled. None held: the agent never asked, which
        is its right, so the scenario was not exercised."""
        sid = a.get("session")
        mine = [m for m in self._held if sid is None or (m.get("params") or {}).get("sessionId") == sid]
        if not mine:
            raise ScenarioSkip(f"{NOT_EXERCISED_SKIP}the agent asked no permission that the suite held, so there "
                               "was nothing to answer late")
        self._held = [m for m in self._held if m not in mine]
        for m in mine:
            await self._respond(m["id"], {"outcome": _permission_outcome(m, str(a.get("with", "allow")))}, None)

    async def _step_note(self, a: dict[str, Any], step: Step) -> None:
        self.transcript.event(EV_NOTE, text=str(a.get("text", "")))
