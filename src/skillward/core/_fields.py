"""The formats of the wire's single fields: skill names, descriptions and the rest of
the Agent Skills frontmatter, digests, a JSON value's size; the rule each one breaks.
And the digests of what an entry lists, which approvals, pins and the audit trail bind
to (:attr:`skillward.core.wire.SkillEntry.content_hash`).

Shared by the models of :mod:`skillward.core.wire` (which raise), the checks of a raw
entry or result (which collect every violation), and the server's and local skills'
lint of a SKILL.md on disk.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

from skillward.core.rules import RuleError, Violation

EXTENSION_ID = "io.modelcontextprotocol/skills"
DIRECTORY_MIME_TYPE = "inode/directory"
DYNAMIC = "dynamic"

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
# Checked by pydantic-core; "$" there matches only at the very end, never before a newline.
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}\Z")
_MAX_NAME = 64
_MAX_DESCRIPTION = 1024
_MAX_COMPATIBILITY = 500
MAX_CURSOR = 4096
#: Keys of ``metadata`` reserved for MCP extensions, of which SEP-2640 defines none.
_RESERVED_METADATA = "io.modelcontextprotocol/"
#: Settings envelopes SEP-2133 does not define: the settings sit under the identifier.
ENVELOPE_KEYS = frozenset({"config", "specVersion", "stability", "id"})
CACHE_SCOPES = frozenset({"public", "private"})

# The rules of docs/check.md these models enforce (and report, see entry_violations).
CAP_DECLARED = "SW-CAP-001"
CAP_INLINE = "SW-CAP-002"
CAP_DIRECTORY_READ = "SW-CAP-003"
CAP_RESOURCES = "SW-CAP-004"
LIST_SHAPE = "SW-LIST-001"
LIST_CURSOR = "SW-LIST-003"
LIST_CACHE = "SW-LIST-006"
ENTRY_URI = "SW-ENTRY-001"
ENTRY_FRONTMATTER = "SW-ENTRY-002"
ENTRY_RESOURCES = "SW-ENTRY-003"
ENTRY_DYNAMIC = "SW-ENTRY-004"
ENTRY_FIELDS = "SW-ENTRY-005"
URI_SKILL_MD = "SW-URI-001"
URI_NAME = "SW-URI-002"
URI_CANONICAL = "SW-URI-004"
URI_SCHEME = "SW-URI-006"
RES_SELF = "SW-RES-001"
RES_ONCE = "SW-RES-002"
RES_WITHIN = "SW-RES-003"
RES_DIGEST = "SW-RES-004"
RES_SIZE = "SW-RES-005"
LIM_FILES = "SW-LIM-001"
LIM_BYTES = "SW-LIM-002"
LIM_FRONTMATTER = "SW-LIM-003"
FM_NAME = "SW-FM-001"
FM_DESCRIPTION = "SW-FM-002"
FM_BLANK = "SW-FM-003"
FM_COMPATIBILITY = "SW-FM-004"
FM_METADATA = "SW-FM-005"
FM_STRINGS = "SW-FM-006"
FM_RESERVED = "SW-FM-007"
FM_PROTO = "SW-FM-008"
GET_ECHO = "SW-GET-002"
GET_CURSOR = "SW-GET-005"
GET_CACHE = "SW-GET-006"
DIR_SHAPE = "SW-DIR-003"
DIR_CACHE = "SW-DIR-009"


def is_skill_name(name: str) -> bool:
    """Whether the string ``name`` follows the Agent Skills naming rules."""
    return 1 <= len(name) <= _MAX_NAME and _NAME_RE.match(name) is not None


def is_description(text: str) -> bool:
    """Whether the string ``text`` has a description's length."""
    return 1 <= len(text) <= _MAX_DESCRIPTION


def check_skill_name(name: str) -> str:
    """Return ``name`` if it follows the Agent Skills naming rules, else raise ValueError
    (a :class:`~skillward.core.rules.RuleError`)."""
    if not isinstance(name, str) or not is_skill_name(name):
        shown = name[:80] if isinstance(name, str) else type(name).__name__
        raise RuleError(
            FM_NAME,
            f"skill name {shown!r} must be 1-{_MAX_NAME} characters of a-z, 0-9 and single "
            "hyphens, not starting or ending with a hyphen",
        )
    return name


def frontmatter_violations(frontmatter: Mapping[str, object]) -> list[Violation]:
    """Every rule of the Agent Skills format (and SEP-2640's reserved keys) a parsed
    frontmatter breaks, in order; ``refused`` marks those a listing entry is refused for
    (the type and rules of ``name`` and ``description``)."""
    found: list[Violation] = []
    name = frontmatter.get("name")
    if not isinstance(name, str):
        found.append(
            Violation(ENTRY_FRONTMATTER, "frontmatter needs a string 'name'", field="name")
        )
    else:
        try:
            check_skill_name(name)
        except RuleError as error:
            found.append(error.violation(field="name"))
    description = frontmatter.get("description")
    if not isinstance(description, str):
        found.append(
            Violation(
                ENTRY_FRONTMATTER, "frontmatter needs a string 'description'", field="description"
            )
        )
    else:
        try:
            check_description(description)
        except RuleError as error:
            found.append(error.violation(field="description"))
        if description and not description.strip():
            found.append(
                Violation(
                    FM_BLANK,
                    "description must not be only whitespace",
                    refused=False,
                    field="description",
                )
            )
    compatibility = frontmatter.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or not 1 <= len(compatibility) <= _MAX_COMPATIBILITY
    ):
        message = f"compatibility must be a string of 1-{_MAX_COMPATIBILITY} characters"
        found.append(Violation(FM_COMPATIBILITY, message, refused=False, field="compatibility"))
    metadata = frontmatter.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        found.append(
            Violation(
                FM_METADATA, "metadata must map strings to strings", refused=False, field="metadata"
            )
        )
    if isinstance(metadata, dict):
        reserved = sorted(
            k for k in metadata if isinstance(k, str) and k.startswith(_RESERVED_METADATA)
        )
        if reserved:
            found.append(
                Violation(
                    FM_RESERVED,
                    f"metadata key {reserved[0][:80]!r} uses the reserved prefix "
                    f"{_RESERVED_METADATA!r}, under which no keys are defined",
                    refused=False,
                    field="metadata",
                )
            )
    for key in ("license", "allowed-tools"):
        if key in frontmatter and not isinstance(frontmatter[key], str):
            found.append(Violation(FM_STRINGS, f"{key} must be a string", refused=False, field=key))
    if _has_proto_key(frontmatter):
        found.append(Violation(FM_PROTO, "a frontmatter key is '__proto__'", refused=False))
    return found


def _has_proto_key(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if "__proto__" in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


#: The frontmatter rules a skill on disk is refused for (``skillward serve``, local skills).
_LINTED = frozenset(
    {
        ENTRY_FRONTMATTER,
        FM_NAME,
        FM_DESCRIPTION,
        FM_COMPATIBILITY,
        FM_METADATA,
        FM_STRINGS,
    }
)


def lint_frontmatter(frontmatter: Mapping[str, object]) -> None:
    """Check a parsed frontmatter against the Agent Skills format; raise ValueError
    (a :class:`~skillward.core.rules.RuleError`).

    Beyond ``name`` and ``description``: ``compatibility`` is 1-500 characters,
    ``metadata`` maps strings to strings, and ``license`` and ``allowed-tools``
    are strings. Unknown fields are allowed.
    """
    for violation in frontmatter_violations(frontmatter):
        if violation.rule in _LINTED:
            raise RuleError(violation.rule, violation.message)


def check_description(text: str) -> str:
    if not is_description(text):
        raise RuleError(
            FM_DESCRIPTION,
            f"description must be 1-{_MAX_DESCRIPTION} characters, not {len(text)}",
        )
    return text


def json_size(
    value: object,
    *,
    limit: int,
    max_depth: int | None = None,
    max_nodes: int | None = None,
) -> int:
    """About how many bytes ``value``, a parsed JSON value, takes as JSON.

    Counting stops as soon as the count passes ``limit`` (the result is then above
    ``limit``), so measuring a huge value costs no more than measuring ``limit`` bytes
    of it. Raise ValueError when ``value`` nests containers deeper than ``max_depth`` or
    holds more than ``max_nodes`` values, keys included. Iterative, so any depth is safe.
    """
    size = nodes = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    push = stack.append
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise ValueError(f"more than {max_nodes} values")
        # Exact types first (parsed JSON holds nothing else): an isinstance per value
        # is most of the cost of measuring a listing page.
        if type(item) is str or isinstance(item, str):
            size += len(item) + 2
        elif type(item) is dict or type(item) is list or isinstance(item, dict | list | tuple):
            if max_depth is not None and depth >= max_depth:
                raise ValueError(f"nests deeper than {max_depth} levels")
            depth += 1
            if isinstance(item, dict):
                # Braces, commas between members, and a colon per key.
                size += 1 + 2 * len(item) if item else 2
                for key, child in item.items():
                    push((key, depth))
                    push((child, depth))
            else:
                size += 1 + len(item) if item else 2
                for child in item:
                    push((child, depth))
        elif isinstance(item, bool) or item is None:
            size += 5
        elif isinstance(item, int):
            size += item.bit_length() * 3 // 10 + 1  # about its decimal digits
        else:
            size += 24
        if size > limit:
            return size
    return size


ABSENT = object()


def json_kind(value: object) -> str:
    """What kind of JSON value ``value`` is, for a message (never the value itself)."""
    if value is ABSENT:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# --- what content digests bind --------------------------------------------------------------


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``, as SEP-2640 writes digests."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(value: object) -> bytes:
    """``value`` as one canonical JSON text: keys sorted, no spaces, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def frontmatter_digests(
    frontmatter: Mapping[str, object],
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The digest of the whole frontmatter, and of each top-level field's value."""
    fields = tuple(sorted((k, sha256_digest(canonical_json(v))) for k, v in frontmatter.items()))
    return sha256_digest(canonical_json(dict(frontmatter))), fields


def content_digest(uri: str, files: Iterable[tuple[str, str, int]], frontmatter: str) -> str:
    """One digest for exactly this content: the skill's URI, its (uri, digest, size) set
    (in URI order, as given), and its frontmatter's digest."""
    listed = [[item, digest, size] for item, digest, size in files]
    return sha256_digest(canonical_json({"files": listed, "frontmatter": frontmatter, "uri": uri}))
