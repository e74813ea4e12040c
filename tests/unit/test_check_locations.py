"""Where a checked server's URIs are in the repository (check/_locations.py): a mapped
prefix gives a repository path, and no URI a server writes gives one outside it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.check._locations import Locations

LOCATIONS = Locations.of(
    [("skill://", "skills"), ("skill://acme", "vendor/acme"), ("repo://x/", ".")], home="skills"
)


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("skill://pdf/SKILL.md", "skills/pdf/SKILL.md"),
        ("skill://acme/billing/refunds/SKILL.md", "vendor/acme/billing/refunds/SKILL.md"),
        ("skill://acme", "vendor/acme"),
        ("skill://acmecorp/SKILL.md", "skills/acmecorp/SKILL.md"),
        ("skill://pdf/caf%C3%A9%20notes.md", "skills/pdf/café notes.md"),
        ("repo://x/a/b.md", "a/b.md"),
        ("other://pdf/SKILL.md", None),
        (None, "skills"),
    ],
)
def test_a_uri_under_a_mapped_prefix_is_a_repository_path(uri: str | None, path: str) -> None:
    assert LOCATIONS.path(uri) == path


@pytest.mark.parametrize(
    "uri",
    [
        "skill://a/../../etc/passwd",
        "skill://a/%2E%2E/x",
        "skill://a/b%2Fc",
        "skill://a/b%5Cc",
        "skill://a/%00",
        "skill://a//b",
        "skill://a/b?x=1",
        "skill://a/%FF",
    ],
)
def test_a_uri_that_is_not_one_plain_path_maps_to_nothing(uri: str) -> None:
    assert LOCATIONS.path(uri) is None


@given(st.text(max_size=200))
def test_no_uri_maps_outside_its_directory(rest: str) -> None:
    path = LOCATIONS.path("skill://" + rest)
    if path is None:
        return
    assert path == "skills" or path.startswith("skills/") or path.startswith("vendor/acme")
    for segment in path.split("/"):
        assert segment not in ("", ".", ".."), path
        assert not any(unicodedata.category(ch)[0] == "C" for ch in segment), path
