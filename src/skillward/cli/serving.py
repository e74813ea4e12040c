"""Serving: ``serve``, the reference SEP-2640 server over a directory of skills.

A serving command's stdout carries the protocol: it writes to no terminal but for an
error, and starts without the modules a terminal brings (its start-up has a goal,
``bench/bench_list_stdio.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_serving_command
from skillward.core.errors import UsageError

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.serve.catalog import SkillCatalog

__all__ = ["add_commands", "serve"]


def add_commands(commands: Commands) -> None:
    serve_ = add_serving_command(
        commands,
        "serve",
        serve,
        help="serve a directory of skills as a SEP-2640 MCP server",
        description="Serve every skill (a folder holding SKILL.md) under DIR over stdio, "
        "or over streamable HTTP with --http.",
    )
    serve_.add_argument(
        "directory",
        metavar="DIR",
        type=Path,
        nargs="?",
        help="skills directory (default: the bundled example skills)",
    )
    serve_.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    serve_.add_argument(
        "--page-size",
        type=int,
        default=50,
        metavar="N",
        help="entries per page for paginated methods (default 50)",
    )
    serve_.add_argument(
        "--unlisted",
        action="append",
        default=[],
        metavar="SKILL_PATH",
        help="serve this skill but leave it out of skills/list (repeatable)",
    )
    serve_.add_argument("--name", default="skillward-serve", help="serverInfo.name to report")
    serve_.add_argument(
        "--tamper",
        action="append",
        default=[],
        metavar="URI",
        help="demonstration only: flip one byte when serving URI (repeatable)",
    )


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT, for example 127.0.0.1:8765, not {text!r}"
        )
    return host.strip("[]"), int(port)


def serve(args: argparse.Namespace) -> int:
    import anyio

    from skillward.cli._interrupt import until_interrupted
    from skillward.serve import server  # imports mcp; only this command needs it
    from skillward.serve.catalog import example_skills_dir

    directory = args.directory or example_skills_dir()
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory")
    with _collected_once():
        catalog = _catalog(args, directory)
        mcp_server = server.build_server(
            catalog, name=args.name, page_size=max(1, args.page_size), tamper=args.tamper
        )
    try:
        if args.http is None:

            async def run_stdio() -> None:
                # Said once Ctrl-C is handled; stdout carries the protocol, people read
                # stderr.
                print(
                    f"skillward serve: {catalog.summary()} from {directory} over stdio",
                    file=sys.stderr,
                    flush=True,
                )
                await server.serve_stdio(mcp_server)

            interrupted = anyio.run(until_interrupted, run_stdio)
        else:
            host, port = args.http
            server.quiet_transport_logs()

            async def run_http() -> None:
                async with server.serve_http(mcp_server, host=host, port=port) as url:
                    print(
                        f"skillward serve: {catalog.summary()} at {url}",
                        file=sys.stderr,
                        flush=True,
                    )
                    await anyio.sleep_forever()

            interrupted = anyio.run(until_interrupted, run_http)
    except KeyboardInterrupt:  # before the event loop took Ctrl-C
        interrupted = True
    if interrupted:
        print("skillward serve: stopped", file=sys.stderr)
    return EXIT_OK


@contextlib.contextmanager
def _collected_once() -> Iterator[None]:
    """Build what the process serves with the garbage collector off, then freeze it.

    This process only serves, so how it collects garbage is the command's choice.
    Building the catalog makes many objects and no garbage cycles (a test holds it to
    that), so the collector stays off while building, and all the process holds is then
    frozen as it is: the catalog never changes, and a collector scanning it on every
    full collection while serving would be most of a page's cost. (Importing leaves a
    few dozen objects of cyclic garbage: not worth a full collection.)
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _catalog(args: argparse.Namespace, directory: Path) -> SkillCatalog:
    """The skills under ``directory``; what cannot be served is said on stderr, and a
    directory with no skill to serve is a usage error (its catalog would stay empty)."""
    from skillward.serve.catalog import SkillCatalog

    catalog = SkillCatalog.from_directory(directory, unlisted=args.unlisted)
    for problem in catalog.problems:
        print(f"skillward serve: {problem}", file=sys.stderr)
    if not catalog.skills:
        why = "the lines above say why" if catalog.problems else "no SKILL.md was found in it"
        raise UsageError(
            f"no skill to serve under {directory}: {why}",
            hint="A skill is a folder holding a SKILL.md that starts with YAML frontmatter "
            "naming it and saying what it does (---, name: NAME, description: ..., ---), "
            "as DIR/NAME/SKILL.md; `skillward serve` with no DIR serves the bundled examples.",
        )
    return catalog
