"""The local socket a gateway listens on for ``skillward approve``: in the user's private
runtime directory, each peer's uid read from the kernel (SO_PEERCRED) and checked, one
capped line each way. Real Unix sockets, in this process."""

from __future__ import annotations

import os
import socket
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from skillward.core.errors import UsageError
from skillward.edge._usersocket import (
    STALE_AFTER,
    Check,
    Peer,
    exchange,
    only,
    private_dir,
    remove_stale,
    same_user,
    serve_lines,
    sockets,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets"),
]

WAIT = 10


@pytest.fixture
def runtime(home: Path) -> Path:
    """``skillward`` in this test's private XDG_RUNTIME_DIR (conftest)."""
    return Path(os.environ["XDG_RUNTIME_DIR"]) / "skillward"


@asynccontextmanager
async def serving(
    directory: Path, seen: list[tuple[bytes, Peer]], *, check: Check = same_user
) -> AsyncIterator[Path]:
    async def handle(line: bytes, peer: Peer) -> bytes:
        seen.append((line, peer))
        return b"echo " + line

    async with anyio.create_task_group() as group:
        path = await group.start(
            lambda task_status: serve_lines(
                directory, "test", handle, max_request=64, check=check, task_status=task_status
            )
        )
        yield path
        group.cancel_scope.cancel()


@pytest.mark.threat("T60")
async def test_a_line_is_answered_to_a_process_of_this_user_named_by_the_kernel(
    runtime: Path,
) -> None:
    seen: list[tuple[bytes, Peer]] = []
    with anyio.fail_after(WAIT):
        async with serving(runtime, seen) as path:
            reply, server = await exchange(path, b"hello", max_reply=64)
            mode = stat.S_IMODE(os.stat(path).st_mode)
            directory_mode = stat.S_IMODE(os.stat(runtime).st_mode)
            listed = sockets(runtime, "test")
    assert reply == b"echo hello"
    ((line, client),) = seen
    assert line == b"hello"
    # Both ends are this process: the kernel's credentials say so, on each side.
    assert client == server == Peer(uid=os.geteuid(), pid=os.getpid())
    assert mode == 0o600
    assert directory_mode == 0o700
    assert listed == [path]
    assert sockets(runtime, "test") == []  # removed when the server stopped


@pytest.mark.threat("T60")
async def test_a_peer_of_another_uid_is_refused_unread(runtime: Path) -> None:
    seen: list[tuple[bytes, Peer]] = []
    # The kernel names this process; the server admits only another uid, as it would
    # admit only its own user when another user connects.
    with anyio.fail_after(WAIT):
        async with serving(runtime, seen, check=only(os.geteuid() + 1)) as path:
            with pytest.raises(UsageError, match="closed the connection without answering"):
                await exchange(path, b"approve", max_reply=64)
    assert seen == []
    with pytest.raises(UsageError, match="not one of uid"):
        only(os.geteuid() + 1)(Peer(uid=os.geteuid(), pid=1))


@pytest.mark.threat("T60")
async def test_a_line_past_the_cap_is_not_read_or_answered(runtime: Path) -> None:
    seen: list[tuple[bytes, Peer]] = []
    with anyio.fail_after(WAIT):
        async with serving(runtime, seen) as path:
            with pytest.raises(UsageError):
                await exchange(path, b"x" * 65, max_reply=64)
            with pytest.raises(UsageError, match="answered more than"):
                await exchange(path, b"y" * 60, max_reply=8)
    assert [line for line, _ in seen] == [b"y" * 60]


@pytest.mark.threat("T60")
async def test_a_runtime_directory_open_to_others_a_link_or_anothers_is_refused(
    runtime: Path, tmp_path: Path
) -> None:
    os.mkdir(runtime, 0o700)
    os.chmod(runtime, 0o755)
    with pytest.raises(UsageError, match="open to group or others") as opened:
        await serve_lines(runtime, "test", _never, max_request=64)
    assert opened.value.hint == f"chmod 700 {runtime}"
    with pytest.raises(UsageError, match="open to group or others"):
        sockets(runtime, "test")
    os.chmod(runtime, 0o700)
    with pytest.raises(UsageError, match="belongs to uid"):
        private_dir(runtime, create=False, owner=os.geteuid() + 1)
    os.rmdir(runtime)
    elsewhere = tmp_path / "elsewhere"
    os.mkdir(elsewhere, 0o700)
    os.symlink(elsewhere, runtime)
    with pytest.raises(UsageError, match="a link or a file"):
        private_dir(runtime, create=True)
    assert os.listdir(elsewhere) == []


async def _never(line: bytes, peer: Peer) -> bytes:
    raise AssertionError("nothing is served from a directory that is refused")


@pytest.mark.threat("T60")
async def test_only_this_users_sockets_are_found_and_one_left_behind_is_removed_once_old(
    runtime: Path,
) -> None:
    private_dir(runtime, create=True)
    (runtime / "test-1-aa.sock").write_text("not a socket")
    (runtime / "other-1-aa.sock").touch()
    left = runtime / "test-2-bb.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(left))
    sock.close()  # bound, never listened on: what a gateway that died leaves behind
    assert sockets(runtime, "test") == [left]
    assert sockets(runtime, "test", owner=os.geteuid() + 1) == []  # another user's
    with pytest.raises(ConnectionRefusedError):
        await exchange(left, b"hello", max_reply=64)
    made = left.stat().st_mtime
    assert not remove_stale(left, clock=lambda: made + 1)  # young: it may be starting
    assert left.exists()
    assert remove_stale(left, clock=lambda: made + STALE_AFTER + 1)
    assert not left.exists()
    assert sockets(runtime / "missing", "test") == []
