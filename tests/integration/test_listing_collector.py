"""Connecting to a server with a large listing sets the garbage collector off about as
often as a bare SDK client walking the same listing does: skillward's entries, records
and keys are built with the collector held off (core/_collector.py), not walked by it
every few hundred objects. Collections are counted with ``gc.callbacks``, against a real
mcp server in memory."""

from __future__ import annotations

import gc
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import BaseModel, ConfigDict

from skillward.edge._methods import SkillsListParams, SkillsListRequest
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.collector import collections, raw_entry
from tests.support.listings import paged, pages_server

pytestmark = pytest.mark.anyio

SKILLS, PER_PAGE = 4000, 500


class _Raw(BaseModel):
    model_config = ConfigDict(extra="allow")


async def _bare_walk(server: Any) -> int:
    """Collections while a bare mcp.Client walks every page, with no checks."""
    async with Client(server) as client:
        gc.collect()
        with collections() as started:
            cursor: str | None = None
            while True:
                page: Any = await client.session.send_request(
                    SkillsListRequest(params=SkillsListParams(cursor=cursor)), _Raw
                )
                cursor = (page.model_extra or {}).get("nextCursor")
                if not cursor:
                    break
        return len(started)


async def _connect(server: Any) -> int:
    """Collections while SkillHost.connect lists and registers every skill."""
    spec = ServerSpec(label="acme", transport=InMemoryTransport(server=server))
    async with SkillHost(config=HostConfig(local_dirs=())) as host:
        await host.connect(spec)  # the models' validators built, once
        gc.collect()
        with collections() as started:
            await host.refresh("acme")
        assert len(host.registry.records()) == SKILLS
        return len(started)


async def test_connecting_sets_the_collector_off_about_as_often_as_a_bare_walk() -> None:
    pages = paged([raw_entry(index) for index in range(SKILLS)], PER_PAGE)
    assert gc.isenabled()
    with anyio.fail_after(60):
        bare = await _bare_walk(pages_server(pages))
        mine = await _connect(pages_server(pages))
    # At most one for each page and one for the registry more: built with the collector
    # on, 4,000 entries of eight objects each start about forty-five.
    assert mine <= bare + len(pages) + 1, (mine, bare)
