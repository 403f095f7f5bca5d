"""Agent-side monitors: one module per rule family, found here by discovery.

Every module of this package that defines ``Monitor`` subclasses with a non-empty ``rules`` tuple
contributes them (in module order), so adding a rule family is adding a module. ``ALL_MONITORS``
are instantiated for every test where the suite plays the client; ``RULES_CHECKED`` maps each rule
id to the monitor class that judges it (a rule is checked in one place only).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from ..monitor import Monitor


def _discover() -> list[type[Monitor]]:
    found: list[type[Monitor]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Monitor) and cls.__module__ == mod.__name__ and cls.rules \
                    and getattr(cls, "side", "agent") in ("agent", "both"):
                found.append(cls)
    return found


ALL_MONITORS: list[type[Monitor]] = _discover()

RULES_CHECKED: dict[str, str] = {}
for _cls in ALL_MONITORS:
    for _rule in _cls.rules:
        if _rule in RULES_CHECKED:
            raise RuntimeError(f"rule {_rule} is checked by both {RULES_CHECKED[_rule]} and {_cls.__name__}")
        RULES_CHECKED[_rule] = _cls.__name__
