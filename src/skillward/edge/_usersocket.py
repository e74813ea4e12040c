"""A local socket for the user's own processes: a Unix socket in the user's private runtime
directory, every connection's peer checked to be this user (by the credentials the kernel
gives: ``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS and the BSDs; a system
with neither cannot serve one), and one line each way, each held to a cap while it is
read.

The gateway listens on one, its approval socket; ``skillward approve`` finds the
gateways' sockets and connects. The directory must be the user's own, not a link, and
closed to group and others (made so when missing); each socket file is named by the
process and a random part, made 0600, and removed when its server stops. What the
lines mean is the caller's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import stat
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from skillward.core.errors import UsageError

__all__ = [
    "Check",
    "Handler",
    "Peer",
    "exchange",
    "only",
    "peer_of",
    "private_dir",
    "remove_stale",
    "same_user",
    "serve_lines",
    "sockets",
]

logger = logging.getLogger("skillward")

#: What a socket file's name ends with.
SUFFIX = ".sock"
#: Seconds a connection has to send its line.
_READ_TIMEOUT = 10.0
#: Connections served at once; more wait.
_AT_ONCE = 16
#: Bytes of a socket's path at most (sockaddr_un holds 104 on macOS, 108 on Linux).
_MAX_PATH = 100
#: Seconds a socket nobody listens on stays before it counts as left behind (one that is
#: being set up refuses connections for a moment too).
STALE_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class Peer:
    """The process at the other end of a connection, as the kernel names it."""

    uid: int
    #: None where the system does not say.
    pid: int | None

    def describe(self) -> str:
        """``pid=PID uid=UID`` (the audit trail's ``via``)."""
        return f"pid={self.pid} uid={self.uid}" if self.pid is not None else f"uid={self.uid}"


#: Refuses a peer (raises UsageError), or lets it through.
Check = Callable[[Peer], None]
#: What a server does with one request line from a peer: the reply line.
Handler = Callable[[bytes, Peer], Awaitable[bytes]]


def peer_of(sock: socket.socket) -> Peer:
    """Who is at the other end of ``sock``, as the kernel says; UsageError where the
    system cannot say."""
    if sys.platform == "linux":  # struct ucred {pid, uid, gid}
        size = struct.calcsize("3i")
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
        pid, uid, _gid = struct.unpack("3i", data)
        return Peer(uid=uid, pid=pid or None)
    peercred = getattr(socket, "LOCAL_PEERCRED", None)
    if peercred is not None:  # macOS and the BSDs: struct xucred {version, uid, ...}
        data = sock.getsockopt(0, peercred, struct.calcsize("2I") + 68)
        _version, uid = struct.unpack_from("2I", data)
        return Peer(uid=uid, pid=None)
    raise UsageError("this system cannot tell which user a local connection comes from")


def only(uid: int) -> Check:
    """The check that lets through only processes of ``uid``."""

    def check(peer: Peer) -> None:
        if peer.uid != uid:
            raise UsageError(f"a process of uid {peer.uid} connected, not one of uid {uid}")

    return check


def same_user(peer: Peer) -> None:
    """Let through only a process of this user."""
    only(os.geteuid())(peer)


def private_dir(directory: Path, *, create: bool, owner: int | None = None) -> bool:
    """Check that ``directory`` is ``owner``'s (this user's by default), not a link, and
    closed to group and others (made so, 0700, when ``create`` and it is missing); False
    when it is missing and not made. UsageError naming the fix otherwise."""
    owner = os.geteuid() if owner is None else owner
    if create:
        # The runtime directory itself may be platformdirs' fallback, not made yet.
        directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UsageError(
            f"{directory} is not a directory (a link or a file): it is not used",
            hint=f"Remove it: rm {directory}",
        )
    if info.st_uid != owner:
        raise UsageError(
            f"{directory} belongs to uid {info.st_uid}, not to you (uid {owner}): it is not used",
            hint=f"Remove it, as its owner: rm -r {directory}",
        )
    if info.st_mode & 0o077:
        raise UsageError(
            f"{directory} is open to group or others (mode {info.st_mode & 0o777:o}): "
            "it is not used",
            hint=f"chmod 700 {directory}",
        )
    return True


async def serve_lines(
    directory: Path,
    prefix: str,
    handle: Handler,
    *,
    max_request: int,
    check: Check = same_user,
    task_status: TaskStatus[Path] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen in ``directory`` (made or checked by :func:`private_dir`) on a new socket,
    ``PREFIX-PID-RANDOM.sock`` (0600), until cancelled; started, it gives its path.

    A connection from a peer ``check`` refuses is closed unread. Otherwise one line of
    at most ``max_request`` bytes is read (within a few seconds), ``handle`` answers it,
    and the reply is sent as one line. The socket file is removed when it stops.
    """
    private_dir(directory, create=True)
    path = directory / f"{prefix}-{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"
    if len(os.fsencode(path)) > _MAX_PATH:
        raise UsageError(f"{path} is too long a path for a socket")
    listener = await anyio.create_unix_listener(path, mode=0o600)
    made = os.lstat(path)
    limiter = anyio.CapacityLimiter(_AT_ONCE)

    async def served(stream: SocketStream) -> None:
        async with limiter, stream:
            await _one(stream, handle, max_request=max_request, check=check)

    try:
        async with listener:
            task_status.started(path)
            await listener.serve(served)
    finally:
        with contextlib.suppress(OSError):
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino):  # still ours
                os.unlink(path)


async def _one(stream: SocketStream, handle: Handler, *, max_request: int, check: Check) -> None:
    try:
        peer = peer_of(stream.extra(SocketAttribute.raw_socket))  # noqa: S610 (anyio's, not Django's)
        check(peer)
    except (UsageError, OSError) as refused:
        logger.warning("a local connection was refused: %s", refused)
        return
    receiving = BufferedByteReceiveStream(stream)
    try:
        with anyio.fail_after(_READ_TIMEOUT):
            line = await _line(receiving, max_request)
    except (anyio.DelimiterNotFound, anyio.IncompleteRead, anyio.EndOfStream, TimeoutError):
        return  # too long, cut short or too slow: nothing is answered
    except (anyio.BrokenResourceError, OSError):
        return
    reply = await handle(line, peer)
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(reply + b"\n")


async def _line(stream: BufferedByteReceiveStream, limit: int) -> bytes:
    """One line of at most ``limit`` bytes; DelimiterNotFound past it (the stream reads in
    chunks, so a longer line may arrive whole: it is refused all the same)."""
    line = await stream.receive_until(b"\n", limit)
    if len(line) > limit:
        raise anyio.DelimiterNotFound(limit)
    return line


async def exchange(
    path: Path, request: bytes, *, max_reply: int, check: Check = same_user
) -> tuple[bytes, Peer]:
    """Send ``request`` as one line to the server listening at ``path`` (once ``check``
    let it through) and return its reply line (at most ``max_reply`` bytes) and who it
    is. The caller bounds the wait. OSError when nothing listens there
    (ConnectionRefusedError: a socket left behind); UsageError for a refused peer or a
    reply that is not one line."""
    if b"\n" in request:
        raise ValueError("a request is one line")
    try:
        stream = await anyio.connect_unix(path)
        async with stream:
            peer = peer_of(stream.extra(SocketAttribute.raw_socket))  # noqa: S610 (anyio's)
            check(peer)
            await stream.send(request + b"\n")
            line = await _line(BufferedByteReceiveStream(stream), max_reply)
    except anyio.DelimiterNotFound:
        raise UsageError(f"{path} answered more than {max_reply} bytes") from None
    except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError):
        raise UsageError(f"{path} closed the connection without answering") from None
    return line, peer


def sockets(directory: Path, prefix: str, *, owner: int | None = None) -> list[Path]:
    """The sockets in ``directory`` (checked by :func:`private_dir`; none when it is
    missing): ``PREFIX-*.sock``, socket files of ``owner``'s (this user's by default),
    oldest first. Anything else there is passed over."""
    owner = os.geteuid() if owner is None else owner
    if not private_dir(directory, create=False):
        return []
    found: list[tuple[float, Path]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if not (entry.name.startswith(f"{prefix}-") and entry.name.endswith(SUFFIX)):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISSOCK(info.st_mode) and info.st_uid == owner:
                    found.append((info.st_mtime, Path(entry.path)))
    return [path for _, path in sorted(found)]


def remove_stale(path: Path, *, clock: Callable[[], float] = time.time) -> bool:
    """Remove ``path``, a socket nothing listens on, if it is this user's and older
    than :data:`STALE_AFTER` (its server is gone); True if it was removed."""
    try:
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.geteuid():
            return False
        if clock() - info.st_mtime <= STALE_AFTER:
            return False
        os.unlink(path)
    except OSError:
        return False
    return True
