"""The SEP-2640 wire model and every entry invariant."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from skillward.core._fields import check_skill_name, json_size
from skillward.core.config import Limits
from skillward.core.errors import ConfigError, InvalidEntry, InvalidResponse, SkillTooLarge
from skillward.core.uris import parse_uri
from skillward.core.wire import (
    DirectoryReadResult,
    GetSkillResult,
    SkillEntry,
    SkillsCapability,
    parse_entry,
    parse_skills_page,
)

DIGEST = "sha256:" + "ab" * 32
ROOT = "skill://acme/billing/refunds"


def item(
    path: str = "SKILL.md", *, size: int = 10, root: str = ROOT, **extra: Any
) -> dict[str, Any]:
    return {"uri": f"{root}/{path}", "digest": DIGEST, "size": size, **extra}


def entry(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uri": f"{ROOT}/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "Process refunds"},
        "resources": [item(), item("examples/email.md")],
    }
    base.update(overrides)
    return base


def test_valid_entry_exposes_its_root_name_and_manifest() -> None:
    parsed = parse_entry(entry(), server="acme")
    assert str(parsed.root) == ROOT
    assert parsed.name == "refunds"
    assert parsed.description == "Process refunds"
    assert set(parsed.manifest) == {f"{ROOT}/SKILL.md", f"{ROOT}/examples/email.md"}
    assert parsed.total_size == 20
    assert not parsed.is_dynamic


def test_entry_is_frozen() -> None:
    parsed = parse_entry(entry())
    with pytest.raises(ValidationError):
        parsed.uri = "skill://x/SKILL.md"  # type: ignore[misc]


def test_frontmatter_is_kept_verbatim_with_unknown_keys() -> None:
    frontmatter = {
        "name": "refunds",
        "description": "d",
        "license": "Apache-2.0",
        "allowed-tools": "Bash(git:*)",
        "metadata": {"version": "2.1.0", "io.modelcontextprotocol/x": "y"},
        "_private": [1, 2.5, None, True],
        "schema": "shadowing a pydantic attribute",
    }
    parsed = parse_entry(entry(frontmatter=frontmatter))
    assert parsed.frontmatter.as_dict() == frontmatter


@pytest.mark.threat("T11")
def test_unknown_fields_from_newer_protocols_are_tolerated_and_dropped() -> None:
    parsed = parse_entry(
        entry(annotations={"audience": ["user"]}, resources=[item(etag="x"), item("a.md")])
    )
    assert not parsed.model_extra
    assert isinstance(parsed.resources, tuple)
    assert not any(hasattr(i, "etag") for i in parsed.resources)
    assert "annotations" not in parsed.model_dump_json()


# Path segments a server may write: percent-encodings, unicode, dots inside a name.
SEGMENT = st.lists(
    st.sampled_from(["a", "Z", "9", ".", "-", "_", "~", "%20", "é", "中", "..", "SKILL.md"]),
    min_size=1,
    max_size=6,
).map("".join)


@pytest.mark.threat("T10")
@given(st.lists(st.lists(SEGMENT, min_size=1, max_size=3).map("/".join), max_size=8, unique=True))
def test_an_entry_lists_its_files_by_their_sorted_paths_below_its_root(paths: list[str]) -> None:
    try:
        parsed = parse_entry(entry(resources=[item(), *(item(p) for p in paths)]))
    except (InvalidEntry, SkillTooLarge):
        return  # refused before any path is listed
    fresh = sorted(parsed.root.file_path(parse_uri(uri)) for uri in parsed.manifest)
    assert parsed.file_paths == tuple(fresh)
    assert parsed.file_paths is parsed.file_paths  # kept, not listed again
    by_path = {parsed.root.file_path(parse_uri(uri)): uri for uri in parsed.manifest}
    assert dict(parsed.uri_by_path) == by_path
    assert parsed.uri_by_path is parsed.uri_by_path  # made once per entry
    validated = SkillEntry.model_validate(parsed.model_dump(by_alias=True))
    assert validated.file_paths == tuple(fresh)


def test_a_dynamic_entry_lists_no_files() -> None:
    assert parse_entry(entry(resources="dynamic")).file_paths == ()
    assert not parse_entry(entry(resources="dynamic")).uri_by_path


def test_dynamic_resources_are_accepted_and_marked_unverifiable() -> None:
    parsed = parse_entry(entry(resources="dynamic"))
    assert parsed.is_dynamic
    assert parsed.manifest == {}


def test_entry_round_trips_through_json_by_alias() -> None:
    parsed = parse_entry(entry())
    again = parse_entry(json.loads(parsed.model_dump_json()))
    assert again == parsed


@pytest.mark.threat("T10")
@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"resources": None}, "resources"),
        ({"resources": []}, "own SKILL.md"),
        ({"resources": "static"}, "resources"),
        ({"resources": {"uri": f"{ROOT}/SKILL.md"}}, "resources"),
        ({"resources": [item("a.md")]}, "own SKILL.md"),
        ({"resources": [item(), item()]}, "more than once"),
        (
            {"resources": [item(), item(root="skill://acme/billing/other")]},
            "outside the skill root",
        ),
        (
            {
                "resources": [
                    item(),
                    {"uri": "skill://acme/billing/SKILL.md", "digest": DIGEST, "size": 1},
                ]
            },
            "outside",
        ),
        ({"resources": [item(), item("../other/x.md")]}, "dot segment"),
        (
            {"resources": [item(), {"uri": "file:///etc/passwd", "digest": DIGEST, "size": 1}]},
            "file:",
        ),
        ({"resources": [item(), {"uri": "file:x", "digest": DIGEST, "size": 1}]}, "file:"),
        ({"resources": [item(), {"uri": f"{ROOT}/a.md", "size": 1}]}, "digest"),
        ({"resources": [item(), {"uri": f"{ROOT}/a.md", "digest": DIGEST}]}, "size"),
        ({"resources": [item(), {"digest": DIGEST, "size": 1}]}, "uri"),
        ({"uri": "file:///skills/refunds/SKILL.md"}, "file:"),
        ({"uri": f"{ROOT}/README.md"}, "SKILL.md"),
        ({"uri": "skill://SKILL.md"}, "skill path is empty"),
        ({"uri": "skill://acme/billing/refund/SKILL.md"}, "must equal frontmatter.name"),
        ({"uri": "skill://acme/billing/Refunds/SKILL.md"}, "must equal frontmatter.name"),
        ({"uri": 12}, "uri"),
    ],
)
def test_entry_breaking_an_invariant_is_refused(overrides: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidEntry, match=reason) as info:
        parse_entry(entry(**overrides), server="acme")
    assert info.value.server == "acme"


def test_entry_without_resources_is_invalid() -> None:
    data = entry()
    del data["resources"]
    with pytest.raises(InvalidEntry, match="resources"):
        parse_entry(data)


@pytest.mark.parametrize(
    "digest",
    [
        "sha256:" + "AB" * 32,
        "sha256:" + "ab" * 31,
        "sha256:" + "ab" * 33,
        "sha512:" + "ab" * 32,
        "SHA256:" + "ab" * 32,
        "ab" * 32,
        "sha256:" + "ag" * 32,
        "sha256:" + "ab" * 32 + "\n",
    ],
)
def test_digest_must_be_sha256_and_64_lowercase_hex(digest: str) -> None:
    with pytest.raises(InvalidEntry, match="digest"):
        parse_entry(entry(resources=[item(), {**item("a.md"), "digest": digest}]))


@pytest.mark.parametrize("size", [-1, 1.5, "10", True, None])
def test_size_must_be_a_non_negative_integer(size: object) -> None:
    with pytest.raises(InvalidEntry, match="size"):
        parse_entry(entry(resources=[item(), {**item("a.md"), "size": size}]))


def test_zero_size_files_are_allowed() -> None:
    assert parse_entry(entry(resources=[item(), item("empty", size=0)])).total_size == 10


@pytest.mark.parametrize(
    "name",
    ["PDF", "-pdf", "pdf-", "pdf--x", "p_df", "pdf x", "", "a" * 65, "pdé", "pdf\n"],
)
def test_names_breaking_the_agent_skills_rules_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="skill name"):
        check_skill_name(name)
    with pytest.raises(InvalidEntry, match="name"):
        parse_entry(entry(frontmatter={"name": name, "description": "d"}))


@pytest.mark.parametrize("name", ["a", "pdf-processing", "x1-2-y", "a" * 64, "0"])
def test_names_following_the_rules_are_accepted(name: str) -> None:
    assert check_skill_name(name) == name


@pytest.mark.parametrize("description", ["", "x" * 1025, 5, None])
def test_description_must_be_1_to_1024_characters(description: object) -> None:
    with pytest.raises(InvalidEntry, match="description"):
        parse_entry(entry(frontmatter={"name": "refunds", "description": description}))


def test_frontmatter_without_a_name_is_refused() -> None:
    with pytest.raises(InvalidEntry, match="name"):
        parse_entry(entry(frontmatter={"description": "d"}))


@pytest.mark.threat("T11")
def test_more_than_512_files_is_refused_before_items_are_parsed() -> None:
    resources: list[Any] = [item()] + [{"not": "even an item"}] * 512
    with pytest.raises(SkillTooLarge, match="513 files") as info:
        parse_entry(entry(resources=resources), server="acme")
    assert info.value.server == "acme"
    assert info.value.uri == f"{ROOT}/SKILL.md"


@pytest.mark.threat("T11")
def test_exactly_512_files_and_16_mib_are_accepted() -> None:
    per_file = (16 * 1024 * 1024) // 512
    resources = [item(size=per_file)] + [item(f"f{i}", size=per_file) for i in range(511)]
    assert parse_entry(entry(resources=resources)).total_size == 16 * 1024 * 1024


@pytest.mark.threat("T11")
def test_more_than_16_mib_in_total_is_refused() -> None:
    resources = [item(size=8 * 1024 * 1024), item("big.bin", size=8 * 1024 * 1024 + 1)]
    with pytest.raises(SkillTooLarge, match="16777217 bytes"):
        parse_entry(entry(resources=resources), server="acme")


@pytest.mark.threat("T11")
def test_a_host_may_raise_the_limits_in_config() -> None:
    generous = Limits(max_skill_files=1024, max_skill_bytes=32 * 1024 * 1024)
    resources = [item()] + [item(f"f{i}", size=1) for i in range(600)]
    assert len(parse_entry(entry(resources=resources), limits=generous).manifest) == 601


def test_limits_below_the_sep_minimum_are_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Limits(max_skill_files=100)
    with pytest.raises(ConfigError):
        Limits(operation_timeout=0)


@pytest.mark.threat("T43")
def test_a_message_cap_with_no_room_for_a_whole_resource_read_is_a_config_error() -> None:
    # A file at max_resource_bytes arrives as base64: a third larger, and an envelope.
    with pytest.raises(ConfigError, match="max_message_bytes must leave room"):
        Limits(max_message_bytes=16 * 1024 * 1024)
    assert Limits(max_resource_bytes=3000, max_message_bytes=8192).message_bytes == 8192
    # By default the cap follows the resource cap, with room for escaped text too.
    assert Limits().message_bytes == 24 * 1024 * 1024
    assert Limits(max_resource_bytes=64 * 1024 * 1024).message_bytes == 96 * 1024 * 1024


def test_skills_page_skips_bad_entries_one_at_a_time() -> None:
    other = entry(
        uri="skill://git-workflow/SKILL.md",
        frontmatter={"name": "git-workflow", "description": "Git"},
        resources=[item(root="skill://git-workflow")],
    )
    page = parse_skills_page(
        {
            "skills": [entry(), {"uri": "broken"}, "not an object", other],
            "nextCursor": "c2",
            "ttlMs": 5000,
            "cacheScope": "private",
            "resultType": "complete",
            "_meta": {"x": 1},
        },
        server="acme",
    )
    assert [e.name for e in page.entries] == ["refunds", "git-workflow"]
    assert len(page.rejected) == 2
    assert all(isinstance(r, InvalidEntry) and r.server == "acme" for r in page.rejected)
    assert page.rejected[0].uri == "broken"
    assert (page.next_cursor, page.ttl_ms, page.cache_scope) == ("c2", 5000, "private")


def test_skills_page_reports_oversized_entries_as_rejected() -> None:
    huge = entry(resources=[item(size=17 * 1024 * 1024)])
    page = parse_skills_page({"skills": [huge]})
    assert page.entries == ()
    assert isinstance(page.rejected[0], SkillTooLarge)


@pytest.mark.parametrize(
    "result",
    [{}, {"skills": "x"}, {"skills": [], "nextCursor": 3}, {"skills": [], "ttlMs": -1}, []],
)
def test_malformed_skills_page_is_an_invalid_response(result: object) -> None:
    with pytest.raises(InvalidResponse):
        parse_skills_page(result, server="acme")


def test_get_skill_result_validates_its_entry_with_limits_from_context() -> None:
    result = GetSkillResult.model_validate(
        {"skill": entry(), "ttlMs": 0, "cacheScope": "public", "resultType": "complete"}
    )
    assert isinstance(result.skill, SkillEntry)
    assert result.ttl_ms == 0
    with pytest.raises(SkillTooLarge):
        GetSkillResult.model_validate(
            {"skill": entry(resources=[item(size=20 * 1024 * 1024)])},
            context={"limits": Limits()},
        )


def test_directory_result_marks_subdirectories() -> None:
    result = DirectoryReadResult.model_validate(
        {
            "resources": [
                {"uri": f"{ROOT}/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
                {"uri": f"{ROOT}/examples", "name": "examples", "mimeType": "inode/directory"},
            ],
            "nextCursor": "2",
            "resultType": "complete",
        }
    )
    assert [child.is_directory for child in result.resources] == [False, True]
    assert result.next_cursor == "2"


def test_capability_reads_directory_read_and_tolerates_new_settings() -> None:
    assert SkillsCapability.model_validate({}).directory_read is False
    assert SkillsCapability.model_validate({"directoryRead": True, "future": 1}).directory_read
    with pytest.raises(ValidationError):
        SkillsCapability.model_validate({"directoryRead": "yes"})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.sampled_from(["uri", "frontmatter", "resources", "x"]), _json))
def test_no_json_input_escapes_the_typed_errors(data: dict[str, Any]) -> None:
    with contextlib.suppress(InvalidEntry, SkillTooLarge):
        parse_entry(data)


# --- T11: what a listing entry may cost -------------------------------------------------------

_json_with_floats = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@pytest.mark.threat("T11")
@given(_json_with_floats, st.integers(0, 400))
def test_json_size_stops_early_but_agrees_with_a_full_count(value: Any, limit: int) -> None:
    full = json_size(value, limit=10**9)
    assert (json_size(value, limit=limit) > limit) == (full > limit)
    # An estimate of the compact JSON: within a small factor of the real thing.
    real = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    assert real / 8 <= full <= 24 * real + 24


@pytest.mark.threat("T11")
def test_json_size_measures_any_depth_without_recursing() -> None:
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    assert json_size(deep, limit=10**9) == 200_000 + 6
    with pytest.raises(ValueError, match="deeper than 16"):
        json_size(deep, limit=10**9, max_depth=16)
    with pytest.raises(ValueError, match="more than 100 values"):
        json_size(deep, limit=10**9, max_nodes=100)


@pytest.mark.threat("T11")
@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"padding": "x" * 70_000}, "larger than 65536 bytes"),
        ({f"k{i}": i for i in range(2100)}, "more than 4096 values"),
        ({"deep": json.loads("[" * 20 + "]" * 20)}, "deeper than 16 levels"),
    ],
    ids=["bytes", "nodes", "depth"],
)
def test_a_listing_frontmatter_past_the_skill_md_caps_is_refused(
    extra: dict[str, Any], reason: str
) -> None:
    frontmatter = {"name": "refunds", "description": "d", **extra}
    page = parse_skills_page({"skills": [entry(frontmatter=frontmatter), entry()]})
    assert [e.name for e in page.entries] == ["refunds"]
    assert isinstance(page.rejected[0], InvalidEntry)
    assert reason in str(page.rejected[0])


@pytest.mark.threat("T11")
def test_a_listing_frontmatter_at_the_caps_is_kept_verbatim() -> None:
    extra = {f"k{i:04}": "v" for i in range(2040)}
    extra["padding"] = "x" * 30_000
    frontmatter = {"name": "refunds", "description": "d", **extra}
    assert parse_entry(entry(frontmatter=frontmatter)).frontmatter.as_dict() == frontmatter
