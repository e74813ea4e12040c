"""Stdio servers' processes, apart from any session: started in a reaper's task, stopped
the way their release says, and never left running when the reaper's owner leaves.

The host starts a stdio server's process before it imports the client edge, so a process
can be started and never adopted by a session (the import failed, a deadline fired): it
must still be stopped and reaped.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path

import anyio
import pytest

from skillward.core.config import Limits
from skillward.core.errors import DeadlineExceeded
from skillward.edge._process import Reaper, spawn
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from tests.support.misbehaving import deaf_argv

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T44")]

LIMITS = Limits(exit_timeout=30)
#: Exits as soon as its stdin closes: a server that behaves.
READS_STDIN = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
#: Stays when its stdin closes and ignores SIGTERM: only SIGKILL ends it.
IGNORES_SIGTERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\\n")
sys.stdout.flush()
time.sleep(600)
"""

#: An `mcp` package that fails to import once the server's pid file is written (or 20 s on).
BROKEN_MCP = """
import os, time
for _ in range(2000):
    if os.path.exists({pid!r}) and os.path.getsize({pid!r}):
        break
    time.sleep(0.01)
raise ImportError("mcp is broken here")
"""


def gone(pid_file: Path) -> bool:
    """Whether the process is gone: a zombie would still answer signal 0."""
    try:
        os.kill(int(pid_file.read_text()), 0)
    except ProcessLookupError:
        return True
    return False


def stdio_spec(argv: list[str]) -> ServerSpec:
    transport = StdioTransport(command=argv[0], args=tuple(argv[1:]), stderr="discard")
    return ServerSpec(label="s", transport=transport)


async def test_a_politely_released_process_is_let_exit_whatever_is_said_after() -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            spec = stdio_spec(READS_STDIN)
            assert isinstance(spec.transport, StdioTransport)
            child = await spawn(spec, spec.transport, limits=LIMITS, reaper=Reaper(tasks))
            child.release(polite=True)  # its session ended normally
            child.release(polite=False)  # whoever started it, making sure: changes nothing
    # Its stdin closed and it exited by itself (a SIGTERM would have ended it: -15).
    assert child.process.returncode == 0


async def test_a_process_released_cut_short_is_terminated_at_once() -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            spec = stdio_spec([sys.executable, "-c", "import time; time.sleep(600)"])
            assert isinstance(spec.transport, StdioTransport)
            child = await spawn(spec, spec.transport, limits=LIMITS, reaper=Reaper(tasks))
            child.release(polite=False)
    assert child.process.returncode == -signal.SIGTERM


async def test_a_process_no_one_released_is_killed_when_the_reapers_owner_leaves() -> None:
    spec = stdio_spec([sys.executable, "-c", IGNORES_SIGTERM])
    assert isinstance(spec.transport, StdioTransport)
    # The exit time is 30 s: leaving in time shows no wait for it was made.
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            reaper = Reaper(tasks)
            child = await spawn(spec, spec.transport, limits=LIMITS, reaper=reaper)
            assert child.process.stdout is not None
            assert await child.process.stdout.receive() == b"ready\n"
            reaper.hurry()
    assert child.process.returncode == -signal.SIGKILL
    assert reaper.running == set()


async def test_a_process_started_after_the_owner_began_leaving_is_stopped_at_once() -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            reaper = Reaper(tasks)
            reaper.hurry()
            spec = stdio_spec([sys.executable, "-c", "import time; time.sleep(600)"])
            assert isinstance(spec.transport, StdioTransport)
            child = await spawn(spec, spec.transport, limits=LIMITS, reaper=reaper)
    assert child.process.returncode is not None


async def test_a_session_that_fails_its_handshake_releases_the_process_it_adopted(
    tmp_path: Path,
) -> None:
    pid = tmp_path / "server.pid"
    spec = stdio_spec(deaf_argv(pid))
    assert isinstance(spec.transport, StdioTransport)
    limits = Limits(operation_timeout=1, request_timeout=1, exit_timeout=30)
    # Never hurried: the task group is left only once the session let the process go.
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            reaper = Reaper(tasks)
            child = await spawn(spec, spec.transport, limits=limits, reaper=reaper)
            with pytest.raises(DeadlineExceeded, match="handshake"):
                async with SkillsClient.connect(spec, limits=limits, reaper=reaper, child=child):
                    pass
            assert child.released.is_set()
    assert gone(pid)


async def test_a_server_started_before_the_sdk_fails_to_load_is_stopped_and_reaped(
    tmp_path: Path,
) -> None:
    pid = tmp_path / "server.pid"
    # An `mcp` that cannot be imported, ahead of the real one on this command's path only
    # (a stdio server inherits no PYTHONPATH). It fails once the server has started, which
    # it does first: it waits for that, in vain if the server were started after it.
    broken = tmp_path / "broken"
    (broken / "mcp").mkdir(parents=True)
    (broken / "mcp" / "__init__.py").write_text(BROKEN_MCP.format(pid=str(pid)))
    server = "deaf=" + shlex.join(deaf_argv(pid, ignore_term=True))
    argv = [sys.executable, "-m", "skillward", "list", "--no-local", "--no-cache"]
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PYTHONPATH": str(broken),
    }
    with anyio.fail_after(30):
        result = await anyio.run_process([*argv, "--server", server], env=env, check=False)
    assert result.returncode == 6
    assert b"cannot load the MCP client: ImportError: mcp is broken here" in result.stderr
    assert gone(pid)
