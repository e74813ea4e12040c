"""One session's parts, each alone over a real ``Shared`` (a hostile server and the
example skills, in memory) and a real acting window: ``Activator`` (activation and the
ends of content), ``Gates`` (cross-origin and execution), ``Reads`` (the read paths)
and ``Tools`` (what the model is shown and may call)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from skillward.cache.seam import NoCache
from skillward.core.context import ContextBlock
from skillward.core.errors import (
    ApprovalDenied,
    CrossOriginDenied,
    DigestMismatch,
    ExecutionDenied,
    ReactivationRequired,
    UnlistedResource,
)
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host._activation import Activator
from skillward.host._gates import Gates
from skillward.host._reads import Reads
from skillward.host._shared import Shared
from skillward.host._tools import Tools
from skillward.host._window import ActingWindow
from skillward.host.types import HostConfig
from skillward.serve.catalog import example_skills_dir
from skillward.serve.server import build_skills_server
from skillward.trust.approvals import Decision
from skillward.trust.policy import GrantKind, GrantMode, NoPolicy, Policy
from tests.support.doubles import Approving, CrossOrigin, Execution
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree

pytestmark = pytest.mark.anyio


@dataclass
class Parts:
    shared: Shared
    state: HostileState
    window: ActingWindow
    approver: Approving
    cross_origin: CrossOrigin
    execution: Execution
    blocks: list[ContextBlock] = field(default_factory=list)

    def activator(self) -> Activator:
        return Activator(self.shared, self.window, self.approver)

    def gates(self) -> Gates:
        return Gates(
            self.shared,
            self.window,
            approver=self.approver,
            cross_origin=self.cross_origin,
            execution=self.execution,
        )

    def reads(self) -> Reads:
        return Reads(self.shared, self.window, self.activator(), self.gates())

    def tools(self) -> Tools:
        activator, gates = self.activator(), self.gates()
        reads = Reads(self.shared, self.window, activator, gates)
        return Tools(self.shared, self.window, activator, reads, gates)

    async def activate(self, reference: str) -> None:
        record = await self.shared.lookup(reference)
        await self.activator().activate(record)

    def reads_sent(self) -> list[str | None]:
        return [uri for method, uri in self.state.requests if method == "resources/read"]


@asynccontextmanager
async def parts(
    tmp_path: Path, *, policy: Policy | None = None, config: HostConfig | None = None
) -> AsyncIterator[Parts]:
    build_hostile_tree(tmp_path / "hostile")
    server, state = build_hostile_server(tmp_path / "hostile")
    trusted = build_skills_server(example_skills_dir())
    shared = Shared(
        config=config or HostConfig(), policy=policy or NoPolicy(), cache=NoCache(), audit=None
    )
    with anyio.fail_after(60):
        await shared.open()
        try:
            for label, served in (("hostile", server), ("trusted", trusted)):
                await shared.connect(
                    ServerSpec(label=label, transport=InMemoryTransport(server=served))
                )
            blocks: list[ContextBlock] = []
            window = ActingWindow(blocks.append)
            yield Parts(shared, state, window, Approving(), CrossOrigin(), Execution(), blocks)
        finally:
            await shared.aclose()


# --- Activator ------------------------------------------------------------------------------


async def test_an_activation_is_asked_first_and_opens_the_window_only_when_approved(
    tmp_path: Path,
) -> None:
    async with parts(tmp_path) as p:
        p.approver.answer = Decision.DENY
        with pytest.raises(ApprovalDenied):
            await p.activate("good")
        assert p.window.active() == []
        assert p.reads_sent() == []  # nothing fetched for a skill that was refused
        p.approver.answer = Decision.APPROVE
        await p.activate("good")
        assert [a.record.name for a in p.window.active()] == ["good"]
        assert p.reads_sent() == ["skill://good/SKILL.md"]
        assert [b.kind for b in p.blocks] == ["skill"]


@pytest.mark.threat("T33")
async def test_a_failed_verification_ends_the_content_and_keeps_the_activation(
    tmp_path: Path,
) -> None:
    async with parts(tmp_path) as p:
        await p.activate("wrong-digest")
        reads = p.reads()
        with pytest.raises(DigestMismatch):
            await reads.read_file("wrong-digest", "ref/guide.md")
        [ended] = p.window.active()
        assert isinstance(ended.ended, DigestMismatch)
        with pytest.raises(ReactivationRequired):
            await reads.read_resource("hostile", "skill://wrong-digest/SKILL.md")


# --- Gates --------------------------------------------------------------------------------------


@pytest.mark.threat("T13")
async def test_execution_is_asked_about_for_each_mcp_skill_in_the_window(tmp_path: Path) -> None:
    async with parts(tmp_path) as p:
        gates = p.gates()
        await gates.authorize_execution("bash", detail="ls")  # nothing acting: not asked
        assert p.execution.asked == []
        await p.activate("good")
        await p.activate("trusted:refunds")
        p.execution.answer = Decision.APPROVE
        await gates.authorize_execution("bash", detail="ls")
        assert [q.skill.origin for q in p.execution.asked if q.skill] == ["hostile", "trusted"]


@pytest.mark.threat("T13")
async def test_a_policy_that_forbids_execution_refuses_without_asking(tmp_path: Path) -> None:
    class NoExecution(NoPolicy):
        def grant_mode(self, kind: GrantKind) -> GrantMode:
            return "never" if kind == "execution" else "prompt"

    async with parts(tmp_path, policy=NoExecution()) as p:
        await p.activate("good")
        with pytest.raises(ExecutionDenied, match="policy"):
            await p.gates().authorize_execution("bash")
        assert p.execution.asked == []


@pytest.mark.threat("T16")
@pytest.mark.threat("T37")
async def test_a_cross_origin_read_is_asked_about_each_time_another_origin_is_in_context(
    tmp_path: Path,
) -> None:
    async with parts(tmp_path) as p:
        gates = p.gates()
        await gates.check_cross_origin("trusted", "skill://x/y")  # nothing in context
        p.window.seen(["hostile"])
        p.cross_origin.answer = Decision.APPROVE
        await gates.check_cross_origin("trusted", "skill://x/y")
        p.cross_origin.answer = Decision.DENY
        with pytest.raises(CrossOriginDenied):
            await gates.check_cross_origin("trusted", "skill://x/y")
        assert [q.acting for q in p.cross_origin.asked] == [("hostile",), ("hostile",)]


# --- Reads ----------------------------------------------------------------------------------


@pytest.mark.threat("T8")
async def test_a_read_under_an_active_skill_is_held_to_its_pinned_entry(tmp_path: Path) -> None:
    async with parts(tmp_path) as p:
        await p.activate("extra-file")
        reads = p.reads()
        before = p.reads_sent()
        with pytest.raises(UnlistedResource):
            await reads.read_resource("hostile", "skill://extra-file/extra.md")
        assert p.reads_sent() == before  # refused without asking the server
        block = await reads.read_resource("hostile", "skill://extra-file/ref/guide.md")
        assert block.verified
        listing = await reads.read_resource("hostile", "skill://extra-file/ref")
        assert listing.kind == "directory"


# --- Tools ----------------------------------------------------------------------------------


async def test_the_tools_offer_the_catalogs_refs_and_answer_in_blocks(tmp_path: Path) -> None:
    async with parts(tmp_path) as p:
        tools = p.tools()
        [_, read_skill, _] = tools.tool_definitions("anthropic")
        refs = read_skill["input_schema"]["properties"]["ref"]["enum"]
        assert "good" in refs
        assert p.window.context_origins() == {"hostile", "trusted"}  # shown, so in context
        assert await tools.handle_tool_call("someone_elses_tool", {}) is None
        bad = await tools.handle_tool_call("read_skill", "[not an object")
        assert bad is not None
        assert bad.trust == "host"
        block = await tools.handle_tool_call("read_skill", {"ref": "good"})
        assert block is not None
        assert block.kind == "skill"
        assert [a.record.name for a in p.window.active()] == ["good"]
