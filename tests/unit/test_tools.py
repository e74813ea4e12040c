"""The model tools, defined once (core/tools.py): names under a prefix, schemas in every
style, the enum of refs and its bound, and how a call's arguments are read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from skillward.core.config import Limits
from skillward.core.errors import ConfigError, UsageError
from skillward.core.tools import MAX_PATH, MAX_REF, ToolSet, ToolStyle
from tests.support.tool_shapes import schema_of

STYLES: tuple[ToolStyle, ...] = get_args(ToolStyle)
LIMITS = Limits()


def name_of(tool: dict[str, Any], style: ToolStyle) -> str:
    return str(tool["function"]["name"] if style == "openai" else tool["name"])


def refs(count: int) -> list[str]:
    return [f"team-{index % 50}:skill-number-{index}" for index in range(count)]


# --- the enum of refs, and its bound ---------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_at_ten_thousand_skills_the_tools_drop_the_enum_and_stay_under_the_bound(
    style: ToolStyle,
) -> None:
    tools = ToolSet().definitions(refs(10_000), style)
    sent = json.dumps(tools)
    assert len(sent) < LIMITS.max_tool_enum_bytes
    assert '"enum"' not in sent
    for tool in tools[1:]:
        assert (
            "as list_skills shows it" in schema_of(tool, style)["properties"]["ref"]["description"]
        )


@pytest.mark.parametrize("style", STYLES)
def test_below_the_bound_the_enum_is_exactly_the_catalogs_refs(style: ToolStyle) -> None:
    shown = refs(200)
    assert 2 * len(json.dumps(shown)) <= LIMITS.max_tool_enum_bytes
    tools = ToolSet().definitions(shown, style)
    for tool in tools[1:]:  # read_skill and read_skill_file
        assert schema_of(tool, style)["properties"]["ref"]["enum"] == shown
    assert len(json.dumps(tools)) < 2 * LIMITS.max_tool_enum_bytes


def test_the_bound_counts_both_enums_and_is_the_limits() -> None:
    shown = refs(100)
    size = 2 * len(json.dumps(shown))
    at = ToolSet().definitions(shown, limits=Limits(max_tool_enum_bytes=size))
    past = ToolSet().definitions(shown, limits=Limits(max_tool_enum_bytes=size - 1))
    assert at[1]["inputSchema"]["properties"]["ref"]["enum"] == shown
    assert "enum" not in json.dumps(past)


@given(st.lists(st.text(max_size=40), max_size=60), st.integers(min_value=1, max_value=3000))
def test_the_enum_is_the_refs_exactly_when_both_copies_fit(shown: list[str], bound: int) -> None:
    tools = ToolSet().definitions(shown, limits=Limits(max_tool_enum_bytes=bound))
    enum = tools[1]["inputSchema"]["properties"]["ref"].get("enum")
    fits = bool(shown) and 2 * len(json.dumps(shown)) <= bound
    assert enum == (shown if fits else None)


def test_a_catalog_past_the_bound_is_read_only_up_to_it() -> None:
    def catalog() -> Iterator[str]:
        for index in range(1_000_000):
            if index > LIMITS.max_tool_enum_bytes:
                raise AssertionError("read past the bound")
            yield f"s:{index}"

    assert "enum" not in json.dumps(ToolSet().definitions(catalog()))


def test_no_catalog_gives_no_enum_rather_than_an_empty_one() -> None:
    assert '"enum"' not in json.dumps(ToolSet().definitions([]))


# --- one definition, every style ---------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("tools", [ToolSet(), ToolSet(prefix="sw_", resource_reads=True)])
def test_every_style_has_the_same_tools_arguments_and_descriptions(
    style: ToolStyle, tools: ToolSet
) -> None:
    mcp = tools.definitions(refs(3))
    shaped = tools.definitions(refs(3), style)
    assert [name_of(tool, style) for tool in shaped] == list(tools.names())
    assert [tool["name"] for tool in mcp] == list(tools.names())
    for plain, tool in zip(mcp, shaped, strict=True):
        schema = schema_of(tool, style)
        Draft202012Validator.check_schema(schema)
        assert set(schema["properties"]) == set(plain["inputSchema"]["properties"])
        description = tool["function"]["description"] if style == "openai" else tool["description"]
        assert description == plain["description"]


def test_the_arguments_are_ref_and_path_and_read_resource_only_when_offered() -> None:
    def arguments(tools: ToolSet) -> dict[str, list[str]]:
        return {t["name"]: t["inputSchema"].get("required", []) for t in tools.definitions([])}

    assert arguments(ToolSet()) == {
        "list_skills": [],
        "read_skill": ["ref"],
        "read_skill_file": ["ref", "path"],
    }
    assert arguments(ToolSet(prefix="x-", resource_reads=True))["x-read_resource"] == [
        "server",
        "uri",
    ]


def test_each_definition_is_a_fresh_copy() -> None:
    tools = ToolSet()
    shown = refs(2)
    first = tools.definitions(shown)
    first[1]["inputSchema"]["properties"]["ref"]["enum"].append("forged")
    first[0]["description"] = "changed"
    assert tools.definitions(shown)[1]["inputSchema"]["properties"]["ref"]["enum"] == shown
    assert shown == refs(2)
    assert tools.definitions(shown)[0]["description"] != "changed"


def test_an_unknown_style_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        ToolSet().definitions([], "gemini")  # type: ignore[arg-type]


# --- names and the prefix ------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "skills_", "acme-", "A1_b2-", "p" * 48])
def test_a_prefix_goes_before_every_name_which_stays_within_64_characters(prefix: str) -> None:
    tools = ToolSet(prefix=prefix, resource_reads=True)
    assert all(name.startswith(prefix) and len(name) <= 64 for name in tools.names())
    assert [tools.tool(name) for name in tools.names()] == [
        "list_skills",
        "read_skill",
        "read_skill_file",
        "read_resource",
    ]


@pytest.mark.parametrize("prefix", ["skills:", "my skills_", "sk/", "p" * 49, "çа_", "a\n", 3])
def test_a_prefix_that_would_make_a_name_some_api_refuses_is_a_config_error(
    prefix: object,
) -> None:
    with pytest.raises(ConfigError):
        ToolSet(prefix=prefix)  # type: ignore[arg-type]


@given(st.text(max_size=40), st.sampled_from(["", "sw_", "read_"]), st.booleans())
def test_a_name_is_one_of_the_tools_exactly_when_it_is_offered(
    name: str, prefix: str, resource_reads: bool
) -> None:
    tools = ToolSet(prefix=prefix, resource_reads=resource_reads)
    tool = tools.tool(name)
    assert (tool is not None) == (name in tools.names())
    if tool is not None:
        assert prefix + tool == name


# --- reading a call's arguments ------------------------------------------------------------------

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.lists(st.text(max_size=3), max_size=2),
    st.text(max_size=20),
    st.text(min_size=16, max_size=40),
    st.just(""),
    st.just("a" * (MAX_REF + 1)),
    st.just("p" * MAX_PATH),
    st.just("p" * (MAX_PATH + 1)),
)
ARGUMENTS = st.dictionaries(
    st.sampled_from(["ref", "path", "server", "uri", "name", "decision"]), VALUES, max_size=6
)
BOUNDS = {"ref": MAX_REF, "path": MAX_PATH, "server": MAX_REF, "uri": LIMITS.max_uri_length}
TAKES = {
    "list_skills": (),
    "read_skill": ("ref",),
    "read_skill_file": ("ref", "path"),
    "read_resource": ("server", "uri"),
}


@given(st.sampled_from(sorted(TAKES)), ARGUMENTS, st.booleans())
def test_a_call_takes_only_its_own_arguments_each_a_bounded_string_or_is_refused(
    tool: str, arguments: dict[str, Any], as_json: bool
) -> None:
    tools = ToolSet(prefix="sw_", resource_reads=True)
    passed: object = json.dumps(arguments) if as_json else arguments
    taken = all(
        isinstance(arguments.get(name), str) and 0 < len(arguments[name]) <= BOUNDS[name]
        for name in TAKES[tool]
    )
    if not taken:
        with pytest.raises(UsageError) as refused:
            tools.read_call("sw_" + tool, passed)
        # Refused naming the argument, quoting nothing the model passed.
        assert all(
            not isinstance(value, str) or len(value) < 16 or value not in str(refused.value)
            for value in arguments.values()
        )
        return
    call = tools.read_call("sw_" + tool, passed)
    assert call == (tool, {name: arguments[name] for name in TAKES[tool]})


@given(st.one_of(st.text(max_size=30), st.lists(st.integers(), max_size=3), st.integers()))
def test_arguments_that_are_no_json_object_are_refused(arguments: object) -> None:
    if isinstance(arguments, str):
        try:
            if isinstance(json.loads(arguments), dict):
                return
        except ValueError:
            pass
    with pytest.raises(UsageError, match="not a JSON object"):
        ToolSet().read_call("read_skill", arguments)


def test_a_name_that_is_no_tool_offered_is_left_to_the_host() -> None:
    tools = ToolSet(prefix="sw_")
    assert tools.read_call("read_skill", {"ref": "x"}) is None  # unprefixed: the host's
    assert tools.read_call("sw_read_resource", {"server": "a", "uri": "b"}) is None
    assert tools.read_call("bash", "not json") is None  # not read at all
