"""The plain-entry path of a listing: whatever it accepts, the model accepts and builds an
equal entry from, and a listing's errors are the model's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from skillward.core._entries import (
    bare_frontmatter_fits,
    check_frontmatter_bounds,
    entry_rule,
    summarise,
)
from skillward.core._fields import json_size
from skillward.core.config import Limits
from skillward.core.errors import InvalidEntry, SkillTooLarge
from skillward.core.rules import RuleError
from skillward.core.wire import SkillEntry, parse_entry, plain_entry

DIGEST = "sha256:" + "0f" * 32


class Sneaky(str):
    """A string that is not one of JSON's own."""


class Counted(int):
    """An integer that is not one of JSON's own."""


def plain(name: str = "refunds", prefix: str = "acme/billing", files: int = 2) -> dict[str, Any]:
    root = f"skill://{prefix}/{name}"
    resources = [{"uri": f"{root}/SKILL.md", "digest": DIGEST, "size": 10}]
    resources += [{"uri": f"{root}/f{i}.md", "digest": DIGEST, "size": i} for i in range(files)]
    return {
        "uri": f"{root}/SKILL.md",
        "frontmatter": {"name": name, "description": "Process refunds"},
        "resources": resources,
    }


NAMES = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True)
#: Path text a hostile server would try: dot segments, encodings, separators, Unicode.
TRICKS = st.sampled_from(
    [
        "..",
        ".",
        "%2e",
        "%2E",
        "%2e%2e",
        "%2F",
        "%41",
        "a%2fb",
        "\\",
        "a\\b",
        "",
        "//",
        "\u0430",  # Cyrillic a
        "\u212a",  # Kelvin sign
        "ﬁ",
        "e\u0301",
        "\x00",
        " ",
        "?q",
        "#f",
        "@",
        ":80",
        "SKILL.md",
        "skill.md",
    ]
)
SIZES = st.one_of(
    st.integers(min_value=-2, max_value=2**25),
    st.sampled_from([0, 16 * 1024 * 1024, 16 * 1024 * 1024 + 1, True, False, 1.0, 2.5, None]),
    st.builds(Counted, st.integers(0, 10)),
)
DIGESTS = st.sampled_from(
    [
        DIGEST,
        DIGEST.upper(),
        DIGEST + "\n",
        DIGEST[:-1],
        "sha256:" + "g" * 64,
        "SHA256:" + "0f" * 32,
        Sneaky(DIGEST),
        None,
        7,
    ]
)
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.builds(Sneaky, st.text(max_size=4)),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
EXTRA_KEYS = st.sampled_from(
    ["license", "metadata", "schema", "model_config", "__dict__", "fields", "_meta", 3, Sneaky("x")]
)


@st.composite
def hostile(draw: st.DrawFn) -> Any:
    """A plain entry, then a few of the things a hostile server would change in it."""
    name = draw(NAMES)
    data = plain(
        name, draw(st.sampled_from(["acme", "acme/billing", "a/b/c"])), draw(st.integers(0, 3))
    )
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.integers(0, 10))
        files = data["resources"]
        fm = data["frontmatter"]
        if kind == 0:  # a trick in the entry's URI
            at = draw(st.integers(0, len(data["uri"])))
            data["uri"] = data["uri"][:at] + draw(TRICKS) + data["uri"][at:]
        elif kind == 1 and files:  # a trick in a file's URI
            file = draw(st.sampled_from(files))
            at = draw(st.integers(0, len(file["uri"])))
            file["uri"] = file["uri"][:at] + draw(TRICKS) + file["uri"][at:]
        elif kind == 2:  # an uppercase scheme, or a file: URI
            scheme = draw(st.sampled_from(["SKILL", "Skill", "file", "FILE", "skill+x"]))
            data["uri"] = scheme + data["uri"].partition(":")[2]
        elif kind == 3 and files:  # a URI listed twice
            files.append(dict(draw(st.sampled_from(files))))
        elif kind == 4 and files:
            draw(st.sampled_from(files))["size"] = draw(SIZES)
        elif kind == 5 and files:
            draw(st.sampled_from(files))["digest"] = draw(DIGESTS)
        elif kind == 6:  # the name, changed or of another type
            fm["name"] = draw(st.one_of(NAMES, st.text(max_size=70), st.builds(Sneaky, NAMES)))
        elif kind == 7:
            length = draw(st.sampled_from([0, 1, 1024, 1025]))
            fm["description"] = draw(st.sampled_from(["d" * length, Sneaky("d"), 5, None]))
        elif kind == 8:  # unknown frontmatter keys, of any value
            fm[draw(EXTRA_KEYS)] = draw(VALUES)
        elif kind == 9:  # the SKILL.md left out of the manifest
            data["resources"] = [f for f in files if f["uri"] != data["uri"]]
        elif kind == 10 and files:  # an unknown field in a file
            draw(st.sampled_from(files))[draw(st.sampled_from(["etag", "_meta"]))] = 1
    # Last, perhaps: something of another shape than the wire's.
    shape = draw(st.integers(0, 12))
    if shape == 0:
        data["resources"] = draw(
            st.sampled_from(["dynamic", Sneaky("dynamic"), "Dynamic", None, {}])
        )
    elif shape == 1:
        data["resources"] = tuple(data["resources"])
    elif shape == 2 and data["resources"]:  # a file given as something other than an object
        at = draw(st.integers(0, len(data["resources"]) - 1))
        data["resources"][at] = draw(st.sampled_from([None, "x", []]))
    elif shape == 3:  # the URI of another type
        data["uri"] = draw(st.sampled_from([Sneaky(data["uri"]), None, 5]))
    elif shape == 4:
        data.pop(draw(st.sampled_from(["uri", "frontmatter", "resources"])))
    elif shape == 5:
        return draw(st.sampled_from([None, [data], "entry"]))
    return data


LIMITS = st.sampled_from(
    [
        Limits(),
        Limits(max_frontmatter_bytes=64),
        Limits(max_frontmatter_nodes=4),
        Limits(max_frontmatter_nodes=5),
        Limits(max_frontmatter_depth=1),
        Limits(max_skill_files=512, max_skill_bytes=16 * 1024 * 1024),
    ]
)


def model_only(data: Any, limits: Limits) -> SkillEntry:
    return SkillEntry.model_validate(data, context={"limits": limits})


@pytest.mark.threat("T10", "T11")
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(data=hostile(), limits=LIMITS)
def test_what_the_plain_path_accepts_the_model_accepts_and_builds_the_same(
    data: Any, limits: Limits
) -> None:
    fast = plain_entry(data, limits)
    if fast is None:
        return
    model = model_only(data, limits)  # raises if the plain path accepted too much
    assert fast == model
    assert model == fast
    assert repr(fast) == repr(model)
    assert fast.model_dump_json() == model.model_dump_json()
    assert fast.model_fields_set == model.model_fields_set
    assert fast.frontmatter.model_fields_set == model.frontmatter.model_fields_set
    assert fast.frontmatter.as_dict() == model.frontmatter.as_dict()
    assert fast.resources == model.resources
    assert fast.manifest == model.manifest
    assert fast.content_hash == model.content_hash
    assert fast.frontmatter_digests == model.frontmatter_digests
    assert fast.root == model.root
    assert fast.skill_md == model.skill_md


@pytest.mark.threat("T10", "T11")
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=hostile(), limits=LIMITS)
def test_a_listing_refuses_an_entry_with_the_models_error_naming_the_server_and_uri(
    data: Any, limits: Limits
) -> None:
    try:
        expected: SkillEntry | InvalidEntry | SkillTooLarge = model_only(data, limits)
    except SkillTooLarge as too_large:
        expected = too_large
    except ValidationError as invalid:
        expected = InvalidEntry(summarise(invalid, "invalid skill entry"), rule=entry_rule(invalid))
    uri = data.get("uri") if isinstance(data, dict) else None
    shown = uri[:300] if isinstance(uri, str) else None
    if isinstance(expected, SkillEntry):
        assert parse_entry(data, server="acme", limits=limits) == expected
        return
    with pytest.raises(type(expected)) as refused:
        parse_entry(data, server="acme", limits=limits)
    error = refused.value
    assert (error.server, error.uri, error.rule) == ("acme", shown, expected.rule)
    assert error.message == expected.message or isinstance(error, SkillTooLarge)


@given(name=NAMES, files=st.integers(0, 40))
def test_a_plain_listing_entry_takes_the_plain_path(name: str, files: int) -> None:
    assert plain_entry(plain(name, files=files), Limits()) is not None


def test_an_entry_at_every_limit_takes_the_plain_path_and_one_past_it_the_model() -> None:
    limits = Limits()
    at = plain(files=limits.max_skill_files - 1)
    at["resources"][0]["size"] = limits.max_skill_bytes - sum(range(limits.max_skill_files - 1))
    assert plain_entry(at, limits) == model_only(at, limits)
    past = plain(files=limits.max_skill_files - 1)
    past["resources"][0]["size"] = limits.max_skill_bytes
    assert plain_entry(past, limits) is None
    with pytest.raises(SkillTooLarge):
        parse_entry(past, server="acme", limits=limits)
    many = plain(files=limits.max_skill_files)
    assert plain_entry(many, limits) is None
    with pytest.raises(SkillTooLarge):
        parse_entry(many, server="acme", limits=limits)


def test_a_frontmatter_past_its_caps_is_refused_though_everything_else_is_plain() -> None:
    data = plain()
    data["frontmatter"]["notes"] = "x" * 70_000
    assert plain_entry(data, Limits()) is None
    with pytest.raises(InvalidEntry) as refused:
        parse_entry(data, server="acme")
    assert refused.value.rule == "SW-LIM-003"


def test_an_entry_built_on_the_plain_path_stays_frozen_and_its_field_set_shared_unchanged() -> None:
    first = plain_entry(plain("one"), Limits())
    second = plain_entry(plain("two"), Limits())
    assert first is not None
    assert second is not None
    with pytest.raises(ValidationError):
        first.uri = "skill://x/SKILL.md"  # type: ignore[misc]
    copied = first.model_copy(update={"uri": "skill://acme/billing/one/SKILL.md"})
    assert copied.model_fields_set == second.model_fields_set == {"uri", "frontmatter", "resources"}


def _file(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data["resources"][1].update(changes)
    return data


def _frontmatter(data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data["frontmatter"].update(changes)
    return data


#: One change each to a plain entry, each a thing the model does not take as it is.
REFUSED = {
    "a size given as a boolean": lambda d: _file(d, size=True),
    "a size given as a float": lambda d: _file(d, size=1.0),
    "a size of an int subclass": lambda d: _file(d, size=Counted(1)),
    "a negative size": lambda d: _file(d, size=-1),
    "a digest in uppercase": lambda d: _file(d, digest=DIGEST.upper()),
    "a digest with a newline": lambda d: _file(d, digest=DIGEST + "\n"),
    "a digest of a str subclass": lambda d: _file(d, digest=Sneaky(DIGEST)),
    "a file URI of a str subclass": lambda d: _file(d, uri=Sneaky(d["resources"][1]["uri"])),
    "a file above the root": lambda d: _file(d, uri="skill://acme/billing/refunds/../x.md"),
    "an encoded dot": lambda d: _file(d, uri="skill://acme/billing/refunds/%2e%2e/x.md"),
    "a backslash": lambda d: _file(d, uri="skill://acme/billing/refunds/a\\..\\x.md"),
    "a file of another skill": lambda d: _file(d, uri="skill://acme/billing/other/x.md"),
    "a file URI past the length a URI may have": lambda d: _file(
        d, uri="skill://acme/billing/refunds/" + "x" * 2048
    ),
    "a file the root's name continues": lambda d: _file(d, uri="skill://acme/billing/refundsx.md"),
    "a file listed twice": lambda d: _file(d, uri=d["uri"]),
    "an uppercase scheme": lambda d: {**d, "uri": "SKILL" + d["uri"][5:]},
    "a Cyrillic letter in the name": lambda d: _frontmatter(d, name="r\u0435funds"),
    "a name of a str subclass": lambda d: _frontmatter(d, name=Sneaky("refunds")),
    "a description too long": lambda d: _frontmatter(d, description="d" * 1025),
    "a frontmatter key not a string": lambda d: {**d, "frontmatter": {**d["frontmatter"], 1: "x"}},
    "resources as a str subclass": lambda d: {**d, "resources": Sneaky("dynamic")},
}


@pytest.mark.threat("T10", "T11")
@pytest.mark.parametrize("change", REFUSED.values(), ids=REFUSED.keys())
def test_a_hostile_change_to_a_plain_entry_leaves_it_to_the_model(change: Any) -> None:
    data = change(plain())
    assert plain_entry(data, Limits()) is None


#: Bounds around the bare frontmatter's own counts (5 values, 1 level, 28 bytes and the
#: strings' lengths), as a policy may set them: integers or floats, each positive.
BOUNDS = st.one_of(
    st.integers(min_value=1, max_value=80),
    st.floats(min_value=0.5, max_value=80, allow_nan=False),
    st.integers(min_value=1, max_value=10**6),
)


@pytest.mark.threat("T11")
@given(
    name=st.text(max_size=40),
    description=st.text(max_size=60),
    size=BOUNDS,
    depth=BOUNDS,
    nodes=BOUNDS,
)
def test_a_bare_frontmatter_is_bounded_as_the_walk_bounds_it(
    name: str, description: str, size: float, depth: float, nodes: float
) -> None:
    limits = Limits(
        max_frontmatter_bytes=size,  # type: ignore[arg-type]
        max_frontmatter_depth=depth,  # type: ignore[arg-type]
        max_frontmatter_nodes=nodes,  # type: ignore[arg-type]
    )
    frontmatter = {"name": name, "description": description}
    # The walk itself, which check_frontmatter_bounds skips for this shape.
    try:
        size = json_size(
            frontmatter,
            limit=limits.max_frontmatter_bytes,
            max_depth=limits.max_frontmatter_depth,
            max_nodes=limits.max_frontmatter_nodes,
        )
    except ValueError:
        walked = False
    else:
        walked = size <= limits.max_frontmatter_bytes
    assert bare_frontmatter_fits(name, description, limits) is walked
    try:
        check_frontmatter_bounds(frontmatter, limits)
    except RuleError:
        checked = False
    else:
        checked = True
    assert checked is walked
