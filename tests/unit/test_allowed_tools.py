"""``allowed-tools`` read as the Agent Skills spec writes it: a space-separated string."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.frontmatter import allowed_tools
from skillward.core.wire import SkillEntry
from tests.support.approvals import make_entry, make_request

# A tool name with no whitespace and no parentheses.
NAME = st.text(
    st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc"), blacklist_characters="()"),
    min_size=1,
    max_size=20,
).filter(lambda s: not any(ch.isspace() for ch in s))


@pytest.mark.parametrize(
    ("value", "tools"),
    [
        ("Bash Write", ("Bash", "Write")),
        ("Bash(git:*) Bash(jq:*) Read", ("Bash(git:*)", "Bash(jq:*)", "Read")),
        ("  Read\tGrep\n Glob  ", ("Read", "Grep", "Glob")),
        ("Bash(git status:*) Read", ("Bash(git status:*)", "Read")),
        ("Read Read Grep", ("Read", "Grep")),
        ("Bash(rm -rf ", ("Bash(rm -rf",)),
        ("a)b c", ("a)b", "c")),
        ("", ()),
        ("   ", ()),
    ],
)
def test_allowed_tools_follows_the_space_separated_form(value: str, tools: tuple[str, ...]) -> None:
    assert allowed_tools({"allowed-tools": value}) == tools


@pytest.mark.threat("T14")
@pytest.mark.parametrize("value", [None, ["Bash", "Write"], {"Bash": True}, 3, True])
def test_a_field_in_another_form_requests_nothing_that_can_be_granted(value: object) -> None:
    assert allowed_tools({"allowed-tools": value}) == ()
    assert allowed_tools({}) == ()


@given(st.lists(NAME, max_size=12))
def test_names_joined_by_spaces_come_back_in_order_once_each(names: list[str]) -> None:
    assert allowed_tools({"allowed-tools": " ".join(names)}) == tuple(dict.fromkeys(names))


@given(st.text(max_size=200))
def test_any_string_gives_tools_that_parse_back_to_themselves(value: str) -> None:
    tools = allowed_tools({"allowed-tools": value})
    for tool in tools:
        assert tool
        assert tool == tool.strip()
    assert len(set(tools)) == len(tools)
    assert allowed_tools({"allowed-tools": " ".join(tools)}) == tools


# What a hostile server may put in the field: any JSON value, strings of any characters.
FIELD = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@pytest.mark.threat("T14")
@given(FIELD, st.booleans())
def test_an_entry_requests_the_tools_its_frontmatter_field_reads_as(
    value: object, dynamic: bool
) -> None:
    entry = make_entry(dynamic=dynamic, extra={"allowed-tools": value})
    built = SkillEntry.model_validate(entry.model_dump())  # validated, not the plain path
    fresh = allowed_tools(entry.frontmatter.as_dict())
    assert entry.requested_tools == fresh
    assert entry.requested_tools == fresh  # asked again: the kept value
    assert built.requested_tools == fresh
    assert make_request(entry).requested_tools == fresh


def test_an_entry_without_the_field_requests_nothing() -> None:
    assert make_entry().requested_tools == ()
