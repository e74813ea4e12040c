"""One ``read_skill`` through ``skillward gateway`` against the same call on an embedded
``SkillHost``, same upstream, in one run. Goal: the gateway within 1.3x.

The upstream is ``skillward serve`` over the bundled example skills, over stdio, with no
disk cache. Embedded: ``SkillHost.read_skill_tool`` in this process (the block's text, as
the gateway answers it), approving without asking. Through the gateway: the ``mcp`` SDK's
client over stdio to a ``skillward gateway`` process that connects its own copy of the
upstream; the skill is approved for the session on the first call (elicitation), so
every timed call is held, as the embedded one is. The gateway adds one MCP round trip
over stdio (the SDK on both ends: about 1 ms, as ``list_tools`` alone takes) to a call
of about 2 ms. Also printed: the gateway's start-up to its first answer against the
upstream's own start-up to its listing (no goal: the upstream's start-up dominates).

Also printed, apart: the same call through the gateway's server in this process (the
SDK's in-memory transport, no stdio), to show what the gateway itself adds.

Run: .venv/bin/python bench/bench_gateway.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from _timing import report, side_by_side
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.gateway._sessions import Sessions
from skillward.gateway.server import Gateway
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.trust.approvals import ActivationRequest, Decision

GOAL = 1.3
CALLS = 50
REF = "pdf-processing"
PY = sys.executable
UPSTREAM = f"{PY} -m skillward serve"


class _Yes:
    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.APPROVE


async def _session(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "session"})


def _gateway(state: Path) -> StdioServerParameters:
    env = {**os.environ, "XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(state)}
    args = ["-m", "skillward", "gateway", "--no-local", "--no-cache", "--server"]
    return StdioServerParameters(command=PY, args=[*args, f"ex={UPSTREAM}"], env=env)


async def main() -> None:
    spec = ServerSpec(
        label="ex", transport=StdioTransport(command=PY, args=("-m", "skillward", "serve"))
    )
    with tempfile.TemporaryDirectory() as state:
        params = _gateway(Path(state))
        async with (
            SkillHost(config=HostConfig(local_dirs=()), approver=_Yes()) as host,
            Client(params, elicitation_callback=_session) as client,
        ):
            await host.connect(spec)
            first = await client.call_tool("read_skill", {"ref": REF})
            assert not first.is_error, first
            assert (await host.read_skill_block(REF)).kind == "skill"

            async def through_gateway() -> None:
                for _ in range(CALLS):
                    result = await client.call_tool("read_skill", {"ref": REF})
                    assert not result.is_error

            async def embedded() -> None:
                for _ in range(CALLS):
                    assert (await host.read_skill_tool(REF)).startswith("<skillward:skill ")

            gateway_s, embedded_s = await side_by_side(through_gateway, embedded, repeat=5)
            gateway = Gateway(host, sessions=Sessions(host, store=None))
            async with Client(gateway.server, elicitation_callback=_session) as local:
                assert not (await local.call_tool("read_skill", {"ref": REF})).is_error

                async def in_process() -> None:
                    for _ in range(CALLS):
                        result = await local.call_tool("read_skill", {"ref": REF})
                        assert not result.is_error

                local_s, baseline_s = await side_by_side(in_process, embedded, repeat=5)
        report(
            "read_skill through the gateway (stdio)",
            gateway_s / CALLS,
            "on an embedded SkillHost",
            embedded_s / CALLS,
            goal=GOAL,
        )

        report(
            "read_skill through the gateway's server in this process (no stdio)",
            local_s / CALLS,
            "on an embedded SkillHost",
            baseline_s / CALLS,
        )
        started = time.perf_counter()
        async with Client(_gateway(Path(state)), elicitation_callback=_session) as client:
            await client.call_tool("list_skills", {})
        gateway_start = time.perf_counter() - started
        started = time.perf_counter()
        async with SkillsClient.connect(spec) as upstream:
            await upstream.list_skills()
        upstream_start = time.perf_counter() - started
        report(
            "gateway start-up to its first answer",
            gateway_start,
            "the upstream's own start-up",
            upstream_start,
        )


if __name__ == "__main__":
    anyio.run(main)
