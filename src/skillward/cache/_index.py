"""The disk cache's per-label index: which server a label's blobs came from, and where
each blob is.

``<label>/index.jsonl`` starts with a header line naming the format and the transport
identity the label's blobs were fetched from; a label's blobs are tried only when that
identity is the one asked for. Then one line per blob written: its digest, the pack,
offset and length it was appended at, when, and the skill and file it was written for.
The latest line for a digest wins, and lines are trimmed to the packs present.

Nothing here is proof of anything: a blob is served only if the bytes at its place hash
to its digest (``_packs.py``). A header that is not whole (no newline, not JSON, not this
format) is no sound index: the label's blobs are never tried, and the next write rebinds
the label. A torn or malformed line after the header is skipped, set apart from the next
line appended, and dropped on the next trim.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

from skillward.cache._files import APPEND_FLAGS, flock, write_all, write_new
from skillward.cache._packs import Location, is_pack
from skillward.cache.seam import CacheKey
from skillward.edge._tree import READ_FLAGS

__all__ = ["INDEX", "Indexes"]

#: The index file in each label's directory.
INDEX = "index.jsonl"
_FORMAT = 2
_MAX_HEADER = 64 * 1024
# An index line longer than this was not written by the cache: it is skipped.
_MAX_LINE = 64 * 1024
# The index is trimmed to the packs present once it passes this, or twice its last trim.
_INDEX_ROOM = 64 * 1024


# What tells whether the index changed on disk: its file, size and change times.
_Signature = tuple[int, int, int, int, int]


def _signature(info: os.stat_result) -> _Signature:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass
class _Read:
    """One label's index as last read: the identity (None: no sound index), and the
    latest line and place of each blob."""

    signature: _Signature
    identity: str | None
    header: bytes = b""
    lines: dict[str, bytes] = field(default_factory=dict)
    places: dict[str, Location] = field(default_factory=dict)
    #: Where the last whole line read ends: an index only appended to since is read on
    #: from there, not from the start.
    consumed: int = 0


def _identity_of(line: bytes) -> str | None:
    """The identity in a header line, or None if it is not sound."""
    if not line.endswith(b"\n"):
        return None
    try:
        header = json.loads(line)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        return None
    found = header.get("identity")
    return found if isinstance(found, str) else None


def _place_of(line: bytes) -> tuple[str, Location] | None:
    """The digest (hex) and place a record line gives, or None if it is not one."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    blob, pack, at = record.get("blob"), record.get("pack"), record.get("at")
    size, written = record.get("size"), record.get("written")
    if not (
        isinstance(blob, str)
        and isinstance(pack, str)
        and is_pack(pack)
        and type(at) is int
        and type(size) is int
        and at >= 0
        and size >= 0
        and isinstance(written, int | float)
    ):
        return None
    return blob, Location(pack, at, size, float(written))


def _read(label_fd: int, before: _Read | None = None) -> _Read | None:
    """The index as it is on disk; None if there is none, or it is not a regular file.
    ``before`` (the same label's last read, updated and returned) is read on from where it
    ended if the index is the same file, no shorter: between rewrites it is only appended
    to (a rebind or trim makes a new file)."""
    try:
        fd = os.open(INDEX, READ_FLAGS, dir_fd=label_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        signature = _signature(info)
        if (
            before is not None
            and before.identity is not None
            and before.signature[:2] == signature[:2]
            and info.st_size >= before.consumed
        ):
            found = before
            found.signature = signature
            handle.seek(found.consumed)
        else:
            header = handle.readline(_MAX_HEADER)
            found = _Read(signature, _identity_of(header), header, consumed=handle.tell())
            if found.identity is None:
                return found
        _read_lines(handle, found)
    return found


def _read_lines(handle: BinaryIO, found: _Read) -> None:
    """The record lines from where ``handle`` is, into ``found``. A last line with no
    newline is not consumed: a writer may be appending it right now."""
    while line := handle.readline(_MAX_LINE):
        if not line.endswith(b"\n"):
            if len(line) < _MAX_LINE:
                return  # at the end: read again next time, whole or torn
            while line and not line.endswith(b"\n"):  # too long: skipped
                line = handle.readline(_MAX_LINE)
            found.consumed = handle.tell()
            continue
        found.consumed = handle.tell()
        place = _place_of(line)
        if place is not None:
            found.lines.pop(place[0], None)
            found.lines[place[0]] = line
            found.places[place[0]] = place[1]


class Indexes:
    """The index of each label of one cache, as last read, and how large each was after
    its last trim (so that an index is trimmed when it has doubled, not on every write).

    An index is read again whenever a stat of it shows a different signature: one
    rebound or rewritten by any process is a new file (read whole), and one appended to
    has a new size and times (read on from where the last read ended).
    """

    def __init__(self) -> None:
        self._kept: dict[str, int] = {}
        self._read: dict[str, _Read] = {}
        self._appended: dict[str, _Signature] = {}

    def _current(self, label: str, label_fd: int) -> _Read | None:
        try:
            info = os.stat(INDEX, dir_fd=label_fd, follow_symlinks=False)
        except OSError:
            self._read.pop(label, None)
            return None
        seen = self._read.get(label)
        if seen is not None and seen.signature == _signature(info):
            return seen
        found = _read(label_fd, seen)
        if found is None:
            self._read.pop(label, None)
        else:
            self._read[label] = found
        return found

    def identity(self, label: str, label_fd: int) -> str | None:
        """The identity in ``label``'s index, or None if there is no sound index."""
        found = self._current(label, label_fd)
        return None if found is None else found.identity

    def places(self, label: str, label_fd: int, identity: str) -> Mapping[str, Location] | None:
        """Where ``label``'s index says each blob (by its digest's hex) is, if the index is
        bound to ``identity``; None if it is bound to another, or is no sound index."""
        found = self._current(label, label_fd)
        return found.places if found is not None and found.identity == identity else None

    def surely_missing(self, label: str, index_path: str, blob: str) -> bool:
        """True if ``blob`` is known to be missing without opening anything: there is no
        index, or the one last read is unchanged and does not place it."""
        try:
            info = os.stat(index_path, follow_symlinks=False)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        seen = self._read.get(label)
        return seen is not None and seen.signature == _signature(info) and blob not in seen.places

    def unplace(self, label: str, blob: str) -> None:
        """Forget where ``blob`` was: what is there is not it (a newer line may say)."""
        seen = self._read.get(label)
        if seen is not None:
            seen.places.pop(blob, None)
            seen.lines.pop(blob, None)

    def live(self, label: str, label_fd: int, packs: Collection[str]) -> int:
        """How many blobs the index places in ``packs``."""
        found = self._current(label, label_fd)
        if found is None or found.identity is None:
            return 0
        return sum(1 for place in found.places.values() if place.pack in packs)

    def rebind(self, label: str, label_fd: int, identity: str) -> None:
        """Start ``label``'s index afresh for blobs from ``identity`` (its lock held)."""
        header = json.dumps({"format": _FORMAT, "identity": identity}) + "\n"
        write_new(label_fd, INDEX, header.encode())
        self._kept[label] = len(header)
        self._read.pop(label, None)

    def record(
        self,
        label_fd: int,
        blob: str,
        where: Location,
        key: CacheKey,
        packs: Callable[[], Collection[str]],
    ) -> None:
        """Record that blob ``blob`` (of ``key``) is at ``where``, with one append of one
        line (no lock: O_APPEND places each line whole after the others). A line a trim
        drops while it is appended to the file being replaced costs a miss, never a wrong
        read. The index is trimmed to the ``packs`` present, under the label's lock, when it
        has grown to twice its size at the last trim."""
        record = {
            "blob": blob,
            "pack": where.pack,
            "at": where.at,
            "size": where.size,
            "written": where.written,
            "skill": key.skill,
            "uri": key.uri,
        }
        line = (json.dumps(record) + "\n").encode()
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
            seen = self._read.get(key.origin)
            if (
                seen is not None
                and seen.signature == before
                and after[:2] == before[:2]
                and after[2] == before[2] + len(line)
            ):
                # Only this line changed the index since it was read.
                seen.signature = after
                if seen.consumed == info.st_size:
                    seen.consumed = after[2]
                seen.lines.pop(blob, None)
                seen.lines[blob] = line.lstrip(b"\n")
                seen.places[blob] = where
        finally:
            os.close(fd)
        if info.st_size + len(line) > max(_INDEX_ROOM, 2 * self._kept.get(key.origin, 0)):
            with flock(label_fd, wait=False) as held:
                if held:  # else another process is trimming or evicting it right now
                    self.trim(key.origin, label_fd, packs())

    def trim(self, label: str, label_fd: int, packs: Collection[str]) -> None:
        """Rewrite the index with the latest line of each blob in the ``packs`` present
        (the label's lock held)."""
        found = _read(label_fd)
        if found is None or found.identity is None:
            return  # no sound index: its blobs are never tried, and the next write rebinds
        lines = [line for blob, line in found.lines.items() if found.places[blob].pack in packs]
        data = found.header + b"".join(lines)
        write_new(label_fd, INDEX, data)
        self._kept[label] = len(data)
        self._read.pop(label, None)

    def forget(self, label: str) -> None:
        self._kept.pop(label, None)
        self._read.pop(label, None)
        self._appended.pop(label, None)
