"""Stdio servers' processes, apart from any session: started in a reaper's task, stopped
the way their release says, and never left running when the reaper's owner leaves.

The host starts a stdio server's process before it imports the client edge, so a process
can be started and never adopted by a session (the import failed, a deadline fired): it
must still be stopped and reaped.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from skillward.core.config import Limits
from skillward.core.errors import DeadlineExceeded, SkillwardError
from skillward.edge._process import Reaper, _quietly, spawn
from skillward.edge._transport import Faults, stdio
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.catalog import example_skills_dir
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

#: Says one thing, then neither reads nor writes; SIGTERM ends it.
SAYS_ONE_THING = """
import sys, time
sys.stdout.write('{"jsonrpc": "2.0", "method": "notifications/progress", '
                 '"params": {"progressToken": 1, "progress": 1}}\\n')
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
    env = {**os.environ, "PYTHONPATH": str(broken)}
    with anyio.fail_after(30):
        result = await anyio.run_process([*argv, "--server", server], env=env, check=False)
    assert result.returncode == 6
    assert b"cannot load the MCP client: ImportError: mcp is broken here" in result.stderr
    assert gone(pid)


async def test_stopping_a_process_while_its_session_reads_it_never_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = stdio_spec([sys.executable, "-c", SAYS_ONE_THING])
    assert isinstance(spec.transport, StdioTransport)
    with anyio.fail_after(30), caplog.at_level(logging.DEBUG, logger="skillward"):
        async with anyio.create_task_group() as tasks:
            reaper = Reaper(tasks)
            child = await spawn(spec, spec.transport, limits=LIMITS, reaper=reaper)
            async with stdio(
                spec, spec.transport, limits=LIMITS, faults=Faults(), reaper=reaper, child=child
            ) as (incoming, _):
                said = await incoming.receive()
                assert not isinstance(said, Exception)
                assert isinstance(said.message, types.JSONRPCNotification)
                # The session's reader now waits on the pipe; the owner leaves meanwhile.
                reaper.hurry()
                await child.process.wait()
    assert child.process.returncode == -signal.SIGTERM
    assert reaper.running == set()
    assert [r.getMessage() for r in caplog.records if r.name == "skillward"] == []


async def test_a_failure_while_stopping_is_noted_in_the_servers_log_and_never_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    transport = StdioTransport(command=sys.executable, log_dir=tmp_path)
    spec = ServerSpec(label="s", transport=transport)

    async def failing() -> None:
        raise RuntimeError("read() called while\nanother coroutine waits")

    with caplog.at_level(logging.WARNING, logger="skillward"):
        await _quietly(failing(), spec, transport, LIMITS)
    assert [r.getMessage() for r in caplog.records if r.name == "skillward"] == []
    said = "stopping the server failed: RuntimeError: read() called while\\nanother coroutine waits"
    assert (tmp_path / "s.log").read_text() == f"\x1e--- skillward: {said} ---\n"


def misbehaving_spec(tmp_path: Path, mode: str) -> ServerSpec:
    argv = [sys.executable, "-m", "tests.support.misbehaving", str(example_skills_dir())]
    transport = StdioTransport(
        command=argv[0],
        args=(*argv[1:], "--mode", mode),
        cwd=str(Path(__file__).resolve().parents[2]),
        log_dir=tmp_path / "logs",
    )
    return ServerSpec(label="bad", transport=transport)


@pytest.mark.threat("T11")
@pytest.mark.parametrize("mode", ["stall-list", "endless", "huge-frontmatter"])
async def test_leaving_the_host_after_a_listing_failed_stops_its_server_quietly(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    limits = Limits(operation_timeout=3, request_timeout=3, exit_timeout=30)
    spec = misbehaving_spec(tmp_path, mode)
    with anyio.fail_after(60), caplog.at_level(logging.WARNING, logger="skillward"):
        async with SkillHost(config=HostConfig(limits=limits, local_dirs=())) as host:
            with pytest.raises(SkillwardError) as failed:
                await host.connect(spec)
    assert failed.value.server == "bad"
    assert [r.getMessage() for r in caplog.records if r.name == "skillward"] == []
    log = (tmp_path / "logs" / "bad.log").read_text()
    assert "Traceback" not in log
