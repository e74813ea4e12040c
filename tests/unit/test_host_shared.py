"""What a host's sessions share, each part alone over real servers (in memory):
``Connections`` (each server's session, its calls, why it ended), ``Shared`` (the
origins, the registry, the policy and the audit trail, and the sessions that join
it) and ``Fetcher`` (where skill bytes come from, and the cache)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from skillward.cache._disk import DiskCache
from skillward.cache.seam import ContentCache, NoCache
from skillward.core.config import Limits
from skillward.core.context import catalog_block
from skillward.core.errors import (
    PolicyDenied,
    ServerDisconnected,
    SkillTooLarge,
    TransportError,
    UnknownServer,
    UnverifiableSkill,
    UsageError,
)
from skillward.core.origins import SkillKey
from skillward.core.verify import manifest_item
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from skillward.host._connections import Connections
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import Activation, HostConfig
from skillward.serve.catalog import example_skills_dir
from skillward.serve.server import build_skills_server
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.policy import NoPolicy, Policy
from tests.support.doubles import Approving
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree

pytestmark = pytest.mark.anyio


def examples(label: str = "acme") -> ServerSpec:
    server = build_skills_server(example_skills_dir(), unlisted=["git-workflow"])
    return ServerSpec(label=label, transport=InMemoryTransport(server=server))


def hostile(tmp_path: Path) -> tuple[ServerSpec, HostileState]:
    build_hostile_tree(tmp_path / "hostile")
    server, state = build_hostile_server(tmp_path / "hostile")
    return ServerSpec(label="hostile", transport=InMemoryTransport(server=server)), state


@asynccontextmanager
async def opened(
    *,
    config: HostConfig | None = None,
    policy: Policy | None = None,
    cache: ContentCache | None = None,
    audit: AuditTrail | None = None,
) -> AsyncIterator[Shared]:
    shared = Shared(
        config=config or HostConfig(),
        policy=policy or NoPolicy(),
        cache=cache or NoCache(),
        audit=audit,
    )
    with anyio.fail_after(60):
        await shared.open()
        try:
            yield shared
        finally:
            await shared.aclose()


# --- Connections --------------------------------------------------------------------------


async def test_connections_are_made_called_and_closed_by_label() -> None:
    connections = Connections(Limits())
    with pytest.raises(UsageError, match="open the host first"):
        await connections.add(examples())
    await connections.open()
    try:
        with anyio.fail_after(30):
            connection = await connections.add(examples())
            listing = await connections.call(connection, lambda c: c.list_skills())
        assert "refunds" in {e.frontmatter.name for e in listing.entries}
        assert [s.state for s in connections.statuses()] == ["connected"]
        await connections.remove("acme")
        assert "acme" not in connections
        status = connections.status(connection)
        assert (status.state, type(status.error)) == ("disconnected", ServerDisconnected)
        with pytest.raises(ServerDisconnected, match="it was closed"):
            await connections.call(connection, lambda c: c.list_skills())
    finally:
        await connections.aclose()
    assert not connections.is_open


@pytest.mark.threat("T34")
async def test_a_server_that_fails_its_handshake_leaves_its_label_free() -> None:
    gone = ServerSpec(
        label="gone", transport=StdioTransport(command=sys.executable, args=("-c", "pass"))
    )
    connections = Connections(Limits())
    await connections.open()
    try:
        with anyio.fail_after(30), pytest.raises(TransportError):
            await connections.add(gone)
        assert "gone" not in connections
        assert connections.labels() == []
    finally:
        await connections.aclose()


async def test_reopening_replaces_a_connection_under_its_label() -> None:
    connections = Connections(Limits())
    await connections.open()
    try:
        with anyio.fail_after(30):
            old = await connections.add(examples())
            new = await connections.reopen(old)
        assert connections.get("acme") is new
        assert not old.alive
        assert new.alive
    finally:
        await connections.aclose()


# --- Shared -------------------------------------------------------------------------------


@pytest.mark.threat("T20")
async def test_connecting_lists_skills_into_the_registry_and_reads_nothing(
    tmp_path: Path,
) -> None:
    spec, state = hostile(tmp_path)
    async with opened() as shared:
        await shared.connect(spec)
        assert "good" in {r.name for r in shared.registry.records()}
        assert [m for m, _ in state.requests if m.startswith("resources/")] == []


def activation_of(shared: Shared, reference: str) -> Activation:
    record = shared.registry.resolve(reference)
    return Activation(record, catalog_block([]), record.entry)


async def test_disconnecting_closes_that_origins_activations_in_every_joined_window() -> None:
    async with opened() as shared:
        await shared.connect(examples())
        await shared.connect(examples("docs"))
        joined, other, left = ActingWindow(), ActingWindow(), ActingWindow()
        for window in (joined, other, left):
            shared.join(window, Approving())
            window.open(activation_of(shared, "acme:refunds"))
            window.open(activation_of(shared, "docs:refunds"))
        shared.leave(left)
        assert shared.windows() == [joined, other]
        await shared.disconnect("acme")
        for window in (joined, other):
            assert [a.record.origin.label for a in window.active()] == ["docs"]
        assert len(left.active()) == 2  # a session that left is not the host's to close
        with pytest.raises(UnknownServer):
            shared.connection("acme")


async def test_an_approval_request_says_how_the_server_is_reached_and_fetches_nothing(
    tmp_path: Path,
) -> None:
    spec, state = hostile(tmp_path)
    async with opened() as shared:
        await shared.connect(spec)
        request = shared.approval_request(shared.registry.resolve("good"))
        assert request.identity == spec.identity
        assert request.tools_grantable
        assert [m for m, _ in state.requests if m.startswith("resources/")] == []
        assert request.viewer is not None  # the person may ask to see SKILL.md, verified
        text = await request.viewer()
        assert "good" in text


@dataclass
class Revoking:
    """An approver that records what it is told to revoke (the Revocable protocol)."""

    revoked: list[SkillKey] = field(default_factory=list)

    async def decide(self, request: Any) -> Any:
        raise AssertionError("not asked here")

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        self.revoked.append(key)


async def test_a_revocation_reaches_each_joined_approver_once() -> None:
    shared = Shared(config=HostConfig(), policy=NoPolicy(), cache=NoCache(), audit=None)
    one, two = Revoking(), Revoking()
    windows = [ActingWindow() for _ in range(3)]
    shared.join(windows[0], one)
    shared.join(windows[1], one)  # two sessions may share one approver
    shared.join(windows[2], two)
    key = SkillKey("acme", "skill://acme/x/SKILL.md")
    await shared.revoke(key, reason="changed")
    assert (one.revoked, two.revoked) == ([key], [key])


async def test_a_server_the_policy_refuses_is_recorded_and_never_started(tmp_path: Path) -> None:
    class NoServers(NoPolicy):
        def check_server(self, spec: ServerSpec) -> None:
            raise PolicyDenied("not allowed", server=spec.label)

    audit = AuditTrail(tmp_path / "audit.jsonl")
    async with opened(policy=NoServers(), audit=audit) as shared:
        with pytest.raises(PolicyDenied):
            await shared.connect(examples())
        assert shared.connections.labels() == []
    [event] = read_events(tmp_path / "audit.jsonl").events
    assert (event.event, event.label) == ("policy_denial", "acme")


async def test_a_lookup_confirms_an_unlisted_uri_with_the_server_it_names() -> None:
    async with opened() as shared:
        await shared.connect(examples())
        record = await shared.lookup("acme:skill://git-workflow/SKILL.md")
        assert not record.listed
        assert shared.registry.resolve("acme:git-workflow") == record


# --- Fetcher ------------------------------------------------------------------------------


@pytest.mark.threat("T17")
async def test_a_cached_file_is_read_without_the_server_and_only_while_it_is_connected(
    tmp_path: Path,
) -> None:
    spec, state = hostile(tmp_path)
    async with opened(cache=DiskCache(tmp_path / "cache")) as shared:
        await shared.connect(spec)
        entry = shared.registry.resolve("good").entry
        assert entry is not None
        item = manifest_item(entry, "skill://good/ref/guide.md", server="hostile")
        connection = shared.connection("hostile")
        first = await shared.fetcher.verified(connection, item, entry.uri)
        reads = len(state.requests)
        again = await shared.fetcher.verified(connection, item, entry.uri)
        assert again.data == first.data
        assert len(state.requests) == reads  # from the cache
        await shared.connections.remove("hostile")
        key = shared.fetcher.cache_key(connection, entry.uri, item)
        with pytest.raises(ServerDisconnected):
            await shared.fetcher.fetch(connection, item.uri, key)


@pytest.mark.threat("T19")
async def test_a_dynamic_skill_is_refused_unless_allowed_and_held_to_one_budget(
    tmp_path: Path,
) -> None:
    spec, _ = hostile(tmp_path)
    async with opened() as shared:
        await shared.connect(spec)
        record = shared.registry.resolve("dynamic")
        with pytest.raises(UnverifiableSkill):
            shared.fetcher.check_dynamic(record)
    async with opened(config=HostConfig(unsafe_allow_dynamic=True)) as shared:
        await shared.connect(spec)
        record = shared.registry.resolve("dynamic")
        shared.fetcher.check_dynamic(record)
        window = ActingWindow()
        limit = shared.limits.max_skill_bytes
        window.spend(record.key, limit - 4, start=True)
        connection = shared.connection("hostile")
        with pytest.raises(SkillTooLarge):
            await shared.fetcher.fetch_dynamic(
                connection, record, "skill://dynamic/ref/guide.md", window
            )
        assert window.spent(record.key) == limit - 4
