"""The terminal's execution and cross-origin gates in a host of their own, for pty tests.

    python -m tests.support.gate_driver SKILLS run ARGUMENTS.json
    python -m tests.support.gate_driver SKILLS read URI.txt

connects two reference servers over SKILLS (``team`` and ``crm``), has the model load
``team:deploy`` (approved once, without asking), then either call the host's ``bash``
tool with the arguments in the file or read the URI in the file from ``crm``, through
``handle_tool_call`` as a host's tool loop would; the terminal gate asks. Prints what
came of it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from skillward.core.origins import SkillKey
from skillward.edge.servers import ServerSpec, StdioTransport
from skillward.host.skillhost import HostConfig, SkillHost
from skillward.terminal.prompts import Terminal, TerminalCrossOriginGate, TerminalExecutionGate
from skillward.trust.approvals import ApproveOnce

DEPLOY = SkillKey("team", "skill://deploy/SKILL.md")


def serve(label: str, skills: Path) -> ServerSpec:
    argv = ["-m", "skillward", "serve", str(skills)]
    transport = StdioTransport(command=sys.executable, args=argv, stderr="discard")
    return ServerSpec(label=label, transport=transport)


async def main(skills: Path, action: str, value: str) -> None:
    terminal = Terminal()
    async with SkillHost(
        # The model may read by URI here, so that a read of crm asks the cross-origin gate.
        config=HostConfig(execution_tools=("bash",), allow_uri_lookups=True),
        approver=ApproveOnce({DEPLOY}),
        execution=TerminalExecutionGate(terminal),
        cross_origin=TerminalCrossOriginGate(terminal),
    ) as host:
        await host.connect(serve("team", skills))
        await host.connect(serve("crm", skills))
        loaded = await host.handle_tool_call("read_skill", {"ref": "team:deploy"})
        assert loaded is not None
        assert loaded.kind == "skill", loaded
        if action == "run":
            block = await host.handle_tool_call("bash", json.loads(value))
            print("allowed" if block is None else f"refused: {block.error_type}", flush=True)
        else:
            block = await host.handle_tool_call("read_resource", {"server": "crm", "uri": value})
            assert block is not None
            print(f"read: {block.kind} {block.error_type}", flush=True)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).read_text(encoding="utf-8"))
