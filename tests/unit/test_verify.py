"""The pure verifier: bytes against an entry, in SEP-2640's order."""

from __future__ import annotations

from typing import Any

import pytest

from skillward.core.errors import (
    DigestMismatch,
    FrontmatterError,
    FrontmatterMismatch,
    SizeMismatch,
    UnlistedResource,
)
from skillward.core.verify import manifest_item, sha256_digest, verify_file, verify_skill_md
from skillward.core.wire import ResourceItem, SkillEntry, parse_entry

SKILL_MD = b"---\nname: refunds\ndescription: Refund policy\nlicense: MIT\n---\n# Refunds\n"
GUIDE = b"guide\r\n"
ROOT = "skill://acme/refunds"


def make_entry(skill_md: bytes = SKILL_MD, **frontmatter: Any) -> SkillEntry:
    fields: dict[str, Any] = {"name": "refunds", "description": "Refund policy", "license": "MIT"}
    data: dict[str, Any] = {
        "uri": f"{ROOT}/SKILL.md",
        "frontmatter": {**fields, **frontmatter},
        "resources": [
            {
                "uri": f"{ROOT}/SKILL.md",
                "digest": sha256_digest(skill_md),
                "size": len(skill_md),
            },
            {"uri": f"{ROOT}/guide.md", "digest": sha256_digest(GUIDE), "size": len(GUIDE)},
        ],
    }
    return parse_entry(data)


def guide_item() -> ResourceItem:
    return make_entry().manifest[f"{ROOT}/guide.md"]


def test_matching_bytes_are_returned_as_the_very_buffer_that_was_hashed() -> None:
    data = bytes(GUIDE)
    verified = verify_file(guide_item(), data)
    assert verified.data is data
    assert verified.digest == sha256_digest(GUIDE)
    assert verified.verified


@pytest.mark.threat("T6")
@pytest.mark.parametrize("data", [GUIDE[:-1], GUIDE + b"\n", b""])
def test_a_read_of_the_wrong_length_is_a_size_mismatch(data: bytes) -> None:
    with pytest.raises(SizeMismatch) as info:
        verify_file(guide_item(), data, server="acme")
    assert info.value.uri == f"{ROOT}/guide.md"
    assert info.value.server == "acme"


@pytest.mark.threat("T5")
def test_same_length_different_bytes_is_a_digest_mismatch() -> None:
    tampered = b"GUIDE\r\n"
    with pytest.raises(DigestMismatch, match="differs from the listing"):
        verify_file(guide_item(), tampered, server="acme")


@pytest.mark.threat("T8")
def test_a_uri_the_entry_does_not_list_is_an_unlisted_resource() -> None:
    with pytest.raises(UnlistedResource):
        manifest_item(make_entry(), f"{ROOT}/extra.md", server="acme")


def test_skill_md_is_verified_and_split_into_frontmatter_and_body() -> None:
    verified = verify_skill_md(make_entry(), SKILL_MD)
    assert verified.frontmatter == {
        "name": "refunds",
        "description": "Refund policy",
        "license": "MIT",
    }
    assert verified.body == "# Refunds\n"
    assert verified.file.data is SKILL_MD


@pytest.mark.threat("T7")
def test_skill_md_whose_frontmatter_differs_in_one_field_is_refused() -> None:
    entry = make_entry(license="Apache-2.0")
    with pytest.raises(FrontmatterMismatch) as info:
        verify_skill_md(entry, SKILL_MD, server="acme")
    assert info.value.fields == ("license",)


@pytest.mark.threat("T5")
def test_skill_md_is_checked_for_size_and_digest_before_its_yaml_is_parsed() -> None:
    bomb = b"---\na: &a [1]\nb: *a\n---\n"
    entry = make_entry()
    with pytest.raises(SizeMismatch):
        verify_skill_md(entry, bomb)


@pytest.mark.threat("T12")
def test_an_alias_bomb_served_with_a_correct_digest_is_refused() -> None:
    bomb = b"---\nname: refunds\ndescription: Refund policy\nlicense: MIT\nx: &a [1]\n---\n"
    with pytest.raises(FrontmatterError, match="anchors"):
        verify_skill_md(make_entry(bomb), bomb)


@pytest.mark.threat("T19")
def test_a_dynamic_skill_md_is_marked_unverified_but_its_frontmatter_still_checked() -> None:
    entry = parse_entry(
        {
            "uri": f"{ROOT}/SKILL.md",
            "frontmatter": {"name": "refunds", "description": "Refund policy", "license": "MIT"},
            "resources": "dynamic",
        }
    )
    verified = verify_skill_md(entry, SKILL_MD)
    assert not verified.file.verified
    with pytest.raises(FrontmatterMismatch):
        verify_skill_md(entry, SKILL_MD.replace(b"MIT", b"GPL"))
