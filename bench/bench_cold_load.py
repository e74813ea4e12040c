"""Cold load of a 16 MiB, 512-file skill over stdio: activate, then read every file, verified.

Prints the ratio against a bare mcp.Client reading the same files with no checks,
and the ratio of verified throughput against plain hashlib.sha256 over the same bytes.

Run: .venv/bin/python bench/bench_cold_load.py
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from skillward.approvals import ActivationRequest, Decision
from skillward.host import SkillHost
from skillward.servers import ServerSpec, StdioTransport

FILES = 512
SKILL_BYTES = 16 * 1024 * 1024
ROUNDS = 3


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


async def best(fn: Callable[[], Awaitable[int]]) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        size = await fn()
        times.append(time.perf_counter() - started)
    return min(times), size


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = make_skill(root)
        argv = [sys.executable, "-m", "skillward", "serve", str(root)]
        uris = ["skill://big-skill/SKILL.md"] + [f"skill://big-skill/{p}" for p in paths]
        spec = ServerSpec(
            label="bench", transport=StdioTransport(command=argv[0], args=tuple(argv[1:]))
        )

        async def verified_load() -> int:
            async with SkillHost(approver=_Yes()) as host:
                await host.connect(spec)
                total = len((await host.activate("big-skill")).block.content)
                for path in paths:
                    block = await host.read_file("big-skill", path)
                    total += block.size or 0
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

        verified_time, _ = await best(verified_load)
        bare_time, total = await best(bare_reads)
        blobs = [(root / "big-skill" / p).read_bytes() for p in paths]
        started = time.perf_counter()
        for _ in range(ROUNDS):
            for blob in blobs:
                hashlib.sha256(blob).digest()
        hash_time = (time.perf_counter() - started) / ROUNDS

    mib = total / (1024 * 1024)
    print(f"cold load of one {mib:.1f} MiB, {FILES}-file skill over stdio (best of {ROUNDS})")
    print(
        f"SkillHost activate + verified reads: {verified_time * 1000:.0f} ms; "
        f"bare mcp.Client reads: {bare_time * 1000:.0f} ms; "
        f"ratio {verified_time / bare_time:.2f}x"
    )
    print(
        f"verified throughput {mib / verified_time:.0f} MiB/s; "
        f"hashlib.sha256 {mib / hash_time:.0f} MiB/s; "
        f"ratio {(mib / hash_time) / (mib / verified_time):.1f}x slower than hashing alone"
    )


if __name__ == "__main__":
    anyio.run(main)
