"""Validate the reference transcripts (tests/data/wire_transcripts.txt) against our schema, method-aware.

Requests and notifications are checked against their method's params definition (from the schema's
``x-acp-methods`` table), results against the result definition of the request they answer
(matched by id within a block, in the opposite direction), error responses against ``Error``.
Marked lines: ``#invalid`` must not be valid JSON-RPC; ``#rejected`` must be schema-valid and be
answered with an error; ``#unknown-method`` must name a method outside the table and, for a
request, be answered with -32601.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import jsonschema_rs
import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "schema" / "acp-v2.schema.json"
TRANSCRIPTS = REPO / "tests" / "data" / "wire_transcripts.txt"
MARKERS = ("#invalid", "#rejected", "#unknown-method")
OPPOSITE = {"C->A": "A->C", "A->C": "C->A"}
DIRECTION = {"C->A": "client->agent", "A->C": "agent->client"}


@functools.cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@functools.cache
def _rs_validator(defname: str):
    s = schema()
    return jsonschema_rs.validator_for({"$schema": s["$schema"], "$ref": f"#/$defs/{defname}", "$defs": s["$defs"]})


def validation_errors(defname: str, instance) -> list[str]:
    """Fast path with jsonschema-rs; readable messages from jsonschema only on failure."""
    if defname not in schema()["$defs"]:
        return [f"no definition {defname}"]
    if _rs_validator(defname).is_valid(instance):
        return []
    s = schema()
    v = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{defname}", "$defs": s["$defs"]})
    errs = [f"{defname}: {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in v.iter_errors(instance)]
    return errs or [f"{defname}: rejected by jsonschema-rs only"]


@dataclass
class Line:
    lineno: int
    direction: str
    text: str
    marker: str | None


@dataclass
class Block:
    title: str
    lines: list[Line] = field(default_factory=list)


def load_blocks() -> list[Block]:
    blocks = [Block("<start>")]
    for lineno, raw in enumerate(TRANSCRIPTS.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        if raw.startswith("#"):
            if raw.startswith("# ---"):
                blocks.append(Block(f"line {lineno}: {raw[5:].strip()}"))
            continue
        direction, _, rest = raw.partition(" ")
        assert direction in OPPOSITE, f"line {lineno}: bad direction {direction!r}"
        marker = None
        for m in MARKERS:
            if rest.rstrip().endswith(" " + m):
                marker = m
                rest = rest.rstrip()[: -len(m)].rstrip()
        blocks[-1].lines.append(Line(lineno, direction, rest, marker))
    return [b for b in blocks if b.lines]


def classify(msg) -> str:
    """JSON-RPC reading of one message object: request, notification, result, error or invalid."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return "invalid"
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return "invalid"
        if "result" in msg or "error" in msg:
            return "invalid"
        return "request" if "id" in msg else "notification"
    if "result" in msg and "error" not in msg and "id" in msg:
        return "result"
    if "error" in msg and "result" not in msg and "id" in msg:
        return "error"
    return "invalid"


class BlockChecker:
    def __init__(self, block: Block):
        self.block = block
        self.pending: dict[tuple[str, str], dict] = {}
        self.problems: list[str] = []

    def fail(self, line: Line, msg: str) -> None:
        self.problems.append(f"line {line.lineno} ({self.block.title}): {msg}")

    def check_line(self, line: Line) -> None:
        try:
            data = json.loads(line.text)
        except json.JSONDecodeError as e:
            if line.marker != "#invalid":
                self.fail(line, f"not JSON: {e}")
            return
        items = data if isinstance(data, list) else [data]
        kinds = [classify(m) for m in items]
        invalid = (isinstance(data, list) and not data) or "invalid" in kinds
        if line.marker == "#invalid":
            if not invalid:
                self.fail(line, "marked #invalid but every entry is valid JSON-RPC")
            # valid entries of an invalid batch are still requests that get answered
            for m, k in zip(items, kinds):
                if k in ("request", "notification"):
                    self.check_call(line, m, k)
            return
        if invalid:
            self.fail(line, f"not a valid JSON-RPC message (kinds {kinds})")
            return
        for m, k in zip(items, kinds):
            if k in ("request", "notification"):
                self.check_call(line, m, k)
            else:
                self.check_response(line, m, k)

    def check_call(self, line: Line, msg: dict, kind: str) -> None:
        method = msg["method"]
        table = schema()["x-acp-methods"]
        entry = table.get(method)
        if kind == "request":
            for e in validation_errors("RequestId", msg["id"]):
                self.fail(line, f"request id: {e}")
        params = msg.get("params")
        if line.marker == "#unknown-method":
            if entry is not None or method.startswith("_"):
                self.fail(line, f"marked #unknown-method but {method} is known or an extension")
        elif entry is not None:
            if entry["kind"] != kind:
                self.fail(line, f"{method} is a {entry['kind']}, sent as a {kind}")
            if entry["direction"] not in ("both", DIRECTION[line.direction]):
                self.fail(line, f"{method} goes {entry['direction']}, seen {DIRECTION[line.direction]}")
            for e in validation_errors(entry["params"], params if params is not None else {}):
                self.fail(line, e)
        elif method.startswith("_"):
            ext = "ExtRequest" if kind == "request" else "ExtNotification"
            for e in validation_errors(ext, params):
                self.fail(line, e)
        else:
            self.fail(line, f"unknown method {method} (not marked #unknown-method)")
        if line.marker == "#rejected" and kind != "request":
            self.fail(line, "#rejected only makes sense for requests")
        if kind == "request":
            key = (line.direction, json.dumps(msg["id"]))
            if key in self.pending:
                self.fail(line, f"id {msg['id']} reused while pending")
            self.pending[key] = {"method": method, "entry": entry, "marker": line.marker, "line": line}

    def check_response(self, line: Line, msg: dict, kind: str) -> None:
        key = (OPPOSITE[line.direction], json.dumps(msg["id"]))
        req = self.pending.pop(key, None)
        if kind == "error":
            for e in validation_errors("Error", msg["error"]):
                self.fail(line, e)
            if req and req["marker"] == "#unknown-method" and msg["error"].get("code") != -32601:
                self.fail(line, f"unknown method {req['method']} answered with {msg['error'].get('code')}, not -32601")
            if req is None and msg["id"] is not None:
                self.fail(line, f"error response to unknown request id {msg['id']}")
            return
        if req is None:
            self.fail(line, f"result for id {msg['id']} matches no pending request in this block")
            return
        if req["marker"] in ("#rejected", "#unknown-method"):
            self.fail(line, f"{req['marker']} request {req['method']} got a success result")
            return
        entry = req["entry"]
        if entry is None:  # extension request: any result
            for e in validation_errors("ExtResponse", msg["result"]):
                self.fail(line, e)
            return
        for e in validation_errors(entry["result"], msg["result"]):
            self.fail(line, f"result of {req['method']}: {e}")

    def finish(self) -> None:
        for req in self.pending.values():
            self.fail(req["line"], f"request {req['method']} was never answered in its block")


BLOCKS = load_blocks()


def test_transcript_file_is_complete():
    lines = [ln for b in BLOCKS for ln in b.lines]
    assert len(lines) == 101, "the notes' section 2 has 101 transcript lines"
    assert sum(ln.marker == "#invalid" for ln in lines) == 4
    assert sum(ln.marker == "#rejected" for ln in lines) == 2
    assert sum(ln.marker == "#unknown-method" for ln in lines) == 2


@pytest.mark.parametrize("block", BLOCKS, ids=[b.title for b in BLOCKS])
def test_block_validates(block: Block):
    checker = BlockChecker(block)
    for line in block.lines:
        checker.check_line(line)
    checker.finish()
    assert not checker.problems, "\n".join(checker.problems)


def test_rejected_lines_use_underscore_variants_that_the_schema_accepts():
    """The two deliberately rejected requests are schema-valid only thanks to the open-enum rule."""
    rejected = [json.loads(ln.text) for b in BLOCKS for ln in b.lines if ln.marker == "#rejected"]
    assert {m["method"] for m in rejected} == {"session/prompt", "session/resume"}
    for m in rejected:
        params = json.loads(json.dumps(m["params"]))
        if m["method"] == "session/prompt":
            params["prompt"][0]["type"] = "unknown_block"
            assert validation_errors("PromptRequest", params), "non-underscore block type must be rejected"
        else:
            params["replayFrom"]["type"] = "from_message"
            assert validation_errors("ResumeSessionRequest", params), "non-underscore cursor must be rejected"


def test_invalid_lines_are_not_valid_jsonrpc():
    for b in BLOCKS:
        for ln in b.lines:
            if ln.marker != "#invalid":
                continue
            try:
                data = json.loads(ln.text)
            except json.JSONDecodeError:
                continue
            items = data if isinstance(data, list) else [data]
            assert (isinstance(data, list) and not data) or "invalid" in [classify(m) for m in items], ln
