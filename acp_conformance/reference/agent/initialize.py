"""initialize: version negotiation and what the agent advertises."""

from __future__ import annotations

from .wire import UNSUPPORTED_VERSION, Ctx, InvalidParams

AGENT_NAME = "acp-conformance-reference-agent"
AGENT_VERSION = "0.1.0"
SUPPORTED_VERSIONS = (2,)


class InitializeMixin:
    # -- initialize ----------------------------------------------------------------------------

    def negotiate_version(self, requested: int) -> int | None:
        """Highest supported version <= requested, or None."""
        candidates = [v for v in SUPPORTED_VERSIONS if v <= requested]
        return max(candidates) if candidates else None

    def capabilities(self) -> dict:
        session: dict = {"delete": {}}
        if self.SUPPORTS_EMBEDDED_CONTEXT:
            session["prompt"] = {"embeddedContext": {}}
        return {"session": session}

    def initialize_result(self, version: int) -> dict:
        return {
            "protocolVersion": version,
            "info": {"name": AGENT_NAME, "version": AGENT_VERSION},
            "capabilities": self.capabilities(),
        }

    def unsupported_version(self, ctx: Ctx, requested: int) -> None:
        self.respond_error(
            ctx,
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            {"requested": requested, "supported": list(SUPPORTED_VERSIONS)},
        )

    def handle_initialize(self, ctx: Ctx, params: dict) -> None:
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 65535:
            raise InvalidParams("protocolVersion must be an integer 0..65535")
        info = params.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
            raise InvalidParams("info {name, version} is required")
        negotiated = self.negotiate_version(version)
        if negotiated is None:
            self.unsupported_version(ctx, version)  # the connection stays as it was
            return
        caps = params.get("capabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}  # malformed = none
        self.initialized = True
        self.respond(ctx, self.initialize_result(negotiated))
