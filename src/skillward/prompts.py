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
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import anyio.to_thread
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Confirm
from rich.table import Table
from rich.text import Text

from skillward.approvals import ActivationRequest, Decision
from skillward.context import CatalogItem, ContextBlock
from skillward.errors import SkillwardError, printable
from skillward.registry import Collision, Declined, SkillRecord
from skillward.uris import parse_uri

__all__ = ["OriginSummary", "Terminal", "TerminalApprover", "error_json"]


def _safe(text: object, limit: int = 300) -> str:
    return escape(printable(str(text), limit=limit))


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _origin(record_origin_kind: str, label: str) -> str:
    return f"MCP server {label}" if record_origin_kind == "mcp" else f"local skills {label}"


def _short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to compare by eye."""
    return digest[: len("sha256:") + 12]


def _origin_heading(summary: OriginSummary) -> Text:
    heading = Text(_origin(summary.kind, summary.label), style="bold")
    if summary.target:
        heading.append(f"  {printable(summary.target, limit=300)}", style="dim")
    if summary.kind == "mcp" and summary.reported_name:
        heading.append(
            f"  (reports its name as {printable(summary.reported_name, limit=80)!r}, unverified)",
            style="dim",
        )
    return heading


def error_json(error: SkillwardError) -> dict[str, object]:
    """An error as ``--json`` prints it: its type, one-line text, hint and exit code."""
    return {
        "error": type(error).__name__,
        "message": str(error),
        "hint": printable(error.hint, limit=500) if error.hint else None,
        "server": error.server,
        "uri": printable(error.uri) if error.uri is not None else None,
        "exit_code": error.exit_code,
    }


@dataclass(frozen=True, slots=True)
class OriginSummary:
    """One origin as ``list`` shows it: where it is, and what is wrong with it, if anything."""

    kind: str
    label: str
    #: How it is reached: a command line or URL, or the local directory.
    target: str
    #: ``serverInfo.name`` as the server reported it (unverified).
    reported_name: str | None = None
    #: Why it offers nothing: failed to connect, disconnected, or no skills extension.
    problem: str | None = None


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
    """Readable output for people; ``--json`` output for scripts.

    Text wraps at the terminal's width and is never cropped; context blocks and JSON
    are printed verbatim, unwrapped. With ``json_errors``, errors are JSON on stderr.
    """

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, *, json_errors: bool = False
    ) -> None:
        self.out = _Console(file=out or sys.stdout, highlight=False)
        self.err = _Console(file=err or sys.stderr, highlight=False)
        self.json_errors = json_errors

    def json(self, data: object) -> None:
        self.out.print(json.dumps(data, indent=2, ensure_ascii=False), markup=False, soft_wrap=True)

    def text(self, text: str) -> None:
        # Context blocks are already neutralised; print them verbatim, never as markup.
        self.out.print(text, markup=False, highlight=False, soft_wrap=True)

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
        if self.json_errors:
            self.err.print(json.dumps(error_json(error), ensure_ascii=True), soft_wrap=True)
            return
        line = f"[red]skillward:[/red] {_safe(str(error), 2000)}"
        if error.hint:
            line += f"\n  [dim]hint: {_safe(error.hint, 500)}[/dim]"
        # One line each, for the error and its hint: the terminal wraps, grep still matches.
        self.err.print(line, soft_wrap=True)

    def catalog(
        self,
        items: Sequence[CatalogItem],
        qualified: Sequence[str],
        collisions: Sequence[Collision],
        declined: Sequence[Declined],
        origins: Sequence[OriginSummary] = (),
    ) -> None:
        """The catalog grouped by origin: each origin once, then its skills.

        A reference is printed whole on a line of its own, never broken; descriptions
        wrap below it. The server's self-reported name is shown once, marked unverified.
        """
        by_origin: dict[str, list[tuple[CatalogItem, str]]] = {}
        for item, full in zip(items, qualified, strict=True):
            by_origin.setdefault(item.origin.label, []).append((item, full))
        summaries = {o.label: o for o in origins}
        for item, _ in (pair for group in by_origin.values() for pair in group):
            summaries.setdefault(
                item.origin.label,
                OriginSummary(item.origin.kind, item.origin.label, item.origin.detail or "", None),
            )
        if not summaries:
            self.out.print("[dim]No skills.[/dim]")
        for label, summary in summaries.items():
            self.out.print(_origin_heading(summary))
            if summary.problem:
                self._indented(printable(summary.problem, limit=500), 2, style="yellow")
            group = by_origin.get(label, [])
            if not group and not summary.problem:
                self._indented("no skills", 2, style="dim")
            for item, full in group:
                ref = Text("  " + printable(item.ref, limit=300), style="bold")
                if full != item.ref:
                    ref.append(f"  ({printable(full, limit=300)})", style="dim")
                self.out.print(ref, soft_wrap=True)
                self._indented(printable(item.description, limit=1024), 6)
        for collision in collisions:
            self.out.print(f"[yellow]collision:[/yellow] {_safe(collision.message, 500)}")
        for refused in declined:
            self.out.print(f"[red]declined:[/red] {_safe(str(refused.error), 500)}")

    def _indented(self, text: str, indent: int, *, style: str | None = None) -> None:
        """``text`` wrapped at the terminal's width below an indent: wrapped, never cut."""
        pad = " " * indent
        width = max(20, self.out.width - 1)
        wrapped = textwrap.fill(text, width, initial_indent=pad, subsequent_indent=pad)
        self.out.print(Text(wrapped, style=style or ""), soft_wrap=True)

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
                json.dumps(entry.frontmatter.as_dict(), indent=2, ensure_ascii=True),
                markup=False,
                soft_wrap=True,
            )
            if entry.is_dynamic:
                self.out.print("[yellow]resources: dynamic (content cannot be verified)[/yellow]")
                return
            count = len(entry.manifest)
            table = Table(
                title=f"{count} {'file' if count == 1 else 'files'}, {_size(entry.total_size)}"
            )
            table.add_column("path (from the skill root)", overflow="fold")
            table.add_column("size", justify="right", no_wrap=True)
            table.add_column("digest", no_wrap=True)
            root = entry.root
            for uri in sorted(entry.manifest, key=lambda u: root.file_path(parse_uri(u))):
                item = entry.manifest[uri]
                path = root.file_path(parse_uri(uri))
                table.add_row(_safe(path), _size(item.size), _short_digest(item.digest))
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
