"""What one rule of ``skillward check`` is, and the sources rules cite."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["AS", "SEP", "Rule", "Severity"]

Severity = Literal["error", "warning", "note"]

SEP = "SEP-2640"
AS = "Agent Skills"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: what a server must do, where that comes from, and how to fix it."""

    id: str
    slug: str
    severity: Severity
    #: Where the rule comes from: the SEP section (with its MUST or SHOULD), the Agent
    #: Skills specification, or the hosts that refuse what breaks it.
    source: str
    #: What a conforming server does.
    summary: str
    #: What to change when it is broken.
    fix: str
    #: The official conformance suite's check IDs for the same rule (``sep-2640-...``).
    conformance: tuple[str, ...] = ()
    #: The MCP Inspector's ``skills/list --verify`` issue codes for the same rule.
    inspector: tuple[str, ...] = ()
