"""The disk cache: verified bytes kept on disk, content-addressed, one folder per label.

Layout, under the user cache directory (``~/.cache/skillward`` on Linux)::

    <root>/<label>/index.jsonl          the transport identity, then one line per blob kept
    <root>/<label>/blobs/<sha256 hex>   the bytes, named by their digest
    <root>/<label>/lock                 serialises rebinding, index writes, eviction and purges

Labels are host-assigned (``[a-z0-9-]``) and blob names are digests: nothing a
server writes becomes part of a path. Directories are 0700 and files 0600, made
that way. Reads open with ``O_NOFOLLOW``, require a regular file of the listed
size, and hash what they read; the host verifies the bytes again. Writes take only
bytes that match their key, through a private temporary file and an atomic rename; a
blob is never modified in place.

Nothing is ``fsync``-ed, because nothing here needs to survive a crash, only to be
harmless after one. A power loss can leave a renamed file empty, cut short, or with
blocks never written (zeros); the rename itself may be lost. Then:

* a blob of the wrong size is removed and fetched again, and one of the right size
  does not hash to its name, and is removed and fetched again: never served;
* an index whose header line is not whole (no newline, not JSON, not this format) is
  no sound index: the label's blobs are never tried, and the next write rebinds the
  label, dropping them. A whole header names an identity some write put there (a
  lost rename leaves the one before); either way a blob is content-addressed, and is
  served only for an entry listing its digest, after both checks. A torn record line
  after the header is set on a line of its own and dropped on the next trim: records
  name the files a blob was written for, and no read relies on them;
* a temporary file left behind is removed once it is an hour old.

So a crash costs at most a miss (tests/unit/test_diskcache.py and
tests/integration/test_disk_cache.py show each case), and a cold load that fills the
cache costs little more than one without (bench/bench_cold_load.py).

Nothing on disk is proof of anything. The index's identity only decides whether a
label's blobs may be tried at all; modification times (write time) and access
times (last use) only decide what is evicted.

POSIX only: elsewhere the cache turns itself off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from skillward.cache.seam import CacheKey
from skillward.core.config import Limits
from skillward.core.errors import UsageError, printable
from skillward.core.labels import check_label
from skillward.edge._dirs import user_cache_dir
from skillward.edge._local import default_local_dirs
from skillward.edge._tree import CLOEXEC, DIR_FLAGS, NOFOLLOW, NONBLOCK, READ_FLAGS

if sys.platform != "win32":
    import fcntl

__all__ = ["DiskCache", "LabelUsage"]

logger = logging.getLogger("skillward")

_SUPPORTED = sys.platform != "win32" and hasattr(os, "O_NOFOLLOW")
# The shared flags are 0 where missing (Windows), where the cache turns itself off.
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | NOFOLLOW | NONBLOCK | CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC
# What opening a blob path with O_NOFOLLOW | O_NONBLOCK gives when something else is
# planted there: a symlink (ELOOP; EMLINK on some BSDs), a socket (ENXIO), a file that
# is not ours to read (EACCES, EPERM).
_NOT_A_FILE = frozenset({errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EACCES, errno.EPERM})

_BLOBS = "blobs"
_INDEX = "index.jsonl"
_LOCK = "lock"
_TMP = ".tmp-"
_FORMAT = 1
_MAX_HEADER = 64 * 1024
_HEADER_CHUNK = 512
# An index line longer than this was not written by the cache: it is dropped on a trim.
_MAX_LINE = 64 * 1024
# The index is trimmed to the blobs present once it passes this, or twice its last trim.
_INDEX_ROOM = 64 * 1024
_BLOB_RE = re.compile(r"[0-9a-f]{64}\Z")
_DIGEST_RE = re.compile(r"sha256:([0-9a-f]{64})\Z")
# A temporary file this old was left by a writer that died.
_STALE_TMP = 3600.0


class _Unsafe(Exception):
    """A cache path is not what skillward made: not used, for the reason given."""


@dataclass(frozen=True, slots=True)
class LabelUsage:
    """What the cache holds for one label."""

    label: str
    #: The transport identity the label's blobs came from (None: no readable index).
    identity: str | None
    files: int
    size: int


def _blob_name(key: CacheKey) -> str | None:
    match = _DIGEST_RE.match(key.digest)
    return match.group(1) if match else None


def _check_dir(fd: int, shown: str) -> None:
    """A directory the cache may use: ours, and writable by nobody else."""
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise _Unsafe(f"{shown} is not a directory")
    if info.st_uid != os.geteuid():
        raise _Unsafe(f"{shown} is owned by uid {info.st_uid}, not by you (uid {os.geteuid()})")
    if info.st_mode & 0o022:
        raise _Unsafe(
            f"{shown} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
        )


def _mkdir_private(name: str, parent: int | None) -> None:
    """Make a 0700 directory. The umask may have taken owner bits too: set them exactly
    (the parent is ours and private, so nothing can swap in a link meanwhile)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        return
    os.chmod(name, 0o700, dir_fd=parent)


def _open_dir(name: str, parent: int | None, shown: str, *, create: bool) -> int | None:
    """An fd of directory ``name`` (under ``parent``), checked; None if missing."""
    try:
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            _mkdir_private(name, parent)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _Unsafe(f"{shown} cannot be opened as a plain directory ({exc.strerror})") from None
    try:
        _check_dir(fd, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _discard(name: str, directory: int) -> None:
    """Remove a blob path, whatever was planted there (never following a link)."""
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    except (IsADirectoryError, PermissionError):  # a directory (EISDIR, or EPERM on macOS)
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=directory)


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_header(label_fd: int) -> str | None:
    """The identity in the index's first line, or None if there is no sound index.
    Reads no further than that line: every get asks."""
    try:
        fd = os.open(_INDEX, READ_FLAGS, dir_fd=label_fd)
    except OSError:
        return None
    head = b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while b"\n" not in head and len(head) < _MAX_HEADER:
            chunk = os.read(fd, min(_HEADER_CHUNK, _MAX_HEADER - len(head)))
            if not chunk:
                break
            head += chunk
    finally:
        os.close(fd)
    return _identity_of(head)


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
    identity = header.get("identity")
    return identity if isinstance(identity, str) else None


def _index_lines(label_fd: int, present: Collection[str]) -> tuple[bytes, list[bytes]] | None:
    """The index's header line and the latest line of each blob in ``present``; None
    (leave it alone) if the index is not a regular file with a sound header."""
    try:
        fd = os.open(_INDEX, READ_FLAGS, dir_fd=label_fd)
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


def _write_new(directory: int, name: str, data: bytes, *, times: float | None = None) -> None:
    """Create ``name`` in ``directory`` atomically: private temp file, then rename.

    No ``fsync`` of the file or the directory: what a crash leaves is a miss, never
    a wrong read (see the module docstring).
    """
    tmp = f"{_TMP}{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, _NEW_FLAGS, 0o600, dir_fd=directory)
    try:
        try:
            os.fchmod(fd, 0o600)
            _write_all(fd, data)
            if times is not None:
                os.utime(fd, (times, times))
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=directory)
        raise


@contextlib.contextmanager
def _flock(label_fd: int, *, wait: bool) -> Iterator[bool]:
    """Hold the label's lock; yields False (holding nothing) if busy and not waiting."""
    fd = os.open(_LOCK, _LOCK_FLAGS, 0o600, dir_fd=label_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Unsafe("the cache's lock file is not a regular file")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)  # in case the umask took owner bits when it was made
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


class DiskCache:
    """A :class:`~skillward.cache.seam.ContentCache` on disk, isolated from skill discovery.

    ``root`` defaults to the user cache directory. ``limits.max_cache_bytes`` is
    the budget per label and ``limits.max_cache_age`` the optional age limit.
    ``clock`` gives the time used for eviction order and age. ``discovery`` lists
    the skill discovery paths to stay out of (default: the ``.agents/skills``
    conventions); a host adds its own with :meth:`isolate_from`.

    Caching turns itself off, with one warning saying why, when the root overlaps
    a discovery path or is not the user's own: :attr:`disabled` holds the reason.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.time,
        discovery: Iterable[Path] | None = None,
    ) -> None:
        self.root = Path(os.path.abspath(root if root is not None else user_cache_dir()))
        self.limits = limits or Limits()
        self.disabled: str | None = None
        self._clock = clock
        # Resolved once: later opens never follow a link swapped into the path.
        self._real_root = os.path.realpath(self.root)
        self._tally: dict[str, int] = {}
        # Bytes of each label's index after its last trim (see _INDEX_ROOM).
        self._index_kept: dict[str, int] = {}
        self._warned: set[tuple[str, str]] = set()
        # Keys this cache just served from disk: the host's put after them has nothing to do.
        self._served: set[CacheKey] = set()
        if not _SUPPORTED:
            self._disable("this platform lacks O_NOFOLLOW or flock")
        paths = discovery if discovery is not None else [d.path for d in default_local_dirs()]
        for path in paths:
            self.isolate_from(path)
        if self.disabled is None and os.path.lexists(self.root):
            # Checked on start (and again on every use): the root must be the user's own.
            with contextlib.suppress(OSError, _Unsafe), self._root_fd(create=False):
                pass

    # --- the ContentCache protocol -----------------------------------------------------

    def get(self, key: CacheKey) -> bytes | None:
        name = _blob_name(key)
        if self.disabled is not None or name is None:
            return None
        check_label(key.origin)
        # A blob that is not there is a miss, so one lookup settles a cold read: what it
        # finds is never used (a blob that is there is opened through checked directories).
        if not os.path.lexists(os.path.join(self._real_root, key.origin, _BLOBS, name)):
            self._served.discard(key)
            return None
        try:
            with self._label(key.origin, create=False) as dirs:
                if dirs is None:
                    return None
                label_fd, blobs_fd = dirs
                if _read_header(label_fd) != key.identity:
                    return None  # another server's blobs, or no sound index: never tried
                data = self._read_blob(blobs_fd, name, key)
        except (OSError, _Unsafe) as exc:
            self._warn_once(key.origin, f"cache read skipped: {exc}")
            return None
        if data is None:
            self._served.discard(key)
        else:
            self._served.add(key)
        return data

    def put(self, key: CacheKey, data: bytes) -> None:
        name = _blob_name(key)
        budget = self.limits.max_cache_bytes
        if self.disabled is not None or name is None or key.size > budget or key in self._served:
            return
        try:
            with self._label(key.origin, create=True) as dirs:
                assert dirs is not None
                label_fd, blobs_fd = dirs
                if not self._bind(label_fd, blobs_fd, key):
                    return
                self._write_blob(label_fd, blobs_fd, name, key, data)
        except (OSError, _Unsafe) as exc:
            self._warn_once(key.origin, f"cache write skipped: {exc}")

    def forget(self, label: str) -> None:
        """Purge ``label``'s blobs; a cache that is off is left alone (with a warning)."""
        try:
            self.purge(label)
        except UsageError as exc:
            logger.warning("cache of %s not purged: %s", label, exc.message)

    def narrow(self, limits: Limits) -> None:
        """Keep within ``limits`` too: the smaller budget and the shorter age apply."""
        ages = [a for a in (self.limits.max_cache_age, limits.max_cache_age) if a is not None]
        self.limits = dataclasses.replace(
            self.limits,
            max_cache_bytes=min(self.limits.max_cache_bytes, limits.max_cache_bytes),
            max_cache_age=min(ages, default=None),
        )

    def isolate_from(self, directory: Path) -> None:
        """Turn caching off if the root is inside ``directory`` or contains it.

        Both sides are compared as given and with every symlink resolved, so a
        link in either direction cannot hide an overlap.
        """
        if self.disabled is not None:
            return
        ours = {os.path.abspath(self.root), self._real_root}
        theirs = {os.path.abspath(directory), os.path.realpath(directory)}
        for mine in ours:
            for other in theirs:
                if os.path.commonpath([mine, other]) in (mine, other):
                    self._disable(
                        f"the cache directory {printable(str(self.root))} overlaps the skill "
                        f"discovery path {printable(str(directory))} "
                        f"({printable(mine)} and {printable(other)}); cached server content "
                        "must never be where local skills are discovered"
                    )
                    return

    # --- lifecycle ---------------------------------------------------------------------

    def usage(self) -> list[LabelUsage]:
        """Files and bytes per label, in label order. Raises UsageError if the cache is off."""
        found: list[LabelUsage] = []
        with self._lifecycle() as root:
            if root is None:
                return found
            for label in self._labels(root, None):
                with self._label(label, create=False, root=root) as dirs:
                    if dirs is not None:
                        blobs = self._blobs(dirs[1])
                        size = sum(b[2] for b in blobs)
                        found.append(LabelUsage(label, _read_header(dirs[0]), len(blobs), size))
        return found

    def purge(self, label: str | None = None) -> tuple[int, int]:
        """Remove one label's cache, or every label's; returns (files, bytes) removed.

        Only what the cache itself makes is removed: blobs, temporary files, the
        index and the lock. Raises UsageError if the cache is off.
        """
        files = size = 0
        if label is not None:
            check_label(label)
        with self._lifecycle() as root:
            if root is None:
                return 0, 0
            for name in self._labels(root, label):
                removed = self._purge_label(root, name)
                files += removed[0]
                size += removed[1]
        return files, size

    # --- internals ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _lifecycle(self) -> Iterator[int | None]:
        """The root fd for listing and purging; problems become UsageError."""
        if self.disabled is not None:
            raise UsageError(
                f"the disk cache at {printable(str(self.root))} is off: {self.disabled}"
            )
        try:
            with self._root_fd(create=False) as root:
                yield root
        except (OSError, _Unsafe) as exc:
            raise UsageError(f"the disk cache at {printable(str(self.root))}: {exc}") from None

    @staticmethod
    def _labels(root: int, label: str | None) -> list[str]:
        """``label`` (checked), or every folder named like a label."""
        if label is not None:
            return [check_label(label)]
        found = []
        for name in sorted(os.listdir(root)):
            with contextlib.suppress(UsageError):
                found.append(check_label(name))
        return found

    def _disable(self, reason: str) -> None:
        if self.disabled is None:
            self.disabled = reason
            logger.warning("disk cache off: %s", reason)

    def _warn_once(self, label: str, message: str) -> None:
        if (label, message) not in self._warned:
            self._warned.add((label, message))
            logger.warning("%s: %s", label, message)

    def _open_root(self, *, create: bool) -> int | None:
        root = self._real_root
        if create and not os.path.lexists(root):
            parent = os.path.dirname(root)
            missing: list[str] = []
            while not os.path.lexists(parent) and parent != os.path.dirname(parent):
                missing.append(parent)
                parent = os.path.dirname(parent)
            for path in reversed(missing):
                _mkdir_private(path, None)
        try:
            return _open_dir(root, None, f"the cache directory {self.root}", create=create)
        except _Unsafe as exc:
            self._disable(str(exc))
            raise

    @contextlib.contextmanager
    def _root_fd(self, *, create: bool) -> Iterator[int | None]:
        fd = self._open_root(create=create)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    @contextlib.contextmanager
    def _label(
        self, label: str, *, create: bool, root: int | None = None
    ) -> Iterator[tuple[int, int] | None]:
        """(label fd, blobs fd) for ``label``, each checked; None if not there."""
        check_label(label)
        with contextlib.ExitStack() as stack:
            if root is None:
                root = stack.enter_context(self._root_fd(create=create))
                if root is None:
                    yield None
                    return
            shown = f"the cache directory of {label}"
            label_fd = _open_dir(label, root, shown, create=create)
            if label_fd is None:
                yield None
                return
            stack.callback(os.close, label_fd)
            blobs_fd = _open_dir(_BLOBS, label_fd, shown, create=create)
            if blobs_fd is None:
                yield None
                return
            stack.callback(os.close, blobs_fd)
            yield label_fd, blobs_fd

    def _read_blob(self, blobs_fd: int, name: str, key: CacheKey) -> bytes | None:
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
                data, problem = self._read_open_blob(fd, key)
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
            _discard(name, blobs_fd)
            return None
        return data

    def _read_open_blob(self, fd: int, key: CacheKey) -> tuple[bytes | None, str | None]:
        """(bytes, None) if the blob is sound; (None, problem); (None, None) if expired."""
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "is not a regular file"
        if info.st_size != key.size:
            return None, f"holds {info.st_size} bytes, not the {key.size} listed"
        now = self._clock()
        max_age = self.limits.max_cache_age
        if max_age is not None and now - info.st_mtime > max_age:
            return None, None
        data = _read_exactly(fd, key.size)
        if data is None:
            return None, "changed size while being read"
        if hashlib.sha256(data).hexdigest() != _blob_name(key):
            return None, "does not hash to its name"
        # Last use orders eviction; the write time (mtime) is kept for the age limit.
        os.utime(fd, (now, info.st_mtime))
        return data, None

    def _bind(self, label_fd: int, blobs_fd: int, key: CacheKey) -> bool:
        """Make sure the label's blobs came from ``key.identity``; False if busy."""
        if _read_header(label_fd) == key.identity:
            return True
        with _flock(label_fd, wait=False) as held:
            if not held:
                return False
            if _read_header(label_fd) == key.identity:
                return True
            # A new label, or one pointed at a different server: its old blobs go.
            for name, _, _, _ in self._blobs(blobs_fd):
                _discard(name, blobs_fd)
            header = json.dumps({"format": _FORMAT, "identity": key.identity}) + "\n"
            _write_new(label_fd, _INDEX, header.encode())
            self._tally[key.origin] = 0
            self._index_kept[key.origin] = len(header)
            return True

    def _write_blob(
        self, label_fd: int, blobs_fd: int, name: str, key: CacheKey, data: bytes
    ) -> None:
        try:
            info = os.stat(name, dir_fd=blobs_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISREG(info.st_mode) and info.st_size == key.size:
                return  # immutable: already there (get checks it before any use)
            _discard(name, blobs_fd)
        if len(data) != key.size or hashlib.sha256(data).hexdigest() != name:
            shown = printable(key.uri)
            self._warn_once(key.origin, f"refused to cache bytes that do not match {shown}")
            return
        _write_new(blobs_fd, name, data, times=self._clock())
        self._index_blob(label_fd, blobs_fd, name, key)
        tally = self._tally.get(key.origin)
        if tally is None:
            tally = sum(size for _, _, size, _ in self._blobs(blobs_fd))
        else:
            tally += key.size
        self._tally[key.origin] = tally
        if tally > self.limits.max_cache_bytes:
            self._evict(label_fd, blobs_fd, key.origin, keep=name)

    def _index_blob(self, label_fd: int, blobs_fd: int, name: str, key: CacheKey) -> None:
        """Record the skill and file a blob was written for. Under the label's lock, so a
        trim never drops a line being appended; the index is trimmed to the blobs present
        when it has grown to twice its size at the last trim."""
        line = (json.dumps({"blob": name, "skill": key.skill, "uri": key.uri}) + "\n").encode()
        with _flock(label_fd, wait=True):
            fd = os.open(_INDEX, _APPEND_FLAGS, dir_fd=label_fd)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    return
                if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
                    line = b"\n" + line  # after a torn line (a writer died): a line of its own
                _write_all(fd, line)
            finally:
                os.close(fd)
            if info.st_size + len(line) > max(_INDEX_ROOM, 2 * self._index_kept.get(key.origin, 0)):
                present = {blob for blob, _, _, _ in self._blobs(blobs_fd)}
                self._trim_index(label_fd, present, key.origin)

    def _trim_index(self, label_fd: int, present: Collection[str], label: str) -> None:
        """Rewrite the index with one line per blob still present (the label's lock held)."""
        kept = _index_lines(label_fd, present)
        if kept is None:
            return  # no sound index: its blobs are never tried, and the next write rebinds
        header, lines = kept
        data = header + b"".join(lines)
        _write_new(label_fd, _INDEX, data)
        self._index_kept[label] = len(data)

    def _blobs(self, blobs_fd: int) -> list[tuple[str, float, int, float]]:
        """(name, last use, size, written) of each blob; stale temp files are removed."""
        found = []
        now = self._clock()
        with os.scandir(blobs_fd) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if _BLOB_RE.match(entry.name) and stat.S_ISREG(info.st_mode):
                    found.append((entry.name, info.st_atime, info.st_size, info.st_mtime))
                elif entry.name.startswith(_TMP) and now - info.st_mtime > _STALE_TMP:
                    _discard(entry.name, blobs_fd)
        return found

    def _evict(self, label_fd: int, blobs_fd: int, label: str, *, keep: str) -> None:
        """Remove expired blobs, then the least recently used, until a tenth under budget
        (so a full label is not rescanned on every write)."""
        with _flock(label_fd, wait=False) as held:
            if not held:
                return  # another host is evicting this label right now
            blobs = self._blobs(blobs_fd)
            max_age = self.limits.max_cache_age
            now = self._clock()
            total = sum(size for _, _, size, _ in blobs)
            target = self.limits.max_cache_bytes * 9 // 10
            present = {b[0] for b in blobs}
            for name, _, size, written in sorted(blobs, key=lambda b: (b[1], b[0])):
                expired = max_age is not None and now - written > max_age
                if name != keep and (expired or total > target):
                    _discard(name, blobs_fd)
                    present.discard(name)
                    total -= size
            self._tally[label] = total
            self._trim_index(label_fd, present, label)

    def _purge_label(self, root: int, label: str) -> tuple[int, int]:
        files = size = 0
        with self._label(label, create=False, root=root) as dirs:
            if dirs is None:
                return 0, 0
            label_fd, blobs_fd = dirs
            with _flock(label_fd, wait=True), os.scandir(blobs_fd) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    if _BLOB_RE.match(entry.name) and stat.S_ISREG(info.st_mode):
                        files += 1
                        size += info.st_size
                    if _BLOB_RE.match(entry.name) or entry.name.startswith(_TMP):
                        _discard(entry.name, blobs_fd)
                for name in (_INDEX, _LOCK):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=label_fd)
            # Each stays if anything the cache did not make is inside.
            with contextlib.suppress(OSError):
                os.rmdir(_BLOBS, dir_fd=label_fd)
        with contextlib.suppress(OSError):
            os.rmdir(label, dir_fd=root)
        self._tally.pop(label, None)
        self._index_kept.pop(label, None)
        # forget() runs in a worker thread: copy before filtering (list() holds the GIL).
        self._served.difference_update([k for k in list(self._served) if k.origin == label])
        return files, size
