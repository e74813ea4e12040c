"""The gateway's tools over HTTP: the real gateway behind ``serve_http``, two clients of
the ``mcp`` SDK at once in each protocol era, each with its own session."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client, MCPError

from skillward.gateway.server import session_key
from tests.support.gated import DEPLOY_BODY_LINE, NOTES, build_gated_tree, serve
from tests.support.gateway import (
    MODES,
    Asker,
    choose,
    gateway_over,
    over_http,
    sdk_over_http,
    text,
)

pytestmark = pytest.mark.anyio

TOKEN = "gateway-test-token-4f8a1c9e2b7d"
WAIT = 60


def http_client(
    url: str, mode: str, asker: Asker | None, name: str
) -> AbstractAsyncContextManager[Client]:
    return sdk_over_http(url, mode=mode, token=TOKEN, name=name, asker=asker)


@pytest.mark.threat("T48")
@pytest.mark.parametrize("mode", MODES)
async def test_two_http_clients_have_sessions_of_their_own(tmp_path: Path, mode: str) -> None:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    served = serve(tmp_path / "acme", "acme")
    first, second = Asker([choose("session")]), Asker([("decline", None)])
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], key=session_key) as gateway,
            over_http(gateway.server, token=TOKEN) as url,
            http_client(url, mode, first, "one") as one,
            http_client(url, mode, second, "two") as two,
        ):
            loaded = await one.call_tool("read_skill", {"ref": "deploy"})
            again = await one.call_tool("read_skill", {"ref": "deploy"})
            notes = await one.call_tool("read_skill_file", {"ref": "deploy", "path": "notes.md"})
            stolen = await two.call_tool("read_skill_file", {"ref": "deploy", "path": "notes.md"})
            theirs = await two.call_tool("read_skill", {"ref": "deploy"})
    assert DEPLOY_BODY_LINE in text(loaded)
    assert not again.is_error
    assert len(first.messages) == 1
    assert NOTES.decode() in text(notes)
    assert stolen.is_error
    assert NOTES.decode() not in text(stolen)
    assert theirs.is_error
    assert len(second.messages) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_fastmcps_client_over_http_is_asked_and_served_with_the_token(
    tmp_path: Path, mode: str
) -> None:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    served = serve(tmp_path / "acme", "acme")
    asked: list[str] = []

    async def on_elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return ElicitResult(action="accept", content={"decision": "once"})

    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], key=session_key) as gateway,
            over_http(gateway.server, token=TOKEN) as url,
        ):
            transport = StreamableHttpTransport(url, auth=TOKEN)
            async with FastMCPClient(
                transport, elicitation_handler=on_elicit, mode=mode, timeout=30
            ) as client:
                result = await client.call_tool("read_skill", {"ref": "deploy"})
            refused = StreamableHttpTransport(url, auth="not-the-token-at-all-0000")
            with pytest.raises(MCPError):  # its 401 reaches FastMCP as an error response
                async with FastMCPClient(refused, mode=mode, timeout=30) as stranger:
                    await stranger.list_tools()
    assert len(asked) == 1
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    assert DEPLOY_BODY_LINE in item.text
