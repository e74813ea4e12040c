"""``skillward gateway`` start-up with many upstreams, and with a large catalog.

Each upstream is ``_slow_server.py``: it takes half a second to start (as a server that
boots a runtime does; the standard library only, so that the wait is the delay, not an
import) and then lists its skills. Timed: from launching the gateway over stdio, with its
upstreams as ``--server`` options (``--no-local``, a user of its own), to the SDK
client's first ``list_skills`` answer. Best of a few runs, alternating. Goals:

* with 10 upstreams, within 1.5x of one: they connect at once, so start-up is about
  the slowest one, not the sum (connected one after another: about 10x);
* with one upstream of 10,000 skills, against one of a single skill: start-up within 2x
  (the instructions are built within their 16 KiB bound, not from the whole catalog
  over and over), and ``tools/list`` within 2x (the ``ref`` enum is left out past its
  bound). ``list_skills`` shows every skill, so it grows with the catalog: printed.
* an embedded load of one skill (``SkillHost.activate``, the server over stdio) with
  10,000 skills listed, against one with a single skill listed: within 1.2x (what a load
  asks of the catalog is looked up, not searched).

Run: .venv/bin/python bench/bench_gateway_startup.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))

from _timing import report
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust.approvals import Decision

PY = sys.executable
SLOW = str(Path(__file__).parent / "_slow_server.py")
DELAY = 0.5
ROUNDS = 3
LOADS = 200


def env() -> dict[str, str]:
    """This bench's own user (importing ``_timing`` made one), with no keyring."""
    return {**os.environ, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


def gateway(upstreams: int, skills: int, env: dict[str, str]) -> StdioServerParameters:
    args = ["-m", "skillward", "gateway", "--no-local", "--no-cache"]
    for index in range(upstreams):
        args += ["--server", f"up{index}={PY} {SLOW} {DELAY} {skills}"]
    return StdioServerParameters(command=PY, args=args, env=env)


async def started(params: StdioServerParameters) -> tuple[float, float, float]:
    """Seconds to the first list_skills answer; then one tools/list, one list_skills."""
    begun = time.perf_counter()
    async with Client(params) as client:
        await client.call_tool("list_skills", {})
        ready = time.perf_counter() - begun
        begun = time.perf_counter()
        await client.list_tools()
        tools = time.perf_counter() - begun
        begun = time.perf_counter()
        await client.call_tool("list_skills", {})
        listed = time.perf_counter() - begun
    return ready, tools, listed


async def main() -> None:
    runs = {
        "one": gateway(1, 1, env()),
        "ten": gateway(10, 1, env()),
        "large": gateway(1, 10_000, env()),
    }
    best = {name: [float("inf")] * 3 for name in runs}
    for _ in range(ROUNDS):
        for name, params in runs.items():
            times = await started(params)
            best[name] = [min(b, t) for b, t in zip(best[name], times, strict=True)]
    one, ten, large = best["one"], best["ten"], best["large"]
    print(f"gateway start-up, upstreams taking {DELAY} s to start (best of {ROUNDS})")
    report("10 upstreams, to the first answer", ten[0], "one upstream", one[0], goal=1.5)
    report("one upstream of 10,000 skills, start-up", large[0], "of one skill", one[0], goal=2.0)
    report("tools/list at 10,000 skills", large[1], "at one skill", one[1], goal=2.0)
    report("list_skills at 10,000 skills (every skill)", large[2], "at one skill", one[2])
    loads = {count: await embedded_load(count) for count in (1, 10_000)}
    print(f"an embedded load of one skill ({LOADS} loads, the median), the server over stdio")
    report("with 10,000 skills listed", loads[10_000], "with one", loads[1], goal=1.2)


class _Yes:
    async def decide(self, request: object) -> Decision:
        return Decision.APPROVE


async def embedded_load(skills: int) -> float:
    """The median seconds of a ``SkillHost.activate`` of one skill of ``skills`` listed
    (the approver says yes; no cache): what each load asks of the catalog."""
    argv = [PY, SLOW, "0", str(skills)]
    spec = ServerSpec(label="up", transport=StdioTransport(command=argv[0], args=tuple(argv[1:])))
    async with SkillHost(config=HostConfig(local_dirs=()), approver=_Yes()) as host:
        await host.connect(spec)
        times = []
        for _ in range(LOADS):
            begun = time.perf_counter()
            await host.activate("up:skill-0")
            times.append(time.perf_counter() - begun)
    return statistics.median(times)


if __name__ == "__main__":
    anyio.run(main)
