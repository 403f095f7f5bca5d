"""Judging real traffic: ``tap`` (a transparent proxy between an editor and its agent) and ``check`` (recorded
sessions), both judged by the agent-side and client-side monitors at once with observed statuses.

| module | responsibility |
|---|---|
| `proxy.py` | the forwarding process: bytes both ways, unchanged; a copy of them to the judge |
| `judge.py` | the judging process of tap: the copy in, the reports out |
| `session.py` | one observed session: framing, both sides' monitors, the two programs' names |
| `check.py` | reading recorded sessions (our transcripts, plain logs) |
| `report.py` | the reports of observed sessions |
"""
