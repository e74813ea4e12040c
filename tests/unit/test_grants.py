"""Grants beyond activation in the approval book: given apart, bound to content, revoked
with the approval, and recorded in the audit trail."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import (
    Answer,
    ApprovalRecord,
    Change,
    Decision,
    Grants,
    Scope,
    content_hash,
    record_for,
)
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.book import ApprovalBook
from tests.support.approvals import HTTP, Scripted, make_entry, make_request, yes
from tests.support.keys import MemoryKeys

pytestmark = pytest.mark.anyio

V1 = {"notes.md": b"original notes\n"}
V2 = {"notes.md": b"rotated notes\n"}
TOOLS = {"allowed-tools": "Bash Write"}
BASH_WRITE = Grants(tools=("Bash", "Write"))


def book(tmp_path: Path, *answers: Answer) -> tuple[ApprovalBook, Scripted, FileApprovalStore]:
    prompter = Scripted(list(answers))
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    audit = AuditTrail(tmp_path / "audit.jsonl", clock=lambda: 5.0)
    return ApprovalBook(prompter, store=store, audit=audit), prompter, store


def events(tmp_path: Path) -> list[tuple[str, str]]:
    return [(e.event, e.decision) for e in read_events(tmp_path / "audit.jsonl").events]


@pytest.mark.threat("T14")
async def test_consent_carries_only_the_requested_tools_the_person_granted(tmp_path: Path) -> None:
    answer = Answer(Decision.APPROVE, Scope.REMEMBER, Grants(tools=("Bash", "Sudo", "Write")))
    approvals, _, store = book(tmp_path, answer)
    request = make_request(make_entry(V1, extra=TOOLS))
    given = await approvals.consent(request)
    held = await approvals.consent(request)
    assert given.grants == held.grants == BASH_WRITE
    assert (given.held, held.held) == (False, True)
    stored = store.get(request.key)
    assert stored is not None
    assert stored.grants == BASH_WRITE


@pytest.mark.threat("T14")
async def test_a_skill_that_requests_nothing_is_granted_no_tools(tmp_path: Path) -> None:
    approvals, _, _ = book(tmp_path, Answer(Decision.APPROVE, Scope.SESSION, BASH_WRITE))
    assert (await approvals.consent(make_request(make_entry(V1)))).grants == Grants()


@pytest.mark.threat("T14")
@pytest.mark.threat("T29")
async def test_grants_are_revoked_with_the_approval_when_the_content_changes(
    tmp_path: Path,
) -> None:
    approvals, prompter, _ = book(
        tmp_path, Answer(Decision.APPROVE, Scope.REMEMBER, BASH_WRITE), yes(Scope.REMEMBER)
    )
    await approvals.consent(make_request(make_entry(V1, extra=TOOLS)))
    changed = make_request(make_entry(V2, extra=TOOLS))
    assert await approvals.held(changed) is None
    answer = await approvals.consent(changed)
    assert answer.grants == Grants()
    assert len(prompter.questions) == 2
    assert events(tmp_path) == [("revocation", "revoked")]  # the host records the rest


@pytest.mark.threat("T13")
async def test_an_execution_grant_is_kept_only_with_a_record_of_exactly_this_content(
    tmp_path: Path,
) -> None:
    approvals, _, store = book(tmp_path, yes(Scope.ONCE), yes(Scope.REMEMBER))
    request = make_request(make_entry(V1))
    await approvals.consent(request)  # once: nothing recorded
    assert await approvals.held(request) is None
    assert await approvals.add_grant(request, Grants(execution=True)) is False
    await approvals.consent(request)  # remembered
    assert await approvals.held(request) == Grants()
    assert await approvals.add_grant(request, Grants(execution=True)) is True
    assert await approvals.held(request) == Grants(execution=True)
    stored = store.get(request.key)
    assert stored is not None
    assert stored.grants.execution
    assert await approvals.add_grant(make_request(make_entry(V2)), Grants(execution=True)) is False


@pytest.mark.threat("T27")
@pytest.mark.threat("T29")
async def test_a_grant_is_never_written_over_a_revocation_made_meanwhile_by_another_process(
    tmp_path: Path,
) -> None:
    keys = MemoryKeys()
    path = tmp_path / "approvals.json"
    other = FileApprovalStore(path, keys=keys.another_process())

    class RevokedMeanwhile(FileApprovalStore):
        """Another process revokes the skill just before this one's second write."""

        writes = 0

        def put(self, record: ApprovalRecord, *, replaces: ApprovalRecord | None = None) -> None:
            self.writes += 1
            if self.writes == 2:
                other.revoke(record.key, reason="changed, seen by another process")
            super().put(record, replaces=replaces)

    notes: list[str] = []
    approvals = ApprovalBook(
        Scripted([yes(Scope.REMEMBER)]),
        store=RevokedMeanwhile(path, keys=keys),
        notify=notes.append,
    )
    request = make_request(make_entry(V1))
    assert (await approvals.consent(request)).scope is Scope.REMEMBER
    assert await approvals.add_grant(request, Grants(execution=True)) is False
    assert notes[-1].startswith("the grant is not remembered")
    stored = FileApprovalStore(path, keys=keys.another_process()).get(request.key)
    assert stored is not None
    assert stored.revoked == "changed, seen by another process"
    assert stored.grants == Grants()


@pytest.mark.threat("T13")
async def test_a_session_approval_keeps_an_execution_grant_for_the_session_only(
    tmp_path: Path,
) -> None:
    approvals, _, store = book(tmp_path, yes(Scope.SESSION))
    request = make_request(make_entry(V1))
    await approvals.consent(request)
    assert await approvals.add_grant(request, Grants(execution=True)) is True
    assert await approvals.held(request) == Grants(execution=True)
    assert store.get(request.key) is None


@pytest.mark.threat("T14")
async def test_review_with_grant_tools_shows_them_granted_and_records_the_grant(
    tmp_path: Path,
) -> None:
    approvals, prompter, store = book(tmp_path, yes(Scope.REMEMBER))
    request = make_request(make_entry(V1, extra=TOOLS))
    answer = await approvals.review(request, grant_tools=True)
    assert prompter.questions[0].grant_tools
    assert answer.grants == BASH_WRITE
    stored = store.get(request.key)
    assert stored is not None
    assert stored.grants == BASH_WRITE
    assert events(tmp_path) == [("approval", "approved"), ("grant", "granted")]


@pytest.mark.threat("T14")
async def test_grant_without_a_prompt_records_the_tools_and_audits_each_decision(
    tmp_path: Path,
) -> None:
    approvals, _, store = book(tmp_path)
    request = make_request(make_entry(V1, extra=TOOLS))
    await approvals.grant(request, Answer(Decision.APPROVE, Scope.REMEMBER, BASH_WRITE))
    stored = store.get(request.key)
    assert stored is not None
    assert stored.grants == BASH_WRITE
    audited = read_events(tmp_path / "audit.jsonl").events
    assert [(e.event, e.scope) for e in audited] == [
        ("approval", "remember"),
        ("grant", "remember"),
    ]
    assert audited[0].content_hash == content_hash(request.record.entry)  # type: ignore[arg-type]
    assert audited[0].identity == HTTP


async def test_a_denied_review_is_audited_as_a_denial(tmp_path: Path) -> None:
    approvals, _, _ = book(tmp_path, Answer(Decision.DENY))
    await approvals.review(make_request(make_entry(V1)))
    assert events(tmp_path) == [("denial", "denied")]


@pytest.mark.threat("T36")
async def test_a_revocation_event_names_no_frontmatter_field(tmp_path: Path) -> None:
    approvals, _, _ = book(tmp_path, yes(Scope.REMEMBER), yes(Scope.ONCE))
    await approvals.consent(make_request(make_entry(V1, extra={"x-secret-field": "a"})))
    await approvals.consent(make_request(make_entry(V1, extra={"x-secret-field": "b"})))
    (event,) = read_events(tmp_path / "audit.jsonl").events
    assert event.event == "revocation"
    assert "x-secret-field" not in event.reason
    assert "1 frontmatter fields changed" in event.reason
    assert event.content_hash is not None


def test_a_record_hashes_its_content_as_content_hash_does() -> None:
    entry = make_entry(V1, extra=TOOLS)
    record = record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)
    assert record.content_hash == content_hash(entry)
    assert dataclasses.replace(Change(frontmatter=("a", "b")), revoked="x").summary(
        names=False
    ) == ("2 frontmatter fields changed; revoked before")


# --- tools that cannot be shown whole -------------------------------------------------------

PAST_THE_BOUND = {"allowed-tools": "Read Bash(" + "x" * 5000 + ")"}


@pytest.mark.threat("T14")
@pytest.mark.threat("T26")
def test_tools_too_long_to_show_whole_are_refused_with_the_reason() -> None:
    shown = make_request(make_entry(V1, extra={"allowed-tools": "Read Bash(" + "x" * 3000 + ")"}))
    assert shown.tools_refused is None
    refused = make_request(make_entry(V1, extra=PAST_THE_BOUND))
    assert refused.tools_refused is not None
    assert "5010 characters, more than the 4000" in refused.tools_refused
    tight = dataclasses.replace(shown, max_shown_tools=100)
    assert tight.tools_refused is not None
    policy = dataclasses.replace(shown, tools_grantable=False)
    assert policy.tools_refused == "the policy forbids granting them"  # whose is unknown
    ruled = dataclasses.replace(policy, tools_rule="grants.allowed_tools = 'never' in host code")
    assert ruled.tools_refused == (
        "the policy forbids granting them: rule grants.allowed_tools = 'never' in host code"
    )


@pytest.mark.threat("T14")
@pytest.mark.threat("T26")
async def test_no_way_of_granting_gives_tools_that_cannot_be_shown_whole(tmp_path: Path) -> None:
    request = make_request(make_entry(V1, extra=PAST_THE_BOUND))
    everything = Grants(tools=request.requested_tools)
    asked, _, _ = book(tmp_path / "asked", Answer(Decision.APPROVE, Scope.SESSION, everything))
    assert (await asked.consent(request)).grants == Grants()
    reviewed, _, _ = book(tmp_path / "reviewed", yes(Scope.SESSION))
    assert (await reviewed.review(request, grant_tools=True)).grants == Grants()
    granted, _, store = book(tmp_path / "granted")
    await granted.grant(request, Answer(Decision.APPROVE, Scope.REMEMBER, everything))
    await granted.add_grant(request, everything)
    stored = store.get(request.key)
    assert stored is not None
    assert stored.grants == Grants()
