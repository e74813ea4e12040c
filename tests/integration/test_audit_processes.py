"""Processes writing one audit trail at once keep one chain: each appends under the
file's lock, reads the last line another wrote, and moves the file key store's counter
under the same lock; the trail they leave verifies intact, rotation included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillward.trust._keyfile import FileKeyring
from skillward.trust.audit import read_events, rotated, verify_trail

pytestmark = pytest.mark.threat("T62")

WRITER = """
import sys
from pathlib import Path
from skillward.core.config import Limits
from skillward.trust._keyfile import FileKeyring
from skillward.trust.audit import AuditTrail

path, keys, workspace, name = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
store = FileKeyring(str(path), keys, discovery=(), workspace=workspace, prefix="audit")
limits = Limits(max_audit_bytes=40_000, audit_checkpoint_events=7)
with AuditTrail(path, keys=store, limits=limits) as trail:
    for n in range(80):
        trail.record("gate", "allowed", label=name, reason=f"{name} {n}")
"""


def key_store(tmp_path: Path, path: Path) -> FileKeyring:
    return FileKeyring(
        str(path), tmp_path / "keys", discovery=(), workspace=tmp_path / "workspace", prefix="audit"
    )


def test_processes_writing_at_once_leave_one_intact_chain(tmp_path: Path) -> None:
    path = tmp_path / "state" / "audit.jsonl"
    args = [str(path), str(tmp_path / "keys"), str(tmp_path / "workspace")]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, *args, f"w{n}"]) for n in range(5)]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    assert rotated(path).exists()  # the chain crossed a rotation
    verdict = verify_trail(path, keys=key_store(tmp_path, path))
    assert verdict.intact, verdict.broken
    assert verdict.vouched == verdict.last  # every writer closed with a checkpoint
    events = read_events(path).events
    for n in range(5):  # each writer's events still held are its last ones, in order
        mine = [e.reason for e in events if e.label == f"w{n}"]
        assert mine == [f"w{n} {i}" for i in range(80 - len(mine), 80)]
