"""SKILL.md frontmatter: YAML 1.2 core semantics, hostile input, and comparison."""

from __future__ import annotations

import contextlib
import tracemalloc

import anyio
import anyio.to_thread
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skillward.core.config import Limits
from skillward.core.errors import FrontmatterError, FrontmatterMismatch
from skillward.core.frontmatter import (
    JsonValue,
    _build_events,
    _build_simple,
    _split,
    check_frontmatter,
    diff_frontmatter,
    json_equal,
    key_lines,
    parse_skill_md,
)
from tests.support.hostile_yaml import HOSTILE

pytestmark = pytest.mark.threat("T12")


def md(block: str, body: str = "# Body\n") -> bytes:
    return f"---\n{block}---\n{body}".encode()


def test_minimal_skill_md_parses_into_frontmatter_and_body() -> None:
    doc = parse_skill_md(md("name: pdf\ndescription: Work with PDFs\n"))
    assert doc.frontmatter == {"name": "pdf", "description": "Work with PDFs"}
    assert doc.body == "# Body\n"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", "yes"),
        ("no", "no"),
        ("on", "on"),
        ("y", "y"),
        ("2001-12-14", "2001-12-14"),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("true", True),
        ("False", False),
        ("TRUE", True),
        ("null", None),
        ("~", None),
        ("", None),
        ("42", 42),
        ("-7", -7),
        ("+12", 12),
        ("012", 12),
        ("0o17", 15),
        ("0x1F", 31),
        ("1.5", 1.5),
        ("-.5e3", -500.0),
        ("1_000", "1_000"),
        ("0b101", "0b101"),
        ("1:20", "1:20"),
        ("'42'", "42"),
        ('"true"', "true"),
        ("1.0.0", "1.0.0"),
    ],
)
def test_plain_scalars_resolve_by_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    doc = parse_skill_md(md(f"name: x\nv: {text}\n"))
    assert doc.frontmatter["v"] == value
    assert type(doc.frontmatter["v"]) is type(value)


def test_block_and_quoted_scalars_stay_strings() -> None:
    doc = parse_skill_md(md("a: |\n  true\n  12\nb: >-\n  null\nc: 'yes'\n"))
    assert doc.frontmatter == {"a": "true\n12\n", "b": "null", "c": "yes"}


def test_nested_metadata_and_lists_become_json() -> None:
    doc = parse_skill_md(md("metadata:\n  author: me\n  version: '1.0'\nlist: [1, a, {b: c}]\n"))
    assert doc.frontmatter == {
        "metadata": {"author": "me", "version": "1.0"},
        "list": [1, "a", {"b": "c"}],
    }


def test_bom_and_crlf_are_accepted() -> None:
    doc = parse_skill_md(b"\xef\xbb\xbf---\r\nname: x\r\ndescription: d\r\n---\r\nbody\r\n")
    assert doc.frontmatter == {"name": "x", "description": "d"}
    assert doc.body == "body\r\n"


def test_closing_delimiter_at_end_of_file_without_newline() -> None:
    assert parse_skill_md(b"---\nname: x\n---").body == ""


def test_dashes_inside_a_value_do_not_close_the_block() -> None:
    doc = parse_skill_md(md("description: before --- after\nnote: |\n  ---\n  still text\n"))
    assert doc.frontmatter["description"] == "before --- after"
    assert doc.frontmatter["note"] == "---\nstill text\n"


def test_body_may_contain_further_delimiter_lines() -> None:
    doc = parse_skill_md(md("name: x\n", body="text\n---\nmore\n"))
    assert doc.body == "text\n---\nmore\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"name: x\n", "must begin"),
        (b"--- \nname: x\n---\n", "must begin"),
        (b"----\nname: x\n---\n", "must begin"),
        (b"\n---\nname: x\n---\n", "must begin"),
        (b"---\nname: x\n", "no closing"),
        (b"---\nname: x ---\n", "no closing"),
        (b"---\nname: x\n---trailing\n", "no closing"),
        (b"---\nname: x\n ---\n", "no closing"),
        (b"---\n---\n", "empty"),
        (b"---\n- a\n- b\n---\n", "mapping"),
        (b"---\njust a string\n---\n", "mapping"),
        (b"---\na: 1\na: 2\n---\n", "duplicate key"),
        (b"---\na: 1\n'a': 2\n---\n", "duplicate key"),
        (b"---\n1: one\n---\n", "keys must be strings"),
        (b"---\ntrue: yes\n---\n", "keys must be strings"),
        (b"---\n? [a]\n: b\n---\n", "keys must be strings"),
        (b"---\nnull: x\n---\n", "keys must be strings"),
        (b"---\na: &x 1\n---\n", "anchors"),
        (b"---\na: !!str 1\n---\n", "tags"),
        (b"---\na: !custom 1\n---\n", "tags"),
        (b"---\na: ! 1\n---\n", "tags"),
        (b"---\n!!map {a: 1}\n---\n", "tags"),
        (b"---\na: .nan\n---\n", "JSON"),
        (b"---\na: .inf\n---\n", "JSON"),
        (b"---\na: -.Inf\n---\n", "JSON"),
        (b"---\na: 1e400\n---\n", "out of range"),
        (b"---\na: [1, 2\n---\n", "not valid YAML"),
        (b"---\na: 'open\n---\n", "not valid YAML"),
        (b"---\na: 1\n...\nb: 2\n---\n", "document"),
        (b"---\n%YAML 1.2\n--- \na: 1\n---\n", "not valid YAML|directives"),
        (b"---\n\xff\xfe: x\n---\n", "UTF-8"),
        (b"---\nname: \xc3\x28\n---\n", "UTF-8"),
    ],
)
def test_unacceptable_frontmatter_raises_the_typed_error(data: bytes, reason: str) -> None:
    with pytest.raises(FrontmatterError, match=reason):
        parse_skill_md(data)


def test_quoted_string_spanning_a_delimiter_line_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="not valid YAML"):
        parse_skill_md(b'---\ndescription: "first\n---\nsecond"\n---\nbody\n')


def test_invalid_utf8_in_the_body_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="body is not valid UTF-8"):
        parse_skill_md(b"---\nname: x\n---\n\xff\n")


def test_non_bytes_input_is_refused_with_the_typed_error() -> None:
    with pytest.raises(FrontmatterError):
        parse_skill_md("---\nname: x\n---\n")  # type: ignore[arg-type]


def test_errors_name_the_server_and_uri_when_given() -> None:
    with pytest.raises(FrontmatterError) as info:
        parse_skill_md(b"nope", server="acme", uri="skill://x/SKILL.md")
    assert info.value.server == "acme"
    assert info.value.uri == "skill://x/SKILL.md"
    assert "server 'acme': skill://x/SKILL.md:" in str(info.value)


# --- hostile input: each must fail fast, with bounded memory ---------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_hostile_frontmatter_is_refused_early_with_bounded_memory(name: str) -> None:
    data, reason = HOSTILE[name]

    def parse() -> int:
        tracemalloc.start()
        try:
            with pytest.raises(FrontmatterError, match=reason):
                parse_skill_md(data)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # Bounded wait; bench/bench_hostile_frontmatter.py measures how fast it really is.
    with anyio.fail_after(10):
        peak = await anyio.to_thread.run_sync(parse)
    assert peak < 8 * 1024 * 1024, f"peak Python allocation {peak} bytes"


def test_limits_come_from_the_config_object() -> None:
    strict = Limits(max_frontmatter_bytes=16, max_frontmatter_depth=1)
    with pytest.raises(FrontmatterError, match="16 bytes"):
        parse_skill_md(md("description: more than sixteen bytes\n"), limits=strict)
    with pytest.raises(FrontmatterError, match="nests deeper than 1"):
        parse_skill_md(md("a: [[1]]\n"), limits=strict)


@given(st.binary(max_size=300))
def test_no_byte_input_crashes_the_parser(data: bytes) -> None:
    with contextlib.suppress(FrontmatterError):
        parse_skill_md(data)


_YAMLISH = st.lists(
    st.sampled_from(
        [*list("abc:-[]{},'\"&*!?|>#%@`\n\t \\0.~"), "---\n", "\r\n", "yes", "!!python/object"]
    ),
    max_size=60,
).map("".join)


@given(_YAMLISH)
def test_no_yaml_like_text_crashes_the_parser(block: str) -> None:
    try:
        doc = parse_skill_md(f"---\n{block}\n---\n".encode())
    except FrontmatterError:
        return
    assert isinstance(doc.frontmatter, dict)
    assert all(isinstance(key, str) for key in doc.frontmatter)


# The simple ``key: value`` reading must give exactly what the YAML parser gives: values
# drawn from YAML's indicators, scalars that resolve to other types, whitespace YAML
# strips or reads as a break, and characters the parser refuses.
_PIECES = st.sampled_from(
    [
        *"aZ09 .,;()/=_-+:#&*!?|>%@`'\"[]{}\\~",
        *["word", "é", "\U0001f600", "\xa0", "\t", "\x85", "\u2028", "\ufeff", "\x7f", "\r"],
        *["null", "true", "False", "0x1F", "0o17", "1e3", ".inf", ".nan", "-1", "1.5", "~"],
        *[" #", ": ", "0", "  ", "- ", "---", "...", "\n", "\n "],
    ]
)
_SIMPLE_DOCUMENTS = st.lists(
    st.tuples(
        st.from_regex(r"[a-zA-Z][a-zA-Z0-9_-]{0,8}", fullmatch=True),
        st.lists(_PIECES, min_size=1, max_size=6).map("".join),
    ),
    min_size=1,
    max_size=4,
).map(lambda lines: "".join(f"{key}: {value}\n" for key, value in lines))


def _same(left: JsonValue, right: JsonValue) -> bool:
    return type(left) is type(right) and left == right


@settings(max_examples=400)
@given(_SIMPLE_DOCUMENTS)
@example("A: .inf\n a\n")  # a later line decides: folded into one string
@example("name: x\ndescription: a, b [c] {d} e:f g#h\n")
def test_simple_frontmatter_reads_exactly_as_the_yaml_parser_reads_it(text: str) -> None:
    try:
        simple = _build_simple(text, Limits())
    except FrontmatterError:  # pragma: no cover (the simple reading leaves errors to YAML)
        pytest.fail("the simple reading raised")
    if simple is None:
        return
    parsed = _build_events(text, Limits())
    assert list(simple) == list(parsed)
    assert all(_same(simple[key], parsed[key]) for key in parsed)


def _split_by_lines(data: bytes, max_block: int) -> tuple[bytes, bytes]:
    """The SKILL.md split, read line by line: what _split must agree with."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    lines = data[start:].split(b"\n")
    if len(lines) < 2 or lines[0].removesuffix(b"\r") != b"---":
        raise FrontmatterError("SKILL.md must begin with a '---' line")
    pos = start + len(lines[0]) + 1
    block_start = pos
    for index, line in enumerate(lines[1:], 1):
        if pos > block_start + max_block:
            break
        last = index == len(lines) - 1
        if (line.removesuffix(b"\r") if not last else line) == b"---":
            end = pos + len(line) + (0 if last else 1)
            return data[block_start:pos], data[end:]
        pos += len(line) + 1
    raise FrontmatterError("no closing line")


@settings(max_examples=400)
@given(
    st.lists(st.sampled_from([b"---", b"\n", b"\r\n", b"\r", b"-", b"a: b", b" ", b"\xef\xbb\xbf"]))
    .map(b"".join)
    .map(lambda body: b"---\n" + body),
    st.integers(min_value=0, max_value=40),
)
@example(b"---\n---\n", 0)
@example(b"---\na: b\n---", 8)
@example(b"---\r\na: b\r\n---\r\nbody", 64)
@example(b"---\na: b\n----\n--- \n---\r\r\n---\nrest", 64)
def test_the_block_ends_at_the_first_line_that_is_only_the_delimiter(
    data: bytes, max_block: int
) -> None:
    try:
        expected: tuple[bytes, bytes] | None = _split_by_lines(data, max_block)
    except FrontmatterError:
        expected = None
    try:
        found: tuple[bytes, bytes] | None = _split(data, max_block)
    except FrontmatterError:
        found = None
    assert found == expected


# --- comparison -------------------------------------------------------------------------


def test_identical_frontmatter_has_no_differences() -> None:
    listed = {"name": "x", "description": "d", "metadata": {"v": "1"}, "n": 1}
    parsed = parse_skill_md(md("name: x\ndescription: d\nmetadata: {v: '1'}\nn: 1.0\n"))
    assert diff_frontmatter(parsed.frontmatter, listed) == ()
    check_frontmatter(parsed.frontmatter, listed)


PARSED = {"name": "x", "description": "d", "v": "yes"}


@pytest.mark.threat("T7")
@pytest.mark.parametrize(
    ("listed", "fields"),
    [
        ({"name": "x", "description": "other", "v": "yes"}, ("description",)),
        ({"name": "x", "v": "yes"}, ("description",)),
        ({**PARSED, "allowed-tools": "Bash"}, ("allowed-tools",)),
        ({**PARSED, "v": True}, ("v",)),
        ({**PARSED, "v": 1}, ("v",)),
        ({"name": "x", "description": "d"}, ("v",)),
        ({"name": "y", "description": "e", "v": "yes"}, ("description", "name")),
    ],
)
def test_differing_fields_are_reported_by_name(
    listed: dict[str, object], fields: tuple[str, ...]
) -> None:
    assert diff_frontmatter(PARSED, listed) == fields
    with pytest.raises(FrontmatterMismatch) as info:
        check_frontmatter(PARSED, listed, server="acme", uri="skill://x/SKILL.md")
    assert info.value.fields == fields
    assert info.value.server == "acme"


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, None, True),
        (None, "", False),
        ("é", "e\u0301", False),
        ([1, "a"], [1, "a"], True),
        ([1], [1, 1], False),
        ({"a": [1]}, {"a": [1.0]}, True),
        ({"a": 1}, {"b": 1}, False),
        ("1", 1, False),
    ],
)
def test_json_equality_follows_json_not_python(left: object, right: object, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


# --- where each key is written (skillward check's lines) ---------------------------------


def test_each_top_level_key_is_found_on_its_line_of_skill_md() -> None:
    data = md(
        "name: pdf\ndescription: |\n  Two\n  lines\nmetadata:\n  name: inner\nallowed-tools: Bash\n"
    )
    assert key_lines(data) == {"name": 2, "description": 3, "metadata": 6, "allowed-tools": 8}


def test_key_lines_count_a_bom_and_crlf_as_a_reader_does() -> None:
    data = b"\xef\xbb\xbf---\r\nname: a\r\n\r\ndescription: d\r\n---\r\n"
    assert key_lines(data) == {"name": 2, "description": 4}


def test_key_lines_stop_at_broken_yaml_and_are_empty_without_frontmatter() -> None:
    assert key_lines(md("name: a\nlist: [1\nz: 2\n")) == {"name": 2, "list": 3}
    assert key_lines(b"# no frontmatter\n") == {}
    assert key_lines(md("- a\n- b\n")) == {}


@settings(max_examples=200)
@given(_SIMPLE_DOCUMENTS)
def test_every_key_parsed_has_the_line_it_is_written_on(text: str) -> None:
    data = f"---\n{text}---\n".encode()
    try:
        parsed = parse_skill_md(data).frontmatter
    except FrontmatterError:
        return
    lines = key_lines(data)
    assert set(lines) == set(parsed)
    # Lines as readers count them: YAML's other line breaks (NEL) do not start one.
    written = data.decode().split("\n")
    for key, line in lines.items():
        assert key in written[line - 1], (key, line)
