"""Real MCP servers for tests: in-memory, a stdio subprocess, and HTTP on 127.0.0.1."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import Process

from skillward.edge.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
)
from skillward.serve.server import (
    build_skills_server,
    quiet_transport_logs,
    serve_http,
    serve_stdio,
)

#: Where a test's stdio servers start, so that ``-m tests.support...`` imports.
REPO_ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ("memory", "stdio", "http")
MODES = ("auto", "legacy")
_URL = re.compile(rb"http://127\.0\.0\.1:\d+/mcp")


def stdio_spec(
    label: str, argv: Sequence[str], *, stderr: Literal["log", "discard"] = "log"
) -> ServerSpec:
    """A spec for the stdio server ``argv`` starts, run from the repository."""
    transport = StdioTransport(
        command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT), stderr=stderr
    )
    return ServerSpec(label=label, transport=transport)


def serve_argv(directory: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "skillward", "serve", str(directory), *options]


@asynccontextmanager
async def http_server(argv: Sequence[str]) -> AsyncIterator[str]:
    """Run ``argv`` (a ``serve --http 127.0.0.1:0`` command) and yield its URL."""
    async with http_server_process(argv) as (url, _):
        yield url


@asynccontextmanager
async def http_server_process(argv: Sequence[str]) -> AsyncIterator[tuple[str, Process]]:
    """Like :func:`http_server`, and the process too, for tests that stop it themselves."""
    process: Process = await anyio.open_process(list(argv))
    try:
        assert process.stderr is not None
        seen = b""
        with anyio.fail_after(30):
            async for chunk in process.stderr:
                seen += chunk
                match = _URL.search(seen)
                if match:
                    break
            else:
                raise AssertionError(
                    f"server exited before serving: {seen.decode(errors='replace')}"
                )
        yield match.group().decode(), process
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        with anyio.fail_after(10):
            await process.wait()
        await process.aclose()


@asynccontextmanager
async def serve_tree(
    directory: Path, transport: str, *, mode: str = "auto", options: Sequence[str] = ()
) -> AsyncIterator[ServerSpec]:
    """A ServerSpec for ``skillward serve`` on ``directory`` over ``transport``."""
    label = f"{transport}-{mode}"
    if transport == "memory":
        unlisted = [options[i + 1] for i, o in enumerate(options) if o == "--unlisted"]
        page_size = next(
            (int(options[i + 1]) for i, o in enumerate(options) if o == "--page-size"), 50
        )
        server = build_skills_server(directory, unlisted=unlisted, page_size=page_size)
        yield ServerSpec(label=label, transport=InMemoryTransport(server=server), mode=mode)
    elif transport == "stdio":
        argv = serve_argv(directory, *options)
        yield ServerSpec(
            label=label,
            # Beside the served tree, never in the person's own state directory.
            transport=StdioTransport(
                command=argv[0], args=tuple(argv[1:]), log_dir=directory.parent / "server-logs"
            ),
            mode=mode,
        )
    elif transport == "http":
        async with http_server(serve_argv(directory, "--http", "127.0.0.1:0", *options)) as url:
            yield ServerSpec(label=label, transport=HttpTransport(url=url), mode=mode)
    else:
        raise ValueError(transport)


def run_server_process(server: Any, http: str | None, name: str) -> None:
    """Serve ``server`` over stdio, or over HTTP at ``HOST:PORT`` announcing its URL on stderr
    (what :func:`http_server` waits for). The ``main`` of the test servers."""
    if not http:
        anyio.run(serve_stdio, server)
        return
    quiet_transport_logs()
    host, _, port = http.rpartition(":")

    async def run() -> None:
        async with serve_http(server, host=host, port=int(port)) as url:
            print(f"{name}: serving at {url}", file=sys.stderr, flush=True)
            await anyio.sleep_forever()

    anyio.run(run)
