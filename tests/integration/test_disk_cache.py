"""The disk cache behind SkillHost, over real transports.

Reads are counted on the server side (the hostile server's request log; the skills
served here tell no lies). Every test has its own cache root.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from skillward.cache._disk import DiskCache
from skillward.core.config import Limits
from skillward.core.context import ContextBlock
from skillward.core.errors import SkillNotFound
from skillward.edge._local import LocalSkillDir, discover
from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.cache import cached_blobs, packs, placed, plant, stored
from tests.support.doubles import Approving
from tests.support.servers import http_server
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio
REPO_ROOT = str(Path(__file__).resolve().parents[2])
FILES = {
    "cached/SKILL.md": skill_md("cached", "A skill worth caching"),
    "cached/notes.md": b"notes, version one\n",
    "cached/data/blob.bin": bytes(range(256)) * 8,
}
PATHS = ("notes.md", "data/blob.bin")
Tamper = Callable[[Path], None]


def build(root: Path) -> Path:
    for relative, data in FILES.items():
        write(root, relative, data)
    return root


def everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


class Server:
    """A logged server: stdio (one process per connection) or HTTP (one process)."""

    def __init__(self, spec: ServerSpec, log: Path) -> None:
        self.spec = spec
        self.log = log

    def reads(self) -> list[str]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [uri for method, uri in map(json.loads, lines) if method == "resources/read"]

    def labelled(self, label: str) -> ServerSpec:
        return self.spec.model_copy(update={"label": label})


def hostile_argv(root: Path, log: Path) -> list[str]:
    return [sys.executable, "-m", "tests.support.hostile", str(root), "--log", str(log)]


def stdio_server(root: Path, log: Path) -> Server:
    """A server launched afresh for each connection: a restart every time."""
    argv = hostile_argv(root, log)
    stdio = StdioTransport(command=argv[0], args=tuple(argv[1:]), cwd=REPO_ROOT)
    return Server(ServerSpec(label="acme", transport=stdio), log)


@asynccontextmanager
async def serve(root: Path, transport: str, log: Path) -> AsyncIterator[Server]:
    if transport == "stdio":
        yield stdio_server(root, log)
        return
    async with http_server([*hostile_argv(root, log), "--http", "127.0.0.1:0"]) as url:
        yield Server(ServerSpec(label="acme", transport=HttpTransport(url=url)), log)


@pytest.fixture(scope="module")
async def http(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    root = build(tmp_path_factory.mktemp("served"))
    async with serve(root, "http", tmp_path_factory.mktemp("log") / "requests.jsonl") as server:
        yield server


@pytest.fixture
def stdio(tmp_path: Path) -> Server:
    return stdio_server(build(tmp_path / "served"), tmp_path / "requests.jsonl")


@asynccontextmanager
async def host(
    cache: DiskCache, *specs: ServerSpec, local: tuple[LocalSkillDir, ...] = ()
) -> AsyncIterator[SkillHost]:
    config = HostConfig(local_dirs=local)
    with anyio.fail_after(60):
        async with SkillHost(config=config, approver=Approving(), cache=cache) as skill_host:
            for spec in specs:
                await skill_host.connect(spec)
            yield skill_host


async def load(skill_host: SkillHost, ref: str = "cached") -> list[ContextBlock]:
    blocks = [(await skill_host.activate(ref)).block]
    for path in PATHS:
        blocks.append(await skill_host.read_file(ref, path))
    return blocks


def comparable(blocks: list[ContextBlock]) -> list[str]:
    """The blocks' text with each block's random boundary taken out."""
    return [block.text().replace(block.boundary, "BOUNDARY") for block in blocks]


# --- warm loads -----------------------------------------------------------------------


@pytest.mark.threat("T17")
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_warm_load_of_an_unchanged_skill_reads_nothing_from_the_server(
    tmp_path: Path, transport: str
) -> None:
    root = build(tmp_path / "served")
    async with serve(root, transport, tmp_path / "requests.jsonl") as server:
        async with host(DiskCache(tmp_path / "cache"), server.spec) as cold_host:
            cold = await load(cold_host)
        assert len(server.reads()) == 3
        # A new cache object on the same directory: what a restarted host sees.
        async with host(DiskCache(tmp_path / "cache"), server.spec) as warm_host:
            warm = await load(warm_host)
    assert len(server.reads()) == 3
    assert comparable(warm) == comparable(cold)
    assert {b.boundary for b in warm}.isdisjoint(b.boundary for b in cold)


@pytest.mark.threat("T17")
async def test_after_a_restart_cached_content_is_still_mcp_origin_and_never_discovered(
    stdio: Server, tmp_path: Path
) -> None:
    cache_root = tmp_path / "cache"
    async with host(DiskCache(cache_root), stdio.spec) as first:
        await load(first)
    async with host(DiskCache(cache_root), stdio.spec) as second:
        warm = await load(second)
    assert len(stdio.reads()) == 3
    for block in warm:
        assert block.origin is not None
        assert (block.origin.kind, block.origin.label, block.trust) == ("mcp", "acme", "untrusted")
        assert block.verified
        assert block.digest is not None
        assert 'origin="mcp" server="acme" trust="untrusted"' in block.text()
        assert 'verified="true"' in block.text()
    skill = FILES["cached/SKILL.md"]
    assert stored(cache_root, "acme", skill) == skill
    # Local discovery pointed straight at the cache still finds no skill in it.
    _, records, declined, _ = discover(LocalSkillDir("probe", cache_root), limits=Limits())
    assert (records, declined) == ([], [])


@pytest.mark.threat("T17")
async def test_a_changed_file_is_fetched_again_and_an_unchanged_one_is_not(
    stdio: Server, tmp_path: Path
) -> None:
    async with host(DiskCache(tmp_path / "cache"), stdio.spec) as first:
        await load(first)
    write(tmp_path / "served", "cached/notes.md", b"notes, version two\n")
    before = len(stdio.reads())
    async with host(DiskCache(tmp_path / "cache"), stdio.spec) as second:
        blocks = await load(second)
    assert stdio.reads()[before:] == ["skill://cached/notes.md"]
    assert "version two" in blocks[1].content


@pytest.mark.threat("T17")
async def test_the_cache_never_stands_in_for_a_listing(stdio: Server, tmp_path: Path) -> None:
    async with host(DiskCache(tmp_path / "cache"), stdio.spec) as first:
        await load(first)
    for relative in FILES:
        (tmp_path / "served" / relative).unlink()
    write(tmp_path / "served", "other/SKILL.md", skill_md("other"))
    async with host(DiskCache(tmp_path / "cache"), stdio.spec) as second:
        with pytest.raises(SkillNotFound):
            await second.activate("cached")
        with pytest.raises(SkillNotFound):
            await second.read_file("acme:cached", "notes.md")


# --- what is on disk is never trusted -----------------------------------------------------


async def reload_after(
    server: Server, cache_root: Path, relative: str, tamper: Tamper, *, fetched: list[str]
) -> None:
    """Load, tamper with the pack holding one file, load again: only the files ``fetched``
    are fetched again, the model gets exactly what it got the first time, and every file
    is cached whole again."""
    async with host(DiskCache(cache_root), server.spec) as first:
        cold = await load(first)
    where = placed(cache_root, "acme", FILES[relative])
    assert where is not None
    tamper(where.pack)
    before = len(server.reads())
    async with host(DiskCache(cache_root), server.spec) as second:
        warm = await load(second)  # a FIFO would block a plain open: fail_after bounds it
    assert sorted(server.reads()[before:]) == sorted("skill://" + f for f in fetched)
    assert comparable(warm) == comparable(cold)
    for data in FILES.values():
        assert stored(cache_root, "acme", data) == data
    assert all(path.is_file() and not path.is_symlink() for path in packs(cache_root, "acme"))


@pytest.mark.threat("T17")
async def test_a_cached_file_with_one_flipped_byte_is_removed_and_fetched_again(
    http: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blob = "cached/data/blob.bin"

    def flip(path: Path) -> None:
        where = placed(tmp_path / "cache", "acme", FILES[blob])
        assert where is not None
        flipped = bytearray(path.read_bytes())
        flipped[where.at + 100] ^= 0x01
        path.write_bytes(bytes(flipped))

    await reload_after(http, tmp_path / "cache", blob, flip, fetched=[blob])
    assert "does not hash to its digest" in caplog.text


@pytest.mark.threat("T31")
@pytest.mark.parametrize("planted", ["symlink", "fifo", "directory"])
async def test_anything_but_a_regular_file_at_a_pack_path_is_refused(
    http: Server, tmp_path: Path, planted: str
) -> None:
    # The symlink's target holds exactly the right bytes: it is refused all the same.
    target = write(tmp_path / "elsewhere", "notes.md", FILES["cached/notes.md"])

    def planting(path: Path) -> None:
        plant(path, planted, target)

    # The pack held every file of the load: each is fetched again.
    await reload_after(http, tmp_path / "cache", "cached/notes.md", planting, fetched=list(FILES))
    assert target.read_bytes() == FILES["cached/notes.md"]


@pytest.mark.threat("T31")
@pytest.mark.parametrize("crash", ["everything empty", "everything cut short"])
async def test_a_load_after_a_crash_tore_the_cache_fetches_again_and_never_fails(
    stdio: Server, tmp_path: Path, crash: str
) -> None:
    # Writes are not fsync-ed: a power loss can leave the blobs and the index like this.
    cache_root = tmp_path / "cache"
    async with host(DiskCache(cache_root), stdio.spec) as first:
        cold = await load(first)
    torn = [*packs(cache_root, "acme"), cache_root / "acme" / "index.jsonl"]
    assert len(torn) == 2
    for path in torn:
        path.write_bytes(b"" if crash == "everything empty" else path.read_bytes()[:20])
    async with host(DiskCache(cache_root), stdio.spec) as second:
        after_crash = await load(second)
    assert len(stdio.reads()) == 6
    assert comparable(after_crash) == comparable(cold)
    async with host(DiskCache(cache_root), stdio.spec) as third:
        warm = await load(third)
    assert len(stdio.reads()) == 6  # the load after the crash filled the cache again
    assert comparable(warm) == comparable(cold)


# --- isolation from discovery, permissions ---------------------------------------------------


def overlapping(tmp_path: Path, layout: str) -> tuple[Path, Path]:
    """(cache root, local skills directory) that overlap in the way ``layout`` names."""
    skills = tmp_path / "skills"
    write(skills, "mine/SKILL.md", skill_md("mine"))
    if layout == "inside":
        return skills / "cache", skills
    if layout == "containing":
        return tmp_path, skills
    if layout == "discovery-links-to-cache":
        (tmp_path / "cache").mkdir()
        link = tmp_path / "linked-skills"
        link.symlink_to(tmp_path / "cache")
        return tmp_path / "cache", link
    link = tmp_path / "linked-cache"
    link.symlink_to(skills)
    return link / "sub", skills


@pytest.mark.threat("T30")
@pytest.mark.parametrize(
    "layout", ["inside", "containing", "discovery-links-to-cache", "cache-links-into-discovery"]
)
async def test_a_cache_overlapping_a_discovery_path_is_off_and_writes_nothing(
    http: Server, tmp_path: Path, layout: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache_root, skills = overlapping(tmp_path, layout)
    before_files = everything_under(tmp_path)
    cache = DiskCache(cache_root)
    before = len(http.reads())
    with caplog.at_level(logging.WARNING, logger="skillward"):
        async with host(cache, http.spec, local=(LocalSkillDir("project", skills),)) as live:
            await load(live)
            await load(live)
    assert len(http.reads()) - before == 6
    assert cache.disabled is not None
    assert everything_under(tmp_path) == before_files
    warnings = [r.getMessage() for r in caplog.records if "disk cache off" in r.getMessage()]
    assert len(warnings) == 1
    assert str(cache_root) in warnings[0]
    assert str(skills) in warnings[0]


@pytest.mark.threat("T30")
async def test_a_local_directory_added_later_stops_all_further_writes(
    http: Server, tmp_path: Path
) -> None:
    cache_root = tmp_path / "outer" / "cache"
    cache = DiskCache(cache_root)
    async with host(cache, http.spec) as live:
        await live.activate("cached")
        assert len(cached_blobs(cache_root, "acme")) == 1
        live.add_local_dir(LocalSkillDir("late", tmp_path / "outer"))
        assert cache.disabled is not None
        await live.read_file("cached", "notes.md")
    assert len(cached_blobs(cache_root, "acme")) == 1


def someone_elses_directory(tmp_path: Path) -> Path:
    """A directory this process can read but does not own."""
    if os.geteuid() == 0:
        other = tmp_path / "other"
        other.mkdir(mode=0o755)
        os.chown(other, 65534, 65534)
        return other
    return Path("/etc")


@pytest.mark.threat("T30")
@pytest.mark.parametrize("problem", ["group-writable", "other-writable", "other-owner"])
async def test_a_cache_root_that_is_not_the_users_own_turns_caching_off(
    http: Server, tmp_path: Path, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    if problem == "other-owner":
        cache_root = someone_elses_directory(tmp_path)
    else:
        cache_root = tmp_path / "cache"
        cache_root.mkdir()
        cache_root.chmod(0o770 if problem == "group-writable" else 0o707)
    # Top level only: a cache writes <root>/<label> first, and /etc is large.
    before_files = sorted(os.listdir(cache_root))
    cache = DiskCache(cache_root)
    assert cache.disabled is not None
    assert ("owned by" if problem == "other-owner" else "writable by group or others") in (
        cache.disabled
    )
    async with host(cache, http.spec) as live:
        await load(live)
    assert sorted(os.listdir(cache_root)) == before_files
    assert "disk cache off" in caplog.text


@pytest.mark.threat("T30")
async def test_cache_directories_and_files_are_private_whatever_the_umask(
    http: Server, tmp_path: Path
) -> None:
    cache_root = tmp_path / "deep" / "cache"
    async with host(DiskCache(cache_root), http.spec) as live:
        await load(live)
    for path in [cache_root, *cache_root.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        assert path.stat().st_uid == os.geteuid()


# --- identity, lifecycle ----------------------------------------------------------------------


@pytest.mark.threat("T32")
async def test_a_label_pointed_at_a_different_server_never_uses_the_old_blobs(
    http: Server, stdio: Server, tmp_path: Path
) -> None:
    cache_root = tmp_path / "cache"
    async with host(DiskCache(cache_root), http.spec) as first:
        await load(first)
    # Same label, same skill, same digests: only the server behind the label differs.
    async with host(DiskCache(cache_root), stdio.spec) as second:
        await load(second)
    assert len(stdio.reads()) == 3
    index = (cache_root / "acme" / "index.jsonl").read_text().splitlines()
    assert json.loads(index[0])["identity"] == stdio.spec.identity


@pytest.mark.threat("T32")
async def test_forget_server_purges_exactly_that_servers_cache(
    http: Server, tmp_path: Path
) -> None:
    cache_root = tmp_path / "cache"
    keep, forget = http.labelled("keep"), http.labelled("forget")
    async with host(DiskCache(cache_root), keep, forget) as live:
        await load(live, "keep:cached")
        await load(live, "forget:cached")
        await live.forget_server("forget")
        assert [o.label for o in live.registry.origins()] == ["keep"]
    assert not (cache_root / "forget").exists()
    assert len(cached_blobs(cache_root, "keep")) == 3
    before = len(http.reads())
    async with host(DiskCache(cache_root), keep) as again:
        await load(again, "keep:cached")
    assert len(http.reads()) == before
