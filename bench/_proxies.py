"""The proxies bench_gateway.py puts beside the gateway, each served over stdio in a
process of its own, in front of the upstream command that follows ``--``:

* ``sdk``: the bare double hop, a minimal pass-through on the same ``mcp`` SDK: one tool,
  ``read`` (``{"uri"}``), whose call is one ``resources/read`` on the upstream, its text
  returned as is (no checks at all);
* ``fastmcp``: FastMCP's ``create_proxy`` over the upstream (a plain proxy that checks
  nothing; bench-only dependency): the client reads the resource through it.

Run: python bench/_proxies.py sdk|fastmcp -- UPSTREAM_COMMAND...
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def sdk(upstream: list[str]) -> None:
    async def main() -> None:
        params = StdioServerParameters(command=upstream[0], args=upstream[1:])
        async with Client(params, cache=None) as client:

            async def list_tools(
                ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
            ) -> types.ListToolsResult:
                schema = {"type": "object", "properties": {"uri": {"type": "string"}}}
                return types.ListToolsResult(tools=[types.Tool(name="read", input_schema=schema)])

            async def call_tool(
                ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
            ) -> types.CallToolResult:
                uri = (params.arguments or {})["uri"]
                read = await client.read_resource(uri, cache_mode="bypass")
                item = read.contents[0]
                text = item.text if isinstance(item, types.TextResourceContents) else item.blob
                return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

            server = Server("sdk-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
            async with stdio_server() as (read_stream, write_stream):
                options = server.create_initialization_options()
                await server.run(read_stream, write_stream, options)

    anyio.run(main)


def fastmcp(upstream: list[str]) -> None:
    proxy = create_proxy(StdioTransport(command=upstream[0], args=upstream[1:]), name="fastmcp")
    proxy.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    kind, separator, *command = sys.argv[1:]
    assert separator == "--", __doc__
    assert command, __doc__
    {"sdk": sdk, "fastmcp": fastmcp}[kind](command)
