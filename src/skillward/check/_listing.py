"""The listing phase: every ``skills/list`` page (twice, for a stable order), an unknown
cursor, and the rules across the listed entries (names, fold collisions, nesting)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import anyio

from skillward.check._audit import (
    INVALID_PARAMS,
    Audit,
    quote,
)
from skillward.check._hygiene import frontmatter_hygiene
from skillward.core._entries import entry_violations
from skillward.core._results import page_violations
from skillward.core.errors import (
    ServerRejected,
)
from skillward.core.uris import fold_collisions
from skillward.core.wire import SkillEntry, parse_entry
from skillward.edge._paging import Budget

#: Pages the conformance suite follows (the Inspector follows 64).
PORTABLE_PAGES = 50


@dataclass
class Listed:
    """The listing, as the audit keeps it: URIs in order, and the entries a host accepts."""

    uris: list[str] = field(default_factory=list)
    entries: dict[str, SkillEntry] = field(default_factory=dict)
    #: (rule, message, uri) of each listed entry's violations, so that skills/get is
    #: blamed only for what its entry breaks beyond the listing's.
    broken: dict[str, set[tuple[str, str, str | None]]] = field(default_factory=dict)
    complete: bool = True


async def listing(audit: Audit) -> Listed:
    listed = Listed()
    modern = audit.client.modern
    budget = Budget()
    cursor: str | None = None
    cursors: set[str] = set()
    pages = 0
    while True:
        await anyio.lowlevel.checkpoint()
        raw = await audit.call(
            partial(audit.client.list_skills_raw, cursor, budget),
            what="skills/list",
            rejected="SW-LIST-001",
        )
        if raw is None:
            listed.complete = False
            break
        pages += 1
        for found in page_violations(raw, modern=modern):
            audit.violation(found, skill=None)
        skills = raw.get("skills")
        if isinstance(skills, list):
            for item in skills:
                _entry(audit, item, listed)
        next_cursor = raw.get("nextCursor")
        if not isinstance(next_cursor, str) or not next_cursor:
            break
        if next_cursor in cursors:
            audit.add("SW-LIST-002", "skills/list repeated a cursor")
            listed.complete = False
            break
        cursors.add(next_cursor)
        cursor = next_cursor
    if pages > PORTABLE_PAGES:
        audit.add(
            "SW-LIST-004",
            f"the listing takes {pages} pages; the conformance suite follows "
            f"{PORTABLE_PAGES}, the Inspector 64",
        )
    return listed


def _entry(audit: Audit, item: object, listed: Listed) -> None:
    uri = item.get("uri") if isinstance(item, Mapping) else None
    skill = uri if isinstance(uri, str) else None
    found = entry_violations(item, limits=audit.limits)
    for violation in found:
        audit.violation(violation, skill=skill)
    if skill is None:
        return
    if skill in listed.broken or skill in listed.entries:
        audit.add("SW-LIST-005", "the listing lists this skill more than once", skill=skill)
        return
    listed.uris.append(skill)
    listed.broken[skill] = {(v.rule, v.message, v.uri) for v in found}
    if not any(v.refused for v in found):
        listed.entries[skill] = parse_entry(item, limits=audit.limits)


async def second_walk(audit: Audit, listed: Listed) -> None:
    budget = Budget()
    uris: list[str] = []
    cursor: str | None = None
    cursors: set[str] = set()
    while True:
        await anyio.lowlevel.checkpoint()
        raw = await audit.call(
            partial(audit.client.list_skills_raw, cursor, budget),
            what="skills/list (walked again)",
            rejected="SW-LIST-010",
        )
        if raw is None:
            return
        skills = raw.get("skills")
        if isinstance(skills, list):
            uris += [
                s["uri"] for s in skills if isinstance(s, Mapping) and isinstance(s.get("uri"), str)
            ]
        next_cursor = raw.get("nextCursor")
        if not isinstance(next_cursor, str) or not next_cursor or next_cursor in cursors:
            break
        cursors.add(next_cursor)
        cursor = next_cursor
    first = list(dict.fromkeys(listed.uris))
    again = list(dict.fromkeys(uris))
    if first != again:
        change = "other skills" if set(first) != set(again) else "another order"
        audit.add(
            "SW-LIST-010",
            f"walking the listing again gave {change} ({len(again)} skills, "
            f"{len(first)} the first time)",
        )


async def invalid_cursor(audit: Audit) -> None:
    cursor = f"skillward-check-invalid-cursor-{audit.token}"
    try:
        await audit.call(
            lambda: audit.client.list_skills_raw(cursor, Budget()),
            what="skills/list with an unknown cursor",
            rejected=None,
        )
    except ServerRejected as error:
        if error.code != INVALID_PARAMS:
            audit.add(
                "SW-LIST-011",
                f"an unknown cursor got error {error.code}, not {INVALID_PARAMS}",
            )
        return
    audit.add("SW-LIST-011", "skills/list answered a cursor it never issued with a page")


def listing_rules(audit: Audit, entries: list[SkillEntry]) -> None:
    names = Counter(entry.name for entry in entries)
    for entry in entries:
        if names[entry.name] > 1:
            audit.add(
                "SW-LIST-007",
                f"{names[entry.name]} listed skills are named {quote(entry.name)}",
                skill=entry.uri,
            )
    roots = {str(entry.root): entry for entry in entries}
    for group in fold_collisions(roots):
        for member in group:
            others = ", ".join(quote(other) for other in group if other != member)
            audit.add(
                "SW-LIST-008",
                f"the skill path looks like {others} (case, Unicode form or percent-encoding)",
                skill=roots[member].uri,
            )
    for entry in entries:
        frontmatter_hygiene(audit, entry)
        for depth in range(1, len(entry.root.segments)):
            outer = roots.get(f"{entry.root.scheme}://" + "/".join(entry.root.segments[:depth]))
            if outer is not None:
                _nested(audit, outer, entry)


def _nested(audit: Audit, outer: SkillEntry, inner: SkillEntry) -> None:
    audit.add(
        "SW-INFO-002",
        f"nested under {quote(outer.uri, 300)}: activating it takes its own consent",
        skill=inner.uri,
    )
    if outer.is_dynamic or inner.is_dynamic:
        return
    missing = [
        item.uri
        for item in inner.manifest.values()
        if (listed := outer.manifest.get(item.uri)) is None
        or (listed.digest, listed.size) != (item.digest, item.size)
    ]
    for uri in missing[:20]:
        audit.add(
            "SW-RES-007",
            f"a file of this nested skill is not in the enclosing skill "
            f"{quote(outer.uri, 300)}'s resources with the same digest and size",
            skill=inner.uri,
            uri=uri,
        )
