"""Listening on a local port: an ASGI app served by uvicorn, for ``serve --http``, the
gateway over HTTP and the gateway's approval pages.

One place binds the socket (a port in use is a :class:`UsageError`, not a traceback),
starts uvicorn on it, says the URL once it listens, and stops it gracefully when the
caller is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskStatus
from uvicorn.protocols.http.h11_impl import H11Protocol

from skillward.core.errors import UsageError

__all__ = [
    "LOOPBACK_ADDRESSES",
    "LOOPBACK_HOST",
    "LOOPBACK_ORIGIN",
    "ASGIApp",
    "listen",
    "one_loopback_host",
    "serve_asgi",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The addresses that keep a listener on this machine.
LOOPBACK_ADDRESSES = frozenset({"127.0.0.1", "localhost", "::1"})
_LOOPBACK = r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?"
#: A ``Host`` header, and an ``Origin``, that name this machine's loopback.
LOOPBACK_HOST = re.compile(_LOOPBACK, re.ASCII | re.IGNORECASE)
LOOPBACK_ORIGIN = re.compile(rf"https?://{_LOOPBACK}", re.ASCII | re.IGNORECASE)


def one_loopback_host(hosts: Sequence[bytes]) -> bool:
    """Whether a request's ``Host`` headers are exactly one, naming loopback (a page
    reached through a name that resolves here, DNS rebinding, names something else)."""
    return len(hosts) == 1 and LOOPBACK_HOST.fullmatch(hosts[0].decode("latin-1")) is not None


#: Seconds uvicorn gets to start listening.
_START_TIMEOUT = 30.0


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: a free one), or :class:`UsageError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        bound = socket.create_server((host, port), family=family)
    except OSError as exc:
        # create_server appends the address to strerror; the errno's own text is enough.
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise UsageError(
            f"cannot listen on {host}:{port}: {reason}",
            hint="Choose another port, or port 0 for a free one.",
        ) from None
    # Named TCP: create_server leaves the protocol 0, which the connections accepted on it
    # inherit and asyncio reads as "not TCP", so it never set TCP_NODELAY on them, and a
    # response written in two parts waited for the client's delayed ACK (40 ms a request).
    return socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())


#: Seconds a connection has to send a whole request, headers and body, from when it opens
#: or its last response ended; then it is closed. uvicorn's own keep-alive timer starts
#: only after a response, and any byte stops it: a client that sends part of a request
#: and then nothing, or a byte now and then, would hold its connection (and a file
#: descriptor, and one of the MAX_CONNECTIONS) for ever.
REQUEST_SECONDS = 10.0
#: Connections and requests served at once; past it, uvicorn answers 503.
MAX_CONNECTIONS = 512


class _Bounded(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with ``seconds`` to send each request."""

    seconds = REQUEST_SECONDS
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.seconds, self._too_slow)

    def _too_slow(self) -> None:
        cycle = self.cycle
        # No request came whole in time: no headers, or a body still coming. A request
        # that came whole keeps its connection while it is answered, however long.
        if cycle is None or cycle.response_complete or cycle.more_body:
            self.transport.close()


class _Server(uvicorn.Server):
    """uvicorn's server, leaving signals to the command that runs it: it stops when its
    task is cancelled (``should_exit``, below), never on a signal handler of its own,
    which would take Ctrl-C from the command while it serves and raise it again after."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_asgi(
    app: ASGIApp,
    sock: socket.socket,
    *,
    host: str,
    path: str = "",
    lifespan: bool = True,
    grace: int = 5,
    request_seconds: float = REQUEST_SECONDS,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``sock`` (bound to ``host``) until cancelled.

    Start it with ``TaskGroup.start`` to get its URL (``path`` appended) once it listens.
    Cancelled, open streams get ``grace`` seconds to finish. The socket stays the caller's
    to close. A connection that sends no whole request within ``request_seconds`` of
    opening (or of its last response) is closed.
    """
    config = uvicorn.Config(
        app,
        interface="asgi3",
        http=type("_BoundedHere", (_Bounded,), {"seconds": request_seconds}),
        log_level="warning",
        lifespan="on" if lifespan else "off",
        access_log=False,
        timeout_graceful_shutdown=grace,
        limit_concurrency=MAX_CONNECTIONS,
    )
    http = _Server(config)
    port = sock.getsockname()[1]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"
    stopped = anyio.Event()

    async def run() -> None:
        try:
            # Shielded: cancelling the caller asks uvicorn to stop (should_exit), so it
            # closes its connections and the app's sessions instead of being torn down.
            with anyio.CancelScope(shield=True):
                await http.serve([sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        try:
            with anyio.fail_after(_START_TIMEOUT):
                # uvicorn exposes readiness only as a flag.
                while not http.started:
                    if stopped.is_set():
                        raise UsageError(f"could not start serving at {url}")
                    await anyio.sleep(0.01)
            task_status.started(url)
            await stopped.wait()
        finally:
            http.should_exit = True
