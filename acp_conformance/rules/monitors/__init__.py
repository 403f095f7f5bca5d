"""Monitors: one module per rule area, found here by discovery, for both sides.

A monitor lives in ``<area>.py``, the rule-ID prefix of most of the rules it judges (``prompt.py`` for
PROMPT-*; an area that needs two modules adds ``<area>_*.py``: ``cancel_lifecycle.py``, ``client_*.py``),
the client-side monitor of an area beside the agent-side one. The shared reading of the stream and the
helpers are the private modules: ``_common`` (messages, pairing, ``ConnMonitor``), ``_attribution``
(which answer belongs to which raw line the suite wrote) and ``_client`` (client-side helpers).

Every module of this package that defines ``Monitor`` subclasses with a non-empty ``rules`` tuple
contributes them (in module order), so adding a rule area is adding a module. A monitor's
``side`` says which targets it judges: ``agent`` (the default: the suite plays the client),
``client`` (the suite plays the agent) or ``both`` (it reads ``ctx.target_side``).

* ``AGENT_MONITORS`` are instantiated for every test of an agent, ``CLIENT_MONITORS`` for every
  test of a client (``ALL_MONITORS`` is the agent list, its historical name);
* ``RULES_CHECKED`` maps each rule id to the monitor class that judges it, over both sides; a rule
  is checked in one place per side (a ``both`` rule by one direction-aware monitor, or, where the
  agent-side monitor reads the agent's direction only, by a client-side monitor beside it);
* ``checked_on(side)`` is the map of what a run of that side checks.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from ..monitor import Monitor

SIDES = ("agent", "client", "both")


def _discover() -> list[type[Monitor]]:
    found: list[type[Monitor]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Monitor) and cls.__module__ == mod.__name__ and cls.rules:
                side = getattr(cls, "side", "agent")
                if side not in SIDES:
                    raise RuntimeError(f"{cls.__name__}.side is {side!r}; it must be one of {', '.join(SIDES)}")
                found.append(cls)
    return found


def monitor_side(cls: type[Monitor]) -> str:
    return getattr(cls, "side", "agent")


_ALL = _discover()
AGENT_MONITORS: list[type[Monitor]] = [c for c in _ALL if monitor_side(c) in ("agent", "both")]
CLIENT_MONITORS: list[type[Monitor]] = [c for c in _ALL if monitor_side(c) in ("client", "both")]
ALL_MONITORS = AGENT_MONITORS

# rule -> monitor class name, per side of the target. A rule is checked in one place per side: a
# ``both`` monitor registers on each side; a client-side monitor may take a ``both`` rule whose
# agent-side monitor reads the agent's direction only (the two never run in the same test).
_BY_SIDE: dict[str, dict[str, str]] = {"agent": {}, "client": {}}
for _cls in _ALL:
    _sides = ("agent", "client") if monitor_side(_cls) == "both" else (monitor_side(_cls),)
    for _rule in _cls.rules:
        for _side in _sides:
            _have = _BY_SIDE[_side]
            if _rule in _have:
                raise RuntimeError(f"rule {_rule} is checked by both {_have[_rule]} and {_cls.__name__} ({_side} side)")
            _have[_rule] = _cls.__name__

# every checked rule and the class that judges it (the agent side's where both sides check it)
RULES_CHECKED: dict[str, str] = {**_BY_SIDE["client"], **_BY_SIDE["agent"]}


def monitors_for(side: str) -> list[type[Monitor]]:
    return CLIENT_MONITORS if side == "client" else AGENT_MONITORS


def checked_on(side: str | None) -> dict[str, str]:
    """Rule id -> monitor class name, for the rules that a run against a target of ``side`` checks."""
    if side not in ("agent", "client"):
        return dict(RULES_CHECKED)
    return dict(_BY_SIDE[side])
