"""Agent-side monitors: one module per rule family.

``ALL_MONITORS`` are instantiated for every test where the suite plays the client;
``RULES_CHECKED`` maps each rule id to the monitor class that judges it.
"""

from __future__ import annotations

from ..monitor import Monitor
from .cancel import CancelMonitor
from .errors import ResponseMonitor, SessionErrorMonitor
from .initialize import InitializeMonitor
from .prompt import PromptMonitor
from .resume import ResumeMonitor
from .schema_validity import SchemaMonitor
from .transport import TransportMonitor

ALL_MONITORS: list[type[Monitor]] = [
    TransportMonitor,
    InitializeMonitor,
    PromptMonitor,
    CancelMonitor,
    ResumeMonitor,
    SessionErrorMonitor,
    ResponseMonitor,
    SchemaMonitor,
]

RULES_CHECKED: dict[str, str] = {rule: cls.__name__ for cls in ALL_MONITORS for rule in cls.rules}

__all__ = ["ALL_MONITORS", "RULES_CHECKED", "CancelMonitor", "InitializeMonitor", "PromptMonitor",
           "ResponseMonitor", "ResumeMonitor", "SchemaMonitor", "SessionErrorMonitor", "TransportMonitor"]
