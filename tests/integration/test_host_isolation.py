"""One server's failure stays with that server, and every wait has one deadline.

Two real servers at once: ``s`` over stdio and ``h`` over streamable HTTP, each a
subprocess. One is killed, stopped, or made to drop its connection mid-read; the
other keeps working, the caller's task is never cancelled, and leaving the host
never raises.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import Process

from skillward.cache._disk import DiskCache
from skillward.core.config import Limits
from skillward.core.errors import (
    DeadlineExceeded,
    ListingRunaway,
    ServerDisconnected,
    TransportError,
)
from skillward.edge.servers import HttpTransport, ServerSpec
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.doubles import Approving
from tests.support.misbehaving import misbehaving_argv
from tests.support.servers import http_server, http_server_process, stdio_spec

pytestmark = pytest.mark.anyio
EMAIL = "skill://acme/billing/refunds/templates/email.md"
FORMS = "skill://pdf-processing/references/FORMS.md"


@dataclass
class Pair:
    host: SkillHost
    stdio_pid: Path
    http_pid: Path
    http: Process


@asynccontextmanager
async def pair(tmp_path: Path, *, stdio: str = "ok", http: str = "ok") -> AsyncIterator[Pair]:
    """A host with ``s`` (stdio) and ``h`` (HTTP) connected, each in the given mode."""
    stdio_pid, http_pid = tmp_path / "s.pid", tmp_path / "h.pid"
    http_argv = [*misbehaving_argv(http, "--pid", str(http_pid)), "--http", "127.0.0.1:0"]
    async with (
        http_server_process(http_argv) as (url, process),
        SkillHost(approver=Approving()) as host,
    ):
        with anyio.fail_after(60):
            await host.connect(stdio_spec("s", misbehaving_argv(stdio, "--pid", str(stdio_pid))))
            await host.connect(ServerSpec(label="h", transport=HttpTransport(url=url)))
        yield Pair(host, stdio_pid, http_pid, process)


def kill(pid_file: Path, sig: int = signal.SIGKILL) -> None:
    os.kill(int(pid_file.read_text()), sig)


async def assert_healthy(host: SkillHost, label: str) -> None:
    """The server still loads and reads, and the caller's task is not cancelled."""
    await anyio.lowlevel.checkpoint()
    with anyio.fail_after(30):
        text = await host.read_skill_tool(f"{label}:refunds")
        assert "<skillward:skill " in text, text
        block = await host.read_resource(label, EMAIL)
    assert block.kind == "file"
    assert block.verified


@pytest.mark.threat("T34")
async def test_a_killed_stdio_server_leaves_the_http_server_working(tmp_path: Path) -> None:
    async with pair(tmp_path) as p:
        kill(p.stdio_pid)
        with anyio.fail_after(30):
            text = await p.host.read_skill_tool("s:refunds")
            status = await p.host.wait_disconnected("s")
        assert 'error="ServerDisconnected"' in text
        assert 'server="s"' in text
        assert status.state == "disconnected"
        assert isinstance(status.error, TransportError)
        await assert_healthy(p.host, "h")
        [s, h] = p.host.servers()
        assert (s.label, s.state, h.label, h.state) == ("s", "disconnected", "h", "connected")


@pytest.mark.threat("T34")
async def test_a_stopped_http_server_leaves_the_stdio_server_working(tmp_path: Path) -> None:
    async with pair(tmp_path) as p:
        p.http.terminate()
        with anyio.fail_after(30):
            await p.http.wait()
            text = await p.host.read_skill_tool("h:refunds")
        assert "<skillward:error " in text
        assert 'server="h"' in text
        await assert_healthy(p.host, "s")
        with anyio.fail_after(30):
            with pytest.raises(TransportError):
                await p.host.refresh("h")
            await assert_healthy(p.host, "s")


@pytest.mark.threat("T34")
async def test_an_http_connection_dropped_mid_read_leaves_the_stdio_server_working(
    tmp_path: Path,
) -> None:
    async with pair(tmp_path, http="die-on-read") as p:
        with anyio.fail_after(30):
            text = await p.host.read_skill_tool("h:refunds")
        assert "<skillward:error " in text
        assert "<skillward:skill " not in text
        await assert_healthy(p.host, "s")


@pytest.mark.threat("T34")
async def test_a_stdio_server_dying_mid_read_leaves_the_http_server_working(
    tmp_path: Path,
) -> None:
    async with pair(tmp_path, stdio="die-on-read") as p:
        with anyio.fail_after(30):
            text = await p.host.read_skill_tool("s:refunds")
            status = await p.host.wait_disconnected("s")
        assert "<skillward:error " in text
        assert isinstance(status.error, TransportError)
        await assert_healthy(p.host, "h")


async def test_tool_calls_against_a_dead_server_return_error_blocks(tmp_path: Path) -> None:
    async with pair(tmp_path) as p:
        with anyio.fail_after(30):
            await p.host.activate("s:refunds")
        kill(p.stdio_pid)
        with anyio.fail_after(30):
            text = await p.host.read_resource_tool("s", EMAIL)
            await p.host.wait_disconnected("s")
        assert 'error="ServerDisconnected"' in text
        with pytest.raises(ServerDisconnected, match="disconnected"):
            await p.host.read_resource("s", EMAIL)


async def test_reconnect_brings_a_dead_server_back(tmp_path: Path) -> None:
    async with pair(tmp_path) as p:
        kill(p.stdio_pid)
        with anyio.fail_after(30):
            await p.host.read_skill_tool("s:refunds")
            await p.host.wait_disconnected("s")
            await p.host.reconnect("s")
        assert [s.state for s in p.host.servers()] == ["connected", "connected"]
        await assert_healthy(p.host, "s")


@pytest.mark.threat("T34")
async def test_leaving_the_host_after_both_servers_died_does_not_raise(tmp_path: Path) -> None:
    async with pair(tmp_path) as p:
        kill(p.stdio_pid)
        kill(p.http_pid)
        with anyio.fail_after(30):
            await p.host.read_skill_tool("s:refunds")
            await p.host.read_skill_tool("h:refunds")
    await anyio.lowlevel.checkpoint()


# --- one deadline per operation, the handshake included --------------------------------------

# Deadlines short enough to show they hold, long enough for a Python server to start.
QUICK = HostConfig(limits=Limits(request_timeout=4, operation_timeout=6, max_list_pages=20))


@pytest.mark.threat("T11")
@pytest.mark.threat("T34")
async def test_a_silent_stdio_server_fails_the_handshake_at_the_deadline() -> None:
    async with SkillHost(config=QUICK) as host:
        # The SDK's own discovery probe waits 10 s; the operation deadline is 6 s.
        with anyio.fail_after(20), pytest.raises(DeadlineExceeded, match="handshake"):
            await host.connect(stdio_spec("quiet", misbehaving_argv("silent")))
        assert host.servers() == []


@pytest.mark.threat("T11")
async def test_a_silent_http_server_fails_the_handshake_at_the_deadline() -> None:
    argv = [*misbehaving_argv("silent"), "--http", "127.0.0.1:0"]
    async with http_server(argv) as url, SkillHost(config=QUICK) as host:
        spec = ServerSpec(label="quiet", transport=HttpTransport(url=url))
        with anyio.fail_after(20), pytest.raises(DeadlineExceeded, match="handshake"):
            await host.connect(spec)


@pytest.mark.threat("T11")
@pytest.mark.parametrize(
    ("mode", "error"),
    [("stall-list", DeadlineExceeded), ("endless", ListingRunaway), ("nested", DeadlineExceeded)],
)
async def test_a_failing_listing_over_stdio_surfaces_its_real_cause(
    mode: str, error: type[Exception]
) -> None:
    async with SkillHost(config=QUICK) as host:
        with anyio.fail_after(20), pytest.raises(error) as info:
            await host.connect(stdio_spec("bad", misbehaving_argv(mode)))
        assert getattr(info.value, "server", None) == "bad"
        # The label is free again: nothing of the failed server stays behind.
        assert [o.label for o in host.registry.origins()] == []


@pytest.mark.threat("T11")
async def test_a_stalled_read_ends_at_the_deadline_and_the_server_stays_usable(
    tmp_path: Path,
) -> None:
    async with SkillHost(config=QUICK, approver=Approving()) as host:
        with anyio.fail_after(20):
            await host.connect(stdio_spec("slow", misbehaving_argv("stall-read")))
        with anyio.fail_after(20):
            text = await host.read_skill_tool("refunds")
        assert 'error="DeadlineExceeded"' in text
        assert [s.state for s in host.servers()] == ["connected"]


async def test_a_host_that_is_not_open_refuses_to_connect() -> None:
    host = SkillHost()
    with pytest.raises(Exception, match="async with"):
        await host.connect(stdio_spec("s", misbehaving_argv("ok")))


@pytest.mark.threat("T17")
async def test_the_cache_never_stands_in_for_a_server_that_died(tmp_path: Path) -> None:
    pid = tmp_path / "s.pid"
    cache = DiskCache(tmp_path / "cache", discovery=())
    async with SkillHost(approver=Approving(), cache=cache) as host:
        with anyio.fail_after(60):
            await host.connect(stdio_spec("s", misbehaving_argv("ok", "--pid", str(pid))))
            await host.activate("refunds")
            first = await host.read_resource("s", EMAIL)  # now in the cache
        assert first.verified
        kill(pid)
        with anyio.fail_after(30):
            # A death is noticed on the next request that reaches the server.
            with pytest.raises(TransportError):
                await host.refresh("s")
            await host.wait_disconnected("s")
            with pytest.raises(ServerDisconnected):
                await host.read_resource("s", EMAIL)
            text = await host.read_skill_tool("refunds")
        assert 'error="ServerDisconnected"' in text
