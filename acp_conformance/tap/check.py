"""``acp-conformance check TRANSCRIPT...``: judge recorded sessions as tap judges live ones.

Two shapes are read (told apart by the first line that is not blank):

* our own transcripts (``transcripts/*.jsonl`` of any report, tap's included): one JSON object per line
  with ``seq``, ``conn``, ``dir`` (``sent``, ``received``, ``event``), ``t``, and ``raw`` or
  ``event``/``detail``. Which direction is the client's is read from who sent ``initialize`` (a client
  run's transcript has the suite playing the agent); without an initialize, ``sent`` is the client's. A
  frame the transcript cut short (``... (N bytes)``) is left out and said so; the file holds text, so bytes
  that were not UTF-8 come back as U+FFFD (a plain log keeps them). A file is one session, its
  connections (a target restarted within a test) kept apart as the monitors keep them.
* a plain log, one frame per line: a direction marker, one space, the frame's bytes exactly::

      > {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}
      < {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}

  ``>`` is client to agent, ``<`` agent to client; a number of seconds may come first
  (``0.125 > {...}``: times never go back, a line without one happened with the last); blank lines and
  lines starting with ``#`` are skipped. ``!`` marks what happened to the connection, with optional facts
  as a JSON object: ``! stdin-closed`` (the client closed the agent's stdin), ``! eof`` (the agent closed
  its output), ``! exit {"returncode": 0}``, ``! start``, ``! note {"text": "..."}``; ``tap --wire-log``
  writes this format.

Anything else is an unreadable file: exit status 2, with the line number and the reason.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.revisions import names as revision_names, schema_ref as revision_schema_ref
from ..thresholds import Thresholds
from .session import TO_AGENT, TO_CLIENT, ObservedSession

_CUT = re.compile(r"\.\.\. \((\d+) bytes\)$")
_PLAIN = re.compile(rb"^(?:(\d+(?:\.\d+)?) )?([<>!]) ")
PLAIN_EVENTS = ("start", "stdin-closed", "eof", "exit", "note")


class Unreadable(Exception):
    """A file check cannot read: the sentence names the file, the line and the reason."""


@dataclass
class Recorded:
    """One session read from a file: its frames in order, as (kind, t, payload, conn) with kind a direction or
    'event' (conn: the target process of a scripted run, restarted within a test)."""

    name: str
    source: str
    items: list[tuple[str, float | None, Any, int]] = field(default_factory=list)
    cut: int = 0  # frames left out because the transcript had cut them


def read_sessions(path: Path) -> list[Recorded]:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise Unreadable(f"{path}: cannot read it ({e.strerror or e})") from None
    lines = data.split(b"\n")
    first = next((ln for ln in lines if ln.strip()), None)
    if first is None:
        raise Unreadable(f"{path}: the file is empty")
    if first.lstrip().startswith(b"{"):
        return _read_jsonl(path, lines)
    return [_read_plain(path, lines)]


def _read_plain(path: Path, lines: list[bytes]) -> Recorded:
    rec = Recorded(path.name, str(path))
    t = 0.0  # a line without a time happened when the last timed line did (the monitors compare times)
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith(b"#"):
            continue
        m = _PLAIN.match(line)
        if m is None:
            raise Unreadable(f"{path}:{n}: no direction marker: a line starts with '> ' (client to agent) or "
                             "'< ' (agent to client), optionally after a time in seconds")
        if m.group(1):
            if float(m.group(1)) < t:
                raise Unreadable(f"{path}:{n}: the time {m.group(1).decode()} s goes back before {t:g} s")
            t = float(m.group(1))
        if m.group(2) == b"!":
            rec.items.append(("event", t, _plain_event(path, n, line[m.end():]), 0))
        else:
            rec.items.append((TO_AGENT if m.group(2) == b">" else TO_CLIENT, t, line[m.end():], 0))
    return rec


def _plain_event(path: Path, n: int, text: bytes) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.decode("utf-8", errors="replace").strip().partition(" ")
    if name not in PLAIN_EVENTS:
        raise Unreadable(f"{path}:{n}: '!' marks an event, one of {', '.join(PLAIN_EVENTS)} (got {name!r})")
    try:
        detail = json.loads(rest) if rest.strip() else {}
    except ValueError as e:
        raise Unreadable(f"{path}:{n}: an event's facts are a JSON object ({e})") from None
    if not isinstance(detail, dict):
        raise Unreadable(f"{path}:{n}: an event's facts are a JSON object")
    return name, detail


_EVENTS_CLIENT_RUN = {"stdin-closed": "eof", "eof": "stdin-closed"}  # a client run's events, seen from the client


def _read_jsonl(path: Path, lines: list[bytes]) -> list[Recorded]:
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as e:
            raise Unreadable(f"{path}:{n}: not a JSON line of a transcript ({e})") from None
        if not isinstance(d, dict) or d.get("dir") not in ("sent", "received", "event"):
            raise Unreadable(f"{path}:{n}: a transcript line is an object whose \"dir\" is sent, received or event")
        if d["dir"] != "event" and not isinstance(d.get("raw"), str):
            raise Unreadable(f"{path}:{n}: a sent or received frame carries its line as a string in \"raw\"")
        if d["dir"] == "event" and not isinstance(d.get("event"), str):
            raise Unreadable(f"{path}:{n}: an event line names its event in \"event\"")
        t = d.get("t")
        if t is not None and not isinstance(t, (int, float)):
            raise Unreadable(f"{path}:{n}: \"t\" is a number of seconds")
        rows.append((n, d))
    # who plays the client: whoever sent initialize (a client run's transcript has the suite as the agent)
    init = next((d["dir"] for _, d in rows if d["dir"] != "event" and '"initialize"' in d["raw"]
                 and _is_initialize(d["raw"])), "sent")
    client_dir = init
    rec = Recorded(path.stem, str(path))
    for n, d in rows:
        conn = d.get("conn", 0)
        if not isinstance(conn, int) or isinstance(conn, bool) or conn < 0:
            raise Unreadable(f"{path}:{n}: \"conn\" is a connection number (an integer from 0)")
        if d["dir"] == "event":
            ev = d["event"]
            if client_dir == "received":
                ev = _EVENTS_CLIENT_RUN.get(ev, ev if ev in ("start", "note") else None)
            elif ev not in ("start", "stdin-closed", "eof", "exit", "note"):
                ev = None
            if ev is None:  # the suite's own waiting (timeout) and a client's exit are not the agent's events
                rec.items.append(("event", d.get("t"), ("note", {"text": f"{d['event']} (line {n})"}), conn))
            else:
                rec.items.append(("event", d.get("t"), (ev, d.get("detail") or {}), conn))
            continue
        raw = d["raw"]
        if _CUT.search(raw):
            try:
                json.loads(raw)
            except ValueError:
                rec.cut += 1
                continue
        rec.items.append((TO_AGENT if d["dir"] == client_dir else TO_CLIENT, d.get("t"), raw.encode("utf-8"), conn))
    return [rec]


def _is_initialize(raw: str) -> bool:
    try:
        m = json.loads(raw)
    except ValueError:
        return False
    return isinstance(m, dict) and m.get("method") == "initialize" and "id" in m


def judge_recorded(rec: Recorded, validator, thresholds: Thresholds = Thresholds()) -> ObservedSession:
    s = ObservedSession(validator, name=rec.name, thresholds=thresholds)
    for kind, t, payload, c in rec.items:
        if kind == "event":
            name, detail = payload
            s.event(name, t, conn=c, detail=detail if isinstance(detail, dict) else None)
        else:
            s.line(kind, payload, t, conn=c)
    return s


def run_check(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="acp-conformance check")
    p.add_argument("transcripts", nargs="+", metavar="TRANSCRIPT")
    p.add_argument("--report-dir", metavar="DIR", default=None,
                   help="where the reports go (default: a new reports/check/<UTC time> folder)")
    p.add_argument("--junitxml", metavar="FILE", default=None)
    p.add_argument("--strict", action="store_true", help="SHOULD-level failures count against conformance too")
    p.add_argument("--no-redact", action="store_true", help="keep secrets (tokens, keys) in the reports")
    p.add_argument("--acp-schema", metavar="PATH", default=None)
    p.add_argument("--acp-revision", choices=revision_names(), default=None,
                   help="the ACP v2 revision whose verdict sets the exit status: base (v2 as released) or preview "
                        "(the default); the reports show both and the Preview readiness")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        recorded = [r for t in a.transcripts for r in read_sessions(Path(t))]
    except Unreadable as e:
        print(f"acp-conformance check: {e}", file=sys.stderr)
        return 2
    report_dir = Path(a.report_dir or Path("reports") / "check" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"acp-conformance check: --report-dir: cannot create {str(report_dir)!r} ({e.strerror or e})",
              file=sys.stderr)
        return 2
    from ..protocol.schema import SchemaError, cached_schema
    from ..protocol.validate import Validator
    from ..run_record import CHECK
    from .report import SessionRecord, not_judged_reason, verdict_line, write_observed_reports
    try:
        schema = cached_schema(str(Path(a.acp_schema).resolve()) if a.acp_schema
                               else revision_schema_ref(a.acp_revision))
    except SchemaError as e:
        print(f"acp-conformance check: {e}", file=sys.stderr)
        return 2
    validator = Validator(schema)
    thresholds = Thresholds(strict=a.strict, revision=a.acp_revision)
    sessions = []
    for rec in recorded:
        s = judge_recorded(rec, validator, thresholds)
        if rec.cut:
            print(f"acp-conformance check: {rec.source}: {rec.cut} frame(s) cut short in the transcript were left out",
                  file=sys.stderr)
        sessions.append(SessionRecord(rec.name, s.frames, s.finish(), s.client_info, s.agent_init, source=rec.source,
                                      end=f"{rec.cut} cut frame(s) left out" if rec.cut else "",
                                      not_judged=s.not_judged, protocol=s.protocol))
        if s.not_judged and len(recorded) > 1:
            print(f"acp-conformance check: {rec.source} ({rec.name}): not judged: {s.not_judged}", file=sys.stderr)
    verdict, _ = write_observed_reports(report_dir, sessions, schema, thresholds, redact=not a.no_redact,
                                        junitxml=Path(a.junitxml) if a.junitxml else None, driver=CHECK)
    for rv in verdict.rules:
        if rv.checked and rv.status in ("fail", "warn", "flaky"):
            who = sorted({f.test.rsplit(" ", 1)[-1] for f in rv.findings if f.status in ("fail", "warn", "flaky")})
            why = next((f.message for f in rv.findings if f.status in ("fail", "warn", "flaky")), rv.reason)
            print(f"  {rv.status.upper():6} {rv.rule.id:14} ({', '.join(who)}) {' '.join(why.split())[:160]}")
    print(verdict_line(verdict, sessions))
    print(f"report: {report_dir / 'report.html'}")
    if not_judged_reason(sessions):
        return 6  # as the suite: a target of another protocol version is not judged
    return 0 if verdict.conformant else 1
