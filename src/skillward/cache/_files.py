"""The disk cache's directories and files: private, never followed through a link.

Directories are opened through their parent's descriptor with ``O_NOFOLLOW`` and must be
the user's own and writable by nobody else; they are made 0700 and files 0600 whatever
the umask. Files are written through a private temporary file and an atomic rename, and
never ``fsync``-ed (``_disk.py`` says why). The per-label lock serialises what rewrites
a label: rebinding it, trimming its index, eviction and purges.

POSIX only: :data:`SUPPORTED` is False elsewhere, and the cache turns itself off.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Iterator

from skillward.edge._tree import CLOEXEC, NOFOLLOW, NONBLOCK, open_directory

if sys.platform != "win32":
    import fcntl

__all__ = [
    "APPEND_FLAGS",
    "LOCK",
    "SUPPORTED",
    "TMP",
    "Unsafe",
    "discard",
    "flock",
    "mkdir_private",
    "open_dir",
    "write_all",
    "write_new",
]

SUPPORTED = sys.platform != "win32" and hasattr(os, "O_NOFOLLOW")
# The shared flags are 0 where missing (Windows), where the cache turns itself off.
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
APPEND_FLAGS = os.O_RDWR | os.O_APPEND | NOFOLLOW | NONBLOCK | CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC

#: The lock file in each label's directory.
LOCK = "lock"
#: How the names of temporary files start.
TMP = ".tmp-"


class Unsafe(Exception):
    """A cache path is not what skillward made: not used, for the reason given."""


def _check_dir(fd: int, shown: str) -> None:
    """A directory the cache may use: ours, and writable by nobody else."""
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise Unsafe(f"{shown} is not a directory")
    if info.st_uid != os.geteuid():
        raise Unsafe(f"{shown} is owned by uid {info.st_uid}, not by you (uid {os.geteuid()})")
    if info.st_mode & 0o022:
        raise Unsafe(
            f"{shown} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
        )


def mkdir_private(name: str, parent: int | None) -> None:
    """Make a 0700 directory. The umask may have taken owner bits too: set them exactly
    (the parent is ours and private, so nothing can swap in a link meanwhile)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        return
    os.chmod(name, 0o700, dir_fd=parent)


def open_dir(name: str, parent: int | None, shown: str, *, create: bool) -> int | None:
    """An fd of directory ``name`` (under ``parent``), checked; None if missing."""
    try:
        try:
            fd = open_directory(name, parent)
        except FileNotFoundError:
            if not create:
                return None
            mkdir_private(name, parent)
            fd = open_directory(name, parent)
    except OSError as exc:
        raise Unsafe(f"{shown} cannot be opened as a plain directory ({exc.strerror})") from None
    try:
        _check_dir(fd, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def discard(name: str, directory: int) -> None:
    """Remove a path, whatever was planted there (never following a link)."""
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    except (IsADirectoryError, PermissionError):  # a directory (EISDIR, or EPERM on macOS)
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=directory)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new(directory: int, name: str, data: bytes, *, times: float | None = None) -> None:
    """Create ``name`` in ``directory`` atomically: private temp file, then rename.

    No ``fsync`` of the file or the directory: what a crash leaves is a miss, never
    a wrong read (see ``_disk.py``).
    """
    tmp = f"{TMP}{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, _NEW_FLAGS, 0o600, dir_fd=directory)
    try:
        try:
            os.fchmod(fd, 0o600)
            write_all(fd, data)
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
def flock(label_fd: int, *, wait: bool) -> Iterator[bool]:
    """Hold the label's lock; yields False (holding nothing) if busy and not waiting."""
    fd = os.open(LOCK, _LOCK_FLAGS, 0o600, dir_fd=label_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unsafe("the cache's lock file is not a regular file")
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
