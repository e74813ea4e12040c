"""The terminal: approval prompts and readable output (the only module importing rich).

Everything shown here that came from a server (names, descriptions, URIs,
``serverInfo.name``) is untrusted: it is escaped for rich markup and stripped of
control, bidi and invisible characters before it reaches the terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import anyio.to_thread
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Confirm
from rich.table import Table

from skillward.approvals import ActivationRequest, Decision
from skillward.context import CatalogItem, ContextBlock
from skillward.errors import SkillwardError, printable
from skillward.registry import Collision, Declined, SkillRecord

__all__ = ["Terminal", "TerminalApprover"]


def _safe(text: object, limit: int = 300) -> str:
    return escape(printable(str(text), limit=limit))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _origin(record_origin_kind: str, label: str) -> str:
    return f"MCP server {label}" if record_origin_kind == "mcp" else f"local {label}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _Console(Console):
    """A console whose reader may go away (``skillward show REF | head -3``)."""

    def on_broken_pipe(self) -> None:
        # rich exits with status 1 here; skillward ends quietly instead (the command line
        # returns 0). Later writes, Python's flush at exit included, go to /dev/null.
        self.quiet = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())
            os.close(devnull)
        raise BrokenPipeError


class Terminal:
    """Readable output for people; ``--json`` output for scripts."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = _Console(file=out or sys.stdout, highlight=False, soft_wrap=True)
        self.err = _Console(file=err or sys.stderr, highlight=False, soft_wrap=True)

    def json(self, data: object) -> None:
        self.out.print(json.dumps(data, indent=2, ensure_ascii=False), markup=False)

    def text(self, text: str) -> None:
        # Context blocks are already neutralised; print them verbatim, never as markup.
        self.out.print(text, markup=False, highlight=False)

    def heading(self, text: str) -> None:
        self.out.print(f"\n[bold]{escape(text)}[/bold]")

    def note(self, text: str) -> None:
        self.err.print(f"[dim]{_safe(text, 500)}[/dim]")

    def server_log(self, label: str, path: str, lines: Sequence[str]) -> None:
        """The last lines a server wrote to its stderr, and where the whole log is.

        ``lines`` are already escaped (``_serverlog.escaped_lines``); they are printed
        as plain text, never as markup.
        """
        if not lines:
            self.note(f"server {label!r} wrote nothing to stderr (log: {path})")
            return
        self.note(
            f"server {label!r} stderr, last {_plural(len(lines), 'line')} "
            f"(full log: {path}, or: skillward logs {label}):"
        )
        for line in lines:
            self.err.print("  | " + line, markup=False, highlight=False)

    def error(self, error: SkillwardError) -> None:
        line = f"[red]skillward:[/red] {_safe(str(error), 2000)}"
        if error.hint:
            line += f"\n  [dim]hint: {_safe(error.hint, 500)}[/dim]"
        self.err.print(line)

    def catalog(
        self,
        items: Sequence[CatalogItem],
        qualified: Sequence[str],
        collisions: Sequence[Collision],
        declined: Sequence[Declined],
    ) -> None:
        table = Table(title="Skills", show_lines=False)
        # References are identities: wrap them, never cut them short with an ellipsis.
        table.add_column("reference", overflow="fold")
        table.add_column("qualified", overflow="fold")
        table.add_column("origin", overflow="fold")
        table.add_column("description", overflow="fold")
        for item, full in zip(items, qualified, strict=True):
            origin = _origin(item.origin.kind, item.origin.label)
            if item.origin.is_mcp and item.origin.detail:
                origin += f"\n[dim](reports name {_safe(item.origin.detail, 80)}, unverified)[/dim]"
            table.add_row(_safe(item.ref), _safe(full), origin, _safe(item.description, 200))
        self.out.print(table)
        if not items:
            self.out.print("[dim]No skills.[/dim]")
        for collision in collisions:
            self.out.print(f"[yellow]collision:[/yellow] {_safe(collision.message, 500)}")
        for refused in declined:
            self.out.print(f"[red]declined:[/red] {_safe(str(refused.error), 500)}")

    def entry(self, record: SkillRecord, qualified: str) -> None:
        origin = _origin(record.origin.kind, record.origin.label)
        lines = [
            f"[bold]{_safe(qualified)}[/bold]  ({origin})",
            f"name: {_safe(record.name)}",
            f"description: {_safe(record.description, 1024)}",
        ]
        if record.origin.is_mcp and record.origin.detail:
            lines.append(
                f"server reports its name as {_safe(record.origin.detail, 80)} (unverified)"
            )
        entry = record.entry
        if entry is not None:
            lines.append(f"uri: {_safe(entry.uri)}")
            if not record.listed:
                lines.append(
                    "[yellow]not in the server's listing; confirmed with skills/get[/yellow]"
                )
        else:
            lines.append(f"directory: {_safe(record.directory)}")
        self.out.print(Panel("\n".join(lines), expand=False))
        if entry is not None:
            self.out.print("frontmatter:")
            self.out.print(
                json.dumps(entry.frontmatter.as_dict(), indent=2, ensure_ascii=True), markup=False
            )
            if entry.is_dynamic:
                self.out.print("[yellow]resources: dynamic (content cannot be verified)[/yellow]")
                return
            table = Table(title=f"{len(entry.manifest)} files, {_size(entry.total_size)}")
            table.add_column("file", overflow="fold")
            table.add_column("size", justify="right")
            table.add_column("digest", overflow="fold")
            for uri in sorted(entry.manifest):
                item = entry.manifest[uri]
                table.add_row(_safe(uri), str(item.size), item.digest)
            self.out.print(table)

    def block(self, block: ContextBlock, *, as_json: bool) -> None:
        if as_json:
            self.json(block.to_json())
        else:
            self.text(block.text())


class TerminalApprover:
    """Asks the person at the terminal, showing what the skill is and where it is from."""

    def __init__(self, terminal: Terminal, *, stdin: TextIO | None = None) -> None:
        self.terminal = terminal
        self.stdin = stdin or sys.stdin

    def describe(self, request: ActivationRequest) -> str:
        record = request.record
        lines = [
            f"Load skill [bold]{_safe(record.name)}[/bold] from "
            f"{_origin(record.origin.kind, record.origin.label)}?",
            f"description: {_safe(record.description, 500)}",
        ]
        if record.origin.is_mcp:
            lines.append(
                "[yellow]Its text is written by the server and will reach the model as "
                "untrusted input.[/yellow]"
            )
        entry = record.entry
        if entry is not None:
            if entry.is_dynamic:
                lines.append("[red]Its content is dynamic and cannot be verified.[/red]")
            else:
                lines.append(f"{len(entry.manifest)} files, {_size(entry.total_size)}")
        tools = request.allowed_tools
        if tools:
            lines.append(
                f"[yellow]It asks for tools: {_safe(tools, 300)} (requested, not granted)[/yellow]"
            )
        if request.nested_in:
            enclosing = ", ".join(_safe(key.locator) for key in request.nested_in)
            lines.append(
                f"[yellow]It is nested inside {enclosing}; approving that skill did not "
                "approve this one.[/yellow]"
            )
        return "\n".join(lines)

    async def decide(self, request: ActivationRequest) -> Decision:
        if not self.stdin.isatty():
            self.terminal.note("not approved: no terminal to ask (use --approve-once)")
            return Decision.DENY
        self.terminal.err.print(Panel(self.describe(request), title="approval", expand=False))

        def ask() -> bool:
            answer: Any = Confirm.ask(
                "Load it?", default=False, console=self.terminal.err, stream=self.stdin
            )
            return bool(answer)

        approved = await anyio.to_thread.run_sync(ask)
        return Decision.APPROVE if approved else Decision.DENY
