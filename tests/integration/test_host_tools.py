"""The model tools in each API's shape, and tool calls in each API's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from jsonschema import Draft202012Validator

from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.host.skillhost import TOOL_SCHEMAS, SkillHost, ToolStyle
from skillward.serve.server import build_skills_server
from tests.support.doubles import Approving
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
