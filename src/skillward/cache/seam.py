"""The content cache seam.

A cache keeps verified bytes so a file need not be fetched again. Keys carry the
origin label, the transport identity of the server behind it, the skill and file
URIs, and the digest and size, never the URI alone. Whatever a cache returns is
verified again before use, exactly like a fresh read, so a cache can save a round
trip but can never make unverified bytes reach the model.

The default, :class:`NoCache`, keeps nothing. ``skillward.DiskCache`` keeps files
on disk (see ``docs/host.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from skillward.core.config import Limits

__all__ = ["CacheKey", "ContentCache", "NoCache"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheKey:
    """One listed file of one server: same-URI files from different servers never share.

    ``identity`` is how the server is reached (``ServerSpec.identity``): a label
    pointed at a different server gets different keys.
    """

    origin: str
    identity: str
    #: The SKILL.md URI of the skill the file belongs to.
    skill: str
    uri: str
    digest: str
    size: int


class ContentCache(Protocol):
    def get(self, key: CacheKey) -> bytes | None:
        """Bytes for ``key``, or None. The caller verifies them before use."""
        ...

    def put(self, key: CacheKey, data: bytes) -> None:
        """Keep ``data``, which the caller has verified against ``key``."""
        ...

    def forget(self, label: str) -> None:
        """Drop everything kept for the server labelled ``label``."""
        ...

    def isolate_from(self, directory: Path) -> None:
        """``directory`` is a skill discovery path: keep nothing inside it or around it."""
        ...

    def narrow(self, limits: Limits) -> None:
        """Keep within ``limits`` too: the smaller ``max_cache_bytes`` and the shorter
        ``max_cache_age`` of these and the cache's own apply (the host passes its limits,
        the policy's applied)."""
        ...


class NoCache:
    """The default: nothing is kept, every read goes to the server."""

    def get(self, key: CacheKey) -> bytes | None:
        return None

    def put(self, key: CacheKey, data: bytes) -> None:
        return None

    def forget(self, label: str) -> None:
        return None

    def isolate_from(self, directory: Path) -> None:
        return None

    def narrow(self, limits: Limits) -> None:
        return None
