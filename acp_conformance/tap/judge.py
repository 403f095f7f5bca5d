"""The judging process of ``tap``: reads the copy of the traffic the proxy hands it, judges it, writes the reports.

It runs apart from the proxy so that judging never holds up a frame (a monitor in the forwarding
process would take the interpreter lock from the forwarding threads). It has no stdout (its output
could never reach the editor), ignores SIGINT, SIGTERM and SIGHUP (sent to the editor's process
group, they must not cost the report) and writes the reports when its input ends: when the proxy
has finished, or when the proxy itself was killed.

The input is a sequence of records: one kind byte, an 8-byte big-endian length, the payload. Kinds:
``C`` bytes the client wrote to the agent, ``A`` bytes the agent wrote to the client, ``E`` bytes of the
agent's stderr, ``V`` an event (JSON: name, t, detail), ``M`` facts for the report (JSON), each with the
time it was forwarded.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

HEADER = struct.Struct(">cdQ")  # kind, forwarding time (monotonic s), length
DATA_TO_AGENT, DATA_TO_CLIENT, EVENT, FACTS, STDERR = b"C", b"A", b"V", b"M", b"E"
STDERR_KEPT = 1 << 20  # the tail of the agent's stderr kept beside the transcript


def record(kind: bytes, t: float, payload: bytes) -> bytes:
    return HEADER.pack(kind, t, len(payload)) + payload


def _read_exact(fh: BinaryIO, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        got = fh.read(n - len(buf))
        if not got:
            return None
        buf += got
    return bytes(buf)


def judge(fh: BinaryIO, config: dict[str, Any]) -> int:
    from ..protocol.schema import cached_schema
    from ..protocol.validate import Validator
    from .report import SessionRecord, verdict_line, write_observed_reports
    from .session import TO_AGENT, TO_CLIENT, ObservedSession, peak_rss_kb

    schema = cached_schema(config.get("schema"))
    live_out = _live_sink(config.get("live"))

    from ..rules.catalog import load_catalog
    from ..rules.verdicts import level_status
    from ..report.redact import redact_sentence, secret_values
    catalog = load_catalog()
    seen: dict[str, Any] = {"secrets": set(), "scanned": 0}  # the secrets of the frames scanned so far

    def live(side: str, f) -> None:
        if live_out is not None:
            status = level_status(catalog[f.rule], f.status) if f.rule in catalog else f.status
            if status not in ("fail", "warn", "flaky"):
                return  # a failed MAY rule is only a note
            line = f"acp-conformance tap: {status.upper()} {f.rule} ({side}): {' '.join(f.message.split())[:300]}"
            if config.get("redact", True):  # editors keep their agents' stderr in logs: no secret goes there
                seen["secrets"] |= secret_values(session.frames[seen["scanned"]:])
                seen["scanned"] = len(session.frames)
                line = redact_sentence(line, seen["secrets"])
            try:
                live_out.write(line + "\n")
                live_out.flush()
            except OSError:
                pass

    from ..thresholds import Thresholds
    thresholds = Thresholds(strict=config.get("strict", False), revision=config.get("revision"))
    session = ObservedSession(Validator(schema), name="tap", live=live, thresholds=thresholds)
    facts, stderr, end = _read_records(fh, session, TO_AGENT, TO_CLIENT)
    findings = session.finish()
    rec = SessionRecord("tap", session.frames, findings, session.client_info, session.agent_init,
                        command=config.get("argv") or [], end=end, not_judged=session.not_judged,
                        protocol=session.protocol)
    extra = {"tap": {"report_dir": config["report_dir"], "end": end, "agent_exit": facts.get("exit"),
                     "proxy_peak_rss_kb": facts.get("proxy_peak_rss_kb"), "judge_peak_rss_kb": peak_rss_kb()}}
    junit = Path(config["junitxml"]) if config.get("junitxml") else None
    rec.stderr = stderr.decode("utf-8", errors="replace")
    if config.get("wire_log"):
        write_wire_log(Path(config["report_dir"]) / "wire.log", session.frames)
    verdict, _ = write_observed_reports(Path(config["report_dir"]), [rec], schema, thresholds,
                                        redact=config.get("redact", True), junitxml=junit, extra=extra)
    if live_out is not None or config.get("quiet") is False:
        sink = live_out or sys.stderr
        try:
            sink.write(f"acp-conformance tap: {verdict_line(verdict, [rec])}; report: {config['report_dir']}/report.html\n")
            sink.flush()
        except OSError:
            pass
    return 0


def _read_records(fh: BinaryIO, session, to_agent: str, to_client: str) -> tuple[dict[str, Any], bytearray, str]:
    """Feed the proxy's records to the session until they end: (the facts it sent, the agent's stderr tail, how
    the copy of the traffic ended)."""
    t0: float | None = None
    facts: dict[str, Any] = {}
    stderr = bytearray()
    end = "the proxy's copy of the traffic ended"
    while True:
        head = _read_exact(fh, HEADER.size)
        if head is None:
            break
        kind, t, n = HEADER.unpack(head)
        payload = _read_exact(fh, n)
        if payload is None:
            end = "the proxy stopped in the middle of a record (it was killed)"
            break
        t0 = t if t0 is None else t0
        rel = t - t0
        if kind == DATA_TO_AGENT:
            session.data(to_agent, payload, rel)
        elif kind == DATA_TO_CLIENT:
            session.data(to_client, payload, rel)
        elif kind == EVENT:
            ev = json.loads(payload)
            session.event(ev["name"], rel, detail=ev.get("detail"))
        elif kind == FACTS:
            facts.update(json.loads(payload))
        elif kind == STDERR:
            stderr += payload
            del stderr[:-STDERR_KEPT]
    if facts.get("end"):
        end = facts["end"]
    return facts, stderr, end


def write_wire_log(path: Path, frames) -> Path:
    """Every frame's exact bytes and the connection's events, in ``check``'s plain log format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(b"# acp-conformance tap: > client to agent, < agent to client (not redacted)\n")
        for f in frames:
            if f.is_message:
                fh.write(f"{f.t:.6f} {'>' if f.direction == 'sent' else '<'} ".encode() + f.raw + b"\n")
            else:
                facts = f" {json.dumps(f.detail, separators=(',', ':'))}" if f.detail else ""
                fh.write(f"{f.t:.6f} ! {f.event}{facts}\n".encode())
    return path


def _live_sink(where: str | None):
    if not where:
        return None
    if where == "-":
        return sys.stderr
    return open(where, "a", encoding="utf-8")


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:  # on a busy machine the forwarding threads come first: the judge may lag, a frame may not
        os.nice(10)
    except OSError:
        pass
    config = json.loads(sys.argv[1])
    started = time.monotonic()
    try:
        return judge(sys.stdin.buffer, config)
    except Exception as e:  # the proxy goes on regardless; say why there is no report
        print(f"acp-conformance tap: could not write the report ({type(e).__name__}: {e}) "
              f"after {time.monotonic() - started:.1f} s", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
