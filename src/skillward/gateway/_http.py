"""``skillward gateway --http``: the gateway's MCP server over streamable HTTP, on loopback.

Any local process, and any web page the person opens, can reach a loopback port, so every
request must carry the bearer token (kept in a 0600 file, never printed), come from a
loopback ``Host`` and, when a browser sends one, a loopback ``Origin`` (DNS rebinding),
and hold a body within ``Limits.max_gateway_request_bytes``, counted as it arrives. A
2026-07-28 request names no session: one carrying an ``Mcp-Session-Id`` is refused.
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from skillward.core.config import Limits
from skillward.core.errors import UsageError
from skillward.edge._listen import (
    LOOPBACK_ADDRESSES,
    LOOPBACK_ORIGIN,
    ASGIApp,
    Receive,
    Scope,
    Send,
    listen,
    one_loopback_host,
    serve_asgi,
)

__all__ = ["ASGIApp", "guard", "serve_http"]

logger = logging.getLogger(__name__)


#: The SDK's own Host and Origin check, kept on behind the guard, allowing what it allows.
_SDK_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=[f"{h}{p}" for h in ("127.0.0.1", "localhost", "[::1]") for p in ("", ":*")],
    allowed_origins=[
        f"{s}://{h}{p}"
        for s in ("http", "https")
        for h in ("127.0.0.1", "localhost", "[::1]")
        for p in ("", ":*")
    ],
)


# --- the guard ----------------------------------------------------------------------


def guard(app: ASGIApp, *, token: str, max_body: int) -> ASGIApp:
    """``app`` behind the gateway's checks, in this order.

    A ``Host`` that is not loopback: 421. Any ``Origin`` that is not loopback: 403 (a
    web page the person opened, DNS rebinding). No ``Authorization: Bearer TOKEN``
    (compared in constant time): 401 with ``WWW-Authenticate: Bearer``. An
    ``Mcp-Session-Id`` on a request the SDK serves at 2026-07-28 (its
    ``MCP-Protocol-Version`` is not a handshake version): 404, as the SDK answers an
    unknown session at 2025-11-25; that era has no sessions, so no ID names one. A body
    over ``max_body``: 413, counted as it arrives and refused before the rest is read
    (the SDK's ``RequestBodyLimitMiddleware``). Refusals quote nothing from the request.
    Lifespan events pass; WebSockets are closed.
    """
    if not token:
        raise ValueError("the gateway needs a token")
    expected = token.encode("latin-1")
    limited = RequestBodyLimitMiddleware(app, max_body)

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        hosts, origins, authorizations, versions, sessions = [], [], [], [], []
        for name, value in scope.get("headers", ()):
            if name == b"host":
                hosts.append(value)
            elif name == b"origin":
                origins.append(value)
            elif name == b"authorization":
                authorizations.append(value)
            elif name == b"mcp-protocol-version":
                versions.append(value)
            elif name == b"mcp-session-id":
                sessions.append(value)
        if not one_loopback_host(hosts):
            await _refuse(send, 421, "the Host header must name this machine's loopback")
        elif not all(LOOPBACK_ORIGIN.fullmatch(o.decode("latin-1")) for o in origins):
            await _refuse(send, 403, "requests from web pages other than loopback are refused")
        elif len(authorizations) != 1 or not _bearer_matches(authorizations[0], expected):
            await _refuse(
                send,
                401,
                "this gateway needs Authorization: Bearer and its token",
                [(b"www-authenticate", b"Bearer")],
            )
        elif sessions and _modern(versions):
            await _refuse(
                send,
                404,
                "Session not found: a 2026-07-28 request carries no Mcp-Session-Id",
                jsonrpc=True,
            )
        else:
            await limited(scope, receive, send)

    return guarded


def _modern(versions: list[bytes]) -> bool:
    """Whether the SDK serves the request at 2026-07-28, as its session manager routes it:
    by the first ``MCP-Protocol-Version``, when that is not a handshake version."""
    return bool(versions) and versions[0].decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS


def _bearer_matches(value: bytes, expected: bytes) -> bool:
    scheme, _, credentials = value.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), expected)


async def _refuse(
    send: Send,
    status: int,
    text: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    jsonrpc: bool = False,
) -> None:
    """Answer ``status`` saying ``text``: as plain text, or (``jsonrpc``, for a refusal
    an MCP client reads) as a JSON-RPC error with no request id."""
    logger.info("gateway refused an HTTP request (%d): %s", status, text)
    if jsonrpc:
        error = {"code": INVALID_REQUEST, "message": text}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode("ascii")
        content_type = b"application/json"
    else:
        body, content_type = f"{text}\n".encode("ascii"), b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode("ascii")),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- serving --------------------------------------------------------------------------


async def serve_http(
    server: Server[Any],
    *,
    host: str,
    port: int,
    token: str,
    on_ready: Callable[[str], None] | None = None,
    limits: Limits | None = None,
) -> None:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` behind :func:`guard` until cancelled.

    The SDK's streamable HTTP transport, stateful: each client's session is its own.
    ``host`` must be loopback (``127.0.0.1``, ``::1`` or ``localhost``); ``port`` 0 takes a
    free one. ``on_ready`` gets the URL once the port is listening. Cancelled, open
    streams get a few seconds to finish before it returns. Raises :class:`UsageError`
    when the address cannot be listened on.
    """
    if host.lower() not in LOOPBACK_ADDRESSES:
        raise UsageError(
            f"the gateway listens on loopback only, not {host!r}: its token travels in clear text",
            hint="Use --http 127.0.0.1:PORT.",
        )
    limits = limits or Limits()
    max_body = limits.max_gateway_request_bytes
    sock = listen(host, port)
    try:
        app = server.streamable_http_app(
            streamable_http_path="/mcp",
            host=host,
            transport_security=_SDK_SECURITY,
            max_request_body_size=max_body,
        )
        guarded = guard(app, token=token, max_body=max_body)
        async with anyio.create_task_group() as group:
            url = await group.start(
                functools.partial(serve_asgi, guarded, sock, host=host, path="/mcp")
            )
            if on_ready is not None:
                on_ready(url)
    finally:
        sock.close()
