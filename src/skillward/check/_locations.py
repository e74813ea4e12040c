"""Where a checked server's URIs are in the repository, so that a finding lands on a file.

``skillward check DIR`` knows it (the directory it serves); for a server, ``--map
PREFIX=DIR`` says it. A URI under a mapped prefix becomes a repository-relative path by
percent-decoding each segment of the rest; a segment that would not be one plain path
segment (``..``, a slash, a control character) maps nothing. The path is only ever
written in the report: a server's string never becomes a path that is opened.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["Locations"]


def _plain(segment: str) -> bool:
    return (
        segment not in ("", ".", "..")
        and "/" not in segment
        and "\\" not in segment
        and not any(unicodedata.category(ch)[0] == "C" for ch in segment)
    )


@dataclass(frozen=True, slots=True)
class Locations:
    """URI prefixes and the repository directories they are in (POSIX, relative to the
    repository root; ``.`` for the root itself), longest prefix first; ``home``, where
    findings about the server as a whole land (the directory checked), if anywhere."""

    maps: tuple[tuple[str, str], ...] = ()
    home: str | None = None

    @classmethod
    def of(cls, maps: Iterable[tuple[str, str]], *, home: str | None = None) -> Locations:
        ordered = sorted(dict(maps).items(), key=lambda pair: len(pair[0]), reverse=True)
        return cls(tuple(ordered), home)

    def path(self, uri: str | None) -> str | None:
        """The repository path ``uri`` is at, or None (not under a mapped prefix, or not
        one plain path). None for no URI: the server as a whole is at ``home``."""
        if uri is None:
            return self.home
        for prefix, directory in self.maps:
            if uri == prefix.rstrip("/"):
                rest = ""
            elif uri.startswith(prefix) and (
                prefix.endswith(("/", "://")) or uri[len(prefix)] == "/"
            ):
                rest = uri[len(prefix) :].lstrip("/")
            else:
                continue
            if any(ch in rest for ch in "?#"):
                return None
            try:
                segments = [unquote(part, errors="strict") for part in rest.split("/") if rest]
            except UnicodeDecodeError:
                return None
            if not all(_plain(segment) for segment in segments):
                return None
            joined = "/".join(segments)
            if directory in ("", "."):
                return joined or "."
            return f"{directory}/{joined}" if joined else directory
        return None
