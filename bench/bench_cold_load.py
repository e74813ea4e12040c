"""Cold load of a 16 MiB, 512-file skill over stdio: activate, then read every file, verified.

Prints five ratios, three with their goals:

* SkillHost activating the skill and reading every file (verified, each block built and
  its text rendered) against a bare mcp.Client reading the same files with no checks,
  run in alternation on the same server;
* the same cold load with an empty DiskCache, which writes every file, against one with
  no cache (goal 1.1x: the cache appends to packs and fsyncs nothing, see cache/_disk.py),
  as the median of per-round ratios, the order rotated each round (what one run leaves
  the file system to write back falls on each of the others alike);
* two lines with no goal, for reading the one above, each the no-cache load plus plain
  writes of the same bytes timed in the same rounds: appended to one file (the floor, set
  by the file system), and a file per blob (create, write, rename: what a cache that kept
  a file per blob would pay at least; on a virtual machine where creating a file swings
  between about 0.1 and 0.6 ms within minutes, 512 new files alone can cost a third of
  the load);
* verifying the bytes alone (size and digest against the listing) against plain
  hashlib.sha256 over the same bytes.

Run: .venv/bin/python bench/bench_cold_load.py
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import tempfile
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, in_rounds, report, report_rounds, side_by_side
from skillward.cache._disk import DiskCache
from skillward.cache.seam import ContentCache
from skillward.core.verify import sha256_digest, verify_file
from skillward.core.wire import ResourceItem
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import SkillHost
from skillward.trust.approvals import ActivationRequest, Decision

FILES = 512
SKILL_BYTES = 16 * 1024 * 1024
ROUNDS = 5
# The two differ by a few percent, so noise needs more rounds to fall away.
CACHE_ROUNDS = 9


class _Yes:
    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.APPROVE


def make_skill(root: Path) -> list[str]:
    skill = root / "big-skill"
    (skill / "data").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: big-skill\ndescription: A 16 MiB skill\n---\nBody\n"
    )
    per_file = (SKILL_BYTES - 200) // (FILES - 1)
    paths = []
    for i in range(FILES - 1):
        # Half text (served as text), half binary (served as base64 blobs).
        text = (b"line of text %d\n" % i) * (per_file // 14 + 1)
        data = text if i % 2 else os.urandom(per_file)
        (skill / "data" / f"f{i:03}.bin").write_bytes(data[:per_file])
        paths.append(f"data/f{i:03}.bin")
    return paths


def plain_files(directory: Path, blobs: list[bytes]) -> None:
    """The same bytes written with no checks: each a new file, renamed into place."""
    directory.mkdir()
    for index, data in enumerate(blobs):
        path = directory / f"{index}.tmp"
        path.write_bytes(data)
        path.replace(directory / str(index))


def plain_appends(path: Path, blobs: list[bytes]) -> None:
    """The same bytes written with no checks, appended to one new file a write each."""
    with path.open("ab", buffering=0) as out:
        for data in blobs:
            out.write(data)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = make_skill(root)
        argv = [sys.executable, "-m", "skillward", "serve", str(root)]
        uris = ["skill://big-skill/SKILL.md"] + [f"skill://big-skill/{p}" for p in paths]
        spec = ServerSpec(
            label="bench", transport=StdioTransport(command=argv[0], args=tuple(argv[1:]))
        )

        async def verified_load(cache: ContentCache | None = None) -> int:
            async with SkillHost(approver=_Yes(), cache=cache) as host:
                await host.connect(spec)
                total = len((await host.activate("big-skill")).block.text())
                for path in paths:
                    block = await host.read_file("big-skill", path)
                    total += len(block.text())
                return total

        async def bare_reads() -> int:
            total = 0
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            async with Client(params, cache=None) as client:
                for uri in uris:
                    result = await client.read_resource(uri, cache_mode="bypass")
                    item = result.contents[0]
                    if isinstance(item, types.TextResourceContents):
                        total += len(item.text.encode())
                    else:
                        total += len(base64.b64decode(item.blob))
            return total

        verified_time, bare_time = await side_by_side(verified_load, bare_reads, repeat=ROUNDS)
        caches = iter(range(CACHE_ROUNDS))

        async def filling_cache() -> int:
            # Empty each time: a cold load that writes every file it reads.
            cache = DiskCache(Path(cache_tmp) / str(next(caches)), discovery=())
            return await verified_load(cache)

        blobs = [(root / "big-skill" / p).read_bytes() for p in paths]
        files, appends = iter(range(CACHE_ROUNDS)), iter(range(CACHE_ROUNDS))

        async def a_file_per_blob() -> None:
            plain_files(Path(cache_tmp) / f"files-{next(files)}", blobs)

        async def appending() -> None:
            plain_appends(Path(cache_tmp) / f"appended-{next(appends)}", blobs)

        with tempfile.TemporaryDirectory() as cache_tmp:
            # The plain writes in the same rounds: what the file system charges varies.
            cached, uncached, appended, per_file = await in_rounds(
                filling_cache, verified_load, appending, a_file_per_blob, repeat=CACHE_ROUNDS
            )
        items = [
            ResourceItem(uri=f"skill://big-skill/{p}", digest=sha256_digest(b), size=len(b))
            for p, b in zip(paths, blobs, strict=True)
        ]

    verify_time = best_of(
        lambda: [verify_file(i, b) for i, b in zip(items, blobs, strict=True)], repeat=20
    )
    hash_time = best_of(lambda: [hashlib.sha256(b).hexdigest() for b in blobs], repeat=20)
    print(f"cold load of one 16 MiB, {FILES}-file skill over stdio (best of {ROUNDS})")
    report(
        "SkillHost activate + verified reads + block text",
        verified_time,
        "bare mcp.Client reads",
        bare_time,
        goal=1.15,
    )
    print(f"the cache's cost, {CACHE_ROUNDS} rounds")
    report_rounds(
        "the same cold load, writing every file to an empty DiskCache",
        cached,
        "with no cache",
        uncached,
        goal=1.1,
    )
    # What writing the bytes costs this machine's file system, whoever writes them.
    report_rounds(
        "  the floor: the no-cache load plus the same bytes appended plainly to one file",
        [load + extra for load, extra in zip(uncached, appended, strict=True)],
        "with no cache",
        uncached,
    )
    report_rounds(
        "  a file per blob: the no-cache load plus a plain create, write and rename of each",
        [load + extra for load, extra in zip(uncached, per_file, strict=True)],
        "with no cache",
        uncached,
    )
    # A guard, not a goal of its own: about 5 us a file over hashing, which noise can double.
    report("verify_file over every file", verify_time, "sha256 hexdigest", hash_time, goal=1.25)


if __name__ == "__main__":
    anyio.run(main)
