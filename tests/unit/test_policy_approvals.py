"""The approval book under a policy: the longest scope, the oldest record, and the keyring."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from skillward.core.errors import PolicyDenied
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ActivationRequest, ApprovalRules, Decision, Grants, Scope
from skillward.trust.book import ApprovalBook
from tests.support.approvals import Scripted, make_entry, make_request, yes
from tests.support.keys import MemoryKeys
from tests.support.policies import PolicyDirs

pytestmark = pytest.mark.anyio

DAY = 86_400.0


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class World:
    store: FileApprovalStore
    clock: Clock
    notes: list[str]

    def book(self, prompter: Scripted, rules: ApprovalRules) -> ApprovalBook:
        return ApprovalBook(
            prompter, store=self.store, clock=self.clock, notify=self.notes.append, rules=rules
        )


@pytest.fixture
def world(tmp_path: Path) -> World:
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    return World(store, Clock(), [])


async def asks_again(world: World, rules: ApprovalRules, request: ActivationRequest) -> bool:
    """Whether a new book (a new process) under ``rules`` asks about ``request`` (and is
    refused: the script says no)."""
    prompter = Scripted()
    decision = await world.book(prompter, rules).decide(request)
    assert (decision is Decision.DENY) == bool(prompter.asked)
    return bool(prompter.asked)


def rules(tmp_path: Path, text: str) -> ApprovalRules:
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin("version = 1\n" + text)
    return dirs.load().approval_rules()


@pytest.mark.threat("T40")
async def test_a_session_cap_keeps_a_remember_answer_for_this_session_only(
    world: World, tmp_path: Path
) -> None:
    capped = rules(tmp_path, '[approvals]\npersist = "session"\n')
    request = make_request(make_entry())
    prompter = Scripted([yes(Scope.REMEMBER)])
    approvals = world.book(prompter, capped)
    assert (await approvals.question(request, None)).remember_unavailable == capped.scope_reason
    for _ in range(2):
        assert await approvals.decide(request) is Decision.APPROVE
    assert len(prompter.asked) == 1
    assert world.store.records() == []
    assert world.notes == [f"approved for this session only: {capped.scope_reason}"]
    assert await asks_again(world, capped, request)


@pytest.mark.threat("T40")
async def test_a_once_cap_records_nothing_not_even_for_the_session(
    world: World, tmp_path: Path
) -> None:
    capped = rules(tmp_path, '[approvals]\npersist = "once"\n')
    prompter = Scripted([yes(Scope.SESSION), yes(Scope.SESSION)])
    approvals = world.book(prompter, capped)
    request = make_request(make_entry())
    for _ in range(2):
        assert await approvals.decide(request) is Decision.APPROVE
    assert len(prompter.asked) == 2


@pytest.mark.threat("T40")
async def test_remembered_approvals_are_not_honoured_once_the_policy_caps_the_scope(
    world: World, tmp_path: Path
) -> None:
    request = make_request(make_entry())
    assert await world.book(Scripted([yes(Scope.REMEMBER)]), ApprovalRules()).decide(request) is (
        Decision.APPROVE
    )
    assert len(world.store.records()) == 1
    assert not await asks_again(world, ApprovalRules(), request)
    assert await asks_again(world, rules(tmp_path, '[approvals]\npersist = "session"\n'), request)


@pytest.mark.threat("T40")
async def test_a_grant_beyond_the_cap_is_a_policy_denial_naming_the_rule(
    world: World, tmp_path: Path
) -> None:
    capped = rules(tmp_path, 'contact = "desk"\n[approvals]\npersist = "session"\n')
    approvals = world.book(Scripted(), capped)
    with pytest.raises(PolicyDenied) as caught:
        await approvals.grant(make_request(make_entry()), yes(Scope.REMEMBER))
    assert "approvals.persist = 'session'" in caught.value.message
    assert "contact: desk" in caught.value.message
    assert await approvals.grant(make_request(make_entry()), yes(Scope.SESSION)) is Scope.SESSION


async def test_a_grant_beyond_the_users_own_cap_names_their_file_and_no_administrator(
    world: World, tmp_path: Path
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    path = dirs.user('version = 1\n[approvals]\npersist = "session"\n')
    approvals = world.book(Scripted(), dirs.load().approval_rules())
    with pytest.raises(PolicyDenied) as caught:
        await approvals.grant(make_request(make_entry()), yes(Scope.REMEMBER))
    assert f"in {path}:3 (your own policy file)" in caught.value.message
    for text in (caught.value.message, caught.value.hint):
        assert "administrator" not in text
        assert "contact" not in text


@pytest.mark.threat("T40")
async def test_an_approval_older_than_max_age_days_is_asked_about_again(
    world: World, tmp_path: Path
) -> None:
    aged = rules(tmp_path, "[approvals]\nmax_age_days = 30\n")
    request = make_request(make_entry())
    first = Scripted([yes(Scope.REMEMBER)])
    assert await world.book(first, aged).decide(request) is Decision.APPROVE
    world.clock.now += 29 * DAY
    assert not await asks_again(world, aged, request)
    world.clock.now += 2 * DAY
    assert await asks_again(world, aged, request)


@pytest.mark.threat("T40")
async def test_require_recommended_keeps_a_host_key_provider_from_remembering(
    world: World, tmp_path: Path
) -> None:
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin("version = 1\n[keyring]\nrequire_recommended = true\n")
    strict = dirs.load().approval_rules(world.store)
    approvals = world.book(Scripted([yes(Scope.REMEMBER)]), strict)
    assert await approvals.decide(make_request(make_entry())) is Decision.APPROVE
    assert world.store.records() == []
    assert "keyring.require_recommended = True" in world.notes[0]
    with pytest.raises(PolicyDenied):
        await approvals.grant(make_request(make_entry()), yes(Scope.REMEMBER))


@pytest.mark.threat("T40")
async def test_require_recommended_honours_nothing_already_in_a_refused_store(
    world: World, tmp_path: Path
) -> None:
    request = make_request(make_entry(extra={"allowed-tools": "Bash"}))
    assert await world.book(Scripted([yes(Scope.REMEMBER)]), ApprovalRules()).decide(request) is (
        Decision.APPROVE
    )
    (before,) = world.store.records()
    dirs = PolicyDirs(tmp_path / "policy")
    dirs.admin("version = 1\n[keyring]\nrequire_recommended = true\n")
    strict = dirs.load().approval_rules(world.store)
    assert await asks_again(world, strict, request)
    approvals = world.book(Scripted(), strict)
    assert await approvals.held(request) is None
    assert await approvals.add_grant(request, Grants(tools=("Bash",), execution=True)) is False
    assert world.store.records() == [before]


@pytest.mark.threat("T40")
@pytest.mark.parametrize(
    ("persist", "recorded"), [("session", Scope.SESSION), ("once", Scope.ONCE)]
)
async def test_the_answer_names_the_scope_recorded_not_the_one_chosen(
    world: World, tmp_path: Path, persist: str, recorded: Scope
) -> None:
    capped = rules(tmp_path, f'[approvals]\npersist = "{persist}"\n')
    approvals = world.book(Scripted([yes(Scope.REMEMBER)]), capped)
    answer = await approvals.consent(make_request(make_entry()))
    assert answer.decision is Decision.APPROVE
    assert answer.scope is recorded


async def test_records_carry_the_version_of_the_policy_in_force(
    world: World, tmp_path: Path
) -> None:
    versioned = rules(tmp_path, '[grants]\nexecution = "never"\n')
    approvals = world.book(Scripted([yes(Scope.REMEMBER)]), versioned)
    await approvals.decide(make_request(make_entry()))
    (record,) = world.store.records()
    assert record.policy_version == versioned.version
    assert versioned.version.startswith("sha256:")
