"""A deadline bounds the caller's wait, clean-up included.

Stdio servers that never answer, that stay when their stdin closes, and that ignore
SIGTERM: the caller gets control back at the deadline (or, closing a session, at once),
and the process is stopped in a task of the host's own (SIGTERM, then SIGKILL) and
reaped, so none is left behind, not even a zombie.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import anyio
import pytest

from skillward.core.config import Limits
from skillward.core.errors import DeadlineExceeded
from skillward.edge.client import Reaper, SkillsClient
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.misbehaving import deaf_argv, misbehaving_argv
from tests.support.servers import stdio_spec

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T44")]

# How late past a deadline the caller may get control back: scheduling, far below the
# two seconds or more that waiting for a server to exit would add.
MARGIN = 1.0
LIMITS = Limits(request_timeout=2, operation_timeout=4, exit_timeout=2)


def lingering(pid_file: Path) -> list[str]:
    """A server that answers, stays when its stdin closes, and only notes a SIGTERM."""
    return misbehaving_argv("linger", "--pid", str(pid_file))


def gone(pid_file: Path) -> bool:
    """Whether the process is gone: a zombie would still answer signal 0."""
    try:
        os.kill(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("ignore_term", [False, True], ids=["honours-sigterm", "ignores-sigterm"])
async def test_a_server_that_never_answers_fails_at_the_deadline_and_leaves_nothing_behind(
    tmp_path: Path, ignore_term: bool
) -> None:
    pid = tmp_path / "server.pid"
    spec = stdio_spec("deaf", deaf_argv(pid, ignore_term=ignore_term), stderr="discard")
    # Connecting, failing, and leaving the host, all within the deadline (and a margin):
    # the server ignores its stdin closing, so waiting for it to exit would take seconds.
    with anyio.fail_after(LIMITS.operation_timeout + MARGIN):
        async with SkillHost(config=HostConfig(limits=LIMITS)) as host:
            with pytest.raises(DeadlineExceeded, match="handshake") as info:
                await host.connect(spec)
    assert info.value.server == "deaf"
    assert gone(pid)


async def test_a_client_without_a_reaper_kills_a_server_that_misses_the_deadline(
    tmp_path: Path,
) -> None:
    pid = tmp_path / "server.pid"
    spec = stdio_spec("deaf", deaf_argv(pid, ignore_term=True), stderr="discard")
    with anyio.fail_after(LIMITS.operation_timeout + MARGIN):
        with pytest.raises(DeadlineExceeded, match="handshake"):
            async with SkillsClient.connect(spec, limits=LIMITS):
                pass
    assert gone(pid)


async def test_closing_a_session_never_waits_and_the_server_is_terminated_then_killed(
    tmp_path: Path,
) -> None:
    pid = tmp_path / "server.pid"
    limits = Limits(exit_timeout=1)
    with anyio.fail_after(60) as bound:
        async with anyio.create_task_group() as tasks:
            spec = stdio_spec("s", lingering(pid), stderr="discard")
            with anyio.fail_after(60) as closing:
                async with SkillsClient.connect(spec, limits=limits, reaper=Reaper(tasks)) as c:
                    assert (await c.list_skills()).entries
                    # Closing the session: no wait for the server, which stays.
                    closing.deadline = anyio.current_time() + MARGIN
            assert not gone(pid)  # still being stopped, in the reaper's task
            # Leaving the task group waits for that: stdin closed, a second; SIGTERM
            # (noted, ignored), a second; SIGKILL.
            bound.deadline = anyio.current_time() + 2 * limits.exit_timeout + MARGIN
    assert pid.with_suffix(".term").read_text() == "SIGTERM"
    assert gone(pid)


async def test_disconnect_returns_at_once_and_leaving_the_host_stops_the_server(
    tmp_path: Path,
) -> None:
    pid = tmp_path / "server.pid"
    limits = Limits(exit_timeout=1)
    with anyio.fail_after(60) as leaving:
        async with SkillHost(config=HostConfig(limits=limits)) as host:
            await host.connect(stdio_spec("s", lingering(pid), stderr="discard"))
            with anyio.fail_after(MARGIN):
                await host.disconnect("s")
            assert host.servers() == []
            assert not gone(pid)
            # Its stdin is closed: it gets exit_timeout, then SIGTERM, and the host is
            # leaving, so no more waiting: SIGKILL.
            leaving.deadline = anyio.current_time() + limits.exit_timeout + MARGIN
    assert gone(pid)


async def test_the_command_lines_timeout_bounds_the_whole_run(tmp_path: Path) -> None:
    pid = tmp_path / "server.pid"
    server = "deaf=" + shlex.join(deaf_argv(pid, ignore_term=True))
    argv = [sys.executable, "-m", "skillward", "list", "--no-local", "--no-cache"]
    argv += ["--server", server, "--timeout", "1"]
    # The deadline, and the command's own start-up: no wait for the server to exit.
    with anyio.fail_after(1 + 4):
        result = await anyio.run_process(argv, check=False)
    assert result.returncode == 6
    assert b"did not complete the handshake within 1 s" in result.stderr
    assert gone(pid)
