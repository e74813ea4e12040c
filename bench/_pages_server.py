"""A minimal mcp server answering skills/list from precomputed pages: the baseline for
``skillward serve``'s listing in bench_list_stdio.py.

Run: python bench/_pages_server.py PAGES.json   (a JSON list of skills/list results)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from skillward._methods import SkillsListParams
from skillward.wire import EXTENSION_ID


def build(pages: list[dict[str, Any]]) -> Server[Any]:
    async def list_skills(ctx: Any, params: SkillsListParams) -> dict[str, Any]:
        return pages[int(params.cursor or 0)]

    async def no_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    server: Server[Any] = Server("pages", on_list_resources=no_resources)
    server.extensions[EXTENSION_ID] = {"directoryRead": False}
    server.add_request_handler("skills/list", SkillsListParams, list_skills)
    return server


async def serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, build(json.loads(Path(sys.argv[1]).read_text())))
