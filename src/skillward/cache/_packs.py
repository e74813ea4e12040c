"""The disk cache's packs: verified bytes appended to a few files, re-hashed on every read.

``<label>/blobs/pack-<pid>-<hex>`` holds blobs one after another; the index
(``_index.py``) says where each one starts, how long it is and what it hashes to. Each
cache writes only to packs it created itself, and only by appending, so bytes once
written are never changed by skillward. A read opens the pack with ``O_NOFOLLOW`` and
``O_NONBLOCK``, requires a regular file long enough, reads the blob's bytes at their
offset and hashes them: anything else is a miss, said, and the file is fetched again.
Nothing a server writes becomes part of a path: pack names are made here.

Packs rather than one file per blob because creating a file is what a cold load pays
for, not writing its bytes: on an ext4 volume with ``discard``, creating a file costs
0.1-0.6 ms, appending 32 KB to one about 0.01 ms (``bench/bench_cold_load.py``).

A pack's modification time is its last append (for the age limit: every blob in it is
at least that old) and its access time its last use (for eviction, a pack at a time);
neither is proof of anything.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import secrets
import stat
from typing import NamedTuple

from skillward.cache._files import TMP, discard, write_all
from skillward.edge._tree import CLOEXEC, NOFOLLOW, NONBLOCK, READ_FLAGS

__all__ = [
    "BLOBS",
    "Location",
    "Pack",
    "append",
    "is_pack",
    "list_packs",
    "purge_packs",
    "read_blob",
]

logger = logging.getLogger("skillward")

#: The packs' directory in each label's directory.
BLOBS = "blobs"
_PACK_RE = re.compile(r"pack-[0-9]{1,10}-[0-9a-f]{16}\Z")
# One file per blob, as versions before packs kept them: removed when found.
_LEGACY_RE = re.compile(r"[0-9a-f]{64}\Z")
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | NOFOLLOW | NONBLOCK | CLOEXEC
# What opening a pack with O_NOFOLLOW | O_NONBLOCK gives when something else is planted
# there: a symlink (ELOOP; EMLINK on some BSDs), a socket (ENXIO), a file that is not
# ours to read (EACCES, EPERM), a directory opened to write (EISDIR).
_NOT_A_FILE = frozenset(
    {errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EACCES, errno.EPERM, errno.EISDIR}
)
# A temporary file this old was left by a writer that died.
_STALE_TMP = 3600.0
_CHUNK = 1024 * 1024


def is_pack(name: str) -> bool:
    """Whether ``name`` is one a cache gives its packs (and so never a path elsewhere)."""
    return _PACK_RE.match(name) is not None


class Pack(NamedTuple):
    name: str
    #: Last use (access time).
    used: float
    size: int
    #: Last append (modification time).
    written: float


class Location(NamedTuple):
    """Where the index says a blob is: a pack, an offset and a length, and when it was
    written there."""

    pack: str
    at: int
    size: int
    written: float


def list_packs(blobs_fd: int, now: float) -> list[Pack]:
    """Every pack of a label; stale temporary files and one-file blobs of an older
    layout are removed on the way."""
    found = []
    with os.scandir(blobs_fd) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if _PACK_RE.match(entry.name) and stat.S_ISREG(info.st_mode):
                found.append(Pack(entry.name, info.st_atime, info.st_size, info.st_mtime))
            elif _LEGACY_RE.match(entry.name) or (
                entry.name.startswith(TMP) and now - info.st_mtime > _STALE_TMP
            ):
                discard(entry.name, blobs_fd)
    return found


def read_blob(
    blobs_fd: int, where: Location, digest: str, *, now: float, max_age: float | None
) -> tuple[bytes | None, str | None]:
    """(the blob's bytes, None) if they are there, whole, not older than ``max_age`` and
    hash to ``digest`` (hex); (None, what is wrong) otherwise, or (None, None) if the blob
    is missing or expired. A path that is not a regular file is removed."""
    if max_age is not None and now - where.written > max_age:
        # A pack last appended to before then holds nothing younger: it goes.
        try:
            info = os.stat(where.pack, dir_fd=blobs_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None, None
        if now - info.st_mtime > max_age:
            discard(where.pack, blobs_fd)
        return None, None
    try:
        fd = os.open(where.pack, READ_FLAGS, dir_fd=blobs_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno not in _NOT_A_FILE:
            raise
        discard(where.pack, blobs_fd)
        return None, "is not in a regular file"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            discard(where.pack, blobs_fd)
            return None, "is not in a regular file"
        if info.st_size < where.at + where.size:
            return None, f"is cut short (its pack holds {info.st_size} bytes)"
        data = _read_at(fd, where.at, where.size)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            return None, "does not hash to its digest"
        # Last use orders eviction; the last append (mtime) is kept for the age limit.
        os.utime(fd, (now, info.st_mtime))
        return data, None
    finally:
        os.close(fd)


def _read_at(fd: int, at: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.pread(fd, min(left, _CHUNK), at + size - left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def append(
    blobs_fd: int, pack: str | None, data: bytes, *, room: int, now: float
) -> Location | None:
    """Append ``data`` to ``pack`` (this cache's own), or to a new pack if there is none,
    it is gone, or it has no ``room`` left; where the bytes went, or None if the pack
    changed under the write (the bytes are then not recorded, and so never read)."""
    fd = _open_own(blobs_fd, pack, len(data), room)
    if fd is None:
        pack = f"pack-{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(pack, _NEW_FLAGS, 0o600, dir_fd=blobs_fd)
        os.fchmod(fd, 0o600)  # whatever the umask took
    assert pack is not None
    try:
        at = os.fstat(fd).st_size
        write_all(fd, data)
        info = os.fstat(fd)
        if info.st_size != at + len(data):
            return None  # another writer appended too: where these bytes are is unsure
        os.utime(fd, (now, now))
    finally:
        os.close(fd)
    return Location(pack, at, len(data), now)


def _open_own(blobs_fd: int, pack: str | None, size: int, room: int) -> int | None:
    """``pack`` opened to append ``size`` more bytes, or None to start a new one."""
    if pack is None:
        return None
    try:
        fd = os.open(pack, _APPEND_FLAGS, dir_fd=blobs_fd)
    except FileNotFoundError:
        return None  # evicted or purged by another process
    except OSError as exc:
        if exc.errno not in _NOT_A_FILE:
            raise
        discard(pack, blobs_fd)  # something planted in its place: never written through
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_size and info.st_size + size > room):
        os.close(fd)
        return None
    return fd


def purge_packs(blobs_fd: int) -> tuple[set[str], int]:
    """Remove every pack, temporary file and older one-file blob of a label; the packs
    removed and the bytes all of them held. Anything else found there is left alone."""
    packs: set[str] = set()
    size = 0
    with os.scandir(blobs_fd) as entries:
        for entry in entries:
            name = entry.name
            pack = _PACK_RE.match(name) is not None
            ours = pack or _LEGACY_RE.match(name) is not None
            info = entry.stat(follow_symlinks=False) if ours else None
            if info is not None and stat.S_ISREG(info.st_mode):
                size += info.st_size
                if pack:
                    packs.add(name)
            if ours or name.startswith(TMP):
                discard(name, blobs_fd)
    return packs, size
