"""Parked approvals: a question waits for an answer from outside the code that asked (the
gateway's approval socket, a web request), answered once, for the content shown, before
it expires, from any thread or event loop."""

from __future__ import annotations

import json
import threading

import anyio
import anyio.lowlevel
import pytest

from skillward.core.errors import AnswerRefused, ApprovalDenied, ApprovalTimedOut, StaleAnswer
from skillward.trust.approvals import Answer, Decision, NeverApproved, Scope
from skillward.trust.parking import ParkedApproval, ParkedApprovals
from skillward.trust.pending import PendingApproval
from tests.support.approvals import ROOT, make_entry, make_request

pytestmark = pytest.mark.anyio

WAIT = 10


def pending_for(
    notes: bytes = b"n\n", *, remember: str | None = None, root: str = ROOT
) -> PendingApproval:
    entry = make_entry({"notes.md": notes}, root=root)
    return PendingApproval(
        make_request(entry), verdict=NeverApproved(), remember_unavailable=remember
    )


async def test_a_parked_question_is_listed_with_its_facts_and_answered_once() -> None:
    parked = ParkedApprovals()
    pending = pending_for()
    question = parked.park(pending, waiter="alice", client="inspector")
    (listed,) = parked.pending()
    shown = json.loads(json.dumps(listed.to_json()))
    answer = parked.answer(
        question.id, "approve", "session", content_hash=shown["content_hash"], via="web"
    )
    assert listed is question
    assert shown["ref"] == "acme:refunds"
    assert shown["facts"]["files"][1]["path"] == "notes.md"
    assert shown["facts"]["scopes"] == ["once", "session", "remember"]
    assert "waiter" not in shown
    assert (answer.decision, answer.scope, answer.via) == (Decision.APPROVE, Scope.SESSION, "web")
    assert parked.pending() == []
    with pytest.raises(AnswerRefused, match="answered already"):
        parked.answer(question.id, "deny", content_hash=pending.content_hash)
    assert parked.take(pending, waiter="alice") == answer
    assert parked.take(pending, waiter="alice") is None  # once


@pytest.mark.threat("T60")
async def test_an_answer_for_other_content_approves_nothing_and_the_question_still_waits() -> None:
    parked = ParkedApprovals()
    pending = pending_for(b"rotated after it was shown\n")
    question = parked.park(pending)
    shown_before = pending_for().content_hash
    with pytest.raises(StaleAnswer):
        parked.answer(question.id, "approve", "remember", content_hash=shown_before)
    assert parked.pending() == [question]
    assert parked.take(pending) is None


@pytest.mark.threat("T60")
async def test_an_answer_the_question_did_not_offer_approves_nothing() -> None:
    parked = ParkedApprovals()
    pending = pending_for(remember="no keyring")
    question = parked.park(pending)
    digest = pending.content_hash
    for decision, scope in [("approve", "remember"), ("maybe", "once"), ("approve", "always")]:
        with pytest.raises(AnswerRefused):
            parked.answer(question.id, decision, scope, content_hash=digest)
    with pytest.raises(AnswerRefused, match="no question waits"):
        parked.answer("not-an-id", "approve", content_hash=digest)
    with pytest.raises(AnswerRefused, match="no question waits"):
        parked.answer(question.id, "approve", content_hash=digest, waiter="another session")
    assert parked.pending() == [question]


async def test_the_waiting_task_gets_an_answer_given_from_another_thread() -> None:
    parked = ParkedApprovals()
    pending = pending_for()
    question = parked.park(pending)
    got: list[Answer] = []

    def person() -> None:  # a web framework's handler, on a thread of its own
        parked.answer(question.id, Decision.APPROVE, Scope.ONCE, content_hash=pending.content_hash)

    async def wait() -> None:
        got.append(await parked.wait(question))

    thread = threading.Thread(target=person)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.lowlevel.checkpoint()  # the waiter is waiting
            thread.start()
    thread.join()
    assert [(a.decision, a.scope) for a in got] == [(Decision.APPROVE, Scope.ONCE)]


async def test_an_answer_from_another_thread_and_its_own_event_loop_wakes_the_waiter() -> None:
    parked = ParkedApprovals()
    pending = pending_for()
    question = parked.park(pending)
    answered = threading.Event()

    async def handler() -> None:  # an async web framework on another loop
        parked.answer(question.id, "approve", "session", content_hash=pending.content_hash)
        answered.set()

    def other_loop() -> None:
        anyio.run(handler)

    got: list[Answer] = []

    async def wait() -> None:
        got.append(await parked.wait(question))

    thread = threading.Thread(target=other_loop)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.lowlevel.checkpoint()
            thread.start()
    thread.join()
    assert answered.is_set()
    assert [a.scope for a in got] == [Scope.SESSION]


async def test_nobody_answering_in_time_is_a_timeout_never_a_refusal() -> None:
    parked = ParkedApprovals(lifetime=0.05)
    question = parked.park(pending_for())
    with anyio.fail_after(WAIT), pytest.raises(ApprovalTimedOut) as raised:
        await parked.wait(question)
    assert not isinstance(raised.value, ApprovalDenied)
    assert parked.pending() == []
    with pytest.raises(AnswerRefused):
        parked.answer(question.id, "approve", content_hash=question.content_hash)


async def test_an_expired_question_is_not_listed_and_cannot_be_answered() -> None:
    now = [1000.0]
    parked = ParkedApprovals(lifetime=60, clock=lambda: now[0])
    question = parked.park(pending_for())
    now[0] += 61
    assert parked.pending() == []
    with pytest.raises(AnswerRefused, match="expired"):
        parked.answer(question.id, "approve", content_hash=question.content_hash)


async def test_a_waiter_that_gives_up_withdraws_its_question() -> None:
    parked = ParkedApprovals()
    question = parked.park(pending_for())
    with anyio.move_on_after(0.01):
        await parked.wait(question)
    assert parked.pending() == []


async def test_one_question_per_waiter_and_skill_the_latest_content_replacing_the_last() -> None:
    parked = ParkedApprovals()
    first = parked.park(pending_for(), waiter="a")
    again = parked.park(pending_for(), waiter="a")
    other_waiter = parked.park(pending_for(), waiter="b")
    changed = parked.park(pending_for(b"changed\n"), waiter="a")
    assert again is first
    assert other_waiter is not first
    assert parked.pending(waiter="a") == [changed]
    with pytest.raises(AnswerRefused):
        parked.answer(first.id, "approve", content_hash=first.content_hash)


async def test_an_answer_taken_for_changed_content_is_dropped() -> None:
    parked = ParkedApprovals()
    question = parked.park(pending_for())
    parked.answer(question.id, "approve", content_hash=question.content_hash)
    assert parked.take(pending_for(b"changed since\n")) is None
    assert parked.take(pending_for()) is None  # dropped, not kept


async def test_questions_past_the_limit_drop_the_oldest_and_a_settled_approval_is_not_parked() -> (
    None
):
    parked = ParkedApprovals(limit=2)
    roots = [f"skill://acme/s{i}" for i in range(3)]
    questions = [parked.park(pending_for(root=root)) for root in roots]
    assert parked.pending() == questions[1:]
    with pytest.raises(ValueError, match="settled"):
        parked.park(PendingApproval(make_request(make_entry()), acting=True))


@pytest.mark.parametrize(
    ("reference", "matches"),
    [
        ("acme:refunds", True),
        ("refunds", True),
        ("acme:acme/billing/refunds", True),
        ("skill://acme/billing/refunds/SKILL.md", True),
        ("other:refunds", False),
        ("deploy", False),
        ("::", False),
    ],
)
def test_a_question_is_found_by_any_ref_that_names_its_skill(reference: str, matches: bool) -> None:
    question: ParkedApproval = ParkedApprovals().park(pending_for())
    assert question.matches(reference) is matches
