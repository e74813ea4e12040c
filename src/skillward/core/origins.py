"""Where a skill came from: an MCP server (by host label) or a local skill directory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Origin", "OriginKind", "SkillKey"]

OriginKind = Literal["mcp", "local"]


@dataclass(frozen=True, slots=True)
class Origin:
    """An origin of skills.

    ``label`` is assigned by the host and unique per host: it is the identity.
    ``detail`` is descriptive only: for MCP, the server's self-reported
    ``serverInfo.name`` (unverified); for local, the directory scanned.
    """

    kind: OriginKind
    label: str
    detail: str | None = None

    @property
    def is_mcp(self) -> bool:
        return self.kind == "mcp"


@dataclass(frozen=True, slots=True, order=True)
class SkillKey:
    """The identity of a skill: (origin label, locator), never flattened into one string.

    For an MCP skill the locator is its exact ``SKILL.md`` URI; for a local skill it
    is the skill directory's path relative to its origin's root.
    """

    origin: str
    locator: str
