"""Sessions: several model contexts over one host's connections (``host.session(...)``).

Each session has its own acting window, its own origins in context, its own approver
and gates; the connections, the registry, the cache, the policy and the audit trail
are the host's. Real servers throughout: the hostile and example servers in memory,
and a stdio server that is killed. Each test is what a second client of a shared host
would try first: borrow the other's activation, its approval, its context, or outlive
it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import sys
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from skillward.core.context import ContextBlock
from skillward.core.errors import (
    ApprovalDenied,
    CrossOriginDenied,
    DigestMismatch,
    ExecutionDenied,
    ServerDisconnected,
    SkillChanged,
    SkillNotActive,
    UsageError,
)
from skillward.core.origins import SkillKey
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.catalog import SkillCatalog, example_skills_dir
from skillward.serve.server import build_server, build_skills_server
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import Answer, Change, Decision, Grants, Scope
from skillward.trust.audit import AuditEvent
from skillward.trust.book import ApprovalBook
from tests.support.approvals import Scripted, yes
from tests.support.doubles import Approving, CrossOrigin, Execution
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree
from tests.support.keys import MemoryKeys
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio

REPO_ROOT = str(Path(__file__).resolve().parents[2])
GUIDE = "skill://good/ref/guide.md"
EMAIL = "skill://acme/billing/refunds/templates/email.md"


@dataclass
class Seat:
    """One session and the seams it was given."""

    host: SkillHost
    approver: Approving = field(default_factory=Approving)
    cross_origin: CrossOrigin = field(default_factory=CrossOrigin)
    execution: Execution = field(default_factory=Execution)
    blocks: list[ContextBlock] = field(default_factory=list)


def seat(host: SkillHost) -> Seat:
    """A new session of ``host``, with recording seams of its own."""
    approver, cross_origin, execution = Approving(), CrossOrigin(), Execution()
    blocks: list[ContextBlock] = []
    session = host.session(
        approver=approver, cross_origin=cross_origin, execution=execution, sink=blocks.append
    )
    return Seat(session, approver, cross_origin, execution, blocks)


@dataclass
class World:
    host: SkillHost
    state: HostileState
    a: Seat
    b: Seat


@asynccontextmanager
async def world(tmp_path: Path) -> AsyncIterator[World]:
    """A host with ``hostile`` and ``trusted`` (the examples) connected, and two sessions."""
    build_hostile_tree(tmp_path / "hostile")
    hostile, state = build_hostile_server(tmp_path / "hostile")
    trusted = build_skills_server(example_skills_dir())
    with anyio.fail_after(60):
        async with SkillHost(approver=Approving()) as host:
            for label, server in (("hostile", hostile), ("trusted", trusted)):
                await host.connect(
                    ServerSpec(label=label, transport=InMemoryTransport(server=server))
                )
            yield World(host, state, seat(host), seat(host))


# --- windows are the session's own -----------------------------------------------------------


@pytest.mark.threat("T8")
async def test_an_activation_in_one_session_is_not_active_in_another(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("good")
        assert [a.record.name for a in w.a.host.active()] == ["good"]
        assert w.b.host.active() == []
        assert w.host.active() == []
        assert [b.kind for b in w.a.blocks] == ["skill"]
        assert w.b.blocks == []


@pytest.mark.threat("T8")
async def test_a_session_cannot_read_the_files_of_a_skill_active_only_in_another(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("good")
        before = len(w.state.requests)
        with pytest.raises(SkillNotActive):
            await w.b.host.read_resource("hostile", GUIDE)
        block = await w.b.host.read_resource_block("hostile", GUIDE)
        assert block.kind == "error"
        assert 'error="SkillNotActive"' in block.text()
        assert w.state.requests[before:] == []  # refused without asking the server
        assert (await w.a.host.read_resource("hostile", GUIDE)).verified


async def test_a_failed_read_in_one_session_ends_that_sessions_activation_only(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("wrong-digest")
        await w.b.host.activate("wrong-digest")
        with pytest.raises(DigestMismatch):
            await w.a.host.read_file("wrong-digest", "ref/guide.md")
        [ended] = w.a.host.active()
        [held] = w.b.host.active()
        assert isinstance(ended.ended, DigestMismatch)
        assert held.ended is None


# --- approvals and gates are the session's own -------------------------------------------------


async def test_a_session_approval_in_one_session_does_not_approve_in_another(
    tmp_path: Path,
) -> None:
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    first, second = Scripted([yes(Scope.SESSION)]), Scripted()  # the second says no
    async with world(tmp_path) as w:
        one = w.host.session(approver=ApprovalBook(first, store=store))
        two = w.host.session(approver=ApprovalBook(second, store=store))
        await one.activate("good")
        one.deactivate("good")
        await one.activate("good")  # held for this session: not asked again
        assert len(first.questions) == 1
        with pytest.raises(ApprovalDenied):
            await two.activate("good")
        assert len(second.questions) == 1
        assert two.active() == []


async def test_a_remembered_approval_is_shared_through_the_store(tmp_path: Path) -> None:
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    first, second = Scripted([yes(Scope.REMEMBER)]), Scripted()
    async with world(tmp_path) as w:
        one = w.host.session(approver=ApprovalBook(first, store=store))
        two = w.host.session(approver=ApprovalBook(second, store=store))
        await one.activate("good")
        await two.activate("good")  # what the person chose to remember holds everywhere
        assert second.questions == []


@pytest.mark.threat("T9")
async def test_a_skill_found_changed_in_one_session_is_revoked_in_every_session(
    tmp_path: Path,
) -> None:
    first, second = Scripted([yes(Scope.SESSION)]), Scripted([yes(Scope.SESSION)])
    async with world(tmp_path) as w:
        book_one, book_two = ApprovalBook(first), ApprovalBook(second)
        one = w.host.session(approver=book_one)
        two = w.host.session(approver=book_two)
        request = await two.approval_request("rotating")
        await two.activate("rotating")
        await one.activate("rotating")
        assert await book_two.held(request) is not None
        with pytest.raises(SkillChanged):
            await one.read_file("rotating", "notes.md")
        # Were the first version served again, the second session would ask again too.
        assert await book_two.held(request) is None


def held_at(server: Any, method: str) -> tuple[anyio.Event, anyio.Event]:
    """Hold ``server``'s answers to ``method`` until the second event is set; the first
    is set once such a request arrives."""
    arrived, release = anyio.Event(), anyio.Event()

    async def hold(ctx: Any, call_next: Any) -> Any:
        if ctx.method == method:
            arrived.set()
            await release.wait()
        return await call_next(ctx)

    server.middleware.append(hold)
    return arrived, release


class HeldRevocation(ApprovalBook):
    """A book whose revocation waits for ``release`` (a store another process holds)."""

    def __init__(self) -> None:
        super().__init__(Scripted())
        self.entered, self.release = anyio.Event(), anyio.Event()

    async def revoke(self, key: SkillKey, *, reason: str, change: Change | None = None) -> None:
        self.entered.set()
        await self.release.wait()
        await super().revoke(key, reason=reason, change=change)


@pytest.mark.threat("T9")
async def test_a_revocation_reaches_every_session_though_the_read_that_found_it_is_cancelled(
    tmp_path: Path,
) -> None:
    second = Scripted([yes(Scope.SESSION)])
    async with world(tmp_path) as w:
        one = w.host.session(approver=ApprovalBook(Scripted([yes(Scope.SESSION)])))
        held = HeldRevocation()
        between = w.host.session(approver=held)  # held: a session dropped is no member
        book_two = ApprovalBook(second)
        two = w.host.session(approver=book_two)
        request = await two.approval_request("rotating")
        await two.activate("rotating")
        await one.activate("rotating")
        reading = anyio.CancelScope()

        async def read() -> None:
            with reading, contextlib.suppress(SkillChanged):
                await one.read_file("rotating", "notes.md")

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            await held.entered.wait()
            reading.cancel()  # the caller's deadline, while another session's store waits
            held.release.set()
        assert await book_two.held(request) is None
        assert between.active() == []


@pytest.mark.threat("T9")
async def test_a_failed_verification_is_recorded_though_the_refresh_after_it_is_cancelled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build_hostile_tree(tmp_path / "hostile")
    server, _ = build_hostile_server(tmp_path / "hostile")
    asked, release = held_at(server, "skills/get")
    spec = ServerSpec(label="hostile", transport=InMemoryTransport(server=server))
    with caplog.at_level(logging.INFO, logger="skillward"), anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec)
            reading = anyio.CancelScope()

            async def load() -> None:
                with reading, contextlib.suppress(DigestMismatch):
                    await host.activate("wrong-digest")
                    await host.read_file("wrong-digest", "ref/guide.md")

            async with anyio.create_task_group() as group:
                group.start_soon(load)
                await asked.wait()
                reading.cancel()
            release.set()
    events: list[AuditEvent] = [getattr(r, "audit") for r in caplog.records if hasattr(r, "audit")]
    failures = [e for e in events if e.event == "verification_failure"]
    assert len(failures) == 1
    assert failures[0].reason.startswith("DigestMismatch")


@pytest.mark.threat("T16")
@pytest.mark.threat("T37")
async def test_each_session_asks_about_cross_origin_reads_for_its_own_context(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("good")  # hostile text is in a's context, not b's
        with pytest.raises(CrossOriginDenied):
            await w.a.host.read_file("trusted:refunds", "templates/email.md")
        assert w.a.cross_origin.asked[-1].acting == ("hostile",)
        block = await w.b.host.read_file("trusted:refunds", "templates/email.md")
        assert block.verified
        assert w.b.cross_origin.asked == []
        w.b.host.catalog_block()  # now b has seen hostile's text too
        with pytest.raises(CrossOriginDenied):
            await w.b.host.read_file("trusted:refunds", "templates/email.md")
        assert w.b.cross_origin.asked[-1].acting == ("hostile",)


@pytest.mark.threat("T13")
async def test_execution_is_gated_in_the_session_acting_on_an_mcp_skill_only(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("good")
        with pytest.raises(ExecutionDenied):
            await w.a.host.authorize_execution("bash", detail="ls")
        assert [q.skill for q in w.a.execution.asked] == [w.a.host.resolve("good").key]
        await w.b.host.authorize_execution("bash", detail="ls")
        assert w.b.execution.asked == []


async def test_a_session_denies_by_default(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        bare = w.host.session()  # not the host's approver: a new context's own, deny all
        with pytest.raises(ApprovalDenied):
            await bare.activate("good")


# --- lifetimes ---------------------------------------------------------------------------------


async def test_closing_a_session_leaves_the_other_and_the_connections_alive(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("good")
        await w.b.host.activate("good")
        await w.a.host.aclose()
        assert w.a.host.active() == []
        asked, requests = len(w.a.approver.asked), len(w.state.requests)
        with pytest.raises(UsageError, match="session is closed"):
            await w.a.host.activate("good")
        with pytest.raises(UsageError, match="session is closed"):
            await w.a.host.read_resource("hostile", GUIDE)
        with pytest.raises(UsageError, match="session is closed"):
            await w.a.host.read_file("good", "guide.md")
        # Refused before any work: nobody asked, nothing fetched for a closed context.
        assert len(w.a.approver.asked) == asked
        assert len(w.state.requests) == requests
        assert (await w.b.host.read_resource("hostile", GUIDE)).verified
        assert [s.state for s in w.host.servers()] == ["connected", "connected"]
        async with w.host.session(approver=Approving()) as later:
            await later.activate("trusted:refunds")
        assert later.active() == []
        assert (await w.b.host.read_resource("hostile", GUIDE)).verified


async def test_closing_the_host_closes_every_session(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.a.host.activate("trusted:refunds")
    assert w.a.host.active() == []
    with pytest.raises(UsageError):
        await w.a.host.activate("trusted:refunds")
    with pytest.raises(UsageError, match="open the host first"):
        w.host.session()


async def test_a_session_needs_an_open_host(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="open the host first"):
        SkillHost().session()


async def test_a_session_dropped_without_closing_is_not_kept_by_the_host(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        session = w.host.session(approver=Approving())
        await session.activate("good")
        gone = weakref.ref(session)
        del session
        gc.collect()
        assert gone() is None
        await w.a.host.activate("good")  # the others are unaffected


async def test_disconnecting_a_server_ends_its_activations_in_every_session(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        for s in (w.a, w.b):
            await s.host.activate("good")
            await s.host.activate("trusted:refunds")
        await w.b.host.disconnect("hostile")  # any session acts for the host
        for s in (w.a, w.b):
            assert [a.record.origin.label for a in s.host.active()] == ["trusted"]


@pytest.mark.threat("T34")
async def test_a_load_in_flight_when_its_server_is_disconnected_never_begins(
    tmp_path: Path,
) -> None:
    # The server answers the read just as the host disconnects it: the load must not
    # land in the window after its server's activations were ended everywhere.
    root = tmp_path / "skills"
    write(root, "s/SKILL.md", skill_md("s", "Asks for a tool", "allowed-tools: Bash\n"))
    server = build_server(SkillCatalog.from_directory(root))
    seen, release = held_at(server, "resources/read")
    async with SkillHost(config=HostConfig(local_dirs=())) as host:
        granted = Answer(Decision.APPROVE, Scope.ONCE, Grants(tools=("Bash",)))
        session = host.session(approver=ApprovalBook(Scripted([granted])))
        await host.connect(ServerSpec(label="acme", transport=InMemoryTransport(server=server)))
        failed: list[BaseException] = []

        async def load() -> None:
            try:
                await session.activate("s")
            except ServerDisconnected as error:
                failed.append(error)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(load)
                await seen.wait()
                release.set()
                await host.disconnect("acme")
        assert session.active() == []
        assert session.granted_tools() == ()
        assert len(failed) == 1


@pytest.mark.threat("T34")
async def test_a_dead_server_fails_calls_in_every_session(tmp_path: Path) -> None:
    pid = tmp_path / "s.pid"
    examples = str(example_skills_dir())
    argv = [sys.executable, "-m", "tests.support.misbehaving", examples, "--mode", "ok"]
    argv += ["--pid", str(pid)]
    stdio = StdioTransport(command=argv[0], args=tuple(argv[1:]), cwd=REPO_ROOT)
    trusted = build_skills_server(example_skills_dir())
    async with SkillHost() as host:
        with anyio.fail_after(60):
            await host.connect(ServerSpec(label="s", transport=stdio))
            await host.connect(ServerSpec(label="m", transport=InMemoryTransport(server=trusted)))
        one, two = seat(host), seat(host)
        for s in (one, two):
            await s.host.activate("s:refunds")
        os.kill(int(pid.read_text()), signal.SIGKILL)
        with anyio.fail_after(30):
            for s in (one, two):  # the first call notices the death; neither gets through
                with pytest.raises(ServerDisconnected):
                    await s.host.read_resource("s", EMAIL)
                assert (await s.host.activate("m:refunds")).block.verified
            assert (await host.wait_disconnected("s")).state == "disconnected"
            await two.host.reconnect("s")
            for s in (one, two):
                assert (await s.host.read_resource("s", EMAIL)).verified


async def test_a_hosts_approver_and_gates_are_not_replaced_after_it_is_built() -> None:
    host = SkillHost(approver=Approving())
    # Its parts hold what it was built with: a new value would silently not reach them.
    for name in ("approver", "cross_origin", "execution", "policy", "config", "cache"):
        with pytest.raises(UsageError, match="chosen when the host is built"):
            setattr(host, name, getattr(host, name))
