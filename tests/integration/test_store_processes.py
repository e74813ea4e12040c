"""The approval store shared by real processes: concurrent writers, and writers killed.

The writers keep the key and counter in a file (fast, and they can be killed at any
point), or in the session's Secret Service, whose items are not replaced atomically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from skillward.core.origins import SkillKey
from skillward.trust._keys import OsKeyring
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ActivationRequest, Approved, Scope, record_for
from skillward.trust.book import ApprovalBook
from tests.support.approvals import HTTP, SKILL_MD, Scripted, make_entry, make_request
from tests.support.keys import FileKeys
from tests.support.previous_store import write_previous_store
from tests.support.secret_service import BACKEND_NAME, forget, secret_service_or_skip
from tests.support.store_worker import store

pytestmark = [pytest.mark.threat("T18"), pytest.mark.threat("T27")]

WORKER = [sys.executable, "-m", "tests.support.store_worker"]
REPO = Path(__file__).resolve().parents[2]


def run_writers(directory: Path, processes: int, approvals: int) -> None:
    """``processes`` writers at once, keys in a file, each remembering ``approvals`` skills."""
    result = subprocess.run(
        [*WORKER, "concurrent", str(directory), str(processes), str(approvals)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"] * processes, result.stderr


def test_eight_processes_approving_two_hundred_skills_each_leave_every_record_valid(
    tmp_path: Path,
) -> None:
    run_writers(tmp_path, 8, 200)
    reader = store(tmp_path)
    records = reader.records()
    assert len(records) == 1600
    assert reader.problems == []
    for writer in range(8):
        for index in (0, 99, 199):
            key = SkillKey(f"w{writer}", f"skill://w{writer}/s{index}/SKILL.md")
            assert reader.get(key) is not None, key


def test_processes_starting_at_once_on_a_store_the_previous_release_wrote_keep_its_approvals(
    tmp_path: Path,
) -> None:
    earlier = [
        record_for(
            make_entry({"notes.md": b"n\n"}, root=f"skill://old/s{index}"),
            label="old",
            identity="http:x",
            scope=Scope.REMEMBER,
            granted_at=1.0,
        )
        for index in range(3)
    ]
    keys = FileKeys(tmp_path / "keys.json")
    write_previous_store(tmp_path / "approvals.json", keys, earlier, generation=7)
    processes, approvals = 4, 10
    run_writers(tmp_path, processes, approvals)
    reader = store(tmp_path)
    assert [reader.get(record.key) for record in earlier] == earlier
    assert len(reader.records()) == len(earlier) + processes * approvals
    assert reader.problems == []
    assert not list(tmp_path.glob("approvals.json.untrusted-*"))
    counter = keys.counter()
    assert counter is not None
    assert counter.split()[0] == str(7 + processes * approvals)  # upgraded once, then raised


def test_eight_processes_remembering_through_the_secret_service_lose_no_approval(
    tmp_path: Path,
) -> None:
    backend = secret_service_or_skip()
    path = tmp_path / "approvals.json"
    processes, approvals = 8, 25
    # The writers use the default keyring, as the command line does: the session's.
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": BACKEND_NAME}
    try:
        result = subprocess.run(
            [*WORKER, "concurrent", str(tmp_path), str(processes), str(approvals), "keyring"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=REPO,
            env=env,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["0"] * processes, result.stderr
        keys = OsKeyring(str(path.absolute()), backend=backend)
        reader = FileApprovalStore(path, keys=keys)
        records = reader.records()
        assert len(records) == processes * approvals
        assert reader.problems == []
        assert not list(tmp_path.glob("approvals.json.untrusted-*"))
        counter = keys.counter()
        assert counter is not None
        assert counter.split()[0] == str(processes * approvals)  # every write raised it
        for writer in range(processes):
            for index in range(approvals):
                key = SkillKey(f"w{writer}", f"skill://w{writer}/s{index}/SKILL.md")
                assert reader.get(key) is not None, key
    finally:
        forget(backend, path)


def test_a_writer_killed_mid_write_fifty_times_never_leaves_an_unloadable_store(
    tmp_path: Path,
) -> None:
    rounds = 50
    seen = 0
    with subprocess.Popen(
        [*WORKER, "churn", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as worker:
        assert worker.stdin is not None
        assert worker.stdout is not None
        try:
            for number in range(rounds):
                # Kill after 1 to 7 writes have begun, so the kill lands at varying points.
                worker.stdin.write(f"{1 + number % 7}\n")
                worker.stdin.flush()
                assert worker.stdout.readline() == f"killed {number}\n"
                reader = store(tmp_path)
                records = reader.records()
                assert reader.problems == [], number
                assert len(records) >= seen, number  # nothing written before was lost
                seen = len(records)
                assert not list(tmp_path.glob("approvals.json.untrusted-*"))
        finally:
            worker.stdin.close()
            worker.wait(timeout=60)
    assert seen >= rounds


# --- a host deciding from the store it read, while another process writes it -------------


REVOKE = """
import sys
from pathlib import Path
from skillward.core.origins import SkillKey
from tests.support.store_worker import store
store(Path(sys.argv[1])).revoke(SkillKey("acme", sys.argv[2]), reason="revoked elsewhere")
"""


def _remembered(directory: Path) -> tuple[ApprovalBook, ActivationRequest]:
    """A book over the store in ``directory``, holding a remembered approval of a skill."""
    request = make_request(make_entry({"notes.md": b"n\n"}))
    entry = request.record.entry
    assert entry is not None
    record = record_for(entry, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)
    store(directory).put(record)
    return ApprovalBook(Scripted(), store=store(directory)), request


def _revoke_in_another_process(directory: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", REVOKE, str(directory), SKILL_MD],
        cwd=REPO,
        check=True,
        timeout=120,
    )


@pytest.mark.anyio
async def test_a_revocation_by_another_process_is_seen_by_the_next_decision(
    tmp_path: Path,
) -> None:
    book, request = _remembered(tmp_path)
    assert (await book.pending(request)).settled  # the store read, verified and kept
    await anyio.to_thread.run_sync(_revoke_in_another_process, tmp_path)
    pending = await book.pending(request)
    assert not pending.settled
    assert not isinstance(pending.verdict, Approved)


@pytest.mark.anyio
async def test_an_older_copy_put_back_in_place_after_a_revocation_approves_nothing(
    tmp_path: Path,
) -> None:
    """Written over the store's own inode, its times set back: the change is still seen
    (ctime), and the copy is checked against the counter, which vouches for the newer."""
    book, request = _remembered(tmp_path)
    path = tmp_path / "approvals.json"
    before = path.read_bytes()
    times = path.stat()
    assert (await book.pending(request)).settled
    await anyio.to_thread.run_sync(_revoke_in_another_process, tmp_path)
    with path.open("r+b") as file:  # in place: the same inode
        file.write(before)
        file.truncate()
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert not (await book.pending(request)).settled


@pytest.mark.anyio
async def test_a_decision_on_the_store_it_read_waits_for_no_worker_thread(tmp_path: Path) -> None:
    """While the file is the one it verified (one stat), the verdict comes from the event
    loop: a host whose worker threads are all busy still decides."""
    book, request = _remembered(tmp_path)
    assert (await book.pending(request)).settled
    limiter = anyio.to_thread.current_default_thread_limiter()
    borrowers = [object() for _ in range(int(limiter.total_tokens))]
    for borrower in borrowers:
        await limiter.acquire_on_behalf_of(borrower)
    try:
        with anyio.fail_after(10):
            assert (await book.pending(request)).settled
    finally:
        for borrower in borrowers:
            limiter.release_on_behalf_of(borrower)
