"""Listing 10,000 skills over stdio: SkillsClient.list_skills() against a bare mcp.Client
doing the same paged skills/list calls with no validation, on the same server.

Run: .venv/bin/python bench/bench_list_stdio.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from pydantic import BaseModel, ConfigDict

from skillward._methods import SkillsListParams, SkillsListRequest
from skillward.client import SkillsClient
from skillward.servers import ServerSpec, StdioTransport

SKILLS = 10_000
PAGE_SIZE = "500"
ROUNDS = 3


class _Raw(BaseModel):
    model_config = ConfigDict(extra="allow")


def make_tree(root: Path) -> None:
    for i in range(SKILLS):
        skill = root / f"team{i % 20}" / f"skill-{i}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Benchmark skill {i}\n---\nBody {i}\n"
        )
        (skill / "notes.md").write_text(f"notes {i}\n")


async def bare_listing(client: Client) -> int:
    count, cursor = 0, None
    while True:
        result: Any = await client.session.send_request(
            SkillsListRequest(params=SkillsListParams(cursor=cursor)), _Raw
        )
        extra = result.model_extra or {}
        count += len(extra["skills"])
        cursor = extra.get("nextCursor")
        if not cursor:
            return count


async def best(fn: Any) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return min(times)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root)
        argv = [sys.executable, "-m", "skillward", "serve", str(root), "--page-size", PAGE_SIZE]
        spec = ServerSpec(
            label="bench", transport=StdioTransport(command=argv[0], args=tuple(argv[1:]))
        )
        async with Client(
            StdioServerParameters(command=argv[0], args=argv[1:]), cache=None
        ) as bare:
            assert await bare_listing(bare) == SKILLS
            baseline = await best(lambda: bare_listing(bare))
        async with SkillsClient.connect(spec) as client:
            listing = await client.list_skills()
            assert len(listing.entries) == SKILLS
            measured = await best(client.list_skills)
    print(f"skills/list of {SKILLS} skills over stdio, pages of {PAGE_SIZE}")
    print(
        f"SkillsClient.list_skills (validated): {measured * 1000:.0f} ms; "
        f"bare mcp.Client: {baseline * 1000:.0f} ms; ratio {measured / baseline:.2f}x"
    )


if __name__ == "__main__":
    anyio.run(main)
