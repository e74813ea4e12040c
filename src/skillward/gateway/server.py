"""The gateway's MCP server: three tools over one :class:`SkillHost`, on the SDK's
low-level ``Server`` (both protocol eras: the 2025-11-25 handshake, where approval is an
``elicitation/create`` request on the call's own stream, and 2026-07-28, where it is an
``InputRequiredResult`` and the client's retry).

* ``list_skills`` ``{}``: the catalog block.
* ``read_skill`` ``{"ref"}``: the verified SKILL.md block, after approval.
* ``read_skill_file`` ``{"ref", "path"}``: one verified file of a skill this client
  loaded, found only among the paths its held manifest lists.

There is no generic resource read: the model cannot name a URI, so it cannot steer the
gateway to another server's resources.
"""

from __future__ import annotations

import logging
import shlex
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from skillward.core.config import Limits
from skillward.core.context import catalog_block
from skillward.core.errors import (
    AmbiguousName,
    ApprovalDenied,
    ApprovalError,
    ApprovalTimedOut,
    SkillNotFound,
    SkillwardError,
    UnknownServer,
    UsageError,
)
from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord, parse_reference
from skillward.core.tools import DATA, LIST_SKILLS, READ_SKILL
from skillward.edge._trace import parse_trace, traced
from skillward.gateway._approval import (
    CANCELLED,
    ELICITED,
    ON_THE_PAGE,
    answer_for,
    approval_message,
    not_approved,
    read_in_a_terminal,
)
from skillward.gateway._asking import (
    MODERN,
    Asker,
    NotAnswered,
    Question,
    asks_forms,
    asks_urls,
)
from skillward.gateway._page import ApprovalPages
from skillward.gateway._sessions import ClientSession, Sessions
from skillward.gateway._tools import (
    NO_TOOLS,
    gateway_tools,
    host_error,
    result,
    tools,
    with_notes,
)
from skillward.host.skillhost import SkillHost
from skillward.host.types import Activation
from skillward.trust.approvals import Answer
from skillward.trust.audit import as_client
from skillward.trust.parking import ParkedApprovals
from skillward.trust.pending import PendingApproval
from skillward.trust.tokens import ApprovalTokens

__all__ = ["Gateway", "serve_stdio", "session_key"]

logger = logging.getLogger("skillward")

#: How much of the catalog the server's instructions carry.
_MAX_INSTRUCTIONS = 16 * 1024


def session_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """Which client session a request belongs to; each era's keys are a namespace of
    their own, so a key of one never names a session of the other.

    Over stdio, the one client of the process. Over HTTP, the era the SDK served the
    request at decides. At 2025-11-25 (a handshake version), the transport's session:
    its ``Mcp-Session-Id``, which the SDK's session manager issued and checked before
    any handler ran (an unknown one is 404). At 2026-07-28 the protocol has no session
    and that header is never read (the HTTP guard refuses a request carrying one):
    clients are told apart by the name and version they report (unverified; every
    holder of the token is the same person, so this separates that person's hosts, it
    does not defend one from another).
    """
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return "stdio"
    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        sid = headers.get("mcp-session-id")
        if not isinstance(sid, str) or not sid:
            # The SDK's stateful transport serves no call without one: fail closed.
            raise UsageError("a 2025-11-25 request over HTTP came without its session")
        return f"session:{sid}"
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    reported = f"{info.name}\x00{info.version}" if info is not None else ""
    return "client:" + reported


def _client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    params = ctx.session.client_params
    if params is None:
        return None
    return params.client_info.name


class _GatewayServer(Server[Any]):
    # listChanged at 2025-11-25 comes from NotificationOptions, and the HTTP session
    # manager passes none: default it here (2026-07-28 derives it from the listen handler).
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class Gateway:
    """The MCP server over ``host`` (entered and connected by the caller). ``notes``
    go with every catalog it gives, in its instructions and ``list_skills``."""

    def __init__(
        self,
        host: SkillHost,
        *,
        sessions: Sessions,
        tokens: ApprovalTokens | None = None,
        parked: ParkedApprovals | None = None,
        approval_timeout: float = 600.0,
        name: str = "skillward-gateway",
        version: str = "",
        key: Callable[[ServerRequestContext[Any, Any]], str] = session_key,
        pages: ApprovalPages | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.host = host
        self.notes = list(notes)
        #: The one-time approval pages, for clients that declare URL-mode elicitation.
        self.pages = pages
        self._key = key
        self.sessions = sessions
        #: Signs each 2026-07-28 question's ``request_state`` (a key made per process).
        self.tokens = tokens or ApprovalTokens()
        #: The questions the client could not be asked, for ``skillward approve`` to answer.
        self.parked = parked if parked is not None else ParkedApprovals()
        #: Where ``skillward approve`` reaches :attr:`parked` (its approval socket), once it
        #: listens; None: the questions are not parked, and the command says what to run.
        self.approval_socket: Path | None = None
        self.approval_timeout = approval_timeout
        self.asker = Asker(self.tokens, lambda: self.approval_timeout)
        self.bus = InMemorySubscriptionBus()
        self._shown = self._catalog_shown()
        self.server: Server[Any] = _GatewayServer(
            name,
            version=version,
            instructions=self.instructions(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        # Legacy connections that listed the tools, told when the catalog changes (weakly
        # held: a connection that ends is forgotten with it).
        self._listeners: weakref.WeakSet[Any] = weakref.WeakSet()

    # --- the catalog ---------------------------------------------------------------------

    def _catalog_shown(self) -> list[tuple[str, str, str]]:
        """What the catalog shows of each skill: a change to any of it is a change."""
        return [(item.ref, item.origin.label, item.description) for item in self.host.catalog()]

    @property
    def _refs(self) -> Iterator[str]:
        return (ref for ref, _, _ in self._shown)

    def instructions(self) -> str:
        """What the server's instructions carry: how to use it, and the catalog, bounded."""
        offered = gateway_tools(self.host.config)
        head = (
            "skillward gateway: verified skills from the user's MCP servers and skill "
            f"folders. Call {offered.list_skills} for the catalog, {offered.read_skill} to "
            f"load a skill (the person approves it), {offered.read_skill_file} for its "
            f"files. {DATA}"
        )
        items = self.host.catalog()

        def shown(count: int) -> str | None:
            """The instructions with the first ``count`` skills, if they fit."""
            block = catalog_block(items[:count], tools=offered)
            text = with_notes(block, self.notes).text()
            more = len(items) - count
            tail = f"\n({more} more skills: call {offered.list_skills}.)" if more else ""
            if len(head) + len(text) + len(tail) + 2 <= _MAX_INSTRUCTIONS or count == 0:
                return f"{head}\n\n{text}{tail}"
            return None

        # The most skills that fit, found rendering a few times the bound, never the whole
        # catalog (10,000 skills): doubling until they do not fit, then halving the gap.
        fits, best = 0, shown(0)
        assert best is not None
        over = min(len(items), 64)
        while over > fits:
            text = shown(over)
            if text is None:
                break
            fits, best = over, text
            over = min(len(items), over * 2)
        while over - fits > 1:
            middle = (fits + over) // 2
            text = shown(middle)
            if text is None:
                over = middle
            else:
                fits, best = middle, text
        return best

    async def catalog_changed(self) -> bool:
        """After servers came, went or changed: update the instructions and the tools, and
        tell the clients listening. True if the catalog changed."""
        shown = self._catalog_shown()
        if shown == self._shown:
            return False
        self._shown = shown
        self.server.instructions = self.instructions()
        await self.bus.publish(ToolsListChanged())
        for connection in list(self._listeners):
            try:
                await connection.send_tool_list_changed()
            except Exception:  # a client that went away
                self._listeners.discard(connection)
        return True

    # --- handlers ------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if ctx.protocol_version not in MODERN:
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                self._listeners.add(connection)
        offered = gateway_tools(self.host.config)
        return types.ListToolsResult(tools=tools(offered, self._refs, self.host.limits))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        client = _client_name(ctx)
        session = await self.sessions.get(self._key(ctx))
        # The call's trace goes on to the upstream requests made for it (edge/_trace.py).
        with as_client(client, tool=params.name), traced(parse_trace(params.meta)):
            try:
                return await self._tool(ctx, session, params)
            except SkillwardError as error:
                return self._unexpected(session, error)
            except Exception:
                logger.exception("the gateway failed on %s", params.name)
                return host_error(UsageError("the skillward gateway failed on this call"))

    async def _tool(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: ClientSession,
        params: types.CallToolRequestParams,
    ) -> types.CallToolResult | types.InputRequiredResult:
        offered = gateway_tools(self.host.config)
        call = offered.read_call(params.name, params.arguments, limits=self.host.limits)
        if call is None:
            raise UsageError(f"the gateway has no such tool; use {', '.join(offered.names())}")
        tool, arguments = call
        if tool == LIST_SKILLS:
            return result(with_notes(session.host.catalog_block(), self.notes))
        if tool == READ_SKILL:
            return await self._read_skill(ctx, session, arguments["ref"], params)
        return await self._read_file(session, arguments["ref"], arguments["path"])

    def _record(self, session: ClientSession, ref: str) -> SkillRecord:
        """The catalog skill ``ref`` names; the error quotes nothing the model passed."""
        try:
            record = session.host.registry.resolve(parse_reference(ref))
        except AmbiguousName:
            raise UsageError(
                "that ref matches several skills; pass a ref exactly as list_skills shows it"
            ) from None
        except (SkillNotFound, UnknownServer, UsageError):
            raise _not_in_catalog() from None
        if not record.listed:
            raise _not_in_catalog()
        return record

    @staticmethod
    def _unexpected(session: ClientSession, error: SkillwardError) -> types.CallToolResult:
        """An error no path tagged: one naming a server may quote it, so it is tagged with
        that origin (or reduced to its type); the gateway's own carry only its words."""
        return _session_error(session, error, None, host_words=error.server is None)

    @staticmethod
    def _origin_error(
        session: ClientSession, error: SkillwardError, record: SkillRecord
    ) -> types.CallToolResult:
        return _session_error(session, error, record.origin)

    # --- read_skill ----------------------------------------------------------------------

    async def _read_skill(
        self,
        ctx: ServerRequestContext[Any, Any],
        session: ClientSession,
        ref: str,
        params: types.CallToolRequestParams,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Decided once: the record resolved here, the host's prepare (the policy first,
        so a skill it refuses is never offered; the pin; the verdict), the person asked
        only when nothing settles it, and the host's load on their answer."""
        record = self._record(session, ref)
        host = session.host
        # A retry brings the answer to a question: it is checked, never passed over.
        retry = params.request_state is not None or params.input_responses is not None
        try:
            pending = await host.prepare(record, reuse=not retry)
        except SkillwardError as error:
            return self._origin_error(session, error, record)
        if pending.settled:
            return await self._load(session, pending, None)
        given = self.parked.take(pending, waiter=session.key)
        if given is not None:  # the person answered in a terminal (skillward approve)
            return await self._load(session, pending, given)
        qualified = pending.facts.ref
        client = _client_name(ctx)
        capabilities = ctx.session.client_capabilities
        pages = self.pages if self.pages is not None and self.pages.ready else None
        on_page = pages is not None and asks_urls(capabilities)
        if not on_page and not asks_forms(capabilities):
            _audit_denial(
                session, pending, "the client cannot ask the person (it declares no elicitation)"
            )
            return self._origin_error(
                session,
                ApprovalError(
                    f"loading skill {qualified!r} needs the person's approval, and this MCP "
                    "client cannot ask them (it does not support form elicitation); nothing was "
                    f"loaded. {self._in_a_terminal(session, pending, client)}",
                    server=record.origin.label,
                    uri=record.key.locator,
                ),
                record,
            )
        question = Question(session, pending)
        limit = host.limits.max_shown_question
        try:
            if pages is not None and on_page:
                asked = await self.asker.ask_on_page(ctx, pages, question, params, limit=limit)
            else:
                message = approval_message(pending.facts, read_at=read_in_a_terminal(qualified))
                if len(message) > limit:
                    return self._too_long(session, pending, len(message), limit, client)
                asked = await self.asker.ask_in_form(ctx, question, message, params)
        except NotAnswered as refusal:
            return self._refused(
                session,
                pending,
                refusal.why,
                client,
                unanswered=refusal.unanswered,
                timed_out=refusal.timed_out,
            )
        except SkillwardError as error:  # SKILL.md could not be shown
            return self._origin_error(session, error, record)
        if isinstance(asked, types.InputRequiredResult):
            return asked
        action, content = asked
        answer = answer_for(action, content, how=ON_THE_PAGE if on_page else ELICITED)
        if answer is None:
            why = not_approved(action, content)
            return self._refused(session, pending, why, client, unanswered=why == CANCELLED)
        return await self._load(session, pending, answer)

    def _in_a_terminal(
        self, session: ClientSession, pending: PendingApproval, client: str | None
    ) -> str:
        """What to tell a client the gateway could not ask through: the command that
        approves in a terminal, exactly as the person runs it. With the approval socket
        up, the question is parked for this client session, and the command answers it."""
        command = f"skillward approve {shlex.quote(pending.facts.ref)}"
        if self.approval_socket is None:
            return (
                "Ask the person to run, in a terminal and with the server options this "
                f"gateway was started with: {command}, and to choose remember; then call "
                "read_skill again"
            )
        self.parked.park(pending, waiter=session.key, client=client)
        return f"Ask the person to run: {command} (in a terminal), then call read_skill again"

    def _too_long(
        self,
        session: ClientSession,
        pending: PendingApproval,
        length: int,
        limit: int,
        client: str | None,
    ) -> types.CallToolResult:
        """A form shows the question whole or it is not asked: nothing is approved on a part."""
        _audit_denial(
            session, pending, "the question is too long to show whole in the client's form"
        )
        record = pending.request.record
        qualified = pending.facts.ref
        return self._origin_error(
            session,
            ApprovalError(
                f"loading skill {qualified!r} needs the person's approval, and the "
                f"question takes {length} characters to show whole, more than the "
                f"{limit} the gateway puts in a form; nothing was loaded. A terminal "
                "shows it whole (or start the gateway with --approval-page). "
                f"{self._in_a_terminal(session, pending, client)}",
                server=record.origin.label,
                uri=record.key.locator,
            ),
            record,
        )

    def _refused(
        self,
        session: ClientSession,
        pending: PendingApproval,
        why: str,
        client: str | None,
        *,
        unanswered: bool,
        timed_out: bool = False,
    ) -> types.CallToolResult:
        """Nothing loaded: the person refused, or (``unanswered``) nobody answered, which
        the error says as such, never as a refusal (``timed_out``: ApprovalTimedOut)."""
        _audit_denial(session, pending, f"not approved through the client: {why}")
        record = pending.request.record
        qualified = pending.facts.ref
        error: ApprovalError
        if unanswered:
            unanswered_error = ApprovalTimedOut if timed_out else ApprovalError
            error = unanswered_error(
                f"loading skill {qualified!r} was not approved: {why}; nothing was loaded. "
                "The person may not have seen the question (a host that cannot show one, "
                "as when it runs without a person, cancels it). "
                f"{self._in_a_terminal(session, pending, client)}",
                server=record.origin.label,
                uri=record.key.locator,
            )
        else:
            error = ApprovalDenied(
                f"loading skill {qualified!r} was not approved ({why}); nothing was loaded",
                server=record.origin.label,
                uri=record.key.locator,
            )
        return self._origin_error(session, error, record)

    async def _load(
        self, session: ClientSession, pending: PendingApproval, answer: Answer | None
    ) -> types.CallToolResult:
        """The host's load of ``pending`` on ``answer`` (None: it is settled)."""
        record = pending.request.record
        try:
            activation = await session.host.load(pending, answer)
        except SkillwardError as error:
            return self._origin_error(session, error, record)
        meta: dict[str, Any] = {
            "ref": session.host.registry.qualified_ref(record),
            "manifest_hash": activation.content_hash,
            "requested_tools": len(activation.requested_tools),
            "granted_tools": [],
        }
        return result(with_notes(activation.block, [NO_TOOLS]), meta)

    @staticmethod
    def _activation(session: ClientSession, record: SkillRecord) -> Activation | None:
        return next((a for a in session.host.active() if a.record.key == record.key), None)

    # --- read_skill_file -----------------------------------------------------------------

    async def _read_file(self, session: ClientSession, ref: str, path: str) -> types.CallToolResult:
        # The library's read_skill_file: only a path the held manifest of a skill this
        # session loaded lists, compared exactly; nothing the model wrote becomes a URI.
        block = await session.host.read_skill_file_block(ref, path)
        if block.kind != "file":
            return result(block)
        record = self._record(session, ref)
        activation = self._activation(session, record)
        meta = {
            "ref": session.host.registry.qualified_ref(record),
            "manifest_hash": activation.content_hash if activation is not None else None,
        }
        return result(block, meta)


def _session_error(
    session: ClientSession,
    error: SkillwardError,
    origin: Origin | None,
    *,
    host_words: bool = False,
) -> types.CallToolResult:
    """``error`` as the client's session hands it to the model, like every block of it:
    tagged with ``origin`` (or the origin ``error.server`` labels, else reduced to its
    type unless ``host_words``), and that origin counted as in the model's context."""
    try:
        return result(session.host.error_block(error, origin, host_words=host_words))
    except UsageError:  # the session was closed meanwhile (a newer one took its place)
        return host_error(UsageError("this client's session has ended; call the tool again"))


def _not_in_catalog() -> SkillNotFound:
    # Made only when raised: a ref that resolves (every read) builds no error.
    return SkillNotFound(
        "no skill in the catalog has that ref; pass a ref exactly as list_skills shows it"
    )


def _audit_denial(session: ClientSession, pending: PendingApproval, reason: str) -> None:
    key = pending.request.key
    session.host.audit.record(
        "denial",
        "denied",
        reason=reason,
        label=key.origin,
        identity=pending.request.identity,
        skill_uri=key.locator,
        content_hash=pending.content_hash,
        gate="activation",
    )


async def serve_stdio(server: Server[Any], limits: Limits) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client leaves, each
    line the client writes held to ``limits``' message caps (``edge/_stdioserver.py``)."""
    from skillward.edge._stdioserver import serve_stdio as serve  # noqa: PLC0415

    await serve(server, limits)
