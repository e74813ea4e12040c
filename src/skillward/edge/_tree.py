"""Bounded, symlink-free walks of skill directories on the local filesystem, and the
one bounded reader of regular files (with the open flags every module shares, the
sync of a directory a file was replaced in, and the one atomic writer of private files).

Used by the reference server to build its catalog and by the host to discover
local skills. Symlinks are never followed (so nothing outside the walked tree
is reached), hidden entries (``.git``, ``.DS_Store``) and ``node_modules`` are
skipped, and every walk is bounded in depth and in entries visited. A walk from a
directory's descriptor opens each directory below through its parent's, so a symlink
swapped in while it runs is not followed either (:func:`descend`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Sequence
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
    "Listing",
    "Listings",
    "NotRegularFile",
    "TreeLimits",
    "descend",
    "encode_segment",
    "find_skill_dirs",
    "fsync_directory",
    "open_directory",
    "read_open_file",
    "read_regular_file",
    "walk_files",
    "write_private",
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
# A file made new: never one already there, nor through a symlink planted at its name.
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC

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
    dir_fd: int | None = None,
) -> bytes:
    """Read a regular file, without following a symlink at its last component unless
    ``follow_symlinks``; ``path`` is a name in ``dir_fd``'s directory when given.

    Refuses (OSError) anything but a regular file (:class:`NotRegularFile`), and more
    than ``max_bytes`` (:class:`FileTooLarge`), reading at most one byte past the cap;
    ``cut`` reads the first ``max_bytes`` and leaves the rest instead. ``snapshot``
    takes a read that returns less than it asked for (one byte past the size the file
    had when opened) as the end, as POSIX has it for regular files, saving the read
    that would confirm it: for a caller that keeps exactly the bytes it read, such as
    a server hashing what it serves.
    """
    flags = READ_FLAGS & ~NOFOLLOW if follow_symlinks else READ_FLAGS
    fd = os.open(path, flags, dir_fd=dir_fd)
    return read_open_file(fd, max_bytes, path, cut=cut, snapshot=snapshot)


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


def fsync_directory(directory: Path) -> None:
    """Make a file just moved into ``directory`` (``os.replace``) survive a crash."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (Windows): os.replace is still atomic
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with a file holding ``data``, readable by its owner alone, so that
    a crash leaves the old file or the new one whole, never a mix.

    The bytes go to a new file beside ``path`` (``O_EXCL``, never through a link), made
    0600 whatever the umask and fsynced; ``os.replace`` then moves it over ``path`` (a
    link planted there is replaced, never written through), and the directory is fsynced.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, _NEW_FLAGS, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(os, "fchmod"):  # the umask may have taken the owner's bits too
                os.fchmod(handle.fileno(), 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)


def _too_many(where: object) -> OverflowError:
    return OverflowError(f"more than the allowed number of entries under {where}")


def open_directory(name: str | os.PathLike[str], parent: int | None = None) -> int:
    """A descriptor of directory ``name`` (a name in ``parent``, the descriptor of its
    directory, when given): OSError if ``name`` is a symlink or not a directory."""
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def descend(top: int, parts: Sequence[str]) -> int:
    """A new descriptor of the directory ``parts`` names below ``top``'s, each component
    opened through its parent's descriptor, so a symlink at any level, swapped in at any
    moment, is never followed. OSError otherwise, its ``filename`` the parts up to the
    one that failed."""
    fd = os.dup(top)
    for index, part in enumerate(parts):
        try:
            child = open_directory(_plain(part), fd)
        except OSError as exc:
            exc.filename = "/".join(parts[: index + 1])
            raise
        finally:
            os.close(fd)
        fd = child
    return fd


def _plain(name: str) -> str:
    """``name``, if it names an entry of a directory (not itself, its parent or a path)."""
    if name in ("", ".", "..") or "/" in name:
        raise OSError(errno.EINVAL, "not the name of an entry")
    return name


# What a listing tells of each entry, from the type the listing gave (no stat each).
_FILE, _DIR, _LINKED_DIR, _LINK, _OTHER = range(5)
#: A directory's entries by name, each with its kind.
Listing = list[tuple[str, int]]
#: Listings by directory path, kept by one walk for the next (see find_skill_dirs).
Listings = dict[str, Listing]
#: A directory to walk: its path, or a descriptor of it (see find_skill_dirs).
Where = str | int


def _other_kind(entry: os.DirEntry[str]) -> int:
    """The kind of an entry that is neither a file nor a directory."""
    if entry.is_symlink():
        return _LINKED_DIR if entry.is_dir() else _LINK  # a stat of the target, for a note
    return _OTHER


def _list(directory: Where, allowed: int, where: object) -> Listing:
    """The entries of ``directory`` by name; OverflowError past ``allowed`` of them, as
    they are read: a huge directory is never listed whole."""
    entries: Listing = []
    append = entries.append
    with os.scandir(directory) as iterator:
        for entry in iterator:
            allowed -= 1
            if allowed < 0:
                raise _too_many(where)
            # A file or a directory (most entries) told inline: a call for each of a
            # large tree's entries is most of the cost of listing it.
            if entry.is_file(follow_symlinks=False):
                append((entry.name, _FILE))
            elif entry.is_dir(follow_symlinks=False):
                append((entry.name, _DIR))
            else:
                append((entry.name, _other_kind(entry)))
    entries.sort()
    return entries


if os.altsep is None:

    def _prefix(path: str) -> str:
        """What ``os.path.join(path, name)`` puts before any ``name`` a listing gives (never
        one with a separator): ``path``, and a separator unless it ends in one. As
        posixpath.join does it, without its call for each of a large tree's entries."""
        return path if not path or path.endswith("/") else path + "/"

else:  # drives and two separators: as os.path.join does it

    def _prefix(path: str) -> str:
        return os.path.join(path, "")


def _done(directory: Where) -> None:
    if not isinstance(directory, str):
        os.close(directory)


@dataclass(slots=True)
class _Walk:
    """One walk's state, passed down its recursion (a function, not a closure: no cycle
    keeps every listing alive until a collection)."""

    root: object
    left: int
    max_depth: int
    found: list[tuple[tuple[str, ...], str]]
    notes: list[str]
    listings: Listings | None

    def listing(self, directory: Where, path: str) -> Listing:
        entries = self.listings.get(path) if self.listings is not None else None
        if entries is None:
            entries = _list(directory, self.left, self.root)
        self.left -= len(entries)
        if self.left < 0:
            raise _too_many(self.root)
        return entries


#: One directory's step of a walk: (walk, the directory, its path, its parts).
_Step = Callable[[_Walk, Where, str, tuple[str, ...]], None]


def _walk(
    step: _Step,
    root: str | Path,
    at: int | None,
    limits: TreeLimits | None,
    listings: Listings | None,
) -> _Walk:
    limits = limits or TreeLimits()
    walk = _Walk(root, limits.max_entries, limits.max_depth, [], [], listings)
    directory = str(root) if at is None else os.dup(at)
    try:
        step(walk, directory, str(root), ())
    finally:
        _done(directory)
    return walk


def _into(step: _Step, walk: _Walk, directory: Where, path: str, parts: tuple[str, ...]) -> None:
    """``step`` on the directory below ``directory`` named by the last of ``parts``: by
    its path, or opened through ``directory``'s descriptor."""
    child = path if isinstance(directory, str) else open_directory(parts[-1], directory)
    try:
        step(walk, child, path, parts)
    finally:
        _done(child)


def find_skill_dirs(
    root: Path,
    *,
    at: int | None = None,
    limits: TreeLimits | None = None,
    keep: Listings | None = None,
) -> tuple[list[tuple[tuple[str, ...], str]], list[str]]:
    """Directories under ``root`` (``root`` included) that hold a regular ``SKILL.md``.

    Returns (skills as (relative parts, path), notes about what was skipped), in
    depth-first order by name. ``keep`` receives every listing read, so that
    :func:`walk_files` of each skill found need not list its directories again.
    With ``at``, a descriptor of ``root``, every directory below is opened through its
    parent's descriptor (:func:`descend`); without, by its path.
    """
    walk = _walk(_find, root, at, limits, keep)
    return walk.found, walk.notes


def _find(walk: _Walk, directory: Where, path: str, parts: tuple[str, ...]) -> None:
    entries = _list(directory, walk.left, walk.root)
    walk.left -= len(entries)
    if walk.listings is not None:
        walk.listings[path] = entries
    deep = len(parts) >= walk.max_depth
    below: list[str] = []
    prefix = _prefix(path)
    for name, kind in entries:
        if name == SKILL_FILE:
            if kind == _FILE:
                walk.found.append((parts, path))
            elif kind in (_LINK, _LINKED_DIR):
                walk.notes.append(f"{prefix + name}: symlinked SKILL.md skipped")
        if deep:
            continue
        if kind == _DIR:
            if name[0] != "." and name not in SKIPPED_DIRS:
                below.append(name)
        elif kind == _LINKED_DIR:
            walk.notes.append(f"{prefix + name}: symlinked directory not followed")
    # This directory's SKILL.md comes before any below it, whatever their names.
    for name in below:
        _into(_find, walk, directory, prefix + name, (*parts, name))


def walk_files(
    root: str | Path,
    *,
    at: int | None = None,
    limits: TreeLimits | None = None,
    listings: Listings | None = None,
) -> tuple[list[tuple[tuple[str, ...], str]], list[str]]:
    """Every regular file under ``root`` as (relative parts, path), never through a symlink.

    Returns (files sorted by relative path, notes about what was skipped). A directory
    in ``listings`` is not listed again; ``at`` is as for :func:`find_skill_dirs`.
    Entries are told apart by the type the listing gave (no ``lstat`` each); a reader
    still opens a file with ``O_NOFOLLOW`` and refuses anything but a regular file.
    """
    walk = _walk(_files, root, at, limits, listings)
    files = walk.found
    if len(files) > 1:
        files.sort(key=_first)
    return files, walk.notes


def _files(walk: _Walk, directory: Where, path: str, parts: tuple[str, ...]) -> None:
    deeper = len(parts) + 1 >= walk.max_depth
    prefix = _prefix(path)
    found = walk.found
    for name, kind in walk.listing(directory, path):
        if name[0] == "." or name in SKIPPED_DIRS:  # hidden, or skipped by name
            continue
        child_path = prefix + name
        if kind == _FILE:
            found.append(((*parts, name), child_path))
        elif kind == _DIR:
            if deeper:
                walk.notes.append(f"{child_path}: deeper than {walk.max_depth} levels, skipped")
                continue
            _into(_files, walk, directory, child_path, (*parts, name))
        elif kind in (_LINK, _LINKED_DIR):
            walk.notes.append(f"{child_path}: symlink skipped")
        else:
            walk.notes.append(f"{child_path}: not a regular file, skipped")


def _first(item: tuple[tuple[str, ...], str]) -> tuple[str, ...]:
    return item[0]
