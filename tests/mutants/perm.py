"""Mutants of the PERM rules: each a small subclass of the reference agent that breaks one rule.

``MUTANTS`` maps a mutant name to (the rules the suite must flag, the class). Collected by
agent_mutants.py, which runs one: ``python tests/mutants/agent_mutants.py NAME``.
"""

from __future__ import annotations

from acp_conformance.reference.agent import ReferenceAgent


class PermUnknownApproves(ReferenceAgent):
    """An outcome the agent does not understand is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        o = outcome.get("outcome") if isinstance(outcome, dict) else None
        if o not in ("selected", "cancelled") and kind == "result":
            return True
        return ReferenceAgent.permission_approved(answer)


class PermErrorApproves(ReferenceAgent):
    """A JSON-RPC error answer to the permission request is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        return answer[0] == "error" or ReferenceAgent.permission_approved(answer)


class PermNoTitle(ReferenceAgent):
    """session/request_permission has no title."""

    def send_request(self, method, params):
        if method == "session/request_permission":
            params = {k: v for k, v in params.items() if k != "title"}
        return super().send_request(method, params)


class PermCancelledProceeds(ReferenceAgent):
    """A `cancelled` outcome is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "cancelled":
            return True
        return ReferenceAgent.permission_approved(answer)


class PermNotOfferedApproves(ReferenceAgent):
    """A `selected` outcome with an optionId that was not offered is taken as approval."""

    @staticmethod
    def permission_approved(answer):
        kind, value = answer
        outcome = value.get("outcome") if kind == "result" and isinstance(value, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected" \
                and outcome.get("optionId") not in ("allow", "reject"):
            return True
        return ReferenceAgent.permission_approved(answer)


class PermBadSubject(ReferenceAgent):
    """The tool_call subject of the permission request has kind "nope"."""

    def send_request(self, method, params):
        if method == "session/request_permission":
            subj = dict(params["subject"], toolCall=dict(params["subject"]["toolCall"], kind="nope"))
            params = dict(params, subject=subj)
        return super().send_request(method, params)


MUTANTS: dict[str, tuple[tuple[str, ...], type]] = {
    "perm-unknown-approves": (("PERM-004",), PermUnknownApproves),
    "perm-error-approves": (("PERM-005",), PermErrorApproves),
    "perm-no-title": (("PERM-001",), PermNoTitle),
    "perm-cancelled-proceeds": (("PERM-002",), PermCancelledProceeds),
    "perm-not-offered-approves": (("PERM-003",), PermNotOfferedApproves),
    "perm-bad-subject": (("PERM-006",), PermBadSubject),
}
