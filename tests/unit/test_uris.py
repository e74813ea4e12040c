"""skill:// URI parsing, skill roots, reference resolution and fold collisions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.errors import InvalidUri
from skillward.core.uris import (
    ResourceUri,
    SkillRoot,
    _parse_uri_slow,
    fold_collisions,
    fold_key,
    parse_uri,
    plain_skill_root,
    plainly_below,
    resolve_reference,
    skill_root_of,
)

pytestmark = pytest.mark.threat("T10")

REFUNDS = skill_root_of("skill://acme/billing/refunds/SKILL.md")


@pytest.mark.parametrize(
    "uri",
    [
        "skill://git-workflow/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
        "skill://acme/billing/refunds/examples/email.md",
        "github://owner/repo/skills/refunds/SKILL.md",
        "skill://caf%C3%A9/notes/SKILL.md",
        "skill://a/it's(fine)!/x=y;z@w:v/SKILL.md",
    ],
)
def test_canonical_uris_parse_and_format_to_the_same_string(uri: str) -> None:
    assert str(parse_uri(uri)) == uri


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("skill://user@acme/x/SKILL.md", "userinfo"),
        ("skill://acme:8080/x/SKILL.md", "port"),
        ("skill://acme/x/SKILL.md?v=1", "query"),
        ("skill://acme/x/SKILL.md#top", "fragment"),
        ("skill://acme\\x/SKILL.md", "backslash"),
        ("skill://acme/x\\..\\y/SKILL.md", "backslash"),
        ("skill://acme/x\x00/SKILL.md", "control"),
        ("skill://acme/x\n/SKILL.md", "control"),
        ("skill://acme/x\x7f/SKILL.md", "control"),
        ("skill://acme/a%2Fb/SKILL.md", "%2F"),
        ("skill://acme/a%2fb/SKILL.md", "lowercase"),
        ("skill://acme/a%5Cb/SKILL.md", "%5C"),
        ("skill://acme/%2E%2E/SKILL.md", "%2E"),
        ("skill://acme/a%00/SKILL.md", "%00"),
        ("skill://acme/a%0A/SKILL.md", "%0A"),
        ("skill://acme/a%41/SKILL.md", "unreserved"),
        ("skill://acme/a%4/SKILL.md", "malformed"),
        ("skill://acme/a%zz/SKILL.md", "malformed"),
        ("skill://acme/./SKILL.md", "dot segment"),
        ("skill://acme/../SKILL.md", "dot segment"),
        ("skill://../x/SKILL.md", "dot segment"),
        ("skill://acme//SKILL.md", "empty"),
        ("skill://acme/x/", "empty"),
        ("skill:///x/SKILL.md", "empty authority"),
        ("skill://", "empty authority"),
        ("skill://acmé/x/SKILL.md", "non-ASCII"),
        ("skill://acme/x\u202e/SKILL.md", "non-ASCII"),
        ("skill://acme/a b/SKILL.md", "space"),
        ("SKILL://acme/x/SKILL.md", "lowercase"),
        ("skill:acme/x/SKILL.md", "hierarchical"),
        ("urn:skill:x", "hierarchical"),
        ("//acme/x/SKILL.md", "scheme"),
        ("acme/x/SKILL.md", "scheme"),
        ("skill://[::1]/x/SKILL.md", "IP literal"),
        ("skill://acme/a<b/SKILL.md", "not allowed"),
    ],
)
def test_malformed_uri_is_refused_with_the_reason(uri: str, reason: str) -> None:
    with pytest.raises(InvalidUri, match=reason):
        parse_uri(uri)


@pytest.mark.parametrize(
    "uri",
    ["file:///etc/passwd", "file:/etc/passwd", "file:x", "FILE://host/x", "File:x", "fIlE:/x"],
)
def test_file_uris_in_any_spelling_are_never_skill_resources(uri: str) -> None:
    with pytest.raises(InvalidUri, match="file: URIs are never skill resources"):
        parse_uri(uri)


def test_overlong_uri_is_refused() -> None:
    with pytest.raises(InvalidUri, match="longer than"):
        parse_uri("skill://a/" + "b" * 5000)


def test_non_string_uri_is_refused_with_the_typed_error() -> None:
    with pytest.raises(InvalidUri):
        parse_uri(42)  # type: ignore[arg-type]


def test_error_message_escapes_control_characters() -> None:
    with pytest.raises(InvalidUri) as info:
        parse_uri("skill://acme/\x1b[31mred/SKILL.md")
    assert "\x1b" not in str(info.value)


def test_skill_root_splits_skill_path_and_name() -> None:
    assert str(REFUNDS) == "skill://acme/billing/refunds"
    assert REFUNDS.name == "refunds"
    assert REFUNDS.prefix == ("acme", "billing")
    assert str(REFUNDS.skill_md) == "skill://acme/billing/refunds/SKILL.md"


def test_single_segment_skill_has_no_prefix() -> None:
    root = skill_root_of("skill://git-workflow/SKILL.md")
    assert root.name == "git-workflow"
    assert root.prefix == ()


@pytest.mark.parametrize(
    "uri", ["skill://SKILL.md", "skill://acme/README.md", "skill://acme/SKILL.md/x"]
)
def test_skill_root_requires_a_skill_md_under_a_non_empty_skill_path(uri: str) -> None:
    with pytest.raises(InvalidUri):
        skill_root_of(uri)


def test_file_path_is_relative_to_the_root() -> None:
    uri = parse_uri("skill://acme/billing/refunds/examples/email.md")
    assert REFUNDS.file_path(uri) == "examples/email.md"


@pytest.mark.parametrize(
    "uri",
    [
        "skill://acme/billing/refundsX/SKILL.md",
        "skill://acme/billing/SKILL.md",
        "other://acme/billing/refunds/SKILL.md",
        "skill://acme/billing/refunds",
    ],
)
def test_uri_outside_the_root_is_not_within_it(uri: str) -> None:
    parsed = parse_uri(uri)
    assert not parsed.is_within(REFUNDS)
    with pytest.raises(InvalidUri, match="outside the skill root"):
        REFUNDS.file_path(parsed)


def test_child_builds_a_contained_uri_and_refuses_escapes() -> None:
    assert str(REFUNDS.child("a/b.md")) == "skill://acme/billing/refunds/a/b.md"
    with pytest.raises(InvalidUri):
        REFUNDS.child("../x.md")


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("references/GUIDE.md", "skill://acme/billing/refunds/references/GUIDE.md"),
        ("./references/GUIDE.md", "skill://acme/billing/refunds/references/GUIDE.md"),
        ("a/../b.md", "skill://acme/billing/refunds/b.md"),
        ("a/./b.md", "skill://acme/billing/refunds/a/b.md"),
        ("GUIDE.md#section-2", "skill://acme/billing/refunds/GUIDE.md"),
        ("", "skill://acme/billing/refunds/SKILL.md"),
        ("skill://acme/billing/refunds/x.md", "skill://acme/billing/refunds/x.md"),
        ("//acme/billing/refunds/x.md", "skill://acme/billing/refunds/x.md"),
        ("/billing/refunds/x.md", "skill://acme/billing/refunds/x.md"),
    ],
)
def test_reference_resolves_against_the_skill_root(reference: str, expected: str) -> None:
    assert str(resolve_reference(REFUNDS, reference)) == expected


@pytest.mark.parametrize(
    ("reference", "reason"),
    [
        ("../other/SKILL.md", "escapes"),
        ("a/../../x.md", "escapes"),
        ("/x.md", "escapes"),
        ("/billing/x.md", "escapes"),
        ("//evil/x.md", "escapes"),
        ("skill://acme/billing/other/x.md", "escapes"),
        ("other://acme/billing/refunds/x.md", "escapes"),
        ("file:///etc/passwd", "file:"),
        ("file:x", "file:"),
        ("..\\..\\x", "backslash"),
        ("%2E%2E/x.md", "%2E"),
        ("a%2Fb", "%2F"),
        ("x.md?raw=1", "query"),
        ("templates/", "directory"),
        ("a//b.md", "empty"),
        ("..", "escapes"),
        ("x\x00.md", "control"),
        ("ﬁle.md", "non-ASCII"),
    ],
)
def test_reference_that_leaves_the_root_or_is_malformed_is_refused(
    reference: str, reason: str
) -> None:
    with pytest.raises(InvalidUri, match=reason):
        resolve_reference(REFUNDS, reference)


def test_nested_skill_references_resolve_against_its_own_root() -> None:
    nested = skill_root_of("skill://acme/billing/refunds/partial/SKILL.md")
    assert str(resolve_reference(nested, "x.md")) == "skill://acme/billing/refunds/partial/x.md"
    with pytest.raises(InvalidUri, match="escapes"):
        resolve_reference(nested, "../examples/email.md")


@pytest.mark.threat("T3")
def test_identity_is_exact_but_fold_collisions_are_reported() -> None:
    upper = parse_uri("skill://Acme/refunds/SKILL.md")
    lower = parse_uri("skill://acme/refunds/SKILL.md")
    assert upper != lower
    assert fold_key(str(upper)) == fold_key(str(lower))
    composed = "skill://caf%C3%A9/x/SKILL.md"
    decomposed = "skill://cafe%CC%81/x/SKILL.md"
    groups = fold_collisions([str(upper), str(lower), composed, decomposed, "skill://z/SKILL.md"])
    assert groups == [(str(upper), str(lower)), (composed, decomposed)]


def test_fold_collisions_ignores_exact_duplicates() -> None:
    assert fold_collisions(["skill://a/SKILL.md", "skill://a/SKILL.md"]) == []


# --- properties -----------------------------------------------------------------------

_SEGMENT_ALPHABET = "abcAZ09-._~!$&'()*+,;=:@"
_segment = st.text(_SEGMENT_ALPHABET, min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
_pct = st.sampled_from(["%C3%A9", "%20", "%25", "%E2%80%AE"])
_safe_segment = st.lists(st.one_of(_segment, _pct), min_size=1, max_size=3).map("".join)
_authority = st.text("abcz09-._~!$&'()*+,;=", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@given(
    scheme=st.sampled_from(["skill", "github", "x-y.z+w"]),
    authority=_authority,
    path=st.lists(_safe_segment, max_size=5),
)
def test_generated_canonical_uris_round_trip(scheme: str, authority: str, path: list[str]) -> None:
    text = f"{scheme}://{authority}" + "".join("/" + p for p in path)
    parsed = parse_uri(text)
    assert str(parsed) == text
    assert parse_uri(str(parsed)) == parsed


_URI_NOISE = st.lists(
    st.sampled_from([*list("skil:/.%2EeFf5C0a?#@\\ \x00é-A"), "skill://", "file:", "%2F", ".."]),
    max_size=20,
).map("".join)


@given(_URI_NOISE)
def test_parse_then_format_then_parse_is_stable_for_any_input(text: str) -> None:
    try:
        parsed = parse_uri(text)
    except InvalidUri:
        return
    assert str(parsed) == text
    assert parse_uri(str(parsed)) == parsed
    assert parsed.scheme.lower() != "file"
    assert all(segment not in ("", ".", "..") for segment in parsed.segments)


_REF_PART = st.sampled_from(
    ["..", ".", "", "a", "b.md", "%2E%2E", "%2e", "refunds", "billing", "acme", "\\", "%2F"]
)
_REFERENCE = st.one_of(
    st.lists(_REF_PART, max_size=8).map("/".join),
    st.lists(_REF_PART, max_size=8).map(lambda parts: "/" + "/".join(parts)),
    st.lists(_REF_PART, max_size=8).map(lambda parts: "//" + "/".join(parts)),
    st.lists(_REF_PART, max_size=8).map(lambda parts: "skill://" + "/".join(parts)),
    st.text(max_size=30),
)


@given(_REFERENCE)
def test_nothing_resolve_accepts_escapes_the_skill_root(reference: str) -> None:
    try:
        resolved = resolve_reference(REFUNDS, reference)
    except InvalidUri:
        return
    assert isinstance(resolved, ResourceUri)
    assert resolved.is_within(REFUNDS)
    assert str(resolved).startswith(str(REFUNDS) + "/")
    assert parse_uri(str(resolved)) == resolved


@given(_REFERENCE)
def test_resolution_against_a_single_segment_root_stays_inside(reference: str) -> None:
    root = SkillRoot("skill", ("git-workflow",))
    try:
        resolved = resolve_reference(root, reference)
    except InvalidUri:
        return
    assert resolved.is_within(root)


@given(_URI_NOISE)
def test_the_fast_path_accepts_nothing_the_full_check_refuses(text: str) -> None:
    try:
        fast = parse_uri(text)
    except InvalidUri:
        return
    assert _parse_uri_slow(text) == fast


_BELOW_ROOT = st.lists(
    st.sampled_from(["a", "b.md", ".", "..", "", "%2E", "%C3%A9", "x:y@z", "\\", "?", "é", " "]),
    max_size=5,
).map("/".join)


@given(
    st.one_of(
        _BELOW_ROOT.map(lambda path: f"{REFUNDS}/{path}"),
        _BELOW_ROOT.map(lambda path: f"{REFUNDS}{path}"),
        _BELOW_ROOT.map(lambda path: f"skill://acme/billing/{path}"),
        _URI_NOISE,
    )
)
def test_holds_agrees_with_parsing_then_checking_containment(text: str) -> None:
    try:
        expected = parse_uri(text).is_within(REFUNDS)
    except InvalidUri:
        assert not plainly_below(str(REFUNDS), text)
        with pytest.raises(InvalidUri):
            REFUNDS.holds(text)
        return
    assert REFUNDS.holds(text) == expected
    assert expected or not plainly_below(str(REFUNDS), text)


def test_holds_refuses_an_overlong_uri_like_parse_uri() -> None:
    with pytest.raises(InvalidUri, match="longer than"):
        REFUNDS.holds(f"{REFUNDS}/" + "a" * 3000)


_SKILL_MD = st.builds(
    lambda scheme, authority, path, last: (
        f"{scheme}://{authority}" + "".join("/" + segment for segment in path) + last
    ),
    st.sampled_from(["skill", "file", "FILE", "Skill", "x-y.z+w"]),
    st.one_of(_authority, st.sampled_from([".", "..", "", "a%41", "a:1", "SKILL.md"])),
    st.lists(st.one_of(_safe_segment, st.sampled_from([".", "..", "", "%2E"])), max_size=4),
    st.sampled_from(["/SKILL.md", "/skill.md", "/SKILL.md/", "", "/SKILL.mdx"]),
)


@given(st.one_of(_SKILL_MD, _URI_NOISE))
def test_a_plain_skill_root_is_the_root_the_full_parse_finds(text: str) -> None:
    root = plain_skill_root(text)
    if root is None:
        return
    assert root == str(skill_root_of(parse_uri(text)))


def test_only_a_skill_md_uri_in_plain_form_has_a_plain_root() -> None:
    assert plain_skill_root("skill://acme/billing/refunds/SKILL.md") == str(REFUNDS)
    assert plain_skill_root("skill://git-workflow/SKILL.md") == "skill://git-workflow"
    for other in (
        "skill://acme/%C3%A9/SKILL.md",  # parsed in full
        "skill://acme/./refunds/SKILL.md",
        "skill://../SKILL.md",
        "file://acme/SKILL.md",
        "skill://SKILL.md",
        "skill://acme/refunds/README.md",
        "skill://acme/" + "a" * 3000 + "/SKILL.md",
    ):
        assert plain_skill_root(other) is None, other
