"""SkillHost: what an agent host embeds to use skills from MCP servers safely.

A host connects servers under labels of its own choosing, adds local skill
directories, shows the model a catalog, and gives it the tools of
:meth:`SkillHost.tool_definitions`: ``list_skills``, ``read_skill`` (which loads a skill
through :meth:`SkillHost.activate`) and ``read_skill_file`` (a file the loaded skill
lists), each call answered by :meth:`SkillHost.handle_tool_call`::

    async with SkillHost(approver=my_approver) as host:
        await host.connect(ServerSpec(label="acme", transport=HttpTransport(url=...)))
        system_prompt += host.catalog_block().text()
        activation = await host.activate("refunds")        # verified, origin-tagged
        block = await host.read_file("refunds", "templates/email.md")

What it guarantees:

* **Lazy**: connecting and listing read no resources; activation reads exactly the
  skill's SKILL.md; a supporting file is fetched when it is read.
* **Verified**: every read is checked against the entry (size, digest, and for
  SKILL.md the frontmatter). Activation pins the entry; while the host acts on
  the skill, reads resolve only to URIs that entry lists.
* **An acting window the server cannot close**: an activation stays in the window
  until the host deactivates it. A verification failure ends its *content*
  (nothing more is served under it until it is loaded again, which asks again),
  never its *gates*.
* **Origin-bound**: a read passes without asking only when it is a file listed by
  an active skill of that same server; any other read is asked per call through
  the cross-origin gate whenever another server's text is in context.
* **Isolated**: each connection runs in its own task; a server that dies is marked
  disconnected, with the reason, and nothing else is affected.
* **Asked**: every activation goes through the approver (deny by default).
* **Granted, not assumed**: an MCP skill's ``allowed-tools`` grants nothing unless
  the person granted it for that skill under its current content
  (:attr:`Activation.granted_tools`); code execution and cross-origin reads while
  acting on an MCP skill are asked about through their gates; nothing parsed from
  a skill ever runs.
* **Recorded**: every decision is an audit event (:mod:`skillward.trust.audit`).
* **Tagged**: everything returned for a model is a
  :class:`~skillward.core.context.ContextBlock` from the one exit point.

:meth:`SkillHost.session` gives another model context over the same connections: its
own acting window, approver, gates, sink and tools (a server that serves several
clients from one set of upstream connections makes one per client).

``SkillHost`` composes objects that each own one kind of state (``_shared``: the
origins, their connections and the seams every session shares; ``_window``: one
context's acting window; ``_activation``, ``_gates``, ``_reads``, ``_tools``: what
one session does with them) and delegates to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from skillward.cache.seam import ContentCache, NoCache
from skillward.core.config import Limits
from skillward.core.context import CatalogItem, ContextBlock
from skillward.core.errors import SkillwardError, UsageError
from skillward.core.origins import Origin
from skillward.core.registry import Collision, Declined, SkillRecord
from skillward.edge._local import LocalSkillDir
from skillward.edge.servers import ServerSpec
from skillward.host._activation import Activator
from skillward.host._gates import Gates, async_seam, check_rules
from skillward.host._reads import Reads
from skillward.host._shared import Shared
from skillward.host._tools import Tools
from skillward.host._window import ActingWindow
from skillward.host.types import (
    TOOL_SCHEMAS,
    Activation,
    ContextSink,
    HostConfig,
    ServerStatus,
    ToolStyle,
)
from skillward.trust.approvals import ActivationRequest, Answer, Approver, DenyAll
from skillward.trust.audit import AuditTrail
from skillward.trust.gates import CrossOriginGate, DenyCrossOrigin, DenyExecution, ExecutionGate
from skillward.trust.pending import PendingApproval
from skillward.trust.policy import NoPolicy, Policy

# The host's values are defined in types.py; this module names them as it always has.
__all__ = [
    "TOOL_SCHEMAS",
    "Activation",
    "ContextSink",
    "HostConfig",
    "ServerStatus",
    "SkillHost",
    "ToolStyle",
]

#: What a host is built with, which its objects hold: not to be replaced afterwards.
_CHOSEN = frozenset(
    [
        "config",
        "policy",
        "approver",
        "cross_origin",
        "execution",
        "cache",
        "audit",
        "registry",
        "notes",
    ]
)


def _seams(
    policy: Policy,
    approver: Approver | None,
    cross_origin: CrossOriginGate | None,
    execution: ExecutionGate | None,
) -> tuple[Approver, CrossOriginGate, ExecutionGate]:
    """A session's approver and gates, each checked (deny by default)."""
    check_rules(policy, approver)
    return (
        async_seam(approver or DenyAll(), "approver"),
        async_seam(cross_origin or DenyCrossOrigin(), "cross_origin"),
        async_seam(execution or DenyExecution(), "execution"),
    )


class SkillHost:
    """The embeddable, async API. See the module docstring for the guarantees.

    Use it as an async context manager: connections run in tasks it owns. Calls may
    be made concurrently; within a session, calls that touch the same server run one
    at a time, in the order they were made, so a read issued after an activation sees
    that activation. :meth:`session` gives another context over the same connections.
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
        policy = policy or NoPolicy()
        seams = _seams(policy, approver, cross_origin, execution)
        shared = Shared(
            config=config or HostConfig(), policy=policy, cache=cache or NoCache(), audit=audit
        )
        self._compose(shared, *seams, sink=sink, owner=True)

    def _compose(
        self,
        shared: Shared,
        approver: Approver,
        cross_origin: CrossOriginGate,
        execution: ExecutionGate,
        *,
        sink: ContextSink | None,
        owner: bool,
    ) -> None:
        """Build this session's objects over ``shared`` (``owner``: the host that opens
        and closes the connections)."""
        self.approver, self.cross_origin, self.execution = approver, cross_origin, execution
        self.policy: Policy = shared.policy
        self.config: HostConfig = shared.config
        self.cache: ContentCache = shared.cache
        #: Where every decision is recorded (the ``skillward.audit`` logger by default).
        self.audit: AuditTrail = shared.audit
        self.registry = shared.registry
        self.notes = shared.notes
        self._shared, self._owner = shared, owner
        self._window = window = ActingWindow(sink, shared.config.tools)
        self._activator = Activator(shared, window, approver)
        self._gates = Gates(
            shared, window, approver=approver, cross_origin=cross_origin, execution=execution
        )
        self._reads = Reads(shared, window, self._activator, self._gates)
        self._tools = Tools(shared, window, self._activator, self._reads, self._gates)
        shared.join(window, approver)

    def __setattr__(self, name: str, value: object) -> None:
        # The objects this host composed were given these: another value would not reach them.
        if name in _CHOSEN and name in self.__dict__:
            raise UsageError(
                f"SkillHost.{name} is chosen when the host is built",
                hint="Build the host with the one you need, or host.session(...) for "
                "another approver, gates and sink over the same connections.",
            )
        object.__setattr__(self, name, value)

    def session(
        self,
        *,
        approver: Approver | None = None,
        cross_origin: CrossOriginGate | None = None,
        execution: ExecutionGate | None = None,
        sink: ContextSink | None = None,
    ) -> SkillHost:
        """Another model context over this host's connections, open at once.

        It has its own acting window, origins in context, approver, gates (each deny
        by default, as a new host's), sink and model tools; it shares the
        connections, the registry, the cache, the policy and the audit trail.
        Connecting, disconnecting or refreshing a server through any session does so
        for all. Closing it (``aclose()``, or leaving ``async with``) ends its window
        only; closing the host closes every session.
        """
        self._shared.connections.require_open()
        self._window.check_open()
        seams = _seams(self.policy, approver, cross_origin, execution)
        session = object.__new__(type(self))
        session._compose(self._shared, *seams, sink=sink, owner=False)
        return session

    @property
    def limits(self) -> Limits:
        return self.config.limits

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if not self._owner:
            self._window.check_open()  # a session is open from the start
            return self
        if self._shared.connections.is_open:
            raise UsageError("this SkillHost is already open")
        await self._shared.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Disconnect every server (in reverse order of connection), then wait for their
        processes to be stopped: each stdio server still gets ``Limits.exit_timeout`` to
        exit after its stdin closes, but one already sent SIGTERM is killed at once. Never
        raises for a server that already died. Every session over it is closed too.

        A session's ``aclose()`` closes its acting window only: the connections, and
        the other sessions, stay as they are."""
        if not self._owner:
            self._window.shut()
            self._shared.leave(self._window)
            return
        await self._shared.aclose()
        self._shared.close_sessions(keep=self._window)

    async def connect(self, spec: ServerSpec) -> None:
        """Connect ``spec`` and list its skills. Reads no resource.

        The handshake is bounded by ``Limits.operation_timeout``, and so is the
        listing. On failure the server is not added and the error says why.
        """
        await self._shared.connect(spec)

    async def reconnect(self, label: str) -> None:
        """Connect a server again under its label (for example after it died), and list it.

        The skills in the acting window stay there: their pinned entries still decide
        what is read under them.
        """
        await self._shared.reconnect(label)

    async def refresh(self, label: str) -> None:
        """List ``label``'s skills again (the catalog only; reads nothing)."""
        connection = self._shared.connection(label)
        async with self._window.lock(label):
            await self._shared.relist(connection)

    async def disconnect(self, label: str) -> None:
        """Close the connection, forget the server's skills, and end their acting windows.

        Returns once the session is closed (within ``Limits.exit_timeout``); a stdio
        server's process is stopped afterwards, in a task of the host's own."""
        await self._shared.disconnect(label)

    async def forget_server(self, label: str) -> None:
        """Remove a server from this host: disconnect it and purge what the cache keeps of it."""
        await self._shared.forget_server(label)

    def add_local_dir(self, source: LocalSkillDir) -> None:
        """Discover the skills under ``source`` as a local origin labelled ``source.label``."""
        self._shared.add_local_dir(source)

    async def wait_disconnected(self, label: str) -> ServerStatus:
        """Wait until ``label``'s connection ends (the server died, or it was closed),
        and return its status, which says why."""
        connection = self._shared.connection(label)
        await connection.done.wait()
        return self._shared.connections.status(connection)

    def servers(self) -> list[ServerStatus]:
        """Every server connected to this host, connected or not, in connection order."""
        return self._shared.connections.statuses()

    # --- what people and models see -----------------------------------------------------

    def catalog(self, *, for_model: bool = True) -> list[CatalogItem]:
        """The skills the model may load. Their origins count as being in the model's
        context from now on (for the cross-origin rule), until :meth:`deactivate_all`.

        ``for_model=False`` is for a host's own UI (a list for people, never put in the
        model's context): the same items, and nothing changes, so reads across servers
        are gated as they would be without it. Whatever the model is shown of the catalog
        must come from a call without it (or :meth:`catalog_block`).
        """
        return self._tools.catalog(for_model=for_model)

    def catalog_block(self) -> ContextBlock:
        """The catalog for the model's context (omit it when ``catalog()`` is empty)."""
        return self._tools.catalog_block()

    def collisions(self) -> list[Collision]:
        return self.registry.collisions()

    def declined(self) -> list[Declined]:
        return self.registry.declined()

    def server_note(self, label: str) -> str | None:
        """Why a connected server offers no skills, if it does not."""
        return self._shared.connection(label).note

    def active(self) -> list[Activation]:
        """Every activation in the acting window, including those whose content ended."""
        return self._window.active()

    # --- resolution ------------------------------------------------------------------

    def resolve(self, reference: str) -> SkillRecord:
        """The skill a reference names, from what is already known. No network."""
        return self.registry.resolve(reference)

    async def lookup(self, reference: str) -> SkillRecord:
        """Like :meth:`resolve`, but a ``LABEL:URI`` no listing mentioned is confirmed with
        ``skills/get`` on that server (and only that server)."""
        return await self._shared.lookup(reference)

    # --- activation (read_skill) -----------------------------------------------------

    async def approval_request(self, reference: str) -> ActivationRequest:
        """What the approver is asked when ``reference`` is activated. Fetches nothing.

        Raises PolicyDenied (and records it) if the policy refuses the skill: there is
        nothing to review then.
        """
        return self._shared.allowed_request(await self.lookup(reference))

    async def view_skill_md(self, record: SkillRecord) -> str:
        """SKILL.md, verified against the entry, for the person deciding on an approval.

        Never handed to the sink or the model, and it opens no acting window. Raises
        PolicyDenied, fetching nothing, if the policy refuses the skill.
        """
        return await self._shared.view_skill_md(record)

    async def activate(self, reference: str) -> Activation:
        """Load a skill: ask the approver, fetch SKILL.md, verify it, and tag it."""
        record = await self.lookup(reference)
        async with self._activator.lock(record):
            return await self._tools.activate(record)

    async def prepare(
        self, reference: str | SkillRecord, *, reuse: bool = False, fresh: bool = False
    ) -> PendingApproval:
        """The decision on loading a skill, made once: the policy (a refusal is recorded
        and raised), a pin, the verdict from the approver's records. Fetches nothing,
        unless ``fresh``.

        :meth:`activate` is this, the approver asked when nothing settles it
        (``pending.settled``), then :meth:`load`. A front end that asks the person itself
        shows them ``pending.facts`` and passes their :class:`Answer` to :meth:`load`.
        With ``reuse`` (as the model's ``read_skill`` does), a skill this context already
        acts on, its listed content unchanged, is settled without deciding anything.
        With ``fresh``, an MCP skill's entry is first fetched again (``skills/get``) and
        replaces the listed one: a front end that took the person's answer in a later
        request compares the content they were shown with what the server serves now.
        """
        if isinstance(reference, SkillRecord):
            record = reference
        else:
            record = await self.lookup(reference)
        if fresh:
            record = await self._served(record)
        return await self._activator.prepare(record, reuse=reuse)

    async def _served(self, record: SkillRecord) -> SkillRecord:
        """``record`` as its server serves it now (its entry from ``skills/get``), kept in
        the registry; a local skill as it is (it is read when it is loaded)."""
        entry = record.entry
        if not record.origin.is_mcp or entry is None:
            return record
        connection = self._shared.connection(record.origin.label)
        served = await self._shared.get_skill(connection, entry.uri)
        if served == entry:
            return record
        record = SkillRecord.from_entry(record.origin, served, listed=record.listed)
        self.registry.put(record)
        return record

    async def load(self, pending: PendingApproval, answer: Answer | None = None) -> Activation:
        """Load the skill ``pending`` (from this session's :meth:`prepare`) is about, once.

        ``answer`` (None when ``pending`` is settled) is handed to the approver, which
        records it for exactly the content ``pending`` was prepared for; then SKILL.md
        is fetched, verified and tagged. Nothing is decided again. No answer, or one
        that does not approve, raises ApprovalDenied.
        """
        async with self._activator.lock(pending.request.record):
            return self._tools.held(await self._activator.load(pending, answer))

    def granted_tools(self) -> tuple[str, ...]:
        """The tools to give the model now: those granted by the skills it is acting on.

        An activation whose content ended (it failed verification) grants nothing
        more, though its gates still apply.
        """
        return self._window.granted_tools()

    def deactivate(self, reference: str) -> None:
        """Close the acting window (for example when the SKILL.md leaves the context)."""
        self._window.close(self.registry.resolve(reference).key)

    def deactivate_all(self) -> None:
        """Close every acting window, for example when the model's context is reset.

        Also forgets which servers' text was in context: show the catalog again
        afterwards and its origins count again.
        """
        self._window.close_all()

    # --- reads ------------------------------------------------------------------------

    async def read_file(self, reference: str, path: str) -> ContextBlock:
        """A file of a skill, by a path relative to the skill root.

        While the skill is active, the read is checked against the pinned entry;
        otherwise against the current listing entry. For host code and people: the
        model's ``read_skill_file`` tool reads only files a skill loaded in this session
        lists (:meth:`read_skill_file_block`).
        """
        return await self._reads.read_file(reference, path)

    async def read_resource(self, server: str, uri: str) -> ContextBlock:
        """A resource of ``server`` by its URI: the model's ``read_resource(server, uri)``
        where the host offers it (``HostConfig.allow_uri_lookups``).

        A file listed by an active skill of ``server`` is read and verified against the
        pinned entry, without asking. A file of a skill of ``server`` that is not active
        is refused. A resource of another server's skill is refused (it names which
        server lists it). Any other resource is an ordinary read, asked per call through
        the cross-origin gate whenever another server's text is in context.
        """
        return await self._reads.read_resource(server, uri)

    # --- gates on the host's own tools ------------------------------------------------------

    async def authorize_execution(self, tool: str, *, detail: str = "") -> None:
        """Call before running a host code-execution tool the model asked for.

        While any MCP skill is in the acting window (including one whose content
        ended), execution needs explicit approval for each such skill, naming the
        skill and the command (``detail``); raises
        :class:`~skillward.core.errors.ExecutionDenied` otherwise (deny by default). A
        skill whose current approval record already grants execution is not asked
        about again; the execution gate may add that grant to the record when the
        person chooses to (:attr:`ExecutionRequest.remember`). With no MCP skill in
        the window, this returns without asking.
        """
        await self._gates.authorize_execution(tool, detail=detail)

    # --- tools for the model ---------------------------------------------------------------

    async def read_skill_block(self, ref: str) -> ContextBlock:
        """``read_skill`` as a block: the activated skill, or an error block. Never raises.

        Takes only refs of skills the catalog shows (unless
        ``HostConfig.allow_uri_lookups``). An error that may quote anything a server
        wrote is tagged with that server's origin; host errors quote nothing the model
        or a server chose.
        """
        return await self._tools.read_skill_block(ref)

    async def read_skill_tool(self, ref: str) -> str:
        """``read_skill``: the activated skill's block, or an error block the model can read."""
        return (await self.read_skill_block(ref)).text()

    async def read_skill_tool_json(self, ref: str) -> dict[str, Any]:
        """``read_skill`` in JSON form (:meth:`ContextBlock.to_json`)."""
        return (await self.read_skill_block(ref)).to_json()

    async def read_skill_file_block(self, ref: str, path: str) -> ContextBlock:
        """``read_skill_file`` as a block: a verified file of a skill loaded in this
        session, or an error block. Never raises.

        ``path`` must be exactly a path the skill's block lists (its held manifest,
        pinned at activation): it is compared, never resolved, so ``..``, encoded
        separators, absolute paths and URIs read nothing, and neither does a skill this
        session did not load (or whose content ended).
        """
        return await self._tools.read_skill_file_block(ref, path)

    async def read_resource_block(self, server: str, uri: str) -> ContextBlock:
        """``read_resource`` as a block: a verified, origin-tagged read, or an error block.
        Never raises. The model has this tool only with ``HostConfig.allow_uri_lookups``;
        host code may call it either way."""
        return await self._tools.read_resource_block(server, uri)

    async def read_resource_tool(self, server: str, uri: str) -> str:
        """``read_resource``: a verified, origin-tagged read, or an error block."""
        return (await self.read_resource_block(server, uri)).text()

    async def read_resource_tool_json(self, server: str, uri: str) -> dict[str, Any]:
        """``read_resource`` in JSON form (:meth:`ContextBlock.to_json`)."""
        return (await self.read_resource_block(server, uri)).to_json()

    def error_block(
        self, error: SkillwardError, origin: Origin | None = None, *, host_words: bool = False
    ) -> ContextBlock:
        """``error`` as the block skillward's tools answer the model with, for code that
        runs those tools its own way (``skillward.integrations`` does): it leaves through
        this session like every block, so the sink sees it and the origin it is tagged
        with counts as in the model's context. Tagged with ``origin`` (or the origin
        ``error.server`` labels); with none, the block carries only the error's type,
        unless ``host_words`` says its message is skillward's own and quotes nothing a
        model or server chose."""
        return self._tools.tool_error(error, origin, host_words=host_words)

    async def handle_tool_call(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ContextBlock | None:
        """One call for a host's tool loop. Never raises.

        The tools :meth:`tool_definitions` offers, by the names it gives them
        (``HostConfig.tool_prefix``), return their block (or a tagged error block):
        ``list_skills``, ``read_skill``, ``read_skill_file``, and ``read_resource`` with
        ``HostConfig.allow_uri_lookups``. A tool ``HostConfig.execution_tools`` names is
        gated (:meth:`authorize_execution`, its arguments the command): refused, an error
        block; allowed, None. None means skillward has nothing to add: run the tool (any
        other name, the unprefixed names under a prefix included). ``arguments``: a
        mapping or a JSON object string, as each API passes them.
        """
        return await self._tools.handle_tool_call(name, arguments)

    def tool_definitions(self, style: ToolStyle = "mcp") -> list[dict[str, Any]]:
        """The tools to register with the model, in the shape ``style``'s API takes.

        ``mcp``, ``anthropic`` (Messages), ``openai`` (Chat Completions) or
        ``openai-responses`` (strict, each object schema closed): ``list_skills``,
        ``read_skill(ref)``, ``read_skill_file(ref, path)``, and
        ``read_resource(server, uri)`` with ``HostConfig.allow_uri_lookups``; each name
        under ``HostConfig.tool_prefix``. ``ref`` takes only the refs the catalog shows
        (an ``enum``), unless there are none or they are past
        ``Limits.max_tool_enum_bytes``.
        """
        return self._tools.tool_definitions(style)
