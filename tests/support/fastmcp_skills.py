"""FastMCP's SEP-2640 skills provider, serving a skills directory: a third-party server.

Run as a subprocess (FastMCP is imported only here, in its own process)::

    python -m tests.support.fastmcp_skills DIR [--http 127.0.0.1:PORT] [--page-size N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path)
    parser.add_argument("--http")
    parser.add_argument("--page-size", type=int)
    args = parser.parse_args()
    server = FastMCP(
        "fastmcp-skills", instructions="Skills served by FastMCP.", list_page_size=args.page_size
    )
    server.add_provider(SkillsDirectoryProvider(args.directory))
    if args.http is None:
        server.run("stdio", show_banner=False)
        return
    host, _, port = args.http.rpartition(":")
    server.run("http", host=host, port=int(port), show_banner=False, log_level="warning")


if __name__ == "__main__":
    main()
