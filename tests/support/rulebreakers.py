"""Servers that break one SEP-2640 rule each, for ``skillward check``'s tests.

Each is `skillward serve` (the real catalog and handlers) over a small tree, with the
answers of chosen methods rewritten: :func:`served` takes, per method, a coroutine given
the request's params and a thunk for the real handler's result (as JSON), and returns
what the server answers instead. :func:`skills_only` is a skills server with no
``resources`` capability at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from skillward.core._fields import EXTENSION_ID
from skillward.core.verify import sha256_digest
from skillward.edge._methods import SkillsGetParams, SkillsListParams
from skillward.serve.catalog import ServedFile, ServedSkill, SkillCatalog
from skillward.serve.server import build_server
from tests.support.trees import skill_md, write

Original = Callable[[], Awaitable[Any]]
Rewrite = Callable[[dict[str, Any], Original], Awaitable[Any]]
EntryRewrite = Callable[[dict[str, Any]], None]

INVALID_PARAMS = -32602


def build_tree(root: Path) -> None:
    """Three skills: one with a subdirectory, one under a prefix with a nested skill."""
    write(root, "plain/SKILL.md", skill_md("plain", "A plain skill"))
    write(root, "plain/ref/guide.md", b"guide\n")
    write(root, "plain/notes.md", b"notes\n")
    write(root, "acme/billing/refunds/SKILL.md", skill_md("refunds", "Refund policy"))
    write(root, "acme/billing/refunds/templates/email.md", b"Hello\n")
    write(root, "acme/billing/refunds/partial/SKILL.md", skill_md("partial", "Partial refunds"))


def served(
    root: Path,
    *,
    rewrite: Mapping[str, Rewrite] | None = None,
    entries: Mapping[str, EntryRewrite] | None = None,
    content: Mapping[str, bytes] | None = None,
    extensions: dict[str, Any] | None = None,
    instructions: str | None = None,
    legacy_extensions: bool = True,
    scheme: str = "skill",
) -> Server[Any]:
    """`skillward serve` on ``root``, lying as told.

    ``entries``: by skill URI, a function that edits the skill's entry (a dict) in place,
    in skills/list and skills/get alike. ``content``: by file URI, the bytes served instead
    (the entry's digest and size follow them, so only what the bytes say is a lie).
    ``rewrite``: by method, what the server answers instead. ``legacy_extensions``: put the
    extension back into the 2025-11-25 initialize result, as `skillward serve` does.
    """
    catalog = SkillCatalog(scheme=scheme)
    catalog.add_tree(root)
    assert not catalog.problems, catalog.problems
    replaced = dict(content or {})

    def entry_of(skill: ServedSkill) -> dict[str, Any]:
        entry = skill.entry()
        for item in entry["resources"]:
            data = replaced.get(item["uri"])
            if data is not None:
                item.update(digest=sha256_digest(data), size=len(data))
        edit = (entries or {}).get(skill.uri)
        if edit is not None:
            edit(entry)
        return entry

    def content_of(file: ServedFile) -> bytes:
        return replaced.get(file.uri, file.data)

    server = build_server(
        catalog,
        name="rulebreaker",
        instructions=instructions,
        transform_entry=entry_of,
        transform_content=content_of,
    )
    if extensions is not None:
        server.extensions[EXTENSION_ID] = extensions
    if not legacy_extensions:
        server.middleware.clear()
    if rewrite:
        server.middleware.append(_rewriter(rewrite))
    return server


def _rewriter(rewrite: Mapping[str, Rewrite]) -> Callable[..., Any]:
    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method = rewrite.get(ctx.method)
        if method is None:
            return await call_next(ctx)

        async def original() -> Any:
            result = await call_next(ctx)
            if isinstance(result, BaseModel):
                return result.model_dump(by_alias=True, exclude_none=True, mode="json")
            return result

        params = dict(ctx.params) if ctx.params else {}
        answer: HandlerResult = await method(params, original)
        return answer

    return middleware


def error(code: int = -32603, message: str = "broken on purpose") -> MCPError:
    return MCPError(code=code, message=message)


def skills_only(root: Path) -> Server[Any]:
    """A skills server with skills/list and skills/get, and no resources capability."""
    catalog = SkillCatalog.from_directory(root)

    async def list_skills(ctx: Any, params: SkillsListParams) -> dict[str, Any]:
        return {
            "skills": [skill.entry() for skill in catalog.listed()],
            "ttlMs": 0,
            "cacheScope": "public",
        }

    async def get_skill(ctx: Any, params: SkillsGetParams) -> dict[str, Any]:
        skill = catalog.skills.get(params.uri)
        if skill is None:
            raise error(INVALID_PARAMS, "no such skill")
        return {"skill": skill.entry(), "ttlMs": 0, "cacheScope": "public"}

    server: Server[Any] = Server("skills-only")
    server.extensions[EXTENSION_ID] = {}
    server.add_request_handler("skills/list", SkillsListParams, list_skills)
    server.add_request_handler("skills/get", SkillsGetParams, get_skill)
    return server


def plain_server() -> Server[Any]:
    """An MCP server without the skills extension."""

    async def no_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    return Server("plain", on_list_resources=no_resources)
