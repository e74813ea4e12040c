"""The gateway's tools over HTTP: the real gateway behind ``serve_http``, two clients of
the ``mcp`` SDK at once in each protocol era, each with its own session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

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


# --- a request's era decides how its session is found -------------------------------------

MODERN = "2026-07-28"


def modern_call(tool: str, arguments: dict[str, str]) -> tuple[dict[str, str], str]:
    """A raw 2026-07-28 ``tools/call`` of ``tool`` with the token, reporting the same name
    and version as the legacy client ``one`` and declaring form elicitation: its headers
    and body."""
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    meta = {
        types.PROTOCOL_VERSION_META_KEY: MODERN,
        types.CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}},
        types.CLIENT_INFO_META_KEY: {"name": "one", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    return headers, json.dumps(body)


@asynccontextmanager
async def legacy_client(url: str, asker: Asker) -> AsyncIterator[tuple[Client, list[str]]]:
    """A 2025-11-25 SDK client named ``one`` with the token, and the session ids it was
    given."""
    given: list[str] = []

    async def note(response: httpx2.Response) -> None:
        if "mcp-session-id" in response.headers:
            given.append(response.headers["mcp-session-id"])

    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, event_hooks={"response": [note]}
        ) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="legacy",
            client_info=types.Implementation(name="one", version="1"),
            elicitation_callback=asker,
        ) as client,
    ):
        yield client, given


@pytest.mark.threat("T48")
@pytest.mark.threat("T54")
async def test_a_2026_request_naming_a_2025_clients_session_reaches_none_of_it(
    tmp_path: Path,
) -> None:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    served = serve(tmp_path / "acme", "acme")
    asker = Asker([choose("session")])
    arguments = {"ref": "deploy", "path": "notes.md"}
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], key=session_key) as gateway,
            over_http(gateway.server, token=TOKEN) as url,
            legacy_client(url, asker) as (one, given),
            httpx2.AsyncClient() as http,
        ):
            assert not (await one.call_tool("read_skill", {"ref": "deploy"})).is_error
            sid = given[-1]
            riders = []
            for tool, args in (("read_skill", {"ref": "deploy"}), ("read_skill_file", arguments)):
                headers, body = modern_call(tool, args)
                riders.append(
                    await http.post(url, headers={**headers, "Mcp-Session-Id": sid}, content=body)
                )
            held = len(gateway.sessions)
            # The same request without the header is served, in a session of its own.
            headers, body = modern_call("read_skill_file", arguments)
            own = await http.post(url, headers=headers, content=body)
            mine = await one.call_tool("read_skill_file", arguments)
    for rider in riders:
        assert rider.status_code == 404
        assert NOTES.decode() not in rider.text
        assert DEPLOY_BODY_LINE not in rider.text
        assert sid not in rider.text
    assert held == 1  # the riders opened no session
    assert len(asker.messages) == 1  # nobody was asked for them
    assert own.status_code == 200
    assert NOTES.decode() not in own.text
    assert "not loaded in this session" in own.text
    assert NOTES.decode() in text(mine)


@pytest.mark.threat("T54")
@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
async def test_an_unknown_session_id_is_404_in_either_era_and_opens_no_session(
    tmp_path: Path, era: str
) -> None:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    served = serve(tmp_path / "acme", "acme")
    headers, body = modern_call("list_skills", {})
    if era != MODERN:
        headers = {**headers, "MCP-Protocol-Version": era}
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec], key=session_key) as gateway,
            over_http(gateway.server, token=TOKEN) as url,
            httpx2.AsyncClient() as http,
        ):
            forged = await http.post(
                url, headers={**headers, "Mcp-Session-Id": "0" * 32}, content=body
            )
            held = len(gateway.sessions)
    assert forged.status_code == 404
    assert forged.json()["error"]["code"] == types.INVALID_REQUEST
    assert held == 0
