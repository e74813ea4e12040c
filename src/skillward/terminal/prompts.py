"""The terminal: approval prompts and readable output (over ``_render`` and ``_describe``).

Everything shown here that came from a server (names, descriptions, URIs,
``serverInfo.name``) is untrusted: it is escaped for rich markup and stripped of
control, bidi and invisible characters before it reaches the terminal.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import anyio.from_thread
import anyio.lowlevel
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from skillward.core.context import CatalogItem, ContextBlock
from skillward.core.errors import NoTerminal, SkillwardError, printable
from skillward.core.registry import Collision, Declined, SkillRecord
from skillward.core.visible import visible
from skillward.terminal._describe import describe_facts, describe_question
from skillward.terminal._render import (
    MARKS_NOTE,
    OriginSummary,
    SafeConsole,
    choose,
    error_json,
    exact,
    file_table,
    interactive,
    origin_heading,
    origin_name,
    plural,
    safe,
    short_digest,
)
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalRecord,
    Decision,
    Grants,
    Question,
    Scope,
    SkillMdViewer,
)
from skillward.trust.audit import AuditEvent
from skillward.trust.gates import CrossOriginRequest, ExecutionRequest
from skillward.trust.pending import ApprovalFacts, file_facts

__all__ = [
    "Terminal",
    "TerminalApprover",
    "TerminalCrossOriginGate",
    "TerminalExecutionGate",
]


class Terminal:
    """Readable output for people; ``--json`` output for scripts.

    Text wraps at the terminal's width and is never cropped; context blocks and JSON
    are printed verbatim, unwrapped. With ``json_errors``, errors are JSON on stderr.
    With ``command_line`` it speaks for the ``skillward`` command: an error's hint is
    the one worded for it (``SkillwardError.command_hint``).
    """

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        json_errors: bool = False,
        command_line: bool = False,
    ) -> None:
        self.out = SafeConsole(file=out or sys.stdout, highlight=False, emoji=False)
        self.err = SafeConsole(file=err or sys.stderr, highlight=False, emoji=False)
        self.json_errors = json_errors
        self.command_line = command_line

    def json(self, data: object) -> None:
        # ASCII: a server's C1 controls, bidi and invisible characters stay JSON escapes
        # on a terminal, as they are in every other JSON skillward prints.
        self.out.print(json.dumps(data, indent=2, ensure_ascii=True), markup=False, soft_wrap=True)

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

    def grants(self, granted: Sequence[str], requested: Sequence[str] = ()) -> None:
        """What a load or an approval grants, on stderr: every tool whole, quoted in its
        visible form, never cut (what can be granted is held to ``Limits.max_shown_tools``
        where it is granted); then what the skill requested, cut as any note is."""
        said = ", ".join(f'"{visible(tool, quote=True)}"' for tool in granted) or "none"
        self.err.print(f"[dim]tools granted: {escape(said)}[/dim]", soft_wrap=True)
        if requested:
            asked = ", ".join(f'"{visible(tool, quote=True)}"' for tool in requested)
            self.note(f"requested {len(requested)} tools: {asked}")

    def note(self, text: str) -> None:
        self.err.print(f"[dim]{safe(text, 500)}[/dim]")

    def server_log(self, label: str, path: str, lines: Sequence[str]) -> None:
        """The last lines a server wrote to its stderr, and where the whole log is.

        ``lines`` are already escaped (``_serverlog.escaped_lines``); they are printed
        as plain text, never as markup.
        """
        if not lines:
            self.note(f"server {label!r} wrote nothing to stderr (log: {path})")
            return
        self.note(
            f"server {label!r} stderr, last {plural(len(lines), 'line')} "
            f"(full log: {path}, or: skillward logs {label}):"
        )
        for line in lines:
            self.err.print("  | " + line, markup=False, highlight=False)

    def confirm(self, question: str, *, stdin: TextIO | None = None) -> bool:
        """Ask ``question`` on stderr; only **y** is yes (Enter and end of input are no)."""
        self.err.print(safe(question, 500), soft_wrap=True)
        choices = {"y": "[bold]y[/bold]es", "n": "[bold]n[/bold]o"}
        return choose(self.err, stdin or sys.stdin, choices, "n") == "y"

    def pick(
        self, question: str, options: Sequence[str], *, stdin: TextIO | None = None
    ) -> int | None:
        """Ask which one of ``options`` (at most 9, numbered, each escaped) on stderr: its
        index, or None for none of them (the default: Enter and end of input)."""
        self.err.print(safe(question, 500), soft_wrap=True)
        for number, option in enumerate(options, 1):
            self.err.print(f"  {number}. {safe(option, 4000)}", soft_wrap=True)
        choices = {str(n): str(n) for n in range(1, len(options) + 1)}
        choices["n"] = "[bold]n[/bold]one"
        answer = choose(self.err, stdin or sys.stdin, choices, "n")
        return None if answer == "n" else int(answer) - 1

    def error(self, error: SkillwardError) -> None:
        if self.json_errors:
            self.json_error(error_json(error, command_line=self.command_line))
            return
        line = f"[red]skillward:[/red] {safe(str(error), 2000)}"
        hint = error.command_hint if self.command_line else error.hint
        if hint:
            line += f"\n  [dim]hint: {safe(hint, 500)}[/dim]"
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
            self.out.print(origin_heading(summary))
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
            self.out.print(f"[yellow]collision:[/yellow] {safe(collision.message, 500)}")
        for refused in declined:
            self.out.print(f"[red]declined:[/red] {safe(str(refused.error), 500)}")

    def _indented(self, text: str, indent: int, *, style: str | None = None) -> None:
        """``text`` wrapped at the terminal's width below an indent: wrapped, never cut."""
        pad = " " * indent
        width = max(20, self.out.width - 1)
        wrapped = textwrap.fill(text, width, initial_indent=pad, subsequent_indent=pad)
        self.out.print(Text(wrapped, style=style or ""), soft_wrap=True)

    def entry(self, record: SkillRecord, qualified: str) -> None:
        origin = origin_name(record.origin.kind, record.origin.label)
        lines = [
            f"[bold]{safe(qualified)}[/bold]  ({origin})",
            f"name: {safe(record.name)}",
            f"description: {safe(record.description, 1024)}",
        ]
        if record.origin.is_mcp and record.origin.detail:
            lines.append(
                f"server reports its name as {safe(record.origin.detail, 80)} (unverified)"
            )
        entry = record.entry
        if entry is not None:
            lines.append(f"uri: {safe(entry.uri)}")
            if not record.listed:
                lines.append(
                    "[yellow]not in the server's listing; confirmed with skills/get[/yellow]"
                )
        else:
            lines.append(f"directory: {safe(record.directory)}")
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
            self.out.print(file_table(file_facts(entry), "path (from the skill root)"))

    def approvals(self, records: Sequence[ApprovalRecord]) -> None:
        """Remembered approvals, revoked ones marked as such."""
        table = Table(title="Remembered approvals")
        for column in ("skill", "uri", "server reached by", "approved", "status"):
            table.add_column(column, overflow="fold")
        for record in records:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.granted_at))
            status = (
                f"[red]revoked[/red]: {safe(record.revoked, 300)}"
                if record.revoked
                else plural(len(record.files or ()), "file")
            )
            table.add_row(
                safe(f"{record.label}:{record.name}"),
                safe(record.uri, 2000),
                safe(record.identity, 2000),
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
                    ("content", short_digest(event.content_hash) if event.content_hash else None),
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
            self.note(f"{plural(skipped, 'line')} of the audit file skipped (not events)")

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
NO_TERMINAL = "cannot ask for approval: there is no terminal to ask at"


#: Seconds between the prompt's checks for a signal, while it waits for an answer.
_SIGNAL_CHECK = 0.25


async def _typed(read: Callable[..., str], *args: Any) -> str:
    """What the person types, read in a daemon thread: a cancelled or interrupted
    question (Ctrl-C) ends at once, never waiting for a line nobody will type (a worker
    thread of the event loop's would hold the process open until Enter)."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    answer: list[str] = []
    failed: list[BaseException] = []

    def run() -> None:
        if hasattr(signal, "pthread_sigmask"):
            # Ctrl-C is for the event loop's thread: delivered to this one, blocked in its
            # read, it would wake nothing, and the loop would wait on for good.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            answer.append(read(*args))
        except BaseException as error:  # handed to the asking task, not lost in the thread
            failed.append(error)
        with contextlib.suppress(RuntimeError):  # the event loop is gone already
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=run, name="skillward prompt", daemon=True).start()
    while not done.is_set():
        # Woken now and then: a Ctrl-C the kernel delivered to another thread of this
        # process (a child watcher's, say) is only seen once the loop's thread runs.
        with anyio.move_on_after(_SIGNAL_CHECK):
            await done.wait()
    if failed:
        raise failed[0]
    return answer[0]


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
    from a server is escaped; long text is wrapped, never cut; what is approved or
    granted (its URI and files, each tool) is shown whole in its visible form, and tools
    too long for that are not offered. With no terminal it raises
    :class:`~skillward.core.errors.NoTerminal`, which says how to approve instead.
    """

    # --- what is shown ----------------------------------------------------------------

    def describe(self, question: Question | ActivationRequest) -> Group:
        """Everything a careful person needs to decide on one skill."""
        return describe_question(question)

    # --- asking -----------------------------------------------------------------------

    def _read(self, choices: list[str]) -> str:
        """One of ``choices``. Enter and end of input mean deny; anything not offered is
        asked again."""
        return choose(self.console, self.stdin, {c: _CHOICE_TEXT[c] for c in choices}, "d")

    async def _tools(self, question: Question) -> Grants:
        """The tool grant: a separate, explicit choice after approving, listing each tool."""
        request = question.request
        tools = request.requested_tools
        if not tools or not request.record.origin.is_mcp or request.tools_refused is not None:
            return Grants()
        if question.grant_tools:
            return Grants(tools=tools)
        lines = [
            f"[bold]{exact(request.record.name)}[/bold] asks for these tools while the model "
            "acts on it:",
            *(f"  - {exact(tool)}" for tool in tools),
            "Approving the skill did not grant them. Granted, they stay with this approval "
            "and end when the skill changes.",
        ]
        if any(visible(tool) != tool for tool in tools):
            lines.append(MARKS_NOTE)
        self._show(Text.from_markup("\n".join(lines), overflow="fold", emoji=False))
        choices = {"g": "[bold]g[/bold]rant these tools", "n": "[bold]n[/bold]o"}
        choice = await _typed(choose, self.console, self.stdin, choices, "n")
        return Grants(tools=tools) if choice == "g" else Grants()

    async def _view(self, viewer: SkillMdViewer) -> None:
        try:
            text = await viewer()
        except SkillwardError as error:
            self.terminal.error(error)
            return
        self._show(Rule("SKILL.md, verified; shown to you only, not to the model"))
        # Whole, however long a line (SKILL.md is bounded by Limits.max_skill_bytes): what
        # is approved is all of it.
        # Each line behind a gutter: nothing in it can pass for the prompt's own lines.
        for line in text.splitlines():
            self._show(Text("│ " + printable(line, limit=len(line)), overflow="fold"))
        self._show(Rule("end of SKILL.md"))

    async def _scope(
        self,
        heading: str,
        shown: RenderableType,
        scopes: Sequence[Scope],
        viewer: SkillMdViewer | None,
    ) -> Scope | None:
        """The scope the person approves for (of ``scopes``), or None when they deny;
        ``v`` shows SKILL.md first, when there is a ``viewer``."""
        self._show(Rule(heading))
        self._show(shown)
        choices = [key for key, scope in _SCOPES.items() if scope in scopes]
        if viewer is not None:
            choices.append("v")
        choices.append("d")
        while True:
            choice = await _typed(self._read, choices)
            if choice == "v" and viewer is not None:
                await self._view(viewer)
                # Asked again under what is approved, not under the end of SKILL.md.
                self._show(Rule(heading))
                self._show(shown)
                continue
            return _SCOPES.get(choice)

    async def _one(self, question: Question, heading: str) -> Answer:
        scopes = ApprovalFacts.of(question).scopes
        viewer = question.request.viewer
        scope = await self._scope(heading, self.describe(question), scopes, viewer)
        if scope is None:
            return Answer(Decision.DENY)
        return Answer(Decision.APPROVE, scope, await self._tools(question))

    async def ask_facts(
        self,
        facts: ApprovalFacts,
        *,
        viewer: SkillMdViewer | None = None,
        heading: str = "approve loading this skill?",
    ) -> Answer:
        """Ask about one pending approval known by its facts alone (a running gateway's
        question, for ``skillward approve``): the prompt :meth:`ask` shows, offering the
        scopes ``facts`` offers; nothing but the approval is granted (no tool grant).
        With no terminal it raises NoTerminal."""
        if not interactive(self.stdin):
            raise NoTerminal(
                NO_TERMINAL,
                server=facts.origin_label,
                uri=facts.uri,
                command_hint="Run the command in a terminal, or answer without a prompt "
                "with --yes (and --scope).",
            )
        scope = await self._scope(heading, describe_facts(facts), facts.scopes, viewer)
        return Answer(Decision.DENY) if scope is None else Answer(Decision.APPROVE, scope)

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        if not questions:
            return []
        if not interactive(self.stdin):
            first = questions[0].request
            # The command names the skill when there is one to name (its ref as prompts show it).
            ref = "REF"
            if len(questions) == 1:
                ref = shlex.quote(first.ref or f"{first.key.origin}:{first.record.name}")
            raise NoTerminal(
                NO_TERMINAL,
                server=first.key.origin,
                uri=first.key.locator,
                command_hint=f"Run the command in a terminal, approve the skill first with "
                f"`skillward approve {ref}`, or load it once with "
                f"`skillward load {ref} --approve-once`.",
            )
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
        choice = await _typed(self._read, choices)
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


class _TerminalGate(_AtTerminal):
    """Asks the person at the terminal about one gate decision; no terminal means deny."""

    async def _choose(self, choices: dict[str, str]) -> str:
        if not interactive(self.stdin):
            self.terminal.note("denied: no terminal to ask")
            return "d"
        return await _typed(choose, self.console, self.stdin, choices, "d")


class TerminalExecutionGate(_TerminalGate):
    """An :class:`~skillward.trust.gates.ExecutionGate` that asks at the terminal, naming the
    skill, its server and the command: every argument whole, in its visible form, what
    names a command or path first. "Always for this skill" is offered only when the
    skill's approval is recorded (the grant joins that record and ends with it)."""

    async def decide(self, request: ExecutionRequest) -> Decision:
        skill = request.skill
        where = f"server {safe(skill.origin)}" if skill else "an MCP server"
        if request.identity:
            where += f", reached by {exact(request.identity)}"
        lines = [
            f"The model wants to run [bold]{exact(request.tool)}[/bold] while it acts on "
            f"skill [bold]{exact(request.name or '?')}[/bold] from {where}.",
        ]
        if skill is not None:
            lines.append(f"  skill uri: {exact(skill.locator)}")
        # Whole: the host refuses, without asking, a call too long to show (Gates).
        shown = request.shown
        if request.arguments is not None:
            lines.append("  arguments (what names a command or path first):")
        else:
            lines.append("  command:")
        lines.extend(f"    {escape(line)}" for line in (shown or "(no arguments)").split("\n"))
        if "\\" in shown:
            lines.append(f"  {MARKS_NOTE}")
        others = [k for k in request.acting if k != skill]
        if others:
            listed = ", ".join(f"{safe(k.origin)}:{exact(k.locator)}" for k in others)
            lines.append(f"  also acting on: {listed} (each is asked about)")
        lines.append(
            "[yellow]The skill's text is written by its server; it may be asking the model "
            "to run this.[/yellow]"
        )
        self._show(Rule("allow code execution?"))
        self._show(Text.from_markup("\n".join(lines), overflow="fold", emoji=False))
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
    naming the server read and every server whose text is in context, and the URI whole.
    Never remembered."""

    async def decide(self, request: CrossOriginRequest) -> Decision:
        acting = ", ".join(safe(label) for label in request.acting)
        lines = [
            f"The model wants to read from server [bold]{safe(request.target)}[/bold] while "
            f"text from server {acting} is in its context.",
            f"  uri: {exact(request.uri)}",
            "[yellow]Text from one server can steer the model into reading another: allow "
            "it only if you asked for this.[/yellow]",
        ]
        self._show(Rule("allow a read across servers?"))
        self._show(Text.from_markup("\n".join(lines), overflow="fold", emoji=False))
        choice = await self._choose(
            {"y": "[bold]y[/bold]es, this read only", "d": "[bold]d[/bold]eny"}
        )
        return Decision.APPROVE if choice == "y" else Decision.DENY
