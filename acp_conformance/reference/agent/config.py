"""Per-session config options (mode, verbose) and session/set_config_option."""

from __future__ import annotations

from .wire import Ctx, InvalidParams


class ConfigMixin:
    # -- config options ------------------------------------------------------------------------

    def default_config(self) -> dict:
        return {"mode": "ask", "verbose": False}

    def config_options(self, session_record: dict) -> list:
        config = session_record.get("config") or self.default_config()
        return [
            {
                "configId": "mode",
                "name": "Mode",
                "description": "Ask before changing files, or just write code",
                "category": "mode",
                "type": "select",
                "currentValue": config.get("mode", "ask"),
                "options": [
                    {"value": "ask", "name": "Ask"},
                    {"value": "code", "name": "Code"},
                ],
            },
            {
                "configId": "verbose",
                "name": "Verbose",
                "description": "Explain more in replies",
                "type": "boolean",
                "currentValue": bool(config.get("verbose", False)),
            },
        ]

    def handle_set_config_option(self, ctx: Ctx, params: dict) -> None:
        session = self.live_session(self.require_str(params, "sessionId"))
        config_id = self.require_str(params, "configId")
        kind = params.get("type")
        value = params.get("value")
        if config_id == "mode":
            if kind != "id" or value not in ("ask", "code"):
                raise InvalidParams("mode takes type \"id\" with value \"ask\" or \"code\"")
        elif config_id == "verbose":
            if kind != "boolean" or not isinstance(value, bool):
                raise InvalidParams("verbose takes type \"boolean\" with a boolean value")
        else:
            raise InvalidParams("unknown configId %r" % config_id)
        config = dict(session.record.get("config") or self.default_config())
        config[config_id] = value
        session.record["config"] = config
        self.save(session)
        self.respond(ctx, {"configOptions": self.config_options(session.record)})
