"""What the model sees of the gateway: its tools as the library defines them
(:class:`~skillward.core.tools.ToolSet`, never ``read_resource``), the note added to a
skill block, and each answer as a tool result (the block's text, and its origin, URI and
verification in ``_meta``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types

from skillward.core.config import Limits
from skillward.core.context import ContextBlock, error_block
from skillward.core.errors import SkillwardError, UsageError
from skillward.core.tools import DEFAULT_TOOLS, ToolSet
from skillward.host.types import HostConfig

__all__ = [
    "NO_TOOLS",
    "gateway_tools",
    "host_error",
    "result",
    "tools",
    "with_notes",
]

NO_TOOLS = (
    "Through the skillward gateway: it cannot run or stop the host's own tools, so it "
    "grants none of the allowed-tools this skill requests; the host's own rules decide "
    "every tool call."
)


def gateway_tools(config: HostConfig) -> ToolSet:
    """The tools the gateway serves over a host of ``config``: the library's, unprefixed,
    with no ``read_resource`` (no argument is a URI). A host configured to offer others
    would hand out blocks naming tools the gateway does not have: refused."""
    if config.tools != DEFAULT_TOOLS:
        raise UsageError(
            "the gateway serves list_skills, read_skill and read_skill_file, unprefixed: "
            "build its host without HostConfig.allow_uri_lookups or tool_prefix"
        )
    return DEFAULT_TOOLS


def tools(offered: ToolSet, refs: Iterable[str], limits: Limits) -> list[types.Tool]:
    """``offered`` as MCP tools, ``ref`` limited to ``refs`` (the catalog's)."""
    return [
        types.Tool(
            name=tool["name"], description=tool["description"], input_schema=tool["inputSchema"]
        )
        for tool in offered.definitions(refs, "mcp", limits=limits)
    ]


def result(block: ContextBlock, meta: Mapping[str, Any] | None = None) -> types.CallToolResult:
    data: dict[str, Any] = {
        "kind": block.kind,
        "label": block.origin.label if block.origin is not None else None,
        "uri": block.uri,
        "verified": block.verified,
    }
    if block.digest is not None:
        data["digest"] = block.digest
    if block.kind == "error":
        data["error"] = block.error_type
    data.update(meta or {})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=block.text())],
        is_error=block.kind == "error",
        meta={"skillward": data},
    )


def host_error(error: SkillwardError) -> types.CallToolResult:
    """An error in skillward's own words only (it quotes neither the model nor a server)."""
    return result(error_block(error))


def with_notes(block: ContextBlock, notes: list[str]) -> ContextBlock:
    return dataclasses.replace(block, host_notes=(*block.host_notes, *notes)) if notes else block
