"""The gateway offers the library's tools, from the one definition: the same names,
arguments and schemas as ``SkillHost.tool_definitions``; blocks that name only those
tools; the catalog's refs as the enum, dropped past its bound."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from skillward.core.config import Limits
from skillward.core.errors import UsageError
from skillward.edge.servers import InMemoryTransport, ServerSpec
from skillward.gateway._sessions import Sessions
from skillward.gateway.server import Gateway
from skillward.host.skillhost import HostConfig, SkillHost
from tests.support.gated import Served, build_gated_tree, serve
from tests.support.gateway import MODES, Asker, choose, client_of, gateway_over, text
from tests.support.listings import paged, pages_server

pytestmark = pytest.mark.anyio

WAIT = 20
DIGEST = "sha256:" + "0" * 64


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    return serve(root, "acme")


def listed(tools: Any) -> list[dict[str, Any]]:
    """tools/list as the library's MCP-shaped definitions."""
    return [
        {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        for tool in tools
    ]


def many_skills(count: int) -> ServerSpec:
    """A server listing ``count`` skills (in pages within the listing limits)."""
    entries = []
    for index in range(count):
        root = f"skill://many/team-{index % 50}/skill-{index}"
        entries.append(
            {
                "uri": f"{root}/SKILL.md",
                "frontmatter": {"name": f"skill-{index}", "description": "One of many."},
                "resources": [{"uri": f"{root}/SKILL.md", "digest": DIGEST, "size": 1}],
            }
        )
    pages = paged(entries, 2500)
    return ServerSpec(label="many", transport=InMemoryTransport(server=pages_server(pages)))


@pytest.mark.parametrize("mode", MODES)
async def test_the_library_and_the_gateway_offer_the_same_tools_for_the_same_catalog(
    served: Served, mode: str
) -> None:
    with anyio.fail_after(WAIT):
        async with gateway_over([served.spec]) as gateway, client_of(gateway, mode) as client:
            served_tools = listed((await client.list_tools()).tools)
            library = gateway.host.tool_definitions("mcp")
    assert served_tools == library
    assert [tool["name"] for tool in library] == ["list_skills", "read_skill", "read_skill_file"]
    assert library[1]["inputSchema"]["properties"]["ref"]["enum"] == [
        "deploy",
        "child",
        "hooked",
        "plain",
    ]


@pytest.mark.threat("T49")
@pytest.mark.parametrize("mode", MODES)
async def test_no_block_a_gateway_client_receives_mentions_read_resource(
    served: Served, mode: str
) -> None:
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec]) as gateway,
            client_of(gateway, mode, Asker([choose("once")])) as client,
        ):
            said = [client.instructions or ""]
            said.append(json.dumps(listed((await client.list_tools()).tools)))
            calls = [
                ("list_skills", {}),
                ("read_skill_file", {"ref": "deploy", "path": "notes.md"}),  # not loaded yet
                ("read_skill", {"ref": "deploy"}),
                ("read_skill_file", {"ref": "deploy", "path": "notes.md"}),
                ("read_skill_file", {"ref": "deploy", "path": "../plain/SKILL.md"}),
                ("read_skill_file", {"ref": "deploy", "path": "SKILL.md"}),
                ("read_skill", {"ref": "nope"}),
                ("read_skill", {}),
                ("read_resource", {"server": "acme", "uri": "skill://deploy/notes.md"}),
            ]
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
    kinds = [text(result).split(" ", 1)[0] for result in results]
    assert kinds == [
        "<skillward:catalog",
        "<skillward:error",
        "<skillward:skill",
        "<skillward:file",
        *["<skillward:error"] * 5,
    ]
    said += [text(result) for result in results]
    for each in said:
        assert "read_resource" not in each, each
    assert "read_skill_file(ref, path)" in text(results[2])  # the skill says how to read
    assert "no such tool; use list_skills, read_skill, read_skill_file" in text(results[-1])


async def test_at_ten_thousand_skills_tools_list_drops_the_enum_and_stays_under_the_bound() -> None:
    with anyio.fail_after(60):
        async with (
            gateway_over([many_skills(10_000)]) as gateway,
            client_of(gateway, "auto") as client,
        ):
            tools = (await client.list_tools()).tools
            catalog = await client.call_tool("list_skills", {})
            library = gateway.host.tool_definitions("mcp")
    sent = json.dumps(listed(tools))
    assert len(sent) < Limits().max_tool_enum_bytes
    assert '"enum"' not in sent
    assert listed(tools) == library
    assert "as list_skills shows it" in tools[1].input_schema["properties"]["ref"]["description"]
    assert len(re.findall(r'<skillward:item ref="', text(catalog))) == 10_000


async def test_at_ten_thousand_skills_the_instructions_hold_as_many_as_fit_in_their_bound() -> None:
    with anyio.fail_after(60):
        async with gateway_over([many_skills(10_000)]) as gateway:
            said = gateway.server.instructions or ""
            shown = len(re.findall(r'<skillward:item ref="', said))
    bound = 16 * 1024
    assert len(said) <= bound
    assert f"({10_000 - shown} more skills: call list_skills.)" in said
    item = re.search(r'<skillward:item ref="[^\n]*\n', said)  # each item is one line
    assert item is not None
    assert len(said) + len(item.group()) > bound  # one more would not fit


@pytest.mark.parametrize("mode", MODES)
async def test_below_the_bound_the_enum_is_exactly_the_refs_list_skills_shows(
    served: Served, tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([served.spec, many_skills(120)]) as gateway,
            client_of(gateway, mode) as client,
        ):
            tools = (await client.list_tools()).tools
            catalog = await client.call_tool("list_skills", {})
    shown = re.findall(r'<skillward:item ref="([^"]+)"', text(catalog))
    assert len(shown) == 124
    for tool in tools[1:]:
        assert tool.input_schema["properties"]["ref"]["enum"] == shown


@pytest.mark.parametrize(
    "config", [HostConfig(allow_uri_lookups=True), HostConfig(tool_prefix="skills_")]
)
async def test_a_gateway_over_a_host_offering_other_tools_is_refused(config: HostConfig) -> None:
    with anyio.fail_after(WAIT):
        async with SkillHost(config=config) as host:
            with pytest.raises(UsageError, match="allow_uri_lookups or tool_prefix"):
                Gateway(host, sessions=Sessions(host, store=None))
