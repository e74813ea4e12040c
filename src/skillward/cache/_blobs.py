"""The disk cache's blobs: verified bytes named by their SHA-256, re-hashed on every read.

``<label>/blobs/<sha256 hex>`` holds exactly the bytes that hash to its name; a blob is
never modified in place. A read opens with ``O_NOFOLLOW`` and ``O_NONBLOCK``, requires a
regular file of the listed size, and hashes what it read; anything else is removed, said,
and fetched again. A write takes only bytes that match their key. Nothing a server writes
becomes part of a path: a blob's name is a digest.

Modification times are write times (for the age limit), access times last use (for
eviction); neither is proof of anything.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat
from typing import Literal, NamedTuple

from skillward.cache._files import TMP, discard, write_new
from skillward.cache.seam import CacheKey
from skillward.core.errors import printable
from skillward.edge._tree import READ_FLAGS

__all__ = ["BLOBS", "Blob", "blob_name", "list_blobs", "purge_blobs", "read_blob", "write_blob"]

logger = logging.getLogger("skillward")

#: The blobs' directory in each label's directory.
BLOBS = "blobs"
_BLOB_RE = re.compile(r"[0-9a-f]{64}\Z")
_DIGEST_RE = re.compile(r"sha256:([0-9a-f]{64})\Z")
# What opening a blob path with O_NOFOLLOW | O_NONBLOCK gives when something else is
# planted there: a symlink (ELOOP; EMLINK on some BSDs), a socket (ENXIO), a file that
# is not ours to read (EACCES, EPERM).
_NOT_A_FILE = frozenset({errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EACCES, errno.EPERM})
# A temporary file this old was left by a writer that died.
_STALE_TMP = 3600.0


class Blob(NamedTuple):
    name: str
    #: Last use (access time).
    used: float
    size: int
    #: Write time (modification time).
    written: float


def blob_name(key: CacheKey) -> str | None:
    """The name of ``key``'s blob; None for a digest that is not SHA-256."""
    match = _DIGEST_RE.match(key.digest)
    return match.group(1) if match else None


def list_blobs(blobs_fd: int, now: float) -> list[Blob]:
    """Every blob of a label; stale temporary files are removed on the way."""
    found = []
    with os.scandir(blobs_fd) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if _BLOB_RE.match(entry.name) and stat.S_ISREG(info.st_mode):
                found.append(Blob(entry.name, info.st_atime, info.st_size, info.st_mtime))
            elif entry.name.startswith(TMP) and now - info.st_mtime > _STALE_TMP:
                discard(entry.name, blobs_fd)
    return found


def read_blob(
    blobs_fd: int, name: str, key: CacheKey, *, now: float, max_age: float | None
) -> bytes | None:
    """The bytes of blob ``name`` if it is sound and not older than ``max_age``; a blob
    that is not is removed (and said, unless it only expired)."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=blobs_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in _NOT_A_FILE:
            raise
        data: bytes | None = None
        problem: str | None = "is not a regular file"
    else:
        try:
            data, problem = _read_open(fd, key, now=now, max_age=max_age)
        finally:
            os.close(fd)
    if problem is not None or data is None:
        # A fault is reported; an expired blob just goes.
        if problem is not None:
            logger.warning(
                "%s: the cached copy of %s %s; it was removed and the file is fetched again",
                key.origin,
                printable(key.uri),
                problem,
            )
        discard(name, blobs_fd)
        return None
    return data


def _read_open(
    fd: int, key: CacheKey, *, now: float, max_age: float | None
) -> tuple[bytes | None, str | None]:
    """(bytes, None) if the blob is sound; (None, problem); (None, None) if expired."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None, "is not a regular file"
    if info.st_size != key.size:
        return None, f"holds {info.st_size} bytes, not the {key.size} listed"
    if max_age is not None and now - info.st_mtime > max_age:
        return None, None
    data = _read_exactly(fd, key.size)
    if data is None:
        return None, "changed size while being read"
    if hashlib.sha256(data).hexdigest() != blob_name(key):
        return None, "does not hash to its name"
    # Last use orders eviction; the write time (mtime) is kept for the age limit.
    os.utime(fd, (now, info.st_mtime))
    return data, None


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes and then end of file, or None."""
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    if os.read(fd, 1):
        return None
    return b"".join(chunks)


def write_blob(
    blobs_fd: int, name: str, key: CacheKey, data: bytes, *, now: float
) -> Literal["present", "refused", "written"]:
    """Keep ``data`` as blob ``name``: ``present`` if a blob of the listed size is already
    there (blobs are immutable; a read checks it before any use), ``refused`` if ``data``
    does not match ``key``."""
    try:
        info = os.stat(name, dir_fd=blobs_fd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISREG(info.st_mode) and info.st_size == key.size:
            return "present"
        discard(name, blobs_fd)
    if len(data) != key.size or hashlib.sha256(data).hexdigest() != name:
        return "refused"
    write_new(blobs_fd, name, data, times=now)
    return "written"


def purge_blobs(blobs_fd: int) -> tuple[int, int]:
    """Remove every blob and temporary file of a label; the (files, bytes) of the blobs.
    Anything else found there is left alone."""
    files = size = 0
    with os.scandir(blobs_fd) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if _BLOB_RE.match(entry.name) and stat.S_ISREG(info.st_mode):
                files += 1
                size += info.st_size
            if _BLOB_RE.match(entry.name) or entry.name.startswith(TMP):
                discard(entry.name, blobs_fd)
    return files, size
