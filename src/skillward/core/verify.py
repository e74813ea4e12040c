"""The verifier: fetched bytes against a listing entry. Pure: no I/O.

Each function takes bytes and the entry they should match and either returns a
verified object or raises an :class:`~skillward.core.errors.IntegrityError` (or a
:class:`~skillward.core.errors.FrontmatterError`). Checks run in SEP-2640's order:
length against ``size``, then the SHA-256 digest, then (for a SKILL.md) the
frontmatter field by field. The bytes that were hashed are the bytes returned;
nothing is re-read.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from skillward.core._fields import sha256_digest
from skillward.core.config import Limits
from skillward.core.errors import DigestMismatch, SizeMismatch, UnlistedResource
from skillward.core.frontmatter import (
    JsonValue,
    SkillDocument,
    check_frontmatter,
    parse_skill_md,
)
from skillward.core.wire import ResourceItem, SkillEntry

__all__ = [
    "VerifiedFile",
    "VerifiedSkill",
    "check_skill_md",
    "manifest_item",
    "sha256_digest",
    "verify_file",
    "verify_skill_md",
]


@dataclass(frozen=True, slots=True)
class VerifiedFile:
    """Bytes that matched their listing entry's size and digest."""

    uri: str
    data: bytes
    digest: str
    #: False only for a dynamic skill, whose entry carries no digest to check against.
    verified: bool = True

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class VerifiedSkill:
    """A SKILL.md that matched its entry: digest, size and frontmatter."""

    entry: SkillEntry
    file: VerifiedFile
    frontmatter: dict[str, JsonValue]
    body: str


def verify_file(item: ResourceItem, data: bytes, *, server: str | None = None) -> VerifiedFile:
    """Check ``data`` against ``item``: length first, then the digest."""
    if len(data) != item.size:
        raise SizeMismatch(
            f"read {len(data)} bytes; the listing says {item.size}",
            server=server,
            uri=item.uri,
            rule="SW-READ-005",
        )
    actual = sha256_digest(data)
    # Constant-time, so timing does not reveal how much of a digest matched.
    if not hmac.compare_digest(actual.encode("ascii"), item.digest.encode("ascii")):
        raise DigestMismatch(
            f"content digest {actual} differs from the listing's {item.digest}",
            server=server,
            uri=item.uri,
            rule="SW-READ-006",
        )
    return VerifiedFile(item.uri, data, actual)


def manifest_item(entry: SkillEntry, uri: str, *, server: str | None = None) -> ResourceItem:
    """The entry's item for ``uri``; a URI the entry does not list is a verification failure."""
    item = entry.manifest.get(uri)
    if item is None:
        raise UnlistedResource(
            f"the skill's entry does not list this file (skill {entry.uri})",
            server=server,
            uri=uri,
        )
    return item


def verify_skill_md(
    entry: SkillEntry,
    data: bytes,
    *,
    server: str | None = None,
    limits: Limits | None = None,
) -> VerifiedSkill:
    """Verify a fetched SKILL.md against ``entry``.

    For an array manifest: size, digest, then frontmatter. For a dynamic entry
    there is no digest, so only the frontmatter is compared and the result is
    marked unverified.
    """
    limits = limits or Limits()
    if entry.is_dynamic:
        if len(data) > limits.max_skill_bytes:
            raise SizeMismatch(
                f"read {len(data)} bytes, more than the {limits.max_skill_bytes} a skill may hold",
                server=server,
                uri=entry.uri,
                rule="SW-LIM-002",
            )
        verified = VerifiedFile(entry.uri, data, sha256_digest(data), verified=False)
    else:
        verified = verify_file(manifest_item(entry, entry.uri, server=server), data, server=server)
    document = check_skill_md(entry, verified.data, server=server, limits=limits)
    return VerifiedSkill(entry, verified, document.frontmatter, document.body)


def check_skill_md(
    entry: SkillEntry, data: bytes, *, server: str | None = None, limits: Limits | None = None
) -> SkillDocument:
    """SKILL.md's bytes (already held to the entry) parsed as a host parses them, and
    its frontmatter held to the entry's: the document, or FrontmatterError. The one check
    both the host and ``skillward check`` apply."""
    document = parse_skill_md(data, limits=limits or Limits(), server=server, uri=entry.uri)
    check_frontmatter(
        document.frontmatter, entry.frontmatter.as_dict(), server=server, uri=entry.uri
    )
    return document
