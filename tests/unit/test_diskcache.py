"""DiskCache on a real filesystem: what it keeps, what it refuses, what it evicts."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillward.cache._disk import DiskCache, LabelUsage
from skillward.cache.seam import CacheKey
from skillward.core.config import Limits
from skillward.core.errors import ConfigError, UsageError

REPO_ROOT = Path(__file__).resolve().parents[2]
HTTP = "http:https://docs.example.com/mcp"
STDIO = "stdio:docs-mcp --stdio"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def key(data: bytes, *, label: str = "docs", identity: str = HTTP, uri: str = "") -> CacheKey:
    digest = hashlib.sha256(data).hexdigest()
    return CacheKey(
        origin=label,
        identity=identity,
        skill="skill://docs/SKILL.md",
        uri=uri or f"skill://docs/{digest[:8]}.md",
        digest="sha256:" + digest,
        size=len(data),
    )


def blob_path(root: Path, data: bytes, label: str = "docs") -> Path:
    return root / label / "blobs" / hashlib.sha256(data).hexdigest()


def cache_at(root: Path, **options: object) -> DiskCache:
    return DiskCache(root, discovery=(), **options)  # type: ignore[arg-type]


# --- what is kept ------------------------------------------------------------------------


@pytest.mark.threat("T17")
def test_bytes_that_do_not_match_their_key_are_never_written(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.put(key(b"listed bytes\n"), b"other bytes\n")
    cache.put(key(b"listed bytes\n"), b"listed bytes\n!")
    assert cache.get(key(b"listed bytes\n")) is None
    assert not blob_path(tmp_path, b"listed bytes\n").exists()


@pytest.mark.threat("T17")
@settings(max_examples=40)
@given(uri=st.text(max_size=80), skill=st.text(max_size=80), digest=st.text(max_size=80))
def test_only_a_digest_ever_names_a_file_whatever_the_server_wrote(
    uri: str, skill: str, digest: str
) -> None:
    data = b"content\n"
    good = key(data)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "cache"
        cache = cache_at(root)
        for hostile in (
            CacheKey(origin="docs", identity=HTTP, skill=skill, uri=uri, digest=digest, size=8),
            CacheKey(
                origin="docs", identity=HTTP, skill=skill, uri=uri, digest=good.digest, size=8
            ),
        ):
            cache.put(hostile, data)
            assert cache.get(hostile) in (None, data)
        names = {p.name for p in (root / "docs" / "blobs").iterdir()}
        assert names <= {good.digest.removeprefix("sha256:")}
        assert {p.name for p in root.iterdir()} == {"docs"}


@pytest.mark.threat("T32")
@settings(max_examples=60)
@given(index=st.binary(max_size=300))
def test_an_index_that_is_not_sound_means_the_blobs_are_never_tried(index: bytes) -> None:
    data = b"content\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cache = cache_at(root)
        cache.put(key(data), data)
        (root / "docs" / "index.jsonl").write_bytes(index)
        assert cache_at(root).get(key(data)) is None


@pytest.mark.threat("T32")
def test_a_label_pointed_at_another_server_drops_the_old_servers_blobs(tmp_path: Path) -> None:
    first, second = b"from the http server\n", b"from the stdio server\n"
    cache = cache_at(tmp_path)
    cache.put(key(first, identity=HTTP), first)
    assert cache.get(key(first, identity=STDIO)) is None
    cache.put(key(second, identity=STDIO), second)
    assert not blob_path(tmp_path, first).exists()
    assert cache.get(key(first, identity=HTTP)) is None
    assert cache.get(key(second, identity=STDIO)) == second
    header, *lines = (tmp_path / "docs" / "index.jsonl").read_text().splitlines()
    assert json.loads(header) == {"format": 1, "identity": STDIO}
    assert [json.loads(line)["uri"] for line in lines] == [key(second).uri]


@pytest.mark.threat("T32")
def test_eviction_keeps_each_label_within_its_budget_least_recently_used_first(
    tmp_path: Path,
) -> None:
    clock = Clock()
    cache = cache_at(tmp_path, limits=Limits(max_cache_bytes=1000), clock=clock)
    blobs = [bytes([i]) * 300 for i in range(5)]
    other = b"another label\n" * 50
    cache.put(key(other, label="other"), other)

    def kept() -> set[str]:
        # Names only: reading the files would move their access times, the LRU order.
        return {p.name for p in (tmp_path / "docs" / "blobs").iterdir()}

    for data in blobs[:3]:
        clock.now += 10
        cache.put(key(data), data)
    clock.now += 10
    assert cache.get(key(blobs[0])) == blobs[0]  # used again: now more recent than 1 and 2
    for data, expected in ((blobs[3], {0, 2, 3}), (blobs[4], {0, 3, 4})):
        clock.now += 10
        cache.put(key(data), data)
        assert kept() == {blob_path(tmp_path, blobs[i]).name for i in expected}
    assert cache.get(key(other, label="other")) == other
    too_big = b"x" * 1001
    cache.put(key(too_big), too_big)
    assert not blob_path(tmp_path, too_big).exists()


def index_lines(root: Path, label: str = "docs") -> list[dict[str, str]]:
    _, *lines = (root / label / "index.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_index_keeps_one_line_for_each_blob_still_cached(tmp_path: Path) -> None:
    clock = Clock()
    cache = cache_at(tmp_path, limits=Limits(max_cache_bytes=1000), clock=clock)
    keys = {}
    for i in range(20):
        clock.now += 10
        data = bytes([i]) * 300
        keys[blob_path(tmp_path, data).name] = key(data)
        cache.put(key(data), data)
    kept = {p.name for p in (tmp_path / "docs" / "blobs").iterdir()}
    lines = index_lines(tmp_path)
    assert sorted(line["blob"] for line in lines) == sorted(kept)
    for line in lines:
        assert (line["skill"], line["uri"]) == (keys[line["blob"]].skill, keys[line["blob"]].uri)


def test_an_index_grown_past_its_blobs_is_trimmed_on_the_next_write(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    first, second = b"first\n", b"second\n"
    cache.put(key(first), first)
    index = tmp_path / "docs" / "index.jsonl"
    gone = [{"blob": f"{i:064x}", "skill": "skill://docs/SKILL.md", "uri": "x"} for i in range(900)]
    with index.open("a") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in gone)
        handle.write('{"blob": "torn')
    assert index.stat().st_size > 64 * 1024
    cache.put(key(second), second)
    assert index.stat().st_size < 1024
    assert json.loads(index.read_text().splitlines()[0]) == {"format": 1, "identity": HTTP}
    assert [line["uri"] for line in index_lines(tmp_path)] == [key(first).uri, key(second).uri]
    assert cache_at(tmp_path).get(key(first)) == first


@pytest.mark.threat("T32")
def test_a_file_older_than_the_maximum_age_is_removed_instead_of_used(tmp_path: Path) -> None:
    clock = Clock()
    cache = cache_at(tmp_path, limits=Limits(max_cache_age=3600), clock=clock)
    data = b"kept for an hour\n"
    cache.put(key(data), data)
    clock.now += 3600
    assert cache.get(key(data)) == data
    clock.now += 1
    assert cache.get(key(data)) is None
    assert not blob_path(tmp_path, data).exists()


def test_a_maximum_age_must_be_positive_when_set() -> None:
    with pytest.raises(ConfigError):
        Limits(max_cache_age=0)
    assert Limits().max_cache_age is None


# --- after a crash -------------------------------------------------------------------------
# Writes are not fsync-ed. A power loss can leave a renamed file empty, cut short, or with
# blocks never written (zeros, or whatever the disk held); these tests put each of those on
# disk, then start afresh as a restarted host would.


@pytest.mark.threat("T32")
def test_a_label_another_process_pointed_at_another_server_is_seen_by_a_running_cache(
    tmp_path: Path,
) -> None:
    first, second = b"from the http server\n", b"from the stdio server\n"
    running = cache_at(tmp_path)
    running.put(key(first, identity=HTTP), first)
    assert running.get(key(first, identity=HTTP)) == first
    cache_at(tmp_path).put(key(second, identity=STDIO), second)
    assert running.get(key(first, identity=HTTP)) is None
    assert running.get(key(second, identity=STDIO)) == second
    running.put(key(first, identity=HTTP), first)
    assert not blob_path(tmp_path, second).exists()
    assert cache_at(tmp_path).get(key(first, identity=HTTP)) == first


@pytest.mark.threat("T31")
def test_a_line_another_writer_left_torn_never_joins_the_next_line_a_running_cache_adds(
    tmp_path: Path,
) -> None:
    first, second = b"first\n", b"second\n"
    running = cache_at(tmp_path)
    running.put(key(first), first)
    index = tmp_path / "docs" / "index.jsonl"
    with index.open("ab") as torn:
        torn.write(b'{"blob": "cut sh')
    running.put(key(second), second)
    lines = index.read_bytes().splitlines()
    assert lines[-2] == b'{"blob": "cut sh'
    assert json.loads(lines[-1])["uri"] == key(second).uri


def _torn(data: bytes) -> dict[str, bytes]:
    return {
        "empty": b"",
        "cut short": data[: len(data) // 2],
        "one byte short": data[:-1],
        "never written": bytes(len(data)),
        "other blocks": bytes(255 - b for b in data),
    }


@pytest.mark.threat("T31")
@pytest.mark.parametrize("state", list(_torn(b"x")))
def test_a_blob_a_crash_left_torn_is_never_served_and_is_written_again(
    tmp_path: Path, state: str
) -> None:
    data = bytes(range(256)) * 16
    cache_at(tmp_path).put(key(data), data)
    blob_path(tmp_path, data).write_bytes(_torn(data)[state])
    after = cache_at(tmp_path)
    assert after.get(key(data)) is None
    assert not blob_path(tmp_path, data).exists()
    after.put(key(data), data)
    assert cache_at(tmp_path).get(key(data)) == data


@pytest.mark.threat("T31")
def test_an_index_a_crash_cut_anywhere_is_a_miss_until_the_next_write(tmp_path: Path) -> None:
    first, second = b"first\n", b"second\n"
    cache_at(tmp_path).put(key(first), first)
    cache_at(tmp_path).put(key(second), second)
    index = tmp_path / "docs" / "index.jsonl"
    whole = index.read_bytes()
    header_end = whole.index(b"\n") + 1
    states = [whole[:cut] for cut in range(len(whole) + 1)] + list(_torn(whole).values())
    for torn in states:
        index.write_bytes(torn)
        sound = torn[:header_end] == whole[:header_end]
        after = cache_at(tmp_path)
        assert after.get(key(first)) == (first if sound else None), torn
        # The next write binds the label again (its blobs go), and all works as before.
        after.put(key(second), second)
        assert cache_at(tmp_path).get(key(second)) == second
        after.put(key(first), first)
        assert cache_at(tmp_path).get(key(first)) == first
        assert index.read_bytes().startswith(whole[:header_end])


# --- what is refused -----------------------------------------------------------------------


@pytest.mark.threat("T31")
def test_a_label_directory_replaced_by_a_symlink_is_never_followed(tmp_path: Path) -> None:
    data = b"content\n"
    root = tmp_path / "cache"
    cache_at(root).put(key(data), data)
    (root / "docs").rename(tmp_path / "moved")
    (root / "docs").symlink_to(tmp_path / "moved")
    cache = cache_at(root)
    assert cache.get(key(data)) is None
    other = b"more\n"
    cache.put(key(other), other)
    assert not blob_path(tmp_path, other, label="moved").exists()


@pytest.mark.threat("T30")
@pytest.mark.parametrize("directory", ["docs", "docs/blobs"])
def test_a_label_directory_others_can_write_is_not_used(tmp_path: Path, directory: str) -> None:
    data = b"content\n"
    cache_at(tmp_path).put(key(data), data)
    (tmp_path / directory).chmod(0o777)
    cache = cache_at(tmp_path)
    assert cache.get(key(data)) is None
    other = b"more\n"
    cache.put(key(other), other)
    assert not blob_path(tmp_path, other).exists()


@pytest.mark.threat("T30")
def test_a_cache_root_inside_a_discovery_path_given_at_construction_is_off(
    tmp_path: Path,
) -> None:
    cache = DiskCache(tmp_path / "skills" / "cache", discovery=[tmp_path / "skills"])
    data = b"content\n"
    cache.put(key(data), data)
    assert cache.disabled is not None
    assert not (tmp_path / "skills").exists()
    with pytest.raises(UsageError):
        cache.purge()


# --- lifecycle -----------------------------------------------------------------------------


@pytest.mark.threat("T32")
def test_purge_removes_one_labels_files_and_nothing_the_cache_did_not_make(
    tmp_path: Path,
) -> None:
    cache = cache_at(tmp_path)
    for label in ("docs", "keep"):
        for data in (b"one\n", b"two\n"):
            cache.put(key(data, label=label), data)
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    assert cache.usage() == [
        LabelUsage("docs", HTTP, 2, 8),
        LabelUsage("keep", HTTP, 2, 8),
    ]
    assert cache.purge("docs") == (2, 8)
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["notes.txt"]
    assert cache.get(key(b"one\n", label="keep")) == b"one\n"
    assert cache.purge() == (2, 8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]
    assert cache.usage() == []
    with pytest.raises(ConfigError):
        cache.purge("../docs")


WRITER = """
import hashlib, os, sys
from pathlib import Path
os.umask(int(sys.argv[2], 8))
from skillward.cache._disk import DiskCache
from skillward.cache.seam import CacheKey
cache = DiskCache(Path(sys.argv[1]), discovery=())
for i in range(int(sys.argv[3])):
    data = hashlib.sha256(b"%d" % i).digest() * (2000 + i)
    digest = hashlib.sha256(data).hexdigest()
    key = CacheKey(origin="docs", identity="stdio:docs", skill="skill://docs/SKILL.md",
                   uri=f"skill://docs/{i}.bin", digest="sha256:" + digest, size=len(data))
    cache.put(key, data)
    got = cache.get(key)
    if got is not None and got != data:
        sys.exit(f"read back different bytes for blob {i}")
"""


@pytest.mark.threat("T31")
@pytest.mark.anyio
async def test_two_processes_writing_the_same_blobs_leave_only_whole_private_files(
    tmp_path: Path,
) -> None:
    root = tmp_path / "cache"
    count = 60
    results: list[int] = []

    async def writer(umask: str) -> None:
        argv = [sys.executable, "-c", WRITER, str(root), umask, str(count)]
        done = await anyio.run_process(argv, cwd=REPO_ROOT, check=False)
        assert done.returncode == 0, done.stderr.decode()
        results.append(done.returncode)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "000")  # would leave everything world-writable
            group.start_soon(writer, "777")  # would leave nothing readable, even to us
    assert results == [0, 0]
    blobs = list((root / "docs" / "blobs").iterdir())
    assert len(blobs) == count
    for path in blobs:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    header, *lines = (root / "docs" / "index.jsonl").read_text().splitlines()
    assert json.loads(header)["identity"] == "stdio:docs"
    assert {json.loads(line)["blob"] for line in lines} == {path.name for path in blobs}
    assert os.listdir(root) == ["docs"]
