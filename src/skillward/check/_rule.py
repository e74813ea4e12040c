"""What one rule of ``skillward check`` is, and the sources rules cite."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["AS", "SEP", "Rule", "Says", "Severity"]

Severity = Literal["error", "warning", "note"]
#: What SEP-2640 says of a server on the rule's point: its keyword (MUST covers MUST NOT,
#: REQUIRED and a field its schema requires; the Agent Skills format and the base
#: protocol's methods count where the SEP makes them binding), or nothing at all.
Says = Literal["MUST", "SHOULD", "MAY", "silent"]

SEP = "SEP-2640"
AS = "Agent Skills"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: what a server must do, where that comes from, and how to fix it.

    Its severity follows what the SEP says: ``error`` only where it says MUST
    (``tests/meta/test_check_rules.py`` holds every rule to that), ``warning`` for SHOULD
    and for what hosts refuse or act on where the SEP is silent, ``note`` for MAY and facts.
    """

    id: str
    slug: str
    severity: Severity
    #: The SEP's own words on it (or, where it is silent, what the rule rests on).
    source: str
    #: What a conforming server does.
    summary: str
    #: What to change when it is broken.
    fix: str
    #: The official conformance suite's requirement IDs for the same rule (``sep-2640-...``).
    conformance: tuple[str, ...] = ()
    #: The MCP Inspector's ``skills/list --verify`` issue codes for the same rule.
    inspector: tuple[str, ...] = ()
    #: The SEP-2640 section the rule belongs to (``Resources``).
    section: str = field(default="", kw_only=True)
    says: Says = field(default="silent", kw_only=True)
