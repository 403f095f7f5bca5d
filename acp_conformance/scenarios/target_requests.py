"""The answering policy for requests from the target: permission and elicitation answers as the scenario scripts
them (options.permission_answers / elicitation_answers, else --acp-permission-answer), -32601 for anything else."""

from __future__ import annotations

from typing import Any

from ..wire.transcript import Frame
from ..wire.transport import TargetClosed


class TargetRequests:
    """Mixed into Runner: needs scenario, settings, peer, _tg, _answered and _held."""

    def _on_request(self, frame: Frame, msg: dict[str, Any]) -> None:
        """Requests from the target: answered by the scenario's policy (run in the reader task)."""
        method = msg.get("method")
        if method == "session/request_permission":
            answer = self._scripted("permission_answers", self.settings.permission_answer)
            if answer == "hold":
                self._held.append(msg)
                return
            special = _ODD_PERMISSION_ANSWERS.get(answer)
            if special is not None:
                self._tg.start_soon(self._respond, msg["id"], special.get("result"), special.get("error"))
                return
            self._tg.start_soon(self._respond, msg["id"], {"outcome": _permission_outcome(msg, answer)}, None)
        elif self.settings.protocol == 1 and method in _V1_CLIENT_ANSWERS:
            self._tg.start_soon(self._respond, msg["id"], *self._v1_answer(method))
        elif method == "elicitation/create" and self.scenario.options.get("elicitation_answers"):
            answer = self._scripted("elicitation_answers", "decline")
            if answer == "hold":
                return
            if answer == "error":
                self._tg.start_soon(self._respond, msg["id"], None, {"code": -32603, "message": "Internal error"})
                return
            result = _ELICITATION_ANSWERS.get(answer) or {"action": answer}
            if answer == "accept":
                schema = (msg.get("params") or {}).get("requestedSchema") or {}
                props = schema.get("properties") if isinstance(schema, dict) else None
                result = {"action": "accept", "content": {k: _sample_value(v) for k, v in (props or {}).items()}}
            self._tg.start_soon(self._respond, msg["id"], result, None)
        else:
            self._tg.start_soon(self._respond, msg["id"], None,
                                {"code": -32601, "message": f"Method not found: {method}"})

    def _v1_answer(self, method: str) -> tuple[Any, Any]:
        """A v1 client method (fs, terminal), answered when the suite advertised its capability, else -32601."""
        caps = getattr(self, "client_caps", {}) or {}
        cap = caps.get("terminal") if method.startswith("terminal/") else (caps.get("fs") or {}).get(
            "readTextFile" if method == "fs/read_text_file" else "writeTextFile")
        if cap is not True:
            return None, {"code": -32601, "message": f"Method not found: {method} (not advertised)"}
        return _V1_CLIENT_ANSWERS[method], None

    def _scripted(self, key: str, default: str) -> str:
        """The next answer of a scenario's ``options.<key>`` list (the last one repeats), else default."""
        answers = self.scenario.options.get(key)
        if not isinstance(answers, list) or not answers:
            return default
        n = self._answered.get(key, 0)
        self._answered[key] = n + 1
        return str(answers[min(n, len(answers) - 1)])

    async def _respond(self, id: Any, result: Any, error: Any) -> None:
        if self.peer is not None:
            try:
                await self.peer.respond(id, result, error)
            except TargetClosed:
                pass


# permission answers besides allow / reject / cancelled / hold (scenario options.permission_answers)
_ODD_PERMISSION_ANSWERS: dict[str, dict[str, Any]] = {
    "not_offered": {"result": {"outcome": {"outcome": "selected", "optionId": "__conformance_not_offered__"}}},
    "unknown": {"result": {"outcome": {"outcome": "_conformance/maybe"}}},
    "approved": {"result": {"outcome": {"outcome": "approved"}}},
    "error": {"error": {"code": -32603, "message": "Internal error"}},
}
# the suite's answers as a v1 client (https://agentclientprotocol.com/protocol/v1/file-system, terminals)
_V1_CLIENT_ANSWERS: dict[str, Any] = {
    "fs/read_text_file": {"content": "# conformance\n"},
    "fs/write_text_file": {},
    "terminal/create": {"terminalId": "term_conformance_1"},
    "terminal/output": {"output": "hello\n", "truncated": False, "exitStatus": {"exitCode": 0}},
    "terminal/wait_for_exit": {"exitCode": 0},
    "terminal/kill": {},
    "terminal/release": {},
}
# elicitation answers (scenario options.elicitation_answers); "accept" fills the requested schema
_ELICITATION_ANSWERS: dict[str, dict[str, Any]] = {
    "decline": {"action": "decline"},
    "cancel": {"action": "cancel"},
    "custom": {"action": "_conformance/custom"},
    "decline_content": {"action": "decline", "content": {"x": 1}},
}


def _permission_outcome(msg: dict[str, Any], answer: str) -> dict[str, Any]:
    """The outcome answering permission request ``msg`` with ``allow`` / ``reject`` (the first option of that
    kind; none offered: cancelled) or ``cancelled``."""
    options = (msg.get("params") or {}).get("options") or []
    if answer in ("allow", "reject"):
        chosen = next((o for o in options if isinstance(o, dict) and str(o.get("kind", "")).startswith(answer)), None)
        if chosen is not None:
            return {"outcome": "selected", "optionId": chosen.get("optionId")}
    return {"outcome": "cancelled"}



def _sample_value(prop: Any) -> Any:
    t = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(prop, dict) and isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    return {"number": 1, "integer": 1, "boolean": True}.get(t, "conformance")
