"""A skill entry's rules, checked on raw data: shared by :class:`~skillward.core.wire.SkillEntry`
(which raises at the first) and :func:`entry_violations` (which collects them all), and
the rule a failed validation broke, named from pydantic's error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pydantic import (
    ValidationError,
)

from skillward.core._fields import (
    ABSENT,
    DIGEST_RE,
    DYNAMIC,
    ENTRY_DYNAMIC,
    ENTRY_FIELDS,
    ENTRY_FRONTMATTER,
    ENTRY_RESOURCES,
    ENTRY_URI,
    FM_NAME,
    LIM_BYTES,
    LIM_FILES,
    LIM_FRONTMATTER,
    RES_DIGEST,
    RES_ONCE,
    RES_SELF,
    RES_SIZE,
    RES_WITHIN,
    URI_CANONICAL,
    URI_NAME,
    URI_SCHEME,
    frontmatter_violations,
    json_kind,
    json_size,
)
from skillward.core.config import Limits
from skillward.core.errors import (
    InvalidUri,
    SkillTooLarge,
)
from skillward.core.rules import RuleError, Violation
from skillward.core.uris import ResourceUri, SkillRoot, parse_uri, skill_root_of

if TYPE_CHECKING:
    from skillward.core.wire import ResourceItem

_ENTRY_KEYS = frozenset({"uri", "frontmatter", "resources", "_meta"})
_ITEM_KEYS = frozenset({"uri", "digest", "size", "_meta"})


def check_frontmatter_bounds(value: object, limits: Limits) -> None:
    if type(value) is dict and len(value) == 2:  # most skills': the name and description
        name, description = value.get("name"), value.get("description")
        if (
            type(name) is str
            and type(description) is str
            and bare_frontmatter_fits(name, description, limits)
        ):
            return  # within the caps, as the walk below would find
    try:
        size = json_size(
            value,
            limit=limits.max_frontmatter_bytes,
            max_depth=limits.max_frontmatter_depth,
            max_nodes=limits.max_frontmatter_nodes,
        )
    except ValueError as exc:
        raise RuleError(LIM_FRONTMATTER, str(exc)) from None
    if size > limits.max_frontmatter_bytes:
        raise RuleError(
            LIM_FRONTMATTER, f"larger than {limits.max_frontmatter_bytes} bytes as JSON"
        )


#: What :func:`~skillward.core._fields.json_size` counts for ``{"name": N, "description":
#: D}`` beside the two strings' lengths: the braces and separators (5), each key with
#: its quotes (6 and 13), each value's quotes (2 and 2).
_BARE_FRONTMATTER_BYTES = 28
#: Its values, keys included: the object, two keys, two strings.
_BARE_FRONTMATTER_NODES = 5


def bare_frontmatter_fits(name: str, description: str, limits: Limits) -> bool:
    """Whether :func:`check_frontmatter_bounds` passes the frontmatter ``{"name": name,
    "description": description}`` (two strings, no other key), computed rather than
    walked: the walk's count only grows, so it passes when none of its three bounds is
    passed at the end. A listing's entries are mostly of this shape."""
    return (
        limits.max_frontmatter_depth > 0
        and limits.max_frontmatter_nodes >= _BARE_FRONTMATTER_NODES
        and _BARE_FRONTMATTER_BYTES + len(name) + len(description) <= limits.max_frontmatter_bytes
    )


def too_many_files(count: int, limit: int) -> str:
    return f"skill lists {count} files; this host accepts at most {limit}"


def name_mismatch(segment: str, name: str) -> str:
    return f"the final skill-path segment {segment[:80]!r} must equal frontmatter.name {name!r}"


def skill_uri(uri: str) -> tuple[ResourceUri, SkillRoot]:
    """The parsed SKILL.md URI and its skill root, or a RuleError naming the rule broken."""
    try:
        skill_md = parse_uri(uri)
        return skill_md, skill_root_of(skill_md)
    except InvalidUri as exc:
        raise RuleError(exc.rule or URI_CANONICAL, f"uri: {exc.message}") from None


class _Item(NamedTuple):
    """A manifest item's URI and size, as :func:`check_manifest` reads them."""

    uri: str
    size: int


def _broken(found: list[Violation] | None, rule: str, message: str, uri: str | None = None) -> None:
    """Report a broken rule: raise it (``found`` is None: the host's path), or collect it."""
    if found is None:
        raise RuleError(rule, message, uri=uri)
    found.append(Violation(rule, message, uri=uri))


def check_manifest(
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
            _broken(found, RES_ONCE, f"resources lists {uri[:200]!r} more than once", uri)
            continue
        seen.add(uri)
        try:
            inside = root.holds(uri)
        except InvalidUri as exc:
            rule = exc.rule or URI_CANONICAL
            _broken(found, rule, f"resources item {uri[:200]!r}: {exc.message}", uri)
            continue
        if not inside:
            _broken(
                found, RES_WITHIN, f"resources item {uri[:200]!r} is outside the skill root", uri
            )
            continue
        total += item.size
    if entry_uri not in seen:
        _broken(found, RES_SELF, "resources must include the skill's own SKILL.md uri")
    if total > limits.max_skill_bytes:
        message = f"skill totals {total} bytes; this host accepts at most {limits.max_skill_bytes}"
        if found is None:
            raise SkillTooLarge(message, uri=entry_uri, rule=LIM_BYTES)
        found.append(Violation(LIM_BYTES, message))


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
        return [Violation(ENTRY_URI, f"an entry must be an object, not {json_kind(data)}")]
    found: list[Violation] = []
    uri = data.get("uri")
    if not isinstance(uri, str):
        found.append(Violation(ENTRY_URI, f"uri must be a string, not {json_kind(uri)}"))
    name: str | None = None
    frontmatter = data.get("frontmatter")
    if not isinstance(frontmatter, Mapping):
        found.append(
            Violation(
                ENTRY_FRONTMATTER, f"frontmatter must be an object, not {json_kind(frontmatter)}"
            )
        )
    else:
        try:
            check_frontmatter_bounds(frontmatter, limits)
        except RuleError as error:
            found.append(error.violation())
        else:
            broken = frontmatter_violations(frontmatter)
            found += broken
            named = frontmatter.get("name")
            if isinstance(named, str) and not any(v.rule == FM_NAME for v in broken):
                name = named
    items = _item_violations(data.get("resources", ABSENT), limits, found)
    if isinstance(uri, str):
        try:
            _, root = skill_uri(uri)
        except RuleError as error:
            found.append(error.violation())
        else:
            if name is not None and root.name != name:
                found.append(Violation(URI_NAME, name_mismatch(root.name, name), field="name"))
            if items is not None:
                check_manifest(root, uri, items, limits, found)
            if root.scheme != "skill":
                found.append(
                    Violation(
                        URI_SCHEME,
                        f"the scheme {root.scheme[:40]!r} is not skill://",
                        refused=False,
                    )
                )
    unknown = sorted(str(key)[:80] for key in data if key not in _ENTRY_KEYS)
    if unknown:
        found.append(
            Violation(
                ENTRY_FIELDS, f"the entry carries unknown fields {unknown[:5]}", refused=False
            )
        )
    return found


def _item_violations(
    resources: object, limits: Limits, found: list[Violation]
) -> list[_Item] | None:
    """Collect what is wrong with ``resources`` item by item; the well-formed items, for the
    manifest rules, or None when there is no array of items to check."""
    if resources == DYNAMIC:
        found.append(
            Violation(
                ENTRY_DYNAMIC,
                'resources is "dynamic": the skill cannot be verified, and hosts may decline it',
                refused=False,
            )
        )
        return None
    if not isinstance(resources, list | tuple):
        kind = json_kind(resources)
        found.append(
            Violation(ENTRY_RESOURCES, f'resources must be an array or "dynamic", not {kind}')
        )
        return None
    if len(resources) > limits.max_skill_files:
        found.append(Violation(LIM_FILES, too_many_files(len(resources), limits.max_skill_files)))
        return None
    items: list[_Item] = []
    unknown: set[str] = set()
    for index, item in enumerate(resources):
        if not isinstance(item, Mapping):
            found.append(
                Violation(
                    ENTRY_RESOURCES,
                    f"resources[{index}] must be an object, not {json_kind(item)}",
                )
            )
            continue
        uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        shown = uri[:200] if isinstance(uri, str) else None
        if not isinstance(uri, str):
            found.append(Violation(RES_WITHIN, f"resources[{index}].uri must be a string"))
        if not isinstance(digest, str) or not DIGEST_RE.match(digest):
            found.append(
                Violation(
                    RES_DIGEST,
                    f"resources[{index}].digest must be sha256: and 64 lowercase hex digits",
                    uri=shown,
                )
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            found.append(
                Violation(
                    RES_SIZE,
                    f"resources[{index}].size must be an integer of 0 or more, "
                    f"not {json_kind(size)}",
                    uri=shown,
                )
            )
        elif isinstance(uri, str):
            items.append(_Item(uri, size))
        unknown.update(str(key)[:80] for key in item if key not in _ITEM_KEYS)
    if unknown:
        found.append(
            Violation(
                ENTRY_FIELDS,
                f"resources items carry unknown fields {sorted(unknown)[:5]}",
                refused=False,
            )
        )
    return items


def first_rule(error: ValidationError) -> tuple[str | None, tuple[int | str, ...]]:
    """The rule a validator named for the first problem, if any, and where it is."""
    detail = error.errors(include_url=False, include_input=False)[0]
    cause = detail.get("ctx", {}).get("error")
    return (cause.rule if isinstance(cause, RuleError) else None), tuple(detail["loc"])


def entry_rule(error: ValidationError, prefix: int = 0) -> str:
    """The rule of the first problem of an entry (at ``loc[prefix:]`` in the error)."""
    rule, loc = first_rule(error)
    if rule is not None:
        return rule
    loc = loc[prefix:]
    if not loc or loc[0] == "uri":
        return ENTRY_URI
    if loc[0] == "frontmatter":
        return ENTRY_FRONTMATTER
    # ("resources", "tuple[ResourceItem, ...]", index, field): a field of one item.
    field_rules = {"digest": RES_DIGEST, "size": RES_SIZE, "uri": RES_WITHIN}
    if loc[0] == "resources" and len(loc) >= 4 and loc[3] in field_rules:
        return field_rules[str(loc[3])]
    return ENTRY_RESOURCES


def result_rule(error: ValidationError, rules: Mapping[str, str], default: str) -> str:
    """The rule of the first problem of a result, by the field it is in."""
    rule, loc = first_rule(error)
    if rule is not None:
        return rule
    return rules.get(str(loc[0]), default) if loc else default


def summarise(error: ValidationError, what: str) -> str:
    problems = []
    for detail in error.errors(include_url=False, include_input=False)[:3]:
        where = ".".join(str(part) for part in detail["loc"])
        message = detail["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    more = f" (+{error.error_count() - 3} more)" if error.error_count() > 3 else ""
    return f"{what}: " + "; ".join(problems) + more
