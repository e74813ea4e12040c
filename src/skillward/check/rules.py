"""The rules ``skillward check`` reports: IDs, severities, sources and fixes.

A rule's ID (``SW-ENTRY-003``) is stable once published: a retired rule keeps its number
and new rules take the next one in their area. ``docs/check.md`` lists this catalog (a
test keeps the two equal), and every rule has a test showing a server that breaks it
being reported (``tests/meta/test_check_rules.py``).

Severity: ``error`` where SEP-2640 (or the Agent Skills format) says MUST, or a host
refuses what breaks it; ``warning`` for SHOULD and hygiene; ``note`` for MAY and
information.
"""

from __future__ import annotations

from skillward.check._rule import Rule
from skillward.check._rules_entries import ENTRY, FRONTMATTER, LIMITS, MANIFEST, URIS
from skillward.check._rules_hygiene import HYGIENE, INFORMATION
from skillward.check._rules_protocol import CAPABILITY, GET, INSTRUCTIONS, LISTING, WIRE
from skillward.check._rules_reads import DIRECTORIES, METADATA, READS

__all__ = ["RULES", "rule"]

#: Every rule, in the order of ``docs/check.md``: by section, each section in its module.
RULES: tuple[Rule, ...] = (
    *CAPABILITY,
    *WIRE,
    *LISTING,
    *ENTRY,
    *URIS,
    *MANIFEST,
    *LIMITS,
    *FRONTMATTER,
    *GET,
    *READS,
    *DIRECTORIES,
    *METADATA,
    *INSTRUCTIONS,
    *HYGIENE,
    *INFORMATION,
)

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with ID ``rule_id``; raise KeyError for an unknown one."""
    return _BY_ID[rule_id]
