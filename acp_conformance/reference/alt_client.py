"""The reference client's alternative personality: as correct, but with the other legal choice wherever
the spec leaves one to the client.

``python -m acp_conformance.reference.alt_client [OPTIONS] -- AGENT ARGS...`` takes the options of
``acp_conformance.reference.client`` (plus ``--close`` [ACP_CLIENT_CLOSE=1]) and differs in this:

* the agent is argv after ``--``, executed as given (never split like a command line);
* it never cancels, closes or lists unless told (``--close``: session/close before leaving; without it
  the client simply closes its agent's stdin);
* a permission request gets the first option offered, whatever its kind;
* a form elicitation is answered ``cancel`` instead of ``decline``;
* initialize carries no ``_meta``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from .client import ReferenceClient, parse as _parse


class AltClient(ReferenceClient):
    def permission_outcome(self, params: dict) -> dict:
        if params.get("sessionId") in self.cancelled_sessions or self.opts.permission == "cancelled":
            return {"outcome": "cancelled"}
        if self.opts.permission != "allow":  # told to choose by kind
            return super().permission_outcome(params)
        options = [o for o in params.get("options") or [] if isinstance(o, dict) and isinstance(o.get("optionId"), str)]
        if not options:
            return {"outcome": "cancelled"}
        return {"outcome": "selected", "optionId": options[0]["optionId"]}

    async def on_request(self, msg: dict) -> None:
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if msg["method"] == "elicitation/create" and params.get("mode") == "form":
            await self.respond(msg["id"], {"action": "cancel"})
            return
        await super().on_request(msg)

    def initialize_params(self) -> dict:
        params = super().initialize_params()
        params.pop("_meta", None)
        params["capabilities"] = {"elicitation": {"form": {}}}
        return params

    async def close_session(self, session_id: str) -> None:
        if self.opts.close:
            await super().close_session(session_id)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("usage: python -m acp_conformance.reference.alt_client [OPTIONS] -- AGENT ARGS...")
    i = argv.index("--")
    own, agent = argv[:i], argv[i + 1:]
    close = "--close" in own or os.environ.get("ACP_CLIENT_CLOSE") == "1"
    own = [a for a in own if a != "--close"]
    opts, _ = _parse(own + ["--", "-"])  # the shared options; the agent argv is taken as given
    opts.close = close
    if not agent:
        raise SystemExit("give the agent's command after --")
    return opts, agent


def main(argv: list[str] | None = None) -> int:
    opts, agent = parse(list(sys.argv[1:] if argv is None else argv))
    return asyncio.run(AltClient(opts).main(agent))


if __name__ == "__main__":
    sys.exit(main())
