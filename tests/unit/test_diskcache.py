"""DiskCache on a real filesystem: what it keeps, what it refuses, what it evicts."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import tracemalloc
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillward.cache._disk import DiskCache, LabelUsage
from skillward.cache.seam import CacheKey
from skillward.core.config import Limits
from skillward.core.errors import ConfigError, UsageError
from tests.support.cache import (
    cached_blobs,
    index_records,
    packed_bytes,
    packs,
    placed,
    plant,
    stored,
)

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


def cache_at(root: Path, **options: object) -> DiskCache:
    return DiskCache(root, discovery=(), **options)  # type: ignore[arg-type]


# --- what is kept ------------------------------------------------------------------------


@pytest.mark.threat("T17")
def test_bytes_that_do_not_match_their_key_are_never_written(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    cache.put(key(b"listed bytes\n"), b"other bytes\n")
    cache.put(key(b"listed bytes\n"), b"listed bytes\n!")
    assert cache.get(key(b"listed bytes\n")) is None
    assert packs(tmp_path, "docs") == []


@pytest.mark.threat("T17")
@settings(max_examples=40)
@given(uri=st.text(max_size=80), skill=st.text(max_size=80), digest=st.text(max_size=80))
def test_nothing_the_server_wrote_ever_names_a_file(uri: str, skill: str, digest: str) -> None:
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
        assert all(re.fullmatch(r"pack-[0-9]+-[0-9a-f]{16}", p.name) for p in packs(root, "docs"))
        assert packed_bytes(root, "docs") in (b"", data)
        assert {p.name for p in root.iterdir()} == {"docs"}
        assert {p.name for p in (root / "docs").iterdir()} <= {"blobs", "index.jsonl", "lock"}


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
    assert first not in packed_bytes(tmp_path, "docs")
    assert cache.get(key(first, identity=HTTP)) is None
    assert cache.get(key(second, identity=STDIO)) == second
    header, *lines = (tmp_path / "docs" / "index.jsonl").read_text().splitlines()
    assert json.loads(header) == {"format": 2, "identity": STDIO}
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
        # Names only: reading the packs would move their access times, the LRU order.
        return {p.name for p in packs(tmp_path, "docs")}

    pack_of = {}
    for i, data in enumerate(blobs):
        if i == 3:
            clock.now += 10
            assert cache.get(key(blobs[0])) == blobs[0]  # used again: more recent than 1, 2
        clock.now += 10
        cache.put(key(data), data)
        where = placed(tmp_path, "docs", data)
        assert where is not None
        # A pack holds an eighth of the budget at most: here each blob is a pack of its own.
        pack_of[i] = where.pack.name
        if i == 3:
            assert kept() == {pack_of[j] for j in (0, 2, 3)}
    assert kept() == {pack_of[j] for j in (0, 3, 4)}
    assert cache.get(key(other, label="other")) == other
    too_big = b"x" * 1001
    cache.put(key(too_big), too_big)
    assert too_big not in packed_bytes(tmp_path, "docs")


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
        keys[hashlib.sha256(data).hexdigest()] = key(data)
        cache.put(key(data), data)
    kept = {p.name for p in packs(tmp_path, "docs")}
    lines = index_lines(tmp_path)
    assert len(kept) == 3
    assert {line["pack"] for line in lines} == kept
    assert len({line["blob"] for line in lines}) == len(lines)
    for line in lines:
        assert (line["skill"], line["uri"]) == (keys[line["blob"]].skill, keys[line["blob"]].uri)


def test_an_index_grown_past_its_blobs_is_trimmed_on_the_next_write(tmp_path: Path) -> None:
    cache = cache_at(tmp_path)
    first, second = b"first\n", b"second\n"
    cache.put(key(first), first)
    index = tmp_path / "docs" / "index.jsonl"
    gone = [
        {"blob": f"{i:064x}", "pack": "pack-1-0000000000000000", "at": 0, "size": 1}
        | {"written": 0, "skill": "skill://docs/SKILL.md", "uri": "x"}
        for i in range(600)
    ]
    with index.open("a") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in gone)
        handle.write('{"blob": "torn')
    assert index.stat().st_size > 64 * 1024
    cache.put(key(second), second)
    assert index.stat().st_size < 1024
    assert json.loads(index.read_text().splitlines()[0]) == {"format": 2, "identity": HTTP}
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
    assert packs(tmp_path, "docs") == []


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
    assert second not in packed_bytes(tmp_path, "docs")
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


@pytest.mark.threat("T31")
def test_a_line_caught_half_appended_is_read_again_once_whole(tmp_path: Path) -> None:
    first, second = b"first\n", b"second\n"
    running = cache_at(tmp_path)
    running.put(key(first), first)
    other = cache_at(tmp_path)
    other.put(key(second), second)
    index = tmp_path / "docs" / "index.jsonl"
    whole = index.read_bytes()
    line_start = whole.rindex(b"\n", 0, len(whole) - 1) + 1
    # The other writer's line, as a reader may catch it mid-append: half, then whole.
    index.write_bytes(whole[: line_start + 10])
    assert running.get(key(second)) is None
    with index.open("ab") as rest:
        rest.write(whole[line_start + 10 :])
    assert running.get(key(second)) == second
    assert running.get(key(first)) == first


@pytest.mark.threat("T31")
def test_a_line_a_concurrent_trim_dropped_is_a_miss_and_is_recorded_again(
    tmp_path: Path,
) -> None:
    first, second = b"first\n", b"second\n"
    running = cache_at(tmp_path)
    running.put(key(first), first)
    running.put(key(second), second)
    index = tmp_path / "docs" / "index.jsonl"
    header, first_line, _ = index.read_bytes().splitlines()
    # A trim elsewhere read the index before second's line was appended, then replaced it.
    trimmed = tmp_path / "trimmed"
    trimmed.write_bytes(header + b"\n" + first_line + b"\n")
    trimmed.replace(index)
    assert running.get(key(second)) is None
    assert running.get(key(first)) == first
    running.put(key(second), second)
    assert cache_at(tmp_path).get(key(second)) == second


def test_a_running_cache_finds_what_another_appended_since_it_last_read(tmp_path: Path) -> None:
    running = cache_at(tmp_path)
    blobs = [b"blob %d\n" % i for i in range(30)]
    running.put(key(blobs[0]), blobs[0])
    for data in blobs[1:]:
        cache_at(tmp_path).put(key(data), data)
        assert running.get(key(data)) == data
    assert all(running.get(key(data)) == data for data in blobs)


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
    where = placed(tmp_path, "docs", data)
    assert where is not None
    where.pack.write_bytes(_torn(data)[state])
    after = cache_at(tmp_path)
    assert after.get(key(data)) is None
    after.put(key(data), data)
    assert stored(tmp_path, "docs", data) == data
    assert cache_at(tmp_path).get(key(data)) == data


@pytest.mark.threat("T31")
def test_an_index_a_crash_cut_anywhere_is_a_miss_until_the_next_write(tmp_path: Path) -> None:
    first, second = b"first\n", b"second\n"
    cache_at(tmp_path).put(key(first), first)
    cache_at(tmp_path).put(key(second), second)
    index = tmp_path / "docs" / "index.jsonl"
    whole = index.read_bytes()
    header_end = whole.index(b"\n") + 1
    first_end = whole.index(b"\n", header_end) + 1
    blobs = tmp_path / "docs" / "blobs"
    kept = {path.name: path.read_bytes() for path in blobs.iterdir()}
    states = [whole[:cut] for cut in range(len(whole) + 1)] + list(_torn(whole).values())
    for torn in states:
        # The packs as the crash left them (whole: a later write may have dropped them).
        for path in blobs.iterdir():
            path.unlink()
        for name, data in kept.items():
            (blobs / name).write_bytes(data)
        index.write_bytes(torn)
        # First's bytes are found only through a whole header and its own whole line.
        sound = torn[:first_end] == whole[:first_end]
        after = cache_at(tmp_path)
        assert after.get(key(first)) == (first if sound else None), torn
        # The next write binds the label again if it must (its blobs go), and all works.
        after.put(key(second), second)
        assert cache_at(tmp_path).get(key(second)) == second
        after.put(key(first), first)
        assert cache_at(tmp_path).get(key(first)) == first
        assert index.read_bytes().startswith(whole[:header_end])


@pytest.mark.threat("T32")
def test_a_cache_an_earlier_version_left_a_file_per_blob_is_never_read_and_goes(
    tmp_path: Path,
) -> None:
    data = b"content\n"
    blobs = tmp_path / "docs" / "blobs"
    blobs.mkdir(parents=True, mode=0o700)
    tmp_path.joinpath("docs").chmod(0o700)
    old = blobs / hashlib.sha256(data).hexdigest()
    old.write_bytes(data)
    index = {"format": 1, "identity": HTTP}
    (tmp_path / "docs" / "index.jsonl").write_text(json.dumps(index) + "\n")
    cache = cache_at(tmp_path)
    assert cache.get(key(data)) is None
    cache.put(key(data), data)
    assert not old.exists()
    assert cache_at(tmp_path).get(key(data)) == data


# --- the index's places are checked, never trusted -----------------------------------------


def rewrite_records(root: Path, change: dict[str, object]) -> None:
    """Every record line of docs's index with ``change`` applied (as a tamperer would)."""
    index = root / "docs" / "index.jsonl"
    header, *lines = index.read_text().splitlines()
    changed = [json.dumps(json.loads(line) | change) for line in lines]
    index.write_text("\n".join([header, *changed]) + "\n")


@pytest.mark.threat("T17")
def test_a_line_placing_a_blob_at_other_bytes_is_never_served(tmp_path: Path) -> None:
    first, second = b"first file\n", b"other file\n"
    cache = cache_at(tmp_path)
    cache.put(key(first), first)
    cache.put(key(second), second)
    where = placed(tmp_path, "docs", second)
    assert where is not None
    # Every line now points at second's bytes (same length as first's).
    rewrite_records(tmp_path, {"pack": where.pack.name, "at": where.at, "size": where.size})
    after = cache_at(tmp_path)
    assert after.get(key(first)) is None
    after.put(key(first), first)
    assert cache_at(tmp_path).get(key(first)) == first
    assert cache_at(tmp_path).get(key(second)) == second


@pytest.mark.threat("T31")
@settings(max_examples=40)
@given(pack=st.text(max_size=60))
def test_a_line_naming_a_pack_outside_the_cache_is_never_followed(pack: str) -> None:
    data = b"content\n"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "cache"
        cache_at(root).put(key(data), data)
        # Exactly the right bytes, one level up and at an absolute path: never read.
        (root / "docs" / "elsewhere").write_bytes(data)
        for name in (pack, "../elsewhere", str(root / "docs" / "elsewhere")):
            rewrite_records(root, {"pack": name, "at": 0})
            assert cache_at(root).get(key(data)) is None
        assert (root / "docs" / "elsewhere").read_bytes() == data


@pytest.mark.threat("T32")
def test_a_line_recording_a_size_other_than_the_listing_is_never_read(tmp_path: Path) -> None:
    data = b"content\n"
    cache_at(tmp_path).put(key(data), data)
    # A huge recorded size is refused before anything is read or allocated.
    rewrite_records(tmp_path, {"size": 2**62})
    assert cache_at(tmp_path).get(key(data)) is None
    # One the pack could hold (sparse, 64 MiB) is refused too: nothing of it is read.
    [pack] = packs(tmp_path, "docs")
    os.truncate(pack, 64 * 1024 * 1024)
    rewrite_records(tmp_path, {"size": 64 * 1024 * 1024})
    tracemalloc.start()
    try:
        assert cache_at(tmp_path).get(key(data)) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024


def test_filling_the_cache_appends_to_one_pack_instead_of_a_file_per_blob(
    tmp_path: Path,
) -> None:
    cache = cache_at(tmp_path)
    blobs = [b"file %d\n" % i * 400 for i in range(200)]
    for data in blobs:
        cache.put(key(data), data)
    # Creating a file costs a cold load more than writing its bytes.
    assert len(packs(tmp_path, "docs")) == 1
    assert packed_bytes(tmp_path, "docs") == b"".join(blobs)
    assert all(cache_at(tmp_path).get(key(data)) == data for data in blobs)


def test_a_cache_starts_a_new_pack_when_its_own_is_full_or_gone(tmp_path: Path) -> None:
    cache = cache_at(tmp_path, limits=Limits(max_cache_bytes=8000))
    blobs = [bytes([i]) * 400 for i in range(5)]  # a pack holds an eighth: 1000 bytes
    for data in blobs[:3]:
        cache.put(key(data), data)
    assert [p.stat().st_size for p in packs(tmp_path, "docs")] in ([800, 400], [400, 800])
    for path in packs(tmp_path, "docs"):
        path.unlink()  # removed by another process's eviction or purge
    for data in blobs[3:]:
        cache.put(key(data), data)
    assert packed_bytes(tmp_path, "docs") == blobs[3] + blobs[4]
    assert all(cache.get(key(data)) == data for data in blobs[3:])


@pytest.mark.threat("T31")
@pytest.mark.parametrize("planted", ["symlink", "fifo", "directory"])
@pytest.mark.anyio
async def test_something_planted_where_a_cache_appends_is_never_written_through(
    tmp_path: Path, planted: str
) -> None:
    first, second = b"first\n", b"second\n"
    cache = cache_at(tmp_path)
    cache.put(key(first), first)
    [pack] = packs(tmp_path, "docs")
    target = tmp_path / "target"
    target.write_bytes(b"not the cache's\n")
    plant(pack, planted, target)
    # A FIFO opened to write without O_NONBLOCK would hang the writer.
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(cache.put, key(second), second, abandon_on_cancel=True)
    assert target.read_bytes() == b"not the cache's\n"
    assert stored(tmp_path, "docs", second) == second
    assert cache_at(tmp_path).get(key(second)) == second


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
    assert other not in packed_bytes(tmp_path, "moved")


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
    assert other not in packed_bytes(tmp_path, "docs")


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
    # Every line of the index places whole bytes that hash to its digest, whoever wrote them.
    records = index_records(root, "docs")
    assert len(cached_blobs(root, "docs")) == count
    for record in records:
        pack = (root / "docs" / "blobs" / str(record["pack"])).read_bytes()
        at, size = record["at"], record["size"]
        assert isinstance(at, int)
        assert isinstance(size, int)
        assert hashlib.sha256(pack[at : at + size]).hexdigest() == record["blob"]
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    header = (root / "docs" / "index.jsonl").read_text().splitlines()[0]
    assert json.loads(header)["identity"] == "stdio:docs"
    assert os.listdir(root) == ["docs"]
    cache = cache_at(root)
    for i in range(count):
        data = hashlib.sha256(b"%d" % i).digest() * (2000 + i)
        assert cache.get(key(data, identity="stdio:docs", uri=f"skill://docs/{i}.bin")) == data
