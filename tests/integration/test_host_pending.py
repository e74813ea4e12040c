"""The decision on loading a skill, made once per call: ``SkillHost.prepare`` holds it in
one pending approval (the policy checked, the pin found, the verdict computed once), a
front end asks the person with its facts, and ``SkillHost.load`` acts on their answer
for exactly that content. Real parts: the host, the book, the file store, a real (hostile)
MCP server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from skillward.core.errors import ApprovalDenied, PolicyDenied, UsageError
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host._activation import HELD_AGAIN
from skillward.host.skillhost import SkillHost
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ActivationRequest, Answer, Decision, Scope
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.policy import NoPolicy
from tests.support.approvals import CountedStore, CountingBook, Scripted, yes
from tests.support.gated import build_gated_tree, serve
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree
from tests.support.keys import MemoryKeys

pytestmark = pytest.mark.anyio

WAIT = 30


def hostile(tmp_path: Path) -> tuple[ServerSpec, HostileState]:
    build_hostile_tree(tmp_path / "tree")
    server, state = build_hostile_server(tmp_path / "tree")
    return ServerSpec(label="hostile", transport=InMemoryTransport(server=server)), state


def counted(tmp_path: Path, prompter: Scripted) -> tuple[CountingBook, CountedStore]:
    store = CountedStore(FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys()))
    return CountingBook(prompter, store=store), store


async def test_a_front_end_shows_the_facts_and_loads_on_the_persons_answer(
    tmp_path: Path,
) -> None:
    spec, _ = hostile(tmp_path)
    nobody = Scripted()  # the book's own prompter: never asked, the front end asks
    book, store = counted(tmp_path, nobody)
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=book) as host:
            await host.connect(spec)
            pending = await host.prepare("good")
            asked = (book.verdicts, store.gets)
            facts = pending.facts
            activation = await host.load(pending, Answer(Decision.APPROVE, Scope.SESSION))
            again = await host.prepare("good")
            loaded_again = await host.load(again)
    assert not pending.settled
    assert asked == (1, 1)  # the verdict, and the store read it takes, once
    assert facts.ref == "hostile:good"
    assert facts.content_hash == pending.content_hash == activation.content_hash
    assert [f.path for f in facts.files] == ["SKILL.md", "assets/a.bin", "ref/guide.md"]
    assert facts.model_dump(mode="json")["scopes"] == ["once", "session", "remember"]
    assert activation.block.kind == "skill"
    assert again.settled  # approved for the session, exactly this content
    assert loaded_again.block.kind == "skill"
    assert nobody.asked == []
    assert (book.verdicts, store.gets) == (2, 2)  # one each for the second call


async def test_a_pending_approval_loads_once_and_only_in_the_session_that_prepared_it(
    tmp_path: Path,
) -> None:
    spec, _ = hostile(tmp_path)
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=CountingBook(Scripted([yes(Scope.ONCE)] * 3))) as host:
            await host.connect(spec)
            pending = await host.prepare("good")
            async with host.session(approver=CountingBook(Scripted())) as other:
                with pytest.raises(UsageError, match="not prepared in this session"):
                    await other.load(pending, Answer(Decision.APPROVE))
                assert other.active() == []
            await host.load(pending, Answer(Decision.APPROVE))
            with pytest.raises(UsageError, match="loaded once"):
                await host.load(pending, Answer(Decision.APPROVE))


@pytest.mark.threat("T9")
async def test_an_answer_approves_only_the_content_it_was_asked_about(tmp_path: Path) -> None:
    spec, state = hostile(tmp_path)
    book, _ = counted(tmp_path, Scripted())
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=book) as host:
            await host.connect(spec)
            pending = await host.prepare("rotating")
            # The server changes a file while the person reads the question.
            state.rotated = True
            await host.refresh("hostile")
            await host.load(pending, Answer(Decision.APPROVE, Scope.REMEMBER))
            now = await host.prepare("rotating")
    assert not now.settled  # the approval binds what the person was shown, not what is listed
    assert now.change is not None
    assert now.change.modified == ("skill://rotating/notes.md",)


async def test_an_unsettled_pending_approval_without_an_answer_loads_nothing(
    tmp_path: Path,
) -> None:
    spec, state = hostile(tmp_path)
    trail = tmp_path / "audit.jsonl"
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=CountingBook(Scripted()), audit=AuditTrail(trail)) as host:
            await host.connect(spec)
            pending = await host.prepare("good")
            with pytest.raises(ApprovalDenied):
                await host.load(pending)
            assert host.active() == []
    assert ("resources/read", "skill://good/SKILL.md") not in state.requests
    (denial,) = [e for e in read_events(trail).events if e.event == "denial"]
    assert denial.reason == "not approved: no answer"


async def test_a_skill_the_policy_refuses_has_no_pending_approval_and_the_refusal_is_recorded(
    tmp_path: Path,
) -> None:
    class DenyGood(NoPolicy):
        def check_activation(self, request: ActivationRequest) -> None:
            if request.record.name == "good":
                raise PolicyDenied("good is not allowed here", server="hostile")

    spec, _ = hostile(tmp_path)
    book, store = counted(tmp_path, Scripted())
    trail = tmp_path / "audit.jsonl"
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=book, policy=DenyGood(), audit=AuditTrail(trail)) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied):
                await host.prepare("good")
    assert (book.verdicts, store.gets) == (0, 0)  # refused before any record is read
    assert [e.event for e in read_events(trail).events] == ["policy_denial"]


@pytest.mark.threat("T9")
async def test_a_fresh_pending_approval_is_of_the_content_the_server_serves_now(
    tmp_path: Path,
) -> None:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    served = serve(tmp_path / "acme", "acme")
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=CountingBook(Scripted())) as host:
            await host.connect(served.spec)
            shown = await host.prepare("deploy")
            # The server changes a file; the listing the host holds does not say so.
            served.change("deploy/notes.md", b"changed after the person was shown it\n")
            listed = await host.prepare("deploy")
            now = await host.prepare("deploy", fresh=True)
            after = await host.prepare("deploy")
            plain = await host.prepare("plain", fresh=True)
            assert plain.request.record is host.resolve("plain")  # unchanged: the same record
    assert listed.content_hash == shown.content_hash
    assert now.content_hash != shown.content_hash
    changed = set(now.facts.files) - set(listed.facts.files)
    assert [f.path for f in changed] == ["notes.md"]
    assert after.content_hash == now.content_hash  # the registry holds what was fetched


async def test_a_skill_given_again_to_the_context_that_holds_it_is_a_recorded_decision(
    tmp_path: Path,
) -> None:
    """read_skill of a skill this context loaded, its content unchanged, asks nobody and
    fetches nothing, and the audit trail still records it, bound to the held content."""
    spec, state = hostile(tmp_path)
    trail = tmp_path / "audit.jsonl"
    book, _ = counted(tmp_path, Scripted([yes(Scope.SESSION)]))
    with anyio.fail_after(WAIT):
        async with SkillHost(approver=book, audit=AuditTrail(trail)) as host:
            await host.connect(spec)
            first = await host.read_skill_block("good")
            reads = len(state.requests)
            again = await host.read_skill_block("good")
            assert len(state.requests) == reads  # served from what was verified
    assert first.kind == again.kind == "skill"
    approvals = [e for e in read_events(trail).events if e.event == "approval"]
    assert [e.reason for e in approvals] == ["approved when asked", HELD_AGAIN]
    assert approvals[0].content_hash == approvals[1].content_hash is not None
    assert approvals[1].decision == "approved"
