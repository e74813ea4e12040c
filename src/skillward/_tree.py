"""Bounded, symlink-free walks of skill directories on the local filesystem, and the
one bounded reader of regular files (with the open flags every module shares).

Used by the reference server to build its catalog and by the host to discover
local skills. Symlinks are never followed (so nothing outside the walked tree
is reached), hidden entries (``.git``, ``.DS_Store``) and ``node_modules`` are
skipped, and every walk is bounded in depth and in entries visited.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from skillward.uris import SKILL_FILE

__all__ = [
    "CLOEXEC",
    "DIR_FLAGS",
    "NOFOLLOW",
    "NONBLOCK",
    "READ_FLAGS",
    "SKIPPED_DIRS",
    "FileTooLarge",
    "NotRegularFile",
    "TreeLimits",
    "encode_segment",
    "find_skill_dirs",
    "read_open_file",
    "read_regular_file",
    "walk_files",
]

# getattr: each is missing on some platform (Windows), where it is then no flag at all.
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Opening a planted FIFO must not wait for a writer; it is then refused as not a file.
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: A directory to list or to open names under, never through a symlink.
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC
#: A file to read, never through a symlink at its last component.
READ_FLAGS = os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC

SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SEGMENT_SAFE = _UNRESERVED | frozenset(b"!$&'()*+,;=:@")


@dataclass(frozen=True, slots=True)
class TreeLimits:
    """Bounds on one directory walk."""

    max_depth: int = 8
    max_entries: int = 20_000


def encode_segment(name: str) -> str:
    """A file or directory name as one canonical URI path segment.

    Characters outside RFC 3986 ``pchar`` are percent-encoded as UTF-8 with
    uppercase hex. Raises ValueError for names that no canonical URI can carry.
    """
    if name in ("", ".", "..") or "/" in name:
        raise ValueError(f"{name!r} cannot be a path segment")
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name!r} is not valid Unicode") from None
    out: list[str] = []
    for byte in raw:
        if byte in _SEGMENT_SAFE:
            out.append(chr(byte))
        elif byte < 0x20 or byte in (0x5C, 0x7F):
            # Control characters and backslashes are refused by the URI parser.
            raise ValueError(f"{name!r} contains a character skill URIs cannot carry")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


class NotRegularFile(OSError):
    """A path that had to be a regular file is something else (a FIFO, a directory)."""


class FileTooLarge(OSError):
    """A file holds more than the bytes allowed."""


def read_regular_file(
    path: Path, max_bytes: int, *, follow_symlinks: bool = False, cut: bool = False
) -> bytes:
    """Read a regular file, without following a symlink at its last component unless
    ``follow_symlinks``.

    Refuses (OSError) anything but a regular file (:class:`NotRegularFile`), and more
    than ``max_bytes`` (:class:`FileTooLarge`), reading at most one byte past the cap;
    ``cut`` reads the first ``max_bytes`` and leaves the rest instead.
    """
    flags = READ_FLAGS & ~NOFOLLOW if follow_symlinks else READ_FLAGS
    return read_open_file(os.open(path, flags), max_bytes, path, cut=cut)


def read_open_file(fd: int, max_bytes: int, shown: object, *, cut: bool = False) -> bytes:
    """:func:`read_regular_file` for a descriptor already open (and checked); closes it.
    ``shown`` names the file in errors."""
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegularFile(f"{shown} is not a regular file")
        data = handle.read(max_bytes if cut else max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(f"{shown} is larger than {max_bytes} bytes")
    return data


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


class _Budget:
    def __init__(self, limits: TreeLimits, where: Path) -> None:
        self.left = limits.max_entries
        self.where = where

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise OverflowError(f"more than the allowed number of entries under {self.where}")


def _entries(directory: Path, budget: _Budget) -> list[os.DirEntry[str]]:
    with os.scandir(directory) as iterator:
        entries = []
        for entry in iterator:
            budget.spend()
            entries.append(entry)
    return sorted(entries, key=lambda e: e.name)


def find_skill_dirs(
    root: Path, *, limits: TreeLimits | None = None
) -> tuple[list[tuple[tuple[str, ...], Path]], list[str]]:
    """Directories under ``root`` (``root`` included) that hold a regular ``SKILL.md``.

    Returns (skills as (relative parts, path), notes about what was skipped).
    """
    limits = limits or TreeLimits()
    budget = _Budget(limits, root)
    found: list[tuple[tuple[str, ...], Path]] = []
    notes: list[str] = []

    def visit(directory: Path, parts: tuple[str, ...]) -> None:
        entries = _entries(directory, budget)
        for entry in entries:
            if entry.name == SKILL_FILE and entry.is_file(follow_symlinks=False):
                found.append((parts, directory))
            elif entry.name == SKILL_FILE and entry.is_symlink():
                notes.append(f"{Path(entry.path)}: symlinked SKILL.md skipped")
        if len(parts) >= limits.max_depth:
            return
        for entry in entries:
            if entry.is_symlink():
                if entry.is_dir():
                    notes.append(f"{Path(entry.path)}: symlinked directory not followed")
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            if _is_hidden(entry.name) or entry.name in SKIPPED_DIRS:
                continue
            visit(Path(entry.path), (*parts, entry.name))

    visit(root, ())
    return found, notes


def walk_files(
    root: Path, *, limits: TreeLimits | None = None
) -> tuple[list[tuple[tuple[str, ...], Path]], list[str]]:
    """Every regular file under ``root`` as (relative parts, path), never through a symlink.

    Returns (files sorted by relative path, notes about what was skipped).
    """
    limits = limits or TreeLimits()
    budget = _Budget(limits, root)
    files: list[tuple[tuple[str, ...], Path]] = []
    notes: list[str] = []

    def visit(directory: Path, parts: tuple[str, ...]) -> None:
        for entry in _entries(directory, budget):
            path = Path(entry.path)
            if _is_hidden(entry.name) or entry.name in SKIPPED_DIRS:
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                notes.append(f"{path}: symlink skipped")
            elif stat.S_ISDIR(mode):
                if len(parts) + 1 >= limits.max_depth:
                    notes.append(f"{path}: deeper than {limits.max_depth} levels, skipped")
                    continue
                visit(path, (*parts, entry.name))
            elif stat.S_ISREG(mode):
                files.append(((*parts, entry.name), path))
            else:
                notes.append(f"{path}: not a regular file, skipped")

    visit(root, ())
    files.sort(key=lambda item: item[0])
    return files, notes
