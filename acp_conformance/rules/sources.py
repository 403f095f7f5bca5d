"""The catalog's sources as public references: every source token (``seed:...``, ``upstream-doc:...``,
``schema:...``) becomes the public document a vendor can open (title, section, URL), by the table in
``public_sources.json``. Reports show only this form; the tokens stay internal to the catalog."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("public_sources.json")
# a catalog token naming an internal copy of a document
TOKEN = re.compile(r"(?:seed:[\w.]+|upstream-doc:[\w/.-]+?\.mdx|site-doc:[\w./-]+|site-rfd:[\w./-]+|"
                   r"schema:schema(?:\.unstable)?\.json|release:agent-client-protocol v[\d.]+|"
                   r"docs\.rs agent-client-protocol [\d.]+(?: ReplayComplete)?)")
INTERNAL = re.compile(r"seed:|upstream-doc:|site-doc:|site-rfd:|schema:|release:|\.txt\b|\.mdx\b|stored copy|"
                      r"git mirror|/work/|shared/")


@dataclass(frozen=True)
class PublicRef:
    text: str  # what a reader sees: document, section and remarks
    url: str | None  # where the document (and section, when known) opens

    def __str__(self) -> str:
        return f"{self.text} <{self.url}>" if self.url else self.text


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def _document(token: str) -> dict | None:
    docs = _table()["documents"]
    if token in docs:
        return docs[token]
    m = re.fullmatch(r"upstream-doc:([\w/-]+)\.mdx", token)
    if m:
        page = m.group(1)
        generic = docs["upstream-doc:*.mdx"]
        name = " ".join(w.capitalize() for w in re.split(r"[-/]", page) if w and w != "draft")
        return {**generic, "title": generic["title"].replace("{Page}", name),
                "url": generic["url"].replace("{page}", page)}
    return None


def _split(source: str) -> list[str]:
    """The references of a source, split at ';' outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in source:
        depth += ch == "("
        depth -= ch == ")"
        if ch == ";" and depth <= 0:
            out.append(cur.strip())
            cur, depth = "", 0
        else:
            cur += ch
    out.append(cur.strip())
    return [x for x in out if x]


def _clean(text: str) -> str:
    for remark in _table()["remarks_dropped"]:
        text = text.replace(f" ({remark})", "").replace(f"({remark})", "").replace(remark, "")
    for token in set(TOKEN.findall(text)):
        doc = _document(token)
        if doc is not None:
            text = text.replace(token, doc["title"])
    text = re.sub(r"#/\$defs/(\w+)", r" § \1", text)
    text = re.sub(r"#(\d{3,5})\b", lambda m: f"PR #{m.group(1)}", text)
    return re.sub(r"\s+", " ", text).replace("( ", "(").strip()


def public_ref(ref: str) -> PublicRef:
    words = _table()["words"]
    if ref in words:
        return PublicRef(words[ref], None)
    first = TOKEN.match(ref) or re.match(r"JSON-RPC 2\.0(?: spec)?", ref)
    doc = _document(first.group(0)) if first else None
    if doc is None:
        # prose naming documents inside it ("inferred from ...", "contradicts ..."): the first one named
        inner = TOKEN.search(ref)
        doc = _document(inner.group(0)) if inner else None
        return PublicRef(_clean(ref), doc["url"] if doc else None)
    url = doc["url"]
    rest = ref[first.end():]
    for remark in _table()["remarks_dropped"]:
        rest = rest.replace(f"({remark})", "")
    section = None
    if "#/$defs/" in rest:
        section = re.match(r"#/\$defs/(\w+)", rest).group(1)
        url += f"#/$defs/{section}"
    elif doc.get("anchors") == "type":
        m = re.match(r"\s*§\s*([A-Z]\w+)\s*(\(|$)", rest)
        if m:
            url += "#" + m.group(1).lower()
    elif doc.get("anchors") == "heading":
        m = re.match(r"\s*§\s*([^()]+?)\s*(\(|$)", rest) or re.match(r"\s*\(([^();]+)[);]", rest)
        # a heading, not a remark: every longer word capitalised ("JSON-RPC Batch Messages", "2. Prompt Accepted")
        if m and all(w[:1].isupper() or w[:1].isdigit() or len(w) <= 3 for w in m.group(1).split()):
            url += "#" + _slug(m.group(1))
    text = _clean(ref)
    pulls = doc.get("pulls")
    if pulls:
        nums = re.findall(r"#(\d{3,5})", ref)
        if nums:
            url = pulls + nums[0]
    return PublicRef(text, url)


def public_refs(source: str) -> list[PublicRef]:
    return [public_ref(r) for r in _split(source)]


def public_source(source: str) -> str:
    """The source as a reader outside this repository reads it: '; '-joined public references."""
    return "; ".join(str(r) for r in public_refs(source))
