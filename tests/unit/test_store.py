"""The approval store: tamper evidence, rollback, bad files kept aside, locking."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import filelock
import pytest

from skillward.core.config import Limits
from skillward.core.errors import RememberUnavailable, StoreTampered
from skillward.core.origins import SkillKey
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ApprovalRecord, Scope, record_for
from tests.support.approvals import HTTP, make_entry
from tests.support.keys import FailingCounter, FileKeys, MemoryKeys
from tests.support.previous_store import write_previous_store

pytestmark = pytest.mark.threat("T18")


def remembered(name: str, notes: bytes = b"notes\n") -> ApprovalRecord:
    entry = make_entry({"notes.md": notes}, root=f"skill://acme/{name}")
    return record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=5.0)


ONE, TWO = remembered("one"), remembered("two")


@pytest.fixture
def keys() -> MemoryKeys:
    return MemoryKeys()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "approvals.json"


def fresh(path: Path, keys: MemoryKeys) -> FileApprovalStore:
    """A store as a new process would see it (nothing cached, the key not read yet)."""
    return FileApprovalStore(path, keys=keys.another_process(), clock=lambda: 0.0)


def aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.untrusted-*"))


def test_a_remembered_approval_reads_back_in_a_new_process(path: Path, keys: MemoryKeys) -> None:
    fresh(path, keys).put(ONE)
    assert fresh(path, keys).get(ONE.key) == ONE
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_every_single_byte_changed_at_every_offset_makes_the_approval_fail(
    path: Path, keys: MemoryKeys
) -> None:
    store = fresh(path, keys)
    store.put(ONE)
    store.put(TWO)
    original = path.read_bytes()
    # 0x20 flips letter case (hex digits included); 0x01 moves to a neighbouring value.
    for offset in range(len(original)):
        for mask in (0x01, 0x20):
            changed = bytearray(original)
            changed[offset] ^= mask
            path.write_bytes(bytes(changed))
            reader = fresh(path, keys)
            assert reader.get(ONE.key) is None, (offset, mask)
            assert reader.get(TWO.key) is None, (offset, mask)
            assert len(reader.problems) == 1, (offset, mask)
            assert not path.exists()
            for bad in aside(path):
                assert bad.read_bytes() == bytes(changed)
                bad.unlink()


def revoked_after_a_copy(path: Path, keys: MemoryKeys) -> bytes:
    """ONE remembered, then revoked; the authentic copy from before the revocation."""
    store = fresh(path, keys)
    store.put(ONE)
    older = path.read_bytes()  # ONE approved, authentic, generation 1
    store.revoke(ONE.key, reason="the skill changed")
    return older


def test_an_older_authentic_copy_put_back_is_detected(path: Path, keys: MemoryKeys) -> None:
    older = revoked_after_a_copy(path, keys)
    path.write_bytes(older)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    (problem,) = reader.problems
    assert isinstance(problem, StoreTampered)
    assert "older copy" in problem.message
    assert [p.read_bytes() for p in aside(path)] == [older]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:-1], id="last-byte-cut"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"\x00garbage\xff" * 40, id="garbage"),
        pytest.param(lambda data: data + b"\n", id="appended"),
    ],
)
def test_a_damaged_store_grants_nothing_is_kept_aside_and_prompting_starts_again(
    path: Path, keys: MemoryKeys, damage: object
) -> None:
    fresh(path, keys).put(ONE)
    assert callable(damage)
    bad = damage(path.read_bytes())
    path.write_bytes(bad)
    reported: list[StoreTampered] = []
    reader = FileApprovalStore(path, keys=keys, report=reported.append)
    assert reader.get(ONE.key) is None
    assert len(reported) == 1
    assert str(path) in reported[0].message
    assert [p.read_bytes() for p in aside(path)] == [bad]
    reader.put(TWO)  # approving again works, with a fresh store
    assert fresh(path, keys).get(TWO.key) == TWO
    assert fresh(path, keys).problems == []


def test_a_missing_or_rotated_key_makes_every_stored_approval_untrusted(
    path: Path, keys: MemoryKeys
) -> None:
    fresh(path, keys).put(ONE)
    keys.rotate()
    assert fresh(path, keys).get(ONE.key) is None
    assert len(aside(path)) == 1
    fresh(path, keys).put(ONE)
    keys.secret = None
    assert fresh(path, keys).get(ONE.key) is None
    assert len(aside(path)) == 2


def test_an_unusable_keyring_grants_nothing_refuses_writes_and_leaves_the_file(
    path: Path, keys: MemoryKeys
) -> None:
    fresh(path, keys).put(ONE)
    before = path.read_bytes()
    keys.refuse = "the keyring is locked"
    store = fresh(path, keys)
    assert store.get(ONE.key) is None
    with pytest.raises(RememberUnavailable, match="locked"):
        store.put(TWO)
    assert store.revoke(ONE.key, reason="x") is False
    assert path.read_bytes() == before
    assert aside(path) == []
    keys.refuse = None
    assert fresh(path, keys).get(ONE.key) == ONE


def test_deleting_the_counter_and_restoring_an_older_store_does_not_bring_back_a_revocation(
    path: Path, keys: MemoryKeys
) -> None:
    older = revoked_after_a_copy(path, keys)
    keys.stored_counter = None  # deleted from the keyring, which still holds the key
    path.write_bytes(older)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    (problem,) = reader.problems
    assert "no rollback counter" in problem.message
    assert [p.read_bytes() for p in aside(path)] == [older]


def test_a_write_with_no_counter_starts_over_with_a_new_key_so_no_older_copy_verifies(
    path: Path, keys: MemoryKeys
) -> None:
    older = revoked_after_a_copy(path, keys)
    keys.stored_counter = None
    path.unlink()  # the store too: nothing on disk is left to refuse
    old_key = keys.secret
    fresh(path, keys).put(TWO)
    assert keys.secret != old_key
    path.write_bytes(older)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    assert "authentication code" in reader.problems[0].message


def view(keys: MemoryKeys | FileKeys) -> MemoryKeys | FileKeys:
    """The same keys as another process sees them."""
    return keys.another_process() if isinstance(keys, MemoryKeys) else keys


@pytest.mark.parametrize("fail", ["before", "after"])
@pytest.mark.parametrize("provider", ["memory", "file"])
def test_a_revocation_whose_counter_update_failed_is_not_undone_by_restoring_the_previous_copy(
    path: Path, tmp_path: Path, fail: Literal["before", "after"], provider: str
) -> None:
    keys = MemoryKeys() if provider == "memory" else FileKeys(tmp_path / "keys.json")
    failing = FailingCounter(view(keys))
    store = FileApprovalStore(path, keys=failing)
    store.put(ONE)
    previous = path.read_bytes()
    failing.fail = fail
    with pytest.raises(RememberUnavailable, match="raising the counter"):
        store.revoke(ONE.key, reason="the skill changed")
    path.write_bytes(previous)  # the copy from before the revocation, put back
    failing.fail = None
    store.put(TWO)  # the next write records the revocation still pending, or finds it
    reader = FileApprovalStore(path, keys=view(keys))
    revoked = reader.get(ONE.key)
    assert revoked is not None
    assert revoked.revoked == "the skill changed"
    assert reader.get(TWO.key) == TWO
    assert reader.problems == []
    path.write_bytes(previous)
    assert FileApprovalStore(path, keys=view(keys)).get(ONE.key) is None


@pytest.mark.threat("T27")
def test_a_write_cut_off_after_the_counter_rose_is_completed_by_the_next_load(
    path: Path, keys: MemoryKeys
) -> None:
    fresh(path, keys).put(ONE)
    cut_off = FileApprovalStore(path, keys=FailingCounter(keys.another_process(), fail="after"))
    with pytest.raises(RememberUnavailable):
        cut_off.put(TWO)  # the counter rose; the store file was never replaced
    reader = fresh(path, keys)
    assert reader.get(TWO.key) == TWO
    assert reader.get(ONE.key) == ONE
    assert reader.problems == []
    assert aside(path) == []


@pytest.mark.threat("T27")
def test_the_copy_of_a_write_that_never_raised_the_counter_is_never_taken_for_the_store(
    path: Path, keys: MemoryKeys
) -> None:
    fresh(path, keys).put(ONE)
    abandoned = FileApprovalStore(path, keys=FailingCounter(keys.another_process(), fail="before"))
    with pytest.raises(RememberUnavailable):
        abandoned.put(TWO)
    (left,) = path.parent.glob(f".{path.name}.*.tmp")
    stale = left.read_bytes()  # authentic: ONE and TWO, at the generation the next write takes
    fresh(path, keys).revoke(ONE.key, reason="the skill changed")
    assert not left.exists()  # swept by that write
    path.write_bytes(stale)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    assert reader.get(TWO.key) is None
    # MemoryKeys stands in for a key provider of the host's own: named as such.
    assert "not the copy the key provider vouches for" in reader.problems[0].message


def test_a_store_ahead_of_the_keyring_counter_is_untrusted(path: Path, keys: MemoryKeys) -> None:
    fresh(path, keys).put(ONE)
    first = keys.stored_counter
    fresh(path, keys).put(TWO)
    keys.stored_counter = first
    assert fresh(path, keys).get(ONE.key) is None
    assert len(aside(path)) == 1


# --- a store the previous release wrote (its counter: the generation alone) ----------------


def test_a_store_the_previous_release_wrote_keeps_its_approvals_and_its_counter_is_upgraded(
    path: Path, keys: MemoryKeys
) -> None:
    written = write_previous_store(path, keys, [ONE, TWO], generation=3)
    assert keys.stored_counter == "3"
    reader = fresh(path, keys)
    assert reader.get(ONE.key) == ONE
    assert reader.get(TWO.key) == TWO
    assert reader.problems == []
    assert aside(path) == []
    assert path.read_bytes() == written
    # The counter now vouches for that copy, and rises from it with the next write.
    assert keys.stored_counter == "3 " + written[:64].decode()
    fresh(path, keys).revoke(ONE.key, reason="the skill changed")
    assert keys.stored_counter is not None
    assert keys.stored_counter.startswith("4 ")
    # So the copy from before the revocation, put back, is refused as an older one.
    path.write_bytes(written)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    assert "older copy" in reader.problems[0].message


def test_a_store_the_previous_release_wrote_older_than_its_counter_is_still_refused(
    path: Path, keys: MemoryKeys
) -> None:
    older = write_previous_store(path, keys, [ONE, TWO], generation=1)
    write_previous_store(path, keys, [TWO], generation=2)  # ONE forgotten
    path.write_bytes(older)
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    assert reader.get(TWO.key) is None
    (problem,) = reader.problems
    assert "is an older copy (generation 1; the key provider expects 2)" in problem.message
    assert [p.read_bytes() for p in aside(path)] == [older]
    assert keys.stored_counter == "2"  # nothing vouched for: no copy of it verifies


@pytest.mark.parametrize(
    ("counter", "why"),
    [
        # One ahead, as a writer of that release killed before raising the counter left
        # it: that release took the file's word; only the counter's is taken now.
        ("2", "ahead of the counter in the key provider"),
        ("03", "counter is unreadable"),
    ],
)
def test_a_store_the_previous_release_wrote_that_its_counter_does_not_vouch_for_is_refused(
    path: Path, keys: MemoryKeys, counter: str, why: str
) -> None:
    write_previous_store(path, keys, [ONE], generation=3)
    keys.stored_counter = counter
    reader = fresh(path, keys)
    assert reader.get(ONE.key) is None
    assert why in reader.problems[0].message
    assert len(aside(path)) == 1
    assert keys.stored_counter == counter


def test_a_changed_store_of_the_previous_release_is_refused_and_its_counter_left_alone(
    path: Path, keys: MemoryKeys
) -> None:
    written = write_previous_store(path, keys, [ONE], generation=3)
    path.write_bytes(written.replace(b'"revoked":null', b'"revoked":"x"', 1))
    assert fresh(path, keys).get(ONE.key) is None
    assert len(aside(path)) == 1
    assert keys.stored_counter == "3"
    # A key the previous release never used verifies nothing it wrote either.
    write_previous_store(path, keys, [ONE], generation=3)
    keys.rotate()
    assert fresh(path, keys).get(ONE.key) is None
    assert keys.stored_counter == "3"


@pytest.mark.threat("T27")
def test_an_upgrade_the_keyring_refuses_trusts_nothing_for_now_and_keeps_the_store(
    path: Path, keys: MemoryKeys
) -> None:
    written = write_previous_store(path, keys, [ONE], generation=3)
    failing = FileApprovalStore(path, keys=FailingCounter(keys.another_process(), fail="before"))
    assert failing.get(ONE.key) is None
    assert failing.problems == []
    assert path.read_bytes() == written
    assert keys.stored_counter == "3"
    assert fresh(path, keys).get(ONE.key) == ONE


@pytest.mark.threat("T27")
def test_a_store_of_the_previous_release_is_upgraded_only_under_the_store_s_lock(
    path: Path, keys: MemoryKeys
) -> None:
    write_previous_store(path, keys, [ONE], generation=3)
    waiting = FileApprovalStore(path, keys=keys, limits=Limits(store_lock_timeout=0.2))
    waiting.unavailable()  # the keyring's first check, made under the lock before it is held
    with filelock.FileLock(waiting.lock_path):
        assert waiting.get(ONE.key) is None
    assert keys.stored_counter == "3"
    assert waiting.get(ONE.key) == ONE
    assert keys.stored_counter is not None
    assert keys.stored_counter.startswith("3 ")


@pytest.mark.threat("T28")
def test_a_symlink_in_place_of_the_store_is_refused_and_its_target_untouched(
    path: Path, keys: MemoryKeys, tmp_path: Path
) -> None:
    fresh(path, keys).put(ONE)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)
    assert fresh(path, keys).get(ONE.key) is None
    assert target.read_bytes()  # the link was moved aside, not followed
    assert [p.is_symlink() for p in aside(path)] == [True]


def test_a_revoked_record_stays_revoked_and_reset_forgets_everything_with_a_new_key(
    path: Path, keys: MemoryKeys
) -> None:
    store = fresh(path, keys)
    store.put(ONE)
    assert store.revoke(ONE.key, reason="changed") is True
    assert store.revoke(ONE.key, reason="again") is False
    record = fresh(path, keys).get(ONE.key)
    assert record is not None
    assert record.revoked == "changed"
    old_key = keys.secret
    fresh(path, keys).reset()
    assert keys.secret != old_key
    assert fresh(path, keys).records() == []


def test_another_process_s_write_is_seen_without_a_restart(path: Path, keys: MemoryKeys) -> None:
    # Two views of one keyring: each keeps the key it read, as OsKeyring does.
    mine = FileApprovalStore(path, keys=keys.another_process())
    theirs = FileApprovalStore(path, keys=keys.another_process())
    assert mine.keys is not theirs.keys
    assert mine.get(ONE.key) is None
    theirs.put(ONE)
    assert mine.get(ONE.key) == ONE
    theirs.reset()
    assert mine.get(ONE.key) is None
    assert mine.problems == []  # a reset by another process is not tampering


def test_a_write_reads_the_keyring_counter_once_and_keeps_what_it_wrote(
    path: Path, keys: MemoryKeys
) -> None:
    store = fresh(path, keys)
    store.put(ONE)
    reads = keys.keyring.counter_reads
    store.put(TWO)
    assert keys.keyring.counter_reads == reads + 1
    assert store.get(TWO.key) == TWO
    assert store.get(ONE.key) == ONE
    assert keys.keyring.counter_reads == reads + 1  # not read back and checked again


@pytest.mark.parametrize("how", ["in-place", "replaced"])
def test_a_foreign_write_after_this_process_s_own_write_is_still_checked(
    path: Path, keys: MemoryKeys, how: str
) -> None:
    store = fresh(path, keys)
    store.put(ONE)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x01
    if how == "in-place":
        path.write_bytes(bytes(data) + b"\n")
    else:
        planted = path.with_name("planted")
        planted.write_bytes(bytes(data))
        os.replace(planted, path)
    assert store.get(ONE.key) is None
    assert len(store.problems) == 1


@pytest.mark.threat("T27")
def test_a_conditional_write_refuses_when_another_process_changed_the_record_since(
    path: Path, keys: MemoryKeys
) -> None:
    mine, theirs = fresh(path, keys), fresh(path, keys)
    mine.put(ONE)
    read = mine.get(ONE.key)
    assert read is not None
    theirs.revoke(ONE.key, reason="the skill changed")
    granted = read.model_copy(update={"grants": read.grants.model_copy(update={"execution": True})})
    with pytest.raises(RememberUnavailable, match="another process"):
        mine.put(granted, replaces=read)
    stored = fresh(path, keys).get(ONE.key)
    assert stored is not None
    assert stored.revoked == "the skill changed"
    assert stored.grants.execution is False
    with pytest.raises(RememberUnavailable):
        mine.put(TWO, replaces=ONE)  # nothing stored for TWO: nothing to replace
    current = mine.get(ONE.key)
    assert current is not None
    mine.put(ONE, replaces=current)  # unchanged since read: written
    assert fresh(path, keys).get(ONE.key) == ONE


@pytest.mark.threat("T28")
def test_a_symlink_at_the_lock_path_is_never_followed_and_refuses_instead_of_crashing(
    path: Path, keys: MemoryKeys, tmp_path: Path
) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")
    path.parent.mkdir(parents=True)
    store = fresh(path, keys)
    store.lock_path.symlink_to(target)
    with pytest.raises(RememberUnavailable, match="cannot lock"):
        store.put(ONE)
    assert target.read_bytes() == b"keep me"
    assert store.get(ONE.key) is None


def test_temp_files_of_writers_that_died_are_swept_under_the_lock(
    path: Path, keys: MemoryKeys
) -> None:
    fresh(path, keys).put(ONE)
    leftover = path.parent / f".{path.name}.dead1234.tmp"
    leftover.write_bytes(b"half a store")
    fresh(path, keys).put(TWO)
    assert not leftover.exists()


def test_a_store_held_by_another_process_for_too_long_refuses_instead_of_hanging(
    path: Path, keys: MemoryKeys
) -> None:
    store = FileApprovalStore(path, keys=keys, limits=Limits(store_lock_timeout=0.2))
    store.put(ONE)
    with filelock.FileLock(store.lock_path), pytest.raises(RememberUnavailable, match="held"):
        FileApprovalStore(path, keys=keys, limits=Limits(store_lock_timeout=0.2)).put(TWO)


def test_a_store_larger_than_the_limit_is_not_read(path: Path, keys: MemoryKeys) -> None:
    store = FileApprovalStore(path, keys=keys)
    store.put(ONE)
    small = FileApprovalStore(path, keys=keys, limits=Limits(max_store_bytes=64))
    assert small.get(ONE.key) is None
    assert "larger than 64 bytes" in small.problems[0].message


def test_only_content_bound_remembered_records_are_stored(path: Path, keys: MemoryKeys) -> None:
    session = ONE.model_copy(update={"scope": Scope.SESSION})
    dynamic = record_for(
        make_entry(dynamic=True), label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1
    )
    for record in (session, dynamic):
        with pytest.raises(RememberUnavailable):
            fresh(path, keys).put(record)
    assert fresh(path, keys).get(SkillKey("acme", dynamic.uri)) is None
