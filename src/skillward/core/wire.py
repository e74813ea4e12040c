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
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, Literal, Self

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
from skillward.core.errors import InvalidEntry, InvalidResponse, InvalidUri, SkillTooLarge
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
    "check_skill_name",
    "json_size",
    "lint_frontmatter",
    "parse_entry",
    "parse_skills_page",
]

EXTENSION_ID = "io.modelcontextprotocol/skills"
DIRECTORY_MIME_TYPE = "inode/directory"
DYNAMIC = "dynamic"

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
# Checked by pydantic-core; "$" there matches only at the very end, never before a newline.
_DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
_MAX_NAME = 64
_MAX_DESCRIPTION = 1024


def check_skill_name(name: str) -> str:
    """Return ``name`` if it follows the Agent Skills naming rules, else raise ValueError."""
    if not isinstance(name, str) or not 1 <= len(name) <= _MAX_NAME or not _NAME_RE.match(name):
        shown = name[:80] if isinstance(name, str) else type(name).__name__
        raise ValueError(
            f"skill name {shown!r} must be 1-{_MAX_NAME} characters of a-z, 0-9 and single "
            "hyphens, not starting or ending with a hyphen"
        )
    return name


def lint_frontmatter(frontmatter: Mapping[str, object]) -> None:
    """Check a parsed frontmatter against the Agent Skills format; raise ValueError.

    Beyond ``name`` and ``description``: ``compatibility`` is 1-500 characters,
    ``metadata`` maps strings to strings, and ``license`` and ``allowed-tools``
    are strings. Unknown fields are allowed.
    """
    name = frontmatter.get("name")
    if not isinstance(name, str):
        raise ValueError("frontmatter needs a string 'name'")  # noqa: TRY004 (one error type)
    check_skill_name(name)
    description = frontmatter.get("description")
    if not isinstance(description, str):
        raise ValueError("frontmatter needs a string 'description'")  # noqa: TRY004
    _check_description(description)
    compatibility = frontmatter.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500
    ):
        raise ValueError("compatibility must be a string of 1-500 characters")
    metadata = frontmatter.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise ValueError("metadata must map strings to strings")
    for key in ("license", "allowed-tools"):
        if key in frontmatter and not isinstance(frontmatter[key], str):
            raise ValueError(f"{key} must be a string")


def _check_description(text: str) -> str:
    if not 1 <= len(text) <= _MAX_DESCRIPTION:
        raise ValueError(f"description must be 1-{_MAX_DESCRIPTION} characters, not {len(text)}")
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
        limits = _limits(info)
        size = json_size(
            value,
            limit=limits.max_frontmatter_bytes,
            max_depth=limits.max_frontmatter_depth,
            max_nodes=limits.max_frontmatter_nodes,
        )
        if size > limits.max_frontmatter_bytes:
            raise ValueError(f"larger than {limits.max_frontmatter_bytes} bytes as JSON")
        return value

    @field_validator("resources", mode="before")
    @classmethod
    def _count_before_parsing(cls, value: object, info: ValidationInfo) -> object:
        # Refuse an oversized manifest before validating its items one by one.
        if isinstance(value, list | tuple):
            limit = _limits(info).max_skill_files
            if len(value) > limit:
                raise SkillTooLarge(
                    f"skill lists {len(value)} files; this host accepts at most {limit}",
                    uri=_entry_uri(info),
                )
        elif value is None:
            raise ValueError('resources must be an array or "dynamic", not null')
        return value

    @model_validator(mode="after")
    def _check_invariants(self, info: ValidationInfo) -> Self:
        try:
            skill_md = parse_uri(self.uri)
            root = skill_root_of(skill_md)
        except InvalidUri as exc:
            raise ValueError(f"uri: {exc.message}") from None
        if root.name != self.frontmatter.name:
            raise ValueError(
                f"the final skill-path segment {root.name[:80]!r} must equal "
                f"frontmatter.name {self.frontmatter.name!r}"
            )
        if isinstance(self.resources, tuple):
            self._check_manifest(root, _limits(info))
        self._root = root
        self._skill_md = skill_md
        self._manifest = (
            {} if isinstance(self.resources, str) else {i.uri: i for i in self.resources}
        )
        return self

    def _check_manifest(self, root: SkillRoot, limits: Limits) -> None:
        seen: set[str] = set()
        total = 0
        assert isinstance(self.resources, tuple)
        for item in self.resources:
            if item.uri in seen:
                raise ValueError(f"resources lists {item.uri[:200]!r} more than once")
            seen.add(item.uri)
            try:
                inside = root.holds(item.uri)
            except InvalidUri as exc:
                raise ValueError(f"resources item {item.uri[:200]!r}: {exc.message}") from None
            if not inside:
                raise ValueError(f"resources item {item.uri[:200]!r} is outside the skill root")
            total += item.size
        if self.uri not in seen:
            raise ValueError("resources must include the skill's own SKILL.md uri")
        if total > limits.max_skill_bytes:
            raise SkillTooLarge(
                f"skill totals {total} bytes; this host accepts at most {limits.max_skill_bytes}",
                uri=self.uri,
            )

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
            _summarise(exc, "invalid skill entry"), server=server, uri=uri_text
        ) from None


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
        raise InvalidResponse(
            _summarise(exc, "invalid skills/list result"), server=server
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
