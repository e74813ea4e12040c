"""The skill registry: per-origin namespaces, name resolution, and collisions.

Skills are keyed by (origin label, locator), never by name or URI alone. A
reference resolves like this:

* ``LABEL:NAME``, ``LABEL:SKILL-PATH`` (``acme:acme/billing/refunds``) or
  ``LABEL:URI`` (``acme:skill://acme/billing/refunds/SKILL.md``) look only in
  that origin. ``LABEL`` may be spelled as the servers file spells the name
  (``brave_search``, ``My Server``): it goes through the same
  :func:`~skillward.core.labels.normalise_label`, and names only the origin whose label
  is exactly the result. An unknown label is an error naming the nearest known one;
  it is never guessed;
* a bare ``NAME`` (or skill path, or URI) resolves only when exactly one skill
  anywhere matches it. Otherwise :class:`~skillward.core.errors.AmbiguousName` lists
  the qualified candidates.

Nothing ever shadows anything: two origins (or two entries of one listing) with
the same name are both kept, both reported by :meth:`Registry.collisions`, and
both reachable by their qualified references.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from skillward.core.errors import (
    AmbiguousName,
    ConfigError,
    InvalidEntry,
    SkillNotFound,
    SkillTooLarge,
    SkillwardError,
    UnknownServer,
    UsageError,
)
from skillward.core.labels import check_label, normalise_label
from skillward.core.origins import Origin, SkillKey
from skillward.core.uris import SKILL_FILE, fold_collisions, fold_key
from skillward.core.wire import SkillEntry

__all__ = [
    "Collision",
    "Declined",
    "Reference",
    "Registry",
    "SkillRecord",
    "nearest_label",
    "parse_reference",
    "unknown_label",
]

_URI_START = re.compile(r"[a-z][a-z0-9+.\-]*://")


@dataclass(frozen=True, slots=True)
class SkillRecord:
    """One skill the host knows of, and where it came from."""

    key: SkillKey
    origin: Origin
    name: str
    description: str
    #: The skill path (``acme/billing/refunds``) for MCP; the relative directory for local.
    path: str
    #: The listing (or ``skills/get``) entry, for an MCP skill.
    entry: SkillEntry | None = None
    #: The skill's directory, for a local skill.
    directory: str | None = None
    #: False for a skill reached by URI alone, confirmed with ``skills/get``.
    listed: bool = True

    @property
    def qualified(self) -> str:
        """A reference that names this skill alone, whatever else is known.

        ``LABEL:URI`` for an MCP skill, ``LABEL:PATH`` for a local one. The catalog
        shows shorter forms where they are unambiguous (:meth:`Registry.display_ref`).
        """
        return f"{self.origin.label}:{self.key.locator}"

    @classmethod
    def from_entry(cls, origin: Origin, entry: SkillEntry, *, listed: bool = True) -> SkillRecord:
        uri = entry.uri
        # What the dataclasses' own __init__ would set, set as it sets each field (a frozen
        # dataclass calls object.__setattr__, which finds the slot's descriptor), without
        # the keyword call: a listing makes one for each of its 10,000 entries. A test holds
        # it equal to the constructor's record, and to the fields the dataclass declares.
        key = _new(SkillKey)
        _KEY_ORIGIN(key, origin.label)
        _KEY_LOCATOR(key, uri)
        record = _new(cls)
        _RECORD_KEY(record, key)
        _RECORD_ORIGIN(record, origin)
        frontmatter = entry.frontmatter
        _RECORD_NAME(record, frontmatter.name)
        _RECORD_DESCRIPTION(record, frontmatter.description)
        # From the URI's text: the entry's parsed root is built only when first used.
        _RECORD_PATH(record, _skill_path(uri))
        _RECORD_ENTRY(record, entry)
        _RECORD_DIRECTORY(record, None)
        _RECORD_LISTED(record, listed)
        return record


_new = object.__new__
_KEY_ORIGIN, _KEY_LOCATOR = (SkillKey.__dict__[field].__set__ for field in ("origin", "locator"))
(
    _RECORD_KEY,
    _RECORD_ORIGIN,
    _RECORD_NAME,
    _RECORD_DESCRIPTION,
    _RECORD_PATH,
    _RECORD_ENTRY,
    _RECORD_DIRECTORY,
    _RECORD_LISTED,
) = (
    SkillRecord.__dict__[field].__set__
    for field in ("key", "origin", "name", "description", "path", "entry", "directory", "listed")
)


@dataclass(frozen=True, slots=True)
class Declined:
    """An entry the host refused to register, and why (shown to people, not hidden)."""

    origin: Origin
    error: InvalidEntry | SkillTooLarge | SkillwardError

    def matches(self, ref: Reference) -> bool:
        """Whether ``ref`` names this declined entry, judging from its URI alone."""
        uri = self.error.uri
        return uri is not None and ref.names(self.origin.label, uri)


@dataclass(frozen=True, slots=True)
class Collision:
    """Something a person should see: names that clash, or a server imitating another."""

    kind: Literal["name", "folded", "label-imitation"]
    subject: str
    members: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class Reference:
    """A parsed skill reference."""

    label: str | None
    kind: Literal["name", "path", "uri"]
    value: str

    def names(self, label: str, uri: str) -> bool:
        """Whether this names the skill at ``uri`` (its ``SKILL.md``) under ``label``,
        judging from the URI alone: its skill path, and the path's last segment as the
        name (SEP-2640 makes the two equal)."""
        if self.label is not None and self.label != label:
            return False
        if self.kind == "uri":
            return uri == self.value
        skill_path = _skill_path(uri)
        if self.kind == "path":
            return skill_path == self.value
        return skill_path.rsplit("/", 1)[-1] == self.value


def _keys(held: SkillKey | tuple[SkillKey, ...]) -> tuple[SkillKey, ...]:
    """The keys a name holds (:attr:`Registry._names`)."""
    return held if isinstance(held, tuple) else (held,)


def _skill_path(uri: str) -> str:
    """The skill path of a skill's canonical ``SKILL.md`` URI, read off its text."""
    return uri.partition("://")[2].removesuffix(_SKILL_FILE_SUFFIX)


_SKILL_FILE_SUFFIX = f"/{SKILL_FILE}"


def parse_reference(text: str) -> Reference:
    """Parse ``NAME``, ``PATH``, ``URI`` or any of them qualified as ``LABEL:...``.

    ``LABEL`` is normalised as servers files' names are (``brave_search:deploy`` is
    ``brave-search:deploy``), so a person can write the name they configured.
    """
    if not isinstance(text, str) or not text or len(text) > 2048:
        raise UsageError("a skill reference must be a non-empty string")
    label: str | None = None
    rest = text
    if not _URI_START.match(text) and ":" in text:
        written, _, rest = text.partition(":")
        try:
            label = normalise_label(written)
        except ConfigError:
            raise UsageError(
                f"{text!r} is not a skill reference: {written!r} is not a server label"
            ) from None
        if not rest:
            raise UsageError(f"{text!r} names a server but no skill")
    if _URI_START.match(rest):
        return Reference(label, "uri", rest)
    if "/" in rest:
        path = rest.strip("/")
        if not path:
            raise UsageError(f"{text!r} names no skill path")
        return Reference(label, "path", path)
    return Reference(label, "name", rest)


#: How many known labels an unknown-label error lists.
_LABELS_SHOWN = 12


def nearest_label(label: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` that ``label`` is most likely a slip for, if any is close.

    A suggestion for people only: a reference never resolves to it.
    """
    near = difflib.get_close_matches(label, sorted(set(known)), n=1)
    return near[0] if near else None


def unknown_label(label: str, known: Iterable[str], message: str) -> UnknownServer:
    """UnknownServer for ``label``, naming the nearest of the ``known`` labels
    (:func:`nearest_label`) and listing them in the hint."""
    labels = sorted(set(known))
    near = nearest_label(label, labels)
    if near is not None:
        message += f"; did you mean {near!r}?"
    if not labels:
        return UnknownServer(
            message, hint="None is known here: no server is connected, no skill directory added."
        )
    shown = ", ".join(labels[:_LABELS_SHOWN]) + (", ..." if len(labels) > _LABELS_SHOWN else "")
    return UnknownServer(message, hint=f"The labels known here: {shown}.")


class Registry:
    """Every origin's skills, keyed by (origin label, locator)."""

    def __init__(self) -> None:
        self._origins: dict[str, Origin] = {}
        self._records: dict[SkillKey, SkillRecord] = {}
        self._declined: dict[str, list[Declined]] = defaultdict(list)
        # Name -> keys, so name lookups stay linear in the catalog, not quadratic. A name
        # held once keeps its key alone: no set for each of a listing's 10,000 skills
        # (the garbage collector walks every one, each time it looks at the heap).
        self._names: dict[str, SkillKey | tuple[SkillKey, ...]] = {}
        # Each record's display reference, until the registry changes: the catalog asks
        # for every skill's, every time it is built.
        self._shown: dict[SkillKey, tuple[SkillRecord, str]] = {}
        # The collisions, until the registry changes: each approval request asks for them.
        self._collided: list[Collision] | None = None
        # Each origin's skills by their root, until the registry changes: each approval
        # request asks which skills enclose one (a walk up its path, not over them all).
        self._roots: dict[tuple[str, str, tuple[str, ...]], list[SkillKey]] | None = None
        # Which collisions name each member, built with the collisions they index.
        self._by_member: dict[str, list[int]] | None = None
        # The records in the order records() gives, until the registry changes: sorting
        # 10,000 of them is most of what building a catalog costs.
        self._sorted: list[SkillRecord] | None = None

    # --- maintenance ----------------------------------------------------------------

    def set_origin(
        self,
        origin: Origin,
        records: Iterable[SkillRecord],
        declined: Iterable[Declined] = (),
    ) -> None:
        """Replace everything known about ``origin`` with ``records``."""
        check_label(origin.label)
        existing = self._origins.get(origin.label)
        if existing is not None and existing.kind != origin.kind:
            raise ConfigError(f"label {origin.label!r} is already used by a {existing.kind} origin")
        self.remove_origin(origin.label)
        self._origins[origin.label] = origin
        # As put, each in turn, with what put checks and clears done once: after
        # remove_origin, a key is held already only when it is listed twice (put replaces it).
        if self._shown:
            self._shown.clear()
        self._collided = self._roots = self._sorted = None
        held, origins = self._records, self._origins
        for record in records:
            if record.origin.label not in origins:
                raise UnknownServer(f"no origin labelled {record.origin.label!r}")
            if record.key in held:
                self.put(record)
            else:
                held[record.key] = record
                self._name(record)
        self._declined[origin.label] = list(declined)

    def put(self, record: SkillRecord) -> None:
        """Add or replace one record (for example an unlisted skill, or a refreshed entry)."""
        if record.origin.label not in self._origins:
            raise UnknownServer(f"no origin labelled {record.origin.label!r}")
        self._forget(record.key)
        self._records[record.key] = record
        self._name(record)

    def _name(self, record: SkillRecord) -> None:
        """Index ``record``, just added, under its name."""
        held = self._names.get(record.name)
        self._names[record.name] = record.key if held is None else (*_keys(held), record.key)

    def _forget(self, key: SkillKey) -> None:
        if self._shown:
            self._shown.clear()
        self._collided = self._roots = self._sorted = None
        old = self._records.pop(key, None)
        if old is not None:
            rest = tuple(k for k in _keys(self._names.pop(old.name)) if k != key)
            if rest:
                self._names[old.name] = rest if len(rest) > 1 else rest[0]

    def _named(self, name: str) -> tuple[SkillKey, ...]:
        held = self._names.get(name)
        return () if held is None else _keys(held)

    def remove_origin(self, label: str) -> None:
        self._origins.pop(label, None)
        self._collided = self._roots = self._sorted = None
        self._declined.pop(label, None)
        for key in [k for k in self._records if k.origin == label]:
            self._forget(key)

    # --- queries ------------------------------------------------------------------------

    def origin(self, label: str) -> Origin:
        origin = self._origins.get(label)
        if origin is None:
            raise unknown_label(
                label, self._origins, f"no server or skill directory is labelled {label!r}"
            )
        return origin

    def origins(self) -> list[Origin]:
        return [self._origins[label] for label in sorted(self._origins)]

    def find_origin(self, label: str) -> Origin | None:
        """The origin registered under ``label``, if any."""
        return self._origins.get(label)

    def get(self, key: SkillKey) -> SkillRecord | None:
        return self._records.get(key)

    def records(self) -> list[SkillRecord]:
        ordered = self._sorted
        if ordered is None:
            ordered = sorted(
                self._records.values(), key=lambda r: (r.origin.label, r.path, r.key.locator)
            )
            self._sorted = ordered
        return list(ordered)

    def enclosing(self, record: SkillRecord) -> tuple[SkillKey, ...]:
        """The skills of ``record``'s origin whose root holds its SKILL.md (an MCP skill's
        enclosing skills; none for a local one), in the order of :meth:`records`."""
        entry = record.entry
        if entry is None:
            return ()
        roots = self._roots
        if roots is None:
            roots = defaultdict(list)
            for other in self._records.values():
                if other.entry is not None:
                    root = other.entry.root
                    roots[(other.origin.label, root.scheme, root.segments)].append(other.key)
            self._roots = roots = dict(roots)
        md = entry.skill_md
        label, segments = record.origin.label, md.segments
        found = [
            key
            for depth in range(len(segments))  # a root holds a file strictly below it
            for key in roots.get((label, md.scheme, segments[:depth]), ())
            if key != record.key
        ]
        held = self._records
        found.sort(key=lambda k: (k.origin, held[k].path, k.locator))
        return tuple(found)

    def declined(self) -> list[Declined]:
        return [d for label in sorted(self._declined) for d in self._declined[label]]

    def qualified_ref(self, record: SkillRecord) -> str:
        """The shortest qualified reference that resolves to ``record`` alone.

        ``LABEL:NAME``; ``LABEL:PATH`` when the origin has the name more than once;
        ``LABEL:URI`` when even the path is shared (entries that differ only in their
        URI scheme).
        """
        label = record.origin.label
        namesakes = self._named(record.name)
        if sum(key.origin == label for key in namesakes) <= 1:
            return f"{label}:{record.name}"
        same_path = [
            key
            for key in namesakes
            if key.origin == label and self._records[key].path == record.path
        ]
        if len(same_path) <= 1 or not record.origin.is_mcp:
            return f"{label}:{record.path}"
        return f"{label}:{record.key.locator}"

    def display_ref(self, record: SkillRecord) -> str:
        """The bare name when no other skill anywhere shares it, else the qualified form."""
        kept = self._shown.get(record.key)
        if kept is not None and kept[0] is record:
            return kept[1]
        shown = record.name
        if isinstance(self._names.get(record.name), tuple):
            shown = self.qualified_ref(record)
        self._shown[record.key] = (record, shown)
        return shown

    def resolve(self, reference: str | Reference) -> SkillRecord:
        """The one skill ``reference`` names, or raise; never guesses between origins."""
        ref = reference if isinstance(reference, Reference) else parse_reference(reference)
        label = ref.label
        if label is not None:
            self.origin(label)
        if ref.kind == "name":
            # From the name index: a load resolves a name, and a catalog holds thousands.
            held = self._records
            matches = [held[k] for k in self._named(ref.value) if label in (None, k.origin)]
        else:
            pool = [r for r in self._records.values() if label in (None, r.origin.label)]
            if ref.kind == "path":
                matches = [r for r in pool if r.path == ref.value]
            else:
                matches = [r for r in pool if r.origin.is_mcp and r.key.locator == ref.value]
        if len(matches) == 1:
            return matches[0]
        shown = f"{ref.label}:{ref.value}" if ref.label else ref.value
        if not matches:
            for declined in self.declined():
                if declined.matches(ref):
                    # A declined skill says why, rather than seeming not to exist.
                    raise declined.error
            raise SkillNotFound(f"no skill matches {shown!r}")
        candidates = sorted(self.qualified_ref(r) for r in matches)
        raise AmbiguousName(
            f"{shown!r} matches {len(matches)} skills; name one of them exactly",
            candidates=candidates,
        )

    def collisions(self) -> list[Collision]:
        """Everything a person should be shown: shared names, look-alikes, imitated labels."""
        return list(self._collided_now())

    def collisions_naming(self, *members: str) -> tuple[Collision, ...]:
        """The collisions among whose members any of ``members`` is, in the order of
        :meth:`collisions` (an approval request asks, for each load: from an index, not
        over every collision of a large catalog)."""
        collided = self._collided_now()
        by_member = self._by_member
        if by_member is None:
            by_member = defaultdict(list)
            for index, collision in enumerate(collided):
                for member in dict.fromkeys(collision.members):
                    by_member[member].append(index)
            self._by_member = by_member = dict(by_member)
        found = sorted({index for member in members for index in by_member.get(member, ())})
        return tuple(collided[index] for index in found)

    def _collided_now(self) -> list[Collision]:
        if self._collided is None:
            self._collided = self._collisions()
            self._by_member = None
        return self._collided

    def _collisions(self) -> list[Collision]:
        found: list[Collision] = []
        by_name: dict[str, list[SkillRecord]] = defaultdict(list)
        for record in self._records.values():
            by_name[record.name].append(record)
        for name in sorted(by_name):
            group = by_name[name]
            if len(group) > 1:
                members = tuple(sorted(self.qualified_ref(r) for r in group))
                origins = sorted({r.origin.label for r in group})
                found.append(
                    Collision(
                        "name",
                        name,
                        members,
                        f"{len(group)} skills are named {name!r} (in {', '.join(origins)}); "
                        "none shadows another, use the qualified names",
                    )
                )
        paths: dict[str, list[SkillRecord]] = defaultdict(list)
        for record in self._records.values():
            paths[record.path].append(record)
        for alike in fold_collisions(paths):
            # Every record at every look-alike path, not one per path.
            members = tuple(sorted(self.qualified_ref(r) for p in alike for r in paths[p]))
            found.append(
                Collision(
                    "folded",
                    fold_key(alike[0]),
                    members,
                    "skill paths that differ only in case or Unicode form: " + ", ".join(alike),
                )
            )
        labels = {fold_key(label): label for label in self._origins}
        for origin in self.origins():
            if not origin.is_mcp or not origin.detail:
                continue
            imitated = labels.get(fold_key(origin.detail))
            if imitated is not None and imitated != origin.label:
                found.append(
                    Collision(
                        "label-imitation",
                        imitated,
                        (origin.label,),
                        f"server {origin.label!r} reports the name {origin.detail[:80]!r}, "
                        f"which is the label of another origin ({imitated!r}); "
                        "self-reported names are not identities",
                    )
                )
        return found
