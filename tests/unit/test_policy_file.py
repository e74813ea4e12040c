"""The policy file format: one schema, lenient where safe, strictest where a value is bad."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillward.core.config import SEP_MAX_SKILL_BYTES
from skillward.trust._patterns import ServerPattern
from skillward.trust._policyfile import (
    TABLES,
    PolicyFile,
    parse_policy,
    parse_policy_data,
    policy_keys,
    policy_schema,
)

REPO = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "ab" * 32


def texts(patterns: tuple[ServerPattern, ...] | None) -> tuple[str, ...]:
    """Server patterns as written."""
    assert patterns is not None
    return tuple(pattern.text for pattern in patterns)


def parse(text: str) -> tuple[PolicyFile, list[str]]:
    parsed = parse_policy(text, "policy.toml")
    assert parsed.document is not None, parsed.problems
    return parsed.document, [str(p) for p in parsed.problems]


def test_the_issue_example_reads_cleanly() -> None:
    document, problems = parse(
        f"""
version = 1
contact = "IT help desk, #it-help"

[servers]
allow = ["acme", "https://skills.example.com/mcp"]
deny  = ["evil", "npx *"]

[skills]
allow = ["skill://acme/**"]
deny  = ["skill://*/experimental/**"]
deny_digests = ["{DIGEST}"]
dynamic = "deny"

[approvals]
persist = "remember"
max_age_days = 90

[grants]
allowed_tools = "prompt"
execution     = "prompt"
cross_origin  = "never"

[limits]
max_skill_bytes = 16777216
cache_budget_mib = 256
cache = "on"

[keyring]
require_recommended = true

[[pins]]
server = "acme"
skill  = "skill://acme/billing/refunds/SKILL.md"
content = "{DIGEST}"
grant_tools = false
"""
    )
    assert problems == []
    assert texts(document.servers.deny) == ("evil", "npx *")
    assert document.skills.deny_digests == (DIGEST,)
    assert document.grants.cross_origin == "never"
    assert document.pins[0].skill == "skill://acme/billing/refunds/SKILL.md"


@pytest.mark.threat("T41")
def test_unknown_keys_are_warnings_naming_the_file_and_line() -> None:
    document, problems = parse(
        'version = 1\nalow = ["x"]\n\n[servers]\nallow = ["acme"]\ndenny = ["evil"]\n'
    )
    assert problems == [
        "policy.toml:2: unknown key 'alow' is ignored",
        "policy.toml:6: unknown key 'servers.denny' is ignored",
    ]
    assert texts(document.servers.allow) == ("acme",)


@pytest.mark.threat("T41")
def test_a_malformed_allow_entry_is_dropped_while_the_rest_applies() -> None:
    document, problems = parse(
        'version = 1\n[servers]\nallow = [\n  "acme",\n  42,\n  "npx *",\n]\n'
        '[skills]\nallow = [7, "skill://acme/**"]\n'
    )
    assert texts(document.servers.allow) == ("acme", "npx *")
    assert document.skills.allow == ("skill://acme/**",)
    assert problems[0].startswith("policy.toml:5: servers.allow: entry 2 (42) is dropped")
    assert problems[1].startswith("policy.toml:9: skills.allow: entry 1 (7) is dropped")


@pytest.mark.threat("T41")
def test_a_malformed_deny_entry_denies_everything_its_list_covers_and_says_so() -> None:
    # Dropped, the entry would deny less than the administrator wrote: fail closed.
    document, problems = parse(
        'version = 1\n[servers]\ndeny = [\n  "evil",\n  42,\n  "npx *",\n]\n'
        '[skills]\ndeny = ["skill://*/beta/**"]\ndeny_digests = ["sha256:short", "'
        + DIGEST
        + '"]\n'
    )
    assert texts(document.servers.deny) == ("evil", "npx *", "*")
    assert document.skills.deny == ("skill://*/beta/**", "**")
    assert document.skills.deny_digests == (DIGEST,)
    assert problems == [
        "policy.toml:5: servers.deny: entry 2 (42) is not valid (value error, expected a "
        "string of 1 to 2048 characters); every server is denied",
        "policy.toml:10: skills.deny_digests: entry 1 ('sha256:short') is not valid (string "
        "should match pattern '^sha256:[0-9a-f]{64}$'); every skill is denied",
    ]


@pytest.mark.threat("T41")
def test_one_word_that_names_only_a_bare_command_is_kept_and_says_what_else_to_write() -> None:
    document, problems = parse(
        'version = 1\n[servers]\ndeny = ["brave_search", "evil.example", "stdio:tool", '
        '"npx *", "acme", "/opt/bin/evil"]\n'
    )
    assert texts(document.servers.deny) == (
        "brave_search",
        "evil.example",
        "stdio:tool",
        "npx *",
        "acme",
        "/opt/bin/evil",
    )
    assert [p.split(": ", 2)[1] for p in problems] == [
        "servers.deny",
        "servers.deny",
        "servers.deny",
    ]
    brave, host, path = problems
    assert brave.startswith("policy.toml:3: servers.deny: entry 1 ('brave_search') names only")
    assert "the label 'brave-search'" in brave
    assert "'stdio:brave_search' as it is" in brave
    assert "'https://evil.example' for a server on that host" in host
    assert "entry 6" in path
    assert "label" not in path
    assert "'/opt/bin/evil *' for that command with arguments" in path


@pytest.mark.threat("T41")
@pytest.mark.parametrize(
    "written",
    ["SHA256:" + "AB" * 32, "sha256:" + "AB" * 32, "SHA256:" + "ab" * 32, "ab" * 32, "AB" * 32],
)
def test_a_digest_written_as_hashing_tools_print_it_is_read_as_the_listing_form(
    written: str,
) -> None:
    document, problems = parse(
        f'version = 1\n[skills]\ndeny_digests = ["{written}"]\n'
        f'[[pins]]\nserver = "acme"\nskill = "skill://acme/x/SKILL.md"\ncontent = "{written}"\n'
    )
    assert problems == []
    assert document.skills.deny_digests == (DIGEST,)
    assert document.skills.deny == ()
    assert document.pins[0].content == DIGEST


@pytest.mark.threat("T41")
@given(st.text(max_size=80))
def test_a_deny_digest_is_read_as_written_or_denies_every_skill(written: str) -> None:
    parsed = parse_policy_data({"version": 1, "skills": {"deny_digests": [written]}}, "p.toml")
    assert parsed.document is not None
    skills = parsed.document.skills
    if skills.deny_digests:
        (digest,) = skills.deny_digests
        assert digest == "sha256:" + written.lower().removeprefix("sha256:")
        assert skills.deny == ()
    else:
        assert skills.deny == ("**",)
        assert "every skill is denied" in str(parsed.problems[0])


def test_each_dropped_entry_names_its_own_line_whatever_the_layout() -> None:
    _, problems = parse(
        'version = 1\n[servers]\ndeny = [\n  "evil", # a "quoted" comment, 42\n'
        '  """two\nlines""", [1,\n  2],\n  "\\u0041", 7, { a = "]" },\n]\n'
    )
    assert [p.split(":")[1] for p in problems] == ["5", "6", "8", "8"]


@pytest.mark.threat("T41")
@pytest.mark.parametrize(
    ("table", "key", "bad", "strictest"),
    [
        ("skills", "dynamic", '"maybe"', "deny"),
        ("approvals", "persist", '"forever"', "once"),
        ("approvals", "max_age_days", "-1", 0),
        ("grants", "allowed_tools", '"yes"', "never"),
        ("grants", "execution", "true", "never"),
        ("grants", "cross_origin", '"Prompt"', "never"),
        ("limits", "max_skill_bytes", "1024", SEP_MAX_SKILL_BYTES),
        ("limits", "cache_budget_mib", '"lots"', 0),
        ("limits", "cache", '"sometimes"', "off"),
        ("keyring", "require_recommended", '"no"', True),
        ("servers", "allow", '"acme"', ()),
        ("skills", "allow", "7", ()),
    ],
)
def test_a_bad_restricting_value_resolves_to_its_strictest_and_says_so(
    table: str, key: str, bad: str, strictest: object
) -> None:
    document, problems = parse(f"version = 1\n[{table}]\n{key} = {bad}\n")
    assert getattr(getattr(document, table), key) == strictest
    assert len(problems) == 1
    assert problems[0].startswith(f"policy.toml:3: {table}.{key} = ")
    assert "is not valid" in problems[0]


@pytest.mark.threat("T41")
def test_a_deny_list_that_is_not_a_list_denies_everything() -> None:
    document, problems = parse(
        'version = 1\n[servers]\ndeny = "evil"\n[skills]\ndeny_digests = "x"\n'
    )
    assert texts(document.servers.deny) == ("*",)
    assert document.skills.deny == ("**",)
    assert "every server is denied" in problems[0]
    assert "every skill is denied" in problems[1]


@pytest.mark.threat("T41")
def test_a_table_that_is_not_a_table_puts_its_keys_at_their_strictest() -> None:
    document, problems = parse('version = 1\ngrants = "none"\n')
    assert document.grants.model_dump() == {
        "allowed_tools": "never",
        "execution": "never",
        "cross_origin": "never",
    }
    assert problems == [
        "policy.toml:2: [grants] is not a table; each of its restricting keys is at its strictest"
    ]


@pytest.mark.threat("T41")
@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("version = 1\n[servers]\nallow = [acme]\ndeny = []\n", 3),
        ('version = 1\n[servers]\nallow = ["acme"\n', 3),
    ],
)
def test_text_that_is_not_toml_is_fatal_and_names_the_line(text: str, line: int) -> None:
    parsed = parse_policy(text, "p.toml")
    assert parsed.document is None
    fatal = parsed.fatal
    assert fatal is not None
    assert fatal.line == line
    assert "not valid TOML" in fatal.message


@pytest.mark.threat("T41")
@pytest.mark.parametrize("version", ["2", '"1"', "1.0"])
def test_a_version_this_code_does_not_read_is_fatal(version: str) -> None:
    parsed = parse_policy(f"version = {version}\n", "p.toml")
    assert parsed.document is None
    assert parsed.fatal is not None
    assert parsed.fatal.line == 1


def test_a_missing_version_is_read_as_version_one_with_a_warning() -> None:
    document, problems = parse('[servers]\ndeny = ["evil"]\n')
    assert texts(document.servers.deny) == ("evil",)
    assert problems == ["policy.toml:1: version is not set; read as version 1"]


@pytest.mark.threat("T42")
def test_a_bad_pin_is_dropped_and_good_pins_stay() -> None:
    document, problems = parse(
        f"""version = 1
[[pins]]
server = "acme"
skill = "skill://acme/refunds/SKILL.md"
content = "{DIGEST}"

[[pins]]
server = "acme"
skill = "skill://acme/refunds"
content = "{DIGEST}"

[[pins]]
server = "acme"
skill = "skill://acme/other/SKILL.md"
content = "sha256:nothex"
colour = "red"
"""
    )
    assert [p.skill for p in document.pins] == ["skill://acme/refunds/SKILL.md"]
    assert problems[0].startswith("policy.toml:7: pin 2 is dropped: skill")
    assert problems[1] == "policy.toml:16: unknown key 'pins.2.colour' is ignored"
    assert problems[2].startswith("policy.toml:12: pin 3 is dropped: content")


def test_values_with_control_characters_are_never_kept_nor_shown() -> None:
    document, problems = parse('version = 1\n[servers]\nallow = ["ev\\u001bil", "ok"]\n')
    assert texts(document.servers.allow) == ("ok",)
    assert "\x1b" not in problems[0]
    document, problems = parse('version = 1\n[servers]\ndeny = ["ev\\u001bil", "ok"]\n')
    assert texts(document.servers.deny) == ("ok", "*")
    assert "\x1b" not in problems[0]


def test_every_key_has_a_strictest_setting_and_a_place_in_the_schema() -> None:
    schema = policy_schema()
    assert "null" not in json.dumps(schema)
    for key in policy_keys():
        table, name = key.split(".")
        assert name in schema["$defs"][TABLES[table].__name__]["properties"]
    strictest = {
        f"{table}.{name}": parse_policy_data({"version": 1, table: {name: object()}}, "x")
        for table, model in TABLES.items()
        for name in model.model_fields
    }
    for key, parsed in strictest.items():
        assert parsed.problems, key
        assert "is not valid" in parsed.problems[0].message, key


@pytest.mark.parametrize("name", ["default.toml", "strict.toml", "fleet-pinned.toml"])
def test_every_bundled_policy_reads_without_a_problem_and_fits_the_schema(name: str) -> None:
    text = (REPO / "policies" / name).read_text(encoding="utf-8")
    parsed = parse_policy(text, name)
    assert parsed.document is not None
    assert parsed.problems == ()
    jsonschema.validate(tomllib.loads(text), policy_schema())


# --- properties ------------------------------------------------------------------------------

_KEYS = st.sampled_from(
    [
        "version",
        "contact",
        "servers",
        "skills",
        "pins",
        "allow",
        "deny",
        "deny_digests",
        "dynamic",
        "persist",
        "max_age_days",
        "grants",
        "limits",
        "cache",
        "x",
    ]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(["deny", "prompt", "never", "once", "off", "skill://a/**", DIGEST, "*"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300)
@given(st.dictionaries(_KEYS | st.sampled_from(list(TABLES)), _VALUES, max_size=8))
def test_no_decoded_data_crashes_the_reader(data: dict[str, Any]) -> None:
    parsed = parse_policy_data(data, "fuzz")
    assert parsed.document is not None or parsed.fatal is not None


@settings(max_examples=300)
@given(st.text(max_size=400))
def test_no_text_crashes_the_reader(text: str) -> None:
    parsed = parse_policy(text, "fuzz")
    assert parsed.document is not None or parsed.fatal is not None


def test_deeply_nested_text_is_fatal_not_a_crash() -> None:
    parsed = parse_policy("x = " + "[" * 100_000, "deep.toml")
    assert parsed.document is None
    assert parsed.fatal is not None
