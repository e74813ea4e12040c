"""A minimal mcp server answering skills/list from precomputed pages: the baseline for
``skillward serve``'s listing in bench_list_stdio.py.

Run: python bench/_pages_server.py PAGES.json   (a JSON list of skills/list results)
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent.parent))

from tests.support.listings import pages_server

from skillward.serve.server import serve_stdio

if __name__ == "__main__":
    server = pages_server(json.loads(Path(sys.argv[1]).read_text()))
    # As `skillward serve` does, so the two differ only in how they answer.
    gc.collect()
    gc.freeze()
    anyio.run(serve_stdio, server)
