"""Hardened SKILL.md frontmatter parsing, with YAML 1.2 core-schema semantics.

A SKILL.md starts with a ``---`` line, a YAML block, and a closing ``---`` line.
The block comes from an untrusted origin, so this parser:

* finds both delimiters as whole lines (a UTF-8 BOM and CRLF line ends are
  accepted), and refuses a block larger than the byte cap before parsing it;
* reads only YAML's event stream (PyYAML's syntax parser) and builds values
  itself, so no constructor, tag or Python object is ever involved;
* refuses anchors, aliases, tags, directives, duplicate keys, non-string keys and
  more than one document, and caps nesting depth and node count as events
  arrive, so hostile input stops early with bounded memory;
* resolves plain scalars by the YAML 1.2 core schema into JSON types only:
  ``yes`` stays a string, dates stay strings, and ``.nan``/``.inf`` are refused
  because JSON cannot carry them.

Everything it raises is a :class:`~skillward.core.errors.FrontmatterError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from skillward.core.config import Limits
from skillward.core.errors import FrontmatterError, FrontmatterMismatch

__all__ = [
    "JsonValue",
    "SkillDocument",
    "allowed_tools",
    "check_frontmatter",
    "diff_frontmatter",
    "json_equal",
    "key_lines",
    "parse_skill_md",
]

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]

_BOM = b"\xef\xbb\xbf"
_DELIMITER = b"---"

_NULL_RE = re.compile(r"(?:~|null|Null|NULL|)\Z")
_TRUE_RE = re.compile(r"(?:true|True|TRUE)\Z")
_FALSE_RE = re.compile(r"(?:false|False|FALSE)\Z")
_INT_RE = re.compile(r"[-+]?[0-9]+\Z")
_OCT_RE = re.compile(r"0o[0-7]+\Z")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_SPECIAL_FLOAT_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z")
# Longer numerals are refused rather than converted: int() on them is quadratic.
_MAX_NUMERAL_CHARS = 1000

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The rules of docs/check.md a SKILL.md can break: no frontmatter block, YAML this
# parser refuses, a block past the caps, and frontmatter that differs from the listing.
_BLOCK_RULE = "SW-FM-009"
_SAFE_YAML_RULE = "SW-FM-011"
_BOUNDS_RULE = "SW-LIM-003"
_IDENTICAL_RULE = "SW-FM-010"


@dataclass(frozen=True, slots=True)
class SkillDocument:
    """A SKILL.md split into its parsed frontmatter and its Markdown body."""

    frontmatter: dict[str, JsonValue]
    body: str


def parse_skill_md(
    data: bytes,
    *,
    limits: Limits | None = None,
    server: str | None = None,
    uri: str | None = None,
) -> SkillDocument:
    """Split and parse a SKILL.md, or raise :class:`~skillward.core.errors.FrontmatterError`."""
    limits = limits or Limits()
    try:
        try:
            block, body = _split(data, limits.max_frontmatter_bytes)
        except FrontmatterError as error:
            raise error.with_rule(_BLOCK_RULE) from None
        try:
            text = _decode(block, "frontmatter")
            frontmatter = _build(text, limits)
            return SkillDocument(frontmatter=frontmatter, body=_decode(body, "body"))
        except FrontmatterError as error:
            raise error.with_rule(_SAFE_YAML_RULE) from None
    except FrontmatterError as error:
        raise error.with_context(server=server, uri=uri) from None


def key_lines(data: bytes, *, limits: Limits | None = None) -> dict[str, int]:
    """The line of SKILL.md (1-based) on which each top-level frontmatter key is written,
    from the YAML parser's own marks; the keys it reads before any error, so what a
    finding about one field names can point at it. Empty without a frontmatter block."""
    limits = limits or Limits()
    try:
        block, _ = _split(data, limits.max_frontmatter_bytes)
        text = _decode(block, "frontmatter")
    except FrontmatterError:
        return {}
    found: dict[str, int] = {}
    # Nodes read so far in each open collection; the root mapping's even ones are keys.
    counts: list[int] = []
    mapping = False
    loader = _Loader(text)
    get: Callable[[], yaml.Event | None] = loader.get_event
    try:
        while (event := get()) is not None:
            kind = type(event)
            if kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                counts.pop()
            elif kind in (_SCALAR, _SEQUENCE, _MAPPING, yaml.AliasEvent):
                node: Any = event
                if kind is _SCALAR and mapping and len(counts) == 1 and counts[0] % 2 == 0:
                    # Lines as a file's readers count them (YAML counts NEL and
                    # U+2028 too); the block starts on the line after the opening ---.
                    line = text.count("\n", 0, node.start_mark.index) + 2
                    found.setdefault(str(node.value), line)
                if counts:
                    counts[-1] += 1
                if kind is _SEQUENCE or kind is _MAPPING:
                    mapping = mapping or (not counts and kind is _MAPPING)
                    counts.append(0)
    except (yaml.YAMLError, RecursionError):
        pass  # the keys before the error
    finally:
        loader.dispose()
    return found


def _split(data: bytes, max_block: int) -> tuple[bytes, bytes]:
    if not isinstance(data, bytes):
        raise FrontmatterError("SKILL.md content must be bytes")
    start = len(_BOM) if data.startswith(_BOM) else 0
    first = _line_end(data, start, start + len(_DELIMITER) + 2)
    if first is None or data[start : first[0]] != _DELIMITER:
        raise FrontmatterError("SKILL.md must begin with a '---' line")
    block_start = first[1]
    # The closing line must start within max_block bytes; nothing past it is scanned.
    limit = block_start + max_block
    # Each "\n---" is a line starting with the delimiter: it closes the block when
    # nothing but a line end (or the end of the data) follows.
    newline = block_start - 1
    while True:
        newline = data.find(b"\n---", newline, limit + len(_DELIMITER))
        if newline < 0:
            break
        pos = newline + 1
        after = pos + len(_DELIMITER)
        if after == len(data):
            return data[block_start:pos], b""
        ending = data[after : after + 2]
        if ending[:1] == b"\n":
            return data[block_start:pos], data[after + 1 :]
        if ending == b"\r\n":
            return data[block_start:pos], data[after + 2 :]
        newline = pos
    if len(data) > limit:
        raise FrontmatterError(
            f"no closing '---' line within {max_block} bytes: "
            "the frontmatter is too large or unterminated",
            rule=_BOUNDS_RULE,
        )
    raise FrontmatterError("frontmatter has no closing '---' line")


def _line_end(data: bytes, pos: int, stop: int) -> tuple[int, int] | None:
    """(end of the line's content, start of the next line), or None: no newline before stop."""
    newline = data.find(b"\n", pos, stop)
    if newline < 0:
        return None
    content_end = newline - 1 if newline > pos and data[newline - 1] == 0x0D else newline
    return content_end, newline + 1


def _decode(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(f"SKILL.md {what} is not valid UTF-8 (byte {exc.start})") from None


class _Builder:
    """Builds JSON values from YAML events under depth and node caps."""

    def __init__(self, limits: Limits, get: Callable[[], yaml.Event | None]) -> None:
        self.max_depth = limits.max_frontmatter_depth
        self.max_nodes = limits.max_frontmatter_nodes
        self.nodes = 0
        self.get = get

    def value(self, event: yaml.Event | None, depth: int) -> JsonValue:
        """The value ``event`` starts, reading the events of its children."""
        # Exact types: both of PyYAML's parsers make these very classes.
        kind = type(event)
        if kind is not _SCALAR and kind is not _SEQUENCE and kind is not _MAPPING:
            if kind is yaml.AliasEvent:
                raise FrontmatterError("YAML aliases are not allowed")
            raise FrontmatterError(f"unexpected YAML {kind.__name__}")
        node: Any = event
        if node.anchor is not None:
            raise FrontmatterError("YAML anchors are not allowed")
        if node.tag is not None:
            raise FrontmatterError(f"YAML tags are not allowed (found {str(node.tag)[:80]!r})")
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise FrontmatterError(
                f"frontmatter has more than {self.max_nodes} nodes", rule=_BOUNDS_RULE
            )
        if kind is _SCALAR:
            return _scalar(node)
        if depth >= self.max_depth:
            raise FrontmatterError(
                f"frontmatter nests deeper than {self.max_depth} levels", rule=_BOUNDS_RULE
            )
        get = self.get
        child = get()
        if kind is _SEQUENCE:
            items: list[JsonValue] = []
            while type(child) is not yaml.SequenceEndEvent:
                items.append(self.value(child, depth + 1))
                child = get()
            return items
        mapping: dict[str, JsonValue] = {}
        while type(child) is not yaml.MappingEndEvent:
            key = self.value(child, depth + 1)
            if not isinstance(key, str):
                raise FrontmatterError(f"mapping keys must be strings, not {_kind(key)}")
            if key in mapping:
                raise FrontmatterError(f"duplicate key {key[:80]!r}")
            mapping[key] = self.value(get(), depth + 1)
            child = get()
        return mapping


_SCALAR = yaml.ScalarEvent
_SEQUENCE = yaml.SequenceStartEvent
_MAPPING = yaml.MappingStartEvent


# The common frontmatter: top-level ``key: value`` lines whose values are plain scalars
# on one line. It is read without the YAML parser, to the very values the parser gives;
# anything else, and any doubt, takes the parser (tests/unit/test_frontmatter.py holds
# the two to the same results).
_SIMPLE_LINE_RE = re.compile(
    r"([A-Za-z][A-Za-z0-9_-]{0,127}): "
    r"(?![\s\-?:,\[\]{}#&*!|>'\"%@`])"
    r"([^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]+)\Z"
)
# Keys that would resolve to something other than a string.
_WORD_KEYS = frozenset({"null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"})


def _build(text: str, limits: Limits) -> dict[str, JsonValue]:
    simple = _build_simple(text, limits)
    return simple if simple is not None else _build_events(text, limits)


def _build_simple(text: str, limits: Limits) -> dict[str, JsonValue] | None:
    """The frontmatter, if it is only simple ``key: value`` lines; else None."""
    lines = text.split("\n")
    if lines.pop() != "" or not lines or limits.max_frontmatter_depth < 1:
        return None
    if 1 + 2 * len(lines) > limits.max_frontmatter_nodes:
        return None
    pairs: dict[str, str] = {}
    for line in lines:
        match = _SIMPLE_LINE_RE.match(line)
        if match is None:
            return None
        key, value = match.groups()
        if value[-1] in " :" or ": " in value or " #" in value:
            return None  # trailing space, or what YAML reads as a mapping or a comment
        if key in pairs or key in _WORD_KEYS:
            return None
        pairs[key] = value
    try:
        return {key: _plain(value) for key, value in pairs.items()}
    except FrontmatterError:
        return None  # the parser says why


def _build_events(text: str, limits: Limits) -> dict[str, JsonValue]:
    loader = _Loader(text)
    try:
        return _consume(_Builder(limits, loader.get_event))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = str(getattr(exc, "problem", None) or type(exc).__name__)
        if "nesting depth" in problem:  # libyaml's own cap can trip before ours
            raise FrontmatterError(
                "frontmatter nests deeper than the parser allows", rule=_BOUNDS_RULE
            ) from None
        # Not YAML at all: no YAML frontmatter, as SEP-2640 requires one.
        raise FrontmatterError(
            f"frontmatter is not valid YAML{where}: {problem}", rule=_BLOCK_RULE
        ) from None
    except RecursionError:
        raise FrontmatterError("frontmatter nests too deeply", rule=_BOUNDS_RULE) from None
    finally:
        loader.dispose()


def _consume(builder: _Builder) -> dict[str, JsonValue]:
    get = builder.get
    _expect(get(), yaml.StreamStartEvent)
    start = get()
    if type(start) is yaml.StreamEndEvent:
        raise FrontmatterError("frontmatter is empty; it must be a mapping", rule=_BLOCK_RULE)
    start = _expect(start, yaml.DocumentStartEvent)
    if start.explicit or start.version is not None or start.tags:
        raise FrontmatterError("YAML directives and document markers are not allowed")
    root = builder.value(get(), 0)
    if not isinstance(root, dict):
        raise FrontmatterError("frontmatter must be a mapping", rule=_BLOCK_RULE)
    end = _expect(get(), yaml.DocumentEndEvent)
    if end.explicit:
        raise FrontmatterError("YAML document markers are not allowed")
    if type(get()) is not yaml.StreamEndEvent:
        raise FrontmatterError("frontmatter must hold exactly one YAML document")
    return root


def _expect(event: yaml.Event | None, kind: type[yaml.Event]) -> Any:
    if not isinstance(event, kind):
        raise FrontmatterError(f"unexpected YAML {type(event).__name__}")
    return event


# Only these can start a plain scalar that resolves to anything but a string.
_RESOLVABLE_START = frozenset("~nNtTfF0123456789+-.")


def _scalar(event: yaml.ScalarEvent) -> JsonValue:
    if event.style:
        return event.value  # quoted or block scalars are always strings (libyaml: '' for plain)
    return _plain(event.value)


def _plain(value: str) -> JsonValue:
    """A plain scalar resolved by the YAML 1.2 core schema (JSON values only)."""
    if value and value[0] not in _RESOLVABLE_START:
        return value
    if _NULL_RE.match(value):
        return None
    if _TRUE_RE.match(value):
        return True
    if _FALSE_RE.match(value):
        return False
    if len(value) <= _MAX_NUMERAL_CHARS:
        if _INT_RE.match(value):
            return int(value, 10)
        if _OCT_RE.match(value):
            return int(value[2:], 8)
        if _HEX_RE.match(value):
            return int(value[2:], 16)
        if _FLOAT_RE.match(value):
            number = float(value)
            if math.isinf(number):
                raise FrontmatterError(f"number {value[:40]!r} is out of range for JSON")
            return number
    elif _INT_RE.match(value) or _FLOAT_RE.match(value):
        raise FrontmatterError(f"numeral longer than {_MAX_NUMERAL_CHARS} characters")
    if _SPECIAL_FLOAT_RE.match(value):
        raise FrontmatterError(f"{value!r} is not representable in JSON")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


# --- comparison against a listing ----------------------------------------------------


def json_equal(left: object, right: object) -> bool:
    """Equality of two JSON values as JSON defines it.

    Numbers compare by value (``1 == 1.0``, as in JavaScript), but booleans are
    never numbers, and strings compare exactly, without normalisation.
    """
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, str) or isinstance(right, str):
        return type(left) is type(right) and left == right
    if left is None or right is None:
        return left is right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return False


def diff_frontmatter(parsed: Mapping[str, object], listed: Mapping[str, object]) -> tuple[str, ...]:
    """Top-level fields whose values differ (missing on one side counts), sorted."""
    keys = set(parsed) | set(listed)
    return tuple(
        sorted(
            key
            for key in keys
            if key not in parsed or key not in listed or not json_equal(parsed[key], listed[key])
        )
    )


def check_frontmatter(
    parsed: Mapping[str, object],
    listed: Mapping[str, object],
    *,
    server: str | None = None,
    uri: str | None = None,
) -> None:
    """Raise :class:`~skillward.core.errors.FrontmatterMismatch` unless the two are identical."""
    fields = diff_frontmatter(parsed, listed)
    if fields:
        shown = ", ".join(repr(f[:64]) for f in fields[:10])
        more = f" and {len(fields) - 10} more" if len(fields) > 10 else ""
        raise FrontmatterMismatch(
            f"SKILL.md frontmatter differs from the listing in {shown}{more}",
            fields=fields,
            server=server,
            uri=uri,
            rule=_IDENTICAL_RULE,
        )


# --- fields that ask for permissions ---------------------------------------------------


def allowed_tools(frontmatter: Mapping[str, object]) -> tuple[str, ...]:
    """The tools ``allowed-tools`` requests, read as the Agent Skills spec writes it.

    The field is a space-separated string (``Bash(git:*) Bash(jq:*) Read``). A
    parenthesised argument stays with its tool even when it holds spaces
    (``Bash(git status:*)``); an unclosed one runs to the end. Each tool is kept
    once, in order. A field that is absent, or not a string, requests nothing that
    can be granted: approval prompts show such a value as written.
    """
    value = frontmatter.get("allowed-tools")
    if not isinstance(value, str):
        return ()
    tools: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in value:
        if ch.isspace() and depth == 0:
            if current:
                tools.append("".join(current))
                current = []
            continue
        if ch == "(":
            depth += 1
        elif ch == ")" and depth > 0:
            depth -= 1
        current.append(ch)
    last = "".join(current).rstrip()  # an unclosed parenthesis kept trailing space
    if last:
        tools.append(last)
    return tuple(dict.fromkeys(tools))
