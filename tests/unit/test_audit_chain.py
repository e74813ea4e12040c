"""The tamper-evident audit trail: every line chained to the one before, checkpoints
authenticated with the trail's key, and a counter in the key store; an edit, a
deletion, a reordering and a truncation each found at the line they break."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillward.core.config import Limits
from skillward.trust._chain import (
    Source,
    chain_line,
    checkpoint_body,
    checkpoint_code,
    counter_text,
    line_hash,
    link,
    verify,
)
from skillward.trust._keyfile import FileKeyring
from skillward.trust.audit import AuditTrail, read_events, rotated, verify_trail
from tests.support.keys import Keyring, MemoryKeys

pytestmark = pytest.mark.threat("T62")


def trail(path: Path, keyring: Keyring, **limits: Any) -> AuditTrail:
    return AuditTrail(path, keys=MemoryKeys(keyring), limits=Limits(**limits))


def written(path: Path, keyring: Keyring, events: int = 10, **limits: Any) -> AuditTrail:
    """A trail of ``events`` events, closed (its last checkpoint written)."""
    audit = trail(path, keyring, **limits)
    for n in range(events):
        audit.record(
            "approval", "approved", label="acme", skill_uri=f"skill://s{n}/SKILL.md", reason="r"
        )
    audit.close()
    return audit


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def save(path: Path, rows: list[bytes]) -> None:
    path.write_bytes(b"".join(row + b"\n" for row in rows))


def number_of(row: bytes) -> int:
    found = link(row)
    assert found is not None
    return found.n


def event_rows(path: Path) -> list[int]:
    """The indexes of the file's lines that are events."""
    return [i for i, row in enumerate(lines(path)) if b'"checkpoint":' not in row]


def test_a_trail_as_written_is_intact_and_its_checkpoints_vouch_for_every_event(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 25, audit_checkpoint_events=10)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken
    assert verdict.events == 25
    assert verdict.vouched == verdict.last  # closed: the last line is a checkpoint
    assert verdict.authenticated == verdict.checkpoints >= 4  # start, two due, close
    assert keyring.counter is not None
    assert keyring.counter.startswith(f"{verdict.last} ")
    assert len(read_events(path).events) == 25


def test_an_edited_event_is_found_at_that_event(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring)
    rows = lines(path)
    target = event_rows(path)[4]
    rows[target] = rows[target].replace(b'"approved"', b'"denied"  ')
    save(path, rows)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "edited"
    assert verdict.broken.n == number_of(rows[target])
    assert verdict.broken.where == f"audit.jsonl:{target + 1}"


def test_a_deleted_event_is_found_as_missing(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring)
    rows = lines(path)
    target = event_rows(path)[3]
    gone = number_of(rows[target])
    del rows[target]
    save(path, rows)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "missing"
    assert verdict.broken.n == gone


def test_events_put_in_another_order_are_found_as_reordered(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring)
    rows = lines(path)
    first, second = event_rows(path)[2:4]
    rows[first], rows[second] = rows[second], rows[first]
    save(path, rows)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "reordered"
    assert verdict.broken.n == number_of(rows[second])  # the one that now comes later


def test_a_trail_cut_short_is_found_as_truncated(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring)
    rows = lines(path)
    save(path, rows[:-3])  # the last events and the closing checkpoint
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "truncated"
    assert verdict.broken.n == number_of(rows[-3])


def test_an_older_copy_put_back_is_found_as_truncated(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    audit = written(path, keyring, 5)
    shutil.copy(path, tmp_path / "backup")
    audit.record("denial", "denied", label="acme", reason="a denial someone wants gone")
    audit.close()
    shutil.copy(tmp_path / "backup", path)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "truncated"


def test_an_edit_whose_chain_was_rewritten_fails_the_next_checkpoint(tmp_path: Path) -> None:
    """Someone without the key edits an event and recomputes every hash after it."""
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 20, audit_checkpoint_events=5)
    rows = lines(path)
    target = event_rows(path)[6]
    links = [link(row) for row in rows]
    rebuilt = rows[:target]
    for index in range(target, len(rows)):
        found = links[index]
        assert found is not None
        body = found.body
        if index == target:
            body = body.replace(b'"approved"', b'"denied"')
        rebuilt.append(chain_line(body, found.n, line_hash(rebuilt[-1])))
    save(path, rebuilt)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "unauthenticated"
    following = next(
        i for i in range(target, len(rows)) if b'"checkpoint":' in rows[i]
    )  # the first checkpoint after the edit
    assert verdict.broken.n == number_of(rows[following])


def test_a_rewritten_trail_with_its_checkpoints_stripped_of_their_codes_is_refused(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 8)
    rows = lines(path)
    rebuilt: list[bytes] = []
    for row in rows:
        found = link(row)
        assert found is not None
        body = checkpoint_body(None, 1.0) if found.checkpoint else found.body
        body = body.replace(b'"approved"', b'"denied"')
        prev = line_hash(rebuilt[-1]) if rebuilt else found.prev
        rebuilt.append(chain_line(body, found.n, prev))
    save(path, rebuilt)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "replaced"  # the counter's checkpoint is not there


def test_a_checkpoint_signed_with_another_key_does_not_authenticate(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    written(path, Keyring())
    verdict = verify_trail(
        path, keys=MemoryKeys(Keyring(secret=b"k" * 32, counter="1 " + "0" * 64))
    )
    assert verdict.broken is not None
    assert verdict.broken.how == "unauthenticated"
    assert verdict.broken.n == 1


def test_without_a_key_store_the_chain_still_finds_an_edit_and_says_it_cannot_vouch(
    tmp_path: Path,
) -> None:
    keyring = Keyring(refuse="no keyring here")
    path = tmp_path / "audit.jsonl"
    written(path, keyring)
    assert b'"checkpoint":null' in path.read_bytes()
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "unauthenticated"
    assert "no keyring here" in verdict.broken.message
    rows = lines(path)
    target = event_rows(path)[1]
    rows[target] = rows[target].replace(b"acme", b"evil")
    save(path, rows)
    edited = verify_trail(path, keys=MemoryKeys(keyring))
    assert edited.broken is not None
    assert edited.broken.how == "edited"


def test_rotation_keeps_the_chain_across_files(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 120, max_audit_bytes=8000)
    assert rotated(path).exists()
    first = lines(path)[0]
    assert first.startswith(b'{"checkpoint":"')  # a new file begins with a checkpoint
    found = link(first)
    assert found is not None
    assert found.prev == line_hash(lines(rotated(path))[-1])
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken
    # Lines lost at the seam between the files are found too.
    previous = lines(rotated(path))
    save(rotated(path), previous[:-1])
    seam = verify_trail(path, keys=MemoryKeys(keyring))
    assert seam.broken is not None
    assert seam.broken.how == "missing"
    assert seam.broken.n == number_of(previous[-1])


def test_the_start_of_the_oldest_file_cut_off_is_missing(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 6)
    rows = lines(path)
    save(path, rows[2:])
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "missing"


def test_a_file_cut_back_to_a_later_checkpoint_is_missing_its_start(tmp_path: Path) -> None:
    # Every writer closes with a checkpoint: a file cut back to one must not pass for a
    # file whose earlier files were rotated away, whose first line opened it.
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    for _ in range(3):
        written(path, keyring, 3)
    rows = lines(path)
    assert b'"opens":true' in rows[0]
    closing = next(i for i, row in enumerate(rows) if i and row.startswith(b'{"checkpoint":'))
    assert b'"opens"' not in rows[closing]
    save(path, rows[closing:])
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "missing"
    assert verdict.broken.n == number_of(rows[closing]) - 1
    assert not any("rotated away" in note for note in verdict.notes)
    # Nor can the cut be dressed up as an opening: the checkpoint's code says it was not.
    dressed = rows[closing].replace(b'{"checkpoint":', b'{"opens":true,"checkpoint":', 1)
    save(path, [dressed, *rows[closing + 1 :]])
    forged = verify_trail(path, keys=MemoryKeys(keyring))
    assert forged.broken is not None


def test_a_file_rotated_in_before_openings_were_marked_still_verifies(tmp_path: Path) -> None:
    # A checkpoint coded as skillward wrote them before: the file it opens is accepted.
    keyring = Keyring()
    keys = MemoryKeys(keyring)
    key = keys.key(create=True)
    assert key is not None
    prev = "0" * 64
    rows: list[bytes] = []
    for n in range(5, 8):
        if n in (5, 7):
            code = checkpoint_code(key, n, prev)
            body = checkpoint_body(code, 1.0)
        else:
            body = json.dumps({"event": "approval", "time": 1.0}).encode()
        row = chain_line(body, n, prev)
        rows.append(row)
        prev = line_hash(row)
    path = tmp_path / "audit.jsonl"
    save(path, rows)
    verdict = verify(
        [Source(path.name, path.read_bytes())], key=key, counter=counter_text(7, rows[-1])
    )
    assert verdict.broken is None, verdict.broken
    assert any("rotated away" in note for note in verdict.notes)


def test_a_last_line_cut_in_the_middle_is_truncated(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 4)
    data = path.read_bytes()
    path.write_bytes(data[:-40])
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how == "truncated"


def test_events_after_the_last_checkpoint_are_said_to_be_uncovered(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    audit = trail(path, keyring)
    for _ in range(3):
        audit.record("gate", "allowed", reason="r")
    verdict = verify_trail(path, keys=MemoryKeys(keyring))  # the writer is still running
    assert verdict.intact
    assert verdict.vouched == 1
    assert any("3 events after line 1 are not covered" in note for note in verdict.notes)
    audit.close()
    assert verify_trail(path, keys=MemoryKeys(keyring)).vouched == 5


def test_lines_an_older_skillward_wrote_are_bound_to_the_chain(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    old = [
        json.dumps({"time": 1.0, "event": "gate", "decision": "allowed", "reason": f"old {n}"})
        for n in range(3)
    ]
    path.write_text("".join(line + "\n" for line in old))
    written(path, keyring, 2)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken
    assert verdict.before_chain == 3
    rows = lines(path)
    rows[1] = rows[1].replace(b"old 1", b"old 9")
    save(path, rows)
    edited = verify_trail(path, keys=MemoryKeys(keyring))
    assert edited.broken is not None
    assert edited.broken.how == "edited"
    assert edited.broken.n == 1


def test_writers_at_once_keep_one_chain(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"

    def write(n: int) -> None:
        audit = trail(path, keyring, audit_checkpoint_events=7)  # one each, as hosts have
        for i in range(60):
            audit.record("gate", "allowed", label=f"w{n}", reason="x" * (i % 40))
        audit.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken
    assert verdict.events == 360


def _trail_rows(count: int, key: bytes) -> list[bytes]:
    """A trail of ``count`` lines, the first and last of them checkpoints."""
    rows: list[bytes] = []
    prev = line_hash(b"")
    for n in range(1, count + 1):
        if n in (1, count):
            body = checkpoint_body(checkpoint_code(key, n, prev), 1.0)
        else:
            body = json.dumps({"time": 1.0, "event": "gate", "i": n}).encode()
        row = chain_line(body, n, prev)
        rows.append(row)
        prev = line_hash(row)
    return rows


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_single_deletion_swap_or_edit_of_a_checked_trail_is_found(data: st.DataObject) -> None:
    key = b"k" * 32
    rows = _trail_rows(12, key)
    counter = counter_text(12, rows[-1])
    change = data.draw(st.sampled_from(["delete", "swap", "edit", "duplicate"]))
    index = data.draw(st.integers(0, len(rows) - 1))
    changed = list(rows)
    if change == "delete":
        del changed[index]
    elif change == "duplicate":
        changed.insert(index, rows[index])
    elif change == "swap":
        other = data.draw(st.integers(0, len(rows) - 1).filter(lambda i: i != index))
        changed[index], changed[other] = changed[other], changed[index]
    else:
        position = data.draw(st.integers(0, len(rows[index]) - 1))
        byte = data.draw(st.integers(0, 255).filter(lambda b: b != rows[index][position]))
        changed[index] = rows[index][:position] + bytes([byte]) + rows[index][position + 1 :]
    data_bytes = b"".join(row + b"\n" for row in changed)
    verdict = verify([Source("audit.jsonl", data_bytes)], key=key, counter=counter)
    assert not verdict.intact


@given(st.binary(max_size=2000))
def test_verifying_any_bytes_gives_a_verdict(data: bytes) -> None:
    verdict = verify([Source("audit.jsonl", data)], key=b"k" * 32, counter=None)
    assert verdict.intact or verdict.broken is not None


def test_the_trail_keeps_its_key_and_counter_apart_from_the_approval_stores(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state" / "audit.jsonl"

    def key_store(prefix: str) -> FileKeyring:
        workspace = tmp_path / "workspace"
        return FileKeyring(
            str(path), tmp_path / "keys", discovery=(), workspace=workspace, prefix=prefix
        )

    keys, stores = key_store("audit"), key_store("approvals")
    assert keys.key_path.name.startswith("audit-key-")
    assert keys.counter_path.name.startswith("audit-generation-")
    assert {keys.key_path, keys.counter_path}.isdisjoint({stores.key_path, stores.counter_path})
    audit = AuditTrail(path, keys=keys)
    audit.record("approval", "approved", label="acme", reason="r")
    audit.close()
    assert not stores.key_path.exists()
    assert oct(keys.key_path.stat().st_mode & 0o777) == oct(0o600)
    verdict = verify_trail(path, keys=key_store("audit"))
    assert verdict.intact, verdict.broken
    assert verdict.authenticated == 2


def test_a_trail_cut_short_stays_found_after_skillward_writes_to_it_again(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 10)
    rows = lines(path)
    save(path, rows[:5])  # the newest events and checkpoints gone...
    written(path, keyring, 10)  # ...and a later command writes on, moving the counter
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    # The line the key store had vouched for is another line now.
    assert verdict.broken.how == "replaced"
    assert verdict.broken.n == number_of(rows[-1])


def test_a_trail_deleted_whole_stays_found_after_skillward_writes_a_new_one(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    written(path, keyring, 30)
    path.unlink()
    written(path, keyring, 50)  # a new chain, past the old one's length
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.broken is not None
    assert verdict.broken.how in ("truncated", "replaced")


@pytest.mark.skipif(sys.platform == "win32", reason="Windows writers open the file each event")
def test_a_writer_opens_its_file_once_while_it_stays_the_file_at_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    audit = trail(path, Keyring())
    audit.record("gate", "allowed", label="first", reason="r")
    opened: list[object] = []
    real_open = os.open

    def counting(file: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    for n in range(5):
        audit.record("gate", "allowed", label=f"again{n}", reason="r")
    assert opened == []
    monkeypatch.undo()
    audit.close()
    assert [e.label for e in read_events(path).events][-1] == "again4"


def test_a_writer_follows_the_file_another_writer_rotated_in(tmp_path: Path) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    kept = trail(path, keyring, max_audit_bytes=4096)
    kept.record("gate", "allowed", label="kept", reason="x" * 100)
    other = trail(path, keyring, max_audit_bytes=4096)
    while not rotated(path).exists():
        other.record("gate", "allowed", label="other", reason="x" * 100)
    kept.record("gate", "allowed", label="kept after", reason="r")
    assert [e.label for e in read_events(path).events][-1] == "kept after"
    assert b"kept after" not in rotated(path).read_bytes()
    kept.close()
    other.close()
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken


@pytest.mark.parametrize("how", ["moved", "removed"])
def test_a_file_taken_away_from_the_path_gets_no_more_events(tmp_path: Path, how: str) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    audit = trail(path, keyring)
    audit.record("gate", "allowed", label="before", reason="r")
    if how == "moved":
        path.rename(tmp_path / "elsewhere.jsonl")
    else:
        path.unlink()
    audit.record("gate", "allowed", label="after", reason="r")
    assert [e.label for e in read_events(path).events] == ["after"]
    if how == "moved":
        assert b"after" not in (tmp_path / "elsewhere.jsonl").read_bytes().split(b"before")[1]


@pytest.mark.skipif(sys.platform == "win32", reason="no /proc/self/fd")
def test_a_closed_trail_holds_no_file_and_still_records(tmp_path: Path) -> None:
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("no /proc/self/fd")
    before = len(list(fds.iterdir()))
    path = tmp_path / "audit.jsonl"
    audit = trail(path, Keyring())
    audit.record("gate", "allowed", label="one", reason="r")
    audit.close()
    assert len(list(fds.iterdir())) == before
    audit.record("gate", "allowed", label="two", reason="r")
    del audit
    gc.collect()
    assert len(list(fds.iterdir())) == before
    assert [e.label for e in read_events(path).events] == ["one", "two"]


def test_a_writer_chains_on_from_a_last_line_longer_than_its_first_look_at_the_end(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    first = trail(path, keyring)
    long = "x" * 2048
    first.record(
        "gate", "allowed", label=long, identity=long, target=long, resource_uri=long, reason=long
    )
    assert len(lines(path)[-1]) > 8192
    second = trail(path, keyring)  # knows nothing of the file yet: reads its end
    second.record("gate", "allowed", label="after", reason="r")
    rows = lines(path)
    assert number_of(rows[-1]) == number_of(rows[-2]) + 1
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken


class HeldCounter(MemoryKeys):
    """A key store whose counter answers only once ``released`` is set (a keyring over
    D-Bus can take longer than a writer waits for the trail's lock)."""

    def __init__(self, keyring: Keyring) -> None:
        super().__init__(keyring)
        self.hold = False
        self.entered = threading.Event()
        self.released = threading.Event()

    def counter(self) -> str | None:
        if self.hold:
            self.entered.set()
            assert self.released.wait(timeout=30)
        return super().counter()


def test_a_writer_that_gave_up_waiting_for_the_lock_keeps_one_chain_with_the_holder(
    tmp_path: Path,
) -> None:
    keyring = Keyring()
    path = tmp_path / "audit.jsonl"
    slow = HeldCounter(keyring)
    holder = AuditTrail(path, keys=slow, limits=Limits(audit_checkpoint_events=2))
    other = AuditTrail(path, keys=MemoryKeys(keyring))
    holder.record("approval", "approved", label="x", reason="r")
    slow.hold = True
    # The holder's next event is due a checkpoint: it asks the key store with the lock held.
    writing = threading.Thread(
        target=lambda: holder.record("approval", "approved", label="a", reason="r")
    )
    writing.start()
    assert slow.entered.wait(timeout=30)
    other.record("approval", "approved", label="b", reason="r")  # gives up on the lock
    slow.released.set()
    writing.join(timeout=30)
    slow.hold = False
    holder.close()
    other.close()
    numbers = [number_of(row) for row in lines(path)]
    assert numbers == list(range(1, len(numbers) + 1))
    verdict = verify_trail(path, keys=MemoryKeys(keyring))
    assert verdict.intact, verdict.broken
