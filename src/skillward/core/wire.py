"""The SEP-2640 wire model: frozen pydantic models, parsed once at the boundary.

Every invariant SEP-2640 places on a skill entry is checked when the entry is
constructed, so code holding a :class:`SkillEntry` can rely on it:

* ``uri`` is a canonical ``<scheme>://<skill-path>/SKILL.md`` (never ``file:``)
  whose final skill-path segment equals ``frontmatter.name``;
* ``frontmatter`` is the verbatim JSON object, with ``name`` following the Agent
  Skills naming rules and ``description`` 1 to 1024 characters; unknown keys are
  kept as they are, within the SKILL.md frontmatter caps (bytes as JSON, depth,
  nodes), which are checked before the object is copied;
* ``resources`` is either ``"dynamic"`` (unverifiable) or a complete manifest:
  every item a ``{uri, digest, size}`` inside the skill's directory, each URI
  once, one of them the skill's own ``uri``, within the per-skill limits.

Unknown fields from newer protocol versions are tolerated everywhere, and dropped
(the frontmatter's unknown keys excepted): a server cannot make the host keep them.
Per-skill limits come from a :class:`~skillward.core.config.Limits` passed through
:func:`parse_entry` (or pydantic's validation ``context={"limits": ...}``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, Literal, NamedTuple, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
    InvalidEntry,
    InvalidResponse,
    InvalidUri,
    SkillTooLarge,
)
from skillward.core.rules import RuleError, Violation
from skillward.core.uris import ResourceUri, SkillRoot, parse_uri, skill_root_of

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "DYNAMIC",
    "EXTENSION_ID",
    "DirectoryChild",
    "DirectoryReadResult",
    "Frontmatter",
    "GetSkillResult",
    "ListSkillsResult",
    "ResourceItem",
    "SkillEntry",
    "SkillsCapability",
    "SkillsPage",
    "capability_violations",
    "check_skill_name",
    "directory_violations",
    "entry_violations",
    "frontmatter_violations",
    "get_violations",
    "json_size",
    "lint_frontmatter",
    "page_violations",
    "parse_entry",
    "parse_skills_page",
    "read_capability",
]

EXTENSION_ID = "io.modelcontextprotocol/skills"
DIRECTORY_MIME_TYPE = "inode/directory"
DYNAMIC = "dynamic"

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
# Checked by pydantic-core; "$" there matches only at the very end, never before a newline.
_DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}\Z")
_MAX_NAME = 64
_MAX_DESCRIPTION = 1024
_MAX_COMPATIBILITY = 500
_MAX_CURSOR = 4096
#: Keys of ``metadata`` reserved for MCP extensions, of which SEP-2640 defines none.
_RESERVED_METADATA = "io.modelcontextprotocol/"
#: Settings envelopes SEP-2133 does not define: the settings sit under the identifier.
_ENVELOPE_KEYS = frozenset({"config", "specVersion", "stability", "id"})
_ENTRY_KEYS = frozenset({"uri", "frontmatter", "resources", "_meta"})
_ITEM_KEYS = frozenset({"uri", "digest", "size", "_meta"})
_CACHE_SCOPES = frozenset({"public", "private"})

# The rules of docs/check.md these models enforce (and report, see entry_violations).
_CAP_DECLARED = "SW-CAP-001"
_CAP_INLINE = "SW-CAP-002"
_CAP_DIRECTORY_READ = "SW-CAP-003"
_CAP_RESOURCES = "SW-CAP-004"
_LIST_SHAPE = "SW-LIST-001"
_LIST_CURSOR = "SW-LIST-003"
_LIST_CACHE = "SW-LIST-006"
_ENTRY_URI = "SW-ENTRY-001"
_ENTRY_FRONTMATTER = "SW-ENTRY-002"
_ENTRY_RESOURCES = "SW-ENTRY-003"
_ENTRY_DYNAMIC = "SW-ENTRY-004"
_ENTRY_FIELDS = "SW-ENTRY-005"
_URI_SKILL_MD = "SW-URI-001"
_URI_NAME = "SW-URI-002"
_URI_CANONICAL = "SW-URI-004"
_URI_SCHEME = "SW-URI-006"
_RES_SELF = "SW-RES-001"
_RES_ONCE = "SW-RES-002"
_RES_WITHIN = "SW-RES-003"
_RES_DIGEST = "SW-RES-004"
_RES_SIZE = "SW-RES-005"
_LIM_FILES = "SW-LIM-001"
_LIM_BYTES = "SW-LIM-002"
_LIM_FRONTMATTER = "SW-LIM-003"
_FM_NAME = "SW-FM-001"
_FM_DESCRIPTION = "SW-FM-002"
_FM_BLANK = "SW-FM-003"
_FM_COMPATIBILITY = "SW-FM-004"
_FM_METADATA = "SW-FM-005"
_FM_STRINGS = "SW-FM-006"
_FM_RESERVED = "SW-FM-007"
_FM_PROTO = "SW-FM-008"
_GET_ECHO = "SW-GET-002"
_GET_CURSOR = "SW-GET-005"
_GET_CACHE = "SW-GET-006"
_DIR_SHAPE = "SW-DIR-003"
_DIR_CACHE = "SW-DIR-009"


def check_skill_name(name: str) -> str:
    """Return ``name`` if it follows the Agent Skills naming rules, else raise ValueError
    (a :class:`~skillward.core.rules.RuleError`)."""
    if not isinstance(name, str) or not 1 <= len(name) <= _MAX_NAME or not _NAME_RE.match(name):
        shown = name[:80] if isinstance(name, str) else type(name).__name__
        raise RuleError(
            _FM_NAME,
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
        found.append(Violation(_ENTRY_FRONTMATTER, "frontmatter needs a string 'name'"))
    else:
        try:
            check_skill_name(name)
        except RuleError as error:
            found.append(error.violation())
    description = frontmatter.get("description")
    if not isinstance(description, str):
        found.append(Violation(_ENTRY_FRONTMATTER, "frontmatter needs a string 'description'"))
    else:
        try:
            _check_description(description)
        except RuleError as error:
            found.append(error.violation())
        if description and not description.strip():
            found.append(
                Violation(_FM_BLANK, "description must not be only whitespace", refused=False)
            )
    compatibility = frontmatter.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or not 1 <= len(compatibility) <= _MAX_COMPATIBILITY
    ):
        message = f"compatibility must be a string of 1-{_MAX_COMPATIBILITY} characters"
        found.append(Violation(_FM_COMPATIBILITY, message, refused=False))
    metadata = frontmatter.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        found.append(Violation(_FM_METADATA, "metadata must map strings to strings", refused=False))
    if isinstance(metadata, dict):
        reserved = sorted(
            k for k in metadata if isinstance(k, str) and k.startswith(_RESERVED_METADATA)
        )
        if reserved:
            found.append(
                Violation(
                    _FM_RESERVED,
                    f"metadata key {reserved[0][:80]!r} uses the reserved prefix "
                    f"{_RESERVED_METADATA!r}, under which no keys are defined",
                    refused=False,
                )
            )
    for key in ("license", "allowed-tools"):
        if key in frontmatter and not isinstance(frontmatter[key], str):
            found.append(Violation(_FM_STRINGS, f"{key} must be a string", refused=False))
    if _has_proto_key(frontmatter):
        found.append(Violation(_FM_PROTO, "a frontmatter key is '__proto__'", refused=False))
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
        _ENTRY_FRONTMATTER,
        _FM_NAME,
        _FM_DESCRIPTION,
        _FM_COMPATIBILITY,
        _FM_METADATA,
        _FM_STRINGS,
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


def _check_description(text: str) -> str:
    if not 1 <= len(text) <= _MAX_DESCRIPTION:
        raise RuleError(
            _FM_DESCRIPTION,
            f"description must be 1-{_MAX_DESCRIPTION} characters, not {len(text)}",
        )
    return text


def _limits(info: ValidationInfo) -> Limits:
    context = info.context
    if isinstance(context, Mapping):
        limits = context.get("limits")
        if isinstance(limits, Limits):
            return limits
    return Limits()


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
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise ValueError(f"more than {max_nodes} values")
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict | list | tuple):
            if max_depth is not None and depth >= max_depth:
                raise ValueError(f"nests deeper than {max_depth} levels")
            # Brackets, commas between members, and a colon per key.
            size += 1 + len(item) * (2 if isinstance(item, dict) else 1) if item else 2
            if size > limit:
                return size
            if isinstance(item, dict):
                for key, child in item.items():
                    stack.append((key, depth + 1))
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, bool) or item is None:
            size += 5
        elif isinstance(item, int):
            size += item.bit_length() * 3 // 10 + 1  # about its decimal digits
        else:
            size += 24
        if size > limit:
            return size
    return size


class WireModel(BaseModel):
    """Base of every wire model: frozen, camelCase on the wire, unknown fields dropped."""

    model_config = ConfigDict(
        # Validators are built when a model is first used, not when it is imported: a
        # command that never parses a listing never pays for them.
        defer_build=True,
        frozen=True,
        extra="ignore",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class SkillsCapability(WireModel):
    """The settings of the ``io.modelcontextprotocol/skills`` extension capability."""

    directory_read: StrictBool = False


class ResourceItem(WireModel):
    """One file of a skill: its URI, SHA-256 digest and byte size.

    The URI is parsed, and proven to lie inside the skill, by the entry that lists it.
    """

    uri: StrictStr
    digest: Annotated[StrictStr, Field(pattern=_DIGEST_PATTERN)]
    size: Annotated[StrictInt, Field(ge=0)]


class Frontmatter(WireModel):
    """A skill's frontmatter as the listing carries it: verbatim, unknown keys kept."""

    # Kept, because a SKILL.md's frontmatter must equal it field by field (bounded by
    # SkillEntry before it gets here).
    model_config = ConfigDict(alias_generator=None, extra="allow")

    name: Annotated[StrictStr, AfterValidator(check_skill_name)]
    description: Annotated[StrictStr, AfterValidator(_check_description)]

    def as_dict(self) -> dict[str, Any]:
        """The whole frontmatter object, as a fresh JSON-compatible dict."""
        return self.model_dump(mode="json")


class SkillEntry(WireModel):
    """A skill entry from ``skills/list`` or ``skills/get``, with every invariant checked."""

    uri: StrictStr
    frontmatter: Frontmatter
    resources: tuple[ResourceItem, ...] | Literal["dynamic"]

    _root: SkillRoot = PrivateAttr()
    _skill_md: ResourceUri = PrivateAttr()
    _manifest: Mapping[str, ResourceItem] = PrivateAttr()

    @field_validator("frontmatter", mode="before")
    @classmethod
    def _bound_frontmatter(cls, value: object, info: ValidationInfo) -> object:
        # The SKILL.md frontmatter caps, applied to the listing's copy before it is copied.
        _check_frontmatter_bounds(value, _limits(info))
        return value

    @field_validator("resources", mode="before")
    @classmethod
    def _count_before_parsing(cls, value: object, info: ValidationInfo) -> object:
        # Refuse an oversized manifest before validating its items one by one.
        if isinstance(value, list | tuple):
            limit = _limits(info).max_skill_files
            if len(value) > limit:
                raise SkillTooLarge(
                    _too_many_files(len(value), limit), uri=_entry_uri(info), rule=_LIM_FILES
                )
        elif value is None:
            raise RuleError(_ENTRY_RESOURCES, 'resources must be an array or "dynamic", not null')
        return value

    @model_validator(mode="after")
    def _check_invariants(self, info: ValidationInfo) -> Self:
        skill_md, root = _skill_uri(self.uri)
        if root.name != self.frontmatter.name:
            raise RuleError(_URI_NAME, _name_mismatch(root.name, self.frontmatter.name))
        if isinstance(self.resources, tuple):
            _check_manifest(root, self.uri, self.resources, _limits(info), None)
        self._root = root
        self._skill_md = skill_md
        self._manifest = (
            {} if isinstance(self.resources, str) else {i.uri: i for i in self.resources}
        )
        return self

    @property
    def root(self) -> SkillRoot:
        """The skill's directory, ``<scheme>://<skill-path>``."""
        return self._root

    @property
    def skill_md(self) -> ResourceUri:
        """The parsed ``uri`` of the skill's SKILL.md."""
        return self._skill_md

    @property
    def name(self) -> str:
        return self.frontmatter.name

    @property
    def description(self) -> str:
        return self.frontmatter.description

    @property
    def is_dynamic(self) -> bool:
        """True when ``resources`` is ``"dynamic"``: the content cannot be verified."""
        return self.resources == DYNAMIC

    @property
    def manifest(self) -> Mapping[str, ResourceItem]:
        """The resource items by exact URI (empty for a dynamic skill)."""
        return MappingProxyType(self._manifest)

    @property
    def total_size(self) -> int:
        if isinstance(self.resources, str):
            return 0
        return sum(item.size for item in self.resources)


def _entry_uri(info: ValidationInfo) -> str | None:
    uri = info.data.get("uri") if isinstance(info.data, dict) else None
    return uri[:300] if isinstance(uri, str) else None


# --- the checks, shared by the models (which raise) and the reports (which collect) ----


def _check_frontmatter_bounds(value: object, limits: Limits) -> None:
    try:
        size = json_size(
            value,
            limit=limits.max_frontmatter_bytes,
            max_depth=limits.max_frontmatter_depth,
            max_nodes=limits.max_frontmatter_nodes,
        )
    except ValueError as exc:
        raise RuleError(_LIM_FRONTMATTER, str(exc)) from None
    if size > limits.max_frontmatter_bytes:
        raise RuleError(
            _LIM_FRONTMATTER, f"larger than {limits.max_frontmatter_bytes} bytes as JSON"
        )


def _too_many_files(count: int, limit: int) -> str:
    return f"skill lists {count} files; this host accepts at most {limit}"


def _name_mismatch(segment: str, name: str) -> str:
    return f"the final skill-path segment {segment[:80]!r} must equal frontmatter.name {name!r}"


def _skill_uri(uri: str) -> tuple[ResourceUri, SkillRoot]:
    """The parsed SKILL.md URI and its skill root, or a RuleError naming the rule broken."""
    try:
        skill_md = parse_uri(uri)
        return skill_md, skill_root_of(skill_md)
    except InvalidUri as exc:
        raise RuleError(exc.rule or _URI_CANONICAL, f"uri: {exc.message}") from None


class _Item(NamedTuple):
    """A manifest item's URI and size, as :func:`_check_manifest` reads them."""

    uri: str
    size: int


def _broken(found: list[Violation] | None, rule: str, message: str, uri: str | None = None) -> None:
    """Report a broken rule: raise it (``found`` is None: the host's path), or collect it."""
    if found is None:
        raise RuleError(rule, message, uri=uri)
    found.append(Violation(rule, message, uri=uri))


def _check_manifest(
    root: SkillRoot,
    entry_uri: str,
    items: Iterable[ResourceItem | _Item],
    limits: Limits,
    found: list[Violation] | None,
) -> None:
    """SEP-2640's manifest rules: each item once, inside the skill, the SKILL.md among them,
    the total within the limit. Raises at the first problem unless ``found`` collects them."""
    seen: set[str] = set()
    total = 0
    for item in items:
        uri = item.uri
        if uri in seen:
            _broken(found, _RES_ONCE, f"resources lists {uri[:200]!r} more than once", uri)
            continue
        seen.add(uri)
        try:
            inside = root.holds(uri)
        except InvalidUri as exc:
            rule = exc.rule or _URI_CANONICAL
            _broken(found, rule, f"resources item {uri[:200]!r}: {exc.message}", uri)
            continue
        if not inside:
            _broken(
                found, _RES_WITHIN, f"resources item {uri[:200]!r} is outside the skill root", uri
            )
            continue
        total += item.size
    if entry_uri not in seen:
        _broken(found, _RES_SELF, "resources must include the skill's own SKILL.md uri")
    if total > limits.max_skill_bytes:
        message = f"skill totals {total} bytes; this host accepts at most {limits.max_skill_bytes}"
        if found is None:
            raise SkillTooLarge(message, uri=entry_uri, rule=_LIM_BYTES)
        found.append(Violation(_LIM_BYTES, message))


def entry_violations(data: object, *, limits: Limits | None = None) -> list[Violation]:
    """Every rule the raw entry ``data`` breaks, where :func:`parse_entry` stops at the first.

    The same checks, in the same order: :func:`parse_entry` refuses ``data`` exactly when
    a violation here is ``refused``, and names the rule of the first one it meets.
    Violations not ``refused`` are what a host accepts and this reports anyway: a dynamic
    skill, a blank description, Agent Skills fields of the wrong type, a scheme other
    than ``skill``, unknown fields.
    """
    limits = limits or Limits()
    if not isinstance(data, Mapping):
        return [Violation(_ENTRY_URI, f"an entry must be an object, not {_json_kind(data)}")]
    found: list[Violation] = []
    uri = data.get("uri")
    if not isinstance(uri, str):
        found.append(Violation(_ENTRY_URI, f"uri must be a string, not {_json_kind(uri)}"))
    name: str | None = None
    frontmatter = data.get("frontmatter")
    if not isinstance(frontmatter, Mapping):
        found.append(
            Violation(
                _ENTRY_FRONTMATTER, f"frontmatter must be an object, not {_json_kind(frontmatter)}"
            )
        )
    else:
        try:
            _check_frontmatter_bounds(frontmatter, limits)
        except RuleError as error:
            found.append(error.violation())
        else:
            broken = frontmatter_violations(frontmatter)
            found += broken
            named = frontmatter.get("name")
            if isinstance(named, str) and not any(v.rule == _FM_NAME for v in broken):
                name = named
    items = _item_violations(data.get("resources", _ABSENT), limits, found)
    if isinstance(uri, str):
        try:
            _, root = _skill_uri(uri)
        except RuleError as error:
            found.append(error.violation())
        else:
            if name is not None and root.name != name:
                found.append(Violation(_URI_NAME, _name_mismatch(root.name, name)))
            if items is not None:
                _check_manifest(root, uri, items, limits, found)
            if root.scheme != "skill":
                found.append(
                    Violation(
                        _URI_SCHEME,
                        f"the scheme {root.scheme[:40]!r} is not skill://",
                        refused=False,
                    )
                )
    unknown = sorted(str(key)[:80] for key in data if key not in _ENTRY_KEYS)
    if unknown:
        found.append(
            Violation(
                _ENTRY_FIELDS, f"the entry carries unknown fields {unknown[:5]}", refused=False
            )
        )
    return found


_ABSENT = object()


def _item_violations(
    resources: object, limits: Limits, found: list[Violation]
) -> list[_Item] | None:
    """Collect what is wrong with ``resources`` item by item; the well-formed items, for the
    manifest rules, or None when there is no array of items to check."""
    if resources == DYNAMIC:
        found.append(
            Violation(
                _ENTRY_DYNAMIC,
                'resources is "dynamic": the skill cannot be verified, and hosts may decline it',
                refused=False,
            )
        )
        return None
    if not isinstance(resources, list | tuple):
        kind = _json_kind(resources)
        found.append(
            Violation(_ENTRY_RESOURCES, f'resources must be an array or "dynamic", not {kind}')
        )
        return None
    if len(resources) > limits.max_skill_files:
        found.append(Violation(_LIM_FILES, _too_many_files(len(resources), limits.max_skill_files)))
        return None
    items: list[_Item] = []
    unknown: set[str] = set()
    for index, item in enumerate(resources):
        if not isinstance(item, Mapping):
            found.append(
                Violation(
                    _ENTRY_RESOURCES,
                    f"resources[{index}] must be an object, not {_json_kind(item)}",
                )
            )
            continue
        uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        shown = uri[:200] if isinstance(uri, str) else None
        if not isinstance(uri, str):
            found.append(Violation(_RES_WITHIN, f"resources[{index}].uri must be a string"))
        if not isinstance(digest, str) or not _DIGEST_RE.match(digest):
            found.append(
                Violation(
                    _RES_DIGEST,
                    f"resources[{index}].digest must be sha256: and 64 lowercase hex digits",
                    uri=shown,
                )
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            found.append(
                Violation(
                    _RES_SIZE,
                    f"resources[{index}].size must be an integer of 0 or more, "
                    f"not {_json_kind(size)}",
                    uri=shown,
                )
            )
        elif isinstance(uri, str):
            items.append(_Item(uri, size))
        unknown.update(str(key)[:80] for key in item if key not in _ITEM_KEYS)
    if unknown:
        found.append(
            Violation(
                _ENTRY_FIELDS,
                f"resources items carry unknown fields {sorted(unknown)[:5]}",
                refused=False,
            )
        )
    return items


def _json_kind(value: object) -> str:
    """What kind of JSON value ``value`` is, for a message (never the value itself)."""
    if value is _ABSENT:
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


def parse_entry(
    data: object,
    *,
    server: str | None = None,
    limits: Limits | None = None,
) -> SkillEntry:
    """Validate one entry; raise :class:`InvalidEntry` or :class:`SkillTooLarge`."""
    uri = data.get("uri") if isinstance(data, Mapping) else None
    uri_text = uri[:300] if isinstance(uri, str) else None
    try:
        return SkillEntry.model_validate(data, context={"limits": limits or Limits()})
    except SkillTooLarge as exc:
        raise exc.with_context(server=server, uri=uri_text) from None
    except ValidationError as exc:
        raise InvalidEntry(
            _summarise(exc, "invalid skill entry"),
            server=server,
            uri=uri_text,
            rule=_entry_rule(exc),
        ) from None


def _first_rule(error: ValidationError) -> tuple[str | None, tuple[int | str, ...]]:
    """The rule a validator named for the first problem, if any, and where it is."""
    detail = error.errors(include_url=False, include_input=False)[0]
    cause = detail.get("ctx", {}).get("error")
    return (cause.rule if isinstance(cause, RuleError) else None), tuple(detail["loc"])


def _entry_rule(error: ValidationError, prefix: int = 0) -> str:
    """The rule of the first problem of an entry (at ``loc[prefix:]`` in the error)."""
    rule, loc = _first_rule(error)
    if rule is not None:
        return rule
    loc = loc[prefix:]
    if not loc or loc[0] == "uri":
        return _ENTRY_URI
    if loc[0] == "frontmatter":
        return _ENTRY_FRONTMATTER
    # ("resources", "tuple[ResourceItem, ...]", index, field): a field of one item.
    field_rules = {"digest": _RES_DIGEST, "size": _RES_SIZE, "uri": _RES_WITHIN}
    if loc[0] == "resources" and len(loc) >= 4 and loc[3] in field_rules:
        return field_rules[str(loc[3])]
    return _ENTRY_RESOURCES


def _result_rule(error: ValidationError, rules: Mapping[str, str], default: str) -> str:
    """The rule of the first problem of a result, by the field it is in."""
    rule, loc = _first_rule(error)
    if rule is not None:
        return rule
    return rules.get(str(loc[0]), default) if loc else default


def _summarise(error: ValidationError, what: str) -> str:
    problems = []
    for detail in error.errors(include_url=False, include_input=False)[:3]:
        where = ".".join(str(part) for part in detail["loc"])
        message = detail["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    more = f" (+{error.error_count() - 3} more)" if error.error_count() > 3 else ""
    return f"{what}: " + "; ".join(problems) + more


class ListSkillsResult(WireModel):
    """A ``skills/list`` page as received; entries are parsed one by one afterwards."""

    skills: tuple[Any, ...]
    next_cursor: StrictStr | None = None
    ttl_ms: Annotated[StrictInt, Field(ge=0)] | None = None
    cache_scope: StrictStr | None = None


class GetSkillResult(WireModel):
    """A ``skills/get`` result; ``skill`` must be a valid entry."""

    skill: SkillEntry
    ttl_ms: Annotated[StrictInt, Field(ge=0)] | None = None
    cache_scope: StrictStr | None = None


class DirectoryChild(WireModel):
    """One direct child from ``resources/directory/read``."""

    uri: StrictStr
    name: StrictStr
    mime_type: StrictStr | None = None

    @field_validator("uri")
    @classmethod
    def _bound_uri(cls, value: str, info: ValidationInfo) -> str:
        limit = _limits(info).max_uri_length
        if len(value) > limit:
            raise ValueError(f"URI is longer than {limit} characters")
        return value

    @property
    def is_directory(self) -> bool:
        return self.mime_type == DIRECTORY_MIME_TYPE


class DirectoryReadResult(WireModel):
    """A ``resources/directory/read`` page."""

    resources: tuple[DirectoryChild, ...]
    next_cursor: StrictStr | None = None


@dataclass(frozen=True, slots=True)
class SkillsPage:
    """A parsed ``skills/list`` page: the valid entries, and why the others were refused."""

    entries: tuple[SkillEntry, ...]
    rejected: tuple[InvalidEntry | SkillTooLarge, ...]
    next_cursor: str | None
    ttl_ms: int | None
    cache_scope: str | None


def parse_skills_page(
    data: object,
    *,
    server: str | None = None,
    limits: Limits | None = None,
) -> SkillsPage:
    """Parse a ``skills/list`` result; a bad entry is reported and skipped, not fatal."""
    try:
        raw = data if isinstance(data, ListSkillsResult) else ListSkillsResult.model_validate(data)
    except ValidationError as exc:
        rule = _result_rule(exc, _PAGE_FIELD_RULES, _LIST_SHAPE)
        raise InvalidResponse(
            _summarise(exc, "invalid skills/list result"), server=server, rule=rule
        ) from None
    limits = limits or Limits()
    entries: list[SkillEntry] = []
    rejected: list[InvalidEntry | SkillTooLarge] = []
    for item in raw.skills:
        try:
            entries.append(parse_entry(item, server=server, limits=limits))
        except (InvalidEntry, SkillTooLarge) as exc:
            rejected.append(exc)
    return SkillsPage(
        entries=tuple(entries),
        rejected=tuple(rejected),
        next_cursor=raw.next_cursor,
        ttl_ms=raw.ttl_ms,
        cache_scope=raw.cache_scope,
    )


#: The rule of a ``skills/list`` result field that fails validation (by its model name).
_PAGE_FIELD_RULES = {
    "skills": _LIST_SHAPE,
    "nextCursor": _LIST_CURSOR,
    "next_cursor": _LIST_CURSOR,
    "ttlMs": _LIST_CACHE,
    "ttl_ms": _LIST_CACHE,
    "cacheScope": _LIST_CACHE,
    "cache_scope": _LIST_CACHE,
}


def page_violations(data: object, *, modern: bool) -> list[Violation]:
    """What a raw ``skills/list`` result breaks beyond its entries (each entry is checked by
    :func:`entry_violations`). ``modern``: the 2026-07-28 wire, on which the result carries
    ``ttlMs`` and ``cacheScope``."""
    if not isinstance(data, Mapping):
        return [Violation(_LIST_SHAPE, f"the result must be an object, not {_json_kind(data)}")]
    found: list[Violation] = []
    skills = data.get("skills", _ABSENT)
    if not isinstance(skills, list | tuple):
        found.append(Violation(_LIST_SHAPE, f"skills must be an array, not {_json_kind(skills)}"))
    cursor = data.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        found.append(
            Violation(_LIST_CURSOR, f"nextCursor must be a string, not {_json_kind(cursor)}")
        )
    elif isinstance(cursor, str) and len(cursor) > _MAX_CURSOR:
        found.append(Violation(_LIST_CURSOR, f"nextCursor is longer than {_MAX_CURSOR} characters"))
    found += _cache_violations(data, _LIST_CACHE, "skills/list", modern=modern)
    return found


def _cache_violations(
    data: Mapping[str, object], rule: str, method: str, *, modern: bool, checked: bool = True
) -> list[Violation]:
    """``ttlMs`` and ``cacheScope`` of a result. ``checked``: the host validates the types
    of those present (and refuses the result otherwise)."""
    found: list[Violation] = []
    ttl = data.get("ttlMs")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
        found.append(
            Violation(rule, f"{method}: ttlMs must be an integer of 0 or more", refused=checked)
        )
    scope = data.get("cacheScope")
    if scope is not None and not isinstance(scope, str):
        found.append(Violation(rule, f"{method}: cacheScope must be a string", refused=checked))
    elif isinstance(scope, str) and scope not in _CACHE_SCOPES:
        found.append(
            Violation(
                rule,
                f'{method}: cacheScope must be "public" or "private", not {scope[:40]!r}',
                refused=False,
            )
        )
    if modern:
        missing = [key for key in ("ttlMs", "cacheScope") if data.get(key) is None]
        if missing:
            found.append(
                Violation(
                    rule,
                    f"{method}: the result lacks {' and '.join(missing)}, which protocol "
                    "2026-07-28 requires",
                    refused=False,
                )
            )
    return found


#: The rule of a ``skills/get`` result field that fails validation.
_GET_FIELD_RULES = {"ttlMs": _GET_CACHE, "ttl_ms": _GET_CACHE, "cacheScope": _GET_CACHE}


def get_violations(
    data: object, uri: str, *, modern: bool, limits: Limits | None = None
) -> list[Violation]:
    """What a raw ``skills/get`` result for ``uri`` breaks: its entry (every rule of
    :func:`entry_violations`), the echo of the URI asked for, a cursor, the cache
    attributes."""
    if not isinstance(data, Mapping):
        return [Violation(_ENTRY_URI, f"the result must be an object, not {_json_kind(data)}")]
    skill = data.get("skill", _ABSENT)
    found = entry_violations(skill, limits=limits)
    if isinstance(skill, Mapping) and isinstance(skill.get("uri"), str) and skill["uri"] != uri:
        found.append(
            Violation(
                _GET_ECHO,
                f"skills/get answered for a different skill, {skill['uri'][:300]!r}",
            )
        )
    if data.get("nextCursor") is not None:
        found.append(
            Violation(_GET_CURSOR, "skills/get result carries a nextCursor", refused=False)
        )
    found += _cache_violations(data, _GET_CACHE, "skills/get", modern=modern)
    return found


def get_rule(error: ValidationError) -> str:
    """The rule of the first problem of a ``skills/get`` result that failed validation."""
    rule, loc = _first_rule(error)
    if rule is not None:
        return rule
    if loc and loc[0] == "skill":
        return _entry_rule(error, prefix=1)
    return _result_rule(error, _GET_FIELD_RULES, _ENTRY_URI)


def directory_violations(
    data: object, *, modern: bool, limits: Limits | None = None
) -> list[Violation]:
    """What a raw ``resources/directory/read`` result breaks: its shape as the host
    validates it, and the cache attributes of the 2026-07-28 wire."""
    if not isinstance(data, Mapping):
        return [Violation(_DIR_SHAPE, f"the result must be an object, not {_json_kind(data)}")]
    found: list[Violation] = []
    try:
        DirectoryReadResult.model_validate(data, context={"limits": limits or Limits()})
    except ValidationError as exc:
        found.append(
            Violation(_DIR_SHAPE, _summarise(exc, "invalid resources/directory/read result"))
        )
    found += _cache_violations(
        data, _DIR_CACHE, "resources/directory/read", modern=modern, checked=False
    )
    return found


def capability_violations(setting: object, *, resources: bool) -> list[Violation]:
    """What the server's declaration of the skills extension breaks. ``setting`` is the
    value under the extension's identifier (None: not declared); ``resources``, whether
    the server declares the ``resources`` capability."""
    if setting is None:
        return [
            Violation(_CAP_DECLARED, f"the server does not declare the {EXTENSION_ID} extension")
        ]
    found: list[Violation] = []
    if not resources:
        found.append(
            Violation(
                _CAP_RESOURCES,
                "the server declares the skills extension without the resources capability",
            )
        )
    if not isinstance(setting, Mapping):
        found.append(Violation(_CAP_DIRECTORY_READ, f"the {EXTENSION_ID} capability is malformed"))
        return found
    envelope = sorted(_ENVELOPE_KEYS.intersection(setting))
    if envelope:
        found.append(
            Violation(
                _CAP_INLINE,
                f"the settings sit under {envelope}, an envelope SEP-2133 does not define; "
                "hosts read them directly under the identifier",
                refused=False,
            )
        )
    if "directoryRead" in setting and not isinstance(setting["directoryRead"], bool):
        found.append(Violation(_CAP_DIRECTORY_READ, f"the {EXTENSION_ID} capability is malformed"))
    return found


def read_capability(
    setting: object, *, resources: bool, server: str | None = None
) -> SkillsCapability:
    """The extension's settings; raise :class:`CapabilityMissing` for what the host refuses."""
    for violation in capability_violations(setting, resources=resources):
        if violation.refused:
            raise CapabilityMissing(violation.message, server=server, rule=violation.rule)
    try:
        return SkillsCapability.model_validate(setting)
    except ValidationError:  # pragma: no cover - capability_violations refuses it first
        raise CapabilityMissing(
            f"the {EXTENSION_ID} capability is malformed", server=server, rule=_CAP_DIRECTORY_READ
        ) from None
