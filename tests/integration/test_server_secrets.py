"""HTTP headers and environment values from config are sent, and never shown."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from mcp import Client
from mcp.server import Server
from pydantic import ValidationError

from skillward.core.config import Limits
from skillward.core.errors import (
    DeadlineExceeded,
    InvalidResponse,
    ServerDisconnected,
    SkillwardError,
    TransportError,
)
from skillward.edge.client import SkillsClient
from skillward.edge.servers import HttpTransport, ServerSpec, StdioTransport, parse_mcp_servers
from skillward.host._connections import _connection_error

pytestmark = pytest.mark.anyio
SECRET = "s3cr3t-t0ken-9f8e7d"


@asynccontextmanager
async def echoing_server(seen: list[bytes]) -> AsyncIterator[str]:
    """An HTTP endpoint that answers every JSON-RPC request with an error quoting the
    request's Authorization header, as a careless (or hostile) server might."""

    async def handle(stream: SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive()
            head, _, body = data.partition(b"\r\n\r\n")
            seen.append(head)
            lines = head.decode("latin-1").split("\r\n")
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            length = int(headers.get("Content-Length", "0"))
            while len(body) < length:
                body += await stream.receive()
            request = json.loads(body)
            answer = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": request.get("id"),
                    "error": {
                        "code": -32600,
                        "message": f"rejected token {headers.get('Authorization')}",
                    },
                }
            ).encode()
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                b"Content-Length: " + str(len(answer)).encode() + b"\r\n\r\n" + answer
            )

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        yield f"http://127.0.0.1:{port}/mcp"
        group.cancel_scope.cancel()


def everything_shown(error: BaseException) -> str:
    """Every text a person or a log could get from ``error``, its traceback included."""
    parts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    if isinstance(error, SkillwardError):
        parts.append(error.diagnostics())
    return "\n".join(parts)


@pytest.mark.threat("T24")
async def test_a_secret_header_is_sent_and_never_appears_in_errors_or_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[bytes] = []
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(60):
        async with echoing_server(seen) as url:
            config = parse_mcp_servers(
                {"docs": {"url": url, "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}},
                environ={"DOCS_TOKEN": SECRET},
            )
            spec = config.servers["docs"]
            with pytest.raises(TransportError) as raised:
                async with SkillsClient.connect(spec):
                    pass
    assert any(f"Authorization: Bearer {SECRET}".encode() in head for head in seen)
    shown = everything_shown(raised.value)
    assert "rejected token ***" in shown
    assert SECRET not in shown
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            assert SECRET not in everything_shown(record.exc_info[1])
    for text in (repr(spec), str(spec), spec.describe(), spec.identity, spec.model_dump_json()):
        assert SECRET not in text


@pytest.mark.threat("T24")
def test_a_bad_header_value_is_refused_without_quoting_it() -> None:
    with pytest.raises(ValidationError) as raised:
        HttpTransport(url="https://a.example/mcp", headers={"Authorization": SECRET + "\r\nX: y"})
    assert SECRET not in str(raised.value)
    assert "Authorization" in str(raised.value)
    config = parse_mcp_servers(
        {"a": {"url": "https://a.example/mcp", "headers": {"X-Key": SECRET + "\n"}}}
    )
    (problem,) = config.problems
    assert SECRET not in problem.diagnostics()


@pytest.mark.threat("T24")
def test_environment_values_are_never_shown() -> None:
    spec = ServerSpec(
        label="acme", transport=StdioTransport(command="acme", env={"ACME_TOKEN": SECRET})
    )
    for text in (repr(spec), str(spec), spec.describe(), spec.identity, spec.model_dump_json()):
        assert SECRET not in text
    assert SECRET in spec.secret_values()


def unconnected(timeout: float = 60.0) -> SkillsClient:
    """A client holding SECRET as the spec's secret; its operations are the test's own."""
    server: Server[Any] = Server("quiet")
    return SkillsClient(
        Client(server), label="acme", limits=Limits(operation_timeout=timeout), secrets=(SECRET,)
    )


@pytest.mark.threat("T24")
async def test_an_error_quoting_a_secret_after_the_deadline_is_not_chained() -> None:
    async def leaky() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            # What the SDK raises as the deadline cancels it may quote anything.
            raise RuntimeError(f"rejected token {SECRET}")

    with anyio.fail_after(60), pytest.raises(DeadlineExceeded) as raised:
        await unconnected(timeout=0.05)._run(leaky)
    assert SECRET not in everything_shown(raised.value)


@pytest.mark.threat("T24")
async def test_a_skillward_error_chained_to_a_secret_is_raised_without_its_chain() -> None:
    async def leaky() -> None:
        raise InvalidResponse("the answer is malformed") from RuntimeError(f"token {SECRET}")

    with anyio.fail_after(60), pytest.raises(InvalidResponse) as raised:
        await unconnected()._run(leaky)
    assert raised.value.server == "acme"
    assert SECRET not in everything_shown(raised.value)


@pytest.mark.threat("T24")
async def test_an_error_without_a_secret_keeps_its_cause() -> None:
    async def failing() -> None:
        raise RuntimeError("connection reset")

    with anyio.fail_after(60), pytest.raises(TransportError) as raised:
        await unconnected()._run(failing)
    assert isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.threat("T24")
def test_a_connection_that_ends_quoting_a_secret_is_reported_without_it() -> None:
    spec = ServerSpec(
        label="acme", transport=StdioTransport(command="acme", env={"ACME_TOKEN": SECRET})
    )
    group = ExceptionGroup("session", [OSError(f"pipe closed: {SECRET}")])
    error = _connection_error(group, spec)
    assert isinstance(error, ServerDisconnected)
    assert error.server == "acme"
    assert "pipe closed: ***" in error.message
    assert SECRET not in everything_shown(error)
    quoted = _connection_error(InvalidResponse(f"bad {SECRET}"), spec)
    assert SECRET not in everything_shown(quoted)
