"""Hygiene: what a host neutralises or never grants, found in frontmatter, files and
``_meta`` keys (SW-HYG-*, SW-META-004); a reviewer's content checks are ``_content``'s."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from skillward.check._audit import (
    Audit,
    quote,
)
from skillward.check._content import broad_tools
from skillward.check._frameworks import FASTMCP, FASTMCP_META_KEY, fastmcp_meta
from skillward.core._neutralise import FLAG_INVISIBLE, FLAG_MARKERS
from skillward.core.context import CatalogItem, catalog_block
from skillward.core.frontmatter import allowed_tools
from skillward.core.origins import Origin
from skillward.core.wire import (
    SkillEntry,
)

#: A _meta key with a reverse-domain prefix, as the conformance suite reads one.
_META_PREFIX_RE = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+/", re.IGNORECASE)


def frontmatter_hygiene(audit: Audit, entry: SkillEntry) -> None:
    frontmatter = entry.frontmatter.as_dict()
    tools = allowed_tools(frontmatter)
    if tools:
        audit.add(
            "SW-HYG-003",
            f"allowed-tools requests {len(tools)} tools; hosts grant none of them "
            "without a person's approval",
            skill=entry.uri,
            field="allowed-tools",
        )
    broad = broad_tools(tools)
    if broad:
        audit.add(
            "SW-HYG-008",
            f"allowed-tools grants {', '.join(broad)} without a pattern narrowing it",
            skill=entry.uri,
            field="allowed-tools",
        )
    if "hooks" in frontmatter:
        audit.add(
            "SW-HYG-004",
            "the frontmatter declares hooks, which hosts never run from an MCP skill",
            skill=entry.uri,
            field="hooks",
        )
    item = CatalogItem(
        ref=entry.name,
        name=entry.name,
        description=entry.description,
        origin=Origin("mcp", "check"),
    )
    flags(audit, catalog_block([item]).flags, skill=entry.uri, what="the frontmatter")


def flags(
    audit: Audit, flags: Iterable[str], *, skill: str, what: str, uri: str | None = None
) -> None:
    for flag in flags:
        if flag.startswith(FLAG_INVISIBLE):
            detail = flag.partition(": ")[2]
            audit.add(
                "SW-HYG-001",
                f"{what} holds invisible or control characters ({detail}), which hosts "
                "show to the model as [U+XXXX]",
                skill=skill,
                uri=uri,
            )
        elif flag.startswith(FLAG_MARKERS):
            audit.add(
                "SW-HYG-002",
                f"{what} imitates a host's block markers (<skillward...), which hosts neutralise",
                skill=skill,
                uri=uri,
            )


def meta_keys(
    audit: Audit, meta: Mapping[str, Any] | None, *, skill: str | None, uri: str | None, what: str
) -> None:
    framework = fastmcp_meta(meta)
    if framework:
        audit.frameworks.add(FASTMCP)
    bare = sorted(str(key)[:80] for key in meta or {} if not _META_PREFIX_RE.match(str(key)))
    if bare:
        keys = ", ".join(quote(key, 60) for key in bare[:5])
        audit.add(
            "SW-META-004",
            f"{what}: _meta keys without a reverse-domain prefix: {keys}",
            skill=skill,
            uri=uri,
            cause=FASTMCP_META_KEY if framework and bare == ["fastmcp"] else None,
        )
