"""Strict parsing of skill resource URIs, and containment inside a skill root.

SEP-2640 addresses a skill's files as ``<scheme>://<skill-path>/<file-path>``.
This module accepts only URIs that are already in canonical RFC 3986 form, so
the exact string is the identity and no two accepted strings denote the same
resource by normalisation:

* ASCII only; non-ASCII must be percent-encoded as UTF-8.
* A lowercase scheme, then ``//``. ``file:`` in any spelling is never a skill
  resource.
* No userinfo, port, IP literal, query, fragment, backslash, whitespace or
  control character.
* Percent-encodings use uppercase hex and never encode an unreserved character,
  ``/``, ``\\``, ``.``, NUL or another control character.
* No empty, ``.`` or ``..`` segment, and no trailing slash.

Identity is never case-folded or Unicode-normalised. :func:`fold_collisions`
reports strings that only differ after folding, because those are an
impersonation risk worth showing to a person.

``urllib.parse`` is deliberately not used: it lowercases the authority, treats
backslashes inconsistently, and does not resolve references for unknown schemes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillward.core.errors import InvalidUri

__all__ = [
    "MAX_URI_LENGTH",
    "PLAIN_PATH_RE",
    "SKILL_FILE",
    "ResourceUri",
    "SkillRoot",
    "fold_collisions",
    "fold_key",
    "parse_uri",
    "plain_skill_root",
    "plainly_below",
    "resolve_reference",
    "skill_root_of",
]

SKILL_FILE = "SKILL.md"
#: The longest URI :func:`parse_uri` accepts by default (and so the longest in an entry).
MAX_URI_LENGTH = 2048

_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
_SEGMENT_CHARS = _UNRESERVED | _SUB_DELIMS | frozenset(":@")
_AUTHORITY_CHARS = _UNRESERVED | _SUB_DELIMS
_HEX_UPPER = frozenset("0123456789ABCDEF")
_HEX_ANY = _HEX_UPPER | frozenset("abcdef")
# Octets that must never appear percent-encoded: separators, dots, and controls.
_FORBIDDEN_OCTETS = frozenset({0x2F, 0x5C, 0x2E, 0x7F, *range(0x20)})


# The rules of docs/check.md a URI can break.
_SKILL_MD_RULE = "SW-URI-001"
_AUTHORITY_RULE = "SW-URI-003"
_CANONICAL_RULE = "SW-URI-004"
_FILE_RULE = "SW-URI-005"


def _fail(message: str, uri: str, rule: str | None = _CANONICAL_RULE) -> InvalidUri:
    return InvalidUri(message, uri=uri, rule=rule)


# Fast paths: a string matching these needs no character-by-character diagnosis.
_PLAIN_RE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%?#]*\Z")
_SEGMENT_RE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+\Z")
_AUTHORITY_RE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-F]{2})+\Z")


# The common case, with no percent-encoding, in one regex; anything else takes the slow path.
_FAST_URI_RE = re.compile(
    r"([a-z][a-z0-9+.\-]*)://([A-Za-z0-9\-._~!$&'()*+,;=]+)((?:/[A-Za-z0-9\-._~!$&'()*+,;=:@]+)*)\Z"
)
_DOTS = frozenset({".", ".."})
#: A SKILL.md URI the fast path above accepts, none of its segments "." or "..".
_PLAIN_SKILL_MD_RE = re.compile(
    r"(?!file://)[a-z][a-z0-9+.\-]*://(?!\.\.?/)[A-Za-z0-9\-._~!$&'()*+,;=]+"
    r"(?:/(?!\.\.?/)[A-Za-z0-9\-._~!$&'()*+,;=:@]+)*/SKILL\.md\Z"
)
#: Path segments with no percent-encoding, none of them "." or "..": what
#: :func:`plainly_below` matches after the root and its slash (a listing matches it itself
#: for each of an entry's files, with the root's slash added once).
PLAIN_PATH_RE = re.compile(
    r"(?!\.\.?(?:/|\Z))[A-Za-z0-9\-._~!$&'()*+,;=:@]+(?:/(?!\.\.?(?:/|\Z))[A-Za-z0-9\-._~!$&'()*+,;=:@]+)*\Z"
)


def _check_characters(text: str, what: str, original: str) -> None:
    if _PLAIN_RE.match(text):
        return
    for ch in text:
        if ch == "\\":
            raise _fail(f"backslash in {what}", original)
        code = ord(ch)
        if code < 0x20 or code == 0x7F:
            raise _fail(f"control character U+{code:04X} in {what}", original)
        if code > 0x7E:
            raise _fail(
                f"non-ASCII character U+{code:04X} in {what}; percent-encode it as UTF-8",
                original,
            )
        if ch == " ":
            raise _fail(f"space in {what}", original)


def _check_segment(segment: str, allowed: frozenset[str], what: str, original: str) -> None:
    fast = _AUTHORITY_RE if what == "authority" else _SEGMENT_RE
    if fast.match(segment) and segment not in (".", "..") and "%" not in segment:
        return
    rule = _AUTHORITY_RULE if what == "authority" else _CANONICAL_RULE
    if segment == "":
        raise _fail(f"empty {what}", original, rule)
    if segment in (".", ".."):
        raise _fail(f"dot segment {segment!r} in {what}", original, rule)
    i = 0
    n = len(segment)
    while i < n:
        ch = segment[i]
        if ch == "%":
            pair = segment[i + 1 : i + 3]
            if len(pair) != 2 or not set(pair) <= _HEX_ANY:
                raise _fail(f"malformed percent-encoding in {what}", original, rule)
            if not set(pair) <= _HEX_UPPER:
                raise _fail(f"lowercase percent-encoding %{pair} in {what}", original, rule)
            octet = int(pair, 16)
            if octet in _FORBIDDEN_OCTETS:
                raise _fail(f"percent-encoded %{pair} is not allowed in {what}", original, rule)
            if chr(octet) in _UNRESERVED:
                raise _fail(
                    f"percent-encoded unreserved character %{pair} in {what} is not canonical",
                    original,
                    rule,
                )
            i += 3
            continue
        if ch not in allowed:
            if ch == "@" and what == "authority":
                raise _fail("userinfo is not allowed", original, rule)
            if ch == ":" and what == "authority":
                raise _fail("a port is not allowed", original, rule)
            if ch == "?":
                raise _fail("a query is not allowed", original, rule)
            if ch == "#":
                raise _fail("a fragment is not allowed", original, rule)
            raise _fail(f"character {ch!r} is not allowed in {what}", original, rule)
        i += 1


@dataclass(frozen=True, slots=True)
class ResourceUri:
    """A parsed, canonical ``scheme://authority/segment/...`` URI.

    Build one with :func:`parse_uri`; ``str()`` gives back the exact input.
    """

    scheme: str
    authority: str
    path: tuple[str, ...]
    #: ``str()``, built on first use, then kept: it is read far more often than built.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = f"{self.scheme}://{self.authority}" + "".join("/" + s for s in self.path)
            object.__setattr__(self, "_text", text)
        return text

    @property
    def segments(self) -> tuple[str, ...]:
        """The authority and path segments together: the skill path lives here."""
        return (self.authority, *self.path)

    def is_within(self, root: SkillRoot) -> bool:
        """Whether this URI names a file strictly inside ``root``."""
        mine = self.segments
        theirs = root.segments
        return (
            self.scheme == root.scheme and len(mine) > len(theirs) and mine[: len(theirs)] == theirs
        )


@dataclass(frozen=True, slots=True)
class SkillRoot:
    """The directory of a skill: ``scheme://<skill-path>``, with no trailing slash."""

    scheme: str
    segments: tuple[str, ...]
    #: ``str()``, built on first use, then kept (:meth:`holds` starts from it for every
    #: file of a listing).
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = f"{self.scheme}://" + "/".join(self.segments)
            object.__setattr__(self, "_text", text)
        return text

    @property
    def name(self) -> str:
        """The final skill-path segment, which SEP-2640 requires to equal ``name``."""
        return self.segments[-1]

    @property
    def prefix(self) -> tuple[str, ...]:
        """The server-chosen organisational prefix (may be empty)."""
        return self.segments[:-1]

    @property
    def skill_path(self) -> str:
        return "/".join(self.segments)

    @property
    def skill_md(self) -> ResourceUri:
        return ResourceUri(self.scheme, self.segments[0], (*self.segments[1:], SKILL_FILE))

    def holds(self, text: str) -> bool:
        """Whether the URI ``text`` names a file strictly inside this root; raise
        :class:`~skillward.core.errors.InvalidUri` if ``text`` is not a canonical URI."""
        if plainly_below(str(self), text):
            return True
        return parse_uri(text).is_within(self)

    def file_path(self, uri: ResourceUri) -> str:
        """The ``/``-joined path of ``uri`` relative to this root, or raise."""
        if not uri.is_within(self):
            raise _fail(f"outside the skill root {self}", str(uri), "SW-RES-003")
        return "/".join(uri.segments[len(self.segments) :])

    def child(self, file_path: str) -> ResourceUri:
        """The URI of ``file_path`` (``/``-separated, relative) under this root, or raise."""
        uri = parse_uri(f"{self}/{file_path}")
        if not uri.is_within(self):
            raise _fail(f"outside the skill root {self}", str(uri), "SW-RES-003")
        return uri


def plainly_below(root: str, text: str) -> bool:
    """Whether ``text`` is ``root`` (a canonical skill root's text), a slash, and plain
    path segments (no percent-encoding, none ``.`` or ``..``): a canonical URI strictly
    inside that root, known without parsing it. False says nothing: parse it."""
    return (
        len(text) <= MAX_URI_LENGTH
        and text.startswith(root)
        and text[len(root) : len(root) + 1] == "/"
        and PLAIN_PATH_RE.match(text, len(root) + 1) is not None
    )


def plain_skill_root(text: str) -> str | None:
    """The text of the skill root of ``text`` when it is a SKILL.md URI in plain form (no
    percent-encoding, no ``.`` or ``..`` segment), exactly as
    ``str(skill_root_of(parse_uri(text)))`` gives it; None for any other string, which
    only the full parse judges (and names the problem of)."""
    if len(text) <= MAX_URI_LENGTH and _PLAIN_SKILL_MD_RE.match(text):
        return text[: -len(SKILL_FILE) - 1]
    return None


def parse_uri(text: str, *, max_length: int = MAX_URI_LENGTH) -> ResourceUri:
    """Parse ``text`` strictly as a canonical ``scheme://authority/path`` URI, or raise.

    Raises :class:`~skillward.core.errors.InvalidUri` naming the first problem found.
    """
    if not isinstance(text, str):
        raise InvalidUri(f"a URI must be a string, not {type(text).__name__}", rule=_CANONICAL_RULE)
    if len(text) > max_length:
        raise _fail(f"URI is longer than {max_length} characters", text)
    fast = _FAST_URI_RE.match(text)
    if fast is not None and fast.group(1) != "file":
        scheme, authority, path = fast.groups()
        segments = tuple(path[1:].split("/")) if path else ()
        if authority not in _DOTS and not _DOTS.intersection(segments):
            return ResourceUri(scheme, authority, segments)
    return _parse_uri_slow(text)


def _parse_uri_slow(text: str) -> ResourceUri:
    """The complete check, which also names the first problem found."""
    match = _SCHEME_RE.match(text)
    if match is None or text[match.end() : match.end() + 1] != ":":
        raise _fail("missing URI scheme", text, _SKILL_MD_RULE)
    scheme = match.group()
    if scheme.lower() == "file":
        raise _fail("file: URIs are never skill resources", text, _FILE_RULE)
    _check_characters(text, "URI", text)
    if scheme != scheme.lower():
        raise _fail("the scheme must be lowercase", text)
    rest = text[match.end() + 1 :]
    if not rest.startswith("//"):
        raise _fail("not a hierarchical scheme://authority/path URI", text, _SKILL_MD_RULE)
    rest = rest[2:]
    authority, slash, path = rest.partition("/")
    for bad, what in (("?", "a query"), ("#", "a fragment")):
        if bad in rest:
            raise _fail(f"{what} is not allowed", text)
    if authority.startswith("["):
        raise _fail("an IP literal authority is not allowed", text, _AUTHORITY_RULE)
    _check_segment(authority, _AUTHORITY_CHARS, "authority", text)
    segments: tuple[str, ...] = ()
    if slash:
        segments = tuple(path.split("/"))
        for segment in segments:
            _check_segment(segment, _SEGMENT_CHARS, "path segment", text)
    return ResourceUri(scheme, authority, segments)


def skill_root_of(skill_md: ResourceUri | str) -> SkillRoot:
    """The skill root of a ``.../SKILL.md`` URI, or raise if it is not one."""
    uri = parse_uri(skill_md) if isinstance(skill_md, str) else skill_md
    if not uri.path and uri.authority == SKILL_FILE:
        raise _fail("the skill path is empty", str(uri), _SKILL_MD_RULE)
    if not uri.path or uri.path[-1] != SKILL_FILE:
        raise _fail(f"a skill URI must end in /{SKILL_FILE}", str(uri), _SKILL_MD_RULE)
    return SkillRoot(uri.scheme, uri.segments[:-1])


def resolve_reference(root: SkillRoot, reference: str) -> ResourceUri:
    """Resolve a reference written in the skill's SKILL.md against the skill root.

    Follows RFC 3986 section 5.2 with the base ``<root>/SKILL.md``, except that a
    ``..`` climbing above the skill root is an error rather than being clamped, so
    a traversal attempt is reported instead of silently landing elsewhere. A
    fragment is dropped; a query is refused. The result is proven to lie inside
    ``root``, or :class:`~skillward.core.errors.InvalidUri` is raised.
    """
    if not isinstance(reference, str):
        raise InvalidUri(f"a reference must be a string, not {type(reference).__name__}")
    ref = reference.partition("#")[0]
    _check_characters(ref, "reference", reference)
    if "?" in ref:
        raise _fail("a query is not allowed", reference, None)
    scheme_match = _SCHEME_RE.match(ref)
    if scheme_match is not None and ref[scheme_match.end() : scheme_match.end() + 1] == ":":
        target = parse_uri(ref)
    elif ref.startswith("//"):
        target = parse_uri(f"{root.scheme}:{ref}")
    else:
        if ref.startswith("/"):
            base: list[str] = [root.segments[0]]
            parts = ref[1:].split("/")
            floor = 1
        else:
            base = list(root.segments)
            parts = ref.split("/") if ref else [SKILL_FILE]
            floor = len(root.segments)
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if part == "..":
                if len(base) <= floor:
                    raise _fail(f"escapes the skill root {root}", reference, None)
                base.pop()
            elif part in (".", ""):
                if part == "" and not last:
                    raise _fail("empty path segment", reference, None)
            else:
                base.append(part)
            if last and part in (".", "..", ""):
                raise _fail("a reference must name a file, not a directory", reference, None)
        target = parse_uri(f"{root.scheme}://" + "/".join(base))
    if not target.is_within(root):
        raise _fail(f"escapes the skill root {root}", reference, None)
    return target


def fold_key(text: str) -> str:
    """A key under which strings that look alike to a person compare equal.

    Percent-decodes UTF-8, then applies NFKC and case folding. Use it only to
    *detect* look-alikes; identity is always the exact string.
    """
    decoded = _percent_decode(text)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", decoded).casefold())


def fold_collisions(items: Iterable[str]) -> list[tuple[str, ...]]:
    """Groups of distinct strings in ``items`` that collide under :func:`fold_key`."""
    groups: dict[str, set[str]] = defaultdict(set)
    for item in items:
        groups[fold_key(item)].add(item)
    return sorted(tuple(sorted(group)) for group in groups.values() if len(group) > 1)


def _percent_decode(text: str) -> str:
    out = bytearray()
    i = 0
    raw = text.encode("utf-8", "surrogatepass")
    while i < len(raw):
        if raw[i] == 0x25 and _is_hex_pair(raw[i + 1 : i + 3]):
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def _is_hex_pair(pair: bytes) -> bool:
    return len(pair) == 2 and all(chr(b) in _HEX_ANY for b in pair)
