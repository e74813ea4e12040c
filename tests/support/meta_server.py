"""A real skills server that records the ``_meta`` of every request it is sent.

The reference server (``skillward serve``'s) over a directory, with a middleware that
appends one JSON line per request, ``{"method": ..., "meta": {...}}``, to a file. In
memory (:func:`recording_server`) or as a stdio process: ``python meta_server.py DIR
RECORD``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from skillward.serve.server import build_skills_server

SCRIPT = Path(__file__).resolve()


def argv(directory: Path, record: Path) -> list[str]:
    return [sys.executable, str(SCRIPT), str(directory), str(record)]


def recording_server(directory: Path, record: Path) -> Server[Any]:
    """The reference server for ``directory``, each request's method and ``_meta``
    appended to ``record``."""
    server = build_skills_server(directory)

    async def remember(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        meta = dict(ctx.meta) if ctx.meta else {}
        with record.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"method": ctx.method, "meta": meta}) + "\n")
        return await call_next(ctx)

    server.middleware.insert(0, remember)
    return server


def requests(record: Path) -> list[dict[str, Any]]:
    """What the server recorded, in order."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def main() -> None:
    import anyio  # noqa: PLC0415

    from skillward.serve.server import serve_stdio  # noqa: PLC0415

    directory, record = sys.argv[1:3]
    anyio.run(serve_stdio, recording_server(Path(directory), Path(record)))


if __name__ == "__main__":
    main()
