"""A web backend's approvals through the one approval flow: a ``SkillHost`` decides through a
``WebApprover``; the person answers a parked question from a web handler on another
thread while the host waits, or a deferred question in a later request, on this replica or
another sharing the key, with a signed token that is valid only for the content shown.
Real parts: the host, the book, the reference server (in memory), real threads."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from skillward.core.errors import (
    AnswerRefused,
    ApprovalDenied,
    ApprovalTimedOut,
    InvalidApprovalToken,
    StaleAnswer,
)
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust.approvals import Scope
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.parking import ParkedApprovals
from skillward.trust.tokens import ApprovalTokens
from skillward.trust.web import WebApprover
from tests.support.gated import DEPLOY_BODY_LINE, Served, build_gated_tree, serve

pytestmark = pytest.mark.anyio

WAIT = 30
KEY = b"replicas share this key, 32 bytes"


@pytest.fixture
def served(tmp_path: Path) -> Served:
    build_gated_tree(tmp_path / "acme", tmp_path / "marker")
    return serve(tmp_path / "acme", "acme")


def host_over(approver: WebApprover, audit: AuditTrail | None = None) -> SkillHost:
    return SkillHost(config=HostConfig(local_dirs=()), approver=approver, audit=audit)


@pytest.mark.threat("T60")
async def test_a_web_handler_on_another_thread_answers_while_the_host_waits(
    served: Served, tmp_path: Path
) -> None:
    audit = AuditTrail(tmp_path / "audit.jsonl")
    approver = WebApprover(waiter="alice", audit=audit)
    shown: list[dict[str, object]] = []

    def handler() -> None:  # the person's browser, served by a framework's worker thread
        while not approver.waiting():
            threading.Event().wait(0.01)
        (question,) = approver.waiting()
        shown.append(question.to_json())
        approver.answer(question.id, "approve", "session", content_hash=question.content_hash)

    thread = threading.Thread(target=handler, daemon=True)
    with anyio.fail_after(WAIT):
        async with host_over(approver, audit) as host:
            await host.connect(served.spec)
            thread.start()
            activation = await host.activate("deploy")
            again = await host.prepare("deploy")
    thread.join(WAIT)
    assert DEPLOY_BODY_LINE in activation.block.text()
    assert again.settled  # approved for this session
    assert shown[0]["ref"] == "acme:deploy"
    assert shown[0]["content_hash"] == activation.content_hash
    (approval,) = [e for e in read_events(tmp_path / "audit.jsonl").events if e.event == "approval"]
    assert approval.via == "web"
    assert approval.reason == "approved through the host's web approval"


@pytest.mark.threat("T60")
async def test_nobody_answering_the_web_question_is_reported_as_a_timeout(
    served: Served, tmp_path: Path
) -> None:
    audit = AuditTrail(tmp_path / "audit.jsonl")
    approver = WebApprover(parked=ParkedApprovals(lifetime=0.1), audit=audit)
    with anyio.fail_after(WAIT):
        async with host_over(approver, audit) as host:
            await host.connect(served.spec)
            with pytest.raises(ApprovalTimedOut) as raised:
                await host.activate("deploy")
            assert host.active() == []
    assert not isinstance(raised.value, ApprovalDenied)
    (denial,) = [e for e in read_events(tmp_path / "audit.jsonl").events if e.event == "denial"]
    assert denial.reason == "not approved: ApprovalTimedOut"


@pytest.mark.threat("T61")
async def test_a_deferred_approval_resumes_on_another_replica_for_exactly_the_content_shown(
    served: Served,
) -> None:
    with anyio.fail_after(WAIT):
        asking = WebApprover(tokens=ApprovalTokens(KEY))
        async with host_over(asking) as first:
            await first.connect(served.spec)
            asked = await first.prepare("deploy")
            token = asking.defer(asked)
            shown = asked.facts.model_dump(mode="json")
        # A later request, on another replica sharing the key.
        replica = WebApprover(tokens=ApprovalTokens(KEY))
        async with host_over(replica) as second:
            await second.connect(served.spec)
            pending = await second.prepare("deploy")
            answer = replica.resume(token, pending, "approve", "once")
            activation = await second.load(pending, answer)
    assert shown["content_hash"] == activation.content_hash
    assert DEPLOY_BODY_LINE in activation.block.text()


@pytest.mark.threat("T61")
async def test_a_deferred_approval_is_refused_for_changed_content_another_skill_expiry_or_tampering(
    served: Served,
) -> None:
    now = [1000.0]
    tokens = ApprovalTokens(KEY, lifetime=60, clock=lambda: now[0])
    approver = WebApprover(tokens=tokens)
    with anyio.fail_after(WAIT):
        async with host_over(approver) as host:
            await host.connect(served.spec)
            shown = await host.prepare("deploy")
            tokens_given = [approver.defer(shown) for _ in range(4)]
            other = await host.prepare("plain")
            with pytest.raises(InvalidApprovalToken, match="another skill"):
                approver.resume(tokens_given[0], other, "approve")
            forged = tokens_given[1][:-1] + ("0" if tokens_given[1][-1] != "0" else "1")
            with pytest.raises(InvalidApprovalToken, match="not signed"):
                approver.resume(forged, shown, "approve")
            with pytest.raises(InvalidApprovalToken, match="another session"):
                WebApprover(tokens=tokens, waiter="mallory").resume(
                    tokens_given[1], shown, "approve"
                )
        served.change("deploy/notes.md", b"swapped after the person saw it\n")
        now_served = serve(served.directory, "acme")  # a replica that lists it as it is now
        async with host_over(approver) as later:
            await later.connect(now_served.spec)
            changed = await later.prepare("deploy")
            with pytest.raises(StaleAnswer):
                approver.resume(tokens_given[2], changed, "approve")
            now[0] += 61
            fresh = await later.prepare("deploy")
            with pytest.raises(InvalidApprovalToken, match="expired"):
                approver.resume(tokens_given[3], fresh, "approve")
            assert later.active() == []


@pytest.mark.threat("T61")
async def test_a_deferred_approval_of_a_scope_not_offered_approves_nothing(served: Served) -> None:
    approver = WebApprover(tokens=ApprovalTokens(KEY))  # no store: remember is not offered
    with anyio.fail_after(WAIT):
        async with host_over(approver) as host:
            await host.connect(served.spec)
            pending = await host.prepare("deploy")
            token = approver.defer(pending)
            assert Scope.REMEMBER not in pending.facts.scopes
            with pytest.raises(AnswerRefused, match="not offered"):
                approver.resume(token, pending, "approve", "remember")
