"""Skill content from servers: a listed file through the cache when it holds it,
verified either way; a dynamic skill's reads within its total budget; SKILL.md for the
person deciding on an approval. And :func:`off_loop`, which builds a block of large
content in a worker thread.

Nothing here decides what may be read: the acting window, the gates and the read
paths do. This is where bytes come from, and where verified ones are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread

from skillward.cache.seam import CacheKey, ContentCache
from skillward.core.config import Limits
from skillward.core.context import ContextBlock
from skillward.core.errors import (
    ResponseTooLarge,
    SizeMismatch,
    SkillTooLarge,
    UnverifiableSkill,
)
from skillward.core.registry import SkillRecord
from skillward.core.verify import VerifiedFile, verify_file, verify_skill_md
from skillward.core.wire import ResourceItem
from skillward.edge._local import read_skill_md
from skillward.host._connections import Connection, Connections
from skillward.host._window import ActingWindow
from skillward.host.types import HostConfig

__all__ = ["Fetcher", "off_loop"]

logger = logging.getLogger("skillward")

#: Content from this many bytes is neutralised in a worker thread (see off_loop).
_OFF_LOOP_BYTES = 256 * 1024


def off_loop(build: Callable[..., ContextBlock]) -> Callable[..., Awaitable[ContextBlock]]:
    """``build``, run in a worker thread when the content is large: neutralising megabytes
    is CPU work that would otherwise stall every task on the event loop."""

    async def run(**fields: Any) -> ContextBlock:
        if len(fields.get("data", fields.get("body", b""))) < _OFF_LOOP_BYTES:
            return build(**fields)
        return await anyio.to_thread.run_sync(lambda: build(**fields))

    return run


class Fetcher:
    """Bytes of skills, from the cache or over the connections."""

    def __init__(self, connections: Connections, cache: ContentCache, config: HostConfig) -> None:
        self._connections = connections
        self.cache = cache
        self._config = config

    @property
    def _limits(self) -> Limits:
        return self._config.limits

    @staticmethod
    def cache_key(connection: Connection, skill: str, item: ResourceItem) -> CacheKey:
        """A listed file of ``skill`` as the cache keys it: bound to the transport identity."""
        return CacheKey(
            origin=connection.label,
            identity=connection.spec.identity,
            skill=skill,
            uri=item.uri,
            digest=item.digest,
            size=item.size,
        )

    async def fetch(
        self,
        connection: Connection,
        uri: str,
        key: CacheKey | None,
        *,
        after_send: Callable[[], None] | None = None,
    ) -> bytes:
        """Bytes for ``uri``. For a listed file (``key``): from the cache if it has them
        (they are verified after either way), else from the server, cut off above the
        listed size. The cache never stands in for a server that is not connected.

        ``after_send`` (which must not raise) is handed to the read, which calls it once
        the request is written, to overlap the server's work (see
        ``SkillsClient.read_resource``). Nothing is sent for bytes from the cache, or when
        the server is gone: a caller that needs it to have run makes sure after the fetch.
        """
        if key is None:
            return await self._connections.call(
                connection, lambda c: c.read_resource(uri, after_send=after_send), uri=uri
            )
        if not connection.alive:
            raise self._connections.disconnected(connection, uri)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        try:
            return await self._connections.call(
                connection,
                lambda c: c.read_resource(uri, max_bytes=key.size, after_send=after_send),
                uri=uri,
            )
        except ResponseTooLarge:
            raise SizeMismatch(
                f"the server sent more than the {key.size} bytes the listing promised",
                server=connection.label,
                uri=uri,
            ) from None

    async def verified(
        self, connection: Connection, item: ResourceItem, skill: str
    ) -> VerifiedFile:
        """A listed file of ``skill``, fetched (or taken from the cache) and verified."""
        label = connection.label
        key = self.cache_key(connection, skill, item)
        data = await self.fetch(connection, item.uri, key)
        verified = verify_file(item, data, server=label)
        logger.debug("verified %s from %s (%d bytes)", item.uri, label, verified.size)
        self.cache.put(key, verified.data)
        return verified

    async def fetch_dynamic(
        self, connection: Connection, record: SkillRecord, uri: str, window: ActingWindow
    ) -> bytes:
        """A read of a dynamic skill, within what is left of its total-size budget in
        ``window``."""
        limit = self._limits.max_skill_bytes
        spent = window.spent(record.key)
        left = limit - spent
        spent_error = SkillTooLarge(
            f"the dynamic skill has reached {limit} bytes; nothing more of it is read",
            server=record.origin.label,
            uri=uri,
        )
        if left <= 0:
            raise spent_error
        try:
            data = await self._connections.call(
                connection, lambda c: c.read_resource(uri, max_bytes=left), uri=uri
            )
        except ResponseTooLarge:
            raise spent_error from None
        window.spend(record.key, len(data))
        return data

    def check_dynamic(self, record: SkillRecord) -> None:
        """Refuse a dynamic skill unless the host allows them (and warn each time it does)."""
        if record.entry is None or not record.entry.is_dynamic:
            return
        if not self._config.unsafe_allow_dynamic:
            raise UnverifiableSkill(
                "this skill's content is dynamic and cannot be verified; it is not loaded",
                server=record.origin.label,
                uri=record.key.locator,
            )
        logger.warning(
            "unsafe_allow_dynamic: using unverifiable skill %s from %s",
            record.key.locator,
            record.origin.label,
        )

    async def skill_md(self, record: SkillRecord, connection: Connection | None) -> str:
        """SKILL.md as text, verified against the entry (MCP skills: over ``connection``)."""
        if not record.origin.is_mcp:
            data, _ = read_skill_md(record, limits=self._limits)
            return data.decode("utf-8", errors="replace")
        entry = record.entry
        assert entry is not None
        assert connection is not None
        item = entry.manifest.get(entry.uri)
        key = self.cache_key(connection, entry.uri, item) if item is not None else None
        data = await self.fetch(connection, entry.uri, key)
        verified = verify_skill_md(entry, data, server=record.origin.label, limits=self._limits)
        return verified.file.data.decode("utf-8", errors="replace")
