"""A local port served (edge/_listen.py): the connections accepted on it."""

from __future__ import annotations

import asyncio
import socket

import anyio
import pytest

from skillward.edge._listen import listen

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
