"""The disk cache's per-label index: which server a label's blobs came from.

``<label>/index.jsonl`` starts with a header line naming the format and the transport
identity the label's blobs were fetched from; a label's blobs are tried only when that
identity is the one asked for. Then one line per blob written, naming the skill and file
it was written for: no read relies on those, and they are trimmed to the blobs present.

A header that is not whole (no newline, not JSON, not this format) is no sound index: the
label's blobs are never tried, and the next write rebinds the label. A torn line after
the header is set on a line of its own and dropped on the next trim.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Collection

from skillward.cache._files import APPEND_FLAGS, flock, write_all, write_new
from skillward.cache.seam import CacheKey
from skillward.edge._tree import READ_FLAGS

__all__ = ["INDEX", "Indexes"]

#: The index file in each label's directory.
INDEX = "index.jsonl"
_FORMAT = 1
_MAX_HEADER = 64 * 1024
_HEADER_CHUNK = 512
# An index line longer than this was not written by the cache: it is dropped on a trim.
_MAX_LINE = 64 * 1024
# The index is trimmed to the blobs present once it passes this, or twice its last trim.
_INDEX_ROOM = 64 * 1024


# What tells whether the index changed on disk: its file, size and change times.
_Signature = tuple[int, int, int, int, int]


def _signature(info: os.stat_result) -> _Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _read_identity(label_fd: int) -> tuple[str | None, _Signature | None]:
    """The identity in the index's first line (None if there is no sound index), and the
    signature of the file it was read from (None if it is not a regular file)."""
    try:
        fd = os.open(INDEX, READ_FLAGS, dir_fd=label_fd)
    except OSError:
        return None, None
    head = b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, None
        while b"\n" not in head and len(head) < _MAX_HEADER:
            chunk = os.read(fd, min(_HEADER_CHUNK, _MAX_HEADER - len(head)))
            if not chunk:
                break
            head += chunk
    finally:
        os.close(fd)
    return _identity_of(head), _signature(info)


def _identity_of(head: bytes) -> str | None:
    """The identity in the header line that starts ``head``, or None if it is not sound."""
    line, newline, _ = head.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(line)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        return None
    found = header.get("identity")
    return found if isinstance(found, str) else None


def _lines(label_fd: int, present: Collection[str]) -> tuple[bytes, list[bytes]] | None:
    """The index's header line and the latest line of each blob in ``present``; None
    (leave it alone) if the index is not a regular file with a sound header."""
    try:
        fd = os.open(INDEX, READ_FLAGS, dir_fd=label_fd)
    except OSError:
        return None
    lines: dict[str, bytes] = {}
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        header = handle.readline(_MAX_HEADER)
        if _identity_of(header) is None:
            return None
        while line := handle.readline(_MAX_LINE):
            if not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # too long or torn: dropped
                    line = handle.readline(_MAX_LINE)
                continue
            try:
                blob = json.loads(line).get("blob")
            except (ValueError, AttributeError):
                continue
            if isinstance(blob, str) and blob in present:
                lines.pop(blob, None)
                lines[blob] = line
    return header, list(lines.values())


class Indexes:
    """The index of each label of one cache, and how large each was after its last trim
    (so that an index is trimmed when it has doubled, not rescanned on every write).

    The identity read from each label's index is kept with the index's signature, and
    read again whenever a stat of the index shows a different one: an index rebound or
    rewritten by any process is a new file, and one appended to has a new size and times.
    """

    def __init__(self) -> None:
        self._kept: dict[str, int] = {}
        self._seen: dict[str, tuple[_Signature, str | None]] = {}
        self._appended: dict[str, _Signature] = {}

    def identity(self, label: str, label_fd: int) -> str | None:
        """The identity in ``label``'s index, or None if there is no sound index."""
        try:
            info = os.stat(INDEX, dir_fd=label_fd, follow_symlinks=False)
        except OSError:
            return None
        seen = self._seen.get(label)
        if seen is not None and seen[0] == _signature(info):
            return seen[1]
        found, signature = _read_identity(label_fd)
        if signature is None:
            self._seen.pop(label, None)
        else:
            self._seen[label] = (signature, found)
        return found

    def rebind(self, label: str, label_fd: int, identity: str) -> None:
        """Start ``label``'s index afresh for blobs from ``identity`` (its lock held)."""
        header = json.dumps({"format": _FORMAT, "identity": identity}) + "\n"
        write_new(label_fd, INDEX, header.encode())
        self._kept[label] = len(header)

    def record(
        self, label_fd: int, name: str, key: CacheKey, present: Callable[[], Collection[str]]
    ) -> None:
        """Record the skill and file blob ``name`` was written for. Under the label's lock,
        so a trim never drops a line being appended; the index is trimmed to the blobs
        ``present`` returns when it has grown to twice its size at the last trim."""
        line = (json.dumps({"blob": name, "skill": key.skill, "uri": key.uri}) + "\n").encode()
        with flock(label_fd, wait=True):
            fd = os.open(INDEX, APPEND_FLAGS, dir_fd=label_fd)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    return
                before = _signature(info)
                # An index no one changed since this cache's last append ends with its newline.
                if (
                    info.st_size
                    and self._appended.get(key.origin) != before
                    and os.pread(fd, 1, info.st_size - 1) != b"\n"
                ):
                    line = b"\n" + line  # after a torn line (a writer died): a line of its own
                write_all(fd, line)
                after = _signature(os.fstat(fd))
                self._appended[key.origin] = after
                seen = self._seen.get(key.origin)
                if seen is not None and seen[0] == before:
                    # Only this append (under the lock) changed the index since it was read.
                    self._seen[key.origin] = (after, seen[1])
            finally:
                os.close(fd)
            if info.st_size + len(line) > max(_INDEX_ROOM, 2 * self._kept.get(key.origin, 0)):
                self.trim(key.origin, label_fd, present())

    def trim(self, label: str, label_fd: int, present: Collection[str]) -> None:
        """Rewrite the index with one line per blob still present (the label's lock held)."""
        kept = _lines(label_fd, present)
        if kept is None:
            return  # no sound index: its blobs are never tried, and the next write rebinds
        header, lines = kept
        data = header + b"".join(lines)
        write_new(label_fd, INDEX, data)
        self._kept[label] = len(data)

    def forget(self, label: str) -> None:
        self._kept.pop(label, None)
        self._seen.pop(label, None)
        self._appended.pop(label, None)
