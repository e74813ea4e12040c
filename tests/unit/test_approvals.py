"""Content-bound approvals: the pure decision (approvals.py), and the book that remembers
and asks (book.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import filelock
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.config import Limits
from skillward.core.errors import RememberUnavailable
from skillward.core.origins import SkillKey
from skillward.core.wire import SkillEntry, parse_entry
from skillward.gateway._sessions import Sessions
from skillward.host.skillhost import SkillHost
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import (
    ApprovalRecord,
    Approved,
    Changed,
    Decision,
    NeverApproved,
    Scope,
    assess,
    assess_any,
    record_for,
)
from skillward.trust.book import ApprovalBook
from tests.support.approvals import (
    HTTP,
    SKILL_MD,
    CountedStore,
    Scripted,
    make_entry,
    make_request,
    yes,
)
from tests.support.keys import MemoryKeys

V1 = {"notes.md": b"original notes\n", "templates/email.md": b"Hello\n"}
V2 = {**V1, "notes.md": b"rotated notes\n"}


def approve(entry_files: dict[str, bytes]) -> ApprovalRecord:
    entry = make_entry(entry_files)
    return record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)


# --- the decision function ------------------------------------------------------------------


def test_the_same_entry_from_the_same_server_is_approved() -> None:
    record = approve(V1)
    assert isinstance(assess(make_entry(V1), HTTP, record), Approved)


CONTENT = st.dictionaries(
    st.sampled_from(["notes.md", "a.md", "templates/email.md"]),
    st.sampled_from([b"one\n", b"two\n", b"three!\n"]),
    max_size=3,
)
FIELDS = st.dictionaries(st.sampled_from(["license", "allowed-tools"]), st.sampled_from(["x", 1]))


@pytest.mark.threat("T9")
@given(
    then=st.tuples(CONTENT, FIELDS, st.booleans()),
    now=st.tuples(CONTENT, FIELDS, st.booleans()),
    moved=st.booleans(),
    revoked=st.sampled_from([None, "", "changed"]),
    order=st.sampled_from(["sorted", "reversed", "doubled"]),
)
def test_a_record_approves_exactly_when_identity_files_and_fields_are_unchanged(
    then: tuple[dict[str, bytes], dict[str, object], bool],
    now: tuple[dict[str, bytes], dict[str, object], bool],
    moved: bool,
    revoked: str | None,
    order: str,
) -> None:
    approved = make_entry(then[0], extra=then[1], dynamic=then[2])
    entry = make_entry(now[0], extra=now[1], dynamic=now[2])
    record = record_for(approved, label="acme", identity=HTTP, scope=Scope.SESSION, granted_at=1)
    files = record.files
    if files is not None and order != "sorted":  # a record whose files are not in URI order
        files = files[::-1] if order == "reversed" else files + files[-1:]
    record = record.model_copy(update={"files": files, "revoked": revoked})
    identity = "http:https://other.example/mcp" if moved else HTTP
    same = (
        not revoked
        and not moved
        and approved.frontmatter_digests == entry.frontmatter_digests
        and (approved.files is None) == (entry.files is None)
        and set(approved.files or ()) == set(entry.files or ())
    )
    verdict = assess(entry, identity, record)
    assert isinstance(verdict, Approved if same else Changed)


def test_no_record_means_never_approved() -> None:
    assert isinstance(assess(make_entry(V1), HTTP, None), NeverApproved)


@pytest.mark.threat("T9")
def test_a_rotated_file_revokes_the_approval_and_names_the_file() -> None:
    verdict = assess(make_entry(V2), HTTP, approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.modified == (f"{SKILL_MD.removesuffix('SKILL.md')}notes.md",)
    assert not verdict.change.added
    assert not verdict.change.removed


@pytest.mark.threat("T9")
def test_an_added_file_revokes_the_approval() -> None:
    verdict = assess(make_entry({**V1, "new.sh": b"rm -rf ~\n"}), HTTP, approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.added == ("skill://acme/billing/refunds/new.sh",)


@pytest.mark.threat("T9")
def test_a_removed_file_revokes_the_approval() -> None:
    verdict = assess(make_entry({"notes.md": V1["notes.md"]}), HTTP, approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.removed == ("skill://acme/billing/refunds/templates/email.md",)


@pytest.mark.threat("T9")
def test_a_size_alone_that_differs_revokes_the_approval() -> None:
    honest = make_entry(V1)
    resources = [dataclasses.asdict(item) for item in honest.manifest.values()]
    notes = "skill://acme/billing/refunds/notes.md"
    for item in resources:
        if item["uri"] == notes:
            item["size"] += 1
    lying = parse_entry(
        {"uri": SKILL_MD, "frontmatter": honest.frontmatter.as_dict(), "resources": resources}
    )
    verdict = assess(lying, HTTP, approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.modified == (notes,)


@pytest.mark.threat("T7")
@pytest.mark.threat("T9")
def test_a_changed_frontmatter_field_revokes_the_approval_and_is_named() -> None:
    verdict = assess(
        make_entry(V1, extra={"allowed-tools": "Bash"}),
        HTTP,
        approve(V1),
    )
    assert isinstance(verdict, Changed)
    assert verdict.change.frontmatter == ("allowed-tools",)


@pytest.mark.threat("T22")
def test_the_same_digests_under_another_uri_are_never_approved() -> None:
    elsewhere = make_entry(V1, root="skill://other/refunds")
    assert isinstance(assess(elsewhere, HTTP, approve(V1)), NeverApproved)


@pytest.mark.threat("T22")
def test_the_same_label_pointed_at_another_server_is_a_change() -> None:
    verdict = assess(make_entry(V1), "stdio:evil-mcp --stdio", approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.server == (HTTP, "stdio:evil-mcp --stdio")


@pytest.mark.threat("T9")
def test_v1_served_again_after_v2_was_approved_is_a_change() -> None:
    verdict = assess(make_entry(V1), HTTP, approve(V2))
    assert isinstance(verdict, Changed)
    assert verdict.change.modified


@pytest.mark.threat("T9")
def test_a_revoked_record_is_never_honoured_even_for_identical_content() -> None:
    record = approve(V1).model_copy(update={"revoked": "the skill changed"})
    verdict = assess(make_entry(V1), HTTP, record)
    assert isinstance(verdict, Changed)
    assert verdict.change.revoked == "the skill changed"


@pytest.mark.threat("T19")
def test_a_remembered_record_never_covers_a_dynamic_skill() -> None:
    entry = make_entry(dynamic=True)
    record = record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)
    assert isinstance(assess(entry, HTTP, record), NeverApproved)
    session = record.model_copy(update={"scope": Scope.SESSION})
    assert isinstance(assess(entry, HTTP, session), Approved)


@pytest.mark.threat("T19")
def test_a_remembered_skill_that_turns_dynamic_is_a_change_never_an_approval() -> None:
    verdict = assess(make_entry(dynamic=True), HTTP, approve(V1))
    assert isinstance(verdict, Changed)
    assert verdict.change.dynamic is True
    assert "now dynamic" in verdict.change.summary()


@pytest.mark.threat("T9")
@given(
    original=st.dictionaries(
        st.sampled_from(["a.md", "b.md", "c/d.md", "e.bin"]), st.binary(max_size=8), max_size=4
    ),
    changed=st.dictionaries(
        st.sampled_from(["a.md", "b.md", "c/d.md", "e.bin"]), st.binary(max_size=8), max_size=4
    ),
)
def test_any_difference_in_the_file_set_is_a_change_and_no_difference_is_approval(
    original: dict[str, bytes], changed: dict[str, bytes]
) -> None:
    record = approve(original)
    verdict = assess(make_entry(changed), HTTP, record)
    if original == changed:
        assert isinstance(verdict, Approved)
    else:
        assert isinstance(verdict, Changed)


@pytest.mark.threat("T9")
def test_of_several_records_one_that_approves_exactly_this_content_is_enough() -> None:
    session, stored = approve(V2), approve(V1)
    verdict = assess_any(make_entry(V1), HTTP, [session, stored])
    assert isinstance(verdict, Approved)
    assert verdict.record is stored


@pytest.mark.threat("T9")
def test_of_several_records_none_approving_the_first_difference_is_the_change() -> None:
    revoked = approve(V1).model_copy(update={"revoked": "the skill changed"})
    verdict = assess_any(make_entry(V1), HTTP, [revoked, approve(V2)])
    assert isinstance(verdict, Changed)
    assert verdict.record is revoked
    assert isinstance(assess_any(make_entry(V1), HTTP, []), NeverApproved)
    elsewhere = make_entry(V1, root="skill://other/refunds")
    assert isinstance(assess_any(elsewhere, HTTP, [approve(V1)]), NeverApproved)


# --- the book ---------------------------------------------------------------------------


def book(prompter: Scripted, tmp_path: Path, keys: MemoryKeys | None = None) -> ApprovalBook:
    store = FileApprovalStore(tmp_path / "approvals.json", keys=keys or MemoryKeys())
    return ApprovalBook(prompter, store=store, clock=lambda: 1000.0)


@pytest.mark.anyio
async def test_a_remembered_approval_is_used_by_the_next_process_without_asking(
    tmp_path: Path,
) -> None:
    keys = MemoryKeys()
    first = Scripted([yes(Scope.REMEMBER)])
    request = make_request(make_entry(V1))
    assert await book(first, tmp_path, keys).decide(request) is Decision.APPROVE
    later = Scripted()
    assert await book(later, tmp_path, keys).decide(request) is Decision.APPROVE
    assert later.asked == []


@pytest.mark.anyio
async def test_once_is_asked_again_and_session_is_not(tmp_path: Path) -> None:
    prompter = Scripted([yes(Scope.ONCE), yes(Scope.SESSION)])
    approvals = book(prompter, tmp_path)
    request = make_request(make_entry(V1))
    for _ in range(3):
        assert await approvals.decide(request) is Decision.APPROVE
    assert len(prompter.asked) == 2


@pytest.mark.anyio
@pytest.mark.threat("T9")
async def test_a_change_revokes_the_stored_approval_so_v1_returning_asks_again(
    tmp_path: Path,
) -> None:
    keys = MemoryKeys()
    prompter = Scripted([yes(Scope.REMEMBER)])
    approvals = book(prompter, tmp_path, keys)
    assert await approvals.decide(make_request(make_entry(V1))) is Decision.APPROVE
    # The server now serves v2: asked, with the difference, and the person says no.
    assert await approvals.decide(make_request(make_entry(V2))) is Decision.DENY
    change = prompter.questions[-1].change
    assert change is not None
    assert change.modified == ("skill://acme/billing/refunds/notes.md",)
    # v1 again, in a new process: the stored approval was revoked, so it asks.
    again = Scripted()
    assert await book(again, tmp_path, keys).decide(make_request(make_entry(V1))) is Decision.DENY
    assert again.questions[0].change is not None
    assert again.questions[0].change.revoked


@pytest.mark.anyio
@pytest.mark.threat("T18")
async def test_a_store_put_in_the_books_place_between_decisions_is_the_one_read(
    tmp_path: Path,
) -> None:
    approvals = book(Scripted([yes(Scope.REMEMBER)]), tmp_path)
    request = make_request(make_entry(V1))
    assert await approvals.decide(request) is Decision.APPROVE
    remembered = approvals.store
    assert remembered is not None
    # Another store, holding nothing: its verdict, not the last one's.
    approvals.store = FileApprovalStore(tmp_path / "other.json", keys=MemoryKeys())
    assert await approvals.decide(request) is Decision.DENY
    # A store that cannot say whether it is current is read, each time.
    counted = CountedStore(remembered)
    approvals.store = counted
    assert await approvals.decide(request) is Decision.APPROVE
    assert await approvals.decide(request) is Decision.APPROVE
    assert counted.gets == 2


async def remembered_v1(tmp_path: Path) -> MemoryKeys:
    """V1 approved and remembered; the keyring of its store, for later processes."""
    keys = MemoryKeys()
    approvals = book(Scripted([yes(Scope.REMEMBER)]), tmp_path, keys)
    assert await approvals.decide(make_request(make_entry(V1))) is Decision.APPROVE
    return keys


async def v1_is_asked_about_as_revoked(tmp_path: Path, keys: MemoryKeys) -> bool:
    """Whether a new process serving V1 asks about it, saying its approval was revoked."""
    again = Scripted()
    assert await book(again, tmp_path, keys).decide(make_request(make_entry(V1))) is Decision.DENY
    change = again.questions[0].change if len(again.asked) == 1 else None
    return change is not None and change.revoked is not None


@pytest.mark.anyio
@pytest.mark.threat("T9")
async def test_a_change_seen_while_reviewing_revokes_even_when_the_person_denies(
    tmp_path: Path,
) -> None:
    keys = await remembered_v1(tmp_path)
    # `skillward approve` while the server serves v2: the person says no.
    reviewed = Scripted()
    answer = await book(reviewed, tmp_path, keys).review(make_request(make_entry(V2)))
    assert answer.decision is Decision.DENY
    assert reviewed.questions[0].change is not None
    # v1 served again: the approval of v1 was revoked by what the review saw.
    assert await v1_is_asked_about_as_revoked(tmp_path, keys)


@pytest.mark.anyio
@pytest.mark.threat("T9")
async def test_a_revocation_the_store_could_not_write_outlives_a_session_approval_of_v2(
    tmp_path: Path,
) -> None:
    limits = Limits(store_lock_timeout=0.2)
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys(), limits=limits)
    prompter = Scripted([yes(Scope.REMEMBER), yes(Scope.SESSION)])
    approvals = ApprovalBook(prompter, store=store, clock=lambda: 1000.0)
    assert await approvals.decide(make_request(make_entry(V1))) is Decision.APPROVE
    # v2 is served while another process holds the store: the revocation of v1 cannot be
    # written, and the person approves v2 for this session.
    with filelock.FileLock(store.lock_path):
        assert await approvals.decide(make_request(make_entry(V2))) is Decision.APPROVE
    stored = store.get(make_request(make_entry(V1)).key)
    assert stored is not None
    assert stored.revoked is None  # the store still holds v1, unrevoked
    # v1 served again: the revocation held in this process still counts.
    assert await approvals.decide(make_request(make_entry(V1))) is Decision.DENY
    assert len(prompter.asked) == 3


@pytest.mark.anyio
@pytest.mark.threat("T9")
@pytest.mark.threat("T48")
async def test_a_revocation_the_store_could_not_write_holds_in_every_gateway_session(
    tmp_path: Path,
) -> None:
    limits = Limits(store_lock_timeout=0.2)
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys(), limits=limits)
    v1 = make_request(make_entry(V1))
    remembering = ApprovalBook(Scripted([yes(Scope.REMEMBER)]), store=store)
    assert await remembering.decide(v1) is Decision.APPROVE
    async with SkillHost() as host:
        sessions = Sessions(host, store=store)
        one, other = await sessions.get("one"), await sessions.get("other")
        assert isinstance(await other.book.verdict(v1), Approved)
        # One client's session saw v1 change while another process held the store.
        with filelock.FileLock(store.lock_path):
            await one.book.revoke(v1.record.key, reason="the skill changed")
        stored = store.get(v1.record.key)
        assert stored is not None
        assert stored.revoked is None  # the store could not record it
        # The other client's session does not approve v1 on the stale record.
        assert not isinstance(await other.book.verdict(v1), Approved)


@pytest.mark.anyio
@pytest.mark.threat("T9")
@pytest.mark.threat("T19")
async def test_a_remembered_skill_that_turns_dynamic_and_back_is_asked_about_again(
    tmp_path: Path,
) -> None:
    keys = await remembered_v1(tmp_path)
    # The server turns the skill dynamic: shown as a change, never approved by the record.
    dynamic = Scripted()
    assert await book(dynamic, tmp_path, keys).decide(make_request(make_entry(dynamic=True))) is (
        Decision.DENY
    )
    change = dynamic.questions[0].change
    assert change is not None
    assert change.dynamic is True
    # And back to v1: the change revoked the remembered approval.
    assert await v1_is_asked_about_as_revoked(tmp_path, keys)


@pytest.mark.anyio
@pytest.mark.threat("T9")
async def test_the_host_revocation_holds_in_the_store_and_the_session(tmp_path: Path) -> None:
    keys = MemoryKeys()
    prompter = Scripted([yes(Scope.REMEMBER), yes(Scope.SESSION)])
    approvals = book(prompter, tmp_path, keys)
    request = make_request(make_entry(V1))
    await approvals.decide(request)
    await approvals.revoke(request.key, reason="the skill changed while loaded")
    assert await approvals.decide(request) is Decision.APPROVE  # asked again: session
    assert len(prompter.asked) == 2
    await approvals.revoke(request.key, reason="changed again")
    assert await approvals.decide(request) is Decision.DENY
    stored = FileApprovalStore(tmp_path / "approvals.json", keys=keys).get(request.key)
    assert stored is not None
    assert stored.revoked == "the skill changed while loaded"


@pytest.mark.anyio
@pytest.mark.threat("T19")
async def test_a_dynamic_skill_is_never_remembered_at_most_the_session(tmp_path: Path) -> None:
    notes: list[str] = []
    prompter = Scripted([yes(Scope.REMEMBER)])
    approvals = ApprovalBook(
        prompter,
        store=FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys()),
        notify=notes.append,
    )
    request = make_request(make_entry(dynamic=True))
    assert await approvals.decide(request) is Decision.APPROVE
    assert prompter.questions[0].remember_unavailable is not None
    assert not (tmp_path / "approvals.json").exists()
    assert await approvals.decide(request) is Decision.APPROVE  # the session holds it
    assert len(prompter.asked) == 1
    assert len(notes) == 1


@pytest.mark.anyio
async def test_without_a_keyring_remember_falls_back_to_the_session_and_says_so_once(
    tmp_path: Path,
) -> None:
    notes: list[str] = []
    keys = MemoryKeys(refuse="the keyring backend 'fail Keyring' is not a recommended one")
    prompter = Scripted([yes(Scope.REMEMBER), yes(Scope.REMEMBER)])
    approvals = ApprovalBook(
        prompter,
        store=FileApprovalStore(tmp_path / "approvals.json", keys=keys),
        notify=notes.append,
    )
    for root in ("skill://acme/one", "skill://acme/two"):
        assert await approvals.decide(make_request(make_entry(root=root))) is Decision.APPROVE
    assert len(notes) == 1
    assert "fail Keyring" in notes[0]
    assert not (tmp_path / "approvals.json").exists()


@pytest.mark.anyio
async def test_granting_remember_without_a_keyring_raises_instead_of_narrowing(
    tmp_path: Path,
) -> None:
    keys = MemoryKeys(refuse="the keyring backend 'fail Keyring' is not a recommended one")
    approvals = book(Scripted(), tmp_path, keys)
    with pytest.raises(RememberUnavailable, match="fail Keyring"):
        await approvals.grant(make_request(make_entry(V1)), yes(Scope.REMEMBER))


@pytest.mark.anyio
async def test_granting_remember_where_the_server_is_unidentified_raises_instead_of_narrowing(
    tmp_path: Path,
) -> None:
    approvals = book(Scripted(), tmp_path)
    unidentified = make_request(make_entry(V1), identity=None)
    with pytest.raises(RememberUnavailable, match="not remembered: the host did not say"):
        await approvals.grant(unidentified, yes(Scope.REMEMBER))
    assert not (tmp_path / "approvals.json").exists()


@pytest.mark.anyio
async def test_skills_waiting_at_the_same_time_are_asked_in_one_grouped_prompt(
    tmp_path: Path,
) -> None:
    prompter = Scripted([yes(Scope.SESSION), yes(Scope.ONCE), yes(Scope.SESSION)])
    approvals = book(prompter, tmp_path)
    requests = [make_request(make_entry(root=f"skill://acme/s{i}")) for i in range(3)]
    results: list[Decision] = []

    async def one(index: int) -> None:
        results.append(await approvals.decide(requests[index]))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for index in range(3):
                group.start_soon(one, index)
    assert results == [Decision.APPROVE] * 3
    assert [len(batch) for batch in prompter.asked] == [3]


@pytest.mark.anyio
async def test_decide_many_asks_once_about_only_the_unapproved(tmp_path: Path) -> None:
    prompter = Scripted([yes(Scope.SESSION), yes(Scope.SESSION), yes(Scope.ONCE)])
    approvals = book(prompter, tmp_path)
    first = make_request(make_entry(root="skill://acme/first"))
    await approvals.decide(first)
    others = [make_request(make_entry(root=f"skill://acme/s{i}")) for i in range(2)]
    decisions = await approvals.decide_many([first, *others])
    assert decisions == [Decision.APPROVE] * 3
    assert [len(batch) for batch in prompter.asked] == [1, 2]


@pytest.mark.anyio
async def test_approving_a_skill_never_approves_another_uri_or_label(tmp_path: Path) -> None:
    prompter = Scripted([yes(Scope.REMEMBER)])
    approvals = book(prompter, tmp_path)
    await approvals.decide(make_request(make_entry(V1)))
    other_label = make_request(make_entry(V1), label="mirror")
    assert await approvals.decide(other_label) is Decision.DENY
    assert prompter.questions[-1].change is None  # never approved: nothing to compare


@pytest.mark.anyio
async def test_records_carry_scope_time_policy_version_and_no_grants_by_default(
    tmp_path: Path,
) -> None:
    keys = MemoryKeys()
    store = FileApprovalStore(tmp_path / "approvals.json", keys=keys)
    approvals = ApprovalBook(
        Scripted([yes(Scope.REMEMBER)]), store=store, clock=lambda: 42.0, policy_version="p7"
    )
    request = make_request(make_entry(V1))
    await approvals.decide(request)
    record = store.get(SkillKey("acme", SKILL_MD))
    assert record is not None
    assert (record.scope, record.granted_at, record.policy_version) == (Scope.REMEMBER, 42.0, "p7")
    assert record.grants.tools == ()
    assert record.grants.execution is False
    assert record.identity == HTTP
    assert [f.uri for f in record.files or ()] == sorted(make_entry(V1).manifest)


def test_the_content_hash_changes_with_any_file_or_frontmatter_and_not_otherwise() -> None:
    from skillward.trust.approvals import content_hash  # noqa: PLC0415

    base = _entry_for_hash()
    assert content_hash(base) == content_hash(_entry_for_hash())
    assert content_hash(base) != content_hash(_entry_for_hash(digest="b"))
    assert content_hash(base) != content_hash(_entry_for_hash(description="other"))
    assert content_hash(base) != content_hash(_entry_for_hash(size=2))


def test_the_content_hash_is_the_one_pins_and_stored_approvals_were_written_with() -> None:
    """The digest-set hash, spelled out: a pin printed (or an approval stored) before
    stays the same content's."""
    import hashlib  # noqa: PLC0415
    import json  # noqa: PLC0415

    from skillward.trust.approvals import content_hash  # noqa: PLC0415

    def canonical(value: object) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()

    def digest(data: bytes) -> str:
        return "sha256:" + hashlib.sha256(data).hexdigest()

    entry = make_entry(V1)
    frontmatter = entry.frontmatter.as_dict()
    files = sorted([item.uri, item.digest, item.size] for item in entry.manifest.values())
    uri = entry.uri
    expected = digest(
        canonical({"files": files, "frontmatter": digest(canonical(frontmatter)), "uri": uri})
    )
    assert content_hash(entry) == expected
    record = record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)
    assert record.content_hash == expected


def test_an_entrys_digests_are_computed_once_however_often_a_load_asks() -> None:
    from skillward.trust.approvals import content_hash  # noqa: PLC0415

    entry = make_entry(V1)
    assert content_hash(entry) is content_hash(entry)
    assert entry.frontmatter_digests is entry.frontmatter_digests


def _entry_for_hash(digest: str = "a", description: str = "d", size: int = 1) -> SkillEntry:
    uri = "skill://acme/x/SKILL.md"
    return parse_entry(
        {
            "uri": uri,
            "frontmatter": {"name": "x", "description": description},
            "resources": [{"uri": uri, "digest": "sha256:" + digest * 64, "size": size}],
        }
    )
