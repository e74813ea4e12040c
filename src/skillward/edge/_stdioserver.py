"""Serving an MCP server on this process's stdin and stdout (``skillward serve`` and
``skillward gateway`` over stdio), in place of the SDK's ``stdio_server``.

The SDK's reads every line in a worker thread and writes and flushes each message in two
more (three thread round trips a message), and reads a line of any length. Here the
pipes are read and written from the event loop (asyncio's pipe transports), and each
line the client writes is held to the same caps as a server's at the client edge
(``_transport.read_lines``: ``Limits.message_bytes`` while it is read,
``Limits.max_message_nodes`` before it is parsed); a line past them ends the connection.

While it serves, fd 0 reads the null device and fd 1 writes to stderr, as with the SDK's:
whatever else in the process prints, or a child inherits, misses the wire. Both are put
back, with their blocking mode, when it ends. Where stdin or stdout is not a pipe or a
socket (a regular file, a terminal, the null device), that side is read or written in a
worker thread, as the SDK's did.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, Self

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from skillward.core.config import Limits
from skillward.edge._transport import Faults, read_lines

__all__ = ["serve_stdio", "stdio_streams"]

logger = logging.getLogger("skillward")

#: Bytes asked of the pipe at a time.
_CHUNK = 64 * 1024


@contextmanager
def _claimed(fd: int, divert: int) -> Iterator[int]:
    """A private copy of ``fd`` to serve on, while ``fd`` itself points at ``divert``
    (closed here); ``fd`` and its blocking mode are put back at the end."""
    private = os.dup(fd)  # above 0-2, which are open; not inherited by children
    blocking = os.get_blocking(fd)
    try:
        os.dup2(divert, fd)
    finally:
        os.close(divert)
    try:
        yield private
    finally:
        with suppress(OSError):
            os.set_blocking(private, blocking)  # a terminal is shared with the shell
        os.dup2(private, fd)
        os.close(private)


def _polled(fd: int) -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, where ``fd`` is a pipe or a socket it can watch; None for
    anything else (a regular file, a terminal, the null device, which epoll refuses)."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not asyncio's loop
        return None


async def _loop_reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport] | None:
    """``fd`` read by the event loop; None where it is not (:func:`_polled`)."""
    loop = _polled(fd)
    if loop is None:
        return None
    reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)  # closing it leaves ``fd`` open
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
    except BaseException:
        pipe.close()
        raise
    return reader, transport


async def _from_loop(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await reader.read(_CHUNK):
        yield chunk


async def _from_thread(fd: int) -> AsyncIterator[bytes]:
    read = functools.partial(os.read, fd, _CHUNK)
    while chunk := await anyio.to_thread.run_sync(read, abandon_on_cancel=True):
        yield chunk


class _Writer:
    """The SDK's write stream over ``fd``: each message one line, written from the event
    loop (a worker thread where ``fd`` is not a pipe or a socket)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._writer: asyncio.StreamWriter | None = None
        self._closed = False

    async def open(self) -> None:
        loop = _polled(self._fd)
        if loop is None:
            return  # written in a worker thread
        pipe = os.fdopen(os.dup(self._fd), "wb", buffering=0)  # closing it leaves ``fd`` open
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, pipe
            )
        except BaseException:
            pipe.close()
            raise
        # Each send waits until the pipe took all of it, as a flush would: nothing is
        # left in a buffer when the process ends.
        transport.set_write_buffer_limits(high=0)
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        data = text.encode("utf-8") + b"\n"
        writer = self._writer
        try:
            if writer is None:
                await anyio.to_thread.run_sync(_write_all, self._fd, data)
            else:
                writer.write(data)  # whole, at once: messages never interleave
                await writer.drain()
        except (ConnectionError, OSError) as error:  # the client stopped reading
            raise anyio.BrokenResourceError from error

    async def aclose(self) -> None:
        self._closed = True
        if self._writer is not None:
            self._writer.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _stderr() -> int:
    try:
        return os.dup(2)
    except OSError:  # no stderr: stray output goes nowhere
        return os.open(os.devnull, os.O_WRONLY)


@asynccontextmanager
async def stdio_streams(
    limits: Limits, faults: Faults | None = None
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], _Writer]]:
    """This process's stdin and stdout as the SDK's pair of streams, the client's lines
    held to ``limits``' message caps (a refusal is kept in ``faults`` and ends the
    stream). fd 0 and fd 1 are diverted while the block runs."""
    faults = faults or Faults()
    with (
        _claimed(0, os.open(os.devnull, os.O_RDONLY)) as stdin,
        _claimed(1, _stderr()) as stdout,
    ):
        sink, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        writer = _Writer(stdout)
        opened = await _loop_reader(stdin)
        try:
            await writer.open()
            chunks = _from_loop(opened[0]) if opened is not None else _from_thread(stdin)
            drained = anyio.Event()
            drained.set()  # no stderr of a process to wait for
            async with anyio.create_task_group() as group:
                group.start_soon(read_lines, chunks, sink, limits, faults, drained)
                try:
                    yield incoming, writer
                finally:
                    group.cancel_scope.cancel()
                    incoming.close()
        finally:
            await writer.aclose()
            if opened is not None:
                opened[1].close()


async def serve_stdio(server: Server[Any], limits: Limits) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client leaves (or
    sends a line past ``limits``' caps, which is said on stderr)."""
    faults = Faults()
    async with stdio_streams(limits, faults) as (incoming, outgoing):
        await server.run(incoming, outgoing, server.create_initialization_options())
    if faults.ended is not None:
        logger.warning(
            "the client sent a line past the message caps (%d bytes, %d JSON values); "
            "the connection is closed",
            limits.message_bytes,
            limits.max_message_nodes,
        )
