"""Servers that misbehave on the wire: they stall, loop, nest, or die mid-read.

Each is `skillward serve` (the real handlers) with one middleware that changes what a
chosen method does. Run as a subprocess::

    python -m tests.support.misbehaving DIR --mode MODE [--http 127.0.0.1:0] [--pid FILE]

Modes:

* ``silent``: never answers anything, the handshake included;
* ``stall-list``: answers the handshake, never answers ``skills/list``;
* ``stall-read``: never answers ``resources/read``;
* ``endless``: every ``skills/list`` page has a new ``nextCursor``;
* ``nested``: the ``skills/list`` result carries 100,000 levels of nested JSON (stdio
  only: written as raw JSON-RPC lines, since no serializer would produce it);
* ``die-on-read``: the process exits in the middle of answering ``resources/read``;
* ``hang-up-list``: answers the first ``skills/list`` page (``HANG_UP_PAGE`` skills, and a
  ``nextCursor``), and exits when asked for the next, while the client builds the first;
* ``ok``: behaves (used for a healthy second server, with ``--pid``);
* ``plain``: an MCP server without the skills extension;
* ``huge-read``: answers ``resources/read`` of any ``email.md`` with 32 MiB;
* ``huge-frontmatter``: lists one skill whose frontmatter is 3 MiB, past the listing's
  cap on one ``skills/list`` result (2 MiB) and within the transport's;
* ``linger``: behaves, but once its stdin closes it stays (stdio only), and a SIGTERM
  only leaves a note (``FILE.term`` beside the ``--pid`` file): only SIGKILL ends it.

``--pid FILE`` writes the process id, so a test can kill the server.

:func:`deaf_argv` is a process that never answers at all, and stays when its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from skillward.serve.catalog import SkillCatalog, example_skills_dir
from skillward.serve.server import build_server
from tests.support.servers import run_server_process

MODES = (
    "ok",
    "plain",
    "silent",
    "stall-list",
    "stall-read",
    "endless",
    "nested",
    "die-on-read",
    "hang-up-list",
    "huge-read",
    "huge-frontmatter",
    "linger",
)
#: How many skills the first page of ``hang-up-list`` lists.
HANG_UP_PAGE = 2000
#: What ``huge-read`` answers with: past the transport's message cap (24 MiB).
HUGE = 32 * 1024 * 1024
#: The description ``huge-frontmatter`` lists: past a listing result's cap (2 MiB).
HUGE_DESCRIPTION = 3 * 1024 * 1024

#: Writes its pid first thing (no slow imports), then neither reads nor answers.
_DEAF = """
import os, signal, sys, time
with open(sys.argv[1], "w") as pid:
    pid.write(str(os.getpid()))
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(3600)
"""


def misbehaving_argv(mode: str, *options: str) -> list[str]:
    """This server in ``mode`` on the example skills, as a command (run from the
    repository: see ``servers.stdio_spec``)."""
    examples = str(example_skills_dir())
    return [sys.executable, "-m", "tests.support.misbehaving", examples, "--mode", mode, *options]


def deaf_argv(pid_file: Path, *, ignore_term: bool = False) -> list[str]:
    """A stdio "server" that never answers and stays when its stdin closes. SIGTERM ends
    it, unless ``ignore_term``: then only SIGKILL does."""
    return [sys.executable, "-c", _DEAF, str(pid_file), "ignore-term" if ignore_term else "term"]


def _raw_nested_stdio(depth: int) -> None:
    """A legacy-handshake JSON-RPC peer on stdio whose skills/list result nests ``depth`` deep."""
    capabilities: dict[str, Any] = {
        "resources": {},
        "extensions": {"io.modelcontextprotocol/skills": {}},
    }
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            reply["result"] = {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "serverInfo": {"name": "nested", "version": "1"},
            }
        elif method == "skills/list":
            deep = "[" * depth + "]" * depth
            text = json.dumps(reply)[:-1] + f', "result": {{"skills": [], "deep": {deep}}}}}'
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            continue
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def _listed(n: int) -> dict[str, Any]:
    uri = f"skill://hang-up/s{n}/SKILL.md"
    return {
        "uri": uri,
        "frontmatter": {"name": f"s{n}", "description": "Listed before the hang-up"},
        "resources": [{"uri": uri, "digest": "sha256:" + "0" * 64, "size": 1}],
    }


def build_misbehaving_server(directory: Path, mode: str) -> Server[Any]:
    if mode not in MODES:
        raise ValueError(mode)
    if mode == "plain":
        return Server("plain")
    if mode == "linger":
        mode = "ok"
    server = build_server(SkillCatalog.from_directory(directory), name="misbehaving")
    pages = 0

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        nonlocal pages
        method = ctx.method
        if mode == "silent" or (mode == "stall-list" and method == "skills/list"):
            await anyio.sleep_forever()
        if mode == "stall-read" and method == "resources/read":
            await anyio.sleep_forever()
        if mode == "endless" and method == "skills/list":
            pages += 1
            return {"skills": [], "nextCursor": f"page-{pages}"}
        if mode == "huge-frontmatter" and method == "skills/list":
            frontmatter = {"name": "huge", "description": "x" * HUGE_DESCRIPTION}
            return {"skills": [{"uri": "skill://huge/SKILL.md", "frontmatter": frontmatter}]}
        if mode == "die-on-read" and method == "resources/read":
            os._exit(3)
        if mode == "hang-up-list" and method == "skills/list":
            if ctx.params and ctx.params.get("cursor"):
                os._exit(0)
            return {"skills": [_listed(n) for n in range(HANG_UP_PAGE)], "nextCursor": "next"}
        uri = ctx.params.get("uri") if ctx.params else None
        if mode == "huge-read" and isinstance(uri, str) and uri.endswith("/email.md"):
            return {"contents": [{"uri": uri, "blob": "A" * HUGE}]}
        return await call_next(ctx)

    server.middleware.append(middleware)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path)
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--http")
    parser.add_argument("--pid", type=Path)
    args = parser.parse_args()
    if args.pid is not None:
        args.pid.write_text(str(os.getpid()))
    if args.mode == "nested":
        _raw_nested_stdio(100_000)
        return
    server = build_misbehaving_server(args.directory, args.mode)
    if args.mode == "linger":
        _linger(server, args.pid)
        return
    run_server_process(server, args.http, "misbehaving")


def _linger(server: Server[Any], pid: Path | None) -> None:
    def note(signum: int, frame: FrameType | None) -> None:
        if pid is not None:
            pid.with_suffix(".term").write_text("SIGTERM")

    signal.signal(signal.SIGTERM, note)
    run_server_process(server, None, "misbehaving")  # returns when stdin closes
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
