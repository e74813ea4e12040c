"""The content cache seam.

A cache keeps verified bytes so a file need not be fetched again. Keys carry the
origin label, the URI and the digest, never the URI alone. Whatever a cache
returns is verified again before use, exactly like a fresh read, so a cache can
save a round trip but can never make unverified bytes reach the model.

The default, :class:`NoCache`, keeps nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["CacheKey", "ContentCache", "NoCache"]


@dataclass(frozen=True, slots=True)
class CacheKey:
    """(origin label, URI, digest): same-URI files from different servers never share."""

    origin: str
    uri: str
    digest: str


class ContentCache(Protocol):
    def get(self, key: CacheKey) -> bytes | None: ...

    def put(self, key: CacheKey, data: bytes) -> None: ...


class NoCache:
    """The default: nothing is kept, every read goes to the server."""

    def get(self, key: CacheKey) -> bytes | None:
        return None

    def put(self, key: CacheKey, data: bytes) -> None:
        return None
