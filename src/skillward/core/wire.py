"""The SEP-2640 wire model: frozen pydantic models (a manifest's items: pydantic
dataclasses), parsed once at the boundary.

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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass as pydantic_dataclass

from skillward.core._collector import collector_paused
from skillward.core._entries import (
    check_frontmatter_bounds,
    check_manifest,
    entry_rule,
    name_mismatch,
    result_rule,
    skill_uri,
    summarise,
    too_many_files,
)
from skillward.core._fields import (
    DIGEST_PATTERN,
    DIGEST_RE,
    DIRECTORY_MIME_TYPE,
    DYNAMIC,
    ENTRY_RESOURCES,
    LIM_FILES,
    LIST_CACHE,
    LIST_CURSOR,
    LIST_SHAPE,
    URI_NAME,
    check_description,
    check_skill_name,
    content_digest,
    frontmatter_digests,
    is_description,
    is_skill_name,
)
from skillward.core.config import Limits
from skillward.core.errors import (
    InvalidEntry,
    InvalidResponse,
    SkillTooLarge,
)
from skillward.core.rules import RuleError
from skillward.core.uris import (
    MAX_URI_LENGTH,
    PLAIN_PATH_RE,
    ResourceUri,
    SkillRoot,
    parse_uri,
    plain_skill_root,
    plainly_below,
)

__all__ = [
    "DirectoryChild",
    "DirectoryReadResult",
    "Frontmatter",
    "GetSkillResult",
    "ListSkillsResult",
    "ResourceItem",
    "SkillEntry",
    "SkillsCapability",
    "SkillsPage",
    "parse_entries",
    "parse_entry",
    "parse_skills_page",
    "read_skills_result",
]


_DEFAULT_LIMITS = Limits()


def _limits(info: ValidationInfo) -> Limits:
    context = info.context
    # A dict is checked first: an ABC's isinstance costs a microsecond, thrice an entry.
    if type(context) is dict or isinstance(context, Mapping):
        limits = context.get("limits")
        if isinstance(limits, Limits):
            return limits
    return _DEFAULT_LIMITS


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


# A validated dataclass, not a model: no field set and no dict for each of the up to
# 512 files of each of a listing's 10,000 entries (they cost their validation time again
# in the garbage collector).
@pydantic_dataclass(frozen=True, slots=True, config=ConfigDict(extra="ignore", defer_build=True))
class ResourceItem:
    """One file of a skill: its URI, SHA-256 digest and byte size.

    The URI is parsed, and proven to lie inside the skill, by the entry that lists it.
    """

    uri: StrictStr
    digest: Annotated[StrictStr, Field(pattern=DIGEST_PATTERN)]
    size: Annotated[StrictInt, Field(ge=0)]


class Frontmatter(WireModel):
    """A skill's frontmatter as the listing carries it: verbatim, unknown keys kept."""

    # Kept, because a SKILL.md's frontmatter must equal it field by field (bounded by
    # SkillEntry before it gets here).
    model_config = ConfigDict(alias_generator=None, extra="allow")

    name: Annotated[StrictStr, AfterValidator(check_skill_name)]
    description: Annotated[StrictStr, AfterValidator(check_description)]

    def as_dict(self) -> dict[str, Any]:
        """The whole frontmatter object, as a fresh JSON-compatible dict."""
        return self.model_dump(mode="json")


class SkillEntry(WireModel):
    """A skill entry from ``skills/list`` or ``skills/get``, with every invariant checked."""

    uri: StrictStr
    frontmatter: Frontmatter
    resources: tuple[ResourceItem, ...] | Literal["dynamic"]

    @field_validator("frontmatter", mode="before")
    @classmethod
    def _bound_frontmatter(cls, value: object, info: ValidationInfo) -> object:
        # The SKILL.md frontmatter caps, applied to the listing's copy before it is copied.
        check_frontmatter_bounds(value, _limits(info))
        return value

    @field_validator("resources", mode="before")
    @classmethod
    def _count_before_parsing(cls, value: object, info: ValidationInfo) -> object:
        # Refuse an oversized manifest before validating its items one by one.
        if isinstance(value, list | tuple):
            limit = _limits(info).max_skill_files
            if len(value) > limit:
                raise SkillTooLarge(
                    too_many_files(len(value), limit), uri=_entry_uri(info), rule=LIM_FILES
                )
        elif value is None:
            raise RuleError(ENTRY_RESOURCES, 'resources must be an array or "dynamic", not null')
        return value

    @model_validator(mode="after")
    def _check_invariants(self, info: ValidationInfo) -> Self:
        # A URI and manifest in plain form are judged from their text, with no parsed URI
        # built; anything else by the full checks, which also name the problem.
        root = plain_skill_root(self.uri)
        name = skill_uri(self.uri)[1].name if root is None else root.rpartition("/")[2]
        if name != self.frontmatter.name:
            raise RuleError(URI_NAME, name_mismatch(name, self.frontmatter.name))
        if isinstance(self.resources, tuple):
            limits = _limits(info)
            if root is None or not _plain_manifest(root, self.uri, self.resources, limits):
                check_manifest(skill_uri(self.uri)[1], self.uri, self.resources, limits, None)
        return self

    # What the URI and the manifest give, built when first asked for and then kept beside
    # the fields (pydantic compares, hashes and serialises the fields alone): a listing
    # builds 10,000 entries and asks few of them, and a private attribute costs
    # microseconds a read.

    @cached_property
    def root(self) -> SkillRoot:
        """The skill's directory, ``<scheme>://<skill-path>``."""
        return skill_uri(self.uri)[1]

    @cached_property
    def skill_md(self) -> ResourceUri:
        """The parsed ``uri`` of the skill's SKILL.md."""
        return skill_uri(self.uri)[0]

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
        return MappingProxyType(self._by_uri)

    @cached_property
    def _by_uri(self) -> dict[str, ResourceItem]:
        items = () if isinstance(self.resources, str) else self.resources
        return {item.uri: item for item in items}

    @cached_property
    def file_paths(self) -> tuple[str, ...]:
        """Every listed file's path below the skill's directory (``references/guide.md``),
        sorted: what an activation lists. Empty for a dynamic skill."""
        root = self.root
        return tuple(sorted(root.file_path(parse_uri(uri)) for uri in self._by_uri))

    @cached_property
    def uri_by_path(self) -> Mapping[str, str]:
        """Each listed file's URI by its path below the skill's directory, as
        :attr:`file_paths` spells it (of two URIs with one path, the later listed): what
        ``read_skill_file`` compares a path against, on every call. Empty when dynamic."""
        root = self.root
        return MappingProxyType({root.file_path(parse_uri(uri)): uri for uri in self._by_uri})

    @property
    def total_size(self) -> int:
        if isinstance(self.resources, str):
            return 0
        return sum(item.size for item in self.resources)

    # What approvals, pins and the audit trail bind to, computed once per entry: a load
    # asks for them several times (the verdict, the pin, the activation, its audit).

    @cached_property
    def frontmatter_digests(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The digest of the whole frontmatter, and of each top-level field's value."""
        return frontmatter_digests(self.frontmatter.as_dict())

    @cached_property
    def requested_tools(self) -> tuple[str, ...]:
        """The tools ``allowed-tools`` requests (a request, never a grant), read as
        :func:`~skillward.core.frontmatter.allowed_tools` reads it."""
        # Imported when first asked for: the frontmatter parser brings YAML, which a
        # process that only lists skills never needs.
        from skillward.core.frontmatter import allowed_tools  # noqa: PLC0415

        return allowed_tools(self.frontmatter.as_dict())

    @cached_property
    def files(self) -> tuple[tuple[str, str, int], ...] | None:
        """The (uri, digest, size) of every listed file in URI order; None when dynamic."""
        if isinstance(self.resources, str):
            return None
        return tuple(sorted((item.uri, item.digest, item.size) for item in self.resources))

    @cached_property
    def content_hash(self) -> str | None:
        """One digest for exactly this content: the sorted (uri, digest, size) set and the
        frontmatter. What ``skillward pin`` prints, policy pins match, and the audit trail
        records. None for a dynamic skill, whose content nothing binds."""
        if self.files is None:
            return None
        return content_digest(self.uri, self.files, self.frontmatter_digests[0])


def _plain_manifest(
    root: str, entry_uri: str, items: tuple[ResourceItem, ...], limits: Limits
) -> bool:
    """Whether ``items`` keep every rule :func:`check_manifest` checks, judged from the
    text of their URIs: each listed once, each plainly below ``root``, the skill's own
    ``entry_uri`` among them, the total within the limit. False only sends them to
    :func:`check_manifest`."""
    seen: set[str] = set()
    total = 0
    for item in items:
        uri = item.uri
        if uri in seen or not plainly_below(root, uri):
            return False
        seen.add(uri)
        total += item.size
    return entry_uri in seen and total <= limits.max_skill_bytes


def _entry_uri(info: ValidationInfo) -> str | None:
    uri = info.data.get("uri") if isinstance(info.data, dict) else None
    return uri[:300] if isinstance(uri, str) else None


def plain_entry(data: object, limits: Limits) -> SkillEntry | None:
    """The entry the model builds from ``data``, built without pydantic when ``data`` is
    plain enough that each of the model's checks is seen to hold with nothing converted:
    JSON's exact types (``dict``, ``list``, ``str``, ``int``), the URI and every file's
    in plain form (:func:`~skillward.core.uris.plain_skill_root`, :func:`_plain_manifest`),
    a valid name and description (the predicates the model's validators use), the
    frontmatter within its caps (:func:`check_frontmatter_bounds`, as the model applies it).
    None for anything else, which only the model judges and names the problem of: so this
    accepts a subset of what the model accepts, and gives an equal entry (the property
    tests of ``tests/unit/test_plain_entry.py`` hold it to that).

    Why: a listing of 10,000 entries spent as long in pydantic's validation of them as in
    the garbage collector's walks over what it left, a field set for each entry and each
    frontmatter among it.
    """
    if type(data) is not dict:
        return None
    uri, frontmatter = data.get("uri"), data.get("frontmatter")
    if type(uri) is not str or type(frontmatter) is not dict:
        return None
    root = plain_skill_root(uri)
    if root is None:
        return None
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if (
        type(name) is not str
        or type(description) is not str
        or name != root.rpartition("/")[2]
        or not is_skill_name(name)
        or not is_description(description)
    ):
        return None
    extra: dict[str, Any] = {}
    if len(frontmatter) > 2:
        extra = {k: v for k, v in frontmatter.items() if k not in _FRONTMATTER_SET}
        if any(type(key) is not str for key in extra):
            return None
    try:
        check_frontmatter_bounds(frontmatter, limits)
    except RuleError:
        return None
    resources = data.get("resources")
    if type(resources) is str:
        if resources != DYNAMIC:
            return None
        files: tuple[ResourceItem, ...] | Literal["dynamic"] = "dynamic"
    elif type(resources) is list and len(resources) <= limits.max_skill_files:
        # Each item's fields, and what _plain_manifest holds the manifest to, in one pass:
        # each URI once, plainly below the root, the skill's own among them, the total
        # within the limit.
        below = root + "/"
        start = len(below)
        seen: set[str] = set()
        total = 0
        built = []
        for item in resources:
            if type(item) is not dict:
                return None
            file, digest, size = item.get("uri"), item.get("digest"), item.get("size")
            if (
                type(file) is not str
                or type(digest) is not str
                or type(size) is not int
                or size < 0
                or not _DIGEST_MATCH(digest)
                or file in seen
                or len(file) > MAX_URI_LENGTH
                or not file.startswith(below)
                or not _PLAIN_PATH_MATCH(file, start)
            ):
                return None
            seen.add(file)
            total += size
            made = _new(ResourceItem)
            _set_uri(made, file)
            _set_digest(made, digest)
            _set_size(made, size)
            built.append(made)
        if uri not in seen or total > limits.max_skill_bytes:
            return None
        files = tuple(built)
    else:
        return None
    made_frontmatter = _new(Frontmatter)
    _set_dict(made_frontmatter, {"name": name, "description": description})
    _set_extra(made_frontmatter, extra)
    _set_fields(made_frontmatter, {"name", "description", *extra} if extra else _FRONTMATTER_SET)
    _set_private(made_frontmatter, None)
    entry = _new(SkillEntry)
    _set_dict(entry, {"uri": uri, "frontmatter": made_frontmatter, "resources": files})
    _set_extra(entry, None)
    _set_fields(entry, _ENTRY_SET)
    _set_private(entry, None)
    return entry


#: The field sets of an entry and of a frontmatter with no unknown keys, each shared by
#: every instance :func:`plain_entry` builds: a frozen model's set is never changed (a
#: copy is, which copies it first).
_ENTRY_SET = {"uri", "frontmatter", "resources"}
_FRONTMATTER_SET = {"name", "description"}
_new = object.__new__
# What building an instance sets, each set as object.__setattr__ would (the data
# descriptor it finds on the type), without looking it up again for each of a listing's
# entries: a model's __dict__ and the three slots pydantic's BaseModel declares; a
# manifest item's three slots.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_set_uri = ResourceItem.__dict__["uri"].__set__
_set_digest = ResourceItem.__dict__["digest"].__set__
_set_size = ResourceItem.__dict__["size"].__set__
_DIGEST_MATCH = DIGEST_RE.match
_PLAIN_PATH_MATCH = PLAIN_PATH_RE.match


def parse_entry(
    data: object,
    *,
    server: str | None = None,
    limits: Limits | None = None,
) -> SkillEntry:
    """Validate one entry; raise :class:`InvalidEntry` or :class:`SkillTooLarge`."""
    limits = limits or _DEFAULT_LIMITS
    plain = plain_entry(data, limits)
    if plain is not None:
        return plain
    uri = data.get("uri") if isinstance(data, Mapping) else None
    uri_text = uri[:300] if isinstance(uri, str) else None
    try:
        return SkillEntry.model_validate(data, context={"limits": limits})
    except SkillTooLarge as exc:
        raise exc.with_context(server=server, uri=uri_text) from None
    except ValidationError as exc:
        raise InvalidEntry(
            summarise(exc, "invalid skill entry"),
            server=server,
            uri=uri_text,
            rule=entry_rule(exc),
        ) from None


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
    raw = read_skills_result(data, server=server)
    entries: list[SkillEntry] = []
    rejected: list[InvalidEntry | SkillTooLarge] = []
    with collector_paused():  # core/_collector.py says why
        parse_entries(raw.skills, entries, rejected, server=server, limits=limits or Limits())
    return SkillsPage(
        entries=tuple(entries),
        rejected=tuple(rejected),
        next_cursor=raw.next_cursor,
        ttl_ms=raw.ttl_ms,
        cache_scope=raw.cache_scope,
    )


def read_skills_result(data: object, *, server: str | None = None) -> ListSkillsResult:
    """A ``skills/list`` result with its entries not yet parsed: its cursor and hints
    checked; raise :class:`InvalidResponse`."""
    if isinstance(data, ListSkillsResult):
        return data
    try:
        return ListSkillsResult.model_validate(data)
    except ValidationError as exc:
        rule = result_rule(exc, _PAGE_FIELD_RULES, LIST_SHAPE)
        raise InvalidResponse(
            summarise(exc, "invalid skills/list result"), server=server, rule=rule
        ) from None


def parse_entries(
    items: Iterable[object],
    entries: list[SkillEntry],
    rejected: list[InvalidEntry | SkillTooLarge],
    *,
    server: str | None,
    limits: Limits,
) -> None:
    """Each of ``items`` parsed into ``entries``, or the reason it is refused into
    ``rejected``."""
    for item in items:
        # The plain path first, as parse_entry takes it, without its call for each entry.
        plain = plain_entry(item, limits)
        if plain is not None:
            entries.append(plain)
            continue
        try:
            entries.append(parse_entry(item, server=server, limits=limits))
        except (InvalidEntry, SkillTooLarge) as exc:
            rejected.append(exc)


#: The rule of a ``skills/list`` result field that fails validation (by its model name).
_PAGE_FIELD_RULES = {
    "skills": LIST_SHAPE,
    "nextCursor": LIST_CURSOR,
    "next_cursor": LIST_CURSOR,
    "ttlMs": LIST_CACHE,
    "ttl_ms": LIST_CACHE,
    "cacheScope": LIST_CACHE,
    "cache_scope": LIST_CACHE,
}
