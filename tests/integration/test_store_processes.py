"""The approval store shared by real processes: concurrent writers, and writers killed.

The writers keep the key and counter in a file (fast, and they can be killed at any
point), or in the session's Secret Service, whose items are not replaced atomically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillward.core.origins import SkillKey
from skillward.trust._keys import OsKeyring
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import Scope, record_for
from tests.support.approvals import make_entry
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
