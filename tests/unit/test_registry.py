"""Per-origin namespaces: resolution never guesses, and nothing shadows anything."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from skillward.core.errors import (
    AmbiguousName,
    ConfigError,
    SkillNotFound,
    UnknownServer,
    UsageError,
)
from skillward.core.labels import normalise_label
from skillward.core.origins import Origin, SkillKey
from skillward.core.registry import Registry, SkillRecord, parse_reference
from skillward.core.wire import parse_entry

DIGEST = "sha256:" + "a" * 64


def mcp_record(origin: Origin, path: str, *, listed: bool = True) -> SkillRecord:
    name = path.rsplit("/", 1)[-1]
    uri = f"skill://{path}/SKILL.md"
    entry = parse_entry(
        {
            "uri": uri,
            "frontmatter": {"name": name, "description": f"{name} from {origin.label}"},
            "resources": [{"uri": uri, "digest": DIGEST, "size": 1}],
        }
    )
    return SkillRecord.from_entry(origin, entry, listed=listed)


def local_record(origin: Origin, path: str) -> SkillRecord:
    return SkillRecord(
        key=SkillKey(origin.label, path),
        origin=origin,
        name=path.rsplit("/", 1)[-1],
        description="local",
        path=path,
        directory=f"/skills/{path}",
    )


ACME = Origin("mcp", "acme", "Acme Corp")
DOCS = Origin("mcp", "docs", "acme")
PROJECT = Origin("local", "project", "/work/.agents/skills")


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.set_origin(
        ACME,
        [
            mcp_record(ACME, "acme/billing/refunds"),
            mcp_record(ACME, "acme/support/refunds"),
            mcp_record(ACME, "pdf-processing"),
            mcp_record(ACME, "git-workflow"),
        ],
    )
    registry.set_origin(DOCS, [mcp_record(DOCS, "style-guide"), mcp_record(DOCS, "Team/notes")])
    registry.set_origin(
        PROJECT, [local_record(PROJECT, "git-workflow"), local_record(PROJECT, "notes")]
    )
    return registry


@pytest.mark.parametrize(
    ("text", "label", "kind", "value"),
    [
        ("refunds", None, "name", "refunds"),
        ("acme:refunds", "acme", "name", "refunds"),
        ("acme:acme/billing/refunds", "acme", "path", "acme/billing/refunds"),
        ("acme:skill://x/SKILL.md", "acme", "uri", "skill://x/SKILL.md"),
        ("skill://x/SKILL.md", None, "uri", "skill://x/SKILL.md"),
        ("acme/billing/refunds", None, "path", "acme/billing/refunds"),
    ],
)
def test_references_parse_into_label_kind_and_value(
    text: str, label: str | None, kind: str, value: str
) -> None:
    ref = parse_reference(text)
    assert (ref.label, ref.kind, ref.value) == (label, kind, value)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("refunds", True),
        ("acme:refunds", True),
        ("other:refunds", False),
        ("acme/billing/refunds", True),
        ("acme:acme/billing/refunds", True),
        ("billing/refunds", False),
        ("skill://acme/billing/refunds/SKILL.md", True),
        ("acme:skill://acme/billing/refunds/SKILL.md", True),
        ("skill://acme/billing/SKILL.md", False),
        ("billing", False),
    ],
)
def test_a_reference_names_a_skill_by_its_uri_path_or_last_segment(text: str, named: bool) -> None:
    uri = "skill://acme/billing/refunds/SKILL.md"
    assert parse_reference(text).names("acme", uri) is named


@pytest.mark.parametrize(
    "text", ["", "acme:", "/", "acme:/", "-acme:refunds", "Ácme:refunds", "a/b:x", "a\tb:x"]
)
def test_malformed_references_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_reference(text)


def test_a_unique_bare_name_resolves(registry: Registry) -> None:
    assert registry.resolve("pdf-processing").key == SkillKey(
        "acme", "skill://pdf-processing/SKILL.md"
    )


@pytest.mark.threat("T3")
def test_a_bare_name_shared_with_a_local_skill_is_ambiguous_not_shadowed(
    registry: Registry,
) -> None:
    with pytest.raises(AmbiguousName) as info:
        registry.resolve("git-workflow")
    assert info.value.candidates == ("acme:git-workflow", "project:git-workflow")
    assert registry.resolve("project:git-workflow").origin == PROJECT
    assert registry.resolve("acme:git-workflow").origin == ACME


@pytest.mark.threat("T3")
def test_duplicate_names_in_one_listing_are_told_apart_by_path(registry: Registry) -> None:
    with pytest.raises(AmbiguousName) as info:
        registry.resolve("acme:refunds")
    assert info.value.candidates == ("acme:acme/billing/refunds", "acme:acme/support/refunds")
    record = registry.resolve("acme:acme/support/refunds")
    assert record.key.locator == "skill://acme/support/refunds/SKILL.md"
    assert registry.qualified_ref(record) == "acme:acme/support/refunds"


def test_a_uri_resolves_only_within_its_origin(registry: Registry) -> None:
    uri = "skill://pdf-processing/SKILL.md"
    assert registry.resolve(f"acme:{uri}").origin == ACME
    with pytest.raises(SkillNotFound):
        registry.resolve(f"docs:{uri}")


def test_unknown_labels_and_names_are_typed_errors(registry: Registry) -> None:
    with pytest.raises(UnknownServer):
        registry.resolve("nobody:refunds")
    with pytest.raises(SkillNotFound):
        registry.resolve("no-such-skill")


@pytest.mark.threat("T3")
def test_display_refs_are_bare_only_when_unambiguous(registry: Registry) -> None:
    refs = {registry.display_ref(r) for r in registry.records()}
    assert "pdf-processing" in refs
    assert "git-workflow" not in refs
    assert {"acme:git-workflow", "project:git-workflow"} <= refs
    assert {"acme:acme/billing/refunds", "acme:acme/support/refunds"} <= refs


@pytest.mark.threat("T3")
def test_a_display_ref_follows_the_names_other_origins_bring_and_take_away(
    registry: Registry,
) -> None:
    (pdf,) = [r for r in registry.records() if r.name == "pdf-processing"]
    assert registry.display_ref(pdf) == "pdf-processing"
    registry.set_origin(DOCS, [mcp_record(DOCS, "pdf-processing")])
    assert registry.display_ref(pdf) == "acme:pdf-processing"
    registry.remove_origin("docs")
    assert registry.display_ref(pdf) == "pdf-processing"


_AUTHORITY = st.from_regex(r"[A-Za-z0-9._~!$&'()*+,;=-]{1,6}", fullmatch=True)
_SEGMENT = st.from_regex(r"[A-Za-z0-9._~!$&'()*+,;=:@-]{1,6}|%E2%82%AC", fullmatch=True)


@pytest.mark.threat("T3")
@given(
    st.from_regex(r"[a-z][a-z0-9+.-]{0,5}", fullmatch=True).filter(lambda s: s != "file"),
    st.lists(_AUTHORITY, max_size=1),
    st.lists(_SEGMENT, max_size=2),
    st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True),
)
def test_a_records_path_is_its_entrys_skill_path(
    scheme: str, authority: list[str], segments: list[str], name: str
) -> None:
    # The record reads it off the URI's text; the entry, off the parsed URI.
    prefix = [*authority, *segments] if authority else []
    assume(not {".", ".."} & set(prefix))
    uri = f"{scheme}://{'/'.join([*prefix, name])}/SKILL.md"
    entry = parse_entry(
        {
            "uri": uri,
            "frontmatter": {"name": name, "description": "d"},
            "resources": [{"uri": uri, "digest": DIGEST, "size": 1}],
        }
    )
    assert SkillRecord.from_entry(ACME, entry).path == entry.root.skill_path


@pytest.mark.threat("T3")
def test_collisions_report_shared_names_and_folded_look_alikes(registry: Registry) -> None:
    registry.set_origin(
        PROJECT, [local_record(PROJECT, "git-workflow"), local_record(PROJECT, "team/notes")]
    )
    collisions = {(c.kind, c.subject): c for c in registry.collisions()}
    assert collisions["name", "git-workflow"].members == (
        "acme:git-workflow",
        "project:git-workflow",
    )
    assert collisions["name", "refunds"].members == (
        "acme:acme/billing/refunds",
        "acme:acme/support/refunds",
    )
    folded = collisions["folded", "team/notes"]
    assert set(folded.members) == {"docs:notes", "project:notes"}


@pytest.mark.threat("T4")
def test_a_server_reporting_another_origins_label_is_flagged(registry: Registry) -> None:
    imitation = [c for c in registry.collisions() if c.kind == "label-imitation"]
    assert len(imitation) == 1
    assert imitation[0].subject == "acme"
    assert imitation[0].members == ("docs",)
    with pytest.raises(SkillNotFound):
        registry.resolve("acme:style-guide")


@pytest.mark.threat("T3")
@pytest.mark.threat("T4")
def test_collisions_asked_for_again_follow_every_change_to_the_registry(
    registry: Registry,
) -> None:
    def kinds() -> set[tuple[str, str]]:
        # What an approval request is told, from the index, is what the list holds.
        for record in registry.records():
            naming = (registry.qualified_ref(record), record.origin.label)
            assert registry.collisions_naming(*naming) == tuple(
                c for c in registry.collisions() if any(m in c.members for m in naming)
            )
        return {(c.kind, c.subject) for c in registry.collisions()}

    before = kinds()
    assert ("name", "style-guide") not in before
    # A second server takes a skill's name between two approval requests.
    evil = Origin("mcp", "evil", "nobody")
    registry.set_origin(evil, [mcp_record(evil, "style-guide")])
    assert ("name", "style-guide") in kinds()
    # One skill added by itself (an unlisted one, looked up) is seen too.
    assert ("folded", "team/notes") not in before
    registry.put(mcp_record(evil, "TEAM/notes"))
    assert ("folded", "team/notes") in kinds()
    # A server now reporting another origin's label, with no skills at all.
    registry.set_origin(Origin("mcp", "mirror", "evil"), [])
    assert ("label-imitation", "evil") in kinds()
    registry.remove_origin("mirror")
    assert ("label-imitation", "evil") not in kinds()
    registry.remove_origin("evil")
    assert kinds() == before
    # What a caller does with the list it was given changes nothing kept.
    registry.collisions().clear()
    assert kinds() == before


def test_replacing_an_origin_drops_its_old_records(registry: Registry) -> None:
    registry.set_origin(DOCS, [])
    with pytest.raises(SkillNotFound):
        registry.resolve("style-guide")


def test_a_label_cannot_change_kind(registry: Registry) -> None:
    with pytest.raises(ConfigError):
        registry.set_origin(Origin("local", "acme"), [])


@given(st.text(max_size=80))
def test_any_reference_text_parses_or_is_a_usage_error(text: str) -> None:
    try:
        ref = parse_reference(text)
    except UsageError:
        return
    assert ref.kind in ("name", "path", "uri")
    assert ref.value
    if ref.label is not None:
        assert ref.label == normalise_label(text.partition(":")[0])


@pytest.mark.threat("T3")
def test_a_look_alike_collision_lists_every_origin_at_each_path(registry: Registry) -> None:
    other = Origin("mcp", "other")
    registry.set_origin(other, [mcp_record(other, "Team/notes")])
    registry.set_origin(PROJECT, [local_record(PROJECT, "team/notes")])
    folded = [c for c in registry.collisions() if c.kind == "folded"]
    assert len(folded) == 1
    assert set(folded[0].members) == {"docs:notes", "other:notes", "project:notes"}


def test_entries_that_differ_only_in_uri_scheme_each_get_a_ref_of_their_own() -> None:
    registry = Registry()
    skill = mcp_record(ACME, "acme/tools/lint")
    other_uri = "other://acme/tools/lint/SKILL.md"
    other = SkillRecord.from_entry(
        ACME,
        parse_entry(
            {
                "uri": other_uri,
                "frontmatter": {"name": "lint", "description": "the other scheme"},
                "resources": [{"uri": other_uri, "digest": DIGEST, "size": 1}],
            }
        ),
    )
    registry.set_origin(ACME, [skill, other])
    refs = [registry.display_ref(skill), registry.display_ref(other)]
    assert refs == ["acme:skill://acme/tools/lint/SKILL.md", "acme:" + other_uri]
    assert [registry.resolve(ref) for ref in refs] == [skill, other]


BRAVE = Origin("mcp", "brave-search", "Brave Search")


@pytest.mark.parametrize(
    "written", ["brave-search", "brave_search", "Brave Search", "BRAVE.SEARCH", "brave__search"]
)
def test_a_label_is_written_as_the_servers_file_spells_the_name(
    registry: Registry, written: str
) -> None:
    registry.set_origin(BRAVE, [mcp_record(BRAVE, "deploy")])
    assert parse_reference(f"{written}:deploy").label == "brave-search"
    assert registry.resolve(f"{written}:deploy").origin == BRAVE
    assert parse_reference(f"{written}:skill://deploy/SKILL.md").names(
        "brave-search", "skill://deploy/SKILL.md"
    )


def test_an_unknown_label_names_the_nearest_known_one(registry: Registry) -> None:
    registry.set_origin(BRAVE, [mcp_record(BRAVE, "deploy")])
    with pytest.raises(UnknownServer) as info:
        registry.resolve("brave_serch:deploy")
    assert "did you mean 'brave-search'?" in info.value.message
    assert info.value.hint is not None
    assert "acme, brave-search, docs, project" in info.value.hint
    with pytest.raises(UnknownServer) as far:
        registry.resolve("zzzzzz:deploy")
    assert "did you mean" not in far.value.message


def test_an_unknown_label_with_nothing_known_says_so() -> None:
    with pytest.raises(UnknownServer) as info:
        Registry().resolve("acme:refunds")
    assert "did you mean" not in info.value.message
    assert info.value.hint is not None
    assert "no server is connected" in info.value.hint


@pytest.mark.threat("T4")
def test_a_reported_name_spelled_like_a_label_never_resolves_to_its_server(
    registry: Registry,
) -> None:
    # 'docs' reports the name "acme"; 'imitator' reports one that normalises to "brave-search".
    imitator = Origin("mcp", "imitator", "Brave_Search")
    registry.set_origin(imitator, [mcp_record(imitator, "deploy")])
    with pytest.raises(SkillNotFound):
        registry.resolve("Acme:style-guide")
    with pytest.raises(UnknownServer) as info:
        registry.resolve("Brave_Search:deploy")
    assert "imitator" not in str(info.value)
    registry.set_origin(BRAVE, [mcp_record(BRAVE, "deploy")])
    assert registry.resolve("Brave_Search:deploy").origin == BRAVE


_NAME_CHARS = st.sampled_from("abAB01 _.-")


@pytest.mark.threat("T3", "T4")
@given(written=st.text(_NAME_CHARS, min_size=1, max_size=12))
def test_a_written_label_reaches_only_the_origin_labelled_its_normal_form(written: str) -> None:
    registry = Registry()
    labels = {"a", "b", "a-b", "ab", "a-b-0", "b1", "a0b"}
    for label in labels:
        origin = Origin("mcp", label)
        registry.set_origin(origin, [mcp_record(origin, "deploy")])
    try:
        expected = normalise_label(written)
    except ConfigError:
        with pytest.raises(UsageError):
            registry.resolve(f"{written}:deploy")
        return
    if expected in labels:
        assert registry.resolve(f"{written}:deploy").origin.label == expected
    else:
        with pytest.raises(UnknownServer):
            registry.resolve(f"{written}:deploy")


@given(st.from_regex(r"[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,4}", fullmatch=True))
def test_every_label_is_written_as_itself(label: str) -> None:
    # Normalising is the identity on labels, so no label is unreachable as written and a
    # written reference reaches at most one label (labels are unique, and compared exactly).
    assert normalise_label(label) == label
    assert parse_reference(f"{label}:deploy").label == label


PATHS = st.sampled_from(["a/refunds", "b/refunds", "a/deploy", "refunds", "c/a/deploy"])


@given(
    picks=st.lists(st.tuples(PATHS, st.booleans(), st.booleans()), max_size=8),
    before=st.lists(PATHS, max_size=3),
)
def test_setting_an_origin_holds_what_putting_its_records_in_turn_holds(
    picks: list[tuple[str, bool, bool]], before: list[str]
) -> None:
    # Records listed twice (the same object, or an equal one, listed or not) and an
    # origin replaced: set_origin is put of each in turn, after the origin is emptied.
    made: dict[str, SkillRecord] = {}
    records = []
    for path, again, listed in picks:
        fresh = mcp_record(ACME, path, listed=listed)
        records.append(made.setdefault(path, fresh) if again else fresh)
    batched, one_by_one = Registry(), Registry()
    for registry in (batched, one_by_one):
        registry.set_origin(ACME, [mcp_record(ACME, path) for path in before])
        registry.set_origin(DOCS, [mcp_record(DOCS, "a/refunds")])
    batched.set_origin(ACME, records)
    one_by_one.set_origin(ACME, [])
    for record in records:
        one_by_one.put(record)
    assert batched.records() == one_by_one.records()
    assert [batched.get(r.key) is one_by_one.get(r.key) for r in records] == [True] * len(records)
    assert batched._names == one_by_one._names
    assert batched.collisions() == one_by_one.collisions()


def test_setting_an_origin_refuses_a_record_of_an_origin_it_does_not_know() -> None:
    registry = Registry()
    with pytest.raises(UnknownServer):
        registry.set_origin(ACME, [mcp_record(DOCS, "a/refunds")])


@given(path=PATHS, listed=st.booleans())
def test_a_record_from_an_entry_is_the_one_its_constructor_makes(path: str, listed: bool) -> None:
    made = mcp_record(ACME, path, listed=listed)
    assert made.entry is not None
    built = SkillRecord(
        key=SkillKey(ACME.label, made.entry.uri),
        origin=ACME,
        name=made.entry.name,
        description=made.entry.description,
        path=path,
        entry=made.entry,
        listed=listed,
    )
    assert made == built
    assert repr(made) == repr(built)
    assert hash(made.key) == hash(built.key)
    assert [getattr(made, f.name) for f in dataclasses.fields(SkillRecord)] == [
        getattr(built, f.name) for f in dataclasses.fields(SkillRecord)
    ]
    assert [f.name for f in dataclasses.fields(SkillKey)] == ["origin", "locator"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "other"  # type: ignore[misc]


NESTED = st.sampled_from(["a", "a/b", "a/b/c", "a/bc", "ab", "b", "b/a", "a/b/c/d"])


def enclosing_by_definition(registry: Registry, record: SkillRecord) -> tuple[SkillKey, ...]:
    """Every skill of ``record``'s origin whose root holds its SKILL.md, over them all."""
    if record.entry is None:
        return ()
    return tuple(
        other.key
        for other in registry.records()
        if other.origin.label == record.origin.label
        and other.entry is not None
        and other.key != record.key
        and record.entry.skill_md.is_within(other.entry.root)
    )


@pytest.mark.threat("T15")
@given(
    acme=st.lists(NESTED, max_size=8, unique=True),
    docs=st.lists(NESTED, max_size=4, unique=True),
    dropped=st.lists(NESTED, max_size=3),
    added=st.lists(NESTED, max_size=3),
)
def test_the_skills_enclosing_one_are_found_from_the_index_as_by_definition(
    acme: list[str], docs: list[str], dropped: list[str], added: list[str]
) -> None:
    # Told to the person asked about a nested skill: none left out, none from elsewhere,
    # and still so after the registry changes (the index follows it, as does the order
    # of the records kept between changes).
    registry = Registry()
    registry.set_origin(ACME, [mcp_record(ACME, f"team/{path}") for path in acme])
    registry.set_origin(DOCS, [mcp_record(DOCS, f"team/{path}") for path in docs])
    registry.set_origin(PROJECT, [local_record(PROJECT, "team/a/b")])
    held = {("acme", path) for path in acme} | {("docs", path) for path in docs}
    held.add(("project", "a/b"))

    def check() -> None:
        listed = [(r.origin.label, r.path) for r in registry.records()]
        assert listed == sorted((label, f"team/{path}") for label, path in held)
        for record in registry.records():
            assert registry.enclosing(record) == enclosing_by_definition(registry, record)

    check()
    kept = [path for path in acme if path not in dropped]
    registry.set_origin(ACME, [mcp_record(ACME, f"team/{path}") for path in kept])
    held = {(label, path) for label, path in held if label != "acme" or path in kept}
    check()
    for path in added:
        registry.put(mcp_record(ACME, f"team/{path}"))
        held.add(("acme", path))
        check()
    registry.remove_origin("docs")
    held = {(label, path) for label, path in held if label != "docs"}
    check()


def test_a_name_resolves_from_the_index_within_the_label_it_is_qualified_with(
    registry: Registry,
) -> None:
    assert registry.resolve("project:git-workflow").origin.label == "project"
    assert registry.resolve("acme:git-workflow").origin.label == "acme"
    for ambiguous in ("git-workflow", "acme:refunds"):
        with pytest.raises(AmbiguousName):
            registry.resolve(ambiguous)
    with pytest.raises(SkillNotFound):
        registry.resolve("docs:refunds")
