"""The audit trail: fixed fields, JSON lines, bounded, and never skill content."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

if sys.platform != "win32":
    import fcntl

from skillward.core.config import Limits
from skillward.core.errors import UsageError
from skillward.trust.audit import (
    CHAIN_ROOM,
    AuditTrail,
    as_client,
    parse_duration,
    read_events,
    rotated,
)
from tests.support.keys import Keyring, MemoryKeys

FIELDS = {
    "time",
    "event",
    "decision",
    "label",
    "identity",
    "skill_uri",
    "content_hash",
    "reason",
    "gate",
    "tool",
    "target",
    "resource_uri",
    "scope",
    "client_unverified",
    "via",
    "n",
    "prev",
}

# One key store per trail, shared by every writer of it (as processes share the keyring).
KEYRINGS: dict[Path, Keyring] = {}


def trail(path: Path, **limits: int) -> AuditTrail:
    keys = MemoryKeys(KEYRINGS.setdefault(path, Keyring()))
    return AuditTrail(path, clock=lambda: 1000.0, limits=Limits(**limits), keys=keys)


def event_lines(path: Path) -> list[bytes]:
    """The file's lines that are events (not checkpoints)."""
    return [line for line in path.read_bytes().splitlines() if b'"checkpoint":' not in line]


@pytest.mark.threat("T36")
def test_each_event_is_one_json_line_with_every_fixed_field(tmp_path: Path) -> None:
    path = tmp_path / "state" / "audit.jsonl"
    trail(path).record(
        "approval", "approved", label="acme", skill_uri="skill://x/SKILL.md", reason="r"
    )
    trail(path).record("gate", "denied", gate="execution", tool="bash", reason="r")
    lines = event_lines(path)
    assert len(lines) == 2
    for line in lines:
        assert set(json.loads(line)) == FIELDS
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert oct(path.parent.stat().st_mode & 0o777) == oct(0o700)


@pytest.mark.threat("T36")
def test_server_strings_cannot_forge_lines_or_drive_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    hostile = 'skill://x/\n{"event": "approval"}\x1b[2J\u202e/SKILL.md'
    trail(path).record("denial", "denied", skill_uri=hostile, reason="not approved")
    (event,) = read_events(path).events
    assert event.skill_uri is not None
    assert "\n" not in event.skill_uri
    assert "\x1b" not in event.skill_uri
    assert "\u202e" not in event.skill_uri


@pytest.mark.threat("T36")
def test_a_symlink_at_the_audit_file_is_not_followed_and_the_host_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    path = tmp_path / "audit.jsonl"
    path.symlink_to(target)
    event = trail(path).record("gate", "allowed", reason="r")
    assert event.event == "gate"
    assert target.read_bytes() == b""
    assert "cannot be written" in caplog.text


@pytest.mark.threat("T36")
def test_a_fifo_at_the_audit_file_never_blocks(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    os.mkfifo(path)
    trail(path).record("gate", "allowed", reason="r")  # returns: nobody reads the FIFO


@pytest.mark.threat("T36")
def test_the_file_is_rotated_so_it_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit = trail(path, max_audit_bytes=2000)
    for n in range(200):
        audit.record("gate", "allowed", reason=f"call {n}")
    assert path.stat().st_size <= 2000
    assert rotated(path).stat().st_size <= 2000
    events = read_events(path).events
    assert events[-1].reason == "call 199"
    assert [int(e.reason.split()[1]) for e in events] == sorted(
        int(e.reason.split()[1]) for e in events
    )


@pytest.mark.threat("T36")
def test_writers_at_once_never_tear_a_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"

    def write(n: int) -> None:
        audit = trail(path)  # one trail per writer, as separate hosts have
        for i in range(100):
            audit.record("gate", "allowed", label=f"w{n}", reason="x" * (i % 50))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    log = read_events(path)
    assert log.skipped == 0
    assert len(log.events) == 800


@pytest.mark.threat("T36")
def test_writers_rotating_at_once_rotate_once_and_lose_no_event(tmp_path: Path) -> None:
    writers = 8
    for attempt in range(20):
        path = tmp_path / f"try-{attempt}" / "audit.jsonl"
        first = trail(path, max_audit_bytes=4096)
        first.record("gate", "allowed", label="before", reason="x" * 100)  # and a checkpoint
        size = path.stat().st_size
        first.record("gate", "allowed", label="before", reason="x" * 100)
        kept, line = 2, path.stat().st_size - size  # every event's line is this long
        # An event rotates the file when it, with room for a checkpoint, would pass the cap.
        room = 4096 - CHAIN_ROOM
        while path.stat().st_size + 2 * line <= room:
            first.record("gate", "allowed", label="before", reason="x" * 100)
            kept += 1
        first.record("gate", "allowed", label="before", reason="x" * 100)
        kept += 1
        assert path.stat().st_size + line > room  # so the next event rotates
        start = threading.Barrier(writers, timeout=30)

        def write(n: int, path: Path = path, start: threading.Barrier = start) -> None:
            audit = trail(path, max_audit_bytes=4096)  # one trail each, as separate hosts
            start.wait()  # every writer finds the file full at once
            audit.record("gate", "allowed", label=f"after{n}", reason="x" * 100)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        labels = [e.label for e in read_events(path).events]
        assert labels.count("before") == kept
        assert len(event_lines(rotated(path))) == kept  # rotated once
        assert sorted(str(label) for label in labels if label != "before") == [
            f"after{n}" for n in range(writers)
        ]


@pytest.mark.threat("T36")
@pytest.mark.skipif(sys.platform == "win32", reason="no flock on Windows")
def test_a_lock_held_on_the_audit_file_never_hangs_a_host_or_loses_the_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    trail(path).record("gate", "allowed", reason="first")
    holder = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # held by someone else, and never let go
        done = threading.Thread(target=lambda: trail(path).record("gate", "denied", reason="r"))
        done.start()
        done.join(timeout=30)
        assert not done.is_alive()
    finally:
        os.close(holder)
    assert [e.decision for e in read_events(path).events] == ["allowed", "denied"]


def test_reading_skips_lines_that_are_not_events_and_filters_by_time(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    trail(path).record("approval", "approved", reason="old")
    with path.open("ab") as handle:
        handle.write(b'garbage\n{"event": "approval"}\n\n')
    AuditTrail(path, clock=lambda: 2000.0).record("denial", "denied", reason="new")
    log = read_events(path, since=1500.0)
    assert [e.reason for e in log.events] == ["new"]
    assert log.skipped == 2
    assert read_events(tmp_path / "missing.jsonl").events == ()


def test_an_event_is_also_a_logging_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="skillward.audit")
    event = AuditTrail().record("revocation", "revoked", label="acme", reason="changed")
    (record,) = [r for r in caplog.records if r.name == "skillward.audit"]
    assert record.audit == event  # type: ignore[attr-defined]
    assert record.getMessage() == "revocation revoked acme: changed"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("30m", 1800), ("12h", 43200), ("7d", 604800), ("1w", 604800), ("1h30m", 5400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "m", "1x", "-1h", "1h 30m", "0s", "1.5h", "h1"])
def test_a_duration_that_is_not_one_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text)


@given(st.text(max_size=40))
def test_parsing_any_text_as_a_duration_gives_seconds_or_a_usage_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except UsageError:
        return
    assert seconds > 0


@given(st.binary(max_size=300))
def test_reading_any_bytes_as_an_audit_file_never_fails(data: bytes) -> None:
    import tempfile  # noqa: PLC0415 (a fresh file per example)

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "audit.jsonl"
        path.write_bytes(data)
        log = read_events(path)
    assert log.skipped + len(log.events) <= data.count(b"\n") + 1


def test_events_made_for_a_gateway_client_name_it_escaped_and_unverified(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with as_client("host\x1b[2J"):
        inside = trail(path).record("denial", "denied", reason="r")
    outside = trail(path).record("denial", "denied", reason="r")
    assert inside.client_unverified == "host\\x1b[2J"
    assert "(unverified)" in inside.summary()
    assert outside.client_unverified is None


def test_an_answer_given_from_another_process_is_recorded_with_where_it_came_from(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    event = trail(path).record("approval", "approved", reason="r", via="socket pid=7\x1b[2J")
    (read,) = read_events(path).events
    assert read.via == event.via == "socket pid=7\\x1b[2J"
    assert "via=socket pid=7" in event.summary()
    assert trail(path).record("denial", "denied", reason="r").via is None
