"""Mutants of the CONFIG rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class); ``UNFLAGGED`` holds mutants
the suite only warns or notes about, run by hand. Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class Config006(ReferenceAgent):
    """At the end of every turn it switches its mode to "code" and reports that with a
    config_option_update carrying only the option that changed (a delta, not the complete
    configuration).

    Not in MUTANTS: the suite only *warns* about CONFIG-006 (SessionConfigMonitor.warned, as the
    catalog's check says: "WARN if options vanish"), while CONFIG-006 is a mandatory MUST, so
    test_mutant_is_flagged_for_its_rule (which expects "fail" for it) cannot pass. Run it by hand with
    ``python tests/mutants/agent_mutants.py config-006``."""

    def finish_work(self, session, turn, stop_reason, error):
        super().finish_work(session, turn, stop_reason, error)
        if session.closed:
            return
        session.record["config"] = dict(session.record.get("config") or self.default_config(), mode="code")
        self.save(session)
        changed = [o for o in self.config_options(session.record) if o["configId"] == "mode"]
        self.send_update(session, {"sessionUpdate": "config_option_update", "configOptions": changed})


class Config001(ReferenceAgent):
    """set_config_option answers with a list that lacks the option just set."""

    def handle_set_config_option(self, ctx, params):
        real = self.respond

        def respond(c, result):
            opts = [o for o in result.get("configOptions", []) if o.get("configId") != params.get("configId")]
            real(c, {"configOptions": opts})
        self.respond = respond
        try:
            super().handle_set_config_option(ctx, params)
        finally:
            del self.respond


class Config002(ReferenceAgent):
    """An unknown configId is accepted (the list is answered unchanged)."""

    def handle_set_config_option(self, ctx, params):
        if isinstance(params.get("configId"), str) and params["configId"] not in ("mode", "verbose"):
            session = self.live_session(self.require_str(params, "sessionId"))
            self.respond(ctx, {"configOptions": self.config_options(session.record)})
            return
        super().handle_set_config_option(ctx, params)


class Config003(ReferenceAgent):
    """A `_` custom value type is accepted (the list is answered unchanged)."""

    def handle_set_config_option(self, ctx, params):
        if str(params.get("type", "")).startswith("_"):
            session = self.live_session(self.require_str(params, "sessionId"))
            self.respond(ctx, {"configOptions": self.config_options(session.record)})
            return
        super().handle_set_config_option(ctx, params)


class Config004(ReferenceAgent):
    """The select option offers the value "ask" twice (values must be unique)."""

    def config_options(self, session_record):
        opts = super().config_options(session_record)
        opts[0]["options"] = opts[0]["options"] + [{"value": "ask", "name": "Ask again"}]
        return opts


class Config005(ReferenceAgent):
    """The option list holds the boolean option twice."""

    def config_options(self, session_record):
        opts = super().config_options(session_record)
        return opts + [dict(opts[1])]


class Config002RefusedButChanged(ReferenceAgent):
    """An unknown configId is refused with -32602, but the refusal changes the configuration anyway: the option
    named by ``CHANGES`` takes another value (a refused request must leave the configuration unchanged)."""

    CHANGES = "mode"

    def handle_set_config_option(self, ctx, params):
        if isinstance(params.get("configId"), str) and params["configId"] not in ("mode", "verbose"):
            session = self.live_session(self.require_str(params, "sessionId"))
            config = dict(session.record.get("config") or self.default_config())
            config[self.CHANGES] = ("code" if config.get("mode") == "ask" else "ask") if self.CHANGES == "mode" \
                else not config.get("verbose", False)
            session.record["config"] = config
            self.save(session)
        super().handle_set_config_option(ctx, params)


class Config002RefusedButChangedVerbose(Config002RefusedButChanged):
    """As Config002RefusedButChanged, for the boolean option."""

    CHANGES = "verbose"


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "config-001": (("CONFIG-001",), Config001),
    "config-002": (("CONFIG-002",), Config002),
    "config-002-refused-changes-select": (("CONFIG-002",), Config002RefusedButChanged),
    "config-002-refused-changes-boolean": (("CONFIG-002",), Config002RefusedButChangedVerbose),
    "config-003": (("CONFIG-003",), Config003),
    "config-004": (("CONFIG-004",), Config004),
    "config-005": (("CONFIG-005",), Config005),
}

# flagged only as a warning or a note although the rule asks for more: not run end to end
UNFLAGGED: dict[str, tuple[tuple[str, ...], type]] = {
    "config-006": (("CONFIG-006",), Config006),
}
