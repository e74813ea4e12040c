"""The listing walk asks for the next page while it builds this one's entries.

What a hostile server tries first against that: the page asked for ahead fails, stalls,
or breaks a bound, or the server hangs up while a page is being built. Each ends in the
typed error a walk of one page at a time raised, naming the server; the request ahead
and the building are both ended, nothing is left running, and the host goes on with its
other servers.

The in-process servers hand the client their very objects, so the first page's entries
note when the client starts building them: the server sees how far the client had got
when it was asked for the next page.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from skillward.core._fields import EXTENSION_ID
from skillward.core.config import Limits
from skillward.core.errors import (
    DeadlineExceeded,
    ListingRunaway,
    ServerDisconnected,
    ServerRejected,
    SkillwardError,
)
from skillward.edge.client import SkillsClient
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.catalog import example_skills_dir
from skillward.serve.server import build_skills_server
from tests.unit.test_client_hostile import ListParams, entry

pytestmark = [pytest.mark.anyio, pytest.mark.threat("T11")]

REPO_ROOT = str(Path(__file__).resolve().parents[2])
LABEL = "ahead"
#: Entries of the first page: twenty of the walk's batches.
PAGE = 1000


class Probe:
    """How far the client got with the first page, and what else it asked for."""

    def __init__(self) -> None:
        self.built = 0
        #: How many of the first page's entries the client had started building when
        #: it asked for the second page.
        self.built_when_asked: int | None = None
        self.cursors: list[str] = []
        #: Whether the handler answering ahead was still running when the walk ended.
        self.ahead_running = False


class Watched(dict[str, Any]):
    """An entry that notes when the client starts building it (reads its ``uri``)."""

    def __init__(self, data: dict[str, Any], probe: Probe) -> None:
        super().__init__(data)
        self._probe: Probe | None = probe

    def get(self, key: str, default: Any = None) -> Any:
        if key == "uri" and self._probe is not None:
            self._probe.built += 1
            self._probe = None  # noted once
        return super().get(key, default)


def server(probe: Probe, answer_ahead: Any) -> ServerSpec:
    """An in-process server whose first page is ``PAGE`` watched entries; the pages after
    it are ``answer_ahead(cursor)``."""
    first = [Watched(entry(n), probe) for n in range(PAGE)]

    async def skills_list(ctx: Any, params: ListParams) -> Any:
        if params.cursor is None:
            return {"skills": first, "nextCursor": "1"}
        probe.cursors.append(params.cursor)
        if probe.built_when_asked is None:
            probe.built_when_asked = probe.built
        probe.ahead_running = True
        try:
            return await answer_ahead(params.cursor)
        finally:
            probe.ahead_running = False

    async def no_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    hostile: Server[Any] = Server("ahead", on_list_resources=no_resources)
    hostile.extensions[EXTENSION_ID] = {}
    hostile.add_request_handler("skills/list", ListParams, skills_list)
    return ServerSpec(label=LABEL, transport=InMemoryTransport(server=hostile))


def examples() -> ServerSpec:
    return ServerSpec(
        label="examples",
        transport=InMemoryTransport(server=build_skills_server(example_skills_dir())),
    )


async def connect_fails(
    spec: ServerSpec, expected: type[SkillwardError], limits: Limits | None = None
) -> SkillwardError:
    """Connect ``spec`` in a host, expecting ``expected``; then the host connects and
    lists another server, and leaves, all in bounded time."""
    config = HostConfig(limits=limits or Limits())
    with anyio.fail_after(30):
        async with SkillHost(config=config) as host:
            with pytest.raises(expected) as info:
                await host.connect(spec)
            await host.connect(examples())
            assert [status.label for status in host.servers()] == ["examples"]
            assert host.registry.records()
            assert all(record.origin.label == "examples" for record in host.registry.records())
    assert info.value.server == spec.label
    return info.value


async def test_the_next_page_is_asked_for_before_this_ones_entries_are_built() -> None:
    probe = Probe()

    async def last(cursor: str) -> dict[str, Any]:
        return {"skills": [entry(PAGE)]}

    with anyio.fail_after(30):
        async with SkillsClient.connect(server(probe, last)) as client:
            listing = await client.list_skills()
    assert len(listing.entries) == PAGE + 1
    assert listing.pages == 2
    assert probe.built == PAGE
    assert probe.built_when_asked is not None
    assert probe.built_when_asked < PAGE


async def test_a_page_ahead_the_server_refuses_ends_the_walk_with_its_error() -> None:
    probe = Probe()

    async def refuse(cursor: str) -> dict[str, Any]:
        raise MCPError(code=types.INVALID_PARAMS, message="\x1b[31mno more pages\x1b[0m")

    error = await connect_fails(server(probe, refuse), ServerRejected)
    assert isinstance(error, ServerRejected)
    assert error.code == types.INVALID_PARAMS
    assert "\x1b" not in str(error)
    # It was refused while the first page was being built, which stopped there.
    assert probe.built_when_asked is not None
    assert probe.built_when_asked < PAGE
    assert probe.built < PAGE


async def test_a_page_ahead_that_stalls_ends_the_walk_at_the_deadline() -> None:
    probe = Probe()

    async def stall(cursor: str) -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("never answers")

    await connect_fails(
        server(probe, stall), DeadlineExceeded, Limits(operation_timeout=1, request_timeout=5)
    )
    assert probe.built_when_asked is not None
    assert probe.built_when_asked < PAGE
    assert not probe.ahead_running  # the request ahead was cancelled with the walk


async def test_a_page_ahead_past_the_entry_bound_is_refused_unbuilt_and_nothing_follows() -> None:
    probe = Probe()
    second = [Watched(entry(PAGE + n), probe) for n in range(50)]

    async def past_the_bound(cursor: str) -> dict[str, Any]:
        return {"skills": second, "nextCursor": "2"}

    error = await connect_fails(
        server(probe, past_the_bound), ListingRunaway, Limits(max_list_entries=PAGE + 10)
    )
    assert f"more than {PAGE + 10} entries" in str(error)
    assert probe.built_when_asked is not None
    assert probe.built_when_asked < PAGE
    assert probe.built < PAGE  # the first page's building stopped, the second never began
    assert probe.cursors == ["1"]  # and no page after it was asked for


async def test_a_server_that_hangs_up_while_a_page_is_built_is_reported_disconnected() -> None:
    argv = [sys.executable, "-m", "tests.support.misbehaving", str(example_skills_dir())]
    argv += ["--mode", "hang-up-list"]
    transport = StdioTransport(
        command=argv[0], args=tuple(argv[1:]), cwd=REPO_ROOT, stderr="discard"
    )
    error = await connect_fails(ServerSpec(label=LABEL, transport=transport), ServerDisconnected)
    assert "disconnected" in str(error)
