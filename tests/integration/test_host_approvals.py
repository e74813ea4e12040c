"""Content-bound approvals through a real SkillHost and a real (hostile) MCP server."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from skillward.core.context import ContextBlock
from skillward.core.errors import ApprovalDenied, SkillChanged
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host.skillhost import SkillHost
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import Answer, Decision, Question, Scope
from skillward.trust.book import ApprovalBook
from tests.support.approvals import Scripted, yes
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree
from tests.support.keys import MemoryKeys

pytestmark = pytest.mark.anyio


@dataclass
class World:
    spec: ServerSpec
    state: HostileState
    store: FileApprovalStore
    blocks: list[ContextBlock] = field(default_factory=list)

    def host(self, prompter: Scripted | Viewing) -> SkillHost:
        book = ApprovalBook(prompter, store=self.store)
        return SkillHost(approver=book, sink=self.blocks.append)


@pytest.fixture
def world(tmp_path: Path) -> World:
    build_hostile_tree(tmp_path / "tree")
    server, state = build_hostile_server(tmp_path / "tree")
    spec = ServerSpec(label="hostile", transport=InMemoryTransport(server=server))
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    return World(spec, state, store)


@pytest.mark.threat("T9")
async def test_a_skill_that_changes_while_loaded_loses_its_remembered_approval(
    world: World,
) -> None:
    prompter = Scripted([yes(Scope.REMEMBER)])
    with anyio.fail_after(30):
        async with world.host(prompter) as host:
            await host.connect(world.spec)
            await host.activate("rotating")
            with pytest.raises(SkillChanged):
                await host.read_file("rotating", "notes.md")
            key = host.resolve("rotating").key
            stored = world.store.get(key)
            assert stored is not None
            assert stored.revoked is not None
            # The server goes back to the content that was approved: still asked again.
            world.state.rotated = False
            await host.refresh("hostile")
            with pytest.raises(ApprovalDenied):
                await host.activate("rotating")
    assert len(prompter.questions) == 2
    change = prompter.questions[1].change
    assert change is not None
    assert change.revoked


@pytest.mark.threat("T22")
async def test_a_remembered_approval_is_honoured_by_a_new_host_for_the_same_server_only(
    world: World, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        async with world.host(Scripted([yes(Scope.REMEMBER)])) as host:
            await host.connect(world.spec)
            await host.activate("good")
        later = Scripted()
        async with world.host(later) as host:
            await host.connect(world.spec)
            await host.activate("good")
        assert later.asked == []
        # Same label, another server with the same skills: never approved there.
        other, _ = build_hostile_server(tmp_path / "tree")
        moved = ServerSpec(label="hostile", transport=InMemoryTransport(server=other))
        elsewhere = Scripted()
        async with world.host(elsewhere) as host:
            await host.connect(moved)
            with pytest.raises(ApprovalDenied):
                await host.activate("good")
    change = elsewhere.questions[0].change
    assert change is not None
    assert change.server is not None


async def denied(world: World, prompter: Scripted | Viewing) -> None:
    """Ask about "good" through a new host, which must refuse it."""
    with anyio.fail_after(30):
        async with world.host(prompter) as host:
            await host.connect(world.spec)
            with pytest.raises(ApprovalDenied):
                await host.activate("good")
            assert host.active() == []


async def test_the_approver_is_told_how_the_server_is_reached(world: World) -> None:
    prompter = Scripted()
    await denied(world, prompter)
    assert prompter.questions[0].request.identity == world.spec.identity


@dataclass
class Viewing:
    """Views SKILL.md before answering, as a person choosing "view" does."""

    seen: list[str] = field(default_factory=list)

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        for question in questions:
            assert question.request.viewer is not None
            self.seen.append(await question.request.viewer())
        return [Answer(Decision.DENY) for _ in questions]


@pytest.mark.threat("T20")
async def test_viewing_skill_md_shows_verified_bytes_and_hands_nothing_to_the_model(
    world: World,
) -> None:
    viewing = Viewing()
    await denied(world, viewing)
    assert viewing.seen[0].startswith("---\nname: good\n")
    assert world.blocks == []  # nothing reached the sink, so nothing reached a model
    reads = [uri for method, uri in world.state.requests if method == "resources/read"]
    assert reads == ["skill://good/SKILL.md"]  # SKILL.md only, fetched when asked to view
