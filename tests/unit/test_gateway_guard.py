"""The gateway's HTTP guard over a tiny ASGI app: what passes, what is refused, and how
much of a refused body it reads."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from mcp_types import INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from skillward.edge._listen import Message, Receive, Scope, Send
from skillward.gateway._http import guard

pytestmark = pytest.mark.anyio

TOKEN = "unit-token-Zx81Qw27Lp03Vb64Nm"
CAP = 1000


class TinyApp:
    """Reads the whole body, then answers 200 with its length."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.body = b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls.append(scope["type"])
        if scope["type"] != "http":
            return
        while True:
            message = await receive()
            self.body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(self.body)).encode()})


def http_scope(*headers: tuple[str, str], host: str | None = "127.0.0.1:8765") -> Scope:
    pairs = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    if host is not None:
        pairs.insert(0, (b"host", host.encode("latin-1")))
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": pairs}


AUTH = ("Authorization", f"Bearer {TOKEN}")


class Exchange:
    """One request through the guard: the messages sent back, and the chunks read."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.read = 0
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        chunk = next(self.chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        self.read += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        starts = [m for m in self.sent if m["type"] == "http.response.start"]
        assert len(starts) == 1
        status = starts[0]["status"]
        assert isinstance(status, int)
        return status

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")

    def header(self, name: bytes) -> list[bytes]:
        start = next(m for m in self.sent if m["type"] == "http.response.start")
        return [value for key, value in start["headers"] if key == name]


async def run(scope: Scope, chunks: Iterator[bytes] | None = None) -> tuple[TinyApp, Exchange]:
    app = TinyApp()
    exchange = Exchange(chunks if chunks is not None else iter([b'{"jsonrpc": "2.0"}']))
    with anyio.fail_after(10):
        await guard(app, token=TOKEN, max_body=CAP)(scope, exchange.receive, exchange.send)
    return app, exchange


async def test_a_request_with_the_token_from_loopback_reaches_the_app() -> None:
    app, exchange = await run(http_scope(AUTH))
    assert (app.calls, exchange.status, app.body) == (["http"], 200, b'{"jsonrpc": "2.0"}')


async def test_lifespan_events_pass_through_without_a_token() -> None:
    app = TinyApp()

    async def receive() -> Message:
        raise AssertionError("not reached")  # pragma: no cover

    async def send(message: Message) -> None:
        raise AssertionError("not reached")  # pragma: no cover

    with anyio.fail_after(10):
        await guard(app, token=TOKEN, max_body=CAP)({"type": "lifespan"}, receive, send)
    assert app.calls == ["lifespan"]


@pytest.mark.threat("T51")
async def test_a_websocket_is_closed_without_reaching_the_app() -> None:
    app, exchange = await run({"type": "websocket", "headers": []})
    assert app.calls == []
    assert exchange.sent == [{"type": "websocket.close", "code": 1008}]


@pytest.mark.threat("T51")
@pytest.mark.parametrize(
    "headers",
    [
        (),
        (("Authorization", f"Bearer {TOKEN[:-1]}?"),),
        (("Authorization", f"Bearer {TOKEN} extra"),),
        (("Authorization", f"Token {TOKEN}"),),
        (("Authorization", f"Bearer{TOKEN}"),),
        (AUTH, ("Authorization", "Bearer other-token-0000000000")),
        (("Authorization", ""),),
    ],
    ids=["none", "one-char-off", "trailing-word", "other-scheme", "no-space", "two", "empty"],
)
async def test_a_request_without_exactly_the_token_is_refused_unread(
    headers: tuple[tuple[str, str], ...],
) -> None:
    app, exchange = await run(http_scope(*headers), iter([b"SECRET-BODY"]))
    assert (app.calls, exchange.status, exchange.read) == ([], 401, 0)
    assert exchange.header(b"www-authenticate") == [b"Bearer"]
    assert TOKEN.encode() not in exchange.body


async def test_the_bearer_scheme_is_matched_without_regard_to_case() -> None:
    app, exchange = await run(http_scope(("Authorization", f"bearer {TOKEN}")))
    assert (app.calls, exchange.status) == (["http"], 200)


@pytest.mark.threat("T51")
@given(value=st.binary(max_size=80))
async def test_no_other_authorization_value_gets_through(value: bytes) -> None:
    assume(TOKEN.encode() not in value)
    scope = http_scope(AUTH)
    scope["headers"][1] = (b"authorization", value)
    app, exchange = await run(scope)
    _, unauthorised = await run(http_scope())
    assert (app.calls, exchange.status) == ([], 401)
    assert exchange.body == unauthorised.body  # the same words, whatever was sent


@pytest.mark.threat("T52")
@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8765",
        "http://localhost",
        "https://localhost:443",
        "http://[::1]:9",
        "HTTP://LOCALHOST:1",
    ],
)
async def test_a_loopback_origin_with_the_token_reaches_the_app(origin: str) -> None:
    app, exchange = await run(http_scope(AUTH, ("Origin", origin)))
    assert (app.calls, exchange.status) == (["http"], 200)


@pytest.mark.threat("T52")
@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "",
        "http://localhost.evil.example",
        "http://127.0.0.1.nip.io",
        "http://localhost:80@evil.example",
        "http://evil.example#@localhost",
        "http://127.0.0.1:8765/",
        "ws://127.0.0.1:8765",
        "http://127.0.0.2",
        "http://localhost:8765\r\nX: y",
    ],
)
async def test_any_other_origin_is_refused_even_with_the_token(origin: str) -> None:
    app, exchange = await run(http_scope(AUTH, ("Origin", origin)))
    assert (app.calls, exchange.status, exchange.read) == ([], 403, 0)
    assert b"evil" not in exchange.body
    assert b"nip" not in exchange.body


@pytest.mark.threat("T52")
async def test_one_foreign_origin_among_loopback_ones_is_refused() -> None:
    scope = http_scope(AUTH, ("Origin", "http://localhost"), ("Origin", "http://evil.example"))
    app, exchange = await run(scope)
    assert (app.calls, exchange.status) == ([], 403)


@pytest.mark.threat("T52")
@given(
    name=st.from_regex(r"[a-z0-9][a-z0-9.-]{0,30}", fullmatch=True).filter(
        lambda n: n not in {"localhost", "127.0.0.1"}
    ),
    port=st.one_of(st.just(""), st.integers(0, 65535).map(lambda p: f":{p}")),
    scheme=st.sampled_from(["http", "https"]),
)
async def test_an_origin_naming_any_other_host_is_refused(
    name: str, port: str, scheme: str
) -> None:
    app, exchange = await run(http_scope(AUTH, ("Origin", f"{scheme}://{name}{port}")))
    assert (app.calls, exchange.status) == ([], 403)


@pytest.mark.threat("T52")
@pytest.mark.parametrize(
    "host",
    [None, "evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost@evil", ""],
)
async def test_a_host_header_that_is_not_loopback_is_refused(host: str | None) -> None:
    app, exchange = await run(http_scope(AUTH, host=host))
    assert (app.calls, exchange.status, exchange.read) == ([], 421, 0)
    assert b"evil" not in exchange.body


@pytest.mark.threat("T52")
async def test_two_host_headers_are_refused() -> None:
    app, exchange = await run(http_scope(AUTH, ("Host", "evil.example")))
    assert (app.calls, exchange.status) == ([], 421)


def endless(size: int) -> Iterator[bytes]:
    while True:
        yield b"x" * size


@pytest.mark.threat("T53")
async def test_an_endless_body_is_refused_once_it_passes_the_cap() -> None:
    app, exchange = await run(http_scope(AUTH), endless(100))
    assert (app.calls, exchange.status) == ([], 413)
    assert exchange.read == CAP // 100 + 1


@pytest.mark.threat("T53")
async def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    app, exchange = await run(http_scope(AUTH, ("Content-Length", str(CAP + 1))), endless(100))
    assert (app.calls, exchange.status, exchange.read) == ([], 413, 0)


@pytest.mark.threat("T53")
async def test_a_body_of_exactly_the_cap_reaches_the_app() -> None:
    app, exchange = await run(http_scope(AUTH), iter([b"x" * 600, b"y" * 400]))
    assert (exchange.status, len(app.body)) == (200, CAP)


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="token"):
        guard(TinyApp(), token="", max_body=CAP)


SESSION = ("Mcp-Session-Id", "0" * 32)
versions = st.sampled_from([*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]) | st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20
)


@pytest.mark.threat("T54")
@given(version=versions)
async def test_a_session_id_on_a_request_served_at_2026_is_refused_404_unread(version: str) -> None:
    app, exchange = await run(http_scope(AUTH, ("MCP-Protocol-Version", version), SESSION))
    if version in HANDSHAKE_PROTOCOL_VERSIONS:  # the SDK's session manager checks it
        assert app.calls == ["http"]
        return
    assert app.calls == []
    assert exchange.read == 0
    assert exchange.status == 404
    assert json.loads(exchange.body)["error"]["code"] == INVALID_REQUEST
    assert b"0" * 32 not in exchange.body
    app, exchange = await run(http_scope(AUTH, ("MCP-Protocol-Version", version)))
    assert app.calls == ["http"]  # the same request without it: for the SDK to judge


@pytest.mark.threat("T54")
async def test_the_first_protocol_version_decides_the_era_as_the_sdk_routes_it() -> None:
    modern, handshake = (
        ("MCP-Protocol-Version", "2026-07-28"),
        ("MCP-Protocol-Version", "2025-11-25"),
    )
    app, exchange = await run(http_scope(AUTH, modern, handshake, SESSION))
    assert (app.calls, exchange.status) == ([], 404)
    app, exchange = await run(http_scope(AUTH, handshake, modern, SESSION))
    assert app.calls == ["http"]
