"""The rules ``skillward check`` reports: IDs, severities, sources and fixes.

A rule's ID (``SW-ENTRY-003``) is stable once published: a retired rule keeps its number
and new rules take the next one in their area. ``docs/check.md`` lists this catalog (a
test keeps the two equal), and every rule has a test showing a server that breaks it
being reported (``tests/meta/test_check_rules.py``).

Severity follows what SEP-2640 says (:class:`~skillward.check._rule.Rule`): ``error``
only where it says MUST (the Agent Skills format and the base protocol's methods where
it makes them binding); ``warning`` for SHOULD, and for what hosts refuse or act on
where it is silent; ``note`` for MAY and facts for the author.
"""

from __future__ import annotations

from skillward.check._rule import Rule
from skillward.check._rules_entries import ENTRY, FRONTMATTER, LIMITS, MANIFEST, URIS
from skillward.check._rules_hygiene import HYGIENE, INFORMATION, SOURCES
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
    *SOURCES,
)

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with ID ``rule_id``; raise KeyError for an unknown one."""
    return _BY_ID[rule_id]
