"""An effective policy governing a real SkillHost against real (some hostile) MCP servers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream

from skillward.cache._disk import DiskCache
from skillward.cache.seam import NoCache
from skillward.core.config import Limits
from skillward.core.errors import ApprovalDenied, ConfigError, PolicyDenied, TransportError
from skillward.edge.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
    parse_server_option,
)
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.server import build_skills_server
from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ActivationRequest, DenyAll, content_hash
from skillward.trust.audit import AuditTrail, read_events
from skillward.trust.book import ApprovalBook
from skillward.trust.policy import EffectivePolicy, NoPolicy, Pin, Policy, Source
from tests.support.approvals import Scripted
from tests.support.doubles import Approving
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree
from tests.support.keys import MemoryKeys
from tests.support.policies import ALLOWED, PolicyDirs, url_named_executable
from tests.support.servers import serve_tree
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def dirs(tmp_path: Path) -> PolicyDirs:
    return PolicyDirs(tmp_path / "policy")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[ServerSpec, HostileState]:
    build_hostile_tree(tmp_path / "tree")
    server, state = build_hostile_server(tmp_path / "tree")
    return ServerSpec(label="hostile", transport=InMemoryTransport(server=server)), state


def reads(state: HostileState) -> list[str | None]:
    return [uri for method, uri in state.requests if method == "resources/read"]


async def refused_connection(policy: Policy, spec: ServerSpec) -> PolicyDenied:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), policy=policy) as host:
            with pytest.raises(PolicyDenied) as caught:
                await host.connect(spec)
            assert host.servers() == []
    return caught.value


@pytest.mark.threat("T40")
async def test_a_denied_server_never_connects_and_the_error_names_rule_file_and_contact(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState]
) -> None:
    spec, state = hostile
    path = dirs.admin('version = 1\ncontact = "IT desk, #it"\n[servers]\ndeny = ["host*"]\n')
    error = await refused_connection(dirs.load(), spec)
    assert state.requests == []
    assert error.exit_code == 5
    assert error.server == "hostile"
    assert "servers.deny = 'host*'" in error.message
    assert f"{path}:4" in error.message
    assert "contact: IT desk, #it" in error.message


@pytest.mark.threat("T40")
async def test_a_denied_stdio_server_is_never_started(dirs: PolicyDirs, tmp_path: Path) -> None:
    # The host starts a stdio server before it loads the MCP client: never before asking.
    started = tmp_path / "started"
    command = f"open({str(started)!r}, 'w').close(); import sys; sys.stdin.read()"
    transport = StdioTransport(command=sys.executable, args=("-c", command), stderr="discard")
    dirs.admin('version = 1\n[servers]\ndeny = ["evil"]\n')
    error = await refused_connection(dirs.load(), ServerSpec(label="evil", transport=transport))
    assert error.server == "evil"
    assert not started.exists()


@pytest.mark.threat("T40")
async def test_a_url_allow_entry_never_starts_a_stdio_server_whose_command_is_that_url(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    url_named_executable(tmp_path / "repo", started)
    transport = StdioTransport(command=ALLOWED, cwd=str(tmp_path / "repo"), stderr="discard")
    spec = ServerSpec(label="acme", transport=transport)
    dirs.admin(f'version = 1\n[servers]\nallow = ["{ALLOWED}"]\n')
    error = await refused_connection(dirs.load(), spec)
    assert error.server == "acme"
    assert "not in servers.allow" in error.message
    assert not started.exists()
    # Named as the command it is, the same server is let in: it was refused for its kind.
    dirs.admin(f'version = 1\n[servers]\nallow = ["stdio:{ALLOWED}"]\n')
    with anyio.fail_after(60):
        async with SkillHost(approver=Approving(), policy=dirs.load()) as host:
            await host.connect(spec)
            assert host.resolve("refunds").entry is not None
    assert started.exists()


@asynccontextmanager
async def listening(contacted: list[bytes]) -> AsyncIterator[int]:
    """A port on 127.0.0.1 that notes every connection made to it, and closes it."""

    async def handle(stream: SocketStream) -> None:
        async with stream:
            contacted.append(b"")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        yield listener.extra(SocketAttribute.local_port)
        group.cancel_scope.cancel()


@pytest.mark.threat("T40")
async def test_a_denied_url_is_refused_in_every_spelling_and_nothing_is_contacted(
    dirs: PolicyDirs,
) -> None:
    contacted: list[bytes] = []
    with anyio.fail_after(60):
        async with listening(contacted) as port:
            dirs.admin(f'version = 1\n[servers]\ndeny = ["http://127.0.0.1:{port}/*"]\n')
            policy = dirs.load()
            for url in (
                f"http://127.0.0.1.:{port}/mcp",
                f"http://127.0.0.1:{port}?x=/mcp",
                f"http://2130706433:{port}/mcp",
                f"http://0x7f.0.0.1:{port}/mcp",
            ):
                spec = parse_server_option(f"evil={url}")
                error = await refused_connection(policy, spec)
                assert "servers.deny" in error.message, url
            with pytest.raises(ConfigError) as caught:
                parse_server_option(f"evil=http://u@127.0.0.1:{port}/mcp")
            assert caught.value.server == "evil"
            assert contacted == []
            # What a deny list cannot stop: another name for the same address.
            async with SkillHost(approver=Approving(), policy=policy) as host:
                with pytest.raises(TransportError):
                    await host.connect(parse_server_option(f"other=http://localhost:{port}/mcp"))
            assert contacted != []


@pytest.mark.threat("T40", "T41")
@pytest.mark.parametrize("pattern", ["http://*", "http:http://*"])
async def test_a_plain_http_deny_naming_no_port_refuses_every_port_and_contacts_nothing(
    dirs: PolicyDirs, pattern: str
) -> None:
    contacted: list[bytes] = []
    with anyio.fail_after(60):
        async with listening(contacted) as port:
            dirs.admin(f'version = 1\n[servers]\ndeny = ["{pattern}"]\n')
            spec = parse_server_option(f"fine=http://127.0.0.1:{port}/mcp")
            error = await refused_connection(dirs.load(), spec)
            assert f"servers.deny = '{pattern}'" in error.message
            assert contacted == []


@pytest.mark.threat("T40")
async def test_an_allow_entry_naming_no_path_admits_its_host_on_any_path_and_no_other_port(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    tree = tmp_path / "skills"
    write(tree, "acme/refunds/SKILL.md", skill_md("refunds", "Refund policy"))
    contacted: list[bytes] = []
    with anyio.fail_after(60):
        async with serve_tree(tree, "http") as spec, listening(contacted) as other:
            assert isinstance(spec.transport, HttpTransport)
            url = urlsplit(spec.transport.url)
            assert url.path == "/mcp"
            dirs.admin(f'version = 1\n[servers]\nallow = ["http://{url.netloc}"]\n')
            policy = dirs.load()
            async with SkillHost(approver=Approving(), policy=policy) as host:
                await host.connect(spec)
                assert host.resolve("refunds").entry is not None
            elsewhere = parse_server_option(f"acme=http://127.0.0.1:{other}/mcp")
            error = await refused_connection(policy, elsewhere)
            assert "not in servers.allow" in error.message
            # Naming no port, an allow entry names the default one (80) only.
            dirs.admin('version = 1\n[servers]\nallow = ["http://127.0.0.1"]\n')
            await refused_connection(dirs.load(), elsewhere)
            assert contacted == []


@pytest.mark.threat("T40", "T41")
@pytest.mark.parametrize("where", ["absolute", "relative"])
async def test_a_bare_word_deny_never_starts_a_stdio_server_running_that_program(
    dirs: PolicyDirs, tmp_path: Path, where: str
) -> None:
    started = tmp_path / "started"
    program = tmp_path / "bin" / "evil"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\nopen({str(started)!r}, 'w').close()\n")
    program.chmod(0o755)
    command = str(program) if where == "absolute" else "./evil"
    transport = StdioTransport(command=command, cwd=str(program.parent), stderr="discard")
    dirs.admin('version = 1\n[servers]\ndeny = ["evil"]\n')
    error = await refused_connection(dirs.load(), ServerSpec(label="tools", transport=transport))
    assert error.server == "tools"
    assert "servers.deny = 'evil'" in error.message
    assert not started.exists()


@pytest.mark.threat("T39")
async def test_an_unsafe_admin_directory_lets_no_server_connect(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState]
) -> None:
    spec, state = hostile
    dirs.admin("version = 1\n")
    dirs.admin_dir.chmod(0o777)
    error = await refused_connection(dirs.load(), spec)
    assert state.requests == []
    assert str(dirs.admin_dir) in error.message
    assert "group- and others-writable" in error.message


@pytest.mark.threat("T40")
async def test_a_denied_skill_is_refused_before_the_approver_and_none_of_its_files_is_read(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState]
) -> None:
    spec, state = hostile
    dirs.admin('version = 1\n[skills]\ndeny = ["skill://good/**"]\n')
    approver = Approving()
    with anyio.fail_after(30):
        async with SkillHost(approver=approver, policy=dirs.load()) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied):
                await host.activate("good")
            with pytest.raises(PolicyDenied):
                await host.read_file("good", "ref/guide.md")
            block = await host.read_skill_block("good")
            assert block.kind == "error"
            await host.activate("rotating")  # not denied
    assert approver.asked[0].key.locator == "skill://rotating/SKILL.md"
    assert len(approver.asked) == 1
    assert "skill://good/SKILL.md" not in reads(state)


@pytest.mark.threat("T19")
async def test_headless_dynamic_prompt_is_refused_even_where_the_host_allows_dynamic_skills(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState]
) -> None:
    spec, _ = hostile
    dirs.admin('version = 1\n[skills]\ndynamic = "prompt"\n')
    config = HostConfig(unsafe_allow_dynamic=True)
    with anyio.fail_after(30):
        async with SkillHost(
            config=config, approver=Approving(), policy=dirs.load(headless=True)
        ) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied, match="no one can be asked"):
                await host.activate("dynamic")
        async with SkillHost(config=config, approver=Approving(), policy=dirs.load()) as host:
            await host.connect(spec)
            activation = await host.activate("dynamic")
            assert activation.entry is not None


async def test_the_skill_size_limit_of_the_policy_reaches_the_listing(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState]
) -> None:
    spec, _ = hostile
    roomy = HostConfig(limits=Limits(max_skill_bytes=32 * 1024 * 1024))
    dirs.admin("version = 1\n[limits]\nmax_skill_bytes = 16777216\n")
    with anyio.fail_after(30):
        async with SkillHost(config=roomy, approver=Approving()) as host:
            await host.connect(spec)
            assert any(r.name == "too-big" for r in host.registry.records())
        async with SkillHost(config=roomy, approver=Approving(), policy=dirs.load()) as host:
            assert host.limits.max_skill_bytes == 16 * 1024 * 1024
            await host.connect(spec)
            assert not any(r.name == "too-big" for r in host.registry.records())
            assert any("too-big" in str(d.error.uri) for d in host.declined())


async def test_a_cache_the_policy_turns_off_keeps_nothing(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState], tmp_path: Path
) -> None:
    spec, _ = hostile
    dirs.admin('version = 1\n[limits]\ncache = "off"\n')
    cache = DiskCache(tmp_path / "cache", discovery=())
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), policy=dirs.load(), cache=cache) as host:
            assert isinstance(host.cache, NoCache)
            await host.connect(spec)
            await host.activate("good")
            await host.read_file("good", "ref/guide.md")
    assert not (tmp_path / "cache").exists()


async def test_the_policys_cache_budget_reaches_a_disk_cache_the_host_is_given(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    dirs.admin("version = 1\n[limits]\ncache_budget_mib = 1\n")
    cache = DiskCache(tmp_path / "cache", discovery=())
    assert cache.limits.max_cache_bytes == Limits().max_cache_bytes
    SkillHost(approver=Approving(), policy=dirs.load(), cache=cache)
    assert cache.limits.max_cache_bytes == 1024 * 1024
    # The host's own limits narrow it too: the smaller budget, the shorter age.
    config = HostConfig(limits=Limits(max_cache_bytes=4096, max_cache_age=60.0))
    SkillHost(config=config, approver=Approving(), policy=dirs.load(), cache=cache)
    assert (cache.limits.max_cache_bytes, cache.limits.max_cache_age) == (4096, 60.0)
    # ...and never widen what the cache was given.
    SkillHost(approver=Approving(), cache=cache)
    assert (cache.limits.max_cache_bytes, cache.limits.max_cache_age) == (4096, 60.0)


@pytest.mark.threat("T40")
async def test_an_approval_book_without_the_policys_rules_is_refused(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    dirs.admin('version = 1\n[approvals]\npersist = "once"\nmax_age_days = 1\n')
    policy = dirs.load()
    store = FileApprovalStore(tmp_path / "approvals.json", keys=MemoryKeys())
    with pytest.raises(ConfigError, match=r"rules=policy\.approval_rules\(store\)"):
        SkillHost(approver=ApprovalBook(Scripted(), store=store), policy=policy)
    other = dirs.load(host={"version": 1, "grants": {"execution": "never"}})
    book = ApprovalBook(Scripted(), store=store, rules=other.approval_rules(store))
    with pytest.raises(ConfigError):
        SkillHost(approver=book, policy=policy)
    book = ApprovalBook(Scripted(), store=store, rules=policy.approval_rules(store))
    SkillHost(approver=book, policy=policy)
    SkillHost(approver=ApprovalBook(Scripted(), store=store))  # no policy: nothing to apply


@pytest.mark.threat("T40")
async def test_a_denied_skill_cannot_be_reviewed_and_nothing_of_it_is_fetched(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState], tmp_path: Path
) -> None:
    spec, state = hostile
    dirs.admin('version = 1\n[skills]\ndeny = ["skill://good/**"]\n')
    audit = AuditTrail(tmp_path / "audit.jsonl")
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), policy=dirs.load(), audit=audit) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied):
                await host.approval_request("good")
            with pytest.raises(PolicyDenied):
                await host.view_skill_md(host.resolve("good"))
            with pytest.raises(PolicyDenied):
                await host.read_file("good", "ref/guide.md")
            request = await host.approval_request("rotating")  # not denied
            assert request.viewer is not None
            await request.viewer()
    assert not [uri for uri in reads(state) if uri is not None and "//good/" in uri]
    denials = [
        e for e in read_events(tmp_path / "audit.jsonl").events if e.event == "policy_denial"
    ]
    assert [e.skill_uri for e in denials] == ["skill://good/SKILL.md"] * 3
    assert all(e.identity is not None and e.content_hash is not None for e in denials)


@pytest.mark.threat("T40")
async def test_a_server_or_skill_the_users_own_policy_file_refuses_is_audited_as_theirs(
    dirs: PolicyDirs, hostile: tuple[ServerSpec, HostileState], tmp_path: Path
) -> None:
    spec, _ = hostile
    dirs.admin('version = 1\ncontact = "IT desk"\n')
    dirs.user('version = 1\n[servers]\ndeny = ["blocked"]\n[skills]\ndeny = ["skill://good/**"]\n')
    audit = AuditTrail(tmp_path / "audit.jsonl")
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), policy=dirs.load(), audit=audit) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied) as skill:
                await host.approval_request("good")
            with pytest.raises(PolicyDenied) as server:
                await host.connect(ServerSpec(label="blocked", transport=spec.transport))
    assert skill.value.whose == server.value.whose == "your own policy file"
    reasons = [e.reason for e in read_events(tmp_path / "audit.jsonl").events]
    assert reasons == [
        "your own policy file does not allow this skill",
        "your own policy file does not allow this server",
    ]


# --- pins ---------------------------------------------------------------------------------


def served(directory: Path, label: str = "acme") -> ServerSpec:
    server = build_skills_server(directory)
    return ServerSpec(label=label, transport=InMemoryTransport(server=server))


def pin_text(server: str, skill: str, content: str) -> str:
    return f'version = 1\n[[pins]]\nserver = "{server}"\nskill = "{skill}"\ncontent = "{content}"\n'


async def pinned_policy(dirs: PolicyDirs, spec: ServerSpec) -> EffectivePolicy:
    """A policy pinning ``refunds`` as ``spec`` serves it now (what `skillward pin` prints)."""
    async with SkillHost() as host:
        await host.connect(spec)
        entry = host.resolve("refunds").entry
    assert entry is not None
    digest = content_hash(entry)
    assert digest is not None
    dirs.admin(pin_text("acme", entry.uri, digest), "50-pins.toml")
    return dirs.load(headless=True)


async def approval_request_of(spec: ServerSpec) -> ActivationRequest:
    async with SkillHost() as host:
        await host.connect(spec)
        return await host.approval_request("refunds")


async def activate_with(policy: Policy, spec: ServerSpec) -> Any:
    async with SkillHost(approver=DenyAll(), policy=policy) as host:
        await host.connect(spec)
        return await host.activate("refunds")


@pytest.mark.threat("T42")
async def test_a_pinned_skill_loads_with_no_prompt_and_only_while_its_content_is_unchanged(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    tree = tmp_path / "skills"
    write(tree, "acme/refunds/SKILL.md", skill_md("refunds", "Refund policy"))
    write(tree, "acme/refunds/limits.md", b"at most 100 EUR\n")
    with anyio.fail_after(30):
        policy = await pinned_policy(dirs, served(tree))
        activation = await activate_with(policy, served(tree))
        assert activation.entry is not None
        # Another label serving the very same content is not pinned.
        with pytest.raises(ApprovalDenied):
            await activate_with(policy, served(tree, label="acme-mirror"))
        # One changed byte in one file, and the pin no longer applies.
        write(tree, "acme/refunds/limits.md", b"at most 900 EUR\n")
        with pytest.raises(ApprovalDenied):
            await activate_with(policy, served(tree))
        # A file added beside it: the same.
        write(tree, "acme/refunds/limits.md", b"at most 100 EUR\n")
        write(tree, "acme/refunds/extra.md", b"new instructions\n")
        with pytest.raises(ApprovalDenied):
            await activate_with(policy, served(tree))


class HostPins(NoPolicy):
    """A host's own policy in code: it pins one content hash."""

    def __init__(self, content: str) -> None:
        self.content = content

    def pin_for(self, request: ActivationRequest) -> Pin | None:
        entry = request.record.entry
        if entry is None or content_hash(entry) != self.content:
            return None
        return Pin("acme", entry.uri, self.content, False, Source("host code"))


@pytest.mark.threat("T42")
async def test_a_pinned_load_is_audited_as_pinned_where_the_pin_was_set(
    dirs: PolicyDirs, tmp_path: Path
) -> None:
    tree = tmp_path / "skills"
    write(tree, "acme/refunds/SKILL.md", skill_md("refunds", "Refund policy"))
    admin = await pinned_policy(dirs, served(tree))
    pin = admin.pin_for(await approval_request_of(served(tree)))
    assert pin is not None
    audit = tmp_path / "audit.jsonl"
    for policy in (admin, HostPins(pin.content)):
        with anyio.fail_after(30):
            async with SkillHost(
                approver=DenyAll(), policy=policy, audit=AuditTrail(audit)
            ) as host:
                await host.connect(served(tree))
                await host.activate("refunds")
    reasons = [e.reason for e in read_events(audit).events]
    assert reasons == [f"pinned in {pin.source}", "pinned in host code"]
    assert "50-pins.toml:" in reasons[0]


@pytest.mark.threat("T42")
async def test_a_pin_never_overrides_a_deny_rule(dirs: PolicyDirs, tmp_path: Path) -> None:
    tree = tmp_path / "skills"
    write(tree, "acme/refunds/SKILL.md", skill_md("refunds", "Refund policy"))
    dirs.user('version = 1\n[skills]\ndeny = ["skill://acme/**"]\n')
    with anyio.fail_after(30):
        policy = await pinned_policy(dirs, served(tree))
        with pytest.raises(PolicyDenied):
            await activate_with(policy, served(tree))
