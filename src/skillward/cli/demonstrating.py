"""Demonstrating: ``demo``, a tour of what skillward does.

It starts the bundled example server with one file tampered, shows the catalog, loads a
skill, reads a verified file, and shows the tampered read refused.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skillward.cli._context import EXIT_OK, add_command, audit_trail, policy_in_force
from skillward.core.errors import SkillwardError

if TYPE_CHECKING:
    from skillward.cli._context import Commands
    from skillward.cli._host import CommandLineApprover
    from skillward.core.context import ContextBlock
    from skillward.host.skillhost import SkillHost
    from skillward.terminal.prompts import Terminal

__all__ = ["DEMO_TAMPERED_URI", "add_commands", "demo"]

DEMO_SKILL = "refunds"
DEMO_GOOD_FILE = "policy/limits.json"
DEMO_TAMPERED_FILE = "templates/email.md"
DEMO_TAMPERED_URI = "skill://acme/billing/refunds/" + DEMO_TAMPERED_FILE


def add_commands(commands: Commands) -> None:
    add_command(
        commands,
        "demo",
        demo,
        help="start the bundled example server, load a skill, and show a tampered read refused",
    )


@dataclass
class _Story:
    """The demo's steps, told to a person, or kept for one JSON document (``--json``)."""

    terminal: Terminal
    as_json: bool
    steps: list[dict[str, list[object] | str]] = field(default_factory=list)

    def step(self, title: str) -> None:
        if self.as_json:
            self.steps.append({"step": title, "notes": [], "blocks": [], "errors": []})
        else:
            self.terminal.heading(title)

    def _keep(self, kind: str, item: object) -> None:
        kept = self.steps[-1][kind]
        assert isinstance(kept, list)
        kept.append(item)

    def note(self, text: str) -> None:
        if self.as_json:
            self._keep("notes", text)
        else:
            self.terminal.note(text)

    def block(self, block: ContextBlock) -> None:
        if self.as_json:
            self._keep("blocks", block.to_json())
        else:
            self.terminal.text(block.text())

    def error(self, error: SkillwardError) -> None:
        from skillward.terminal._render import error_json

        if self.as_json:
            self._keep("errors", error_json(error, command_line=True))
        else:
            self.terminal.error(error)

    def end(self) -> None:
        if self.as_json:
            self.terminal.json({"steps": self.steps})


def demo(args: argparse.Namespace, terminal: Terminal) -> int:
    """Start the bundled example server, load a skill, and show a tampered read refused."""
    import anyio

    return anyio.run(_demo, args, terminal)


async def _demo(args: argparse.Namespace, terminal: Terminal) -> int:
    from skillward.cli._host import CommandLineApprover, limits, show_catalog
    from skillward.edge.servers import ServerSpec, StdioTransport
    from skillward.host.skillhost import HostConfig, SkillHost

    spec = ServerSpec(
        label="examples",
        transport=StdioTransport(
            command=sys.executable,
            args=("-m", "skillward", "serve", "--tamper", DEMO_TAMPERED_URI),
        ),
    )
    story = _Story(terminal, args.json)
    story.step("1. Connect the bundled example skills server (stdio) under the label 'examples'")
    story.note(f"$ skillward serve --tamper {DEMO_TAMPERED_URI}")
    story.note(
        "(the demo server flips one byte of that file, while its listing keeps the true digest)"
    )
    policy = policy_in_force(terminal)
    audit = audit_trail(policy)
    approver = CommandLineApprover(terminal, approve_once=True, audit=audit, policy=policy)
    async with SkillHost(
        config=HostConfig(limits=limits(args)), approver=approver, audit=audit, policy=policy
    ) as host:
        await host.connect(spec)
        if not args.json:
            show_catalog(host, terminal, {})
        story.step("2. The catalog, as the model sees it (listing read no files)")
        story.block(host.catalog_block())
        await _load_and_read(host, approver, story)
        story.end()
        return EXIT_OK


async def _load_and_read(host: SkillHost, approver: CommandLineApprover, story: _Story) -> None:
    """Steps 3 to 6: load the skill, read a good file, then the tampered one."""
    story.step(f"3. Load '{DEMO_SKILL}': the demo approves this one skill, as if you said yes")
    approver.approve_only(host.resolve(DEMO_SKILL).key, how="approved once by skillward demo")
    activation = await host.activate(DEMO_SKILL)
    story.note("SKILL.md matched the listing: size, SHA-256 digest and frontmatter")
    story.block(activation.block)

    story.step(f"4. Read {DEMO_GOOD_FILE}: verified against the entry held since loading")
    story.block(await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE))

    story.step(f"5. The model reads {DEMO_TAMPERED_FILE}: the server sends one wrong byte")
    refused = await host.read_resource_block("examples", DEMO_TAMPERED_URI)
    if refused.kind != "error":  # pragma: no cover
        raise AssertionError("the tampered read was not refused")
    story.note("Refused: nothing from that read reached the model. The model sees only:")
    story.block(refused)

    story.step(f"6. '{DEMO_SKILL}' stays in the acting window, but nothing more is read under it")
    try:
        await host.read_file(DEMO_SKILL, DEMO_GOOD_FILE)
    except SkillwardError as error:
        story.error(error)
    story.note(
        "Its gates still apply; loading it again asks for approval again, against "
        "whatever the server serves now."
    )
