"""An MCP server served over stdio by skillward's own stdio serving
(``edge/_stdioserver.py``), with tools that exercise it.

* ``big`` ``{"size"}``: a text of ``size`` bytes (more than a pipe holds at once);
* ``stray``: writes to stdout around the protocol (``print``, a raw write to fd 1, and a
  child process that inherits fd 1), then answers ``ok``.

Run as ``python stdio_echo_server.py [--max-nodes N]``: each line the client writes is
held to ``Limits(max_message_nodes=N)``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from skillward.core.config import Limits
from skillward.edge._stdioserver import serve_stdio

SCRIPT = Path(__file__).resolve()


def argv(*options: str) -> list[str]:
    return [sys.executable, str(SCRIPT), *options]


def server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="big", input_schema=schema),
                types.Tool(name="stray", input_schema=schema),
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "big":
            text = "x" * int(arguments["size"])
        else:
            print("stray print", flush=True)
            os.write(1, b"stray write\n")
            await anyio.run_process([sys.executable, "-c", "print('stray child')"], stdout=None)
            text = "ok"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("stdio-echo", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-nodes", type=int, default=Limits().max_message_nodes)
    args = parser.parse_args()
    anyio.run(serve_stdio, server(), Limits(max_message_nodes=args.max_nodes))


if __name__ == "__main__":
    main()
