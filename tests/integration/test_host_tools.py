"""The model tools in each API's shape, and tool calls in each API's shape."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import anyio
import pytest
from jsonschema import Draft202012Validator

from skillward.core.context import ContextBlock
from skillward.core.errors import ApprovalDenied, ConfigError, SkillChanged
from skillward.edge._local import LocalSkillDir
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host.skillhost import TOOL_SCHEMAS, HostConfig, SkillHost, ToolStyle
from skillward.serve.server import build_skills_server
from skillward.trust.approvals import Decision
from tests.support.doubles import Approving
from tests.support.gated import serve
from tests.support.tool_shapes import schema_of, subschemas
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio
STYLES: tuple[ToolStyle, ...] = get_args(ToolStyle)


def spec(tmp_path: Path) -> ServerSpec:
    for name in ("refunds", "invoices"):
        write(tmp_path, f"{name}/SKILL.md", skill_md(name))
        write(tmp_path, f"{name}/notes.md", b"notes\n")
    server = build_skills_server(tmp_path)
    return ServerSpec(label="acme", transport=InMemoryTransport(server=server))


@pytest.mark.parametrize("connected", [False, True])
@pytest.mark.parametrize("style", STYLES)
async def test_every_style_gives_valid_schemas_and_never_an_empty_enum(
    tmp_path: Path, style: ToolStyle, connected: bool
) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            if connected:
                await host.connect(spec(tmp_path))
            tools = host.tool_definitions(style)
    assert len(tools) == 3
    for tool in tools:
        schema = schema_of(tool, style)
        Draft202012Validator.check_schema(schema)
        for part in subschemas(schema):
            assert part.get("enum", ["not empty"]) != [], tool
    for tool in tools[1:]:
        ref = schema_of(tool, style)["properties"]["ref"]
        if connected:
            assert ref["enum"] == ["invoices", "refunds"]
        else:
            assert "enum" not in ref  # no skill yet: any ref is refused when called


async def test_the_responses_api_style_is_flat_and_strict(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            tools = host.tool_definitions("openai-responses")
    assert [set(tool) for tool in tools] == [
        {"type", "name", "description", "parameters", "strict"}
    ] * 3
    names = ("list_skills", "read_skill", "read_skill_file")
    for tool, name in zip(tools, names, strict=True):
        assert (tool["type"], tool["name"], tool["strict"]) == ("function", name, True)
        assert tool["description"] == TOOL_SCHEMAS[name]["description"]
        # Strict mode: every object closed, every property required, no length bounds.
        for part in subschemas(tool["parameters"]):
            assert "maxLength" not in part
            if part.get("type") == "object":
                assert part["additionalProperties"] is False
                assert sorted(part["required"]) == sorted(part["properties"])


async def test_the_definitions_given_out_are_copies_the_caller_may_change(
    tmp_path: Path,
) -> None:
    before = json.dumps(TOOL_SCHEMAS, sort_keys=True)
    async with SkillHost(approver=Approving()) as host:
        for style in STYLES:
            for tool in host.tool_definitions(style):
                for part in subschemas(tool):
                    part.clear()
        assert host.tool_definitions("mcp")[0] == TOOL_SCHEMAS["list_skills"]
    assert json.dumps(TOOL_SCHEMAS, sort_keys=True) == before


async def test_a_responses_api_function_call_item_is_handled_like_any_other_call(
    tmp_path: Path,
) -> None:
    # The items a Responses API reply holds: arguments are a JSON string.
    load = {"type": "function_call", "call_id": "call_1", "name": "read_skill"}
    load["arguments"] = json.dumps({"ref": "refunds"})
    read = {"type": "function_call", "call_id": "call_2", "name": "read_skill_file"}
    read["arguments"] = json.dumps({"ref": "refunds", "path": "notes.md"})
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            skill = await host.handle_tool_call(load["name"], load["arguments"])
            notes = await host.handle_tool_call(read["name"], read["arguments"])
            unknown = await host.handle_tool_call("read_skill", json.dumps({"ref": "nope"}))
    assert skill is not None
    assert (skill.kind, skill.verified) == ("skill", True)
    assert notes is not None
    assert (notes.kind, notes.content) == ("file", "notes\n")
    assert unknown is not None
    assert unknown.error_type == "SkillNotFound"


# --- the host's activation and the model's read_skill ------------------------------------------


async def test_a_skill_the_host_activated_is_not_asked_about_again_when_the_model_reads_it(
    tmp_path: Path,
) -> None:
    approver = Approving()
    with anyio.fail_after(30):
        async with SkillHost(approver=approver) as host:
            await host.connect(spec(tmp_path))
            activation = await host.activate("refunds")
            read = await host.read_skill_block("refunds")
            called = await host.handle_tool_call("read_skill", {"ref": "acme:refunds"})
    assert len(approver.asked) == 1
    assert read == called == activation.block
    assert read.kind == "skill"


@pytest.mark.threat("T9")
async def test_a_skill_that_changed_since_the_host_activated_it_is_asked_about_again(
    tmp_path: Path,
) -> None:
    approver = Approving()
    write(tmp_path, "plain/SKILL.md", skill_md("plain", "Asks for nothing"))
    write(tmp_path, "plain/notes.md", b"notes\n")
    served = serve(tmp_path, "acme")
    with anyio.fail_after(30):
        async with SkillHost(approver=approver) as host:
            await host.connect(served.spec)
            await host.activate("plain")
            served.change("plain/notes.md", b"other notes\n")
            with pytest.raises(SkillChanged):
                await host.read_file("plain", "notes.md")
            read = await host.read_skill_block("plain")
    assert len(approver.asked) == 2
    assert read.kind == "skill"
    assert approver.asked[1].record.entry != approver.asked[0].record.entry  # the new content


async def test_another_session_of_the_host_asks_its_own_approver(tmp_path: Path) -> None:
    first, second = Approving(), Approving(answer=Decision.DENY)
    with anyio.fail_after(30):
        async with SkillHost(approver=first) as host:
            await host.connect(spec(tmp_path))
            await host.activate("refunds")
            async with host.session(approver=second) as other:
                refused = await other.read_skill_block("refunds")
    assert (len(first.asked), len(second.asked)) == (1, 1)
    assert refused.error_type == "ApprovalDenied"


async def test_the_default_approver_refuses_saying_how_to_give_the_host_one(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with SkillHost() as host:
            await host.connect(spec(tmp_path))
            with pytest.raises(ApprovalDenied) as refused:
                await host.activate("refunds")
    assert "SkillHost(approver=...)" in refused.value.hint
    assert "TerminalApprover(Terminal())" in refused.value.hint


# --- one tool set: its names, read_skill_file, read_resource only where offered -----------------

#: A skillward tool named without the prefix in force (a name the model does not have).
UNPREFIXED = re.compile(r"(?<![\w-])(list_skills|read_skill|read_skill_file|read_resource)\b")


def texts(*blocks: ContextBlock | None) -> list[str]:
    assert all(block is not None for block in blocks)
    return [block.text() for block in blocks if block is not None]


async def test_a_prefixed_tool_set_round_trips_through_handle_tool_call(tmp_path: Path) -> None:
    config = HostConfig(tool_prefix="skills_")
    with anyio.fail_after(30):
        async with SkillHost(config=config, approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            tools = host.tool_definitions("anthropic")
            catalog = await host.handle_tool_call("skills_list_skills", {})
            skill = await host.handle_tool_call("skills_read_skill", {"ref": "refunds"})
            file = await host.handle_tool_call(
                "skills_read_skill_file", '{"ref": "refunds", "path": "notes.md"}'
            )
            refused = await host.handle_tool_call(
                "skills_read_skill_file", {"ref": "refunds", "path": "../invoices/notes.md"}
            )
            missing = await host.handle_tool_call("skills_read_skill_file", {"ref": "refunds"})
            theirs = await host.handle_tool_call("read_skill", {"ref": "invoices"})
            uris = await host.handle_tool_call("skills_read_resource", {"server": "acme"})
            block = host.catalog_block()
            activation = await host.activate("invoices")  # host code gets the same names
            active = [activation.record.name for activation in host.active()]
    assert [tool["name"] for tool in tools] == [
        "skills_list_skills",
        "skills_read_skill",
        "skills_read_skill_file",
    ]
    assert catalog is not None
    assert skill is not None
    assert file is not None
    assert (catalog.kind, skill.kind, file.kind) == ("catalog", "skill", "file")
    assert file.content == "notes\n"
    assert refused is not None
    assert refused.error_type == "UnlistedResource"
    assert missing is not None
    assert missing.error_type == "UsageError"
    # Names not offered are the host's own: skillward leaves them alone.
    assert (theirs, uris) == (None, None)
    assert active == ["refunds", "invoices"]
    for text in texts(catalog, skill, file, refused, missing, block, activation.block):
        assert UNPREFIXED.search(text) is None, text
    for text in texts(catalog, skill, block, activation.block):
        assert "skills_read_skill_file(ref, path)" in text


def test_a_prefix_leaves_the_unprefixed_names_to_the_hosts_own_tools() -> None:
    assert HostConfig(tool_prefix="skills_", execution_tools=("read_skill",)).execution_tools
    with pytest.raises(ConfigError):
        HostConfig(tool_prefix="skills_", execution_tools=("skills_read_skill",))
    with pytest.raises(ConfigError):
        HostConfig(tool_prefix="skills:")


@pytest.mark.threat("T16")
@pytest.mark.threat("T49")
async def test_read_resource_is_offered_only_to_a_host_that_lets_the_model_name_uris(
    tmp_path: Path,
) -> None:
    call = {"server": "acme", "uri": "skill://refunds/notes.md"}
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            plain = [tool["name"] for tool in host.tool_definitions()]
            skill = await host.handle_tool_call("read_skill", {"ref": "refunds"})
            unoffered = await host.handle_tool_call("read_resource", call)
            blocks = [host.catalog_block(), skill]
        config = HostConfig(allow_uri_lookups=True)
        async with SkillHost(config=config, approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            offered = host.tool_definitions()
            opted = await host.handle_tool_call("read_skill", {"ref": "refunds"})
            read = await host.handle_tool_call("read_resource", call)
    assert plain == ["list_skills", "read_skill", "read_skill_file"]
    assert unoffered is None
    for text in texts(*blocks):
        assert "read_resource" not in text
    assert offered[-1]["name"] == "read_resource"
    assert offered[-1]["inputSchema"]["required"] == ["server", "uri"]
    assert opted is not None
    assert "and other resources of server acme with read_resource(server, uri)" in opted.text()
    assert read is not None
    assert (read.kind, read.content) == ("file", "notes\n")


@pytest.mark.threat("T16")
@pytest.mark.threat("T49")
@pytest.mark.parametrize(
    "path",
    [
        "../invoices/notes.md",
        "./notes.md",
        "sub/../notes.md",
        "notes%2Emd",
        "..%2Finvoices%2Fnotes.md",
        "/etc/passwd",
        "skill://refunds/notes.md",
        "skill://invoices/notes.md",
        "NOTES.md",
        "notes.md\x00",
        "notes.md/",
        "missing.md",
        "SKILL.md",
    ],
)
async def test_read_skill_file_reads_only_a_path_the_held_manifest_lists(
    tmp_path: Path, path: str
) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            await host.read_skill_block("refunds")
            refused = await host.read_skill_file_block("refunds", path)
            listed = await host.read_skill_file_block("refunds", "notes.md")
    assert refused.kind == "error"
    assert "notes\n" not in refused.text()
    assert refused.error_type in {"UnlistedResource", "UsageError"}
    assert refused.origin is not None
    assert refused.origin.label == "acme"  # it names the skill: tagged with its origin
    assert (listed.kind, listed.content, listed.verified) == ("file", "notes\n", True)


@pytest.mark.threat("T16")
@pytest.mark.threat("T49")
async def test_read_skill_file_reads_nothing_of_a_skill_this_session_did_not_load(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            before = await host.read_skill_file_block("refunds", "notes.md")
            await host.read_skill_block("refunds")
            other = await host.read_skill_file_block("invoices", "notes.md")
            unknown = await host.read_skill_file_block("nope", "notes.md")
            uri = await host.read_skill_file_block("acme:skill://refunds/SKILL.md", "notes.md")
            async with host.session(approver=Approving()) as second:
                stolen = await second.read_skill_file_block("refunds", "notes.md")
            host.deactivate("refunds")
            closed = await host.read_skill_file_block("refunds", "notes.md")
    for block in (before, other, stolen, closed):
        assert block.error_type == "SkillNotActive", block.text()
        assert "not loaded in this session" in block.content
    assert unknown.error_type == "SkillNotFound"
    assert unknown.origin is None  # it quotes nothing the model passed
    assert uri.kind == "file"  # the loaded skill, by its qualified URI


@pytest.mark.threat("T49")
async def test_read_skill_file_reads_a_local_skills_listed_files_only(tmp_path: Path) -> None:
    local = tmp_path / "local"
    write(local, "git/SKILL.md", skill_md("git"))
    write(local, "git/scripts/check.sh", b"echo ok\n")
    write(local, "secret.txt", b"not a skill file\n")
    config = HostConfig(local_dirs=(LocalSkillDir("project", local),))
    with anyio.fail_after(30):
        async with SkillHost(config=config, approver=Approving()) as host:
            await host.read_skill_block("git")
            listed = await host.read_skill_file_block("git", "scripts/check.sh")
            outside = await host.read_skill_file_block("git", "../secret.txt")
            absolute = await host.read_skill_file_block("git", str(local / "secret.txt"))
    assert (listed.kind, listed.content) == ("file", "echo ok\n")
    for block in (outside, absolute):
        assert block.error_type == "UnlistedResource"
        assert "not a skill file" not in block.text()


@pytest.mark.threat("T9")
async def test_read_skill_file_under_a_skill_whose_content_changed_reads_nothing_more(
    tmp_path: Path,
) -> None:
    write(tmp_path, "plain/SKILL.md", skill_md("plain", "Asks for nothing"))
    write(tmp_path, "plain/notes.md", b"notes\n")
    served = serve(tmp_path, "acme")
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(served.spec)
            await host.read_skill_block("plain")
            served.change("plain/notes.md", b"other notes\n")
            changed = await host.read_skill_file_block("plain", "notes.md")
            again = await host.read_skill_file_block("plain", "notes.md")
    assert changed.error_type == "SkillChanged"
    assert again.error_type == "ReactivationRequired"
    assert "other notes" not in changed.text() + again.text()


async def test_the_ref_enum_is_exactly_the_refs_the_catalog_block_shows(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            tools = host.tool_definitions()
            shown = re.findall(r'<skillward:item ref="([^"]+)"', host.catalog_block().text())
    assert shown == ["invoices", "refunds"]
    for tool in tools[1:]:
        assert tool["inputSchema"]["properties"]["ref"]["enum"] == shown
