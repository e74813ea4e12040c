"""The host's connections: each server's session in a task of its own, the calls made
over it, and why it ended. Nothing here knows about skills, listings or trust (the
MCP SDK's ``ClientSessionGroup`` is the model: it owns per-server sessions, and
nothing else).

One server's failure stays its own: a connection that dies is marked with the
reason, the calls in flight over it end with :class:`ServerDisconnected`, and no
other task is cancelled.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from skillward.core.config import Limits
from skillward.core.errors import (
    DeadlineExceeded,
    OriginError,
    ServerDisconnected,
    SkillwardError,
    TransportError,
    UsageError,
)
from skillward.edge._process import Child, Reaper, spawn
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.types import ServerStatus

if TYPE_CHECKING:
    from skillward.edge.client import SkillsClient

__all__ = ["Connection", "Connections"]

logger = logging.getLogger("skillward")

_T = TypeVar("_T")

#: The module that speaks to servers. It imports ``mcp``: most of a cold start.
_CLIENT_EDGE = "skillward.edge.client"


@dataclass(eq=False)
class Connection:
    """One server's connection, run in a task of its own."""

    spec: ServerSpec
    client: SkillsClient | None = None
    skills: bool = True
    note: str | None = None
    reported_name: str | None = None
    #: How long the last listing may be kept, in ms, if the server said (``ttlMs``).
    listing_ttl_ms: int | None = None
    #: Why the connection ended, once it has (and was not closed by the host).
    error: SkillwardError | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    inflight: set[anyio.CancelScope] = field(default_factory=set)

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def alive(self) -> bool:
        return self.client is not None and not self.done.is_set()

    @property
    def directory_read(self) -> bool:
        """Whether the server offers skills and reads directories (SEP-2640)."""
        client = self.client
        return self.skills and client is not None and client.capability().directory_read


async def _import_client_edge() -> None:
    """Import the client edge in a worker thread, so the event loop goes on meanwhile (a
    stdio server's process, started first, starts up alongside) and a deadline still
    applies. Once it is imported, this costs a trip to the thread and back."""
    await anyio.to_thread.run_sync(importlib.import_module, _CLIENT_EDGE, abandon_on_cancel=True)


def _connection_error(error: BaseException, spec: ServerSpec) -> SkillwardError:
    """Why a connection ended, as a SkillwardError naming the server (secrets cleaned).
    The client edge is imported by then (see :func:`_why_ended`)."""
    from skillward.edge.client import translate  # noqa: PLC0415  (imported by the connection)

    return translate(error, server=spec.label, secrets=spec.secret_values(), ended=True)


async def _why_ended(error: BaseException, spec: ServerSpec) -> SkillwardError:
    """:func:`_connection_error`, the client edge imported first: a stdio server's process
    can fail to start before it is. If it cannot be imported, that is why."""
    try:
        await _import_client_edge()
    except Exception as broken:
        failed = TransportError(
            f"cannot load the MCP client: {type(broken).__name__}: {str(broken)[:300]}",
            server=spec.label,
            hint="The MCP SDK (the mcp package) could not be imported: reinstall skillward.",
        )
        failed.__cause__ = broken
        return failed
    return _connection_error(error, spec)


class Connections:
    """Every server's connection by label, in connection order, each in a task of the
    task group this object owns while it is open."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._by_label: dict[str, Connection] = {}
        self._stack: AsyncExitStack | None = None
        self._tasks: anyio.abc.TaskGroup | None = None
        self._reaper: Reaper | None = None

    # --- lifecycle --------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._stack is not None

    async def open(self) -> None:
        """Start the task group the connections (and stdio servers' reapers) run in."""
        stack = AsyncExitStack()
        self._tasks = await stack.enter_async_context(anyio.create_task_group())
        self._reaper = Reaper(self._tasks)
        self._stack = stack

    async def aclose(self) -> None:
        """End every connection (newest first), then wait for their processes to be
        stopped: one already sent SIGTERM is killed at once."""
        for label in reversed(self.labels()):
            await self.remove(label)
        if self._reaper is not None:
            self._reaper.hurry()
        stack, self._stack, self._tasks, self._reaper = self._stack, None, None, None
        if stack is not None:
            await stack.aclose()

    def require_open(self) -> anyio.abc.TaskGroup:
        if self._tasks is None:
            raise UsageError(
                "open the host first: use `async with SkillHost(...) as host:`",
                hint="Connections run in tasks the host owns while it is open.",
            )
        return self._tasks

    # --- the connections, by label ------------------------------------------------------

    def get(self, label: str) -> Connection | None:
        return self._by_label.get(label)

    def __contains__(self, label: object) -> bool:
        return label in self._by_label

    def labels(self) -> list[str]:
        """Every label, in connection order."""
        return list(self._by_label)

    async def add(self, spec: ServerSpec) -> Connection:
        """Connect ``spec`` under its label and wait for its handshake. On failure the
        label is free again and the error says why."""
        tasks = self.require_open()
        connection = Connection(spec)
        self._by_label[spec.label] = connection
        try:
            await self._open(tasks, connection)
        except BaseException:
            self.discard(connection)
            raise
        return connection

    async def reopen(self, old: Connection) -> Connection:
        """End ``old`` and connect its server again under its label. On failure the new
        connection stays, ended, with the reason."""
        tasks = self.require_open()
        await self.end(old)
        connection = Connection(old.spec)
        self._by_label[old.label] = connection
        try:
            await self._open(tasks, connection)
        except SkillwardError as error:
            self.abandon(connection, error)
            raise
        return connection

    def discard(self, connection: Connection) -> None:
        """Forget a connection that failed to open (or to list), and end it."""
        if self._by_label.get(connection.label) is connection:
            del self._by_label[connection.label]
        self.abandon(connection)

    @staticmethod
    def abandon(connection: Connection, error: SkillwardError | None = None) -> None:
        """End a connection that failed: politely once connected, else at once."""
        if error is not None:
            connection.error = connection.error or error
        if connection.client is not None:
            connection.stop.set()
        else:
            connection.scope.cancel()

    async def remove(self, label: str) -> None:
        """Close ``label``'s connection (if any) and forget it."""
        connection = self._by_label.pop(label, None)
        if connection is not None:
            await self.end(connection)

    async def end(self, connection: Connection) -> None:
        """Close ``connection``'s session, within ``Limits.exit_timeout``: past that it is
        cut off. Never waits for a stdio server's process, which is stopped in a task of
        the host's own."""
        connection.stop.set()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self._limits.exit_timeout):
                await connection.done.wait()
            if not connection.done.is_set():
                connection.scope.cancel()
                await connection.done.wait()

    # --- each connection's task ---------------------------------------------------------

    async def _open(self, tasks: anyio.abc.TaskGroup, connection: Connection) -> None:
        """Start the connection's task and wait, within one deadline, for its handshake."""
        tasks.start_soon(self._run, connection, name=f"skillward:{connection.label}")
        timeout = self._limits.operation_timeout
        with anyio.move_on_after(timeout):
            await connection.ready.wait()
        if not connection.ready.is_set():
            connection.scope.cancel()
            raise DeadlineExceeded(
                f"the server did not complete the handshake within {timeout:g} s",
                server=connection.label,
            )
        if connection.error is not None:
            raise connection.error
        assert connection.client is not None

    async def _run(self, connection: Connection) -> None:
        """The connection's task: it owns the SDK session, from handshake to close."""
        label = connection.label
        child: Child | None = None
        try:
            with connection.scope:
                try:
                    child = await self._spawn(connection.spec)
                    await _import_client_edge()
                    from skillward.edge.client import SkillsClient  # noqa: PLC0415  (imported above)

                    async with SkillsClient.connect(
                        connection.spec, limits=self._limits, reaper=self._reaper, child=child
                    ) as client:
                        connection.client = client
                        connection.reported_name = client.server_name
                        connection.ready.set()
                        await connection.stop.wait()
                finally:
                    if child is not None:
                        # Stopped at once, unless its session already let it go politely.
                        child.release(polite=False)
        except Exception as error:  # a dying server is reported, never raised
            connection.error = await _why_ended(error, connection.spec)
        except BaseExceptionGroup as group:
            cancelled = anyio.get_cancelled_exc_class()
            rest = group.split(cancelled)[1]
            if rest is None or rest.split(Exception)[1] is not None:
                raise
            connection.error = await _why_ended(rest, connection.spec)
        finally:
            if connection.error is None and not connection.stop.is_set():
                connection.error = ServerDisconnected("the connection closed", server=label)
            if connection.error is not None and connection.ready.is_set():
                logger.info("server %s disconnected: %s", label, connection.error.message)
            for scope in list(connection.inflight):
                scope.cancel()
            connection.done.set()
            connection.ready.set()

    async def _spawn(self, spec: ServerSpec) -> Child | None:
        """Start a stdio server's process, before the client edge is imported: the server
        starts up (its own import of the SDK, mostly) while this process imports it."""
        transport = spec.transport
        if not isinstance(transport, StdioTransport):
            return None
        assert self._reaper is not None
        return await spawn(spec, transport, limits=self._limits, reaper=self._reaper)

    # --- calls ------------------------------------------------------------------------

    async def call(
        self,
        connection: Connection,
        operation: Callable[[SkillsClient], Awaitable[_T]],
        *,
        uri: str | None = None,
    ) -> _T:
        """Run one client operation; a connection that dies meanwhile ends it cleanly."""
        client = connection.client
        if client is None or not connection.alive:
            raise self.disconnected(connection, uri)
        scope = anyio.CancelScope()
        connection.inflight.add(scope)
        try:
            with scope:
                try:
                    return await operation(client)
                except OriginError:
                    if client.ended is not None:
                        # The transport refused what the server sent and ended the
                        # connection: the caller hears why; later calls, that it is gone.
                        self._lost(connection, client.ended)
                    raise
                except ServerDisconnected as error:
                    # The session noticed the connection is gone: end it, for every caller.
                    self._lost(connection, error)
                    raise self.disconnected(connection, uri) from None
                except TransportError:
                    if connection.done.is_set():
                        raise self.disconnected(connection, uri) from None
                    raise
        finally:
            connection.inflight.discard(scope)
        raise self.disconnected(connection, uri)

    @staticmethod
    def _lost(connection: Connection, error: SkillwardError) -> None:
        if connection.error is None:
            connection.error = error
        connection.stop.set()

    @staticmethod
    def disconnected(connection: Connection, uri: str | None) -> ServerDisconnected:
        reason = connection.error.message if connection.error is not None else "it was closed"
        return ServerDisconnected(
            f"the server is disconnected ({reason})", server=connection.label, uri=uri
        )

    # --- status -----------------------------------------------------------------------

    def status(self, connection: Connection) -> ServerStatus:
        alive = connection.alive
        return ServerStatus(
            label=connection.label,
            target=connection.spec.describe(),
            state="connected" if alive else "disconnected",
            error=None if alive else (connection.error or self.disconnected(connection, None)),
            skills=connection.skills,
            note=connection.note,
            reported_name=connection.reported_name,
            listing_ttl=None
            if connection.listing_ttl_ms is None
            else connection.listing_ttl_ms / 1000,
        )

    def statuses(self) -> list[ServerStatus]:
        """Every connection's status, in connection order."""
        return [self.status(c) for c in self._by_label.values()]
