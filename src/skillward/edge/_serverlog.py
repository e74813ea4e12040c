"""What stdio servers write to stderr: kept in a capped log per label, read back escaped.

A server owns its stderr, so it can write anything there: escape sequences that clear
the screen or fake a verdict, and the secrets it was started with. skillward never lets
those bytes reach the terminal: :func:`capture` copies them into ``LABEL.log`` under the
server log directory (see ``_dirs.server_log_dir``), the spec's secrets scrubbed out first
(:class:`Scrubber`), and :func:`read_log` and :func:`escaped_lines` read them back as
untrusted bytes, escaped with :func:`~skillward.core.errors.printable` like every error.
skillward's own lines in a log (where each run began, its notes) start with a byte no
line of the server's keeps there, so a server cannot write one.

The log and its one rotated predecessor (``LABEL.log.1``) together stay within
``Limits.max_server_log_bytes``, however much a server writes.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio

from skillward.core.errors import printable
from skillward.core.labels import check_label
from skillward.edge._tree import CLOEXEC, NOFOLLOW
from skillward.edge.servers import redact

__all__ = [
    "SESSION_MARK",
    "LogWriter",
    "Scrubber",
    "capture",
    "escaped_lines",
    "log_path",
    "note",
    "read_log",
]

logger = logging.getLogger("skillward")

_CHUNK = 64 * 1024
#: How long to wait, once the server has stopped, for what it wrote last.
_DRAIN_SECONDS = 2.0
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | CLOEXEC


def log_path(directory: Path, label: str) -> Path:
    """The log of the server labelled ``label`` (a checked label, never server text)."""
    return directory / f"{check_label(label)}.log"


def _rotated(path: Path) -> Path:
    return path.with_name(path.name + ".1")


class LogWriter:
    """Appends to one label's log, rotating so the file and its predecessor stay capped.

    Each file holds at most half of ``max_bytes``. The size is taken from the open
    file on every write, and a file another process rotated away is left behind, so
    two skillward processes logging the same label stay within the cap too.
    """

    def __init__(self, path: Path, *, max_bytes: int) -> None:
        self.path = path
        self.per_file = max(1, max_bytes // 2)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._fd = self._open()

    def _open(self) -> int:
        # O_NOFOLLOW: a symlink planted at the log's name is refused, not written through.
        return os.open(self.path, _OPEN_FLAGS, 0o600)

    def _current(self) -> bool:
        """Whether our descriptor is still the file at ``path`` (no one rotated it away)."""
        try:
            on_disk = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        ours = os.fstat(self._fd)
        return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)

    def write(self, data: bytes) -> None:
        data = data[-self.per_file :]
        if not self._current():
            os.close(self._fd)
            self._fd = self._open()
        if os.fstat(self._fd).st_size + len(data) > self.per_file:
            os.replace(self.path, _rotated(self.path))
            os.close(self._fd)
            self._fd = self._open()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


#: Starts each line of skillward's own in a log. Where a server writes the byte, it is
#: logged as the text ``\x1e``: no line of the server's can pass for one of skillward's.
_OWN = b"\x1e"
#: Written when skillward starts a server, so a log shows where each run began.
SESSION_MARK = _OWN + b"--- skillward started the server here ---\n"


def _theirs(data: bytes) -> bytes:
    """A server's bytes as logged: any that would mark a line as skillward's, as text."""
    return data.replace(_OWN, b"\\x1e")


class Scrubber:
    """Takes a server's secrets (:meth:`~skillward.edge.servers.ServerSpec.secret_values`) out of
    its stderr before a byte of it is written, so neither the log nor anything read from it
    (``skillward logs``, the tail shown when a server fails) holds one.

    The end of what has arrived is held back until more comes or the pipe ends, and a
    stretch is written only up to a point no secret crosses: a secret split across two
    reads is found whole, as in the stream scrubbed at once. Bytes that are not UTF-8
    pass through unchanged.
    """

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self.secrets = secrets
        # A secret not yet seen whole starts within this many characters of the end.
        self._hold = max(map(len, secrets), default=1) - 1
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """What of the stream so far can be written, scrubbed: ``chunk`` after what was
        held back, but for its end."""
        if not self.secrets:
            return chunk
        text = (self._pending + chunk).decode("utf-8", "surrogateescape")
        cut = self._cut(text, max(0, len(text) - self._hold))
        self._pending = text[cut:].encode("utf-8", "surrogateescape")
        return redact(text[:cut], self.secrets).encode("utf-8", "surrogateescape")

    def flush(self) -> bytes:
        """What is held back, scrubbed, once the stream has ended."""
        text = self._pending.decode("utf-8", "surrogateescape")
        self._pending = b""
        return redact(text, self.secrets).encode("utf-8", "surrogateescape")

    def _cut(self, text: str, cut: int) -> int:
        """``cut``, moved back to the start of any secret that crosses it."""
        moved = True
        while moved:
            moved = False
            for secret in self.secrets:
                at = text.find(secret, max(0, cut - len(secret) + 1), cut + len(secret) - 1)
                if 0 <= at < cut:
                    cut, moved = at, True
        return cut


def _append(writer: LogWriter | None, data: bytes) -> LogWriter | None:
    """Write ``data`` to the log; the writer, or None once the log cannot be written."""
    if writer is None or not data:
        return writer
    try:
        writer.write(data)
    except OSError as exc:
        logger.warning("cannot write the server log %s: %s", writer.path, exc.strerror)
        return None
    return writer


async def _pump(
    read_fd: int, writer: LogWriter | None, scrubber: Scrubber, done: anyio.Event
) -> None:
    """Copy the pipe, scrubbed, into the log until every writer has closed it.

    The pipe is drained even when the log cannot be written, so a server is never
    blocked on a full stderr pipe.
    """
    try:
        while True:
            await anyio.wait_readable(read_fd)
            try:
                chunk = os.read(read_fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return
            if writer is not None:
                writer = _append(writer, _theirs(scrubber.feed(chunk)))
    finally:
        _append(writer, _theirs(scrubber.flush()))
        done.set()


def note(path: Path, text: str, *, max_bytes: int) -> None:
    """Add a line of skillward's own (``text``, escaped) to the log at ``path``; when the
    log cannot be written, nothing: this is said nowhere else either."""
    try:
        writer = LogWriter(path, max_bytes=max_bytes)
    except OSError:
        return
    try:
        writer.write(_OWN + f"--- skillward: {printable(text, limit=500)} ---\n".encode())
    except OSError:
        pass
    finally:
        writer.close()


def _open_writer(path: Path, max_bytes: int) -> LogWriter | None:
    """The log's writer, or None (the output is dropped) when it cannot be kept."""
    writer: LogWriter | None = None
    try:
        writer = LogWriter(path, max_bytes=max_bytes)
        writer.write(SESSION_MARK)
    except OSError as exc:
        if writer is not None:
            writer.close()
        # Never the terminal instead: without a log, the server's stderr is dropped.
        logger.warning("cannot keep the server log %s (%s); its stderr is dropped", path, exc)
        return None
    return writer


@asynccontextmanager
async def capture(
    path: Path,
    *,
    max_bytes: int,
    secrets: tuple[str, ...] = (),
    drained: anyio.Event | None = None,
) -> AsyncIterator[TextIO]:
    """Yield the write end of a pipe whose every byte is copied into the log at ``path``,
    each of ``secrets`` (the server spec's header and environment values) replaced by
    ``***`` first.

    Give it to the child as its stderr, then close it once the child has started (the
    child holds its own copy). ``drained`` is set once every writer has closed the pipe
    and all of it is in the log. When the block ends (after the server has stopped),
    what the server wrote last is copied, within a bound, before the pipe closes.
    """
    writer = _open_writer(path, max_bytes)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w", encoding="utf-8")
    try:
        async with anyio.create_task_group() as group:
            done = drained or anyio.Event()
            group.start_soon(_pump, read_fd, writer, Scrubber(secrets), done)
            try:
                yield errlog
            finally:
                errlog.close()
                with anyio.move_on_after(_DRAIN_SECONDS, shield=True):
                    await done.wait()
                group.cancel_scope.cancel()
    finally:
        errlog.close()
        os.close(read_fd)
        if writer is not None:
            writer.close()


def _read_tail(path: Path, max_bytes: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            return b""
        raise
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(fd).st_size
        file.seek(max(0, size - max_bytes))
        return file.read(max_bytes)


def read_log(directory: Path, label: str, *, max_bytes: int) -> bytes | None:
    """The raw, untrusted bytes of a label's log (older part first), at most the last
    ``max_bytes``; ``None`` when there is no log."""
    path = log_path(directory, label)
    if not path.exists() and not _rotated(path).exists():
        return None
    data = _read_tail(_rotated(path), max_bytes) + _read_tail(path, max_bytes)
    return data[-max_bytes:]


def escaped_lines(data: bytes, *, limit: int = 2000) -> list[str]:
    """``data`` as lines fit for a terminal: every escape and control character shown
    as text (``\\x1b``), never as itself, and each line bounded. skillward's own lines
    read as written; a server's line that starts as they do (``---``) starts with the
    text ``\\x2d`` instead, so it cannot pass for one."""
    text = data.decode("utf-8", errors="backslashreplace")
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    own = _OWN.decode()
    shown: list[str] = []
    for line in lines:
        if line.startswith(own):
            shown.append(printable(line[1:], limit=limit))
            continue
        escaped = printable(line, limit=limit)
        shown.append("\\x2d" + escaped[1:] if escaped.startswith("-") else escaped)
    return shown
