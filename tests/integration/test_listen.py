"""A local port served (edge/_listen.py): the connections accepted on it."""

from __future__ import annotations

import asyncio
import functools
import socket
from typing import Any

import anyio
import anyio.abc
import pytest

from skillward.edge._listen import listen, serve_asgi

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the event loop uvicorn serves on


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
async def test_a_connection_accepted_on_the_port_sends_small_writes_at_once(host: str) -> None:
    """TCP_NODELAY on every accepted connection: without it, a response written in two
    parts (headers, then body) waits for the client's delayed ACK, 40 ms a request."""
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        sock = listen(host, 0)
    except Exception as error:  # pragma: no cover - a machine without that loopback
        pytest.skip(f"cannot listen on {host}: {error}")
    accepted: list[socket.socket] = []
    got = anyio.Event()

    class Protocol(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.append(transport.get_extra_info("socket"))
            got.set()

    loop = asyncio.get_running_loop()
    server = await loop.create_server(Protocol, sock=sock)
    try:
        port = sock.getsockname()[1]
        with anyio.fail_after(10):
            async with await anyio.connect_tcp(host, port):
                await got.wait()
        (peer,) = accepted
        assert peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        server.close()
        await server.wait_closed()


async def hello(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/slow":
        await anyio.sleep(1.0)  # longer than the connection had to send its request
    if scope["path"] == "/read":
        while (await receive()).get("more_body"):
            pass  # the whole body, as an MCP endpoint reads it
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


@pytest.mark.threat("T66")
async def test_a_connection_that_never_sends_a_whole_request_is_closed() -> None:
    # Held open, each would keep a file descriptor until the server had none left.
    sock = listen("127.0.0.1", 0)
    async with anyio.create_task_group() as group:
        serve = functools.partial(serve_asgi, hello, sock, host="127.0.0.1", lifespan=False)
        url = await group.start(functools.partial(serve, request_seconds=0.3))
        port = int(url.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as partial:
                await partial.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await partial.receive()  # nothing comes, then the end
            async with await anyio.connect_tcp("127.0.0.1", port) as whole:
                await whole.send(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                answer = b""
                while b"hello" not in answer:
                    answer += await whole.receive()
        assert answer.startswith(b"HTTP/1.1 200")  # a request in progress is never cut
        group.cancel_scope.cancel()
    sock.close()


async def trickle(stream: anyio.abc.SocketStream) -> None:
    """A byte every tenth of a second, for as long as the server keeps the connection."""
    while True:
        with anyio.move_on_after(0.1):
            await stream.receive()
        await stream.send(b" ")


@pytest.mark.threat("T66")
async def test_a_body_sent_a_byte_at_a_time_is_cut_off_at_the_deadline() -> None:
    # Whole headers, then the body as slowly as it likes: 511 of them held every slot.
    sock = listen("127.0.0.1", 0)
    async with anyio.create_task_group() as group:
        serve = functools.partial(serve_asgi, hello, sock, host="127.0.0.1", lifespan=False)
        url = await group.start(functools.partial(serve, request_seconds=0.3))
        port = int(url.rsplit(":", 1)[1])
        with anyio.fail_after(10):
            async with await anyio.connect_tcp("127.0.0.1", port) as slow:
                head = b"POST /read HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 100000\r\n"
                await slow.send(head + b"\r\n{")
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await trickle(slow)
        group.cancel_scope.cancel()
    sock.close()
