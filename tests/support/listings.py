"""Hostile listings at every listing limit, and what one costs a client in memory.

A server serves one listing shape, as large as the default ``Limits`` allow (or, for
the shapes in ``PAST_THE_TRANSPORT``, one message past or at the transport's caps)::

    python -m tests.support.listings serve SHAPE [--http 127.0.0.1:0]

A client process starts that server, walks the listing over stdio or streamable HTTP
(``http`` answers with JSON bodies, ``http-sse`` with server-sent events), and prints as
JSON how much its resident memory grew at the peak, and what came of the walk::

    python -m tests.support.listings measure SHAPE [stdio|http|http-sse]

Each is a separate process so the measurement holds nothing but the client.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server

from skillward.core._fields import EXTENSION_ID
from skillward.core.config import Limits
from skillward.core.errors import SkillwardError
from skillward.edge._methods import SkillsListParams
from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport
from tests.support.servers import http_server, run_server_process

REPO_ROOT = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "0" * 64
LIMITS = Limits()
#: Every shape stays this far under a byte limit, as json_size only estimates.
_MARGIN = 0.9


def _entry(index: int, *, files: int = 1, **extra: Any) -> dict[str, Any]:
    root = f"skill://hostile/team-{index % 50}/skill-{index}"
    resources = [{"uri": f"{root}/SKILL.md", "digest": DIGEST, "size": 1}]
    resources += [
        {"uri": f"{root}/data/file-{n:04}.txt", "digest": DIGEST, "size": 1}
        for n in range(files - 1)
    ]
    frontmatter = {"name": f"skill-{index}", "description": "A skill at the limits."}
    frontmatter.update(extra.pop("frontmatter", {}))
    return {"uri": f"{root}/SKILL.md", "frontmatter": frontmatter, "resources": resources, **extra}


def _fill(make: Any, *, per_entry: int, count: int | None = None) -> list[list[dict[str, Any]]]:
    """Pages of entries from ``make(index)``, each about ``per_entry`` bytes as JSON, as
    many as fit the listing and response byte limits (or ``count`` entries)."""
    total = count or int(LIMITS.max_listing_bytes * _MARGIN) // per_entry
    per_page = int(LIMITS.max_list_response_bytes * _MARGIN) // per_entry
    entries = [make(index) for index in range(total)]
    return [entries[start : start + per_page] for start in range(0, total, per_page)]


def _manifests() -> list[list[dict[str, Any]]]:
    # Full manifests up to the listed-files limit (which the bytes limit also allows).
    skills = LIMITS.max_listed_files // LIMITS.max_skill_files
    return _fill(lambda i: _entry(i, files=LIMITS.max_skill_files), per_entry=80_000, count=skills)


def _frontmatter() -> list[list[dict[str, Any]]]:
    # Frontmatter just under the node and byte caps: many small keys, then padding.
    keys = (LIMITS.max_frontmatter_nodes - 8) // 2
    extra: dict[str, Any] = {f"k{n:04}": str(n) for n in range(keys)}
    extra["padding"] = "x" * (int(LIMITS.max_frontmatter_bytes * _MARGIN) - 16 * keys)
    return _fill(lambda i: _entry(i, frontmatter=extra), per_entry=LIMITS.max_frontmatter_bytes)


def _unknown() -> list[list[dict[str, Any]]]:
    # Unknown fields, which the client drops: a long string and a list of small objects.
    def make(index: int) -> dict[str, Any]:
        return _entry(index, annotations="a" * 30_000, future=[{"n": n} for n in range(3000)])

    return _fill(make, per_entry=64_000)


def _entries() -> list[list[dict[str, Any]]]:
    # As many small entries as the entry limit allows.
    return _fill(_entry, per_entry=300, count=LIMITS.max_list_entries)


def _beyond() -> list[dict[str, Any]]:
    # One response 16 times the response limit, 32 MiB: past the transport's message cap.
    count = 16 * LIMITS.max_list_response_bytes // 80_000
    return [{"skills": [_entry(i, files=LIMITS.max_skill_files) for i in range(count)]}]


def _wide() -> list[dict[str, Any]]:
    # A small message (1.5 MB) of empty lists, 2 bytes and over 70 parsed each: past the
    # transport's count of values.
    return [{"skills": [], "padding": [[]] * (LIMITS.max_message_nodes * 2)}]


def _astral() -> list[dict[str, Any]]:
    # One string just under the message cap, held four bytes a character once parsed
    # (one character outside the BMP makes Python store them all that wide): the most a
    # message within the transport's caps can cost.
    size = int(LIMITS.message_bytes * _MARGIN)
    return [{"skills": [], "padding": "\U0001f600" + "x" * size}]


def _multibyte() -> list[dict[str, Any]]:
    # Three bytes a character as UTF-8: under the listing's cap in characters (0.45 of
    # it), past it in bytes (1.35 times).
    return [{"skills": [], "padding": "\u20ac" * int(LIMITS.max_list_response_bytes * 0.45)}]


def _results(shape: str) -> list[dict[str, Any]]:
    """The whole ``skills/list`` results of ``shape``, page by page."""
    if shape in PAST_THE_TRANSPORT:
        return PAST_THE_TRANSPORT[shape]()
    return _numbered([{"skills": page} for page in SHAPES[shape]()])


def _numbered(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``results`` with the cursors :func:`pages_server` reads: each page's index."""
    for index, result in enumerate(results[:-1]):
        result["nextCursor"] = str(index + 1)
    return results


def paged(entries: list[dict[str, Any]], per_page: int) -> list[dict[str, Any]]:
    """``entries`` as whole ``skills/list`` results of ``per_page`` each, for
    :func:`pages_server`."""
    starts = range(0, len(entries), per_page)
    return _numbered([{"skills": entries[start : start + per_page]} for start in starts])


SHAPES = {
    "manifests": _manifests,
    "frontmatter": _frontmatter,
    "unknown": _unknown,
    "entries": _entries,
}
#: One response each, which the client refuses: at the transport, or (``astral`` and
#: ``multibyte``, within the transport's caps) at the listing's own.
PAST_THE_TRANSPORT = {
    "beyond": _beyond,
    "wide": _wide,
    "astral": _astral,
    "multibyte": _multibyte,
}


def pages_server(pages: list[dict[str, Any]]) -> Server[Any]:
    """A minimal skills server answering ``skills/list`` with ``pages``, a list of whole
    results, whose cursors are their indexes as strings."""

    async def list_skills(ctx: Any, params: SkillsListParams) -> dict[str, Any]:
        return pages[int(params.cursor or 0)]

    async def no_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def legacy_extensions(ctx: Any, call_next: Any) -> Any:
        # The 2025-11-25 initialize result drops extensions: put them back.
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            result.setdefault("capabilities", {})["extensions"] = dict(server.extensions)
        return result

    server: Server[Any] = Server("pages", on_list_resources=no_resources)
    server.extensions[EXTENSION_ID] = {"directoryRead": False}
    server.add_request_handler("skills/list", SkillsListParams, list_skills)
    server.middleware.append(legacy_extensions)
    return server


def build_server(shape: str) -> Server[Any]:
    return pages_server(_results(shape))


def _serve_argv(shape: str) -> list[str]:
    return [sys.executable, "-m", "tests.support.listings", "serve", shape]


@asynccontextmanager
async def spec(shape: str, over: str = "stdio") -> AsyncIterator[ServerSpec]:
    """A spec for a server of ``shape`` over ``over`` (started here for HTTP)."""
    if over == "stdio":
        argv = _serve_argv(shape)
        transport = StdioTransport(
            command=argv[0], args=tuple(argv[1:]), cwd=str(REPO_ROOT), stderr="discard"
        )
        yield ServerSpec(label="listings", transport=transport)
        return
    async with http_server([*_serve_argv(shape), "--http", "127.0.0.1:0"]) as url:
        # The 2025-11-25 handshake gets its answers as server-sent events; the 2026-07-28
        # one as JSON bodies.
        mode = "legacy" if over == "http-sse" else "auto"
        yield ServerSpec(label="listings", transport=HttpTransport(url=url), mode=mode)


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux only, like the test)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise LookupError(field)


def _reset_peak() -> None:
    # Peak resident memory then restarts from the current figure. (getrusage's ru_maxrss
    # would not do: Linux carries it over from the parent process across fork and exec.)
    Path("/proc/self/clear_refs").write_text("5")


async def measure(shape: str, over: str = "stdio") -> dict[str, Any]:
    """Walk the listing of ``shape``; the peak growth of resident memory, and the outcome."""
    from skillward.edge.client import SkillsClient  # noqa: PLC0415 (after the baseline imports)

    outcome: dict[str, Any] = {"shape": shape, "over": over}
    with anyio.fail_after(300):
        async with spec(shape, over) as server, SkillsClient.connect(server) as client:
            before = _status_bytes("VmRSS")
            _reset_peak()
            try:
                listing = await client.list_skills()
            except SkillwardError as error:
                outcome["error"] = type(error).__name__
                outcome["server"] = error.server
                outcome["message"] = error.message
            else:
                outcome["entries"] = len(listing.entries)
                outcome["rejected"] = len(listing.rejected)
            peak = _status_bytes("VmHWM")
    outcome["growth_mb"] = max(peak - before, 0) / 1e6
    return outcome


async def measure_sdk(shape: str) -> dict[str, Any]:
    """The same walk's first page with the SDK alone (its stdio transport, no caps): the
    baseline for what the transport's caps save."""
    from mcp import Client, StdioServerParameters  # noqa: PLC0415 (after the baseline imports)
    from mcp.client.stdio import stdio_client  # noqa: PLC0415
    from pydantic import BaseModel, ConfigDict  # noqa: PLC0415

    from skillward.edge._methods import SkillsListRequest  # noqa: PLC0415

    class Raw(BaseModel):
        model_config = ConfigDict(extra="allow")

    argv = _serve_argv(shape)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(REPO_ROOT))
    outcome: dict[str, Any] = {"shape": shape, "over": "stdio", "client": "sdk"}
    with anyio.fail_after(300), open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            before = _status_bytes("VmRSS")
            _reset_peak()
            request = SkillsListRequest(params=SkillsListParams())
            await client.session.send_request(request, Raw)
            peak = _status_bytes("VmHWM")
    outcome["growth_mb"] = max(peak - before, 0) / 1e6
    return outcome


def main() -> None:
    command, shape, *rest = sys.argv[1:]
    if command == "serve":
        http = rest[1] if rest[:1] == ["--http"] else None
        run_server_process(build_server(shape), http, "listings")
    else:
        over = rest[0] if rest else "stdio"
        if over == "sdk":
            print(json.dumps(anyio.run(measure_sdk, shape)))
        else:
            print(json.dumps(anyio.run(measure, shape, over)))


if __name__ == "__main__":
    main()
