"""Listing 10,000 skills over stdio: `skillward serve` against a minimal mcp server.

The minimal server (bench/_pages_server.py) answers skills/list from the very pages
`skillward serve` sent, precomputed in a JSON file. Measured separately:

* start-up: from launching the server to an initialized session (`skillward serve`
  scans and parses every skill first; the minimal server reads one JSON file);
* the listing: one paged skills/list walk by the same bare mcp.Client on a warm session,
  each server walked while its connection is the only one open;
* the client's side: SkillsClient.list_skills (listing bounds, every entry validated)
  against that bare walk, both from the minimal server;
* connecting: SkillHost.connect (the server started, the handshake, the listing bounded
  and validated, every skill registered) against a bare mcp.Client started, handshaken
  and walked through every page, both from the minimal server.

Goals: start-up within 1.5x of the minimal server's, though it does the real work of
reading, hashing and checking every skill while the minimal server reads one file (both
pay for starting Python and importing the mcp SDK); the listing walk within 1.5x;
connecting within 1.15x of the bare client. The client's own goal (5x) is a guard
against regressions rather than a target: its baseline is a walk with no checks at all.

Run: .venv/bin/python bench/bench_list_stdio.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from pydantic import BaseModel, ConfigDict

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of_async, report, side_by_side
from skillward.edge._methods import SkillsListParams, SkillsListRequest
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost

SKILLS = 10_000
PAGE_SIZE = 500
ROUNDS = 7
# Connecting includes starting a Python server process, whose time varies by about a tenth
# from one round to the next, against a difference of a few percent: noise needs more
# rounds to fall away (per-round ratios in a quiet run: 0.96-1.24x, median 1.08x).
CONNECT_ROUNDS = 15


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


async def walk(client: Client) -> list[dict[str, Any]]:
    """Every skills/list page, as received, with no validation."""
    pages, cursor = [], None
    while True:
        result: Any = await client.session.send_request(
            SkillsListRequest(params=SkillsListParams(cursor=cursor)), _Raw
        )
        pages.append(dict(result.model_extra or {}))
        cursor = pages[-1].get("nextCursor")
        if not cursor:
            return pages


def params(argv: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:])


def start_up(argv: list[str]) -> Callable[[], Awaitable[float]]:
    async def run() -> float:
        started = time.perf_counter()
        async with Client(params(argv), cache=None) as client:
            elapsed = time.perf_counter() - started
            assert client.server_capabilities is not None
        return elapsed

    return run


async def best_start_up(serve: list[str], minimal: list[str]) -> tuple[float, float]:
    best = [float("inf"), float("inf")]
    for _ in range(5):
        for index, argv in enumerate((serve, minimal)):
            best[index] = min(best[index], await start_up(argv)())
    return best[0], best[1]


async def best_walk(argv: list[str]) -> float:
    async with Client(params(argv), cache=None) as client:
        assert sum(len(p["skills"]) for p in await walk(client)) == SKILLS
        return await best_of_async(lambda: walk(client), repeat=ROUNDS)


async def best_walks(serve: list[str], minimal: list[str]) -> tuple[float, float]:
    """The best walk of each server, each on a connection of its own while it is the only
    one open (of two open at once, the one opened first walks slower, whichever server
    it is), taken in turns so that load on a shared machine falls on both alike."""
    best = [float("inf"), float("inf")]
    for _ in range(2):
        for index, argv in enumerate((serve, minimal)):
            best[index] = min(best[index], await best_walk(argv))
    return best[0], best[1]


async def write_pages(serve: list[str], path: Path) -> int:
    """Write ``skillward serve``'s pages to ``path``, with the minimal server's own
    cursors; how many there are. Not kept: 10,000 entries of the harness's own would
    weigh on every garbage collection timed after."""
    async with Client(params(serve), cache=None) as client:
        pages = await walk(client)
    for index, page in enumerate(pages):
        if "nextCursor" in page:
            page["nextCursor"] = str(index + 1)
    await anyio.Path(path).write_text(json.dumps(pages))
    return len(pages)


async def host_connect(spec: ServerSpec) -> float:
    """How long SkillHost.connect takes: start, handshake, listing, registry."""
    async with SkillHost(config=HostConfig(local_dirs=())) as host:
        started = time.perf_counter()
        await host.connect(spec)
        elapsed = time.perf_counter() - started
        assert len(host.registry.records()) == SKILLS
    return elapsed


async def bare_connect(argv: list[str]) -> float:
    """How long a bare mcp.Client takes to start, handshake and walk every page."""
    started = time.perf_counter()
    async with Client(params(argv), cache=None) as client:
        pages = await walk(client)
        elapsed = time.perf_counter() - started
    assert sum(len(p["skills"]) for p in pages) == SKILLS
    return elapsed


async def best_connects(spec: ServerSpec, minimal: list[str]) -> tuple[float, float]:
    """The best of each, taken in turns so that load on a shared machine falls on both
    alike; neither counts closing its connection."""
    best = [float("inf"), float("inf")]
    for _ in range(CONNECT_ROUNDS):
        best[0] = min(best[0], await host_connect(spec))
        best[1] = min(best[1], await bare_connect(minimal))
    return best[0], best[1]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "skills"
        make_tree(root)
        serve = [sys.executable, "-m", "skillward", "serve", str(root)]
        serve += ["--page-size", str(PAGE_SIZE)]
        pages_file = Path(tmp) / "pages.json"
        count = await write_pages(serve, pages_file)
        minimal = [sys.executable, str(Path(__file__).parent / "_pages_server.py")]
        minimal.append(str(pages_file))

        serve_start, minimal_start = await best_start_up(serve, minimal)
        serve_walk, minimal_walk = await best_walks(serve, minimal)
        spec = ServerSpec(
            label="bench",
            transport=StdioTransport(command=minimal[0], args=tuple(minimal[1:]), stderr="discard"),
        )
        async with (
            SkillsClient.connect(spec) as client,
            Client(params(minimal), cache=None) as bare,
        ):
            assert len((await client.list_skills()).entries) == SKILLS
            validated, unvalidated = await side_by_side(
                client.list_skills, lambda: walk(bare), repeat=ROUNDS
            )
        host_s, bare_s = await best_connects(spec, minimal)

    print(f"skills/list of {SKILLS} skills over stdio, {count} pages of {PAGE_SIZE}")
    report(
        "start-up, skillward serve (scan, parse, verify every skill)",
        serve_start,
        "minimal server reading the pages from JSON",
        minimal_start,
        goal=1.5,
    )
    report(
        "listing walk, skillward serve",
        serve_walk,
        "minimal server with the same precomputed pages",
        minimal_walk,
        goal=1.5,
    )
    print(
        f"  per page: skillward serve {serve_walk / count * 1000:.1f} ms; "
        f"minimal server {minimal_walk / count * 1000:.1f} ms"
    )
    report(
        "SkillsClient.list_skills (bounded, validated)",
        validated,
        "bare mcp.Client walk",
        unvalidated,
        goal=5.0,
    )
    report(
        "SkillHost.connect (start, handshake, bounded validated listing, registry)",
        host_s,
        "bare mcp.Client (start, handshake, paged walk)",
        bare_s,
        goal=1.15,
    )


if __name__ == "__main__":
    anyio.run(main)
