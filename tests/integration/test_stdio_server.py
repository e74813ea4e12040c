"""skillward's own stdio serving (edge/_stdioserver.py), as ``skillward serve`` and
``skillward gateway`` use it: driven by the ``mcp`` SDK's client and FastMCP's, in both
protocol eras, with each line the client writes held to the message caps."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport as FastMCPStdio
from mcp import Client, StdioServerParameters

from tests.support.gateway import MODES
from tests.support.stdio_echo_server import argv

pytestmark = pytest.mark.anyio

WAIT = 60
#: More than a pipe holds at once (64 KiB on Linux): the write waits for the reader.
BIG = 1024 * 1024


def params(*options: str) -> StdioServerParameters:
    command, *args = argv(*options)
    return StdioServerParameters(command=command, args=args)


def text_of(result: Any) -> str:
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    return item.text


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_is_served_a_response_larger_than_the_pipe(mode: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(params(), mode=mode) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            first = await client.call_tool("big", {"size": BIG})
            second = await client.call_tool("big", {"size": 3})
    assert tools == ["big", "stray"]
    assert text_of(first) == "x" * BIG
    assert text_of(second) == "xxx"


@pytest.mark.parametrize("mode", MODES)
async def test_fastmcps_client_is_served_over_skillwards_stdio(mode: str) -> None:
    command, *args = argv()
    transport = FastMCPStdio(command, args, keep_alive=False)
    with anyio.fail_after(WAIT):
        async with FastMCPClient(transport, mode=mode, timeout=30) as client:
            tools = [tool.name for tool in await client.list_tools()]
            result = await client.call_tool("big", {"size": BIG})
    assert tools == ["big", "stray"]
    assert text_of(result) == "x" * BIG


async def test_what_the_process_prints_misses_the_wire() -> None:
    """fd 1 writes to stderr while serving: a print, a raw write and a child's output
    never reach the client as protocol."""
    with anyio.fail_after(WAIT):
        async with Client(params()) as client:
            result = await client.call_tool("stray", {})
            after = await client.call_tool("big", {"size": 5})
    assert text_of(result) == "ok"
    assert text_of(after) == "xxxxx"


def _request(number: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


INITIALIZE = _request(
    1,
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
)
INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


@pytest.mark.threat("T43")
async def test_a_client_line_past_the_node_cap_ends_the_connection_before_it_is_parsed() -> None:
    """A small line of many JSON values costs far more parsed: refused on its count, the
    connection ends (the process exits) and stderr says why."""
    flood = _request(2, "tools/call", {"name": "big", "arguments": {"size": 1, "pad": [0] * 500}})
    process = await anyio.open_process(argv("--max-nodes", "100"))
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        with anyio.fail_after(WAIT):
            await process.stdin.send(INITIALIZE)
            answered = await process.stdout.receive()
            await process.stdin.send(INITIALIZED + flood)
            rest = b""
            async for chunk in process.stdout:  # ends when the process closes it
                rest += chunk
            await process.wait()
            said = b"".join([chunk async for chunk in process.stderr])
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
    assert b'"id":1' in answered
    assert b'"id":2' not in rest  # never served
    assert b"past the message caps" in said


async def test_a_line_under_the_node_cap_is_served() -> None:
    call = _request(2, "tools/call", {"name": "big", "arguments": {"size": 2, "pad": [0] * 20}})
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            argv("--max-nodes", "100"), input=INITIALIZE + INITIALIZED + call
        )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "xx"


async def test_stdin_and_stdout_that_are_files_are_served(tmp_path: Path) -> None:
    """Not a pipe (``< requests > answers``): read and written in a worker thread."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(INITIALIZE + INITIALIZED + _request(2, "tools/list", {}))
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout, anyio.fail_after(WAIT):
        await anyio.run_process(argv(), stdin=stdin, stdout=stdout)
    lines = [json.loads(line) for line in answers.read_bytes().splitlines()]
    assert [line["id"] for line in lines] == [1, 2]
    assert [tool["name"] for tool in lines[1]["result"]["tools"]] == ["big", "stray"]


async def test_a_server_whose_stdin_is_the_null_device_ends_at_once() -> None:
    """What the event loop cannot watch (the null device, a terminal) is read in a worker
    thread: the end of input is seen, and the server exits."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(argv(), stdin=subprocess.DEVNULL)
    assert done.stdout == b""
