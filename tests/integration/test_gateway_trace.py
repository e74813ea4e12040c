"""Trace context through the gateway: the ``traceparent`` (and ``tracestate``) a client
puts in a tool call's ``_meta`` reach the upstream requests made for that call, as the
MCP specification describes, and nothing else of the client's ``_meta`` does. Real
upstreams that record the ``_meta`` they receive, in memory and as a stdio process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.edge._trace import parse_trace
from skillward.edge.servers import InMemoryTransport, ServerSpec, StdioTransport
from tests.support import meta_server
from tests.support.gated import build_gated_tree
from tests.support.gateway import Asker, choose, client_of, gateway_over

pytestmark = pytest.mark.threat("T64")

WAIT = 30
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACESTATE = "vendor=abc,other@tenant=x1"


@asynccontextmanager
async def upstream(tmp_path: Path, transport: str) -> AsyncIterator[tuple[ServerSpec, Path]]:
    """A recording upstream over ``transport``, and the file its requests go to."""
    root = tmp_path / "acme"
    build_gated_tree(root, tmp_path / "marker")
    record = tmp_path / "requests.jsonl"
    if transport == "memory":
        server = meta_server.recording_server(root, record)
        yield ServerSpec(label="acme", transport=InMemoryTransport(server=server)), record
        return
    argv = meta_server.argv(root, record)
    stdio = StdioTransport(command=argv[0], args=tuple(argv[1:]), log_dir=tmp_path / "logs")
    yield ServerSpec(label="acme", transport=stdio), record


def meta(**entries: str) -> types.RequestParamsMeta:
    sent: types.RequestParamsMeta = {**entries}  # type: ignore[typeddict-item]
    return sent


async def read_skill(spec: ServerSpec, sent: types.RequestParamsMeta) -> None:
    with anyio.fail_after(WAIT):
        async with (
            gateway_over([spec]) as gateway,
            client_of(gateway, "auto", Asker([choose("once")])) as client,
        ):
            result = await client.call_tool("read_skill", {"ref": "deploy"}, meta=sent)
            assert not result.is_error


def reads(record: Path) -> list[dict[str, Any]]:
    """The ``_meta`` of every ``resources/read`` the upstream was sent."""
    found = [r["meta"] for r in meta_server.requests(record) if r["method"] == "resources/read"]
    assert found
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_a_tool_calls_trace_reaches_the_upstream_read_and_nothing_else_of_its_meta(
    tmp_path: Path, transport: str
) -> None:
    sent = meta(
        traceparent=TRACEPARENT,
        tracestate=TRACESTATE,
        baggage="user.id=alice",
        secret="client-only",
    )
    async with upstream(tmp_path, transport) as (spec, record):
        await read_skill(spec, sent)
    for received in reads(record):
        assert received["traceparent"] == TRACEPARENT
        assert received["tracestate"] == TRACESTATE
        assert "baggage" not in received
        assert "secret" not in received


@pytest.mark.anyio
async def test_a_malformed_traceparent_goes_no_further(tmp_path: Path) -> None:
    bad = "00-" + "0" * 32 + "-b7ad6b7169203331-01"  # an all-zero trace ID is invalid
    async with upstream(tmp_path, "memory") as (spec, record):
        await read_skill(spec, meta(traceparent=bad, tracestate=TRACESTATE))
    for received in reads(record):
        assert "traceparent" not in received
        assert "tracestate" not in received


@pytest.mark.anyio
async def test_a_listing_made_outside_any_call_carries_no_trace(tmp_path: Path) -> None:
    async with upstream(tmp_path, "memory") as (spec, record):
        await read_skill(spec, meta(traceparent=TRACEPARENT))
    listed = [r["meta"] for r in meta_server.requests(record) if r["method"] == "skills/list"]
    assert listed
    assert all("traceparent" not in m for m in listed)


def test_a_trace_is_kept_only_in_the_w3c_grammar() -> None:
    trace = parse_trace({"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
    assert trace is not None
    assert trace.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert trace.span_id == "b7ad6b7169203331"
    assert trace.sampled
    for bad in (
        TRACEPARENT.upper(),
        "01" + TRACEPARENT[2:],
        TRACEPARENT[:-1],
        TRACEPARENT + "-extra",
        TRACEPARENT.replace("b7ad6b7169203331", "0" * 16),
        " " + TRACEPARENT,
    ):
        assert parse_trace({"traceparent": bad}) is None
    for dropped in ("a" * 600, "UPPER=1", "k=v\n", ",".join(f"k{n}=v" for n in range(33))):
        kept = parse_trace({"traceparent": TRACEPARENT, "tracestate": dropped})
        assert kept is not None
        assert kept.tracestate is None


@given(st.dictionaries(st.sampled_from(["traceparent", "tracestate", "x"]), st.text()))
def test_any_meta_gives_a_checked_trace_or_none(entries: dict[str, str]) -> None:
    trace = parse_trace(entries)
    if trace is not None:
        assert trace.traceparent == entries["traceparent"]
        assert trace.traceparent.isascii()
        assert trace.tracestate is None or len(trace.tracestate) <= 512
