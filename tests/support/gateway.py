"""A gateway over real upstream servers, and real MCP clients talking to it.

The upstreams are ``skillward serve``'s server over a tree whose files a test can change
(``gated.serve``) and, where a test wants one, the hostile server; the gateway is the
real one; the client is the ``mcp`` SDK's ``Client`` in memory (``mode`` picks the
protocol era), with an elicitation callback that answers as scripted and records what
it was asked.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from skillward.cache.seam import ContentCache
from skillward.core.config import Limits
from skillward.edge.servers import ServerSpec
from skillward.gateway._http import serve_http
from skillward.gateway._page import ApprovalPages
from skillward.gateway._sessions import BookFactory, Sessions
from skillward.gateway.server import Gateway
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust.approvals import ApprovalStorage
from skillward.trust.audit import AuditTrail
from skillward.trust.book import ApprovalBook
from skillward.trust.policy import Policy
from skillward.trust.tokens import ApprovalTokens

MODES = ("auto", "legacy")


#: An MCP client's first request, as raw JSON-RPC (for tests that speak to a server
#: without an SDK client).
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@dataclass
class Asker:
    """An elicitation callback: answers each question with the next scripted reply
    (``(action, content)``), and records the messages it was shown."""

    replies: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.messages.append(params.message)
        self.schemas.append(dict(params.requested_schema))
        action, content = self.replies.pop(0) if self.replies else ("decline", None)
        return types.ElicitResult(action=action, content=content)


@dataclass
class Browser:
    """The person at the page: reads it, then posts ``decision`` with its nonce (or what
    ``form`` says instead, "NONCE" standing for the page's); what the client answers the
    elicitation with is ``action``."""

    decision: str = "once"
    action: str = "accept"
    form: dict[str, str] | None = None
    pages: list[httpx2.Response] = field(default_factory=list)
    posts: list[httpx2.Response] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    #: What each elicitation said, beside its URL.
    messages: list[str] = field(default_factory=list)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        self.urls.append(params.url)
        self.messages.append(params.message)
        if self.action != "accept":
            return types.ElicitResult(action=self.action)
        async with httpx2.AsyncClient() as http:
            page = await http.get(params.url)
            self.pages.append(page)
            found = re.search(r"name='nonce' value='([^']+)'", page.text)
            assert found is not None
            nonce = found.group(1)
            form = {"nonce": nonce, "decision": self.decision}
            if self.form is not None:  # "NONCE" stands for the page's own
                form = {k: nonce if v == "NONCE" else v for k, v in self.form.items()}
            self.posts.append(await http.post(params.url, data=form, headers=_origin(page)))
        return types.ElicitResult(action="accept")


def _origin(page: httpx2.Response) -> dict[str, str]:
    """The Origin a browser sends with the page's form (Fetch, "serializing a request
    origin"): ``null`` under the page's referrer policy ``no-referrer``, else its own."""
    if page.headers.get("referrer-policy", "").strip().lower() == "no-referrer":
        return {"Origin": "null"}
    url = page.url
    return {"Origin": f"{url.scheme}://{url.netloc.decode('ascii')}"}


def choose(decision: str) -> tuple[str, dict[str, Any]]:
    return ("accept", {"decision": decision})


def by_client_name(ctx: ServerRequestContext[Any, Any]) -> str:
    """Sessions keyed by the client's name: lets one test run several in-memory clients
    (over HTTP the transport's session id keys them)."""
    params = ctx.session.client_params
    return "memory:" + (params.client_info.name if params is not None else "")


@asynccontextmanager
async def gateway_over(
    specs: Sequence[ServerSpec],
    *,
    store: ApprovalStorage | None = None,
    policy: Policy | None = None,
    audit: AuditTrail | None = None,
    limits: Limits | None = None,
    tokens: ApprovalTokens | None = None,
    key: Any = by_client_name,
    sessions: int = 256,
    pages: ApprovalPages | None = None,
    cache: ContentCache | None = None,
    books: BookFactory = ApprovalBook,
) -> AsyncIterator[Gateway]:
    config = HostConfig(local_dirs=(), limits=limits or Limits())
    async with SkillHost(config=config, policy=policy, audit=audit, cache=cache) as host:
        for spec in specs:
            await host.connect(spec)
        held = Sessions(host, store=store, limit=sessions, books=books)
        yield Gateway(host, sessions=held, key=key, tokens=tokens, pages=pages)


@asynccontextmanager
async def client_of(
    gateway: Gateway,
    mode: str,
    asker: Callable[..., Any] | None = None,
    *,
    name: str = "client",
    on_message: Any = None,
) -> AsyncIterator[Client]:
    options: dict[str, Any] = {
        "mode": mode,
        "client_info": types.Implementation(name=name, version="1"),
    }
    if asker is not None:
        options["elicitation_callback"] = asker
    if on_message is not None:
        options["message_handler"] = on_message
    async with Client(gateway.server, **options) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    (item,) = result.content
    assert isinstance(item, types.TextContent)
    return item.text


def meta(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    data = result.meta["skillward"]
    assert isinstance(data, dict)
    return data


@asynccontextmanager
async def over_http(
    server: Server[Any], *, token: str, limits: Limits | None = None
) -> AsyncIterator[str]:
    """``server`` behind ``serve_http`` on a free loopback port; yields its URL."""
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    serve = functools.partial(
        serve_http, server, host="127.0.0.1", port=0, token=token, on_ready=on_ready, limits=limits
    )
    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        with anyio.fail_after(30):
            await ready.wait()
        try:
            yield urls[0]
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def sdk_over_http(
    url: str, *, mode: str, token: str, name: str = "sdk", asker: Callable[..., Any] | None = None
) -> AsyncIterator[Client]:
    """The SDK's client at ``url`` with the bearer token (and ``asker`` as its elicitation
    callback, when given)."""
    options: dict[str, Any] = {"elicitation_callback": asker} if asker is not None else {}
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            client_info=types.Implementation(name=name, version="1"),
            **options,
        ) as client,
    ):
        yield client
