"""SkillHost against a hostile server and `skillward serve`, over every transport.

Each lie the hostile server tells is refused with a typed error, and nothing of
it reaches the model: the host's context sink records every block it hands out.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from skillward.core.context import ContextBlock
from skillward.core.errors import (
    AmbiguousName,
    ApprovalDenied,
    CrossOriginDenied,
    DigestMismatch,
    FrontmatterError,
    FrontmatterMismatch,
    IntegrityError,
    InvalidEntry,
    InvalidUri,
    SizeMismatch,
    SkillChanged,
    SkillNotActive,
    SkillTooLarge,
    UnknownServer,
    UnlistedResource,
    UnverifiableSkill,
)
from skillward.edge._local import LocalSkillDir
from skillward.edge.servers import HttpTransport, InMemoryTransport, ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.serve.catalog import SkillCatalog, example_skills_dir
from skillward.serve.server import build_server, build_skills_server
from skillward.trust.approvals import ActivationRequest, Decision
from skillward.trust.gates import CrossOriginRequest
from tests.support.doubles import Approving, CrossOrigin
from tests.support.hostile import build_hostile_server, build_hostile_tree
from tests.support.servers import TRANSPORTS, http_server
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio
REPO_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class World:
    host: SkillHost
    blocks: list[ContextBlock]
    approver: Approving
    cross_origin: CrossOrigin
    log: Path

    def requests(self) -> list[tuple[str, str | None]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [tuple(json.loads(line)) for line in lines]

    @property
    def context(self) -> str:
        return "\n".join(block.text() for block in self.blocks)


@asynccontextmanager
async def hostile_spec(root: Path, transport: str, log: Path) -> AsyncIterator[ServerSpec]:
    options = ["--name", "trusted", "--log", str(log)]
    argv = [sys.executable, "-m", "tests.support.hostile", str(root), *options]
    cwd = REPO_ROOT
    if transport == "memory":
        server, _ = build_hostile_server(root, name="trusted", log=log)
        yield ServerSpec(label="hostile", transport=InMemoryTransport(server=server))
    elif transport == "stdio":
        yield ServerSpec(
            label="hostile",
            transport=StdioTransport(
                command=argv[0], args=tuple(argv[1:]), cwd=cwd, log_dir=log.parent / "logs"
            ),
        )
    else:
        async with http_server([*argv, "--http", "127.0.0.1:0"]) as url:
            yield ServerSpec(label="hostile", transport=HttpTransport(url=url))


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    hostile = tmp_path_factory.mktemp("hostile")
    build_hostile_tree(hostile)
    local = tmp_path_factory.mktemp("local")
    write(local, "git-workflow/SKILL.md", skill_md("git-workflow", "My own git conventions"))
    write(local, "git-workflow/notes.md", b"local notes\n")
    return hostile, local


@asynccontextmanager
async def world(dirs: tuple[Path, Path], transport: str, log: Path) -> AsyncIterator[World]:
    blocks: list[ContextBlock] = []
    approver = Approving()
    cross_origin = CrossOrigin()
    config = HostConfig(local_dirs=(LocalSkillDir("project", dirs[1]),))
    trusted = build_skills_server(example_skills_dir(), unlisted=["git-workflow"], name="Example")
    with anyio.fail_after(60):
        async with (
            hostile_spec(dirs[0], transport, log) as spec,
            SkillHost(
                config=config, approver=approver, cross_origin=cross_origin, sink=blocks.append
            ) as host,
        ):
            await host.connect(
                ServerSpec(label="trusted", transport=InMemoryTransport(server=trusted))
            )
            await host.connect(spec)
            yield World(host, blocks, approver, cross_origin, log)


@pytest.fixture(scope="module", params=TRANSPORTS)
async def shared(
    request: pytest.FixtureRequest,
    dirs: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[World]:
    log = tmp_path_factory.mktemp("log") / "requests.jsonl"
    async with world(dirs, request.param, log) as w:
        yield w


@pytest.fixture
def w(shared: World) -> Iterator[World]:
    shared.blocks.clear()
    yield shared
    shared.host.deactivate_all()
    shared.cross_origin.answer = Decision.DENY


def assert_nothing_reached_the_model(w: World, *forbidden: str) -> None:
    assert [b.kind for b in w.blocks if b.kind != "catalog"] == []
    for text in forbidden:
        assert text not in w.context


# --- lazy loading ----------------------------------------------------------------------


@pytest.mark.threat("T20")
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_listing_reads_nothing_and_activation_reads_exactly_skill_md(
    dirs: tuple[Path, Path], tmp_path: Path, transport: str
) -> None:
    log = tmp_path / "requests.jsonl"
    async with world(dirs, transport, log) as fresh:
        fresh.host.catalog_block()
        assert [m for m, _ in fresh.requests() if m.startswith("resources/")] == []
        with anyio.fail_after(30):
            await fresh.host.activate("good")
        reads = [(m, uri) for m, uri in fresh.requests() if m.startswith("resources/")]
        assert reads == [("resources/read", "skill://good/SKILL.md")]
        with anyio.fail_after(30):
            await fresh.host.read_file("good", "ref/guide.md")
        reads = [(m, uri) for m, uri in fresh.requests() if m.startswith("resources/")]
        assert reads[1:] == [("resources/read", "skill://good/ref/guide.md")]


async def test_the_approver_sees_the_skill_before_anything_is_fetched(w: World) -> None:
    before = len(w.requests())
    reads_when_asked: list[int] = []

    def snapshot(request: ActivationRequest) -> None:
        reads_when_asked.append(sum(m == "resources/read" for m, _ in w.requests()[before:]))

    w.approver.on_ask = snapshot
    with anyio.fail_after(30):
        await w.host.activate("good")
    assert reads_when_asked == [0]
    asked = w.approver.asked[-1]
    assert asked.record.key.locator == "skill://good/SKILL.md"
    assert asked.record.origin.label == "hostile"
    # Approval came first; exactly one read followed it.
    assert [m for m, _ in w.requests()[before:] if m == "resources/read"] == ["resources/read"]


# --- verification --------------------------------------------------------------------


@pytest.mark.threat("T5")
async def test_a_file_whose_digest_differs_from_the_listing_is_refused(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("wrong-digest")
        w.blocks.clear()
        with pytest.raises(DigestMismatch) as info:
            await w.host.read_file("wrong-digest", "ref/guide.md")
    assert info.value.server == "hostile"
    assert info.value.uri == "skill://wrong-digest/ref/guide.md"
    assert_nothing_reached_the_model(w, "guide for wrong-digest")


@pytest.mark.threat("T6")
async def test_a_file_longer_than_its_listed_size_is_refused(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("wrong-size")
        w.blocks.clear()
        with pytest.raises(SizeMismatch) as info:
            await w.host.read_file("wrong-size", "ref/guide.md")
    assert info.value.uri == "skill://wrong-size/ref/guide.md"
    assert_nothing_reached_the_model(w, "guide for wrong-size")


@pytest.mark.threat("T7")
async def test_skill_md_whose_frontmatter_differs_in_one_field_is_not_loaded(w: World) -> None:
    with anyio.fail_after(30), pytest.raises(FrontmatterMismatch) as info:
        await w.host.activate("fm-mismatch")
    assert info.value.fields == ("description",)
    assert_nothing_reached_the_model(w, "Frontmatter on disk")
    assert w.host.active() == []


@pytest.mark.threat("T8")
async def test_a_file_the_held_entry_does_not_list_is_refused(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("extra-file")
        w.blocks.clear()
        with pytest.raises(UnlistedResource):
            await w.host.read_resource("hostile", "skill://extra-file/extra.md")
        with pytest.raises(UnlistedResource):
            await w.host.read_file("extra-file", "extra.md")
    assert_nothing_reached_the_model(w, "not in the entry")


@pytest.mark.threat("T8")
async def test_a_directory_read_never_shows_children_the_entry_lacks(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("extra-file")
        block = await w.host.read_resource("hostile", "skill://extra-file")
    assert "extra.md" not in block.content
    assert "SKILL.md" in block.content
    assert "ref" in block.content
    assert "1" in block.text()  # one hidden child is counted, never named
    assert block.hidden == 1


@pytest.mark.threat("T8")
@pytest.mark.threat("T9")
async def test_content_rotated_after_activation_is_reported_as_a_changed_skill(w: World) -> None:
    with anyio.fail_after(30):
        activation = await w.host.activate("rotating")
        w.blocks.clear()
        with pytest.raises(SkillChanged, match="1 changed") as info:
            await w.host.read_file("rotating", "notes.md")
    assert isinstance(info.value.__cause__, IntegrityError)
    assert_nothing_reached_the_model(w, "rotated notes", "original notes")
    # The activation stays in the acting window, its content ended.
    [held] = w.host.active()
    assert held.record.key == activation.record.key
    assert isinstance(held.ended, SkillChanged)
    refreshed = w.host.resolve("rotating").entry
    assert refreshed is not None
    assert refreshed.manifest != activation.entry.manifest  # type: ignore[union-attr]


@pytest.mark.threat("T12")
async def test_an_alias_bomb_served_with_a_correct_digest_is_refused(w: World) -> None:
    with anyio.fail_after(5), pytest.raises(FrontmatterError, match="anchors"):
        await w.host.activate("alias-bomb")
    assert_nothing_reached_the_model(w, "lol")


@pytest.mark.threat("T19")
async def test_a_dynamic_skill_is_refused_by_default(w: World) -> None:
    before = len(w.requests())
    with anyio.fail_after(30), pytest.raises(UnverifiableSkill):
        await w.host.activate("dynamic")
    assert_nothing_reached_the_model(w)
    assert "resources/read" not in [m for m, _ in w.requests()[before:]]


# --- entries that are declined at listing -------------------------------------------------


@pytest.mark.threat("T10")
@pytest.mark.parametrize(
    ("name", "error", "reason"),
    [
        ("outside-root", InvalidEntry, "outside the skill root"),
        ("file-uri", InvalidEntry, "file: URIs are never skill resources"),
    ],
)
async def test_entries_reaching_outside_their_root_are_declined_with_the_reason(
    w: World, name: str, error: type[Exception], reason: str
) -> None:
    declined = {d.error.uri: d.error for d in w.host.declined()}
    assert reason in str(declined[f"skill://{name}/SKILL.md"])
    with anyio.fail_after(30), pytest.raises(error, match=reason):
        await w.host.activate(name)
    assert name not in [item.name for item in w.host.catalog()]
    assert_nothing_reached_the_model(w)


@pytest.mark.threat("T11")
@pytest.mark.parametrize(("name", "reason"), [("too-many", "513 files"), ("too-big", "16777")])
async def test_skills_over_the_limits_are_declined_before_any_read(
    w: World, name: str, reason: str
) -> None:
    before = len(w.requests())
    with anyio.fail_after(30), pytest.raises(SkillTooLarge, match=reason) as info:
        await w.host.activate(name)
    assert info.value.server == "hostile"
    assert "resources/read" not in [m for m, _ in w.requests()[before:]]
    assert_nothing_reached_the_model(w)


@pytest.mark.threat("T10")
async def test_a_file_uri_is_never_read(w: World) -> None:
    with anyio.fail_after(30), pytest.raises(InvalidUri, match="file:"):
        await w.host.read_resource("hostile", "file:///etc/passwd")
    assert all(uri is None or not uri.startswith("file:") for _, uri in w.requests())


# --- names, labels and origins -------------------------------------------------------------


@pytest.mark.threat("T3")
async def test_an_mcp_skill_never_shadows_a_local_skill_of_the_same_name(w: World) -> None:
    with pytest.raises(AmbiguousName) as info:
        await w.host.activate("git-workflow")
    assert info.value.candidates == ("hostile:git-workflow", "project:git-workflow")
    collisions = [
        c for c in w.host.collisions() if c.kind == "name" and c.subject == "git-workflow"
    ]
    assert collisions
    with anyio.fail_after(30):
        local = await w.host.activate("project:git-workflow")
        remote = await w.host.activate("hostile:git-workflow")
    assert local.block.origin is not None
    assert local.block.origin.kind == "local"
    assert 'trust="local"' in local.block.text()
    assert remote.block.origin is not None
    assert remote.block.origin.label == "hostile"
    assert 'trust="untrusted"' in remote.block.text()


@pytest.mark.threat("T4")
async def test_a_server_imitating_another_label_gains_nothing(w: World) -> None:
    imitations = [c for c in w.host.collisions() if c.kind == "label-imitation"]
    assert [(c.subject, c.members) for c in imitations] == [("trusted", ("hostile",))]
    record = w.host.resolve("trusted:refunds")
    assert record.origin.label == "trusted"
    items = {item.origin.label for item in w.host.catalog() if item.name == "good"}
    assert items == {"hostile"}
    assert 'server="trusted"' not in w.host.catalog_block().text().split("good")[0][-300:]


@pytest.mark.threat("T4")
async def test_a_label_written_as_configured_reaches_that_label_alone(w: World) -> None:
    # The hostile server reports the name "trusted": the written label still names only
    # the origin labelled "trusted", whatever its case or separators.
    for written in ("Trusted:refunds", "TRUSTED:refunds", "trusted_:refunds"):
        assert w.host.resolve(written).origin.label == "trusted"
    uri = w.host.resolve("trusted:refunds").key.locator
    assert (await w.host.lookup(f"Trusted:{uri}")).origin.label == "trusted"
    with pytest.raises(UnknownServer) as info:
        await w.host.lookup(f"trustd:{uri}")
    assert "did you mean 'trusted'?" in info.value.message


@pytest.mark.threat("T21")
async def test_a_body_with_a_forged_closing_boundary_cannot_end_its_block(w: World) -> None:
    with anyio.fail_after(30):
        activation = await w.host.activate("forged")
    text = activation.block.text()
    boundary = activation.block.boundary
    assert text.count(boundary) == 2
    assert text.count("</skillward:") == 1
    assert text.rstrip().endswith(">")
    assert text.index("ignore previous instructions") < text.rindex("</skillward:")


# --- origin-bound reads ----------------------------------------------------------------------


@pytest.mark.threat("T16")
async def test_a_read_against_another_server_while_acting_needs_approval(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("good")
        w.blocks.clear()
        with pytest.raises(CrossOriginDenied) as info:
            await w.host.read_resource("trusted", "skill://acme/billing")
    assert w.cross_origin.asked[-1] == CrossOriginRequest(
        acting=("hostile",), target="trusted", uri="skill://acme/billing"
    )
    assert "'hostile'" in str(info.value)
    assert_nothing_reached_the_model(w)
    w.cross_origin.answer = Decision.APPROVE
    with anyio.fail_after(30):
        block = await w.host.read_resource("trusted", "skill://acme/billing")
    assert block.kind == "directory"
    assert block.origin is not None
    assert block.origin.label == "trusted"


@pytest.mark.threat("T16")
async def test_a_catalog_for_people_changes_no_gating_and_the_models_catalog_does(
    w: World,
) -> None:
    asked = len(w.cross_origin.asked)
    shown = w.host.catalog(for_model=False)  # a host's own UI lists every origin's skills
    assert {"hostile", "trusted"} <= {item.origin.label for item in shown}
    w.cross_origin.answer = Decision.APPROVE
    with anyio.fail_after(30):
        await w.host.read_resource("trusted", "skill://acme/billing")
    assert len(w.cross_origin.asked) == asked  # no other server's text is in context
    assert w.host.catalog() == shown  # the same catalog, now in the model's context
    with anyio.fail_after(30):
        await w.host.read_resource("trusted", "skill://acme/billing")
    assert w.cross_origin.asked[asked:] == [
        CrossOriginRequest(acting=("hostile",), target="trusted", uri="skill://acme/billing")
    ]


@pytest.mark.threat("T16")
async def test_read_file_of_another_servers_skill_while_acting_needs_approval(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("good")
        w.blocks.clear()
        before = len(w.requests())
        with pytest.raises(CrossOriginDenied):
            await w.host.read_file("trusted:pdf-processing", "references/FORMS.md")
    assert w.cross_origin.asked[-1] == CrossOriginRequest(
        acting=("hostile",),
        target="trusted",
        uri="skill://pdf-processing/references/FORMS.md",
    )
    assert_nothing_reached_the_model(w)
    assert "resources/read" not in [m for m, _ in w.requests()[before:]]


@pytest.mark.threat("T16")
async def test_a_skill_md_of_a_skill_that_is_not_loaded_is_not_read_through_read_resource(
    w: World,
) -> None:
    before = len(w.requests())
    with anyio.fail_after(30), pytest.raises(SkillNotActive):
        await w.host.read_resource("hostile", "skill://good/SKILL.md")
    assert w.host.active() == []
    assert w.requests()[before:] == []
    assert_nothing_reached_the_model(w)


async def test_a_skill_known_only_by_uri_is_confirmed_with_skills_get_on_its_server(
    w: World,
) -> None:
    assert "git-workflow" not in [i.name for i in w.host.catalog() if i.origin.label == "trusted"]
    with anyio.fail_after(30):
        activation = await w.host.activate("trusted:skill://git-workflow/SKILL.md")
    assert activation.record.origin.label == "trusted"
    assert not activation.record.listed
    assert activation.block.origin is not None
    assert activation.block.origin.label == "trusted"


async def test_the_model_tools_return_error_blocks_instead_of_content(w: World) -> None:
    with anyio.fail_after(30):
        await w.host.activate("wrong-digest")
        w.blocks.clear()
        text = await w.host.read_resource_tool("hostile", "skill://wrong-digest/ref/guide.md")
    assert "DigestMismatch" in text
    assert "guide for wrong-digest" not in text
    assert [b.kind for b in w.blocks] == ["error"]


async def test_nothing_is_loaded_without_approval(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    server, state = build_hostile_server(dirs[0])
    spec = ServerSpec(label="hostile", transport=InMemoryTransport(server=server))
    with anyio.fail_after(30):
        async with SkillHost() as host:
            await host.connect(spec)
            with pytest.raises(ApprovalDenied):
                await host.activate("good")
    assert [m for m, _ in state.requests if m == "resources/read"] == []


@pytest.mark.threat("T15")
async def test_a_nested_skill_asks_for_its_own_approval(tmp_path: Path) -> None:
    approver = Approving()
    server = build_skills_server(example_skills_dir())
    with anyio.fail_after(30):
        async with SkillHost(approver=approver) as host:
            await host.connect(ServerSpec(label="ex", transport=InMemoryTransport(server=server)))
            await host.activate("refunds")
            await host.activate("escalation")
            refunds = host.resolve("refunds").key
    assert [r.nested_in for r in approver.asked] == [(), (refunds,)]


@pytest.mark.threat("T19")
async def test_unsafe_allow_dynamic_loads_marked_unverifiable_and_warns_every_time(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = build_hostile_server(dirs[0])
    spec = ServerSpec(label="hostile", transport=InMemoryTransport(server=server))
    config = HostConfig(unsafe_allow_dynamic=True)
    with anyio.fail_after(30):
        async with SkillHost(config=config, approver=Approving()) as host:
            await host.connect(spec)
            activation = await host.activate("dynamic")
            block = await host.read_file("dynamic", "ref/guide.md")
    assert "unverifiable" in activation.block.flags
    assert not activation.block.verified
    assert not block.verified
    warnings = [r for r in caplog.records if "unsafe_allow_dynamic" in r.getMessage()]
    assert len(warnings) == 2


@pytest.mark.threat("T11")
async def test_a_dynamic_skill_is_cut_off_at_the_total_size_limit(tmp_path: Path) -> None:
    write(tmp_path, "dyn/SKILL.md", skill_md("dyn"))
    write(tmp_path, "dyn/big.bin", b"\x00" * (9 * 1024 * 1024))

    def dynamic(skill: Any) -> dict[str, Any]:
        return {**skill.entry(), "resources": "dynamic"}

    server = build_server(SkillCatalog.from_directory(tmp_path), transform_entry=dynamic)
    spec = ServerSpec(label="dyn", transport=InMemoryTransport(server=server))
    with anyio.fail_after(60):
        async with SkillHost(
            config=HostConfig(unsafe_allow_dynamic=True), approver=Approving()
        ) as host:
            await host.connect(spec)
            await host.activate("dyn")
            await host.read_file("dyn", "big.bin")
            with pytest.raises(SkillTooLarge, match="dynamic skill has reached"):
                await host.read_file("dyn", "big.bin")


async def test_read_resource_of_an_active_skills_directory_lists_its_direct_children(
    w: World,
) -> None:
    with anyio.fail_after(30):
        await w.host.activate("refunds")
        block = await w.host.read_resource("trusted", "skill://acme/billing/refunds")
    assert block.kind == "directory"
    assert block.children == (
        ("SKILL.md", False),
        ("escalation", True),
        ("policy", True),
        ("templates", True),
    )
    assert block.origin is not None
    assert block.origin.label == "trusted"
