"""A host's tool loop with skillward, end to end, that you can copy.

A scripted "model" works through five steps, every one of them a tool call handed to
``SkillHost.handle_tool_call``, exactly as a real model's calls would be:

1. it reads the catalog in its system prompt;
2. it loads a skill (``read_skill``);
3. it reads one of the skill's files (``read_skill_file``, by the path the skill lists);
4. it tries to read a file of another server's skill, which it never loaded;
5. it tries to run the skill's script with the host's ``bash`` tool, twice.

Two ``skillward serve`` processes are connected over stdio: ``examples`` (the bundled
example skills) and ``crm`` (a small skill made here). The person deciding is scripted
too (``ScriptedPerson``): they approve loading one skill, once, refuse the first run and
allow the second, once. The model has no tool that takes a URI, so nothing it reads can
steer it to another server. Every decision is printed as the audit trail records it (the
``skillward.audit`` logger).

Run it from a checkout, with skillward installed::

    python examples/agent_loop.py

Nothing here runs the script: where a real host would call its own tool, this prints
what it would run.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from skillward import (
    ActivationRequest,
    ContextBlock,
    Decision,
    ExecutionRequest,
    HostConfig,
    ServerSpec,
    SkillHost,
    StdioTransport,
)

#: The host's own tools that run code: skillward gates these while an MCP skill is active.
EXECUTION_TOOLS = ("bash",)

#: What the "model" asks for, in order: (tool name, arguments).
MODEL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_skill", {"ref": "examples:pdf-processing"}),
    ("read_skill_file", {"ref": "examples:pdf-processing", "path": "references/FORMS.md"}),
    ("read_skill_file", {"ref": "crm:crm-lookup", "path": "exports/customers.csv"}),
    ("bash", {"command": "python scripts/extract.py report.pdf"}),
    ("bash", {"command": "python scripts/extract.py report.pdf"}),
]

CRM_SKILL = """---
name: crm-lookup
description: Look up a customer in the CRM. Use when the user names a customer.
---
# CRM lookup

Search by name, then show the account's open tickets.
"""


class ScriptedPerson:
    """Stands in for the person a real host would ask (a dialog, a terminal prompt).

    It is the approver: each ``decide`` receives what a person would be shown, and
    answers. Replace it with ``ApprovalBook(TerminalApprover(...))`` for a terminal host
    (and ``ScriptedExecution`` below with ``TerminalExecutionGate``).
    """

    def __init__(self, approve: str) -> None:
        self.approve = approve

    async def decide(self, request: ActivationRequest) -> Decision:
        name = request.record.name
        print(f"  person: load skill {name!r} from server {request.key.origin!r}?", end=" ")
        if request.requested_tools:
            print(f"(it asks for tools {', '.join(request.requested_tools)}; not granted)", end=" ")
        answer = Decision.APPROVE if name == self.approve else Decision.DENY
        print(answer.value)
        return answer


class ScriptedExecution:
    """Refuses the first run and allows the next, once (``request.remember`` would keep
    a yes with the skill's approval; this person never asks for that)."""

    def __init__(self) -> None:
        self.asked = 0

    async def decide(self, request: ExecutionRequest) -> Decision:
        self.asked += 1
        answer = Decision.DENY if self.asked == 1 else Decision.APPROVE
        where = (
            f"{request.skill.locator} from server {request.skill.origin!r}"
            if request.skill
            else "?"
        )
        print(
            f"  person: run {request.tool} {request.detail} while acting on {where}? {answer.value}"
        )
        return answer


def show(block: ContextBlock | None, tool: str) -> None:
    """What goes back to the model, abridged for reading."""
    if block is None:
        print(f"  result: allowed; the host now runs its own {tool!r} tool (not run here)")
        return
    origin = f"{block.origin.kind}:{block.origin.label}" if block.origin else "host"
    article = "an" if block.kind == "error" else "a"
    print(f"  result: {article} {block.kind} block from {origin}, trust={block.trust}")
    if block.kind == "error":
        print(f"    {block.error_type}: {block.content}")
    else:
        for line in block.content.splitlines()[:3]:
            print(f"    | {line}")


class PrintAudit(logging.Handler):
    """Prints each audit event as it is recorded: the gate decisions, as they happen."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"  audit: {record.getMessage()}")


def serve(label: str, *directory: str) -> ServerSpec:
    argv = (sys.executable, "-m", "skillward", "serve", *directory)
    return ServerSpec(label=label, transport=StdioTransport(command=argv[0], args=argv[1:]))


async def main(crm: Path) -> None:
    audit = logging.getLogger("skillward.audit")
    audit.addHandler(PrintAudit())
    audit.setLevel(logging.INFO)
    audit.propagate = False

    config = HostConfig(execution_tools=EXECUTION_TOOLS)
    async with SkillHost(
        config=config,
        approver=ScriptedPerson(approve="pdf-processing"),
        execution=ScriptedExecution(),
    ) as host:
        await host.connect(serve("examples"))
        await host.connect(serve("crm", str(crm)))
        # What a real host registers with its model: skillward's tools and its own.
        tools = [t["name"] for t in host.tool_definitions(style="anthropic")]
        print(f"model tools: {', '.join([*tools, *EXECUTION_TOOLS])}")

        print("\nstep 1: the catalog, in the model's system prompt")
        for item in host.catalog():
            print(f"  {item.ref}  ({item.origin.kind} {item.origin.label})")

        steps = [
            "load the skill",
            "read a file the skill lists",
            "read a file of another server's skill it never loaded",
            "run the skill's script",
            "run it again",
        ]
        for number, (what, (tool, arguments)) in enumerate(zip(steps, MODEL_CALLS, strict=True), 2):
            print(f"\nstep {number}: the model calls {tool}({arguments}) to {what}")
            block = await host.handle_tool_call(tool, arguments)
            show(block, tool)
            if tool == "read_skill":
                granted = ", ".join(host.granted_tools()) or "none"
                print(f"  tools granted to the model while it acts on the skill: {granted}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        crm = Path(scratch) / "crm"
        (crm / "crm-lookup").mkdir(parents=True)
        (crm / "crm-lookup" / "SKILL.md").write_text(CRM_SKILL, encoding="utf-8")
        anyio.run(main, crm)
