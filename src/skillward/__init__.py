"""skillward: a security-focused host-side loader for skills served over MCP (SEP-2640).

Everything a server sends is untrusted. skillward parses it once, at the boundary,
into frozen models, and raises a typed :class:`SkillwardError` (naming the server
label and skill URI) for anything that does not conform::

    from skillward import parse_skills_page

    page = parse_skills_page(result, server="acme")
    for entry in page.entries:
        print(entry.name, entry.root)
    for problem in page.rejected:
        print(problem)

The names below are the stable public API; modules whose names start with an
underscore are internal.
"""

from skillward.config import Limits
from skillward.errors import (
    ApprovalRequired,
    IntegrityError,
    OriginError,
    PolicyDenied,
    SkillwardError,
    StoreTampered,
    TransportError,
    UsageError,
)
from skillward.frontmatter import SkillDocument, check_frontmatter, parse_skill_md
from skillward.uris import ResourceUri, SkillRoot, parse_uri, resolve_reference
from skillward.wire import SkillEntry, SkillsPage, parse_entry, parse_skills_page

__all__ = [
    "ApprovalRequired",
    "IntegrityError",
    "Limits",
    "OriginError",
    "PolicyDenied",
    "ResourceUri",
    "SkillDocument",
    "SkillEntry",
    "SkillRoot",
    "SkillsPage",
    "SkillwardError",
    "StoreTampered",
    "TransportError",
    "UsageError",
    "check_frontmatter",
    "parse_entry",
    "parse_skill_md",
    "parse_skills_page",
    "parse_uri",
    "resolve_reference",
]
