"""The client edge: the module that speaks to MCP servers.

:class:`SkillsClient` wraps one ``mcp.Client`` session with one server and
speaks the SEP-2640 methods, over the transports of ``_transport`` (which cap every
message before it is parsed). It is deliberately narrow:

* every call checks capability negotiation first (the extension *and*
  ``resources``; ``directoryRead`` for directory reads) and raises
  :class:`~skillward.core.errors.CapabilityMissing` otherwise;
* the handshake, and every operation (a whole listing walk included), runs under
  one overall deadline, so a stalling server cannot hold the host;
* listing and directory walks are bounded in pages, entries, files and bytes
  (checked before a page's entries are built) and refuse repeated cursors;
* reads return the exact raw bytes, bypass the SDK's response cache, and cap
  the size before decoding;
* every foreign exception becomes a :class:`~skillward.core.errors.SkillwardError`
  naming the server label.

Nothing here decides trust: results are parsed into the wire model and handed
to the host, which verifies them.
"""

from __future__ import annotations

import logging
import math
import re
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from functools import partial
from typing import Any, NoReturn, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp import Client, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, RootModel, ValidationError

from skillward._version import __version__
from skillward.core._fields import EXTENSION_ID, GET_ECHO
from skillward.core._results import get_echo_problem, get_rule, read_capability
from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
    DeadlineExceeded,
    InvalidEntry,
    InvalidResponse,
    ServerDisconnected,
    ServerRejected,
    SkillwardError,
    TransportError,
)
from skillward.core.wire import (
    DirectoryChild,
    GetSkillResult,
    SkillEntry,
    SkillsCapability,
    SkillsPage,
    parse_skills_page,
)
from skillward.edge import _process, _transport
from skillward.edge._contents import ResourceContent, content_of, exact_content
from skillward.edge._methods import (
    DirectoryReadParams,
    DirectoryReadRequest,
    SkillsGetParams,
    SkillsGetRequest,
    SkillsListParams,
    SkillsListRequest,
)
from skillward.edge._paging import (
    DIR_PAGINATION,
    LIST_PAGINATION,
    WIRE_CAPS,
    Budget,
    SkillListing,
    check_bytes,
    check_cursor,
    check_directory_page,
    check_page,
    first_problem,
    take_page,
    walk_directory,
    walk_listing,
)
from skillward.edge._trace import trace_meta
from skillward.edge.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
    redact,
)

__all__ = [
    "Reaper",
    "SkillsClient",
    "leaves",
    "translate",
]

#: Where stdio servers' processes are stopped (see :meth:`SkillsClient.connect`).
Reaper = _process.Reaper

logger = logging.getLogger("skillward")

# The rules of docs/check.md the client edge enforces (see skillward.core.rules).


class _RawResult(RootModel):  # type: ignore[type-arg]
    """Any result object, kept as received (the very object, measured by the transport
    when it could be); skillward validates it itself."""

    # Not RootModel[Any]: subscripting builds a model at import (the start-up test).
    model_config = ConfigDict(defer_build=True)
    root: Any


def _target(
    spec: ServerSpec,
    limits: Limits,
    faults: _transport.Faults,
    reaper: Reaper | None,
    child: _process.Child | None,
) -> Any:
    transport = spec.transport
    if isinstance(transport, StdioTransport):
        return _transport.stdio(
            spec, transport, limits=limits, faults=faults, reaper=reaper, child=child
        )
    if isinstance(transport, HttpTransport):
        return _transport.http(transport, limits=limits, faults=faults)
    if isinstance(transport, InMemoryTransport):
        return transport.server
    raise AssertionError(f"unknown transport {transport!r}")  # pragma: no cover


#: How the SDK says a request it sent timed out (``MCPError(REQUEST_TIMEOUT)``).
_SDK_TIMEOUT = re.compile(r"Request '[^']*' timed out|Request \"[^\"]*\" timed out")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``, exception groups flattened."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def _reraise(
    error: BaseException,
    *,
    server: str,
    uri: str | None = None,
    secrets: tuple[str, ...] = (),
    faults: _transport.Faults | None = None,
) -> NoReturn:
    """Raise ``error`` as a SkillwardError; cancellation and interrupts keep their meaning."""
    found = leaves(error)
    if any(not isinstance(leaf, Exception) for leaf in found):
        raise error
    translated = _translate(found, error, server=server, uri=uri, secrets=secrets, faults=faults)
    cause = _cause(error, secrets)
    if translated is error:
        if cause is None:
            raise error from None  # what it was chained to quotes a secret
        raise error
    raise translated from cause


def _cause(error: BaseException, secrets: tuple[str, ...]) -> BaseException | None:
    """What a translation of ``error`` is chained to: ``error``, or None when its traceback
    quotes a secret (a server echoed it), which keeps the secret out of every traceback."""
    if secrets:
        original = "".join(traceback.format_exception(error))
        if redact(original, secrets) != original:
            return None
    return error


def translate(
    error: BaseException,
    *,
    server: str,
    secrets: tuple[str, ...] = (),
    ended: bool = False,
) -> SkillwardError:
    """``error`` (a foreign exception, or a group of them) as a SkillwardError naming
    ``server``, its text cleaned of ``secrets``. ``ended``: the connection is over, so a
    failure of no known kind is :class:`~skillward.core.errors.ServerDisconnected`."""
    return _translate(leaves(error), error, server=server, uri=None, secrets=secrets, ended=ended)


def _translate(
    leaves: list[BaseException],
    error: BaseException,
    *,
    server: str,
    uri: str | None,
    secrets: tuple[str, ...] = (),
    ended: bool = False,
    faults: _transport.Faults | None = None,
) -> SkillwardError:
    """Map a foreign exception to the skillward hierarchy."""
    for leaf in leaves:
        if isinstance(leaf, SkillwardError):
            leaf.message = redact(leaf.message, secrets)
            return leaf.with_context(server=server, uri=uri)
    faults = faults or _transport.Faults()
    for leaf in leaves:
        # A message the transport refused: whatever the SDK made of it, it is that.
        refused = faults.explain(leaf)
        if refused is not None:
            return refused.with_rule(WIRE_CAPS).with_context(server=server, uri=uri)
    leaf = leaves[0] if leaves else error
    if isinstance(leaf, MCPError):
        # The SDK's own errors for these codes, by the words it gives them: a server may
        # answer with the same codes (-32000 is any server error), and that is its answer.
        said = str(leaf.message)
        if leaf.code == types.CONNECTION_CLOSED and said == "Connection closed":
            return ServerDisconnected("the connection closed", server=server, uri=uri)
        if leaf.code == types.REQUEST_TIMEOUT and _SDK_TIMEOUT.fullmatch(said):
            return DeadlineExceeded("the server did not answer in time", server=server, uri=uri)
        message = redact(str(leaf.message), secrets)[:500]
        return ServerRejected(message, code=leaf.code, server=server, uri=uri)
    if isinstance(leaf, TimeoutError):
        return DeadlineExceeded("the operation did not finish in time", server=server, uri=uri)
    if isinstance(leaf, ValidationError):
        return InvalidResponse("the server's result is malformed", server=server, uri=uri)
    detail = redact(str(leaf), secrets)[:300] or type(leaf).__name__
    if ended:
        return ServerDisconnected(f"the connection failed: {detail}", server=server, uri=uri)
    return TransportError(f"cannot talk to the server: {detail}", server=server, uri=uri)


class SkillsClient:
    """One connected server, spoken to in SEP-2640 terms. Use :meth:`connect`."""

    def __init__(
        self,
        client: Client,
        *,
        label: str,
        limits: Limits,
        secrets: tuple[str, ...] = (),
        faults: _transport.Faults | None = None,
    ) -> None:
        self._client = client
        self.label = label
        self.limits = limits
        self._secrets = secrets
        self._faults = faults or _transport.Faults()

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        spec: ServerSpec,
        *,
        limits: Limits | None = None,
        reaper: Reaper | None = None,
        child: _process.Child | None = None,
    ) -> AsyncIterator[SkillsClient]:
        """Connect to ``spec`` and negotiate, within ``Limits.operation_timeout``; the
        session closes when the block ends.

        A stdio server's process runs in a task of ``reaper`` and is stopped there when
        the session ends (stdin closed, then SIGTERM, then SIGKILL, each after
        ``Limits.exit_timeout``; SIGTERM at once after a deadline), so leaving the block
        never waits for it. Without a reaper, leaving the block waits for that.

        ``child``: the stdio server's process, started already (:func:`_process.spawn`,
        so that it starts while this module is imported). The session adopts it; it is
        released when the block ends, whichever way it ends.
        """
        try:
            async with cls._session(spec, limits or Limits(), reaper, child) as connected:
                yield connected
        finally:
            if child is not None:
                child.release(polite=False)  # a no-op once the session released it

    @classmethod
    @asynccontextmanager
    async def _session(
        cls,
        spec: ServerSpec,
        limits: Limits,
        reaper: Reaper | None,
        child: _process.Child | None,
    ) -> AsyncIterator[SkillsClient]:
        faults = _transport.Faults()
        client = Client(
            _target(spec, limits, faults, reaper, child),
            mode=spec.mode,
            # Bounds every single request, the handshake included.
            read_timeout_seconds=limits.request_timeout,
            # Every answer must come from the server, never from a response cache.
            cache=None,
            client_info=types.Implementation(name="skillward", version=__version__),
        )
        timeout = limits.operation_timeout
        # The SDK's discovery probe has a clock of its own (10 s): the whole handshake
        # gets the operation deadline, lifted once it is done.
        handshake = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        late = f"the server did not complete the handshake within {timeout:g} s"
        body_error: BaseException | None = None
        try:
            with handshake:
                async with client:
                    handshake.deadline = math.inf
                    _check_in_time(handshake, late, spec.label)
                    try:
                        yield cls(
                            client,
                            label=spec.label,
                            limits=limits,
                            secrets=spec.secret_values(),
                            faults=faults,
                        )
                    except BaseException as error:
                        body_error = error
                        raise
        except BaseException as error:
            if body_error is not None:
                cancelled = anyio.get_cancelled_exc_class()
                found = leaves(error)
                if (
                    isinstance(body_error, cancelled)
                    and error is not body_error
                    and any(not isinstance(leaf, cancelled) for leaf in found)
                ):
                    # The transport failed (a server that broke off its answer) and
                    # cancelled the caller: that failure is what is said, as the server's.
                    _reraise(error, server=spec.label, secrets=spec.secret_values(), faults=faults)
                # The caller's own exception (perhaps wrapped by the SDK): never relabel it.
                if error is body_error or body_error not in found:
                    raise
                raise body_error from None
            if handshake.cancel_called:
                # The deadline fired; the SDK may surface that as any error at all.
                raise DeadlineExceeded(late, server=spec.label) from _cause(
                    error, spec.secret_values()
                )
            _reraise(error, server=spec.label, secrets=spec.secret_values(), faults=faults)
        if handshake.cancelled_caught:
            raise DeadlineExceeded(late, server=spec.label)

    @property
    def ended(self) -> SkillwardError | None:
        """Why the transport ended the connection (a message past a cap), if it did."""
        ended = self._faults.ended
        return None if ended is None else type(ended)(ended.message, server=self.label)

    # --- what the server said about itself -------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        return self._client.protocol_version

    @property
    def modern(self) -> bool:
        """Whether the session speaks protocol 2026-07-28 or later (``server/discover``)."""
        return self._client.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def server_name(self) -> str | None:
        """``serverInfo.name`` as the server reported it. Unverified: never use it as a key."""
        info = self._client.server_info
        return info.name if info is not None else None

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``: untrusted text."""
        return self._client.instructions

    def declaration(self) -> tuple[object, bool]:
        """What the server declared, unchecked: the value under the skills extension's
        identifier (None: not declared), and whether it declares ``resources``."""
        capabilities = self._client.server_capabilities
        extensions = capabilities.extensions if capabilities is not None else None
        setting = extensions.get(EXTENSION_ID) if extensions else None
        return setting, capabilities is not None and capabilities.resources is not None

    def capability(self) -> SkillsCapability:
        """The skills extension settings; raise unless the extension and resources are declared."""
        setting, resources = self.declaration()
        return read_capability(setting, resources=resources, server=self.label)

    def _require_resources(self) -> None:
        capabilities = self._client.server_capabilities
        if capabilities is None or capabilities.resources is None:
            raise CapabilityMissing(
                "the server does not declare the resources capability", server=self.label
            )

    # --- operations ---------------------------------------------------------------------

    async def _run(self, operation: Callable[[], Any], *, uri: str | None = None) -> Any:
        """Run one operation under the overall deadline, translating every failure."""
        deadline = anyio.current_time() + self.limits.operation_timeout
        with anyio.CancelScope(deadline=deadline) as scope:
            try:
                return await operation()
            except BaseException as error:
                if scope.cancel_called:
                    # The deadline fired; the SDK may surface that as any error at all.
                    raise self._late(uri) from _cause(error, self._secrets)
                _reraise(
                    error, server=self.label, uri=uri, secrets=self._secrets, faults=self._faults
                )
        raise self._late(uri)

    def _late(self, uri: str | None) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"the operation did not finish within {self.limits.operation_timeout} s",
            server=self.label,
            uri=uri,
        )

    async def _request(self, request: Any) -> dict[str, Any]:
        meta = trace_meta()
        if meta is not None and request.params is not None:
            # The trace of the call being served goes on with it (edge/_trace.py).
            request.params.meta = {**(request.params.meta or {}), **meta}
        result = await self._client.session.send_request(request, _RawResult)
        raw: dict[str, Any] = result.root
        return raw

    async def list_skills_page(self, cursor: str | None = None) -> SkillsPage:
        """One ``skills/list`` page; bad entries are in ``rejected``, not fatal."""
        self.capability()

        async def operation() -> SkillsPage:
            return await self._page(cursor, Budget())

        page: SkillsPage = await self._run(operation)
        return page

    async def _page(self, cursor: str | None, spent: Budget) -> SkillsPage:
        raw = await self._listed(cursor, spent)
        return check_cursor(parse_skills_page(raw, server=self.label, limits=self.limits))

    async def _listed(self, cursor: str | None, spent: Budget) -> dict[str, Any]:
        """One ``skills/list`` result, held to the walk's bounds before anything is built."""
        raw = await self._request(SkillsListRequest(params=SkillsListParams(cursor=cursor)))
        check_page(raw, spent, self.limits)
        return raw

    async def list_skills(self) -> SkillListing:
        """Walk every ``skills/list`` page within the configured bounds (the next page is
        asked for while this one's entries are built)."""
        self.capability()

        async def operation() -> SkillListing:
            return await walk_listing(self._listed, self.limits, self.label)

        listing: SkillListing = await self._run(operation)
        return listing

    async def get_skill(self, uri: str) -> SkillEntry:
        """``skills/get``: the server's current entry for the skill at ``uri``."""
        self.capability()

        async def operation() -> SkillEntry:
            raw = await self._request(SkillsGetRequest(params=SkillsGetParams(uri=uri)))
            check_bytes(raw, "skills/get", self.limits.max_get_response_bytes)
            try:
                result = GetSkillResult.model_validate(raw, context={"limits": self.limits})
            except ValidationError as exc:
                raise InvalidEntry(
                    f"invalid skills/get result: {first_problem(exc)}", rule=get_rule(exc)
                ) from None
            echo = get_echo_problem(result.skill.uri, uri)
            if echo is not None:
                raise InvalidResponse(echo, rule=GET_ECHO)
            return result.skill

        entry: SkillEntry = await self._run(operation, uri=uri)
        return entry

    async def read_resource(
        self,
        uri: str,
        *,
        max_bytes: int | None = None,
        after_send: Callable[[], None] | None = None,
    ) -> bytes:
        """``resources/read``: the exact raw bytes, refused before decoding above the cap.

        ``after_send`` (which must not raise) is called once: over stdio as soon as the
        request is written, so it runs while the server works on it; otherwise when the
        read ends, whether or not it succeeded."""
        content = await self.read_resource_content(uri, max_bytes=max_bytes, after_send=after_send)
        return content.data

    async def read_resource_content(
        self,
        uri: str,
        *,
        max_bytes: int | None = None,
        after_send: Callable[[], None] | None = None,
    ) -> ResourceContent:
        """``resources/read`` of one file: its one content item, exact bytes and metadata,
        refused before decoding above the cap (``after_send``: as :meth:`read_resource`)."""
        sending = _transport.AfterSend(after_send).sending() if after_send else nullcontext()
        with sending:
            (content,) = await self._read(uri, max_bytes, exact=True)
        return content

    async def read_resource_contents(
        self, uri: str, *, max_bytes: int | None = None
    ) -> tuple[ResourceContent, ...]:
        """``resources/read``: every content item as received, each refused before decoding
        above the cap (a result with no items, or several, is not refused here)."""
        return await self._read(uri, max_bytes, exact=False)

    async def _read(
        self, uri: str, max_bytes: int | None, *, exact: bool
    ) -> tuple[ResourceContent, ...]:
        self._require_resources()
        cap = (
            min(max_bytes, self.limits.max_resource_bytes)
            if max_bytes is not None
            else (self.limits.max_resource_bytes)
        )

        async def operation() -> tuple[ResourceContent, ...]:
            meta = cast("types.RequestParamsMeta | None", trace_meta())
            result = await self._client.read_resource(uri, cache_mode="bypass", meta=meta)
            if exact:
                return (exact_content(result, uri, cap),)
            return tuple(content_of(item, cap) for item in result.contents)

        contents: tuple[ResourceContent, ...] = await self._run(operation, uri=uri)
        return contents

    async def read_directory(self, uri: str) -> tuple[DirectoryChild, ...]:
        """``resources/directory/read``, every page, within the configured bounds."""
        if not self.capability().directory_read:
            raise CapabilityMissing(
                "the server does not declare directoryRead", server=self.label, uri=uri
            )

        async def operation() -> tuple[DirectoryChild, ...]:
            return await walk_directory(partial(self._directory_page, uri), self.limits)

        result: tuple[DirectoryChild, ...] = await self._run(operation, uri=uri)
        return result

    async def _directory_page(
        self, uri: str, cursor: str | None, spent: Budget, children: int
    ) -> dict[str, Any]:
        raw = await self._request(
            DirectoryReadRequest(params=DirectoryReadParams(uri=uri, cursor=cursor))
        )
        return check_directory_page(raw, spent, children, self.limits)

    # --- raw results, for auditing a server (skillward check) ---------------------------

    async def list_skills_raw(self, cursor: str | None, budget: Budget) -> dict[str, Any]:
        """One ``skills/list`` result as received, unchecked but bounded: the walk ``budget``
        holds (pages, entries, files, bytes) against the Limits, as :meth:`list_skills` does.
        Needs only the extension to be declared."""

        async def operation() -> dict[str, Any]:
            take_page(budget, self.limits, "the listing", LIST_PAGINATION)
            return await self._listed(cursor, budget)

        raw: dict[str, Any] = await self._run(operation)
        return raw

    async def get_skill_raw(self, uri: str) -> dict[str, Any]:
        """One ``skills/get`` result as received, unchecked but held to its byte cap."""

        async def operation() -> dict[str, Any]:
            raw = await self._request(SkillsGetRequest(params=SkillsGetParams(uri=uri)))
            check_bytes(raw, "skills/get", self.limits.max_get_response_bytes)
            return raw

        raw: dict[str, Any] = await self._run(operation, uri=uri)
        return raw

    async def read_directory_raw(
        self, uri: str, cursor: str | None, budget: Budget, children: int
    ) -> dict[str, Any]:
        """One ``resources/directory/read`` page as received, unchecked but bounded as
        :meth:`read_directory` bounds its walk (``children`` collected so far). Sent only
        to a server declaring ``directoryRead``."""
        if not self.capability().directory_read:
            raise CapabilityMissing(
                "the server does not declare directoryRead", server=self.label, uri=uri
            )

        async def operation() -> dict[str, Any]:
            take_page(budget, self.limits, "the directory listing", DIR_PAGINATION)
            return await self._directory_page(uri, cursor, budget, children)

        raw: dict[str, Any] = await self._run(operation, uri=uri)
        return raw

    async def list_resources_raw(self, cursor: str | None, budget: Budget) -> dict[str, Any]:
        """One ``resources/list`` result as received, bounded like a listing walk's pages."""
        self._require_resources()

        async def operation() -> dict[str, Any]:
            take_page(budget, self.limits, "resources/list", WIRE_CAPS)
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            raw = await self._request(types.ListResourcesRequest(params=params))
            walk = ("resource listing", self.limits.max_listing_bytes)
            check_bytes(raw, "resources/list", self.limits.max_list_response_bytes, budget, walk)
            return raw

        raw: dict[str, Any] = await self._run(operation)
        return raw


def _check_in_time(handshake: anyio.CancelScope, late: str, label: str) -> None:
    if handshake.cancel_called:  # the deadline fired just as the handshake ended
        raise DeadlineExceeded(late, server=label)
