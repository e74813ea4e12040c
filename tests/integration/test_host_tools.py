"""The model tools in each API's shape, and tool calls in each API's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from jsonschema import Draft202012Validator

from skillward.core.errors import ApprovalDenied, SkillChanged
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host.skillhost import TOOL_SCHEMAS, SkillHost, ToolStyle
from skillward.serve.server import build_skills_server
from skillward.trust.approvals import Decision
from tests.support.doubles import Approving
from tests.support.gated import serve
from tests.support.trees import skill_md, write

pytestmark = pytest.mark.anyio
STYLES: tuple[ToolStyle, ...] = get_args(ToolStyle)


def spec(tmp_path: Path) -> ServerSpec:
    for name in ("refunds", "invoices"):
        write(tmp_path, f"{name}/SKILL.md", skill_md(name))
        write(tmp_path, f"{name}/notes.md", b"notes\n")
    server = build_skills_server(tmp_path)
    return ServerSpec(label="acme", transport=InMemoryTransport(server=server))


def schema_of(tool: dict[str, Any], style: ToolStyle) -> dict[str, Any]:
    if style == "mcp":
        schema: dict[str, Any] = tool["inputSchema"]
    elif style == "anthropic":
        schema = tool["input_schema"]
    elif style == "openai":
        schema = tool["function"]["parameters"]
    else:
        schema = tool["parameters"]
    return schema


def subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from subschemas(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from subschemas(value)


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
    assert len(tools) == 2
    for tool in tools:
        schema = schema_of(tool, style)
        Draft202012Validator.check_schema(schema)
        for part in subschemas(schema):
            assert part.get("enum", ["not empty"]) != [], tool
    name = schema_of(tools[0], style)["properties"]["name"]
    if connected:
        assert name["enum"] == ["invoices", "refunds"]
    else:
        assert "enum" not in name  # no skill yet: any ref is refused when called


async def test_the_responses_api_style_is_flat_and_strict(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            tools = host.tool_definitions("openai-responses")
    assert [set(tool) for tool in tools] == [
        {"type", "name", "description", "parameters", "strict"}
    ] * 2
    for tool, name in zip(tools, ("read_skill", "read_resource"), strict=True):
        assert (tool["type"], tool["name"], tool["strict"]) == ("function", name, True)
        assert tool["description"] == TOOL_SCHEMAS[name]["description"]
        # Strict mode: every object closed, every property required.
        for part in subschemas(tool["parameters"]):
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
        assert host.tool_definitions("mcp")[1] == TOOL_SCHEMAS["read_resource"]
    assert json.dumps(TOOL_SCHEMAS, sort_keys=True) == before


async def test_a_responses_api_function_call_item_is_handled_like_any_other_call(
    tmp_path: Path,
) -> None:
    # The items a Responses API reply holds: arguments are a JSON string.
    load = {"type": "function_call", "call_id": "call_1", "name": "read_skill"}
    load["arguments"] = json.dumps({"name": "refunds"})
    read = {"type": "function_call", "call_id": "call_2", "name": "read_resource"}
    read["arguments"] = json.dumps({"server": "acme", "uri": "skill://refunds/notes.md"})
    with anyio.fail_after(30):
        async with SkillHost(approver=Approving()) as host:
            await host.connect(spec(tmp_path))
            skill = await host.handle_tool_call(load["name"], load["arguments"])
            notes = await host.handle_tool_call(read["name"], read["arguments"])
            unknown = await host.handle_tool_call("read_skill", json.dumps({"name": "nope"}))
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
            called = await host.handle_tool_call("read_skill", {"name": "acme:refunds"})
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
