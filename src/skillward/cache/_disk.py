"""The disk cache: verified bytes kept on disk, content-addressed, one folder per label.

Layout, under the user cache directory (``~/.cache/skillward`` on Linux)::

    <root>/<label>/index.jsonl            the transport identity, then where each blob is
    <root>/<label>/blobs/pack-<pid>-<hex> blobs appended one after another
    <root>/<label>/lock                   serialises rebinding, trims, eviction and purges

Labels are host-assigned (``[a-z0-9-]``) and pack names are made here: nothing a
server writes becomes part of a path. Directories are 0700 and files 0600, made
that way (``_files.py``). Each cache appends only to packs it created; a pack holds
at most an eighth of the label's budget (32 MiB at most), and eviction removes a
pack at a time. Packs, not a file per blob, because creating files is what a cold
load paid for (``_packs.py``). The index (``_index.py``) binds a label to the server
its blobs came from and says where each blob is: a pack, an offset and a length.

A read takes the place from the index, opens the pack with ``O_NOFOLLOW`` as a
regular file, reads the listed number of bytes there and hashes them (``_packs.py``);
the host verifies the bytes again. A write takes only bytes that match their key.

Nothing is ``fsync``-ed, because nothing here needs to survive a crash, only to be
harmless after one. A power loss can leave a pack or the index cut short, or with
blocks never written (zeros); a rename of a rewritten index may be lost. Then:

* a blob whose bytes are not there whole, or do not hash to its digest, is a miss:
  it is fetched again and appended anew, and the newer line is the one read;
* an index whose header line is not whole (no newline, not JSON, not this format) is
  no sound index: the label's blobs are never tried, and the next write rebinds the
  label, dropping them. A whole header names an identity some write put there (a
  lost rename leaves the one before); either way a blob is served only for an entry
  listing its digest, after the hash. A torn line after the header places nothing; it
  is set on a line of its own and dropped on the next trim;
* a temporary file left behind is removed once it is an hour old.

So a crash costs at most a miss (tests/unit/test_diskcache.py and
tests/integration/test_disk_cache.py show each case), and a cold load that fills the
cache costs little more than one without (bench/bench_cold_load.py).

Nothing on disk is proof of anything. The index's identity only decides whether a
label's blobs may be tried at all, and its places only where to look; modification
times (last append) and access times (last use) only decide what is evicted.

POSIX only: elsewhere the cache turns itself off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from skillward.cache._files import (
    LOCK,
    SUPPORTED,
    Unsafe,
    discard,
    flock,
    mkdir_private,
    open_dir,
)
from skillward.cache._index import INDEX, Indexes
from skillward.cache._packs import BLOBS, Location, append, list_packs, purge_packs, read_blob
from skillward.cache.seam import CacheKey
from skillward.core.config import Limits
from skillward.core.errors import UsageError, printable
from skillward.core.labels import check_label
from skillward.edge._dirs import user_cache_dir
from skillward.edge._local import default_local_dirs, overlap

__all__ = ["DiskCache", "LabelUsage"]

logger = logging.getLogger("skillward")

_DIGEST_RE = re.compile(r"sha256:([0-9a-f]{64})\Z")
# The most a pack grows to before the next one is started.
_PACK_BYTES = 32 * 1024 * 1024


def blob_name(key: CacheKey) -> str | None:
    """The hex of ``key``'s digest; None for a digest that is not SHA-256."""
    match = _DIGEST_RE.match(key.digest)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class LabelUsage:
    """What the cache holds for one label."""

    label: str
    #: The transport identity the label's blobs came from (None: no readable index).
    identity: str | None
    files: int
    size: int


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
        self._indexes = Indexes()
        self._warned: set[tuple[str, str]] = set()
        # Keys this cache just served from disk: the host's put after them has nothing to do.
        self._served: set[CacheKey] = set()
        # The pack this cache appends to, per label (each cache writes only its own).
        self._writing: dict[str, str] = {}
        if not SUPPORTED:
            self._disable("this platform lacks O_NOFOLLOW or flock")
        paths = discovery if discovery is not None else [d.path for d in default_local_dirs()]
        for path in paths:
            self.isolate_from(path)
        if self.disabled is None and os.path.lexists(self.root):
            # Checked on start (and again on every use): the root must be the user's own.
            with contextlib.suppress(OSError, Unsafe), self._root_fd(create=False):
                pass

    # --- the ContentCache protocol -----------------------------------------------------

    def get(self, key: CacheKey) -> bytes | None:
        name = blob_name(key)
        if self.disabled is not None or name is None:
            return None
        check_label(key.origin)
        # One stat settles most cold reads: no index, or an unchanged one placing no such
        # blob (what it finds is never used: a blob that is there is read through checked
        # directories).
        index = os.path.join(self._real_root, key.origin, INDEX)
        if self._indexes.surely_missing(key.origin, index, name):
            self._served.discard(key)
            return None
        data = None
        try:
            with self._label(key.origin, create=False) as dirs:
                if dirs is not None:
                    # Another server's blobs, or no sound index: never tried.
                    places = self._indexes.places(key.origin, dirs[0], key.identity)
                    if places is not None:
                        data = self._read(dirs[1], places.get(name), name, key)
        except (OSError, Unsafe) as exc:
            self._warn_once(key.origin, f"cache read skipped: {exc}")
        # Whatever is not served now is written again after the fetch.
        if data is None:
            self._served.discard(key)
        else:
            self._served.add(key)
        return data

    def put(self, key: CacheKey, data: bytes) -> None:
        name = blob_name(key)
        budget = self.limits.max_cache_bytes
        if self.disabled is not None or name is None or key.size > budget or key in self._served:
            return
        if len(data) != key.size or hashlib.sha256(data).hexdigest() != name:
            shown = printable(key.uri)
            self._warn_once(key.origin, f"refused to cache bytes that do not match {shown}")
            return
        try:
            with self._label(key.origin, create=True) as dirs:
                assert dirs is not None
                label_fd, blobs_fd = dirs
                places = self._bind(label_fd, blobs_fd, key)
                if places is not None and name not in places:
                    self._write_blob(label_fd, blobs_fd, name, key, data)
        except (OSError, Unsafe) as exc:
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
        found = overlap({os.path.abspath(self.root), self._real_root}, directory)
        if found is not None:
            mine, other = found
            self._disable(
                f"the cache directory {printable(str(self.root))} overlaps the skill "
                f"discovery path {printable(str(directory))} "
                f"({printable(mine)} and {printable(other)}); cached server content "
                "must never be where local skills are discovered"
            )

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
                        packs = list_packs(dirs[1], self._clock())
                        size = sum(pack.size for pack in packs)
                        shown = self._indexes.identity(label, dirs[0])
                        files = self._indexes.live(label, dirs[0], {p.name for p in packs})
                        found.append(LabelUsage(label, shown, files, size))
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
        except (OSError, Unsafe) as exc:
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
        shown = f"the cache directory {self.root}"
        try:
            # Opened first: only a root not there yet costs a lookup of its parents.
            fd = open_dir(root, None, shown, create=False)
            if fd is not None or not create:
                return fd
            parent = os.path.dirname(root)
            missing: list[str] = []
            while not os.path.lexists(parent) and parent != os.path.dirname(parent):
                missing.append(parent)
                parent = os.path.dirname(parent)
            for path in reversed(missing):
                mkdir_private(path, None)
            return open_dir(root, None, shown, create=True)
        except Unsafe as exc:
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
            label_fd = open_dir(label, root, shown, create=create)
            if label_fd is None:
                yield None
                return
            stack.callback(os.close, label_fd)
            blobs_fd = open_dir(BLOBS, label_fd, shown, create=create)
            if blobs_fd is None:
                yield None
                return
            stack.callback(os.close, blobs_fd)
            yield label_fd, blobs_fd

    def _bind(self, label_fd: int, blobs_fd: int, key: CacheKey) -> Mapping[str, Location] | None:
        """Make sure the label's blobs came from ``key.identity``; the places of its blobs,
        or None if busy."""
        places = self._indexes.places(key.origin, label_fd, key.identity)
        if places is not None:
            return places
        with flock(label_fd, wait=False) as held:
            if not held:
                return None
            places = self._indexes.places(key.origin, label_fd, key.identity)
            if places is not None:
                return places
            # A new label, or one pointed at a different server: its old blobs go.
            purge_packs(blobs_fd)
            self._indexes.rebind(key.origin, label_fd, key.identity)
            self._tally[key.origin] = 0
            self._writing.pop(key.origin, None)
            return self._indexes.places(key.origin, label_fd, key.identity)

    def _read(
        self, blobs_fd: int, where: Location | None, name: str, key: CacheKey
    ) -> bytes | None:
        if where is None:
            return None
        if where.size != key.size:
            problem: str | None = f"is recorded as {where.size} bytes, not the {key.size} listed"
            data = None
        else:
            now, max_age = self._clock(), self.limits.max_cache_age
            data, problem = read_blob(blobs_fd, where, name, now=now, max_age=max_age)
        if data is None:
            # Not served from there again: the fetch that follows writes it anew.
            self._indexes.unplace(key.origin, name)
        if problem is not None:
            logger.warning(
                "%s: the cached copy of %s %s; it is fetched again",
                key.origin,
                printable(key.uri),
                problem,
            )
        return data

    def _write_blob(
        self, label_fd: int, blobs_fd: int, name: str, key: CacheKey, data: bytes
    ) -> None:
        budget = self.limits.max_cache_bytes
        # A pack holds an eighth of the budget at most, so eviction (a pack at a time)
        # never drops much more than it must.
        room = max(1, min(_PACK_BYTES, budget // 8))
        now = self._clock()
        where = append(blobs_fd, self._writing.get(key.origin), data, room=room, now=now)
        if where is None:
            self._writing.pop(key.origin, None)
            return
        self._writing[key.origin] = where.pack
        self._indexes.record(label_fd, name, where, key, lambda: self._packs(blobs_fd))
        tally = self._tally.get(key.origin)
        if tally is None:
            tally = sum(pack.size for pack in list_packs(blobs_fd, now))
        else:
            tally += key.size
        self._tally[key.origin] = tally
        if tally > budget:
            self._evict(label_fd, blobs_fd, key.origin, keep=where.pack)

    def _packs(self, blobs_fd: int) -> set[str]:
        return {pack.name for pack in list_packs(blobs_fd, self._clock())}

    def _evict(self, label_fd: int, blobs_fd: int, label: str, *, keep: str) -> None:
        """Remove packs all of whose blobs expired, then the least recently used, until a
        tenth under budget (so a full label is not rescanned on every write)."""
        with flock(label_fd, wait=False) as held:
            if not held:
                return  # another host is evicting this label right now
            now = self._clock()
            packs = list_packs(blobs_fd, now)
            max_age = self.limits.max_cache_age
            total = sum(pack.size for pack in packs)
            target = self.limits.max_cache_bytes * 9 // 10
            present = {pack.name for pack in packs}
            for pack in sorted(packs, key=lambda p: (p.used, p.name)):
                expired = max_age is not None and now - pack.written > max_age
                if pack.name != keep and (expired or total > target):
                    discard(pack.name, blobs_fd)
                    present.discard(pack.name)
                    total -= pack.size
            self._tally[label] = total
            self._indexes.trim(label, label_fd, present)

    def _purge_label(self, root: int, label: str) -> tuple[int, int]:
        with self._label(label, create=False, root=root) as dirs:
            if dirs is None:
                return 0, 0
            label_fd, blobs_fd = dirs
            with flock(label_fd, wait=True):
                packs, size = purge_packs(blobs_fd)
                files = self._indexes.live(label, label_fd, packs)
                for name in (INDEX, LOCK):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=label_fd)
            # Each stays if anything the cache did not make is inside.
            with contextlib.suppress(OSError):
                os.rmdir(BLOBS, dir_fd=label_fd)
        with contextlib.suppress(OSError):
            os.rmdir(label, dir_fd=root)
        self._tally.pop(label, None)
        self._writing.pop(label, None)
        self._indexes.forget(label)
        # forget() runs in a worker thread: copy before filtering (list() holds the GIL).
        self._served.difference_update([k for k in list(self._served) if k.origin == label])
        return files, size
