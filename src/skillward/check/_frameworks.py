"""Frameworks whose own behaviour a finding can come from, told by what they put on the
wire, and what their users can do about each finding (a setting, a version, an upstream
issue): a finding an author cannot act on says so, rather than leaving them to guess.

Only what a framework is known to generate is attributed: a resource or ``_meta`` key is
FastMCP's when it carries FastMCP's own ``_meta`` object, as every FastMCP 3.x and 4.x
component does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from skillward.check._audit import Finding

__all__ = [
    "FASTMCP",
    "FASTMCP_MANIFEST",
    "FASTMCP_META_KEY",
    "attribute",
    "fastmcp_manifest",
    "fastmcp_meta",
]

FASTMCP = "FastMCP"
#: FastMCP's tracking issue for SEP-2640, where what it serves is being brought in line.
_FASTMCP_ISSUE = "PrefectHQ/fastmcp#5016"

FASTMCP_META_KEY = (
    "FastMCP adds its own _meta key, fastmcp (a component's tags and version), to every "
    "resource it serves; no setting of FastMCP 4.2 removes it. Accept it with a baseline "
    f"(--write-baseline), and see {_FASTMCP_ISSUE}."
)
FASTMCP_MANIFEST = (
    "FastMCP's skills provider serves <skill>/_manifest, a JSON listing of the skill's "
    "files for its own Client.read_skill, under every skill's root; it is not one of the "
    f"skill's files, and no setting of FastMCP 4.2 removes it (see {_FASTMCP_ISSUE})."
)
#: What each rule comes from on a FastMCP server, when the rule is broken there.
_FASTMCP: Mapping[str, str] = {
    "SW-LIST-011": (
        "FastMCP serves every skill on one page and reads no cursor unless it pages: "
        "FastMCP(..., list_page_size=100) makes an unknown cursor get -32602."
    ),
    "SW-META-002": (
        "FastMCP names every skill file's resource by its path, <skill-path>/SKILL.md for "
        f"SKILL.md; no setting of FastMCP 4.2 changes it (see {_FASTMCP_ISSUE})."
    ),
    "SW-CAP-006": (
        "FastMCP 4.2 serves the skills extension on protocol 2026-07-28 only (the mcp "
        "Python SDK 2.x it runs on also drops capabilities.extensions from initialize "
        "results: modelcontextprotocol/modelcontextprotocol#3364); no setting changes it "
        f"(see {_FASTMCP_ISSUE})."
    ),
}


def fastmcp_meta(meta: object) -> bool:
    """Whether ``meta`` (a resource's ``_meta``) carries FastMCP's own object."""
    if not isinstance(meta, Mapping):
        return False
    own = meta.get("fastmcp")
    return isinstance(own, Mapping) and isinstance(own.get("tags"), list)


def fastmcp_manifest(resource: Mapping[str, Any], root: str) -> bool:
    """Whether ``resource`` (a ``resources/list`` entry) is the ``_manifest`` FastMCP's
    skills provider generates under the skill root ``root``."""
    return resource.get("uri") == f"{root}/_manifest" and fastmcp_meta(resource.get("_meta"))


def attribute(findings: list[Finding], frameworks: set[str]) -> None:
    """Give each finding a framework seen on the server is known to cause its cause."""
    if FASTMCP not in frameworks:
        return
    for index, finding in enumerate(findings):
        cause = _FASTMCP.get(finding.rule)
        if cause is not None and finding.cause is None:
            findings[index] = dataclasses.replace(finding, cause=cause)
