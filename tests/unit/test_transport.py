"""The transports' caps, piece by piece: what is refused before it is parsed, whatever
the chunking, and what passes arrives exactly as sent."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from skillward.core.config import Limits
from skillward.core.errors import InvalidResponse, ResponseTooLarge
from skillward.edge._transport import (
    Faults,
    Refused,
    Unanswered,
    _Caps,
    _nodes,
    oversized,
    read_lines,
)

pytestmark = pytest.mark.threat("T43")

# Small caps, so that tests cross them cheaply.
SMALL = Limits(max_resource_bytes=1024, max_message_bytes=8192, max_message_nodes=64)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def counted(value: Any) -> int:
    """What the value count should be for ``value``: each container, and each of its
    members after the first."""
    if isinstance(value, list):
        return 1 + max(len(value) - 1, 0) + sum(counted(v) for v in value)
    if isinstance(value, dict):
        return 1 + max(len(value) - 1, 0) + sum(counted(v) for v in value.values())
    return 0


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


# --- counting values ---------------------------------------------------------------------


@given(json_values, st.booleans())
def test_values_are_counted_outside_strings_exactly(value: Any, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    # Room 0 forces the exact count (strings taken out first).
    assert _nodes(data, 0) == counted(value)
    # The fast count is an upper bound, used only while it is under the room.
    assert _nodes(data, 10**9) >= counted(value)


def test_commas_and_brackets_inside_strings_are_not_values() -> None:
    text = '[{,"\\"[' * 500
    data = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": text}}).encode()
    assert oversized(data, SMALL) is None


@pytest.mark.threat("T43")
@pytest.mark.parametrize(
    "tail",
    [b'"' + b'\\"' * 2000, b'"' + b'\\\\\\"' * 2000, b'""' * 2000, b'"x",' * 2000 + b'"'],
    ids=["unclosed-escaped-quotes", "escaped-backslashes", "empty-strings", "one-unclosed"],
)
def test_strings_are_taken_out_in_one_pass_whatever_they_hold(tail: bytes) -> None:
    # Values enough to need the exact count, then strings that once took the square of
    # their length to take out (bench/bench_message_caps.py times them).
    data = b"[" + b"0," * 100 + tail
    assert _nodes(data, 0) == 101 + tail.count(b'",')


def test_many_tiny_values_are_refused_though_the_message_is_small() -> None:
    data = b'{"x": [' + b",".join([b"[]"] * 100) + b"]}"
    assert len(data) < SMALL.message_bytes
    refused = oversized(data, SMALL)
    assert isinstance(refused, ResponseTooLarge)
    assert "more than 64 JSON values" in refused.message


# --- the stdio line reader ---------------------------------------------------------------


async def read_all(
    chunks: list[bytes], limits: Limits, *, close: bool = True
) -> tuple[list[SessionMessage | Exception], Faults]:
    """What the reader delivers from a server writing ``chunks`` (then closing its end,
    if ``close``), and what it refused."""
    stdout_send, stdout = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
    sink, delivered = anyio.create_memory_object_stream[SessionMessage | Exception](1000)
    faults = Faults()
    drained = anyio.Event()
    drained.set()
    async with stdout_send, stdout, delivered:
        for chunk in chunks:
            stdout_send.send_nowait(chunk)
        if close:
            stdout_send.close()
        with anyio.fail_after(5):
            await read_lines(stdout, sink, limits, faults, drained)
        return [item async for item in delivered], faults


def response(index: int, text: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": index, "result": {"text": text}}
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


@settings(max_examples=60)
@given(st.lists(st.text(max_size=200), max_size=8), st.lists(st.integers(0, 10**6), max_size=12))
def test_any_messages_in_any_chunks_arrive_whole_and_in_order(
    texts: list[str], cuts: list[int]
) -> None:
    stream = b"".join(response(i, text) for i, text in enumerate(texts))
    delivered, faults = anyio.run(read_all, pieces(stream, cuts), SMALL)
    assert faults.ended is None
    got = []
    for item in delivered:
        assert isinstance(item, SessionMessage)
        assert isinstance(item.message, types.JSONRPCResponse)
        got.append((item.message.id, item.message.result))
    assert got == [(i, {"text": text}) for i, text in enumerate(texts)]


@pytest.mark.anyio
async def test_a_line_past_the_byte_cap_ends_the_stream_before_it_is_whole() -> None:
    # The server never finishes the line and never closes the pipe: the reader stops itself.
    endless = [b"x" * 4096] * 3
    delivered, faults = await read_all(endless, SMALL, close=False)
    assert delivered == []
    assert isinstance(faults.ended, ResponseTooLarge)
    assert "larger than 8192 bytes" in faults.ended.message


@pytest.mark.anyio
async def test_a_line_of_too_many_values_ends_the_stream_before_it_is_parsed() -> None:
    wide = b'{"jsonrpc": "2.0", "id": 1, "result": {"x": [' + b",".join([b"[]"] * 100) + b"]}}\n"
    delivered, faults = await read_all([response(0, "first"), wide, response(2, "after")], SMALL)
    assert len(delivered) == 1  # what came before; nothing after
    assert isinstance(faults.ended, ResponseTooLarge)
    assert faults.explain(RuntimeError("connection closed")) is not None


@pytest.mark.anyio
async def test_a_line_that_is_not_json_is_handed_on_as_an_error_value() -> None:
    delivered, faults = await read_all([b"not json\n", response(1, "ok")], SMALL)
    assert isinstance(delivered[0], ValueError)
    assert isinstance(delivered[1], SessionMessage)
    assert faults.ended is None


# --- HTTP bodies and server-sent events --------------------------------------------------


async def fetch(
    body: list[bytes], headers: dict[str, str], limits: Limits, faults: Faults
) -> list[Any]:
    """Each server-sent event's data parsed as JSON, or the whole body's, as the SDK would."""

    async def content() -> AsyncIterator[bytes]:
        for chunk in body:
            yield chunk

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, content=content())

    hooks: dict[str, list[Any]] = {"response": [_Caps(limits, faults)]}
    transport = httpx2.MockTransport(handler)
    async with (
        httpx2.AsyncClient(transport=transport, event_hooks=hooks) as client,
        client.stream("POST", "http://server/mcp") as reply,
    ):
        if headers.get("content-type") == "text/event-stream":
            return [json.loads(e.data) async for e in httpx2.EventSource(reply)]
        return [json.loads(await reply.aread())]


SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}


@settings(max_examples=60)
@given(
    st.lists(json_values, min_size=1, max_size=5),
    st.lists(st.integers(0, 10**6), max_size=12),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_any_events_in_any_chunks_arrive_as_sent(
    values: list[Any], cuts: list[int], eol: bytes
) -> None:
    stream = b"".join(
        b"event: message" + eol + b"data: " + json.dumps(v, ensure_ascii=False).encode() + eol * 2
        for v in values
    )
    limits = Limits()
    got = anyio.run(fetch, pieces(stream, cuts), SSE, limits, Faults())
    assert got == values


def test_non_ascii_data_is_passed_on_as_json_escapes_meaning_the_same() -> None:
    value = {"text": "caf\u00e9 \u20ac \U0001f600 \u4e2d"}
    event = b"data: " + json.dumps(value, ensure_ascii=False).encode() + b"\n\n"
    assert anyio.run(fetch, [event], SSE, Limits(), Faults()) == [value]


@pytest.mark.anyio
@pytest.mark.threat("T43")
async def test_an_event_that_is_not_utf8_is_refused_rather_than_grown_sixfold() -> None:
    # Each bad byte would pass on as \ufffd, six bytes: past the room the caps leave.
    faults = Faults()
    body = [b'data: {"x": "' + b"\xff" * 1000 + b'"}\n\n']
    with pytest.raises(Refused) as info:
        await fetch(body, SSE, SMALL, faults)
    refused = faults.explain(RuntimeError(f"SSE stream failed: {info.value}"))
    assert isinstance(refused, InvalidResponse)
    assert "not UTF-8" in refused.message


@pytest.mark.anyio
async def test_an_event_past_the_byte_cap_is_refused_before_it_is_passed_on() -> None:
    faults = Faults()
    body = [b"data: [", b"1," * 5000, b"1]\n\n"]
    with pytest.raises(Refused) as info:
        await fetch(body, SSE, SMALL, faults)
    assert isinstance(info.value, httpx2.SSEError)  # the SDK fails just that request
    refused = faults.explain(RuntimeError(f"SSE stream failed: {info.value}"))
    assert isinstance(refused, ResponseTooLarge)


@pytest.mark.anyio
async def test_an_event_of_too_many_values_is_refused() -> None:
    faults = Faults()
    with pytest.raises(Refused, match="JSON values"):
        await fetch([b"data: [" + b"[]," * 100 + b"[]]\n\n"], SSE, SMALL, faults)


@pytest.mark.anyio
async def test_a_body_announced_past_the_cap_is_refused_unread() -> None:
    faults = Faults()
    headers = {**JSON, "content-length": str(10**9)}
    with pytest.raises(Refused) as info:
        await fetch([b"{}"], headers, SMALL, faults)
    assert isinstance(info.value, httpx2.StreamError)  # the SDK fails just that request
    assert isinstance(faults.explain(info.value), ResponseTooLarge)


@pytest.mark.anyio
async def test_a_body_past_the_cap_is_refused_while_it_is_read() -> None:
    with pytest.raises(Refused, match="larger than 8192 bytes"):
        await fetch([b'{"x": "', b"a" * 9000, b'"}'], JSON, SMALL, Faults())


@pytest.mark.anyio
async def test_a_compressed_body_is_refused_as_it_could_grow_past_any_cap() -> None:
    faults = Faults()
    with pytest.raises(Refused) as info:
        await fetch([b"\x1f\x8b"], {**JSON, "content-encoding": "gzip"}, SMALL, faults)
    assert isinstance(faults.explain(info.value), InvalidResponse)


def test_a_token_a_server_writes_itself_explains_nothing() -> None:
    faults = Faults()
    faults.refuse(ResponseTooLarge("real"))
    forged = RuntimeError("Failed to parse: [skillward refusal 0123456789abcdef]")
    assert faults.explain(forged) is None


@pytest.mark.threat("T11")
def test_requests_are_unanswered_until_answered_or_called_off_by_their_own_id() -> None:
    unanswered = Unanswered(2)
    assert unanswered.asked("a") is None
    assert unanswered.asked(1) is None
    unanswered.cancelled("b")  # a cancel for a request never made makes no room
    unanswered.cancelled("1")  # nor one for another id that looks the same
    refused = unanswered.asked("c")
    assert isinstance(refused, InvalidResponse)
    assert "more than 2 requests" in refused.message
    unanswered.cancelled(1)
    unanswered.writing("c")
    unanswered.answered("c")
    assert unanswered.asked("d") is None


@pytest.mark.threat("T11")
def test_a_cancel_read_while_the_answer_is_written_does_not_count_it_off() -> None:
    # The SDK ignores a cancel once the handler returned, and the answer waits to be
    # written all the same: counted off, the server could have any number waiting.
    unanswered = Unanswered(2)
    for ident in ("a", "b"):
        assert unanswered.asked(ident) is None
        unanswered.writing(ident)
        unanswered.cancelled(ident)
    assert isinstance(unanswered.asked("c"), InvalidResponse)
    # A cancel read just before the answer began to be written: counted again then.
    unanswered = Unanswered(1)
    assert unanswered.asked("a") is None
    unanswered.cancelled("a")
    unanswered.writing("a")
    assert isinstance(unanswered.asked("b"), InvalidResponse)


@pytest.mark.threat("T11")
def test_a_request_reusing_the_id_of_one_unanswered_is_refused_not_counted_once() -> None:
    # The SDK starts a task for each request, whatever its id: counted once by id, a
    # server could send the same one without end.
    unanswered = Unanswered(64)
    assert unanswered.asked("s") is None
    reused = unanswered.asked("s")
    assert isinstance(reused, InvalidResponse)
    assert "reused the id" in reused.message
    assert "'s'" not in reused.message  # the server's id is not quoted back
    unanswered.answered("s")
    assert unanswered.asked("s") is None  # answered, its id may be used again


async def retries(body: bytes) -> list[int | None]:
    """The ``retry`` of each event the SDK's parser reads from ``body`` through the caps."""

    async def content() -> AsyncIterator[bytes]:
        yield body

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=SSE, content=content())

    hooks: dict[str, list[Any]] = {"response": [_Caps(Limits(), Faults())]}
    async with (
        httpx2.AsyncClient(transport=httpx2.MockTransport(handler), event_hooks=hooks) as client,
        client.stream("GET", "http://server/mcp") as reply,
    ):
        return [event.retry async for event in httpx2.EventSource(reply)]


@pytest.mark.threat("T11")
@settings(max_examples=60)
@given(
    st.one_of(
        st.integers(0, 10**7).map(str),
        st.integers(0, 5000).map(lambda n: "0" * 30 + str(n)),
        st.text("0123456789x -", max_size=12),
    ),
    st.booleans(),
)
def test_a_reconnection_delay_a_server_sets_is_never_below_a_second(value: str, last: bool) -> None:
    # The SDK opens a stream again after the delay each time one ends: at retry: 0 an
    # idle client opened them without end, a core busy.
    line = f"retry: {value}".encode()
    body = b"data: {}\n\n" + line + (b"" if last else b"\n\ndata: {}\n\n")
    got = [r for r in anyio.run(retries, body) if r is not None]
    if value.isdigit() and value.isascii():
        assert got == [max(int(value), 1000)] or (last and got == [])
    else:
        assert got == []
