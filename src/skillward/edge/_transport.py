"""The client edge's transports: how JSON-RPC messages travel to and from a server.

The SDK's own transports read a whole message, without a cap, and parse it before anyone
can look at it; its stdio transport also makes whoever closes a session wait for the
server's process to exit. These replace or wrap them:

* **stdio**: the server's process (``_process``: in a session of its own, its stderr in
  its log, run and stopped in a task of a :class:`~skillward.edge._process.Reaper`, so closing
  a session never waits for it) is started here, or started earlier and adopted. Each
  line it writes is refused past ``Limits.message_bytes`` while it is read, and past
  ``Limits.max_message_nodes`` before it is parsed; a refused line ends the connection.
* **streamable HTTP**: the SDK's transport, on an HTTP client that holds every response
  body, and every server-sent event, to the same caps before the SDK reads it. A refused
  response fails the request it answers.

Over either, the server's own requests are held to ``Limits.max_server_requests``
unanswered (:class:`Unanswered`); one more ends the connection.

Either way the refusal is recorded in :class:`Faults`, so the client edge raises it as
the :class:`~skillward.core.errors.ResponseTooLarge` it is, naming the server.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Self

import anyio
import httpx2
import mcp_types as types
import pydantic_core
from anyio.abc import ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from skillward.core.config import Limits
from skillward.core.errors import InvalidResponse, ResponseTooLarge, SkillwardError
from skillward.edge._paging import Measured
from skillward.edge._process import Child, Reaper, spawn
from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport

__all__ = ["AfterSend", "Faults", "Reaper", "Refused", "http", "oversized", "read_lines", "stdio"]

#: The SDK's pair of streams: messages from the server, messages to it.
Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], WriteStream[SessionMessage]]

# --- refusals -----------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\[skillward refusal ([0-9a-f]{16})\]")
#: Refusals remembered per connection, for the requests they fail.
_KEPT = 64


class Refused(httpx2.SSEError, httpx2.StreamError):
    """A response refused at a cap while the SDK reads it.

    Both an SSEError and a StreamError: each path of the SDK that reads a body then
    fails the one request it answers, rather than the whole transport.
    """

    def __init__(self, error: SkillwardError, text: str) -> None:
        super().__init__(text)
        self.error = error


def _fresh(error: SkillwardError) -> SkillwardError:
    return type(error)(error.message)


class Faults:
    """What the transport refused, so the client edge can raise it as what it is.

    A refused HTTP response reaches the waiting request as an SDK error whose text quotes
    a token only this object knows, so a server cannot forge one; a refused stdio line
    ends the connection, and is kept in :attr:`ended`.
    """

    def __init__(self) -> None:
        self._by_token: OrderedDict[str, SkillwardError] = OrderedDict()
        #: Why the transport ended the connection, if it did.
        self.ended: SkillwardError | None = None

    def refuse(self, error: SkillwardError) -> Refused:
        """The exception to raise, inside the SDK, for ``error``."""
        token = secrets.token_hex(8)
        self._by_token[token] = error
        while len(self._by_token) > _KEPT:
            self._by_token.popitem(last=False)
        return Refused(error, f"{error.message} [skillward refusal {token}]")

    def end(self, error: SkillwardError) -> None:
        if self.ended is None:
            self.ended = error

    def explain(self, error: BaseException) -> SkillwardError | None:
        """The refusal behind ``error`` (an SDK error, or a :class:`Refused`), or None."""
        if isinstance(error, Refused):
            return _fresh(error.error)
        if self.ended is not None:
            return _fresh(self.ended)
        for token in _TOKEN_RE.findall(str(error)):
            if token in self._by_token:
                return _fresh(self._by_token[token])
        return None


# Linear, each of them: the escapes first (so no quote inside a string is left), then the
# strings. One pattern for both, "[^"\\]*(?:\\.[^"\\]*)*", is quadratic on a string that
# never closes and holds many escapes, and it ran on the event loop.
_ESCAPE_RE = re.compile(rb"\\.", re.DOTALL)
_STRING_RE = re.compile(rb'"[^"]*"')


def _structure(data: bytes) -> int:
    # Every member of a container but the first follows a comma; containers open with one
    # of the brackets. Scalars inside strings are counted too, so this is an upper bound.
    return data.count(b",") + data.count(b"[") + data.count(b"{")


def _nodes(data: bytes, room: int) -> int:
    """About how many JSON values ``data`` holds: the ``[``, ``{`` and ``,`` outside its
    strings. Counted over everything first (one fast pass, an upper bound); only when that
    passes ``room`` are strings taken out for the exact count.

    JSON strings never hold a raw line break, so counting line by line adds up.
    """
    rough = _structure(data)
    if rough <= room:
        return rough
    return _structure(_STRING_RE.sub(b"", _ESCAPE_RE.sub(b"", data)))


def _too_large(limits: Limits) -> ResponseTooLarge:
    cap = limits.message_bytes
    return ResponseTooLarge(f"the server sent a message larger than {cap} bytes")


def _too_many(limits: Limits) -> ResponseTooLarge:
    return ResponseTooLarge(
        f"the server sent a message of more than {limits.max_message_nodes} JSON values"
    )


def oversized(data: bytes, limits: Limits) -> SkillwardError | None:
    """Why one whole message, as received, must not be parsed; None if it may be."""
    if len(data) > limits.message_bytes:
        return _too_large(limits)
    if _nodes(data, limits.max_message_nodes) > limits.max_message_nodes:
        return _too_many(limits)
    return None


# --- stdio --------------------------------------------------------------------------------

#: How long the end of a server's stdout waits for its stderr to reach the log.
_LOG_SECONDS = 2.0


class Unanswered:
    """The server's requests the client has not answered yet, by id, held to
    ``Limits.max_server_requests``: added as they are read; an answer being written still
    counts until it is written; a request the server cancels counts no more, unless its
    answer is being written already (the SDK ignores such a cancel, and writes it)."""

    __slots__ = ("_ids", "_limit", "_writing")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._ids: set[str | int] = set()
        self._writing: set[str | int] = set()

    def asked(self, request_id: str | int) -> SkillwardError | None:
        """A request read; why the connection must end, if it is one too many or uses
        the id of one unanswered (which MCP forbids: the SDK would start a task for it
        all the same, so counted once, one id could stand for any number)."""
        if request_id in self._ids or request_id in self._writing:
            return InvalidResponse(
                "the server reused the id of a request the client has not answered yet"
            )
        self._ids.add(request_id)
        if len(self._ids) + len(self._writing) <= self._limit:
            return None
        return InvalidResponse(
            f"the server sent more than {self._limit} requests the client has not "
            "answered yet (it reads none of the answers)"
        )

    def writing(self, request_id: str | int) -> None:
        """Its answer is being written (counted, even if a cancel was read meanwhile)."""
        self._ids.discard(request_id)
        self._writing.add(request_id)

    def answered(self, request_id: str | int) -> None:
        """Its answer written (or the write given up)."""
        self._writing.discard(request_id)
        self._ids.discard(request_id)

    def cancelled(self, request_id: str | int) -> None:
        """The server called it off: no answer is due, unless one is being written."""
        self._ids.discard(request_id)


async def read_lines(
    stdout: AsyncIterable[bytes],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    limits: Limits,
    faults: Faults,
    drained: anyio.Event,
    *,
    unanswered: Unanswered | None = None,
) -> None:
    """Each line the server writes, as a message for the session. A line past the caps
    ends the stream (recorded in ``faults``) before it is whole or parsed, and so does a
    request past ``unanswered``'s bound. At the end of the stream, the server's stderr
    gets a moment to reach its log (``drained``), so whoever hears of the end can show
    why."""
    cap = limits.message_bytes
    parts: list[bytes] = []
    held = 0
    try:
        async with sink:
            async for chunk in stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    held += end - start
                    if held > cap:
                        faults.end(_too_large(limits))
                        return
                    parts.append(chunk[start:end])
                    line = b"".join(parts)
                    parts.clear()
                    held = 0
                    start = end + 1
                    if not line.strip():
                        continue
                    message = _parse(line, limits, faults)
                    if message is None:
                        return
                    if unanswered is not None and isinstance(message, SessionMessage):
                        refused = _count(message.message, unanswered)
                        if refused is not None:
                            faults.end(refused)
                            return
                    del line
                    await sink.send(message)
                held += len(chunk) - start
                if held > cap:
                    faults.end(_too_large(limits))
                    return
                parts.append(chunk[start:] if start else chunk)
            with anyio.move_on_after(_LOG_SECONDS):
                await drained.wait()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return  # the session is gone, or the pipe broke: either way the stream ends


def _count(message: types.JSONRPCMessage, unanswered: Unanswered) -> SkillwardError | None:
    """Keep ``unanswered`` to what the server asked (a request) or called off (its
    ``notifications/cancelled``, after which no answer is sent)."""
    if isinstance(message, types.JSONRPCRequest):
        return unanswered.asked(message.id)
    if isinstance(message, types.JSONRPCNotification) and message.method == _CANCELLED:
        cancelled = (message.params or {}).get("requestId")
        if isinstance(cancelled, str | int):
            unanswered.cancelled(cancelled)
    return None


_CANCELLED = "notifications/cancelled"


def _answer_id(message: types.JSONRPCMessage) -> str | int | None:
    """The id of the server's request ``message`` answers, if it is an answer."""
    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        return message.id
    return None


def _parse(line: bytes, limits: Limits, faults: Faults) -> SessionMessage | Exception | None:
    """One line as a message; a parse error as a value (the session hears of it, as from
    the SDK's own transport); None when the line is refused, which ends the stream."""
    refused = oversized(line, limits)
    if refused is not None:
        faults.end(refused)
        return None
    try:
        # Parsed straight from bytes: no decoded copy, and pydantic-core's parser keeps
        # far less than the SDK's validate_json of the same text.
        data = pydantic_core.from_json(line)
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValueError as exc:
        return exc
    if isinstance(message, types.JSONRPCResponse):
        # Its size, known here: the client's bounds on the result need not measure it.
        message.result = Measured(message.result, len(line))
    return SessionMessage(message)


async def _read_stdout(
    child: Child,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    limits: Limits,
    faults: Faults,
    unanswered: Unanswered,
) -> None:
    """:func:`read_lines` over the server's stdout, while this task alone reads it: once
    it ends, the process's drain may (``Child.reading``)."""
    with child.reading() as stdout:
        if stdout is None:  # the process is being stopped already
            sink.close()
            return
        await read_lines(stdout, sink, limits, faults, child.drained, unanswered=unanswered)


#: What the task sending a request runs once the request is written (see :class:`AfterSend`).
_AFTER_SEND: ContextVar[AfterSend | None] = ContextVar("skillward_after_send", default=None)


class AfterSend:
    """Work to run once, as soon as the request the current task sends is written to the
    server, so that it overlaps the server's work on it; or, where the transport cannot
    tell (HTTP, in memory) or nothing was written, when the request ends. ``call`` must
    not raise: it runs inside the SDK's send."""

    __slots__ = ("_call",)

    def __init__(self, call: Callable[[], None]) -> None:
        self._call: Callable[[], None] | None = call

    def __call__(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call()

    @contextmanager
    def sending(self) -> Iterator[None]:
        """While the block runs, the stdio transport runs this after the task's first
        write; at the end of the block it runs if it has not."""
        token = _AFTER_SEND.set(self)
        try:
            yield
        finally:
            _AFTER_SEND.reset(token)
            self()


class _ToChild:
    """The SDK's write stream to a server's stdin. Each message is written, whole, by the
    task that sends it: no task in between, so a request is on the pipe before its
    sender first waits (and :class:`AfterSend` work overlaps the server's)."""

    def __init__(
        self,
        stdin: ByteSendStream,
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        unanswered: Unanswered,
    ) -> None:
        self._stdin = stdin
        self._incoming = incoming
        self._unanswered = unanswered
        self.closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        message = item.message
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
        answering = _answer_id(message)
        if answering is not None:
            self._unanswered.writing(answering)  # before any wait: no cancel comes between
        try:
            await self._stdin.send(text.encode("utf-8") + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as error:
            # The server stopped reading: end the session rather than leave requests waiting.
            self._incoming.close()
            raise anyio.BrokenResourceError from error
        finally:
            if answering is not None:
                self._unanswered.answered(answering)
        after = _AFTER_SEND.get()
        if after is not None:
            after()

    async def aclose(self) -> None:
        self.closed = True  # the process's stdin is closed when it is released

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _pipes(child: Child, limits: Limits, faults: Faults) -> AsyncIterator[Streams]:
    incoming_sink, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    stdin = child.process.stdin
    assert stdin is not None
    unanswered = Unanswered(limits.max_server_requests)
    outgoing = _ToChild(stdin, incoming_sink, unanswered)
    async with anyio.create_task_group() as group:
        group.start_soon(_read_stdout, child, incoming_sink, limits, faults, unanswered)
        try:
            yield incoming, outgoing
        finally:
            group.cancel_scope.cancel()
            outgoing.closed = True
            for stream in (incoming, incoming_sink):
                stream.close()


@asynccontextmanager
async def stdio(
    spec: ServerSpec,
    transport: StdioTransport,
    *,
    limits: Limits,
    faults: Faults,
    reaper: Reaper | None,
    child: Child | None = None,
) -> AsyncIterator[Streams]:
    """Start ``spec``'s server (or adopt ``child``, its process started already) and yield
    the session's streams to it.

    The process runs in a task of ``reaper``; when the block ends it is released there to
    be stopped. Without a reaper, leaving the block waits for that (and, when cancelled,
    kills the server at once).
    """
    async with AsyncExitStack() as stack:
        if child is None:
            if reaper is None:
                reaper = Reaper(await stack.enter_async_context(anyio.create_task_group()))
            child = await spawn(spec, transport, limits=limits, reaper=reaper)
        polite = False
        try:
            async with _pipes(child, limits, faults) as streams:
                yield streams
            polite = faults.ended is None
        finally:
            child.release(polite=polite)


# --- streamable HTTP ----------------------------------------------------------------------

_EOL_RE = re.compile(rb"\r\n|\r|\n")
#: Lines shorter than this are passed on together, one chunk at a time.
_BATCH = 64 * 1024


class _Held(httpx2.AsyncByteStream):
    """A response body read through skillward before the SDK sees it; closing it closes
    the body it holds."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    @property
    def elapsed(self) -> Any:
        return getattr(self._inner, "elapsed", None)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(_Held):
    """A response body that is one message: held to the caps, then passed on whole."""

    def __init__(self, inner: httpx2.AsyncByteStream, size: int | None, caps: _Caps) -> None:
        super().__init__(inner)
        self._size = size
        self._caps = caps

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limits = self._caps.limits
        if self._size is not None and self._size > limits.message_bytes:
            raise self._caps.faults.refuse(_too_large(limits))  # before reading any of it
        parts: list[bytes] = []
        held = 0
        async for chunk in self._inner:
            held += len(chunk)
            if held > limits.message_bytes:
                raise self._caps.faults.refuse(_too_large(limits))
            parts.append(chunk)
        body = b"".join(parts)
        parts.clear()
        refused = oversized(body, limits)
        if refused is not None:
            raise self._caps.faults.refuse(refused)
        if body:
            yield body


class _CappedEvents(_Held):
    """A server-sent event stream, passed on line by line, each event held to the caps
    before a line that would take it past one is passed on.

    Every non-ASCII character of a ``data`` line is passed on as its JSON escape, which
    means the same inside a JSON string (and there is nowhere else it may be): the SDK
    keeps several decoded copies of an event, and Python holds ASCII text in one byte a
    character, not up to four.
    """

    def __init__(self, inner: httpx2.AsyncByteStream, caps: _Caps) -> None:
        super().__init__(inner)
        self._caps = caps

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limits = self._caps.limits
        cap, most = limits.message_bytes, limits.max_message_nodes
        partial: list[bytes] = []
        pending = size = nodes = 0  # the unfinished line; the event so far
        after_cr = False
        async for chunk in self._inner:
            data = chunk[1:] if after_cr and chunk.startswith(b"\n") else chunk
            after_cr = data.endswith(b"\r")
            lines = _EOL_RE.split(data)
            rest = lines.pop()
            out: list[bytes] = []
            for index, line in enumerate(lines):
                if index == 0 and partial:
                    line = b"".join([*partial, line])  # noqa: PLW2901
                    partial.clear()
                    pending = 0
                if not line:  # a blank line ends the event
                    size = nodes = 0
                    out.append(b"\n")
                    continue
                if line.startswith(b"retry:"):
                    line = _retry_at_least(line)  # noqa: PLW2901
                size += len(line) + 1
                if size > cap:
                    raise self._caps.faults.refuse(_too_large(limits))
                nodes += _nodes(line, most - nodes)
                if nodes > most:
                    raise self._caps.faults.refuse(_too_many(limits))
                if not line.isascii() and line.startswith(b"data:"):
                    try:
                        line = _NON_ASCII_RE.sub(_json_escape, line)  # noqa: PLW2901
                    except UnicodeDecodeError:
                        # Escaped, each bad byte would be six: past what the caps allow for.
                        raise self._caps.faults.refuse(_not_utf8()) from None
                if len(line) < _BATCH:
                    out += (line, b"\n")
                    continue
                if out:  # what came before, then this line, without copying it again
                    yield b"".join(out)
                    out.clear()
                yield line
                out.append(b"\n")
            line = b""  # not kept while the next chunk is awaited
            if rest:
                partial.append(rest)
                pending += len(rest)
                if size + pending > cap:
                    raise self._caps.faults.refuse(_too_large(limits))
            if out:
                yield b"".join(out)
        if partial:  # an unfinished last line, passed on as it came (a retry held to it)
            last = b"".join(partial)
            yield _retry_at_least(last) if last.startswith(b"retry:") else last


#: The least reconnection delay a server may set (``retry:``, in milliseconds): the SDK
#: opens a stream again after the delay each time one ends, so ``retry: 0`` from a server
#: that ends every stream at once had an idle client open them without end, a core busy.
_MIN_RETRY_MS = 1000


def _retry_at_least(line: bytes) -> bytes:
    """A ``retry:`` field line, its delay raised to :data:`_MIN_RETRY_MS` if below it (one
    that is not a number is passed on: the SSE parser ignores it)."""
    value = line[len(b"retry:") :]
    value = value.removeprefix(b" ")
    if not value.isdigit():
        return line
    digits = value.lstrip(b"0")
    if len(digits) > len(str(_MIN_RETRY_MS)) or int(digits or b"0") >= _MIN_RETRY_MS:
        return line
    return b"retry: %d" % _MIN_RETRY_MS


#: A run of bytes of non-ASCII UTF-8 characters (every byte of which is non-ASCII).
_NON_ASCII_RE = re.compile(rb"[\x80-\xff]+")


def _json_escape(run: re.Match[bytes]) -> bytes:
    # Strict: every byte of a character is in one run, so a run that does not decode is
    # not UTF-8. What does is at most three times its length escaped.
    text = run.group().decode("utf-8")
    return json.dumps(text).encode("ascii")[1:-1]


def _not_utf8() -> InvalidResponse:
    # JSON text is UTF-8 (RFC 8259): an event that is not carries no message.
    return InvalidResponse("the server sent an event that is not UTF-8")


@dataclass(frozen=True)
class _Caps:
    limits: Limits
    faults: Faults

    async def __call__(self, response: httpx2.Response) -> None:
        """Put every response body behind the caps before anyone reads it."""
        inner = response.stream
        assert isinstance(inner, httpx2.AsyncByteStream)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        kind = response.headers.get("content-type", "").lower()
        if encoding not in {"", "identity"}:
            # Decoded, it could grow past any cap: none was asked for, none is taken.
            refusal = self.faults.refuse(
                InvalidResponse(f"the server sent a {encoding[:40]!r}-encoded response unasked")
            )
            response.stream = _Refusing(inner, refusal)
        elif kind.startswith("text/event-stream"):
            response.stream = _CappedEvents(inner, self)
        else:
            length = response.headers.get("content-length", "")
            size = int(length) if length.isdigit() else None
            response.stream = _Capped(inner, size, self)


class _Refusing(_Held):
    def __init__(self, inner: httpx2.AsyncByteStream, refusal: Refused) -> None:
        super().__init__(inner)
        self._refusal = refusal

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise self._refusal
        yield b""  # pragma: no cover - makes this an async generator


@asynccontextmanager
async def http(transport: HttpTransport, *, limits: Limits, faults: Faults) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport, sending the configured headers, on an HTTP
    client that holds every response to the caps."""
    headers = httpx2.Headers(
        {name: value.get_secret_value() for name, value in transport.headers.items()}
    )
    headers["Accept-Encoding"] = "identity"
    async with (
        httpx2.AsyncClient(
            headers=headers,
            # The SDK's own defaults: servers may hold a response stream open.
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            event_hooks={"response": [_Caps(limits, faults)]},
        ) as client,
        streamable_http_client(
            transport.url,
            http_client=client,
            # The caps above hold each event first; escaped, it can be three times as long.
            max_sse_event_size=3 * limits.message_bytes + 2,
        ) as (incoming, outgoing),
    ):
        unanswered = Unanswered(limits.max_server_requests)
        yield _Counted(incoming, unanswered, faults), _Answers(outgoing, unanswered)


class _Counted:
    """The SDK's stream of what an HTTP server sent, each of its requests counted
    (:class:`Unanswered`): one too many ends the stream, and so the connection, as a line
    over stdio does (every other item passed on as it is, its sender's context with it)."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], unanswered: Unanswered, faults: Faults
    ) -> None:
        self._inner = inner
        self._unanswered = unanswered
        self._faults = faults
        self._ended = False

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        if self._ended:
            raise anyio.EndOfStream
        item = await self._inner.receive()
        if isinstance(item, SessionMessage):
            refused = _count(item.message, self._unanswered)
            if refused is not None:
                self._ended = True
                self._faults.end(refused)
                raise anyio.EndOfStream
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended = True
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Answers:
    """The SDK's stream of what goes to an HTTP server: an answer to one of the server's
    requests is counted off once the SDK's transport took it (after the POST before it)."""

    def __init__(self, inner: WriteStream[SessionMessage], unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: SessionMessage, /) -> None:
        answering = _answer_id(item.message)
        if answering is None:
            await self._inner.send(item)
            return
        self._unanswered.writing(answering)  # before any wait: no cancel comes between
        try:
            await self._inner.send(item)
        finally:
            self._unanswered.answered(answering)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
