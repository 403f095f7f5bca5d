"""Expected failures (waivers): a YAML list of {rule, reason, link?} read by --acp-expected-failures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class WaiverError(Exception):
    """The file cannot be used: the message is one sentence for the user."""


@dataclass(frozen=True)
class Waiver:
    rule: str
    reason: str
    link: str | None = None

    def to_json(self) -> dict:
        return {"reason": self.reason, **({"link": self.link} if self.link else {})}


def load_waivers(path: str, known_rules, side: str | None = None) -> dict[str, Waiver]:
    """``known_rules``: the catalog (rule ID -> Rule); ``side``: the target's role, whose rules alone may be waived."""
    import yaml
    opt = "--acp-expected-failures"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise WaiverError(f"{opt}: cannot read {path!r} ({getattr(e, 'strerror', None) or e})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise WaiverError(f"{opt}: {path!r} is not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, list):
        raise WaiverError(f"{opt}: {path!r} must be a YAML list of {{rule, reason, link}} entries")
    out: dict[str, Waiver] = {}
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict) or not isinstance(item.get("rule"), str) or not isinstance(item.get("reason"), str) \
                or not item["reason"].strip() or set(item) - {"rule", "reason", "link"} \
                or not isinstance(item.get("link", ""), str):
            raise WaiverError(f"{opt}: entry {i} of {path!r} must have a string 'rule', a non-empty string "
                              f"'reason' and optionally a string 'link', and nothing else")
        if item["rule"] not in known_rules:
            raise WaiverError(f"{opt}: entry {i} of {path!r} names {item['rule']!r}, which is not a rule ID of the catalog")
        rule_side = getattr(known_rules[item["rule"]], "side", None)
        if side and rule_side not in (None, side, "both"):
            raise WaiverError(f"{opt}: entry {i} of {path!r} names {item['rule']}, a {rule_side}-side rule, but this "
                              f"run tests {'an' if side == 'agent' else 'a'} {side}")
        if item["rule"] in out:
            raise WaiverError(f"{opt}: {path!r} lists {item['rule']} twice")
        out[item["rule"]] = Waiver(item["rule"], item["reason"].strip(), item.get("link"))
    return out
