"""Bounded, symlink-free walks of skill directories on the local filesystem, and the
one bounded reader of regular files (with the open flags every module shares).

Used by the reference server to build its catalog and by the host to discover
local skills. Symlinks are never followed (so nothing outside the walked tree
is reached), hidden entries (``.git``, ``.DS_Store``) and ``node_modules`` are
skipped, and every walk is bounded in depth and in entries visited.
"""

from __future__ import annotations

import operator
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from skillward.core.uris import SKILL_FILE

__all__ = [
    "CLOEXEC",
    "DIR_FLAGS",
    "NOFOLLOW",
    "NONBLOCK",
    "READ_FLAGS",
    "SKIPPED_DIRS",
    "FileTooLarge",
    "Listings",
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
# A name made only of these (and not "." or "..") is its own segment.
_PLAIN_SEGMENT_RE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@]+\Z")
_READ_STEP = 1024 * 1024


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
    if _PLAIN_SEGMENT_RE.match(name) and name not in (".", ".."):
        return name
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
    path: str | os.PathLike[str],
    max_bytes: int,
    *,
    follow_symlinks: bool = False,
    cut: bool = False,
    snapshot: bool = False,
) -> bytes:
    """Read a regular file, without following a symlink at its last component unless
    ``follow_symlinks``.

    Refuses (OSError) anything but a regular file (:class:`NotRegularFile`), and more
    than ``max_bytes`` (:class:`FileTooLarge`), reading at most one byte past the cap;
    ``cut`` reads the first ``max_bytes`` and leaves the rest instead. ``snapshot``
    takes a read that returns less than it asked for (one byte past the size the file
    had when opened) as the end, as POSIX has it for regular files, saving the read
    that would confirm it: for a caller that keeps exactly the bytes it read, such as
    a server hashing what it serves.
    """
    flags = READ_FLAGS & ~NOFOLLOW if follow_symlinks else READ_FLAGS
    return read_open_file(os.open(path, flags), max_bytes, path, cut=cut, snapshot=snapshot)


def read_open_file(
    fd: int, max_bytes: int, shown: object, *, cut: bool = False, snapshot: bool = False
) -> bytes:
    """:func:`read_regular_file` for a descriptor already open (and checked); closes it.
    ``shown`` names the file in errors."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"{shown} is not a regular file")
        want = max_bytes if cut else max_bytes + 1
        # Sized by fstat, so a small file costs no buffer of the whole cap; then read on
        # to the end, as the file may have grown meanwhile, still never past the cap.
        ask = min(want, info.st_size + 1)
        data = os.read(fd, ask)
        if data and len(data) < want and not (snapshot and len(data) < ask):
            chunks = [data]
            left = want - len(data)
            while left > 0:
                chunk = os.read(fd, min(left, _READ_STEP))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            if len(chunks) > 1:
                data = b"".join(chunks)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise FileTooLarge(f"{shown} is larger than {max_bytes} bytes")
    return data


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


def _too_many(where: object) -> OverflowError:
    return OverflowError(f"more than the allowed number of entries under {where}")


#: Sorted directory listings by path, kept by one walk for the next (see find_skill_dirs).
Listings = dict[str, list[os.DirEntry[str]]]


def _list(directory: str, allowed: int, where: object) -> list[os.DirEntry[str]]:
    """The entries of ``directory`` by name; OverflowError past ``allowed`` of them, as
    they are read: a huge directory is never listed whole."""
    entries = []
    with os.scandir(directory) as iterator:
        for entry in iterator:
            allowed -= 1
            if allowed < 0:
                raise _too_many(where)
            entries.append(entry)
    entries.sort(key=_NAME)
    return entries


_NAME = operator.attrgetter("name")


def find_skill_dirs(
    root: Path, *, limits: TreeLimits | None = None, keep: Listings | None = None
) -> tuple[list[tuple[tuple[str, ...], str]], list[str]]:
    """Directories under ``root`` (``root`` included) that hold a regular ``SKILL.md``.

    Returns (skills as (relative parts, path), notes about what was skipped), in
    depth-first order by name. ``keep`` receives every listing read, so that
    :func:`walk_files` of each skill found need not list its directories again.
    """
    limits = limits or TreeLimits()
    left = limits.max_entries
    max_depth = limits.max_depth
    found: list[tuple[tuple[str, ...], str]] = []
    notes: list[str] = []
    # A stack, not recursion: no closure cycle keeps every listing alive until a collection.
    stack: list[tuple[str, tuple[str, ...]]] = [(str(root), ())]
    while stack:
        directory, parts = stack.pop()
        entries = _list(directory, left, root)
        left -= len(entries)
        if keep is not None:
            keep[directory] = entries
        deep = len(parts) >= max_depth
        below: list[tuple[str, tuple[str, ...]]] = []
        for entry in entries:
            name = entry.name
            if name == SKILL_FILE:
                if entry.is_file(follow_symlinks=False):
                    found.append((parts, directory))
                elif entry.is_symlink():
                    notes.append(f"{entry.path}: symlinked SKILL.md skipped")
            if deep:
                continue
            if entry.is_dir(follow_symlinks=False):
                if not _is_hidden(name) and name not in SKIPPED_DIRS:
                    below.append((entry.path, (*parts, name)))
            elif entry.is_symlink() and entry.is_dir():
                notes.append(f"{entry.path}: symlinked directory not followed")
        if below:
            stack.extend(reversed(below))
    return found, notes


def walk_files(
    root: str | Path, *, limits: TreeLimits | None = None, listings: Listings | None = None
) -> tuple[list[tuple[tuple[str, ...], str]], list[str]]:
    """Every regular file under ``root`` as (relative parts, path), never through a symlink.

    Returns (files sorted by relative path, notes about what was skipped). A directory
    in ``listings`` is not listed again. Entries are told apart by the type the listing
    gave (no ``lstat`` each); a reader still opens a file with ``O_NOFOLLOW`` and
    refuses anything but a regular file.
    """
    limits = limits or TreeLimits()
    left = limits.max_entries
    max_depth = limits.max_depth
    files: list[tuple[tuple[str, ...], str]] = []
    notes: list[str] = []
    stack: list[tuple[str, tuple[str, ...]]] = [(str(root), ())]
    while stack:
        directory, parts = stack.pop()
        deeper = len(parts) + 1 >= max_depth
        entries = listings.get(directory) if listings is not None else None
        if entries is None:
            entries = _list(directory, left, root)
        left -= len(entries)
        if left < 0:
            raise _too_many(root)
        for entry in entries:
            name = entry.name
            if name[0] == "." or name in SKIPPED_DIRS:  # hidden, or skipped by name
                continue
            if entry.is_file(follow_symlinks=False):
                files.append(((*parts, name), entry.path))
            elif entry.is_dir(follow_symlinks=False):
                if deeper:
                    notes.append(f"{entry.path}: deeper than {max_depth} levels, skipped")
                else:
                    stack.append((entry.path, (*parts, name)))
            elif entry.is_symlink():
                notes.append(f"{entry.path}: symlink skipped")
            else:
                notes.append(f"{entry.path}: not a regular file, skipped")
    if len(files) > 1:
        files.sort(key=_first)
    return files, notes


def _first(item: tuple[tuple[str, ...], str]) -> tuple[str, ...]:
    return item[0]
