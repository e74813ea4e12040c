"""Server stderr logs: capped and rotated on disk, read back only escaped."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.errors import ConfigError
from skillward.edge._dirs import server_log_dir
from skillward.edge._local import default_local_dirs
from skillward.edge._serverlog import LogWriter, Scrubber, escaped_lines, log_path, read_log
from tests.support.stderr_server import HOSTILE


def sizes(path: Path) -> int:
    rotated = path.with_name(path.name + ".1")
    return sum(p.stat().st_size for p in (path, rotated) if p.exists())


@pytest.mark.threat("T11")
def test_the_log_and_its_predecessor_stay_within_the_cap(tmp_path: Path) -> None:
    path = log_path(tmp_path, "noisy")
    writer = LogWriter(path, max_bytes=10_000)
    for i in range(2_000):
        writer.write(f"line {i} ".encode() * 7 + b"\n")
        assert sizes(path) <= 10_000
    writer.write(b"x" * 1_000_000)  # one huge chunk keeps only its end
    assert sizes(path) <= 10_000
    writer.write(b"last words\n")
    writer.close()
    assert path.read_bytes().endswith(b"last words\n")
    assert path.with_name("noisy.log.1").exists()


@pytest.mark.threat("T11")
def test_two_writers_of_one_label_stay_within_the_cap(tmp_path: Path) -> None:
    path = log_path(tmp_path, "shared")
    first = LogWriter(path, max_bytes=4_000)
    second = LogWriter(path, max_bytes=4_000)
    for i in range(500):
        (first if i % 2 else second).write(b"%d: a line of output\n" % i)
        assert sizes(path) <= 4_000
    first.close()
    second.close()


@pytest.mark.threat("T23")
def test_a_symlink_planted_at_the_log_name_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "acme.log").symlink_to(target)
    with pytest.raises(OSError, match="symbolic links"):
        LogWriter(log_path(logs, "acme"), max_bytes=1000)
    assert target.read_bytes() == b""
    assert read_log(logs, "acme", max_bytes=1000) == b""


def test_the_log_file_is_private_to_the_user(tmp_path: Path) -> None:
    path = log_path(tmp_path / "logs", "acme")
    LogWriter(path, max_bytes=1000).close()
    assert path.stat().st_mode & 0o077 == 0
    assert path.parent.stat().st_mode & 0o077 == 0


@pytest.mark.threat("T25")
@pytest.mark.parametrize("label", ["../escape", "a/b", "", "Acme", "a\x00b"])
def test_only_a_valid_label_names_a_log_file(tmp_path: Path, label: str) -> None:
    with pytest.raises(ConfigError):
        log_path(tmp_path, label)


@pytest.mark.threat("T23")
def test_log_lines_are_escaped_never_raw() -> None:
    lines = escaped_lines(HOSTILE + b"\xff\xfe bad utf-8\r\n\xe2\x80\xaeevil\n")
    text = "\n".join(lines)
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\r" not in text
    assert "\u202e" not in text
    assert lines[0].startswith("\\x1b[2J\\x1b[H\\x1b[32mskillward: approved")
    assert "\\xff\\xfe bad utf-8\\r" in text
    assert "\\u202eevil" in text


@pytest.mark.threat("T23")
@given(st.binary(max_size=300))
def test_any_bytes_read_back_are_printable(data: bytes) -> None:
    for line in escaped_lines(data, limit=100):
        assert line.isprintable()
        # 100 characters kept, each at most a 10-character escape, and "...".
        assert len(line) <= 100 * 10 + 3


# A header value and its words; a word that ends another; one that is not ASCII.
SECRETS = ("Bearer s3cr3t-t0ken-9f8e7d x1", "s3cr3t-t0ken-9f8e7d", "pässwört-ünïcode")


@pytest.mark.threat("T24")
@given(
    st.lists(
        st.one_of(st.binary(max_size=40), st.sampled_from([s.encode() for s in SECRETS])),
        max_size=12,
    ),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_no_secret_reaches_the_log_however_the_stream_is_cut(
    parts: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(parts)
    scrubber = Scrubber(SECRETS)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    written = b"".join(scrubber.feed(stream[a:b]) for a, b in itertools.pairwise(bounds))
    written += scrubber.flush()
    for secret in SECRETS:
        assert secret.encode() not in written
    # Where the reads end changes nothing: the stream scrubbed at once is the same.
    whole = Scrubber(SECRETS)
    assert written == whole.feed(stream) + whole.flush()
    if not any(secret.encode() in stream for secret in SECRETS):
        assert written == stream


def test_without_secrets_the_stream_passes_unchanged_and_unheld() -> None:
    scrubber = Scrubber(())
    assert scrubber.feed(b"\xff partial") == b"\xff partial"
    assert scrubber.flush() == b""


def test_reading_a_log_is_bounded_and_keeps_the_order(tmp_path: Path) -> None:
    path = log_path(tmp_path, "acme")
    path.with_name("acme.log.1").write_bytes(b"older\n")
    path.write_bytes(b"newer\n")
    assert read_log(tmp_path, "acme", max_bytes=1000) == b"older\nnewer\n"
    assert read_log(tmp_path, "acme", max_bytes=4) == b"wer\n"
    assert read_log(tmp_path, "other", max_bytes=1000) is None


def test_server_logs_are_kept_outside_every_skills_directory() -> None:
    logs = server_log_dir()
    for source in default_local_dirs():
        assert not logs.is_relative_to(source.path)
        assert not source.path.is_relative_to(logs)
    assert os.sep + ".agents" + os.sep not in str(logs) + os.sep
