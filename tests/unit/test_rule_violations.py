"""The checks that refuse and the checks that report are the same checks.

``parse_entry`` (the host) refuses an entry exactly when ``entry_violations`` (``skillward
check``) finds a violation marked ``refused``, and names the rule of the first; the same
holds for a ``skills/list`` page, a ``skills/get`` result and the capability.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillward.core._entries import entry_violations
from skillward.core._results import (
    capability_violations,
    get_violations,
    page_violations,
    read_capability,
)
from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
    DigestMismatch,
    FrontmatterError,
    InvalidEntry,
    InvalidResponse,
    InvalidUri,
    SizeMismatch,
    SkillTooLarge,
)
from skillward.core.frontmatter import parse_skill_md
from skillward.core.uris import parse_uri
from skillward.core.verify import sha256_digest, verify_file
from skillward.core.wire import ResourceItem, parse_entry, parse_skills_page
from skillward.edge._paging import check_cursor

DIGEST = "sha256:" + "0" * 64


def good() -> dict[str, Any]:
    return {
        "uri": "skill://acme/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "Refund policy"},
        "resources": [
            {"uri": "skill://acme/refunds/SKILL.md", "digest": DIGEST, "size": 10},
            {"uri": "skill://acme/refunds/a.md", "digest": DIGEST, "size": 3},
        ],
    }


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**25) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
_uris = st.sampled_from(
    [
        "skill://acme/refunds/SKILL.md",
        "skill://acme/refunds/a.md",
        "skill://acme/other/a.md",
        "skill://acme/refunds/%c3%a9.md",
        "skill://acme:1/refunds/SKILL.md",
        "file:///etc/passwd",
        "skill://acme/refunds/../x.md",
        "repo://acme/refunds/SKILL.md",
        "skill://acme/refunds/README.md",
        "skill://acme/Refunds/SKILL.md",
    ]
)
_names = st.sampled_from(["refunds", "Refunds", "-refunds", "other", "", "a" * 65])
_mutations = st.lists(
    st.one_of(
        st.tuples(st.just("uri"), _uris | _json),
        st.tuples(st.just("name"), _names | _json),
        st.tuples(st.just("description"), st.sampled_from(["", "   ", "x" * 1025, "ok"]) | _json),
        st.tuples(st.just("frontmatter"), _json),
        st.tuples(st.just("resources"), st.sampled_from(["dynamic", None, "static"]) | _json),
        st.tuples(st.just("item-uri"), _uris | _json),
        st.tuples(st.just("item-digest"), st.sampled_from([DIGEST.upper(), "sha256:1"]) | _json),
        st.tuples(st.just("item-size"), st.sampled_from([5.0, -1, True, 2**25]) | _json),
        st.tuples(st.just("duplicate"), st.none()),
        st.tuples(st.just("drop"), st.sampled_from(["uri", "frontmatter", "resources"])),
        st.tuples(st.just("extra"), _json),
        st.tuples(
            st.just("field"), st.sampled_from(["compatibility", "metadata", "license", "__proto__"])
        ),
    ),
    max_size=4,
)


def mutate(changes: list[tuple[str, Any]]) -> dict[str, Any]:
    entry = good()
    for kind, value in changes:
        frontmatter = entry.get("frontmatter")
        items = entry.get("resources")
        if kind in ("uri", "frontmatter", "resources"):
            entry[kind] = copy.deepcopy(value)
        elif kind in ("name", "description") and isinstance(frontmatter, dict):
            frontmatter[kind] = copy.deepcopy(value)
        elif kind == "field" and isinstance(frontmatter, dict):
            frontmatter[value] = {"a": 1}
        elif (
            kind.startswith("item-")
            and isinstance(items, list)
            and items
            and isinstance(items[-1], dict)
        ):
            items[-1][kind.removeprefix("item-")] = copy.deepcopy(value)
        elif kind == "duplicate" and isinstance(items, list) and items:
            items.append(copy.deepcopy(items[0]))
        elif kind == "drop":
            entry.pop(value, None)
        elif kind == "extra":
            entry["annotations"] = copy.deepcopy(value)
    return entry


@settings(max_examples=400)
@given(_mutations)
def test_parse_entry_refuses_exactly_what_entry_violations_marks_refused(
    changes: list[tuple[str, Any]],
) -> None:
    entry = mutate(changes)
    found = entry_violations(entry)
    refused = [violation for violation in found if violation.refused]
    if not refused:
        parse_entry(entry)
        return
    with pytest.raises((InvalidEntry, SkillTooLarge)) as raised:
        parse_entry(entry)
    assert raised.value.rule in {violation.rule for violation in refused}, (raised.value, refused)


def test_a_valid_entry_breaks_no_rule() -> None:
    assert entry_violations(good()) == []


def test_every_problem_of_an_entry_is_reported_where_the_host_stops_at_the_first() -> None:
    entry = good()
    entry["frontmatter"]["name"] = "Refunds"
    entry["frontmatter"]["description"] = " "
    entry["resources"][1]["digest"] = "md5:x"
    entry["resources"][1]["size"] = 2.0
    entry["resources"].append(entry["resources"][0])
    rules = [violation.rule for violation in entry_violations(entry)]
    assert rules == ["SW-FM-001", "SW-FM-003", "SW-RES-004", "SW-RES-005", "SW-RES-002"]
    with pytest.raises(InvalidEntry) as raised:
        parse_entry(entry)
    assert raised.value.rule == "SW-FM-001"


def test_the_host_names_the_rule_an_oversized_skill_breaks() -> None:
    entry = good()
    entry["resources"][1]["size"] = 2**24
    with pytest.raises(SkillTooLarge) as raised:
        parse_entry(entry)
    assert raised.value.rule == "SW-LIM-002"
    entry["resources"] = [
        dict(entry["resources"][0], uri=f"skill://acme/refunds/{n}") for n in range(513)
    ]
    with pytest.raises(SkillTooLarge) as raised:
        parse_entry(entry, limits=Limits())
    assert raised.value.rule == "SW-LIM-001"


@given(st.dictionaries(st.sampled_from(["skills", "nextCursor", "ttlMs", "cacheScope"]), _json))
@example({"skills": [], "nextCursor": "c" * 4097})
def test_a_page_is_refused_exactly_when_a_page_violation_is_marked_refused(
    page: dict[str, Any],
) -> None:
    # The page's model and the client edge's cursor check together are what the host applies.
    refused = [v for v in page_violations(page, modern=True) if v.refused]
    if not refused:
        check_cursor(parse_skills_page(page))
        return
    with pytest.raises(InvalidResponse) as raised:
        check_cursor(parse_skills_page(page))
    assert raised.value.rule in {v.rule for v in refused}


def test_a_modern_page_without_cache_attributes_is_reported_but_accepted() -> None:
    found = page_violations({"skills": []}, modern=True)
    assert [(v.rule, v.refused) for v in found] == [("SW-LIST-006", False)]
    assert page_violations({"skills": []}, modern=False) == []
    parse_skills_page({"skills": []})


def test_get_reports_the_echo_a_cursor_and_missing_cache_attributes() -> None:
    result = {"skill": good(), "nextCursor": "x"}
    rules = [v.rule for v in get_violations(result, "skill://acme/other/SKILL.md", modern=True)]
    assert rules == ["SW-GET-002", "SW-GET-005", "SW-GET-006"]


@pytest.mark.parametrize(
    ("setting", "resources", "rule", "refused"),
    [
        (None, True, "SW-CAP-001", True),
        ({}, False, "SW-CAP-004", True),
        ({"directoryRead": "yes"}, True, "SW-CAP-003", True),
        ({"config": {"directoryRead": True}}, True, "SW-CAP-002", False),
    ],
)
def test_the_capability_the_host_refuses_is_the_one_reported_refused(
    setting: object, resources: bool, rule: str, refused: bool
) -> None:
    (found,) = capability_violations(setting, resources=resources)
    assert (found.rule, found.refused) == (rule, refused)
    if refused:
        with pytest.raises(CapabilityMissing) as raised:
            read_capability(setting, resources=resources)
        assert raised.value.rule == rule
    else:
        read_capability(setting, resources=resources)


def test_uri_errors_name_their_rule() -> None:
    cases = {
        "skill://acme:1/x/SKILL.md": "SW-URI-003",
        "skill://acme/caf%c3%a9": "SW-URI-004",
        "file:///etc/passwd": "SW-URI-005",
        "acme/SKILL.md": "SW-URI-001",
    }
    for uri, rule in cases.items():
        with pytest.raises(InvalidUri) as raised:
            parse_uri(uri)
        assert raised.value.rule == rule, uri


def test_content_errors_name_their_rule() -> None:
    item = ResourceItem(uri="skill://a/SKILL.md", digest=sha256_digest(b"abc"), size=3)
    with pytest.raises(SizeMismatch) as size:
        verify_file(item, b"ab")
    assert size.value.rule == "SW-READ-005"
    with pytest.raises(DigestMismatch) as digest:
        verify_file(item, b"abd")
    assert digest.value.rule == "SW-READ-006"
    for data, rule in (
        (b"# none\n", "SW-FM-009"),
        # Not YAML at all: no YAML frontmatter, as SEP-2640 requires (MUST).
        (b"---\na: [1, 2\n---\n", "SW-FM-009"),
        (b"---\na: &x 1\n---\n", "SW-FM-011"),
        (b"---\n" + b"a: [" * 40 + b"]" * 40 + b"\n---\n", "SW-LIM-003"),
    ):
        with pytest.raises(FrontmatterError) as raised:
            parse_skill_md(data)
        assert raised.value.rule == rule, data[:20]
