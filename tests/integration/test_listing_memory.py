"""What a hostile listing at every listing limit costs a client, in resident memory.

Each shape is served by a real stdio server process and walked by a client in its
own process, which reports how far its resident memory grew (tests/support/listings.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.listings import REPO_ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T11")]

AT_THE_LIMITS = ("manifests", "frontmatter", "unknown", "entries")


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="measures memory via /proc")
async def test_a_hostile_listing_at_every_limit_stays_under_200_mb() -> None:
    outcomes: dict[str, dict[str, Any]] = {}

    async def measure(shape: str) -> None:
        argv = [sys.executable, "-m", "tests.support.listings", "measure", shape]
        done = await anyio.run_process(argv, cwd=REPO_ROOT)
        outcomes[shape] = json.loads(done.stdout)

    # Side by side: each shape is its own pair of processes, and each mostly waits.
    with anyio.fail_after(600):
        async with anyio.create_task_group() as group:
            for shape in AT_THE_LIMITS:
                group.start_soon(measure, shape)
    for shape, outcome in outcomes.items():
        # Just under every limit, so the whole listing is accepted...
        assert "error" not in outcome, outcome
        assert outcome["entries"] > 0
        assert outcome["rejected"] == 0, outcome
        # ...and holding it, with the transport's own buffering, stays bounded.
        assert outcome["growth_mb"] < 200, f"{shape}: {outcome}"
