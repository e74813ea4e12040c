"""What a hostile listing costs a client in resident memory, at the listing limits.

Each shape (tests/support/listings.py) is served by a stdio server process and walked
by a client in its own process, which reports how far its resident memory grew. Goal:
under 200 MB for every shape just under the limits. The last shape sends one response
16 times the response limit: skillward refuses it, but only after the mcp SDK has
read and parsed it (docs/wire.md), so it has no goal here, only a number to know.

Run: .venv/bin/python bench/bench_listing_memory.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _timing import report_bound

REPO_ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("manifests", "frontmatter", "unknown", "entries")


def measure(shape: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "tests.support.listings", "measure", shape]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, check=True, timeout=600)
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


def main() -> None:
    print("client resident memory growth while walking a hostile listing")
    for shape in SHAPES:
        outcome = measure(shape)
        kept = f"{outcome.get('entries')} entries kept"
        report_bound(f"{shape} ({kept})", outcome["growth_mb"], "MB", goal=200)
    outcome = measure("beyond")
    print(
        f"beyond (one response 16x the response limit; refused: {outcome.get('error')}): "
        f"{outcome['growth_mb']:.0f} MB, spent by the transport (no goal)"
    )


if __name__ == "__main__":
    main()
