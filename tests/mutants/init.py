"""Mutants of the INIT rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import INVALID_REQUEST, InvalidParams, ReferenceAgent


class Init001(ReferenceAgent):
    """Only an exact version match is accepted: asked for 3, answers -32022."""

    def negotiate_version(self, requested):
        return 2 if requested == 2 else None


class Init002(ReferenceAgent):
    """Answers its latest version (2) to a request for 1 (old upstream rule)."""

    def negotiate_version(self, requested):
        return 2 if requested >= 1 else None


class Init003(ReferenceAgent):
    """An unsupported version is answered with -32600 instead of -32022 + data."""

    def unsupported_version(self, ctx, requested):
        self.respond_error(ctx, INVALID_REQUEST, "Unsupported protocol version")


class V1Agent(ReferenceAgent):
    """Negotiates protocol version 1 (a v1 agent): asked for 2, it answers 1."""

    def negotiate_version(self, requested):
        return 1 if requested >= 1 else None


class InitEcho(ReferenceAgent):
    """Answers initialize with whatever version >= 2 it is asked for (3 -> 3, 65535 -> 65535)."""

    def negotiate_version(self, requested):
        return requested if requested >= 2 else super().negotiate_version(requested)


class Init005(ReferenceAgent):
    """The initialize result's info has no version."""

    def initialize_result(self, version):
        res = super().initialize_result(version)
        res["info"] = {"name": res["info"]["name"]}
        return res


class Init006(ReferenceAgent):
    """A repeated initialize is refused with -32600."""

    def handle_initialize(self, ctx, params):
        if self.initialized:
            self.respond_error(ctx, INVALID_REQUEST, "Already initialized")
            return
        super().handle_initialize(ctx, params)


class Init010(ReferenceAgent):
    """A v1-style boolean support marker in the capabilities."""

    def capabilities(self):
        caps = super().capabilities()
        caps["session"]["additionalDirectories"] = False
        return caps


class Init004(ReferenceAgent):
    """After a failed initialize the connection is spoiled: every later well-formed initialize is refused
    with -32600 (a malformed one still gets its -32602). The INIT-001 scenario's corrected initialize after
    a refused version is refused too, so INIT-001 fails with INIT-004."""

    def handle_initialize(self, ctx, params):
        version, info = params.get("protocolVersion"), params.get("info")
        well_formed = (isinstance(version, int) and not isinstance(version, bool) and 0 <= version <= 65535
                       and isinstance(info, dict) and isinstance(info.get("name"), str)
                       and isinstance(info.get("version"), str))
        if self.__dict__.get("_init_failed") and well_formed:
            self.respond_error(ctx, INVALID_REQUEST, "An earlier initialize failed")
            return
        self.__dict__["_init_failed"] = True  # cleared by a success below
        try:
            super().handle_initialize(ctx, params)
        finally:
            if self.initialized:
                self.__dict__["_init_failed"] = False


class Init011(ReferenceAgent):
    """A malformed initialize is refused with -32600 (Invalid Request) instead of -32602 (Invalid params)."""

    def handle_initialize(self, ctx, params):
        try:
            super().handle_initialize(ctx, params)
        except InvalidParams as e:
            self.respond_error(ctx, INVALID_REQUEST, f"Invalid Request: {e}")


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "init-004": (("INIT-004", "INIT-001"), Init004),
    "init-011": (("INIT-011",), Init011),
    "init-001": (("INIT-001",), Init001),
    "init-002": (("INIT-002",), Init002),
    "init-003": (("INIT-003",), Init003),
    "v1-agent": (("INIT-001",), V1Agent),
    "init-echo-version": (("INIT-001",), InitEcho),
    "wire-init-005": (("INIT-005",), Init005),
    "wire-init-006": (("INIT-006", "INIT-008", "INIT-009"), Init006),
    "wire-init-010": (("INIT-010",), Init010),
}
