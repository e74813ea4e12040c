"""The gateway over HTTP: a real MCP server on 127.0.0.1 behind the token, Origin, Host
and body checks, reached by the SDK's client and by raw requests."""

from __future__ import annotations

import json
import logging
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from skillward.core.config import Limits
from skillward.core.errors import UsageError
from skillward.gateway._http import serve_http
from tests.support.gateway import INITIALIZE, over_http, sdk_over_http

pytestmark = pytest.mark.anyio

TOKEN = "gw-token-7Hq2rN9xKp4LmW8sVt3Yz"
BODY_CAP = 64 * 1024
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tiny_server() -> Server[Any]:
    """One tool, ``whoami``: the client name the answering session was opened with."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="whoami", input_schema={"type": "object"})]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        params_seen = ctx.session.client_params
        name = params_seen.client_info.name if params_seen is not None else "?"
        return types.CallToolResult(content=[types.TextContent(type="text", text=name)])

    return Server("tiny", on_list_tools=list_tools, on_call_tool=call_tool)


def gateway(*, token: str = TOKEN) -> AbstractAsyncContextManager[str]:
    """The tiny server behind ``serve_http`` on a free port; yields its URL."""
    return over_http(tiny_server(), token=token, limits=Limits(max_gateway_request_bytes=BODY_CAP))


def sdk_client(
    url: str, *, mode: str, token: str = TOKEN, name: str = "sdk"
) -> AbstractAsyncContextManager[Client]:
    return sdk_over_http(url, mode=mode, token=token, name=name)


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])


async def post(url: str, headers: dict[str, str], body: object = INITIALIZE) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(url, headers={**MCP_HEADERS, **headers}, content=json.dumps(body))


LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


async def open_session(url: str) -> str:
    """A legacy session opened with the token; its ID."""
    opened = await post(url, {"Authorization": f"Bearer {TOKEN}"})
    assert opened.status_code == 200
    return opened.headers["mcp-session-id"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_with_the_token_lists_and_calls_the_tool(mode: str) -> None:
    with anyio.fail_after(60):
        async with gateway() as url, sdk_client(url, mode=mode) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["whoami"]
            assert await whoami(client) == "sdk"


@pytest.mark.threat("T54")
async def test_two_clients_at_once_each_keep_a_session_of_their_own() -> None:
    with anyio.fail_after(60):
        async with (
            gateway() as url,
            sdk_client(url, mode="legacy", name="first") as first,
            sdk_client(url, mode="legacy", name="second") as second,
        ):
            answers: dict[str, list[str]] = {"first": [], "second": []}

            async def ask(name: str, client: Client) -> None:
                for _ in range(3):
                    answers[name].append(await whoami(client))

            async with anyio.create_task_group() as group:
                group.start_soon(ask, "first", first)
                group.start_soon(ask, "second", second)
            assert answers == {"first": ["first"] * 3, "second": ["second"] * 3}


@pytest.mark.threat("T54")
async def test_a_session_id_without_the_token_is_refused() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            session = await open_session(url)
            stolen = await post(url, {"Mcp-Session-Id": session}, LIST_TOOLS)
            assert stolen.status_code == 401
            assert session not in stolen.text


@pytest.mark.threat("T54")
async def test_an_unknown_session_id_opens_nobody_elses_session() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            await open_session(url)
            forged = "0" * 32
            answer = await post(
                url, {"Authorization": f"Bearer {TOKEN}", "Mcp-Session-Id": forged}, LIST_TOOLS
            )
            assert answer.status_code == 404


@pytest.mark.threat("T51")
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-entirely-000000000",
        f"Bearer {TOKEN[:-1]}{'a' if TOKEN[-1] != 'a' else 'b'}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        TOKEN,
    ],
    ids=["none", "wrong", "one-char-off", "longer", "shorter", "basic", "no-scheme"],
)
async def test_a_request_without_the_right_token_is_refused_401(authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    with anyio.fail_after(60):
        async with gateway() as url:
            answer = await post(url, headers)
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert TOKEN not in answer.text
            assert "wrong-token" not in answer.text


@pytest.mark.threat("T51")
async def test_an_sdk_client_with_a_wrong_token_gets_only_401s() -> None:
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    with anyio.fail_after(60):
        async with (
            gateway() as url,
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {TOKEN}x"}, event_hooks={"response": [record]}
            ) as http,
        ):
            # The SDK turns the refused handshake into its own error, in a task group.
            with pytest.raises(BaseExceptionGroup) as caught:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy"):
                    pass
            assert caught.group_contains(MCPError)
    assert statuses
    assert set(statuses) == {401}


@pytest.mark.threat("T52")
@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example:8080",
        "http://localhost:80@evil.example",
        "file://",
    ],
)
async def test_a_web_page_elsewhere_is_refused_403_even_with_the_token(origin: str) -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            answer = await post(url, {"Authorization": f"Bearer {TOKEN}", "Origin": origin})
            assert answer.status_code == 403
            assert "evil" not in answer.text


@pytest.mark.threat("T52")
async def test_a_loopback_origin_with_the_token_is_served() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            origin = f"http://127.0.0.1:{port_of(url)}"
            answer = await post(url, {"Authorization": f"Bearer {TOKEN}", "Origin": origin})
            assert answer.status_code == 200


@pytest.mark.threat("T52")
async def test_a_forged_host_is_refused_even_with_the_token() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            answer = await post(url, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})
            assert answer.status_code == 421
            assert "evil" not in answer.text


async def raw_exchange(url: str, head: bytes, body_chunks: list[bytes]) -> bytes:
    """Send ``head`` and ``body_chunks`` on a socket, never ending the body; the answer."""
    async with await anyio.connect_tcp("127.0.0.1", port_of(url)) as stream:
        await stream.send(head)
        for chunk in body_chunks:
            await stream.send(chunk)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += await stream.receive()
        return answer


def request_head(url: str, *extra: str) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port_of(url)}",
        f"Authorization: Bearer {TOKEN}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.threat("T53")
async def test_a_body_declared_over_the_cap_is_refused_before_any_of_it_is_sent() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            head = request_head(url, f"Content-Length: {10 * 1024**3}")
            answer = await raw_exchange(url, head, [])
            assert answer.startswith(b"HTTP/1.1 413 ")


@pytest.mark.threat("T53")
async def test_a_chunked_body_over_the_cap_is_refused_while_it_arrives() -> None:
    # The body is never finished: the answer can only come from bytes counted as they
    # arrived, and the server holds at most the cap and one chunk.
    chunk = b"x" * 16 * 1024
    chunks = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (BODY_CAP // len(chunk) + 1)
    with anyio.fail_after(60):
        async with gateway() as url:
            answer = await raw_exchange(
                url, request_head(url, "Transfer-Encoding: chunked"), chunks
            )
            assert answer.startswith(b"HTTP/1.1 413 ")


@pytest.mark.threat("T53")
async def test_a_body_within_the_cap_is_served() -> None:
    padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "_meta": {"pad": "x" * 60_000}}}
    with anyio.fail_after(60):
        async with gateway() as url:
            answer = await post(url, {"Authorization": f"Bearer {TOKEN}"}, padded)
            assert answer.status_code == 200


@pytest.mark.threat("T51")
async def test_the_token_appears_in_no_output_or_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(60):
        async with gateway() as url:
            async with sdk_client(url, mode="legacy") as client:
                await whoami(client)
            async with sdk_client(url, mode="auto") as client:
                await whoami(client)
            await post(url, {"Authorization": f"Bearer {TOKEN}x"})
            await post(url, {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"})
            await post(url, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})
    out, err = capfd.readouterr()
    assert "gateway refused" in caplog.text  # the refusals were logged, and seen here
    for text in (caplog.text, out, err):
        assert TOKEN not in text


async def test_a_non_loopback_address_is_refused_before_listening() -> None:
    with anyio.fail_after(10), pytest.raises(UsageError, match="loopback only"):
        await serve_http(tiny_server(), host="0.0.0.0", port=0, token=TOKEN)


async def test_a_port_in_use_is_a_usage_error() -> None:
    with anyio.fail_after(60):
        async with gateway() as url:
            with pytest.raises(UsageError, match="cannot listen"):
                await serve_http(tiny_server(), host="127.0.0.1", port=port_of(url), token=TOKEN)


async def test_cancelled_with_a_stream_open_it_stops_and_frees_the_port() -> None:
    urls: list[str] = []
    ready, stopped = anyio.Event(), anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async def serve(scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await serve_http(
                    tiny_server(), host="127.0.0.1", port=0, token=TOKEN, on_ready=on_ready
                )
        finally:
            stopped.set()

    scope = anyio.CancelScope()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group, httpx2.AsyncClient() as http:
            group.start_soon(serve, scope)
            await ready.wait()
            auth = {"Authorization": f"Bearer {TOKEN}"}
            session = {**auth, "Mcp-Session-Id": await open_session(urls[0])}
            # The session's standing stream stays open until the gateway stops.
            listen = {
                **session,
                "Accept": "text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            }
            async with http.stream("GET", urls[0], headers=listen) as stream:
                assert stream.status_code == 200
                scope.cancel()
                await stopped.wait()
            with pytest.raises(OSError, match="connection attempts failed"):
                await anyio.connect_tcp("127.0.0.1", port_of(urls[0]))
