"""What a raw ``skills/list``, ``skills/get`` or ``resources/directory/read`` result, and
the server's declaration of the extension, break beyond their entries: every violation
collected, for ``skillward check``; and the host's reading of the declaration.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import (
    ValidationError,
)

from skillward.core._entries import (
    entry_rule,
    entry_violations,
    first_rule,
    result_rule,
    summarise,
)
from skillward.core._fields import (
    ABSENT,
    CACHE_SCOPES,
    CAP_DECLARED,
    CAP_DIRECTORY_READ,
    CAP_INLINE,
    CAP_RESOURCES,
    DIR_CACHE,
    DIR_SHAPE,
    ENTRY_URI,
    ENVELOPE_KEYS,
    EXTENSION_ID,
    GET_CACHE,
    GET_CURSOR,
    GET_ECHO,
    LIST_CACHE,
    LIST_CURSOR,
    LIST_SHAPE,
    MAX_CURSOR,
    json_kind,
)
from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
)
from skillward.core.rules import Violation
from skillward.core.wire import (
    DirectoryReadResult,
    SkillsCapability,
)


def page_violations(data: object, *, modern: bool) -> list[Violation]:
    """What a raw ``skills/list`` result breaks beyond its entries (each entry is checked by
    :func:`entry_violations`). ``modern``: the 2026-07-28 wire, on which the result carries
    ``ttlMs`` and ``cacheScope``."""
    if not isinstance(data, Mapping):
        return [Violation(LIST_SHAPE, f"the result must be an object, not {json_kind(data)}")]
    found: list[Violation] = []
    skills = data.get("skills", ABSENT)
    if not isinstance(skills, list | tuple):
        found.append(Violation(LIST_SHAPE, f"skills must be an array, not {json_kind(skills)}"))
    cursor = data.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        found.append(
            Violation(LIST_CURSOR, f"nextCursor must be a string, not {json_kind(cursor)}")
        )
    elif isinstance(cursor, str) and (too_long := cursor_problem(cursor)) is not None:
        found.append(Violation(LIST_CURSOR, too_long))
    found += _cache_violations(data, LIST_CACHE, "skills/list", modern=modern)
    return found


def get_echo_problem(answered: str, asked: str) -> str | None:
    """What is wrong with a ``skills/get`` answer for ``answered`` when ``asked`` was
    asked for (SW-GET-002), or None: the host refuses it, and check reports it."""
    if answered == asked:
        return None
    return f"skills/get answered for a different skill, {answered[:300]!r}"


def cursor_problem(cursor: str) -> str | None:
    """What is wrong with a ``nextCursor`` string (SW-LIST-003, SW-DIR-003), or None."""
    if len(cursor) > MAX_CURSOR:
        return f"nextCursor is longer than {MAX_CURSOR} characters"
    return None


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
    elif isinstance(scope, str) and scope not in CACHE_SCOPES:
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
_GET_FIELD_RULES = {"ttlMs": GET_CACHE, "ttl_ms": GET_CACHE, "cacheScope": GET_CACHE}


def get_violations(
    data: object, uri: str, *, modern: bool, limits: Limits | None = None
) -> list[Violation]:
    """What a raw ``skills/get`` result for ``uri`` breaks: its entry (every rule of
    :func:`entry_violations`), the echo of the URI asked for, a cursor, the cache
    attributes."""
    if not isinstance(data, Mapping):
        return [Violation(ENTRY_URI, f"the result must be an object, not {json_kind(data)}")]
    skill = data.get("skill", ABSENT)
    found = entry_violations(skill, limits=limits)
    if isinstance(skill, Mapping) and isinstance(skill.get("uri"), str):
        echo = get_echo_problem(skill["uri"], uri)
        if echo is not None:
            found.append(Violation(GET_ECHO, echo))
    if data.get("nextCursor") is not None:
        found.append(Violation(GET_CURSOR, "skills/get result carries a nextCursor", refused=False))
    found += _cache_violations(data, GET_CACHE, "skills/get", modern=modern)
    return found


def get_rule(error: ValidationError) -> str:
    """The rule of the first problem of a ``skills/get`` result that failed validation."""
    rule, loc = first_rule(error)
    if rule is not None:
        return rule
    if loc and loc[0] == "skill":
        return entry_rule(error, prefix=1)
    return result_rule(error, _GET_FIELD_RULES, ENTRY_URI)


def directory_violations(
    data: object, *, modern: bool, limits: Limits | None = None
) -> list[Violation]:
    """What a raw ``resources/directory/read`` result breaks: its shape as the host
    validates it, and the cache attributes of the 2026-07-28 wire."""
    if not isinstance(data, Mapping):
        return [Violation(DIR_SHAPE, f"the result must be an object, not {json_kind(data)}")]
    found: list[Violation] = []
    try:
        DirectoryReadResult.model_validate(data, context={"limits": limits or Limits()})
    except ValidationError as exc:
        found.append(
            Violation(DIR_SHAPE, summarise(exc, "invalid resources/directory/read result"))
        )
    found += _cache_violations(
        data, DIR_CACHE, "resources/directory/read", modern=modern, checked=False
    )
    return found


def capability_violations(setting: object, *, resources: bool) -> list[Violation]:
    """What the server's declaration of the skills extension breaks. ``setting`` is the
    value under the extension's identifier (None: not declared); ``resources``, whether
    the server declares the ``resources`` capability."""
    if setting is None:
        return [
            Violation(CAP_DECLARED, f"the server does not declare the {EXTENSION_ID} extension")
        ]
    found: list[Violation] = []
    if not resources:
        found.append(
            Violation(
                CAP_RESOURCES,
                "the server declares the skills extension without the resources capability",
            )
        )
    if not isinstance(setting, Mapping):
        found.append(Violation(CAP_DIRECTORY_READ, f"the {EXTENSION_ID} capability is malformed"))
        return found
    envelope = sorted(ENVELOPE_KEYS.intersection(setting))
    if envelope:
        found.append(
            Violation(
                CAP_INLINE,
                f"the settings sit under {envelope}, an envelope SEP-2133 does not define; "
                "hosts read them directly under the identifier",
                refused=False,
            )
        )
    if "directoryRead" in setting and not isinstance(setting["directoryRead"], bool):
        found.append(Violation(CAP_DIRECTORY_READ, f"the {EXTENSION_ID} capability is malformed"))
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
            f"the {EXTENSION_ID} capability is malformed", server=server, rule=CAP_DIRECTORY_READ
        ) from None
