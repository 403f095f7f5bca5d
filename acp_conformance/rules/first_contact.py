"""What the first exchange of a test says about the target as a whole: it is not an ACP program (it
echoed the suite's request, printed non-JSON, exited or never answered), it speaks another protocol
version, or it answers with ids the suite never sent (so nothing the suite asks is ever answered). Either
way no rule can be judged on it, so the run stops with one sentence instead of judging (and failing, or
worse passing) every rule on noise, or waiting out every later test's timeouts.

Reads frames only. The agent side: the suite's first request on the first connection; a test that does
not open with initialize says nothing here (it may be about what comes before initialize).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..protocol.versions import V2_INIT_NAMES, v1_names_only
from ..wire.transcript import EV_EXIT, EV_STDIN_CLOSED, EV_TIMEOUT, EVENT, RECEIVED, SENT, Frame, members
from .reading import id_key

NOT_ACP = "not-acp"
NOT_V2 = "not-v2"
WRONG_IDS = "wrong-ids"  # ERR-004: its responses carry ids the suite never sent, none the ids it sent
# the one negotiation rule that applies whatever version the agent speaks: it never answers above the request
V1_KEEP = ("INIT-002",)
# a version-1 agent met in a run that judges version 2 (--acp-protocol 2, or an agent whose first answer said 2)
V1_HINT = "this run judges version 2 (--acp-protocol 1 judges version 1)"


@dataclass
class FirstContact:
    kind: str  # NOT_ACP, NOT_V2 or WRONG_IDS
    sentence: str  # the verdict, one sentence for the user
    frame: Frame | None  # the frame that shows it (None: nothing arrived)
    version: Any = None  # NOT_V2: the protocolVersion the target answered


def is_response(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" not in msg and "id" in msg and ("result" in msg or "error" in msg)


def _short(raw: bytes, limit: int = 80) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def judge_agent(frames: list[Frame], waited: float, side: str = "agent", protocol: int = 2,
                forced: bool = False) -> FirstContact | None:
    """The first connection of one test, when it opened with initialize: None if the target answered it as
    an ACP v2 peer (whatever else it got wrong), else why not. ``waited``: the seconds the suite waited for
    the first answer (its startup timeout)."""
    sent = [f for f in frames if f.direction == SENT and isinstance(f.msg, dict)]
    if not sent or sent[0].msg.get("method") != "initialize" or "id" not in sent[0].msg:
        return None
    first, conn = sent[0], sent[0].conn
    asked = (first.msg.get("params") or {}).get("protocolVersion") if isinstance(first.msg.get("params"), dict) else None
    seen_sent: list[Any] = []
    non_json: Frame | None = None
    exited: Frame | None = None
    closed = False  # the suite closed stdin (its shutdown): an exit after that is ours, not the target's
    for f in frames:
        if f.conn != conn:
            continue
        if f.direction == SENT:
            seen_sent.append(f.msg)
            continue
        if f.direction == EVENT:
            closed = closed or f.event == EV_STDIN_CLOSED
            if f.event == EV_EXIT and exited is None and not closed:
                exited = f
            continue
        if f.direction != RECEIVED:
            continue
        if f.problem is not None:
            non_json = non_json or f
            continue
        if non_json is None and f.msg in seen_sent:
            return FirstContact(NOT_ACP, f"not an ACP {side}: it echoed the suite's request back on stdout "
                                         f"(frame #{f.seq} repeats frame #{first.seq}, like cat)", f)
        if is_response(f.msg) and f.msg.get("id") == first.msg["id"]:
            if protocol == 1:  # an agent seen speaking 1 that answers otherwise fails V1-INIT-002 (the rules')
                return _refuses_v1(f, asked, side) if forced else None
            return _negotiated(f, asked, side)
        if is_response(f.msg):
            return wrong_ids(frames, conn, side)  # it answers JSON-RPC: an ACP program, judged by the rules
    if non_json is not None:
        return FirstContact(NOT_ACP, f"not an ACP {side}: it printed non-JSON on stdout before any response: "
                                     f"{_short(non_json.raw)!r}", non_json)
    if exited is not None:
        status = (exited.detail or {}).get("status") or "exited"
        return FirstContact(NOT_ACP, f"not an ACP {side}: it ended ({status}) before answering initialize", exited)
    return FirstContact(NOT_ACP, f"not an ACP {side}: it never answered initialize within {waited:g} s", None)


def wrong_ids(frames: list[Frame], conn: int, side: str = "agent") -> FirstContact | None:
    """Connection ``conn`` of one test, when the suite gave up waiting on it (a timeout) and the target's
    responses carry only ids the suite never sent: none answers any request of the suite (ERR-004 on every
    exchange), so every later test would wait out its own timeouts for answers that cannot come. None when any
    response carries an id the suite sent (even one it wrote in a line that did not parse): a target that
    answers out of order, late or with errors is judged by the rules."""
    from .monitors._common import raw_carries_id
    sent: set = set()
    unparsed: list[bytes] = []
    asked: Frame | None = None  # the suite's first request of the connection
    strays: list[tuple[Frame, Any]] = []
    gave_up = False
    for f in frames:
        if f.conn != conn:
            continue
        if f.direction == EVENT:
            gave_up = gave_up or f.event == EV_TIMEOUT
            continue
        if f.direction == SENT and not isinstance(f.msg, (dict, list)):  # a line the suite wrote that is no JSON-RPC
            unparsed.append(f.raw)
        for one in members(f):
            m = one.msg
            if not isinstance(m, dict) or "id" not in m:
                continue
            if f.direction == SENT:
                sent.add(id_key(m["id"]))
                if asked is None and "method" in m:
                    asked = f
            elif f.direction == RECEIVED and is_response(m) and m["id"] is not None:
                if id_key(m["id"]) in sent or any(raw_carries_id(raw, m["id"]) for raw in unparsed):
                    return None  # it answered something the suite sent
                strays.append((f, m["id"]))
    if not gave_up or not strays or asked is None:
        return None
    where = ", ".join(f"#{f.seq}" for f, _ in strays[:3]) + (", ..." if len(strays) > 3 else "")
    ids = ", ".join(json.dumps(rid)[:40] for _, rid in strays[:3]) + (", ..." if len(strays) > 3 else "")
    some = "the response in frame" if len(strays) == 1 else "the responses in frames"
    return FirstContact(WRONG_IDS, f"the {side} answers with ids the suite never sent (ERR-004): "
                                   f"{asked.msg.get('method')} (id {json.dumps(asked.msg.get('id'))[:40]}, frame "
                                   f"#{asked.seq}) never got a response with its own id, while {some} {where} "
                                   f"{'carries id' if len(strays) == 1 else 'carry ids'} {ids}", strays[0][0])


def _negotiated(response: Frame, asked: Any, side: str) -> FirstContact | None:
    """The answer to an initialize that asked for 2 or later: another version than 2 below the one asked
    is a target of another protocol version (the negotiation rules judge an answer above it)."""
    result = response.msg.get("result")
    if not isinstance(result, dict) or not isinstance(asked, int) or isinstance(asked, bool) or asked < 2:
        return None
    v = result.get("protocolVersion")
    if isinstance(v, int) and not isinstance(v, bool) and v < 2:
        hint = V1_HINT if v == 1 and side == "agent" else "this suite judges version 2" if side == "client" else \
            "this suite judges versions 1 and 2"
        return FirstContact(NOT_V2, f"the {side} speaks ACP protocol version {v}; {hint}",
                            response, v)
    return None


def for_fuzzer(contact: FirstContact | None) -> FirstContact | None:
    """The sentence as the fuzzer says it: it draws version 2 traffic only (no --acp-protocol of its own)."""
    if contact is not None and V1_HINT in contact.sentence:
        contact.sentence = contact.sentence.replace(
            V1_HINT, "the fuzzer draws version 2 traffic only (acp-conformance agent judges version 1)")
    return contact


def _refuses_v1(response: Frame, asked: Any, side: str) -> FirstContact | None:
    """A run forced to judge version 1 (--acp-protocol 1): an initialize asking for 1 answered with another version,
    or refused, comes from a target that does not speak version 1."""
    if asked != 1:
        return None
    result, error = response.msg.get("result"), response.msg.get("error")
    v = result.get("protocolVersion") if isinstance(result, dict) else None
    if isinstance(v, int) and not isinstance(v, bool) and v != 1:
        return FirstContact(NOT_V2, f"the {side} does not speak ACP protocol version 1, which --acp-protocol 1 asks "
                                    f"for: asked for 1, it answered protocolVersion {v}", response, v)
    if isinstance(error, dict):
        return FirstContact(NOT_V2, f"the {side} does not speak ACP protocol version 1, which --acp-protocol 1 asks "
                                    f"for: it refused an initialize asking for 1 ({json.dumps(error)[:120]})", response)
    return None


def v1_behind_v2(frames: list[Frame]) -> FirstContact | None:
    """An agent that answered initialize with protocolVersion 2 and then spoke version 1: only unambiguous
    evidence counts, so that no v2 agent is ever taken for v1 (fast-agent and the Python SDK's echo agent answer
    any version they are asked for). Either its initialize result has v1's names (agentCapabilities, agentInfo)
    and none of v2's (info, capabilities), or it has none of v2's and a session/prompt result carries v1's
    ``stopReason`` and no ``messageId`` (v2 answers a prompt with its messageId; the stop reason comes in the
    idle state update), or it refused a session/new without ``mcpServers`` for want of them (required in v1,
    optional in v2)."""
    asked: dict[tuple, tuple[str, Any]] = {}
    bare_init: Frame | None = None  # an initialize answered "2" with none of v2's names
    for f in frames:
        m = f.msg
        if not isinstance(m, dict):
            continue
        key = (f.conn, id_key(m.get("id")))
        if f.direction == SENT and isinstance(m.get("method"), str) and "id" in m:
            asked[key] = (m["method"], m.get("params"))
            continue
        if f.direction != RECEIVED or not is_response(m):
            continue
        method, params = asked.pop(key, (None, None))
        if method == "session/new" and bare_init is not None and _wants_mcp_servers(m, params):
            return FirstContact(NOT_V2, "the agent answered protocolVersion 2 but speaks ACP version 1: its "
                                "initialize result has no info or capabilities, and it refused a session/new "
                                "without mcpServers for want of them (required in version 1, optional in version "
                                f"2); {V1_HINT}", f, 1)
        if not isinstance(m.get("result"), dict):
            continue
        res = m["result"]
        if method == "initialize" and res.get("protocolVersion") == 2:
            if any(k in res for k in V2_INIT_NAMES):
                return None  # a v2 answer: the rules judge it
            found = v1_names_only(res)
            if found:
                return FirstContact(NOT_V2, f"the agent answered protocolVersion 2 but speaks ACP version 1: its "
                                    f"initialize result has version 1's {', '.join(found)} and not version 2's info "
                                    f"and capabilities; {V1_HINT}", f, 1)
            bare_init = bare_init or f
        elif method == "session/prompt" and bare_init is not None and "stopReason" in res and "messageId" not in res:
            return FirstContact(NOT_V2, "the agent answered protocolVersion 2 but speaks ACP version 1: its "
                                f"initialize result has no info or capabilities, and it answered session/prompt "
                                f"with version 1's stopReason ({res.get('stopReason')!r}) instead of version 2's "
                                f"messageId; {V1_HINT}", f, 1)
    return None


def _wants_mcp_servers(response: dict, params: Any) -> bool:
    """A -32602 refusal of a session/new sent without mcpServers that names mcpServers."""
    err = response.get("error")
    if not isinstance(err, dict) or err.get("code") != -32602 or not isinstance(params, dict) or "mcpServers" in params:
        return False
    return "mcpServers" in json.dumps(err, default=str)


def judge_client(frames: list[Frame], waited: float | None = None, protocol: int = 2,
                 forced: bool = False) -> FirstContact | None:
    """The client's first initialize request of the test: a client asks for its latest version, so one that
    asks for a version the run does not judge is not judged (``protocol``: the run's version; a version-1 run
    judges a client that asks for 1, a version-2 run one that asks for 2 or later; ``forced``: --acp-protocol
    chose it). With ``waited`` (the seconds the suite waited for it), a client that sent nothing at all is not
    an ACP client either (it printed non-JSON, ended, or stayed silent, as cat does: it only ever repeats what
    it is sent)."""
    for f in frames:
        if f.direction == RECEIVED and isinstance(f.msg, dict) and f.msg.get("method") == "initialize":
            params = f.msg.get("params")
            v = params.get("protocolVersion") if isinstance(params, dict) else None
            if not isinstance(v, int) or isinstance(v, bool):
                return None  # the rules judge a malformed version (V1-INIT-005, INIT-*)
            if protocol == 1 and v != 1:
                return FirstContact(NOT_V2, f"the client does not speak ACP protocol version 1, which "
                                    f"{'--acp-protocol 1 asks for' if forced else 'this run judges'}: its initialize "
                                    f"asked for protocolVersion {v}" + ("" if forced else
                                                                         " (--acp-protocol 2 judges version 2)"),
                                    f, v)
            if protocol != 1 and v < 2:
                hint = V1_HINT if v == 1 else "this suite judges versions 1 and 2"
                return FirstContact(NOT_V2, f"the client speaks ACP protocol version {v}; {hint}", f, v)
            return None
    if waited is None or any(f.direction == RECEIVED and f.problem is None for f in frames):
        return None  # it sent JSON (something else first): the rules judge it
    non_json = next((f for f in frames if f.direction == RECEIVED), None)
    if non_json is not None:
        return FirstContact(NOT_ACP, f"not an ACP client: it printed non-JSON on stdout before any request: "
                                     f"{_short(non_json.raw)!r}", non_json)
    closed = False
    for f in frames:
        if f.direction == EVENT:
            closed = closed or f.event == EV_STDIN_CLOSED
            if f.event == EV_EXIT and not closed:
                status = (f.detail or {}).get("status") or "exited"
                return FirstContact(NOT_ACP, f"not an ACP client: it ended ({status}) before sending initialize", f)
    return FirstContact(NOT_ACP, f"not an ACP client: it sent no initialize within {waited:g} s (neither to the "
                                 "agent it was given as {agent} nor on its own stdout)", None)
