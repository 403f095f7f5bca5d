"""Step handlers that set a connection up: initialize (with --acp-auth-method's login), session/new, and the
scenario's required capabilities; plus why a scenario stopped at authentication."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..protocol.versions import v1_names_only
from .model import Step
from .run_types import AUTH_REQUIRED, SUITE_INFO, AuthBlocked, ScenarioAbort, ScenarioSkip
from .values import _short, _version


class SetupSteps:
    """Mixed into Runner."""

    async def _step_initialize(self, a: dict[str, Any], step: Step) -> None:
        if self.settings.protocol == 1:
            await self._initialize_v1(a, step)
            return
        params = dict(a.get("params") or {})
        params.setdefault("protocolVersion", a.get("protocolVersion", 2))
        params.setdefault("capabilities", a.get("capabilities", {}))
        params.setdefault("info", a.get("info", SUITE_INFO))
        p = await self._send_request("initialize", params)
        if a.get("wait") is False:
            self._save(a, p)
            return
        await self._await(p)
        self._save(a, p)
        expect = a.get("expect", "ok")
        if p.error is not None:
            if expect == "ok":
                raise ScenarioAbort(f"{step.describe()}: initialize failed: {_short(p.error)}; "
                                    "the scenario needs an initialized connection")
            return
        if isinstance(p.result, dict):
            v, asked = p.result.get("protocolVersion"), params.get("protocolVersion")
            if _version(asked) is not None and asked >= 2 and _version(v) is not None and v < 2:
                # an agent of an older protocol: what follows is v2 traffic it cannot serve (and would
                # only time out on); the plugin reports the version as the run's verdict
                raise ScenarioAbort(f"initialize negotiated protocol version {v}; the scenario needs version 2")
            v1_names = v1_names_only(p.result)
            if v1_names:  # "2" in version 1's words (an agent that echoes the version asked): the same
                raise ScenarioAbort(f"initialize answered protocol version {v} with version 1's "
                                    f"{', '.join(v1_names)}; the scenario needs version 2")
            self.result.agent_init = p.result
            self.vars["agent"] = p.result
            self._check_requires()
            if self.settings.auth_method:  # --acp-auth-method: log in before any session/new
                login = await self._await(await self._send_request("auth/login",
                                                                   {"methodId": self.settings.auth_method}))
                if login.error is not None:
                    raise AuthBlocked(f"blocked by authentication: auth/login with methodId "
                                      f"{self.settings.auth_method!r} failed: {_short(login.error)}; "
                                      f"{self._auth_offer()}")

    async def _initialize_v1(self, a: dict[str, Any], step: Step) -> None:
        """initialize in version 1's words (https://agentclientprotocol.com/protocol/v1/initialization)."""
        params = dict(a.get("params") or {})
        params.setdefault("protocolVersion", a.get("protocolVersion", 1))
        params.setdefault("clientCapabilities", a.get("capabilities", {}))
        params.setdefault("clientInfo", a.get("info", SUITE_INFO))
        p = await self._await(await self._send_request("initialize", params))
        self._save(a, p)
        if p.error is not None and a.get("expect", "ok") == "ok":
            raise ScenarioAbort(f"{step.describe()}: initialize failed: {_short(p.error)}; "
                                "the scenario needs an initialized connection")
        if isinstance(p.result, dict):
            self.result.agent_init = p.result
            self.vars["agent"] = p.result
            self.client_caps = params["clientCapabilities"]
            self._check_requires()

    def _blocked_by_auth(self) -> None:
        """The scenario could not go on after the agent answered auth_required (-32000): to a request, or as
        the error of a turn that ended (a released agent checks its credentials at the first prompt)."""
        for f in self.transcript.frames:
            m = f.msg if f.direction == "received" and isinstance(f.msg, dict) else None
            if m is None:
                continue
            err = m.get("error")
            if "method" not in m and isinstance(err, dict) and err.get("code") == AUTH_REQUIRED:
                what = f"a request was answered auth_required (-32000) (frame #{f.seq})"
            else:
                u = (m.get("params") or {}).get("update") if m.get("method") == "session/update" else None
                err = u.get("error") if isinstance(u, dict) else None
                if not (isinstance(err, dict) and err.get("code") == AUTH_REQUIRED):
                    continue
                what = f"a turn ended with error auth_required (-32000) (frame #{f.seq})"
            how = (f" after auth/login with methodId {self.settings.auth_method!r}" if self.settings.auth_method
                   else "")
            self.result.auth_blocked = f"blocked by authentication: {what}{how}; {self._auth_offer()}"
            return

    def _auth_offer(self) -> str:
        """The authMethods of the initialize result, as the user needs them to pick --acp-auth-method."""
        methods = (self.result.agent_init or {}).get("authMethods")
        offered = []
        for m in methods if isinstance(methods, list) else []:
            if isinstance(m, dict):
                mid = m.get("methodId", m.get("id"))
                offered.append(f"{mid} ({m['type']})" if isinstance(m.get("type"), str) else str(mid))
        if not offered:
            return "the agent offers no authMethods in its initialize result"
        return f"the agent offers {', '.join(offered)}: give one with --acp-auth-method ID"

    def _check_requires(self) -> None:
        init = self.result.agent_init or {}
        caps = (init.get("agentCapabilities") if self.settings.protocol == 1 else init.get("capabilities")) or {}
        for path in self.scenario.requires:
            node: Any = caps
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if path.startswith("result."):  # a member of the initialize result: a non-empty list or object
                node = self.result.agent_init or {}
                for part in path.split(".")[1:]:
                    node = node.get(part) if isinstance(node, dict) else None
                if not node or not isinstance(node, (list, dict)):
                    raise ScenarioSkip(f"the agent's initialize result has no {path[7:]}")
                continue
            if not isinstance(node, dict):
                raise ScenarioSkip(f"the agent does not advertise capabilities.{path}")

    async def _step_new_session(self, a: dict[str, Any], step: Step) -> None:
        params = dict(a.get("params") or {})
        params.setdefault("cwd", a.get("cwd") or str(self.workdir))
        if self.settings.protocol == 1:
            params.setdefault("mcpServers", [])  # required in version 1
        if a.get("mkdir"):  # the session's directory must exist (a subdirectory of the test's own)
            Path(params["cwd"]).mkdir(parents=True, exist_ok=True)
        p = await self._await(await self._send_request("session/new", params))
        if p.error is not None or not isinstance(p.result, dict) or not isinstance(p.result.get("sessionId"), str):
            if a.get("expect") == "any":
                return
            if isinstance(p.error, dict) and p.error.get("code") == AUTH_REQUIRED and not self.settings.auth_method:
                raise AuthBlocked(f"blocked by authentication: session/new was answered auth_required (-32000); "
                                  f"{self._auth_offer()}")
            raise ScenarioAbort(f"{step.describe()}: session/new did not create a session: "
                                f"{_short(p.error if p.error is not None else p.result)}")
        sid = p.result["sessionId"]
        self.sessions[sid] = {"cwd": params["cwd"], "config": p.result.get("configOptions")}
        self._save(a, sid)
