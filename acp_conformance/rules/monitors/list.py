"""session/list and session/delete.

LIST-001 the sessions array (empty for a cwd nothing matches), LIST-002 each SessionInfo,
LIST-003 the exact-cwd filter, LIST-004 first page for omitted/null cursor and the nextCursor
shape, LIST-005 an invalid cursor, LIST-006 listing resumes nothing; DELETE-001 delete then gone
from the list, DELETE-002 deleting a missing session succeeds, DELETE-003 -32601 without the
capability, DELETE-004 resuming a deleted session gets -32002.

A session the suite created is not guaranteed to be listed (LIST-007): checks that need it listed
are inconclusive (no finding) when it is not.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ...wire.transcript import SENT
from ..findings import SKIP
from ..monitor import REQUEST, RESPONSE
from ..sessions import NEW, ConnSessions
from ._common import ConnLog, ConnMonitor, Msg, fr, is_abs_path, js, session_update

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
INVALID_PARAMS, NOT_FOUND, NO_METHOD = -32602, -32002, -32601
INVALID_CURSOR = "!!conformance-invalid-cursor!!"


def norm(p: Any) -> Any:
    if not isinstance(p, str):
        return p
    if re.match(r"^[A-Za-z]:[\\/]", p):
        return p.replace("\\", "/").rstrip("/").lower()
    return posixpath.normpath(p)


def info_problems(s: Any) -> list[str]:
    if not isinstance(s, dict):
        return [f"entry {js(s, 80)} is not an object"]
    out = []
    if not isinstance(s.get("sessionId"), str):
        out.append(f"sessionId {js(s.get('sessionId'))} is not a string")
    if not is_abs_path(s.get("cwd")):
        out.append(f"cwd {js(s.get('cwd'))} is not an absolute path")
    ad = s.get("additionalDirectories")
    if ad is not None and (not isinstance(ad, list) or not all(is_abs_path(x) for x in ad)):
        out.append(f"additionalDirectories {js(ad, 80)} is not a list of absolute paths")
    if s.get("title") is not None and not isinstance(s.get("title"), str):
        out.append(f"title {js(s.get('title'))} is not a string or null")
    ua = s.get("updatedAt")
    if ua is not None and (not isinstance(ua, str) or not _RFC3339.match(ua)):
        out.append(f"updatedAt {js(ua)} is not an RFC 3339 date-time")
    return [f"session {js(s.get('sessionId') if isinstance(s, dict) else None)}: {x}" for x in out]


def _created(model: ConnSessions, upto: Msg) -> set[str]:
    """Sessions created (session/new) or resumed (requested, whatever the answer) on this connection before ``upto``:
    listing any other session must load nothing (LIST-006)."""
    return model.known_at(upto, hows=(NEW,)) | {sid for sid, s in model.sessions.items()
                                                 if any(r.order < upto.order for r in s.resumes)}


class SessionListMonitor(ConnMonitor):
    rules = ("LIST-001", "LIST-002", "LIST-003", "LIST-004", "LIST-005", "LIST-006",
             "DELETE-001", "DELETE-002", "DELETE-003", "DELETE-004")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.caps: dict[str, Any] | None = None
        self.deletes = 0

    def analyze(self, log: ConnLog) -> None:
        model = log.sessions
        first_pages: list[tuple[Msg, list[str]]] = []  # (response, ids) of lists without cursor and cwd
        listed_only: dict[str, Msg] = {}  # listed here, not created/resumed here: sid -> the list response
        deleted: dict[str, Msg] = {}  # sid -> the successful delete response
        cwds: dict[str, Any] = {}  # sid -> the cwd it was created with here
        delete_caps = None
        lists, foreign = [], False  # session/list answers here; did one list a session not created/resumed here?
        self.walks: dict[str, list[Msg]] = {}  # the pages of each walk along nextCursor, by its other params
        for m in log.msgs:
            if m.direction == SENT:
                if m.kind == REQUEST and m.method != "session/list":
                    first_pages.clear()  # the set of sessions may change: compare only back-to-back lists
                if m.kind == REQUEST and m.method == "session/resume" and isinstance(m.session_id, str):
                    listed_only.pop(m.session_id, None)
                continue
            if m.kind == RESPONSE and not m.duplicate and m.request is not None:
                req, p = m.request, m.request.params if isinstance(m.request.params, dict) else {}
                if m.method == "initialize" and isinstance(m.result, dict):
                    caps = m.result.get("capabilities") or {}
                    sess = caps.get("session") if isinstance(caps, dict) else None
                    delete_caps = isinstance(sess, dict) and isinstance(sess.get("delete"), dict)
                    self.caps = {"delete": delete_caps}
                elif m.method == "session/new" and isinstance(m.result, dict) \
                        and isinstance(m.result.get("sessionId"), str):  # (any JSON may come back)
                    cwds[m.result["sessionId"]] = p.get("cwd")
                elif m.method == "session/list":
                    self._list(m, p, first_pages, _created(model, m), listed_only, deleted, cwds)
                    lists.append(m)
                    foreign = foreign or bool(listed_only)
                elif m.method == "session/delete":
                    self._delete(m, p, delete_caps, deleted)
                elif m.method == "session/resume" and req.session_id in deleted and delete_caps:
                    d = deleted[req.session_id]
                    if m.error_code == NOT_FOUND:
                        self.pass_few("DELETE-004", f"session/resume of {req.session_id!r}, deleted at t={d.t:.2f}, "
                                      "was answered with -32002.", [m, req, d])
                    else:
                        self.failed("DELETE-004", f"session/resume of {req.session_id!r}, deleted at t={d.t:.2f}, "
                                    f"was answered with {js(m.error if m.error is not None else m.result, 120)}, "
                                    "not -32002.", fr([m, req, d]))
                elif m.method == "session/prompt" and req.session_id in listed_only:
                    lr = listed_only[req.session_id]
                    if m.ok:
                        self.failed("LIST-006", f"session/prompt on {req.session_id!r}, only listed (t={lr.t:.2f}) "
                                    "and never resumed on this connection, was accepted.", fr([m, req, lr]))
                    else:
                        self.pass_few("LIST-006", f"session/prompt on {req.session_id!r}, only listed (t={lr.t:.2f}), "
                                      f"was refused ({js(m.error_code)}): listing loaded nothing.", [m, req, lr])
                continue
            su = session_update(m)
            if su and su[0] in listed_only:
                lr = listed_only[su[0]]
                self.failed("LIST-006", f"a {su[1].get('sessionUpdate')} update for {su[0]!r} arrived at t={m.t:.2f}: "
                            f"the session was only listed (t={lr.t:.2f}), never resumed on this connection.",
                            fr([m, lr]))
                listed_only.pop(su[0], None)

        if log.conn > 0 and lists and not foreign:
            # a new process that lists none of the sessions of the processes before it keeps them in memory
            # only (its right): no session was only listed here, so LIST-006 has nothing to judge
            self.not_exercised("LIST-006", f"session/list in this new process (t={lists[0].t:.2f}) listed no "
                               "session it had not created or resumed: the agent does not keep sessions beyond "
                               "a process, so no session was only listed.", fr(lists[:1]))

    def _walk(self, m: Msg, p: dict, cursor: Any, nc: Any, label: str) -> None:
        """LIST-004 along the pages: a walk starts at a first page (no cursor) and goes on with each request whose
        cursor is the nextCursor of its last page (same other params). A nextCursor that leads back to a page
        already read is a loop (the listing never ends); 50 pages with no end likewise; a session on two pages
        warns."""
        if nc is not None and not isinstance(nc, str):
            self.failed("LIST-004", f"{label}: nextCursor {js(nc)} is neither a string nor null.", fr([m, m.request]))
        key = json.dumps({k: v for k, v in p.items() if k not in ("cursor", "_meta")}, sort_keys=True, default=str)
        walk = self.walks.get(key)
        if cursor is None:
            walk = self.walks[key] = [m]
        elif walk and isinstance(cursor, str) and walk[-1].result.get("nextCursor") == cursor:
            walk.append(m)
        else:
            return  # a cursor of the suite's own (an invalid one), or a walk this connection did not start
        if len(walk) == 1:
            return
        where = f"session/list {js(p, 100)}, page {len(walk)} of a walk along nextCursor (t={m.request.t:.2f})"
        used = [w.request.params.get("cursor") for w in walk[1:]]
        if isinstance(nc, str) and nc in used:
            back = used.index(nc) + 2
            ids = lambda page: {s.get("sessionId") for s in page.result.get("sessions") or [] if isinstance(s, dict)}
            if ids(m) <= set().union(*(ids(w) for w in walk[:-1])):
                self.failed("LIST-004", f"{where}: its nextCursor {js(nc)} leads back to page {back}, which was "
                            "already read, and this page brought no session the walk had not listed: the listing "
                            "loops and never ends.", fr([m, walk[back - 1], walk[0]]))
            else:  # the same token, yet the pages move on: a cursor that keeps its place on the agent's side
                self.noted("LIST-004", f"{where}: its nextCursor {js(nc)} repeats page {back}'s, yet this page "
                           "listed sessions the walk had not seen (a cursor that keeps its place on the agent's "
                           "side?); not followed further, not judged.", fr([m, walk[back - 1]]))
            return
        if isinstance(nc, str) and len(walk) >= 50:
            self.failed("LIST-004", f"{where}: 50 pages and still a nextCursor ({js(nc)}): the listing does not end.",
                        fr([m, walk[0]]))
            return
        seen: dict[str, int] = {}
        for n, page in enumerate(walk, 1):
            for s in page.result.get("sessions") or []:
                sid = s.get("sessionId") if isinstance(s, dict) else None
                if isinstance(sid, str) and sid in seen and seen[sid] != n:
                    self.warned("LIST-004", f"{where}: session {js(sid)} is on page {seen[sid]} and on page {n}.",
                                fr([page, walk[seen[sid] - 1]]))
                    return
                seen.setdefault(sid, n)
        if nc is None:
            self.pass_few("LIST-004", f"{where}: the walk ended after {len(walk)} pages, each session on one page.",
                          [m, walk[0]])

    def _list(self, m: Msg, p: dict, first_pages: list, created: set, listed_only: dict, deleted: dict,
              cwds: dict) -> None:
        cursor, cwd = p.get("cursor"), p.get("cwd")
        label = f"session/list {js(p, 120)} (t={m.request.t:.2f})"
        if cursor == INVALID_CURSOR:
            if m.ok:
                self.failed("LIST-005", f"{label} with an invalid cursor succeeded: {js(m.result, 120)}.", fr([m, m.request]))
            elif m.error_code != INVALID_PARAMS:
                self.failed("LIST-005", f"{label} with an invalid cursor got error {js(m.error_code)}, not -32602.",
                            fr([m, m.request]))
            else:
                self.pass_few("LIST-005", f"{label}: the invalid cursor was rejected with -32602.", [m, m.request])
            return
        if not m.ok:
            if "cursor" in p and cursor is None and m.error is not None:
                # null is the first page, as omitted is (a filter it cannot serve would still be an error,
                # hence only when the request carries nothing else that could be refused)
                if all(v is None for k, v in p.items() if k != "_meta"):
                    self.failed("LIST-004", f"{label}: a null cursor (the first page) was refused with "
                                f"{js(m.error, 120)}.", fr([m, m.request]))
            return
        r = m.result
        sessions = r.get("sessions") if isinstance(r, dict) else None
        if not isinstance(sessions, list):
            self.failed("LIST-001", f"{label}: the result has no sessions array: {js(r, 160)}.", fr([m, m.request]))
            return
        nonexist = isinstance(cwd, str) and cwd.startswith("/nonexistent/")
        if nonexist and sessions:
            self.failed("LIST-001", f"{label}: {len(sessions)} session(s) listed for a directory that does not exist; "
                        "expected [].", fr([m, m.request]))
        else:
            self.pass_few("LIST-001", f"{label}: sessions is an array of {len(sessions)}"
                          + (" (empty, as nothing matches)." if nonexist else "."), [m, m.request])
        probs = [x for s in sessions for x in info_problems(s)]
        if probs:
            self.failed("LIST-002", f"{label}: {'; '.join(probs[:4])}.", fr([m, m.request]))
        elif sessions:
            self.pass_few("LIST-002", f"{label}: {len(sessions)} well-formed SessionInfo entr(ies).", [m, m.request])
        nc = r.get("nextCursor")
        ids = [s.get("sessionId") for s in sessions if isinstance(s, dict)]
        self._walk(m, p, cursor, nc, label)
        if cursor is None and cwd is None:
            for other, oids in first_pages:
                if set(oids) != set(ids):
                    differ = f"{label} and the first-page request at t={other.request.t:.2f} " \
                             f"({js(other.request.params, 80)}) listed different sessions"
                    if ids and oids and not (set(ids) ^ set(oids)) & created:
                        # only sessions of others differ: a store shared with other processes changed between
                        # the two requests (legal), which says nothing of how the cursor was read
                        self.noted("LIST-004", f"{differ}, only sessions this connection did not create: "
                                   f"{js(sorted(set(ids) ^ set(oids)), 120)} (a store shared with other "
                                   "processes may have changed); not judged.", fr([m, other]))
                        break
                    self.warned("LIST-004", f"{differ}: {js(ids, 120)} vs {js(oids, 120)}.", fr([m, other]))
                    break
                self.pass_few("LIST-004", f"{label} and {js(other.request.params, 80)} (t={other.request.t:.2f}) "
                              "both gave the same first page.", [m, other])
            first_pages.append((m, ids))
        if isinstance(cwd, str) and not nonexist:
            bad = [s for s in sessions if isinstance(s, dict) and norm(s.get("cwd")) != norm(cwd)]
            if bad:
                self.failed("LIST-003", f"{label}: the cwd filter returned {js(bad[0].get('sessionId'))} with cwd "
                            f"{js(bad[0].get('cwd'))}.", fr([m, m.request]))
            elif sessions:
                self.pass_few("LIST-003", f"{label}: all {len(sessions)} session(s) have exactly that cwd.", [m, m.request])
        for sid in ids:
            if isinstance(sid, str) and sid not in created:
                listed_only.setdefault(sid, m)
            if isinstance(sid, str) and sid in deleted:
                d = deleted[sid]
                self.failed("DELETE-001", f"{label} still lists {sid!r}, deleted at t={d.t:.2f}.", fr([m, d]))
        if nc is None:  # a complete listing (or its last page): deleted sessions are absent
            for sid, d in deleted.items():
                # the whole list, or the whole of the session's directory (a store shared with other runs
                # may hold more sessions than one page)
                whole = cwd is None or (isinstance(cwds.get(sid), str) and norm(cwds[sid]) == norm(cwd))
                if sid not in ids and cursor is None and whole:
                    self.pass_few("DELETE-001", f"{label}: {sid!r}, deleted at t={d.t:.2f}, is no longer listed.",
                                  [m, d], key=sid)

    def _delete(self, m: Msg, p: dict, has_cap: bool | None, deleted: dict) -> None:
        self.deletes += 1
        sid = p.get("sessionId")
        label = f"session/delete {js(sid)} (t={m.request.t:.2f})"
        if has_cap is False:
            if m.error_code == NO_METHOD:
                self.pass_few("DELETE-003", f"{label} without session.delete advertised: -32601.", [m, m.request])
            elif m.ok:  # a capability-gated method that was not advertised is not served
                self.failed("DELETE-003", f"{label} succeeded although session.delete is not advertised.", fr([m, m.request]))
            else:
                self.warned("DELETE-003", f"{label} without session.delete advertised got {js(m.error_code)}, "
                            "not -32601.", fr([m, m.request]))
            return
        if not has_cap or not isinstance(sid, str):
            return  # no session is named: a malformed request, rightly refused (-32602), deletes nothing
        missing = sid in deleted or (isinstance(sid, str) and sid.startswith("sess_conformance_unknown_"))
        if missing:
            if m.ok:
                self.pass_few("DELETE-002", f"{label} of a session that "
                              f"{'was already deleted' if sid in deleted else 'never existed here'} succeeded.", [m, m.request])
            else:
                self.failed("DELETE-002", f"{label} of a missing session failed: {js(m.error, 120)}.", fr([m, m.request]))
            return
        if m.ok and isinstance(m.result, dict):
            deleted[sid] = m
        elif m.ok:
            self.failed("DELETE-001", f"{label} answered {js(m.result)}, not an object.", fr([m, m.request]))
        else:
            self.failed("DELETE-001", f"{label} of a session of this connection failed: {js(m.error, 120)}.",
                        fr([m, m.request]))

    def finish_test(self) -> None:
        if self.caps is None:
            return
        if self.caps.get("delete"):
            self.ctx.report("DELETE-003", SKIP, "the agent advertises session.delete", self.expected["DELETE-003"])
        else:
            for rule in ("DELETE-001", "DELETE-002", "DELETE-004"):
                self.ctx.report(rule, SKIP, "the agent does not advertise session.delete", self.expected[rule])
