"""What a hostile listing costs a client in resident memory: at the listing limits, and
one message past (or at) the transport's caps.

Each shape (tests/support/listings.py) is served by a server process and walked by a
client in its own process, which reports how far its resident memory grew.

- At the listing limits, over stdio: goal under 200 MB for every shape.
- One message past the transport's caps (``beyond``: 32 MiB; ``wide``: 524,288 empty
  lists in 1.5 MB), over stdio, HTTP with JSON bodies and HTTP with server-sent events:
  refused with ResponseTooLarge, goal under 100 MB. The baseline is the SDK alone
  (its own stdio transport, no caps) fetching the same ``beyond`` page, in the same run.
- ``astral``: one string just under the message cap, held four bytes a character once
  parsed: the most one message within the caps costs (no goal; SECURITY.md quotes it).

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
TRANSPORTS = ("stdio", "http", "http-sse")


def measure(shape: str, over: str = "stdio") -> dict[str, Any]:
    argv = [sys.executable, "-m", "tests.support.listings", "measure", shape, over]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, check=True, timeout=600)
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


def main() -> None:
    print("client resident memory growth while walking a hostile listing")
    for shape in SHAPES:
        outcome = measure(shape)
        kept = f"{outcome.get('entries')} entries kept"
        report_bound(f"{shape} ({kept})", outcome["growth_mb"], "MB", goal=200)
    sdk = measure("beyond", "sdk")["growth_mb"]
    print(f"the SDK alone, one 32 MiB skills/list result over stdio: {sdk:.0f} MB (baseline)")
    for shape in ("beyond", "wide"):
        for over in TRANSPORTS:
            outcome = measure(shape, over)
            refused = outcome.get("error", "accepted")
            ratio = outcome["growth_mb"] / sdk
            name = f"{shape} over {over} ({refused}; {ratio:.2f}x the SDK's 32 MiB)"
            report_bound(name, outcome["growth_mb"], "MB", goal=100)
    for over in TRANSPORTS:
        outcome = measure("astral", over)
        print(
            f"astral over {over} (within the transport's caps; then {outcome.get('error')}): "
            f"{outcome['growth_mb']:.0f} MB (no goal: the most one message can cost)"
        )


if __name__ == "__main__":
    main()
