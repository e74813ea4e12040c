"""``skillward serve``: a reference SEP-2640 skills server on the mcp SDK.

It serves a directory tree of skills (every folder holding a ``SKILL.md``,
nested paths allowed) as ``skill://`` resources, with ``skills/list``,
``skills/get``, ``resources/list``, ``resources/read`` and
``resources/directory/read``, over stdio or streamable HTTP, in both protocol
eras (2026-07-28 ``server/discover`` and the legacy 2025-11-25 ``initialize``).

The catalog (:mod:`skillward.serve.catalog`) is a snapshot taken when the server is
built: digests and sizes are computed from the raw bytes then, and exactly those bytes
are served. Skills that break the Agent Skills rules or SEP-2640's invariants are
refused with a reason.

Python use::

    skills = SkillsServer(name="acme-skills")

    @skills.skill("acme/billing/refunds")
    def refunds() -> Path:
        return Path("./skills/refunds")

    server = skills.build()                     # an mcp low-level Server
    server = build_skills_server("./skills")    # or: serve a whole tree
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from skillward.core._fields import EXTENSION_ID
from skillward.core.config import Limits
from skillward.edge._listen import listen, serve_asgi
from skillward.edge._methods import DirectoryReadParams, SkillsGetParams, SkillsListParams
from skillward.serve.catalog import ServedFile, ServedSkill, SkillCatalog

__all__ = [
    "SkillsServer",
    "build_server",
    "build_skills_server",
    "serve_http",
    "serve_stdio",
]

logger = logging.getLogger(__name__)

_DEFAULT_PAGE_SIZE = 50
_TTL_MS = 60_000


# --- the mcp server ---------------------------------------------------------------------


def _invalid(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message)


def _encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def _decode_cursor(kind: str, cursor: str | None, total: int) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
        found_kind, _, offset_text = text.rpartition(":")
        offset = int(offset_text)
    except (ValueError, binascii.Error, UnicodeError):
        raise _invalid("invalid cursor") from None
    if found_kind != kind or not 0 < offset < total:
        raise _invalid("invalid cursor")
    return offset


def _page(
    kind: str, items: list[Any], cursor: str | None, size: int
) -> tuple[list[Any], str | None]:
    """The page ``cursor`` names, and the cursor of the next page if any."""
    start = _decode_cursor(kind, cursor, len(items))
    end = start + size
    return items[start:end], (_encode_cursor(kind, end) if end < len(items) else None)


def _is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _with_cache_hints(
    ctx: ServerRequestContext[Any, Any], result: dict[str, Any]
) -> dict[str, Any]:
    # ttlMs/cacheScope exist only on the 2026-07-28 wire; the SDK cannot add them here.
    if _is_modern(ctx):
        result["ttlMs"] = _TTL_MS
        result["cacheScope"] = "public"
    return result


def _restore_extensions(server: Server[Any]) -> Callable[..., Any]:
    """Put ``capabilities.extensions`` back into the legacy ``initialize`` result.

    The 2025-11-25 result schema has no ``extensions``, so the SDK strips it; legacy
    clients would then never learn that this server speaks SEP-2640.
    """

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict) and server.extensions:
            capabilities = result.setdefault("capabilities", {})
            capabilities.setdefault("extensions", dict(server.extensions))
        return result

    return middleware


def build_server(
    catalog: SkillCatalog,
    *,
    name: str = "skillward-serve",
    version: str = "0.1.0",
    page_size: int = _DEFAULT_PAGE_SIZE,
    instructions: str | None = None,
    tamper: Collection[str] = (),
    transform_entry: Callable[[ServedSkill], dict[str, Any]] | None = None,
    transform_content: Callable[[ServedFile], bytes] | None = None,
) -> Server[Any]:
    """An mcp low-level ``Server`` serving ``catalog``.

    ``tamper`` names file URIs whose reads get one byte flipped while the listing
    keeps the true digest: a demonstration of what a host must refuse.
    ``transform_entry`` and ``transform_content`` let a test build a hostile server
    that lies in its entries or its bytes; the reference server never sets them.
    """
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    tampered = frozenset(tamper)

    def entry_of(skill: ServedSkill) -> dict[str, Any]:
        return transform_entry(skill) if transform_entry else skill.entry()

    def content_of(served: ServedFile) -> bytes:
        data = transform_content(served) if transform_content else served.data
        if served.uri in tampered and data:
            data = bytes([data[0] ^ 0x01]) + data[1:]
        return data

    list_skills = _list_handler(catalog, page_size, transform_entry)

    async def get_skill(ctx: ServerRequestContext[Any, Any], params: SkillsGetParams) -> Any:
        skill = catalog.skills.get(params.uri)
        if skill is None:
            raise _invalid(f"not a skill this server serves: {params.uri[:300]}")
        return _with_cache_hints(ctx, {"skill": entry_of(skill)})

    async def read_directory(
        ctx: ServerRequestContext[Any, Any], params: DirectoryReadParams
    ) -> Any:
        children = catalog.directory_children(params.uri)
        if children is None:
            raise _invalid(f"not a directory this server serves: {params.uri[:300]}")
        page, next_cursor = _page("dir:" + params.uri, children, params.cursor, page_size)
        resources = [
            types.Resource(uri=uri, name=child_name, mime_type=mime).model_dump(
                by_alias=True, exclude_none=True
            )
            for uri, child_name, mime in page
        ]
        result: dict[str, Any] = {"resources": resources}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return _with_cache_hints(ctx, result)

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        ordered = [catalog.files[uri] for uri in sorted(catalog.files)]
        page, next_cursor = _page(
            "resources", ordered, params.cursor if params else None, page_size
        )
        return types.ListResourcesResult(
            resources=[_resource(catalog, served) for served in page], next_cursor=next_cursor
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        served = catalog.files.get(params.uri)
        if served is None:
            raise _invalid(f"no such resource: {params.uri[:300]}")
        data = content_of(served)
        contents: types.TextResourceContents | types.BlobResourceContents
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            contents = types.BlobResourceContents(
                uri=served.uri,
                mime_type=served.mime_type,
                blob=base64.b64encode(data).decode("ascii"),
            )
        else:
            contents = types.TextResourceContents(
                uri=served.uri, mime_type=served.mime_type, text=text
            )
        return types.ReadResourceResult(contents=[contents])

    server: Server[Any] = Server(
        name,
        version=version,
        instructions=instructions,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    server.extensions[EXTENSION_ID] = {"directoryRead": True}
    server.add_request_handler("skills/list", SkillsListParams, list_skills)
    server.add_request_handler("skills/get", SkillsGetParams, get_skill)
    server.add_request_handler("resources/directory/read", DirectoryReadParams, read_directory)
    server.middleware.append(_restore_extensions(server))
    return server


def _list_handler(
    catalog: SkillCatalog,
    page_size: int,
    transform_entry: Callable[[ServedSkill], dict[str, Any]] | None,
) -> Callable[[ServerRequestContext[Any, Any], SkillsListParams], Awaitable[Any]]:
    """The ``skills/list`` handler. The listing is a snapshot taken when the server is
    built, so the reference server builds its entries once, then; a test's
    ``transform_entry`` may change its answers, so it is asked on every request."""
    listed = catalog.listed()
    entries: list[Any] = listed if transform_entry else [skill.entry() for skill in listed]

    async def list_skills(ctx: ServerRequestContext[Any, Any], params: SkillsListParams) -> Any:
        page, next_cursor = _page("skills", entries, params.cursor, page_size)
        if transform_entry:
            page = [transform_entry(skill) for skill in page]
        result: dict[str, Any] = {"skills": page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return _with_cache_hints(ctx, result)

    return list_skills


def _resource(catalog: SkillCatalog, served: ServedFile) -> types.Resource:
    skill = catalog.skills.get(served.uri)
    if skill is not None:
        return types.Resource(
            uri=served.uri,
            name=skill.name,
            description=skill.description,
            mime_type="text/markdown",
            size=served.size,
        )
    return types.Resource(
        uri=served.uri, name=served.name, mime_type=served.mime_type, size=served.size
    )


class SkillsServer:
    """Declare skills with a decorator, then :meth:`build` an mcp server.

    ``@skills.skill("acme/billing/refunds")`` registers the directory the decorated
    function returns under ``skill://acme/billing/refunds/SKILL.md``.
    """

    def __init__(
        self,
        *,
        name: str = "skillward-serve",
        version: str = "0.1.0",
        instructions: str | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.instructions = instructions
        self.limits = limits or Limits()
        self._registered: list[tuple[str, Callable[[], Path | str], bool]] = []

    def skill(
        self, skill_path: str, *, listed: bool = True
    ) -> Callable[[Callable[[], Path | str]], Callable[[], Path | str]]:
        def register(function: Callable[[], Path | str]) -> Callable[[], Path | str]:
            self._registered.append((skill_path, function, listed))
            return function

        return register

    def catalog(self) -> SkillCatalog:
        catalog = SkillCatalog(limits=self.limits)
        for skill_path, function, listed in self._registered:
            catalog.add_skill(skill_path, Path(function()), listed=listed)
        return catalog

    def build(self, **options: Any) -> Server[Any]:
        catalog = self.catalog()
        for problem in catalog.problems:
            logger.warning("%s", problem)
        return build_server(
            catalog,
            name=self.name,
            version=self.version,
            instructions=self.instructions,
            **options,
        )


def build_skills_server(
    path: Path | str,
    *,
    unlisted: Collection[str] = (),
    limits: Limits | None = None,
    **options: Any,
) -> Server[Any]:
    """An mcp server serving every skill under ``path``."""
    catalog = SkillCatalog.from_directory(path, unlisted=unlisted, limits=limits)
    for problem in catalog.problems:
        logger.warning("%s", problem)
    return build_server(catalog, **options)


async def serve_stdio(server: Server[Any], *, limits: Limits | None = None) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client leaves, each
    line the client writes held to ``limits``' message caps (``edge/_stdioserver.py``)."""
    from skillward.edge._stdioserver import serve_stdio as serve  # noqa: PLC0415

    await serve(server, limits or Limits())


@asynccontextmanager
async def serve_http(
    server: Server[Any], *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve ``server`` over streamable HTTP; yields the endpoint URL until the block ends."""
    sock = listen(host, port)
    try:
        app = server.streamable_http_app(host=host, streamable_http_path="/mcp")
        async with anyio.create_task_group() as group:
            url = await group.start(
                functools.partial(serve_asgi, app, sock, host=host, path="/mcp")
            )
            try:
                yield url
            finally:
                group.cancel_scope.cancel()
    finally:
        sock.close()


def quiet_transport_logs() -> None:
    """Keep per-request INFO logs of the HTTP stack off the terminal."""
    for name in ("httpx2", "httpcore2", "mcp", "uvicorn", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.WARNING)
