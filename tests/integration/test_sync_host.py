"""SyncSkillHost: SkillHost's methods as blocking calls, for synchronous hosts.

These tests are synchronous code, as a host using SyncSkillHost is: no event loop runs
in their thread. A call that could hang is run in a worker thread and waited on with a
timeout, so a deadlock fails the test instead of stalling the suite.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import pytest

from skillward import SkillHost, SyncSkillHost
from skillward.core.errors import (
    ConfigError,
    CrossOriginDenied,
    DigestMismatch,
    ExecutionDenied,
    SkillNotFound,
    UsageError,
)
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig
from skillward.serve.catalog import SkillCatalog
from skillward.serve.server import build_server
from skillward.trust.approvals import ActivationRequest, Decision
from tests.support.doubles import Approving, CrossOrigin, Execution
from tests.support.trees import skill_md, write

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
_T = TypeVar("_T")


def within(seconds: float, call: Callable[[], _T]) -> _T:
    """``call()`` in a worker thread, waited on for at most ``seconds``."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result(timeout=seconds)


def build(root: Path, skills: int = 1, files: int = 8) -> Path:
    for s in range(skills):
        name = f"skill-{s}"
        write(root, f"{name}/SKILL.md", skill_md(name, "A skill to read from threads"))
        for f in range(files):
            write(root, f"{name}/notes/{f}.md", f"{name} note {f}\n".encode())
    return root


def memory(root: Path, label: str = "acme", **options: Any) -> ServerSpec:
    catalog = SkillCatalog.from_directory(root)
    server = build_server(catalog, **options)
    return ServerSpec(label=label, transport=InMemoryTransport(server=server))


@pytest.fixture
def host(tmp_path: Path) -> Iterator[SyncSkillHost]:
    with SyncSkillHost(approver=Approving()) as opened:
        opened.connect(memory(build(tmp_path / "served")))
        yield opened


# --- the same methods as SkillHost -------------------------------------------------------


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def test_the_sync_host_has_exactly_the_async_hosts_public_methods() -> None:
    asynchronous = public_methods(SkillHost)
    synchronous = public_methods(SyncSkillHost)
    # Only the lifecycle differs by name: `async with` and aclose(), `with` and close().
    assert set(synchronous) - {"close"} == set(asynchronous) - {"aclose"}
    for name, method in synchronous.items():
        assert not inspect.iscoroutinefunction(method), name
        if name == "session":  # the same arguments; a session of the same kind of host
            same = inspect.signature(asynchronous[name]).replace(return_annotation="SyncSkillHost")
            assert inspect.signature(method) == same
        elif name != "close":
            assert inspect.signature(method) == inspect.signature(asynchronous[name]), name
    assert inspect.signature(SyncSkillHost) == inspect.signature(SkillHost)
    properties = {n for n, m in vars(SkillHost).items() if isinstance(m, property)}
    assert properties <= {n for n, m in vars(SyncSkillHost).items() if isinstance(m, property)}


# --- a synchronous host, end to end -------------------------------------------------------


def test_a_synchronous_script_connects_activates_and_reads_verified_files(
    host: SyncSkillHost,
) -> None:
    assert [item.ref for item in host.catalog()] == ["skill-0"]
    assert "skill-0" in host.catalog_block().text()
    activation = host.activate("skill-0")
    assert activation.block.verified
    block = host.read_file("skill-0", "notes/3.md")
    assert block.verified
    assert block.content == "skill-0 note 3\n"
    assert [a.record.name for a in host.active()] == ["skill-0"]
    assert [s.state for s in host.servers()] == ["connected"]


def test_errors_reach_the_caller_with_their_own_types(tmp_path: Path) -> None:
    root = build(tmp_path / "served")
    tampered = memory(root, tamper=["skill://skill-0/notes/1.md"])
    with SyncSkillHost(approver=Approving()) as host:
        host.connect(tampered)
        with pytest.raises(SkillNotFound):
            host.activate("no-such-skill")
        host.activate("skill-0")
        with pytest.raises(DigestMismatch):
            host.read_file("skill-0", "notes/1.md")
        with pytest.raises(ConfigError):
            host.connect(tampered)  # the label is taken


@pytest.mark.threat("T13")
@pytest.mark.threat("T16")
def test_the_async_seams_decide_for_the_sync_host(tmp_path: Path) -> None:
    approver, execution, cross_origin = Approving(), Execution(), CrossOrigin()
    config = HostConfig(execution_tools=("bash",))
    with SyncSkillHost(
        config=config, approver=approver, execution=execution, cross_origin=cross_origin
    ) as host:
        host.connect(memory(build(tmp_path / "a"), "a"))
        write(tmp_path / "b", "other/SKILL.md", skill_md("other"))
        host.connect(memory(tmp_path / "b", "b"))
        host.activate("a:skill-0")
        assert [r.record.name for r in approver.asked] == ["skill-0"]
        with pytest.raises(ExecutionDenied):
            host.authorize_execution("bash", detail="rm -rf /")
        refused = host.handle_tool_call("bash", '{"command": "ls"}')
        assert refused is not None
        assert refused.error_type == "ExecutionDenied"
        with pytest.raises(CrossOriginDenied):
            host.read_resource("b", "skill://elsewhere/data.csv")  # in no skill of b's
    assert [r.tool for r in execution.asked] == ["bash", "bash"]
    assert [r.target for r in cross_origin.asked] == ["b"]


# --- threads ------------------------------------------------------------------------------


@dataclass
class Recording:
    """An approver that notes the thread it is asked on."""

    threads: set[int] = field(default_factory=set)

    async def decide(self, request: ActivationRequest) -> Decision:
        self.threads.add(threading.get_ident())
        await anyio.lowlevel.checkpoint()  # let the other callers' calls interleave here
        return Decision.APPROVE


@pytest.mark.threat("T45")
def test_calls_from_many_threads_at_once_each_get_their_own_answer(tmp_path: Path) -> None:
    root = build(tmp_path / "served", skills=4, files=8)
    approver = Recording()
    callers: set[int] = set()

    def load(skill: int) -> list[str]:
        callers.add(threading.get_ident())
        name = f"skill-{skill}"
        shared.activate(name)
        return [shared.read_file(name, f"notes/{f}.md").content for f in range(8)]

    with SyncSkillHost(approver=approver) as shared:
        shared.connect(memory(root))
        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(load, skill % 4) for skill in range(16)]
            results = [future.result(timeout=WAIT) for future in futures]
    for index, contents in enumerate(results):
        name = f"skill-{index % 4}"
        assert contents == [f"{name} note {f}\n" for f in range(8)]
    # Every seam ran on the host's one event-loop thread, none of the callers'.
    assert len(approver.threads) == 1
    assert not approver.threads & callers


@dataclass
class CallingBack:
    """An approver that calls the sync host from inside its decision."""

    host: SyncSkillHost | None = None
    error: BaseException | None = None

    async def decide(self, request: ActivationRequest) -> Decision:
        assert self.host is not None
        try:
            self.host.catalog()
        except UsageError as error:
            self.error = error
            raise
        return Decision.APPROVE  # pragma: no cover (the call above is refused)


@pytest.mark.threat("T45")
def test_a_seam_calling_back_into_the_sync_host_is_refused_instead_of_deadlocking(
    tmp_path: Path,
) -> None:
    approver = CallingBack()
    with SyncSkillHost(approver=approver) as host:
        approver.host = host
        host.connect(memory(build(tmp_path / "served")))
        with pytest.raises(UsageError, match="cannot be called from async code"):
            within(WAIT, lambda: host.activate("skill-0"))
        assert isinstance(approver.error, UsageError)
        assert host.active() == []


@pytest.mark.threat("T45")
def test_async_code_is_told_to_use_skillhost_instead_of_blocking_its_loop(
    host: SyncSkillHost,
) -> None:
    async def from_async_code() -> None:
        with pytest.raises(UsageError, match="use SkillHost"):
            host.catalog()
        with pytest.raises(UsageError, match="use SkillHost"):  # as its docstring says
            host.handle_tool_call("read_skill", {"ref": "skill-0"})
        with pytest.raises(UsageError, match="use SkillHost"):
            SyncSkillHost()

    within(WAIT, lambda: anyio.run(from_async_code))
    assert [item.ref for item in host.catalog()] == ["skill-0"]


# --- sessions ---------------------------------------------------------------------------


def test_a_session_shares_the_connections_and_not_the_acting_window(
    host: SyncSkillHost,
) -> None:
    denied = Approving(answer=Decision.DENY)
    with host.session(approver=Approving()) as one, host.session(approver=denied) as two:
        assert one.activate("skill-0").block.verified
        assert [a.record.name for a in one.active()] == ["skill-0"]
        assert two.active() == []
        assert host.active() == []
        block = two.read_resource_block("acme", "skill://skill-0/notes/0.md")
        assert 'error="SkillNotActive"' in block.text()
        assert 'error="ApprovalDenied"' in two.read_skill_tool("skill-0")
    with pytest.raises(UsageError, match="closed"):
        one.active()
    assert host.servers()[0].state == "connected"  # closing a session closes no server
    assert host.activate("skill-0").block.verified


def test_closing_the_host_closes_its_sessions(tmp_path: Path) -> None:
    with SyncSkillHost(approver=Approving()) as host:
        host.connect(memory(build(tmp_path / "served")))
        session = host.session(approver=Approving())
        session.activate("skill-0")
    with pytest.raises(UsageError, match="closed"):
        session.catalog()
    session.close()  # nothing left to close


# --- closing ----------------------------------------------------------------------------


def assert_no_thread_outlives(before: set[threading.Thread]) -> None:
    """Every thread started since ``before`` ends. The loop's own thread is joined by
    close(); anyio's worker threads are told to stop when the loop ends but not joined,
    so each gets a bounded wait before it counts as left behind."""
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=WAIT)
    assert [t.name for t in set(threading.enumerate()) - before] == []


def test_close_ends_every_connection_and_the_host_thread(tmp_path: Path) -> None:
    root = build(tmp_path / "served")
    pid_file = tmp_path / "server.pid"
    argv = [sys.executable, "-m", "tests.support.misbehaving", str(root), "--mode", "ok"]
    argv += ["--pid", str(pid_file)]
    spec = ServerSpec(
        label="stdio",
        transport=StdioTransport(command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT)),
    )
    before = set(threading.enumerate())
    host = SyncSkillHost(approver=Approving())
    host.connect(spec)
    host.connect(memory(root, "memory"))
    assert host.activate("stdio:skill-0").block.verified
    pid = int(pid_file.read_text())
    within(WAIT, host.close)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the server process has exited and been reaped
    assert_no_thread_outlives(before)
    with pytest.raises(UsageError, match="closed"):
        host.catalog()
    host.close()  # a second close does nothing


def test_a_host_that_fails_to_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    with pytest.raises(TypeError, match="async def decide"):
        SyncSkillHost(approver=object())  # type: ignore[arg-type]
    assert_no_thread_outlives(before)
