"""Every message a server sends is capped at the transport, before it is parsed.

Real servers over stdio and streamable HTTP (JSON bodies, and server-sent events) send
one message past the caps: 32 MiB, or a small message of many tiny JSON values. The
client refuses it with ResponseTooLarge naming the server, and what it cost is measured
as resident memory in a client process of its own.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from skillward.core.config import Limits
from skillward.core.errors import (
    InvalidResponse,
    ResponseTooLarge,
    ServerDisconnected,
    SizeMismatch,
    SkillwardError,
    TransportError,
)
from skillward.edge.client import SkillsClient
from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import SkillHost
from tests.support import listings
from tests.support.doubles import Approving
from tests.support.listings import REPO_ROOT
from tests.support.misbehaving import misbehaving_argv
from tests.support.servers import http_server, serve_argv
from tests.support.trees import skill_md, write

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T43")]

EMAIL = "skill://acme/billing/refunds/templates/email.md"


async def measure(shape: str, over: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "tests.support.listings", "measure", shape, over]
    done = await anyio.run_process(argv, cwd=REPO_ROOT)
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory via /proc")
@pytest.mark.parametrize("over", ["stdio", "http", "http-sse"])
@pytest.mark.parametrize(
    ("shape", "why"),
    [("beyond", "larger than 25165824 bytes"), ("wide", "more than 262144 JSON values")],
)
async def test_a_message_past_the_caps_is_refused_naming_the_server_for_little_memory(
    shape: str, why: str, over: str
) -> None:
    with anyio.fail_after(300):
        outcome = await measure(shape, over)
    assert outcome["error"] == "ResponseTooLarge", outcome
    assert outcome["server"] == "listings"
    assert why in outcome["message"]
    # The SDK's own transports held and parsed the whole message: 545 MB for ``beyond``.
    assert outcome["growth_mb"] < 100, outcome


@pytest.mark.threat("T11")
async def test_a_stdio_listing_page_is_held_to_its_cap_in_the_bytes_it_arrived_as() -> None:
    # Its text is under the cap in characters, past it in bytes: the transport measured
    # the message as it read it, and the listing's cap is in bytes.
    with anyio.fail_after(60):
        async with listings.spec("multibyte") as server, SkillsClient.connect(server) as client:
            with pytest.raises(ResponseTooLarge, match="result is larger than 2097152 bytes"):
                await client.list_skills()


async def test_a_stdio_server_sending_32_mib_is_refused_and_disconnected_with_the_reason() -> None:
    argv = misbehaving_argv("huge-read")
    transport = StdioTransport(
        command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT), stderr="discard"
    )
    async with SkillHost(approver=Approving()) as host:
        with anyio.fail_after(60):
            await host.connect(ServerSpec(label="s", transport=transport))
            await host.activate("s:refunds")
            # A listed file: more than the listing promised, whatever the cap.
            with pytest.raises(SizeMismatch) as info:
                await host.read_resource("s", EMAIL)
            assert info.value.server == "s"
            assert info.value.uri == EMAIL
            # The line could not be skipped without reading it: the connection ended.
            status = await host.wait_disconnected("s")
        assert isinstance(status.error, ResponseTooLarge)
        assert status.error.server == "s"
        assert "larger than 25165824 bytes" in status.error.message
        with pytest.raises(ServerDisconnected, match="larger than"):
            await host.refresh("s")


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["json-bodies", "server-sent-events"])
async def test_an_http_server_sending_32_mib_is_refused_and_stays_usable(mode: str) -> None:
    argv = [*misbehaving_argv("huge-read"), "--http", "127.0.0.1:0"]
    async with http_server(argv) as url, SkillHost(approver=Approving()) as host:
        spec = ServerSpec(label="h", transport=HttpTransport(url=url), mode=mode)
        with anyio.fail_after(60):
            await host.connect(spec)
            await host.activate("h:refunds")
            with pytest.raises(SizeMismatch) as info:
                await host.read_resource("h", EMAIL)
            assert info.value.server == "h"
            # Only that response was refused: the next request is answered.
            await host.refresh("h")
        assert [s.state for s in host.servers()] == ["connected"]


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["json-bodies", "server-sent-events"])
async def test_a_large_file_within_the_caps_is_read_whole_over_http(
    tmp_path: Path, mode: str
) -> None:
    # 6 MiB of binary: 8 MiB as base64 in one message, past the SDK's own 1 MiB cap on a
    # server-sent event, within skillward's.
    data = bytes(range(256)) * (24 * 1024)
    write(tmp_path, "big/SKILL.md", skill_md("big", "A large asset"))
    write(tmp_path, "big/assets/data.bin", data)
    async with (
        http_server(serve_argv(tmp_path, "--http", "127.0.0.1:0")) as url,
        SkillHost(approver=Approving()) as host,
    ):
        with anyio.fail_after(60):
            await host.connect(ServerSpec(label="h", transport=HttpTransport(url=url), mode=mode))
            await host.activate("h:big")
            block = await host.read_resource("h", "skill://big/assets/data.bin")
    assert block.verified
    assert block.size == len(data)


_Answer = Callable[[anyio.abc.SocketStream, dict[str, Any]], Awaitable[bool]]


@asynccontextmanager
async def raw_http_peer(
    answer: _Answer, *, on_get: Callable[[anyio.abc.SocketStream], Awaitable[None]] | None = None
) -> AsyncIterator[str]:
    """A streamable HTTP peer on 127.0.0.1 that completes the 2025-11-25 handshake and
    takes each notification; ``answer`` answers every other message with an id (True: it
    ended the connection). With ``on_get``, the handshake gives a session id (so the
    client opens its GET stream) and ``on_get`` answers each GET, then the connection
    ends."""
    capabilities: dict[str, Any] = {
        "resources": {},
        "extensions": {"io.modelcontextprotocol/skills": {}},
    }

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await exchange(stream)

    async def exchange(stream: anyio.abc.SocketStream) -> None:
        buffered = BufferedByteReceiveStream(stream)
        with contextlib.suppress(
            anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError
        ):
            while True:
                head = await buffered.receive_until(b"\r\n\r\n", 65536)
                if head.startswith(b"GET ") and on_get is not None:
                    await on_get(stream)
                    return
                if head.startswith(b"DELETE "):
                    await stream.send(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    continue
                fields = dict(
                    line.split(":", 1) for line in head.decode().split("\r\n")[1:] if ":" in line
                )
                length = int(
                    next((v for k, v in fields.items() if k.lower() == "content-length"), "0")
                )
                message = json.loads(await buffered.receive_exactly(length)) if length else {}
                if "id" not in message:
                    await stream.send(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    continue
                if message.get("method") == "initialize":
                    result = {
                        "protocolVersion": "2025-11-25",
                        "capabilities": capabilities,
                        "serverInfo": {"name": "raw-peer", "version": "1"},
                    }
                    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                    data = body.encode()
                    session = b"mcp-session-id: s1\r\n" if on_get is not None else b""
                    await stream.send(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n%s"
                        b"content-length: %d\r\n\r\n%s" % (session, len(data), data)
                    )
                    continue
                if await answer(stream, message):
                    return

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield f"http://127.0.0.1:{port}/mcp"
        group.cancel_scope.cancel()


async def _cut_short(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
    """A body cut short (its Content-Length promises more), and the connection closed."""
    cut = json.dumps({"jsonrpc": "2.0", "id": message["id"]}).encode()[:-1]
    await stream.send(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(cut) + 100, cut)
    )
    await stream.aclose()
    return True


def _event(message: dict[str, Any]) -> bytes:
    return f"event: message\ndata: {json.dumps(message)}\n\n".encode()


async def _flood(stream: anyio.abc.SocketStream, message: dict[str, Any], *, mode: str) -> bool:
    """A request answered with an event stream of the server's own requests and never
    the answer; an answer the client posts is taken and never responded to, so none of
    them is ever delivered. ``mode`` as tests.support.request_flood's."""
    if "method" not in message:
        await anyio.sleep_forever()
    await stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
    if mode == "cancel-late":
        for start in range(0, 200_000, 32):
            ids = [f"p{n}" for n in range(start, start + 32)]
            await stream.send(
                b"".join(_event({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in ids)
            )
            await anyio.sleep(0.005)  # the client answers them meanwhile
            cancels = [{"requestId": i} for i in ids]
            method = "notifications/cancelled"
            await stream.send(
                b"".join(_event({"jsonrpc": "2.0", "method": method, "params": c}) for c in cancels)
            )
    params = {"messages": [], "maxTokens": 1}
    for n in range(20_000):
        ident = "s" if mode == "same-id" else f"s{n}"
        request = {"jsonrpc": "2.0", "id": ident, "method": "sampling/createMessage"}
        await stream.send(_event({**request, "params": params}))
    await anyio.sleep_forever()
    return True


@pytest.mark.threat("T34")
async def test_an_http_server_that_breaks_off_its_answer_is_a_typed_error_naming_it() -> None:
    async with raw_http_peer(_cut_short) as url:
        spec = ServerSpec(label="cut", transport=HttpTransport(url=url), mode="legacy")
        with anyio.fail_after(60), pytest.raises(SkillwardError) as failed:
            async with SkillsClient.connect(spec) as client:
                await client.list_skills()
    assert failed.value.server == "cut"
    assert isinstance(failed.value, TransportError | ServerDisconnected), failed.value


_FLOODS = {"each its own id": "", "one id for all": "same-id", "cancelled late": "cancel-late"}


@pytest.mark.threat("T11")
@pytest.mark.parametrize("ids", list(_FLOODS))
async def test_a_server_flooding_requests_it_never_reads_the_answers_of_is_ended(
    ids: str,
) -> None:
    # Each request the client has not answered is a task in the SDK: without a bound,
    # 150,000 of them held 2 GB before any deadline. The SDK starts a task for each
    # request whatever its id, so one id used again and again is no way around it; nor
    # is a cancel sent once the answer is being written (the SDK ignores it, and the
    # answer waits to be written all the same).
    mode = _FLOODS[ids]
    argv = [sys.executable, "-m", "tests.support.request_flood", "200000"]
    argv += [mode] if mode else []
    transport = StdioTransport(
        command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT), stderr="discard"
    )
    spec = ServerSpec(label="flood", transport=transport, mode="legacy")
    limits = Limits(operation_timeout=20, request_timeout=20)
    with anyio.fail_after(60), pytest.raises(SkillwardError) as ended:
        async with SkillsClient.connect(spec, limits=limits) as client:
            await client.list_skills()
    assert ended.value.server == "flood"
    expected = "reused the id" if mode == "same-id" else "requests the client has not answered"
    assert expected in ended.value.message


@pytest.mark.threat("T11")
@pytest.mark.parametrize("ids", list(_FLOODS))
async def test_an_http_server_flooding_requests_whose_answers_it_never_takes_is_ended(
    ids: str,
) -> None:
    # Over HTTP each answer is a POST of its own, sent one after another: a server that
    # never responds to the first has every later request wait in a task of the SDK's.
    mode = _FLOODS[ids]
    async with raw_http_peer(functools.partial(_flood, mode=mode)) as url:
        spec = ServerSpec(label="flood", transport=HttpTransport(url=url), mode="legacy")
        limits = Limits(operation_timeout=20, request_timeout=20)
        with anyio.fail_after(60), pytest.raises(SkillwardError) as ended:
            async with SkillsClient.connect(spec, limits=limits) as client:
                await client.list_skills()
    assert ended.value.server == "flood"
    assert isinstance(ended.value, InvalidResponse), ended.value
    expected = "reused the id" if mode == "same-id" else "requests the client has not answered"
    assert expected in ended.value.message


@pytest.mark.threat("T11")
async def test_an_event_stream_ended_at_once_is_opened_again_once_a_second_at_most() -> None:
    # retry: 0, and the stream ends: the SDK opens it again after the delay the server
    # set, each time, and an idle client made tens of thousands of requests a minute.
    opened: list[float] = []
    three = anyio.Event()

    async def get(stream: anyio.abc.SocketStream) -> None:
        opened.append(anyio.current_time())
        if len(opened) == 3:
            three.set()
        await stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"content-length: 11\r\n\r\nretry: 0\n\n\n"
        )

    async def nothing(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        await anyio.sleep_forever()
        return True

    async with raw_http_peer(nothing, on_get=get) as url:
        spec = ServerSpec(label="eager", transport=HttpTransport(url=url), mode="legacy")
        with anyio.fail_after(60):
            async with SkillsClient.connect(spec):
                await three.wait()
    gaps = [later - earlier for earlier, later in itertools.pairwise(opened)]
    assert min(gaps) >= 0.9, gaps
