"""The ``skillward`` command."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from skillward.errors import SkillwardError

__all__ = ["main"]

EXIT_USAGE = 2


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT, for example 127.0.0.1:8765, not {text!r}"
        )
    return host.strip("[]"), int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skillward",
        description="Security-focused host-side loader for skills served over MCP (SEP-2640).",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="serve a directory of skills as a SEP-2640 MCP server",
        description="Serve every skill (a folder holding SKILL.md) under DIR over stdio, "
        "or over streamable HTTP with --http.",
    )
    serve.add_argument(
        "directory",
        metavar="DIR",
        type=Path,
        nargs="?",
        help="skills directory (default: the bundled example skills)",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    serve.add_argument(
        "--page-size",
        type=int,
        default=50,
        metavar="N",
        help="entries per page for paginated methods (default 50)",
    )
    serve.add_argument(
        "--unlisted",
        action="append",
        default=[],
        metavar="SKILL_PATH",
        help="serve this skill but leave it out of skills/list (repeatable)",
    )
    serve.add_argument("--name", default="skillward-serve", help="serverInfo.name to report")
    serve.add_argument(
        "--tamper",
        action="append",
        default=[],
        metavar="URI",
        help="demonstration only: flip one byte when serving URI (repeatable)",
    )
    return parser


def _serve(args: argparse.Namespace) -> int:
    from skillward import server  # noqa: PLC0415  (imports mcp; only this command needs it)

    directory = args.directory or server.example_skills_dir()
    if not directory.is_dir():
        print(f"skillward serve: {directory} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    catalog = server.SkillCatalog.from_directory(directory, unlisted=args.unlisted)
    for problem in catalog.problems:
        print(f"skillward serve: {problem}", file=sys.stderr)
    if not catalog.skills:
        print(f"skillward serve: no servable skills under {directory}", file=sys.stderr)
    mcp_server = server.build_server(
        catalog, name=args.name, page_size=max(1, args.page_size), tamper=args.tamper
    )
    if args.http is None:
        anyio.run(server.serve_stdio, mcp_server)
        return 0
    host, port = args.http
    server.quiet_transport_logs()

    async def run_http() -> None:
        async with server.serve_http(mcp_server, host=host, port=port) as url:
            print(
                f"skillward serve: {len(catalog.skills)} skills at {url}",
                file=sys.stderr,
                flush=True,
            )
            await anyio.sleep_forever()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(run_http)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "serve":
            return _serve(args)
    except SkillwardError as error:
        if args.debug:
            raise
        print(f"skillward: {error}", file=sys.stderr)
        return error.exit_code
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE  # pragma: no cover
