"""Stdio servers' processes: started, watched and stopped, apart from the wire.

A server's process runs in a task of a :class:`Reaper` (the host's own) from start to
reaping, so whoever closes a session never waits for it to exit. It runs in a session
(and process group) of its own, so signals reach what it started too; its stderr goes
into its capped per-label log (``_serverlog``). Released, it is stopped: its stdin
closed, then SIGTERM, then SIGKILL, and reaped. Stopping never raises: what goes wrong
is noted in the server's log.

Its stdout has one reader at a time: the session's (``_transport``), which takes it with
:meth:`Child.reading`, then, once that reader has let it go, the drain that reads what
the server still writes while it is stopped.

This module imports no ``mcp``: the host starts a stdio server's process before it
imports the client edge, so the server's start-up (its own import of the SDK, most of
it) and the client's import of the SDK run at the same time. The framing of what the
process writes and reads is ``_transport``'s.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
import anyio.abc

from skillward.core.config import Limits
from skillward.edge._dirs import server_log_dir
from skillward.edge._serverlog import capture, log_path, note
from skillward.edge.servers import ServerSpec, StdioTransport

__all__ = ["Child", "Reaper", "default_environment", "spawn"]

logger = logging.getLogger("skillward")

#: How long the kernel gets to end a process sent SIGKILL.
_REAP_SECONDS = 5.0

#: What a server inherits of this process's environment (the SDK's own choice for stdio
#: servers): nothing else, so no secret of ours reaches it unasked.
_INHERITED = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)


def default_environment() -> dict[str, str]:
    """The variables a stdio server inherits, shell functions (``()...``) left out."""
    return {
        key: value
        for key in _INHERITED
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }


class Reaper:
    """Where stdio servers' processes run and are stopped: tasks of ``tasks``, so that
    whoever closes a session never waits for a process to exit.

    A session that ended normally gets the polite shutdown: its stdin is closed, it has
    ``Limits.exit_timeout`` to exit, then SIGTERM, ``exit_timeout`` again, then SIGKILL.
    One cut short (a deadline, a refused message, a session that never started) is sent
    SIGTERM at once. After :meth:`hurry` (the owner is leaving), no wait after a SIGTERM
    goes on: what is left is killed and reaped at once, and a process no session
    released yet is released then.
    """

    def __init__(self, tasks: anyio.abc.TaskGroup) -> None:
        self.tasks = tasks
        self.hurried = anyio.Event()
        #: The processes started here and not yet reaped.
        self.running: set[Child] = set()

    def hurry(self) -> None:
        self.hurried.set()
        for child in list(self.running):
            child.release(polite=False)


@dataclass(eq=False)
class Child:
    """A started server's process, until it is released to be stopped."""

    process: anyio.abc.Process
    #: Set once the server's stderr is all in its log (or goes nowhere that needs waiting).
    drained: anyio.Event
    released: anyio.Event = field(default_factory=anyio.Event)
    polite: bool = False
    #: Set once the session's reader of stdout has let it go; None until one takes it.
    read: anyio.Event | None = field(default=None, init=False)
    #: Whether stdout went to the drain: for good, whether a session read it first or not.
    draining: bool = field(default=False, init=False)

    def release(self, *, polite: bool) -> None:
        """Let the process be stopped, politely (its session ended normally) or not. The
        first release decides; later ones change nothing."""
        if not self.released.is_set():
            self.polite = polite
            self.released.set()

    @contextmanager
    def reading(self) -> Iterator[anyio.abc.ByteReceiveStream | None]:
        """The server's stdout, for the session's reader alone until the block ends; None
        when it was taken before (the drain reads it once the process is being stopped)."""
        stdout = self.process.stdout
        if stdout is None or self.draining or self.read is not None:
            yield None
            return
        read = self.read = anyio.Event()
        try:
            yield stdout
        finally:
            read.set()

    async def drain(self) -> None:
        """Read and drop what the server still writes, so it is never stuck writing; once
        the session's reader, if there is one, has let stdout go."""
        self.draining = True
        if self.read is not None:
            await self.read.wait()
        if self.process.stdout is None:  # pragma: no cover - always piped
            return
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for _ in self.process.stdout:
                pass


async def spawn(
    spec: ServerSpec, transport: StdioTransport, *, limits: Limits, reaper: Reaper
) -> Child:
    """Start ``spec``'s server in a task of ``reaper``, where it runs until released (see
    :meth:`Child.release`; whoever spawns it must release it) and is then stopped and
    reaped. Raises ``OSError`` when it cannot be started."""
    child: Child = await reaper.tasks.start(
        _run_child, spec, transport, limits, reaper, name=f"skillward:{spec.label}:process"
    )
    return child


@asynccontextmanager
async def _stderr_sink(
    spec: ServerSpec, transport: StdioTransport, limits: Limits, drained: anyio.Event
) -> AsyncIterator[TextIO]:
    """Where the server's stderr goes: a log pipe, nowhere, or (when asked) this terminal."""
    if transport.stderr == "unsafe-inherit":
        logger.warning(
            "server %r: its stderr goes straight to this terminal (stderr='unsafe-inherit'); it "
            "can write escape sequences that clear the screen or fake text around prompts, and "
            "secrets it echoes are not scrubbed. Use it only to debug a server you trust, and "
            "'log' otherwise",
            spec.label,
        )
        drained.set()
        yield sys.stderr
    elif transport.stderr == "discard":
        drained.set()
        with open(os.devnull, "w", encoding="utf-8") as sink:  # noqa: ASYNC230 (never blocks)
            yield sink
    else:
        async with capture(
            _log(spec, transport),
            max_bytes=limits.max_server_log_bytes,
            secrets=spec.secret_values(),
            drained=drained,
        ) as pipe:
            yield pipe


async def _run_child(
    spec: ServerSpec,
    transport: StdioTransport,
    limits: Limits,
    reaper: Reaper,
    *,
    task_status: anyio.abc.TaskStatus[Child],
) -> None:
    """The server's process, from start to reaping, in a task of the reaper's."""
    extra = {k: v.get_secret_value() for k, v in transport.env.items()} if transport.env else {}
    drained = anyio.Event()
    async with _stderr_sink(spec, transport, limits, drained) as errlog:
        process = await anyio.open_process(
            [transport.command, *transport.args],
            env=default_environment() | extra,
            cwd=transport.cwd,
            stderr=errlog,
            # Its own process group, so SIGTERM and SIGKILL reach what it started too.
            start_new_session=True,
        )
        if errlog is not sys.stderr:
            errlog.close()  # the server holds its own copy now; EOF comes when it exits
        child = Child(process, drained)
        if reaper.hurried.is_set():  # the owner is already leaving
            child.release(polite=False)
        reaper.running.add(child)
        try:
            task_status.started(child)
            try:
                await child.released.wait()
            except BaseException:
                # The reaper's owner is being cancelled: no time for the polite shutdown.
                with anyio.CancelScope(shield=True):
                    await _quietly(_reap(process), spec, transport, limits)
                raise
            stopping = _stop(child, grace=limits.exit_timeout, hurried=reaper.hurried)
            await _quietly(stopping, spec, transport, limits)
        finally:
            reaper.running.discard(child)


async def _quietly(
    stopping: Awaitable[None], spec: ServerSpec, transport: StdioTransport, limits: Limits
) -> None:
    """Await ``stopping``; a failure is never raised into the owner's task group (nor
    shown on its terminal), only noted in the server's log."""
    try:
        await stopping
    except Exception as error:
        logger.debug("stopping the server process of %r failed", spec.label, exc_info=True)
        if transport.stderr == "log":
            failure = f"stopping the server failed: {type(error).__name__}: {error}"
            note(_log(spec, transport), failure, max_bytes=limits.max_server_log_bytes)


def _log(spec: ServerSpec, transport: StdioTransport) -> Path:
    """The server's log (when its stderr goes to one)."""
    return log_path(transport.log_dir or server_log_dir(), spec.label)


async def _stop(child: Child, *, grace: float, hurried: anyio.Event) -> None:
    """Close stdin, give the server ``grace`` (if its release was polite), SIGTERM,
    ``grace`` again (cut short once ``hurried``), SIGKILL; reap it."""
    process = child.process
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(child.drain)
            if process.stdin is not None:
                with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await process.stdin.aclose()
            if not (child.polite and await _exited(process, grace, None)):
                _signal(process, kill=False)
                await _exited(process, grace, hurried)
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _reap(process)


async def _exited(process: anyio.abc.Process, seconds: float, hurried: anyio.Event | None) -> bool:
    """Whether ``process`` exits within ``seconds`` (or less, once ``hurried`` is set)."""
    with anyio.move_on_after(seconds) as scope:

        async def cut_short(event: anyio.Event) -> None:
            await event.wait()
            scope.cancel()

        async with anyio.create_task_group() as group:
            if hurried is not None:
                group.start_soon(cut_short, hurried)
            await process.wait()
            group.cancel_scope.cancel()
    return process.returncode is not None


def _signal(process: anyio.abc.Process, *, kill: bool) -> None:
    """SIGTERM (or SIGKILL) to the server's process group, or to the server alone."""
    try:
        if sys.platform == "win32":  # pragma: no cover - no process groups there
            _signal_one(process, kill=kill)
        else:
            os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
    except ProcessLookupError:
        pass
    except PermissionError:  # a member it cannot signal: the server itself it can
        with suppress(ProcessLookupError):
            _signal_one(process, kill=kill)


def _signal_one(process: anyio.abc.Process, *, kill: bool) -> None:
    if kill:
        process.kill()
    else:
        process.terminate()


async def _reap(process: anyio.abc.Process) -> None:
    """SIGKILL the server unless it has exited, wait for it, release its pipes."""
    if process.returncode is None:
        _signal(process, kill=True)
    if await _exited(process, _REAP_SECONDS, None):
        await process.aclose()
    else:  # pragma: no cover - only a process stuck in the kernel survives SIGKILL
        logger.warning("server process %d survived SIGKILL; leaving it", process.pid)
