"""The host's seams: cache, policy and the execution gate, with their safe defaults."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from mcp.server import Server

from skillward.cache.seam import CacheKey
from skillward.core.config import Limits
from skillward.core.errors import DigestMismatch, ExecutionDenied, PolicyDenied
from skillward.edge._local import LocalSkillDir
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.catalog import example_skills_dir
from skillward.trust.approvals import ActivationRequest, Decision
from skillward.trust.gates import ExecutionRequest
from skillward.trust.policy import GrantKind, GrantMode, NoPolicy
from tests.support.doubles import Approving, Execution
from tests.support.hostile import HostileState, build_hostile_server, build_hostile_tree
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio


@dataclass
class DictCache:
    entries: dict[CacheKey, bytes] = field(default_factory=dict)

    def get(self, key: CacheKey) -> bytes | None:
        return self.entries.get(key)

    def put(self, key: CacheKey, data: bytes) -> None:
        self.entries[key] = data

    def forget(self, label: str) -> None:
        self.entries = {k: v for k, v in self.entries.items() if k.origin != label}

    def isolate_from(self, directory: Path) -> None:
        return None

    def narrow(self, limits: Limits) -> None:
        return None


@dataclass
class DenyingPolicy(NoPolicy):
    server: str | None = None
    skill: str | None = None
    never: frozenset[GrantKind] = frozenset()

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        return "never" if kind in self.never else "prompt"

    def check_server(self, spec: ServerSpec) -> None:
        if spec.label == self.server:
            raise PolicyDenied(f"server {spec.label!r} is not allowed by policy")

    def check_activation(self, request: ActivationRequest) -> None:
        if request.record.name == self.skill:
            raise PolicyDenied(f"skill {request.record.name!r} is not allowed by policy")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[ServerSpec, HostileState]:
    build_hostile_tree(tmp_path)
    server, state = build_hostile_server(tmp_path)
    return ServerSpec(label="hostile", transport=InMemoryTransport(server=server)), state


def reads(state: HostileState) -> list[str | None]:
    return [uri for method, uri in state.requests if method == "resources/read"]


@pytest.mark.threat("T17")
async def test_a_cached_file_is_served_without_a_second_read(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, state = hostile
    cache = DictCache()
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), cache=cache) as host:
            await host.connect(spec)
            await host.activate("good")
            first = await host.read_file("good", "ref/guide.md")
            second = await host.read_file("good", "ref/guide.md")
    assert reads(state) == ["skill://good/SKILL.md", "skill://good/ref/guide.md"]
    assert first.content == second.content
    assert {key.origin for key in cache.entries} == {"hostile"}


@pytest.mark.threat("T17")
async def test_tampered_cache_content_is_refused_like_a_tampered_read(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, _ = hostile
    cache = DictCache()
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), cache=cache) as host:
            await host.connect(spec)
            await host.activate("good")
            await host.read_file("good", "ref/guide.md")
            key = next(k for k in cache.entries if k.uri.endswith("guide.md"))
            cache.entries[key] = b"guide for EVIL\n"
            with pytest.raises(DigestMismatch):
                await host.read_file("good", "ref/guide.md")


async def test_a_policy_can_refuse_a_server(hostile: tuple[ServerSpec, HostileState]) -> None:
    spec, state = hostile
    with anyio.fail_after(30):
        async with SkillHost(policy=DenyingPolicy(server="hostile")) as host:
            with pytest.raises(PolicyDenied):
                await host.connect(spec)
            assert host.catalog() == []
    assert state.requests == []


async def test_policy_is_checked_before_the_approver_and_wins(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, state = hostile
    approver = Approving()
    with anyio.fail_after(30):
        async with SkillHost(approver=approver, policy=DenyingPolicy(skill="good")) as host:
            await host.connect(spec)
            with pytest.raises(PolicyDenied):
                await host.activate("good")
    assert approver.asked == []
    assert reads(state) == []


@pytest.mark.threat("T13")
async def test_execution_while_acting_on_an_mcp_skill_is_denied_by_default(
    hostile: tuple[ServerSpec, HostileState], tmp_path: Path
) -> None:
    spec, _ = hostile
    local = tmp_path / "local"
    write(local, "mine/SKILL.md", skill_md("mine"))
    config = HostConfig(local_dirs=(LocalSkillDir("project", local),))
    with anyio.fail_after(30):
        async with SkillHost(config=config, approver=Approving()) as host:
            await host.connect(spec)
            await host.authorize_execution("bash")  # nothing is active: no gate
            await host.activate("project:mine")
            await host.authorize_execution("bash")  # only a local skill is active
            await host.activate("good")
            with pytest.raises(ExecutionDenied) as info:
                await host.authorize_execution("bash", detail="python scripts/run.py")
    assert info.value.server == "hostile"
    assert "explicit approval" in str(info.value)


@pytest.mark.threat("T13")
async def test_the_execution_gate_is_asked_with_the_acting_skills(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, _ = hostile
    gate = Execution(Decision.APPROVE)
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving(), execution=gate) as host:
            await host.connect(spec)
            activation = await host.activate("good")
            await host.authorize_execution("bash", detail="ls")
    key = activation.record.key
    assert gate.asked == [
        ExecutionRequest("bash", (key,), "ls", skill=key, name="good", identity=spec.identity)
    ]
    assert gate.asked[0].remember is None  # Approving records nothing a grant could join


async def test_a_server_without_the_extension_connects_with_a_note_and_no_skills() -> None:
    spec = ServerSpec(label="plain", transport=InMemoryTransport(server=Server("plain")))
    with anyio.fail_after(30):
        async with SkillHost() as host:
            await host.connect(spec)
            assert host.catalog() == []
            note = host.server_note("plain")
    assert note is not None
    assert "does not declare" in note


async def test_refresh_lists_again_and_picks_up_a_changed_entry(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, state = hostile
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec)
            before = host.resolve("rotating").entry
            await host.activate("rotating")  # the hostile server rotates a file now
            await host.refresh("hostile")
            after = host.resolve("rotating").entry
    assert before is not None
    assert after is not None
    assert before.manifest != after.manifest
    assert [m for m, _ in state.requests].count("skills/list") >= 2


def test_a_sync_approver_is_refused_at_construction() -> None:
    class SyncApprover:
        def decide(self, request: ActivationRequest) -> Decision:
            return Decision.APPROVE

    with pytest.raises(TypeError, match="async def decide"):
        SkillHost(approver=SyncApprover())  # type: ignore[arg-type]


async def test_an_approver_answering_something_else_than_a_decision_is_a_type_error(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    class TruthyApprover:
        async def decide(self, request: ActivationRequest) -> bool:
            return True

    spec, state = hostile
    with anyio.fail_after(30):
        async with SkillHost(approver=TruthyApprover()) as host:  # type: ignore[arg-type]
            await host.connect(spec)
            with pytest.raises(TypeError, match="not a Decision"):
                await host.activate("good")
    assert [m for m, _ in state.requests if m == "resources/read"] == []


def test_a_record_has_a_qualified_ref_that_names_it_alone() -> None:
    from skillward.core.origins import Origin  # noqa: PLC0415
    from skillward.core.registry import SkillRecord  # noqa: PLC0415
    from skillward.core.wire import parse_entry  # noqa: PLC0415

    uri = "skill://acme/refunds/SKILL.md"
    entry = parse_entry(
        {
            "uri": uri,
            "frontmatter": {"name": "refunds", "description": "d"},
            "resources": [{"uri": uri, "digest": "sha256:" + "a" * 64, "size": 1}],
        }
    )
    record = SkillRecord.from_entry(Origin("mcp", "acme"), entry)
    assert record.qualified == "acme:skill://acme/refunds/SKILL.md"


async def test_reconnecting_asks_the_policy_again(
    hostile: tuple[ServerSpec, HostileState],
) -> None:
    spec, state = hostile
    policy = DenyingPolicy()
    with anyio.fail_after(30):
        async with SkillHost(policy=policy) as host:
            await host.connect(spec)
            listed = len(state.requests)
            policy.server = spec.label  # the policy in force now refuses this server
            with pytest.raises(PolicyDenied):
                await host.reconnect(spec.label)
    assert len(state.requests) == listed  # nothing was asked of the server again


async def test_reconnecting_a_stdio_server_the_policy_now_refuses_starts_no_process(
    tmp_path: Path,
) -> None:
    starts = tmp_path / "starts"
    serve = shlex.join([sys.executable, "-m", "skillward", "serve", str(example_skills_dir())])
    # Each start of the server leaves a line in `starts`, then it serves.
    script = f"echo started >> {shlex.quote(str(starts))}; exec {serve}"
    spec = ServerSpec(
        label="local",
        transport=StdioTransport(command="/bin/sh", args=("-c", script), stderr="discard"),
    )
    policy = DenyingPolicy()
    with anyio.fail_after(60):
        async with SkillHost(policy=policy) as host:
            await host.connect(spec)
            assert starts.read_text() == "started\n"
            policy.server = spec.label
            with pytest.raises(PolicyDenied):
                await host.reconnect(spec.label)
    assert starts.read_text() == "started\n"
