"""SyncSkillHost: :class:`~skillward.host.skillhost.SkillHost` for hosts written in synchronous
Python (scripts, web handlers, frameworks whose tools are plain functions)::

    with SyncSkillHost(approver=my_approver) as host:
        host.connect(ServerSpec(label="acme", transport=StdioTransport(command="acme-mcp")))
        tools = host.tool_definitions(style="openai-responses")
        block = host.handle_tool_call(call["name"], call["arguments"])

It has SkillHost's methods, each a blocking call (a test keeps the two lists equal).
The async host runs on a private event loop in a thread of its own (anyio's blocking
portal), and every call, even one that only reads state, runs on that loop: the host
is only ever touched from one thread, so its guarantees (the acting window, the order
of calls to one server) hold whichever threads call, and however many at once. The
seams (approver, gates, prompter, policy) are SkillHost's, async as ever; they run on
that loop too.

Errors propagate with their own types, and each method's docstring says which it
raises. Calling from a thread that runs an event loop (an ``async def``, or a seam the
host is running), or once the host is closed, is refused with
:class:`~skillward.core.errors.UsageError`: there, use SkillHost.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar, overload

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from skillward.cache.seam import ContentCache
from skillward.core.config import Limits
from skillward.core.context import CatalogItem, ContextBlock
from skillward.core.errors import SkillwardError, UsageError
from skillward.core.origins import Origin
from skillward.core.registry import Collision, Declined, SkillRecord
from skillward.edge._local import LocalSkillDir
from skillward.edge.servers import ServerSpec
from skillward.host.skillhost import (
    Activation,
    ContextSink,
    HostConfig,
    ServerStatus,
    SkillHost,
    ToolStyle,
)
from skillward.trust.approvals import ActivationRequest, Answer, Approver
from skillward.trust.audit import AuditTrail
from skillward.trust.gates import CrossOriginGate, ExecutionGate
from skillward.trust.pending import PendingApproval
from skillward.trust.policy import Policy

__all__ = ["SyncSkillHost"]

_T = TypeVar("_T")


def _in_event_loop() -> bool:
    try:
        anyio.get_current_task()
    except RuntimeError:  # no event loop runs in this thread
        return False
    return True


class SyncSkillHost:
    """:class:`~skillward.host.skillhost.SkillHost` as blocking calls, for synchronous code.

    Takes SkillHost's arguments and opens the host at once: the connections, and the
    thread their event loop runs in, live until :meth:`close` (or the end of a
    ``with`` block). Safe to call from several threads at once.
    """

    def __init__(
        self,
        *,
        config: HostConfig | None = None,
        approver: Approver | None = None,
        cross_origin: CrossOriginGate | None = None,
        execution: ExecutionGate | None = None,
        policy: Policy | None = None,
        cache: ContentCache | None = None,
        sink: ContextSink | None = None,
        audit: AuditTrail | None = None,
    ) -> None:
        _refuse_in_event_loop()
        self._lock = threading.Lock()
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        try:
            portal = self._stack.enter_context(start_blocking_portal())
            make = functools.partial(
                SkillHost,
                config=config,
                approver=approver,
                cross_origin=cross_origin,
                execution=execution,
                policy=policy,
                cache=cache,
                sink=sink,
                audit=audit,
            )
            # Built and entered on the loop, and left by the same task on close.
            self._host: SkillHost = portal.call(make)
            self._stack.enter_context(portal.wrap_async_context_manager(self._host))
        except BaseException:
            self._stack.close()
            raise
        self._portal = portal
        self._root: SyncSkillHost | None = None

    def session(
        self,
        *,
        approver: Approver | None = None,
        cross_origin: CrossOriginGate | None = None,
        execution: ExecutionGate | None = None,
        sink: ContextSink | None = None,
    ) -> SyncSkillHost:
        """:meth:`SkillHost.session` as a SyncSkillHost on this one's event loop: its own
        acting window, approver, gates and sink over the same connections. Its
        :meth:`close` ends its window only; closing this host closes it too. Raises
        what it raises (TypeError for a seam without ``async def decide``, ConfigError
        for an ApprovalBook without the policy's rules), and UsageError from async code
        or once closed."""
        portal = self._running()
        make = functools.partial(
            self._host.session,
            approver=approver,
            cross_origin=cross_origin,
            execution=execution,
            sink=sink,
        )
        session = object.__new__(type(self))
        session._lock = threading.Lock()
        session._host = self._call(make)
        session._portal = portal
        session._root = self._root or self
        return session

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._running()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Disconnect every server (as :meth:`SkillHost.aclose`), then stop the event loop
        and its thread. Later calls raise UsageError; a second close does nothing. A
        session's close ends its acting window only. Raises UsageError from async code
        (it never raises for a server that already died). It waits for calls in flight,
        one waiting on its approver for a person's answer included: never close from
        the thread that answers."""
        _refuse_in_event_loop()
        with self._lock:
            portal, self._portal = self._portal, None
        if portal is None:
            return
        if self._root is None:
            self._stack.close()
        elif not self._root._is_closed:
            with contextlib.suppress(RuntimeError):  # the host closed meanwhile, and with it this
                portal.call(self._host.aclose)

    @property
    def _is_closed(self) -> bool:
        """Whether this host (or, for a session, it or its host) is closed."""
        return self._portal is None or (self._root is not None and self._root._is_closed)

    def _running(self) -> BlockingPortal:
        _refuse_in_event_loop()
        portal = self._portal
        if portal is None or self._is_closed:
            raise _closed()
        return portal

    @overload
    def _call(self, function: Callable[[], Awaitable[_T]]) -> _T: ...
    @overload
    def _call(self, function: Callable[[], _T]) -> _T: ...
    def _call(self, function: Callable[[], Any]) -> Any:
        """``function`` run on the host's event loop: its result, or its error."""
        portal = self._running()
        try:
            return portal.call(function)
        except RuntimeError:
            if self._is_closed:  # closed by another thread meanwhile
                raise _closed() from None
            raise

    # --- SkillHost's methods, as blocking calls ------------------------------------------

    @property
    def limits(self) -> Limits:
        return self._host.limits

    @property
    def config(self) -> HostConfig:
        """The host's configuration, with the policy's limits applied (frozen)."""
        return self._host.config

    @property
    def notes(self) -> list[str]:
        """What discovering local skill directories noted (a copy). Raises UsageError
        from async code or once closed."""
        return self._call(lambda: list(self._host.notes))

    def connect(self, spec: ServerSpec) -> None:
        """Blocking :meth:`SkillHost.connect`. Raises what it raises (ConfigError for a
        label in use, PolicyDenied, TransportError, InvalidResponse), and UsageError
        from async code or once closed."""
        return self._call(functools.partial(self._host.connect, spec))

    def reconnect(self, label: str) -> None:
        """Blocking :meth:`SkillHost.reconnect`. Raises what it raises (UnknownServer,
        PolicyDenied, TransportError, InvalidResponse), and UsageError from async
        code or once closed."""
        return self._call(functools.partial(self._host.reconnect, label))

    def refresh(self, label: str) -> None:
        """Blocking :meth:`SkillHost.refresh`. Raises what it raises (UnknownServer,
        TransportError, InvalidResponse), and UsageError from async code or once
        closed."""
        return self._call(functools.partial(self._host.refresh, label))

    def disconnect(self, label: str) -> None:
        """Blocking :meth:`SkillHost.disconnect`. Raises UsageError from async code or
        once closed."""
        return self._call(functools.partial(self._host.disconnect, label))

    def forget_server(self, label: str) -> None:
        """Blocking :meth:`SkillHost.forget_server`. Raises what it raises (ConfigError
        for a bad label or a local skill directory's), and UsageError from async code
        or once closed."""
        return self._call(functools.partial(self._host.forget_server, label))

    def add_local_dir(self, source: LocalSkillDir) -> None:
        """:meth:`SkillHost.add_local_dir`, on the host's event loop. Raises what it
        raises (ConfigError for a bad label or one in use), and UsageError from async
        code or once closed."""
        return self._call(functools.partial(self._host.add_local_dir, source))

    def wait_disconnected(self, label: str) -> ServerStatus:
        """Blocking :meth:`SkillHost.wait_disconnected`. Raises what it raises
        (UnknownServer), and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.wait_disconnected, label))

    def servers(self) -> list[ServerStatus]:
        """:meth:`SkillHost.servers`, on the host's event loop. Raises UsageError from
        async code or once closed."""
        return self._call(self._host.servers)

    def catalog(self, *, for_model: bool = True) -> list[CatalogItem]:
        """:meth:`SkillHost.catalog`, on the host's event loop (``for_model=False``: for a
        UI of the host's own, changing nothing). Raises UsageError from async code or
        once closed."""
        return self._call(functools.partial(self._host.catalog, for_model=for_model))

    def catalog_block(self) -> ContextBlock:
        """:meth:`SkillHost.catalog_block`, on the host's event loop. Raises UsageError
        from async code or once closed (the session too)."""
        return self._call(self._host.catalog_block)

    def collisions(self) -> list[Collision]:
        """:meth:`SkillHost.collisions`, on the host's event loop. Raises UsageError
        from async code or once closed."""
        return self._call(self._host.collisions)

    def declined(self) -> list[Declined]:
        """:meth:`SkillHost.declined`, on the host's event loop. Raises UsageError from
        async code or once closed."""
        return self._call(self._host.declined)

    def server_note(self, label: str) -> str | None:
        """:meth:`SkillHost.server_note`, on the host's event loop. Raises what it
        raises (UnknownServer), and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.server_note, label))

    def active(self) -> list[Activation]:
        """:meth:`SkillHost.active`, on the host's event loop. Raises UsageError from
        async code or once closed."""
        return self._call(self._host.active)

    def resolve(self, reference: str) -> SkillRecord:
        """:meth:`SkillHost.resolve`, on the host's event loop. Raises what it raises
        (SkillNotFound, AmbiguousName, UnknownServer, InvalidUri), and UsageError
        from async code or once closed."""
        return self._call(functools.partial(self._host.resolve, reference))

    def lookup(self, reference: str) -> SkillRecord:
        """Blocking :meth:`SkillHost.lookup`. Raises what :meth:`resolve` raises,
        TransportError (a ``LABEL:URI`` confirmed with ``skills/get``), and
        UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.lookup, reference))

    def approval_request(self, reference: str) -> ActivationRequest:
        """Blocking :meth:`SkillHost.approval_request`. Raises what :meth:`lookup`
        raises, PolicyDenied, and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.approval_request, reference))

    def view_skill_md(self, record: SkillRecord) -> str:
        """Blocking :meth:`SkillHost.view_skill_md`. Raises what it raises
        (PolicyDenied, TransportError, IntegrityError), and UsageError from async
        code or once closed."""
        return self._call(functools.partial(self._host.view_skill_md, record))

    def activate(self, reference: str) -> Activation:
        """Blocking :meth:`SkillHost.activate`. Raises what it raises (what
        :meth:`lookup` raises, PolicyDenied, ApprovalError such as ApprovalDenied or
        ApprovalTimedOut, TransportError, OriginError), and UsageError from async
        code or once closed."""
        return self._call(functools.partial(self._host.activate, reference))

    def prepare(
        self, reference: str | SkillRecord, *, reuse: bool = False, fresh: bool = False
    ) -> PendingApproval:
        """Blocking :meth:`SkillHost.prepare`. Raises what :meth:`lookup` raises,
        PolicyDenied, TransportError (``fresh``), and UsageError from async code or once
        closed."""
        return self._call(
            functools.partial(self._host.prepare, reference, reuse=reuse, fresh=fresh)
        )

    def load(self, pending: PendingApproval, answer: Answer | None = None) -> Activation:
        """Blocking :meth:`SkillHost.load`. Raises what it raises (ApprovalDenied;
        UsageError for a pending approval not prepared in this session or loaded
        already; TransportError, OriginError), and UsageError from async code or once
        closed."""
        return self._call(functools.partial(self._host.load, pending, answer))

    def granted_tools(self) -> tuple[str, ...]:
        """:meth:`SkillHost.granted_tools`, on the host's event loop. Raises UsageError
        from async code or once closed."""
        return self._call(self._host.granted_tools)

    def deactivate(self, reference: str) -> None:
        """:meth:`SkillHost.deactivate`, on the host's event loop. Raises what
        :meth:`resolve` raises, and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.deactivate, reference))

    def deactivate_all(self) -> None:
        """:meth:`SkillHost.deactivate_all`, on the host's event loop. Raises UsageError
        from async code or once closed."""
        return self._call(self._host.deactivate_all)

    def read_file(self, reference: str, path: str) -> ContextBlock:
        """Blocking :meth:`SkillHost.read_file`. Raises what it raises (what
        :meth:`lookup` raises, PolicyDenied, CrossOriginDenied, UnlistedResource,
        ReactivationRequired, TransportError, IntegrityError such as SkillChanged),
        and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_file, reference, path))

    def read_resource(self, server: str, uri: str) -> ContextBlock:
        """Blocking :meth:`SkillHost.read_resource`. Raises what it raises
        (UnknownServer, InvalidUri, SkillNotActive, UnlistedResource,
        ReactivationRequired, CrossOriginDenied, TransportError, IntegrityError), and
        UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_resource, server, uri))

    def authorize_execution(self, tool: str, *, detail: str = "") -> None:
        """Blocking :meth:`SkillHost.authorize_execution`. Raises what it raises
        (ExecutionDenied), and UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.authorize_execution, tool, detail=detail))

    def read_skill_block(self, ref: str) -> ContextBlock:
        """Blocking :meth:`SkillHost.read_skill_block`. A failed load is an error block;
        raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_skill_block, ref))

    def read_skill_tool(self, ref: str) -> str:
        """Blocking :meth:`SkillHost.read_skill_tool`. A failed load is an error block;
        raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_skill_tool, ref))

    def read_skill_tool_json(self, ref: str) -> dict[str, Any]:
        """Blocking :meth:`SkillHost.read_skill_tool_json`. A failed load is an error
        block; raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_skill_tool_json, ref))

    def read_skill_file_block(self, ref: str, path: str) -> ContextBlock:
        """Blocking :meth:`SkillHost.read_skill_file_block`. A failed read is an error
        block; raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_skill_file_block, ref, path))

    def read_resource_block(self, server: str, uri: str) -> ContextBlock:
        """Blocking :meth:`SkillHost.read_resource_block`. A failed read is an error
        block; raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_resource_block, server, uri))

    def read_resource_tool(self, server: str, uri: str) -> str:
        """Blocking :meth:`SkillHost.read_resource_tool`. A failed read is an error
        block; raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_resource_tool, server, uri))

    def read_resource_tool_json(self, server: str, uri: str) -> dict[str, Any]:
        """Blocking :meth:`SkillHost.read_resource_tool_json`. A failed read is an error
        block; raises only UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.read_resource_tool_json, server, uri))

    def error_block(
        self, error: SkillwardError, origin: Origin | None = None, *, host_words: bool = False
    ) -> ContextBlock:
        """:meth:`SkillHost.error_block`, on the host's event loop. Raises UsageError from
        async code or once closed."""
        return self._call(
            functools.partial(self._host.error_block, error, origin, host_words=host_words)
        )

    def handle_tool_call(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ContextBlock | None:
        """Blocking :meth:`SkillHost.handle_tool_call`: what the model's call comes to (a
        failed call is an error block, never an exception). Raises only UsageError, as
        every method here does, without running the call, when called from a thread that
        runs an event loop (async code, or a seam the host is running: use SkillHost
        there) or after :meth:`close`.
        """
        return self._call(functools.partial(self._host.handle_tool_call, name, arguments))

    def tool_definitions(self, style: ToolStyle = "mcp") -> list[dict[str, Any]]:
        """:meth:`SkillHost.tool_definitions`, on the host's event loop. Raises
        UsageError from async code or once closed."""
        return self._call(functools.partial(self._host.tool_definitions, style))


def _closed() -> UsageError:
    return UsageError(
        "this SyncSkillHost is closed", hint="Make a new SyncSkillHost to connect again."
    )


def _refuse_in_event_loop() -> None:
    # From a thread running an event loop, a blocking call would stall that loop, and
    # from the host's own loop (a seam calling back) it would wait on itself forever.
    if _in_event_loop():
        raise UsageError(
            "SyncSkillHost blocks, so it cannot be called from async code (use SkillHost "
            "there) or from a seam the host is running",
            hint="In async code: `async with SkillHost(...) as host:` and `await` its methods.",
        )
