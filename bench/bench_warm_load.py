"""Warm load against cold load of a 16 MiB, 512-file skill over stdio, in one run.

A load activates the skill and reads every file, verified, as blocks for the model,
on a connected server. Cold: an empty disk cache, so every file comes from the server
(and is written to the cache). Warm: the cache holds the skill, so every file comes
from disk, re-hashed by the cache and verified again by the host. Goal: warm at most
0.2x cold. The connection (server start, handshake, listing) is the same warm or cold
and the cache cannot change it, so it is measured apart and printed with the whole.

Also printed: the whole (connect and load), the verified bytes alone (cache reads
against server reads, no blocks built), and what writing the cache adds to a cold
load, against a host with no cache.

Run: .venv/bin/python bench/bench_warm_load.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import anyio

from _timing import report
from bench_cold_load import FILES, ROUNDS, make_skill
from skillward.cache._disk import DiskCache
from skillward.cache.seam import CacheKey, ContentCache, NoCache
from skillward.core.verify import verify_file
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import SkillHost
from skillward.trust.approvals import ActivationRequest, Decision

GOAL = 0.2


class _Yes:
    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.APPROVE


async def load(spec: ServerSpec, paths: list[str], cache: ContentCache) -> tuple[float, float]:
    """Seconds for the whole load, and for the part after connecting."""
    started = time.perf_counter()
    async with SkillHost(approver=_Yes(), cache=cache) as host:
        await host.connect(spec)
        connected = time.perf_counter()
        await host.activate("big-skill")
        for path in paths:
            await host.read_file("big-skill", path)
        done = time.perf_counter()
    return done - started, done - connected


async def bytes_only(spec: ServerSpec, cache: DiskCache) -> tuple[float, float]:
    """Seconds to get every file's verified bytes: from the server, then from the cache."""
    async with SkillsClient.connect(spec) as client:
        entry = (await client.list_skills()).entries[0]
        items = list(entry.manifest.values())
        started = time.perf_counter()
        for item in items:
            verify_file(item, await client.read_resource(item.uri, max_bytes=item.size))
        served = time.perf_counter() - started
    started = time.perf_counter()
    for item in items:
        key = CacheKey(
            origin=spec.label,
            identity=spec.identity,
            skill=entry.uri,
            uri=item.uri,
            digest=item.digest,
            size=item.size,
        )
        data = cache.get(key)
        assert data is not None, "the cache does not hold the skill"
        verify_file(item, data)
    return served, time.perf_counter() - started


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        served = root / "served"
        paths = make_skill(served)
        argv = [sys.executable, "-m", "skillward", "serve", str(served)]
        spec = ServerSpec(
            label="bench", transport=StdioTransport(command=argv[0], args=tuple(argv[1:]))
        )
        uncached, cold, warm, fetched, cached = [], [], [], [], []
        for round_ in range(ROUNDS):
            cache = DiskCache(root / f"cache-{round_}", discovery=())
            uncached.append(await load(spec, paths, NoCache()))
            cold.append(await load(spec, paths, cache))
            warm.append(await load(spec, paths, cache))
            from_server, from_cache = await bytes_only(spec, cache)
            fetched.append(from_server)
            cached.append(from_cache)
            assert cache.usage()[0].files == FILES, "the cold load did not fill the cache"

    cold_all, cold_load = min(c[0] for c in cold), min(c[1] for c in cold)
    warm_all, warm_load = min(w[0] for w in warm), min(w[1] for w in warm)
    print(
        f"warm vs cold load of one 16 MiB, {FILES}-file skill over stdio "
        f"(activate and read every file on a connected server; best of {ROUNDS})"
    )
    report("warm load", warm_load, "cold load", cold_load, goal=GOAL)
    report("whole, connecting included: warm", warm_all, "cold", cold_all)
    print(f"(connecting took {ms(warm_all - warm_load)} warm; the cache cannot change it)")
    print(
        f"verified bytes only: cache {ms(min(cached))}; server {ms(min(fetched))}; "
        f"ratio {min(cached) / min(fetched):.2f}x (the rest of a warm load builds the blocks)"
    )
    uncached_all = min(u[0] for u in uncached)
    # The same goal as bench_cold_load.py's, which measures it in alternation.
    report("cold with the cache writing", cold_all, "no cache", uncached_all, goal=1.1)


if __name__ == "__main__":
    anyio.run(main)
