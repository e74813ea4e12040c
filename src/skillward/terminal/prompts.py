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
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TextIO

import anyio.to_thread
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from skillward.core.context import CatalogItem, ContextBlock
from skillward.core.errors import NoTerminal, SkillwardError, printable
from skillward.core.registry import Collision, Declined, SkillRecord
from skillward.core.wire import SkillEntry
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalRecord,
    Change,
    Decision,
    Grants,
    Question,
    Scope,
)
from skillward.trust.audit import AuditEvent
from skillward.trust.gates import CrossOriginRequest, ExecutionRequest

__all__ = [
    "OriginSummary",
    "Terminal",
    "TerminalApprover",
    "TerminalCrossOriginGate",
    "TerminalExecutionGate",
    "error_json",
    "to_devnull",
]


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
    """The algorithm and the first 12 hex digits: enough to compare by eye."""
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}:{hexdigest[:12]}"


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


def _relative(root: str, uri: str) -> str:
    return uri.removeprefix(root + "/")


def _file_table(entry: SkillEntry, path_column: str, *, compact: bool = False) -> Table:
    """Every file of a (not dynamic) entry, sorted: its path from the skill root, its size
    and a short digest."""
    title = f"{_plural(len(entry.manifest), 'file')}, {_size(entry.total_size)}"
    table = (
        Table(title=title, title_justify="left", box=None, padding=(0, 2, 0, 0))
        if compact
        else Table(title=title)
    )
    table.add_column(path_column, overflow="fold")
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("digest", no_wrap=True)
    root = str(entry.root)
    for uri in sorted(entry.manifest):
        item = entry.manifest[uri]
        path = _safe(_relative(root, uri), 2000)
        table.add_row(path, _size(item.size), _short_digest(item.digest))
    return table


class _Console(Console):
    """A console whose reader may go away (``skillward show REF | head -3``)."""

    def on_broken_pipe(self) -> None:
        # rich exits with status 1 here; skillward ends quietly instead (the command line
        # returns 0).
        self.quiet = True
        to_devnull(self.file)
        raise BrokenPipeError


def to_devnull(stream: IO[str]) -> None:
    """Point ``stream``'s descriptor at /dev/null: its reader went away, so later writes,
    Python's flush at exit included, are dropped instead of failing."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


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

    def plain(self, text: str) -> None:
        """Print ``text``, already escaped, exactly: no markup, no highlighting, no
        ``:emoji:`` codes, no wrapping by the console (``skillward check``'s reports)."""
        self.out.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def heading(self, text: str) -> None:
        self.out.print(f"\n[bold]{escape(text)}[/bold]")

    def json_error(self, data: Mapping[str, object]) -> None:
        """One JSON object on stderr, as ``--json`` reports errors."""
        self.err.print(json.dumps(data, ensure_ascii=True), soft_wrap=True)

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

    def confirm(self, question: str, *, stdin: TextIO | None = None) -> bool:
        """Ask ``question`` on stderr; only **y** is yes (Enter and end of input are no)."""
        self.err.print(_safe(question, 500), soft_wrap=True)
        choices = {"y": "[bold]y[/bold]es", "n": "[bold]n[/bold]o"}
        return _choose(self.err, stdin or sys.stdin, choices, "n") == "y"

    def error(self, error: SkillwardError) -> None:
        if self.json_errors:
            self.json_error(error_json(error))
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
            self.out.print(_file_table(entry, "path (from the skill root)"))

    def approvals(self, records: Sequence[ApprovalRecord]) -> None:
        """Remembered approvals, revoked ones marked as such."""
        table = Table(title="Remembered approvals")
        for column in ("skill", "uri", "server reached by", "approved", "status"):
            table.add_column(column, overflow="fold")
        for record in records:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.granted_at))
            status = (
                f"[red]revoked[/red]: {_safe(record.revoked, 300)}"
                if record.revoked
                else _plural(len(record.files or ()), "file")
            )
            table.add_row(
                _safe(f"{record.label}:{record.name}"),
                _safe(record.uri, 2000),
                _safe(record.identity, 2000),
                when,
                status,
            )
        self.out.print(table)
        if not records:
            self.out.print("[dim]No remembered approvals.[/dim]")

    def audit(self, events: Sequence[AuditEvent], skipped: int = 0) -> None:
        """Audit events, one escaped line each, oldest first."""
        for event in events:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.time))
            extra = [
                f"{name}={value}"
                for name, value in (
                    ("scope", event.scope),
                    ("resource", event.resource_uri),
                    ("content", _short_digest(event.content_hash) if event.content_hash else None),
                )
                if value
            ]
            line = " ".join([when, event.summary(), *extra])
            self.out.print(
                printable(line, limit=8000), markup=False, highlight=False, soft_wrap=True
            )
        if not events:
            self.note("no audit events")
        if skipped:
            self.note(f"{_plural(skipped, 'line')} of the audit file skipped (not events)")

    def block(self, block: ContextBlock, *, as_json: bool) -> None:
        if as_json:
            self.json(block.to_json())
        else:
            self.text(block.text())


_CHOICE_TEXT = {
    "o": "approve [bold]o[/bold]nce",
    "s": "for this [bold]s[/bold]ession",
    "r": "[bold]r[/bold]emember",
    "v": "[bold]v[/bold]iew SKILL.md first",
    "e": "review [bold]e[/bold]ach one",
    "d": "[bold]d[/bold]eny",
}
_SCOPES = {"o": Scope.ONCE, "s": Scope.SESSION, "r": Scope.REMEMBER}
NO_TERMINAL = "cannot ask: no terminal; use --approve-once or `skillward approve`"


class _AtTerminal:
    """Something that asks the person at the terminal, on stderr."""

    def __init__(self, terminal: Terminal, *, stdin: TextIO | None = None) -> None:
        self.terminal = terminal
        self.stdin = stdin or sys.stdin

    @property
    def console(self) -> Console:
        return self.terminal.err

    def _show(self, renderable: RenderableType | str) -> None:
        # Wrap to the terminal and fold long words: never crop what a person decides on.
        self.console.print(renderable, soft_wrap=False, overflow="fold", crop=False)


class TerminalApprover(_AtTerminal):
    """Asks the person at the terminal, showing what the skill is and where it is from.

    A :class:`~skillward.trust.approvals.Prompter` (an ``ApprovalBook`` remembers the
    answers), and an :class:`~skillward.trust.approvals.Approver` on its own. Everything
    from a server is escaped; long text is wrapped, never cut. With no terminal it
    raises :class:`~skillward.core.errors.NoTerminal`, which says how to approve instead.
    """

    # --- what is shown ----------------------------------------------------------------

    def describe(self, question: Question | ActivationRequest) -> Group:
        """Everything a careful person needs to decide on one skill."""
        if isinstance(question, ActivationRequest):
            question = Question(question)
        request = question.request
        record = request.record
        facts = Table.grid(padding=(0, 2))
        facts.add_column(style="bold", no_wrap=True)
        facts.add_column(overflow="fold")
        facts.add_row("skill", _safe(record.name))
        origin = _origin(record.origin.kind, record.origin.label)
        if request.identity:
            origin += f", reached by {_safe(request.identity, 2000)}"
        facts.add_row("from", origin)
        if record.origin.is_mcp and record.origin.detail:
            facts.add_row(
                "", f"reports its name as {_safe(record.origin.detail, 200)} (unverified)"
            )
        entry = record.entry
        if entry is not None:
            facts.add_row("uri", _safe(entry.uri, 2000))
        else:
            facts.add_row("directory", _safe(record.directory, 2000))
        facts.add_row("description", _safe(record.description, 4096))
        fields = entry.frontmatter.as_dict() if entry else {}
        if "license" in fields:
            facts.add_row("license", _safe(fields["license"], 2000))
        parts: list[RenderableType] = [facts]
        if record.origin.is_mcp:
            parts.append(
                "[yellow]Its text is written by the server and reaches the model as "
                "untrusted input.[/yellow]"
            )
        if entry is not None:
            parts.append(self._files(entry))
        if question.change:
            parts.append(self._change(question.change, entry.root if entry else None))
        requests = self._not_granted(question)
        if requests:
            parts.append(requests)
        if request.nested_in:
            enclosing = ", ".join(_safe(key.locator) for key in request.nested_in)
            parts.append(
                f"[yellow]It is nested inside {enclosing}; approving that skill did not "
                "approve this one.[/yellow]"
            )
        for collision in request.collisions:
            parts.append(f"[yellow]collision:[/yellow] {_safe(collision, 1000)}")
        if question.remember_unavailable:
            parts.append(
                f"[dim]remember is not offered: {_safe(question.remember_unavailable, 500)}[/dim]"
            )
        return Group(*parts)

    def _files(self, entry: SkillEntry) -> RenderableType:
        if entry.is_dynamic:
            return "[red]Its content is dynamic and cannot be verified.[/red]"
        return _file_table(entry, "file", compact=True)

    def _change(self, change: Change, root: object) -> RenderableType:
        prefix = str(root) if root is not None else ""
        lines = ["[bold yellow]Changed since it was approved:[/bold yellow]"]
        for sign, files, what in (
            ("~", change.modified, "changed"),
            ("+", change.added, "added"),
            ("-", change.removed, "removed"),
        ):
            lines.extend(f"  {sign} {_safe(_relative(prefix, u), 2000)} ({what})" for u in files)
        if change.frontmatter:
            shown = ", ".join(_safe(name, 100) for name in change.frontmatter)
            lines.append(f"  frontmatter fields changed: {shown}")
        if change.server:
            before, after = change.server
            lines.append(
                f"  the label now reaches another server: was {_safe(before, 2000)}, "
                f"now {_safe(after, 2000)}"
            )
        if change.dynamic is not None:
            lines.append("  now dynamic" if change.dynamic else "  no longer dynamic")
        if change.revoked:
            lines.append(f"  the approval was revoked: {_safe(change.revoked, 500)}")
        return Text.from_markup("\n".join(lines), overflow="fold")

    def _not_granted(self, question: Question) -> RenderableType | None:
        request = question.request
        lines = []
        tools = request.requested_tools
        if request.allowed_tools and not tools:
            lines.append(
                f"  allowed-tools: {_safe(request.allowed_tools, 2000)} (not a space-separated "
                "list of tools: nothing can be granted)"
            )
        elif tools and not request.record.origin.is_mcp:
            lines.append("  allowed-tools (a local skill: the host's own rules apply):")
        elif tools and not request.tools_grantable:
            lines.append("  allowed-tools (the administrator's policy forbids granting them):")
        elif tools and question.grant_tools:
            lines.append("  allowed-tools, [bold]granted with the approval (--grant-tools)[/bold]:")
        elif tools:
            lines.append("  allowed-tools (asked about separately after you approve):")
        lines.extend(f"    - {_safe(tool, 500)}" for tool in tools)
        if request.hooks:
            lines.append(f"  hooks: {_safe(request.hooks, 2000)} (never run)")
        entry = request.record.entry
        for uri in request.nested_skill_files:
            where = _relative(str(entry.root), uri) if entry else uri
            lines.append(f"  nested skill {_safe(where, 2000)} (needs its own approval)")
        if not lines:
            return None
        head = "[yellow]It asks for more; approving it does not grant these:[/yellow]"
        return Text.from_markup("\n".join([head, *lines]), overflow="fold")

    # --- asking -----------------------------------------------------------------------

    def _read(self, choices: list[str]) -> str:
        """One of ``choices``. Enter and end of input mean deny; anything not offered is
        asked again."""
        return _choose(self.console, self.stdin, {c: _CHOICE_TEXT[c] for c in choices}, "d")

    async def _tools(self, question: Question) -> Grants:
        """The tool grant: a separate, explicit choice after approving, listing each tool."""
        request = question.request
        tools = request.requested_tools
        if not tools or not request.record.origin.is_mcp or not request.tools_grantable:
            return Grants()
        if question.grant_tools:
            return Grants(tools=tools)
        lines = [
            f"[bold]{_safe(request.record.name)}[/bold] asks for these tools while the model "
            "acts on it:",
            *(f"  - {_safe(tool, 500)}" for tool in tools),
            "Approving the skill did not grant them. Granted, they stay with this approval "
            "and end when the skill changes.",
        ]
        self._show(Text.from_markup("\n".join(lines), overflow="fold"))
        choices = {"g": "[bold]g[/bold]rant these tools", "n": "[bold]n[/bold]o"}
        choice = await anyio.to_thread.run_sync(_choose, self.console, self.stdin, choices, "n")
        return Grants(tools=tools) if choice == "g" else Grants()

    async def _view(self, request: ActivationRequest) -> None:
        assert request.viewer is not None
        try:
            text = await request.viewer()
        except SkillwardError as error:
            self.terminal.error(error)
            return
        self._show(Rule("SKILL.md, verified; shown to you only, not to the model"))
        for line in text.splitlines():
            self._show(Text(printable(line, limit=100_000), overflow="fold"))
        self._show(Rule())

    async def _one(self, question: Question, heading: str) -> Answer:
        self._show(Rule(heading))
        self._show(self.describe(question))
        choices = ["o", "s"]
        if question.remember_unavailable is None:
            choices.append("r")
        if question.request.viewer is not None:
            choices.append("v")
        choices.append("d")
        while True:
            choice = await anyio.to_thread.run_sync(self._read, choices)
            if choice == "v":
                await self._view(question.request)
                continue
            if choice in _SCOPES:
                return Answer(Decision.APPROVE, _SCOPES[choice], await self._tools(question))
            return Answer(Decision.DENY)

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        if not questions:
            return []
        if not self.stdin.isatty():
            first = questions[0].request.key
            raise NoTerminal(NO_TERMINAL, server=first.origin, uri=first.locator)
        if len(questions) == 1:
            return [await self._one(questions[0], "approve loading this skill?")]
        total = len(questions)
        for number, question in enumerate(questions, 1):
            self._show(Rule(f"skill {number} of {total} waiting for approval"))
            self._show(self.describe(question))
        choices = ["o", "s"]
        if all(q.remember_unavailable is None for q in questions):
            choices.append("r")
        choices += ["e", "d"]
        self._show(Rule(f"approve all {total} skills?"))
        choice = await anyio.to_thread.run_sync(self._read, choices)
        if choice in _SCOPES:
            # Tools are never granted in bulk: each skill that asks for them is asked apart.
            return [
                Answer(Decision.APPROVE, _SCOPES[choice], await self._tools(q)) for q in questions
            ]
        if choice == "e":
            return [
                await self._one(q, f"skill {n} of {total}: approve loading it?")
                for n, q in enumerate(questions, 1)
            ]
        return [Answer(Decision.DENY) for _ in questions]

    async def decide(self, request: ActivationRequest) -> Decision:
        """As an Approver on its own: ask, and remember nothing."""
        return (await self.consent(request)).decision

    async def consent(self, request: ActivationRequest) -> Answer:
        """As a :class:`~skillward.trust.approvals.Granting` approver on its own: ask, with the
        tool grant apart, for this activation only."""
        (answer,) = await self.ask([Question(request, remember_unavailable="nothing is stored")])
        return Answer(answer.decision, Scope.ONCE, answer.grants)

    async def held(self, request: ActivationRequest) -> Grants | None:
        """Nothing is recorded, so nothing is held."""
        return None

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool:
        """Nothing is recorded, so no grant can be kept."""
        return False


def _choose(console: Console, stdin: TextIO, choices: dict[str, str], default: str) -> str:
    """One key of ``choices`` read from ``stdin``. Enter and end of input mean ``default``
    (always the refusal); anything not offered is asked again."""
    offered = ", ".join(choices.values())
    while True:
        console.print(f"{offered}? [dim]({default})[/dim]: ", end="", soft_wrap=False)
        line = stdin.readline()
        if not line:
            console.print()
            return default
        answer = line.strip().lower()[:1] or default
        if answer in choices:
            return answer
        console.print(f"Please answer one of: {', '.join(choices)}.")


class _TerminalGate(_AtTerminal):
    """Asks the person at the terminal about one gate decision; no terminal means deny."""

    async def _choose(self, choices: dict[str, str]) -> str:
        if not self.stdin.isatty():
            self.terminal.note("denied: no terminal to ask")
            return "d"
        return await anyio.to_thread.run_sync(_choose, self.console, self.stdin, choices, "d")


class TerminalExecutionGate(_TerminalGate):
    """An :class:`~skillward.trust.gates.ExecutionGate` that asks at the terminal, naming the
    skill, its server and the command. "Always for this skill" is offered only when the
    skill's approval is recorded (the grant joins that record and ends with it)."""

    async def decide(self, request: ExecutionRequest) -> Decision:
        skill = request.skill
        where = f"server {_safe(skill.origin)}" if skill else "an MCP server"
        if request.identity:
            where += f", reached by {_safe(request.identity, 2000)}"
        lines = [
            f"The model wants to run [bold]{_safe(request.tool, 200)}[/bold] while it acts on "
            f"skill [bold]{_safe(request.name or '?')}[/bold] from {where}.",
        ]
        if skill is not None:
            lines.append(f"  skill uri: {_safe(skill.locator, 2000)}")
        lines.append(f"  command: {_safe(request.detail or '(no arguments)', 4000)}")
        others = [k for k in request.acting if k != skill]
        if others:
            shown = ", ".join(f"{_safe(k.origin)}:{_safe(k.locator)}" for k in others)
            lines.append(f"  also acting on: {shown} (each is asked about)")
        lines.append(
            "[yellow]The skill's text is written by its server; it may be asking the model "
            "to run this.[/yellow]"
        )
        self._show(Rule("allow code execution?"))
        self._show(Text.from_markup("\n".join(lines), overflow="fold"))
        choices = {"o": "allow [bold]o[/bold]nce"}
        if request.remember is not None:
            choices["a"] = "[bold]a[/bold]lways for this skill until it changes"
        choices["d"] = "[bold]d[/bold]eny"
        choice = await self._choose(choices)
        if choice == "a" and request.remember is not None:
            if not await request.remember():
                self.terminal.note("not remembered: allowed once")
            return Decision.APPROVE
        return Decision.APPROVE if choice == "o" else Decision.DENY


class TerminalCrossOriginGate(_TerminalGate):
    """A :class:`~skillward.trust.gates.CrossOriginGate` that asks at the terminal, per call,
    naming the server read and every server whose text is in context. Never remembered."""

    async def decide(self, request: CrossOriginRequest) -> Decision:
        acting = ", ".join(_safe(label) for label in request.acting)
        lines = [
            f"The model wants to read from server [bold]{_safe(request.target)}[/bold] while "
            f"text from server {acting} is in its context.",
            f"  uri: {_safe(request.uri, 2000)}",
            "[yellow]Text from one server can steer the model into reading another: allow "
            "it only if you asked for this.[/yellow]",
        ]
        self._show(Rule("allow a read across servers?"))
        self._show(Text.from_markup("\n".join(lines), overflow="fold"))
        choice = await self._choose(
            {"y": "[bold]y[/bold]es, this read only", "d": "[bold]d[/bold]eny"}
        )
        return Decision.APPROVE if choice == "y" else Decision.DENY
