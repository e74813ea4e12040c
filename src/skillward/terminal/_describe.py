"""What the approval prompt shows of one skill: where it is from, its files, what changed
since it was approved, and what it asks for that approving it does not grant.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from skillward.core.visible import shown_length, visible
from skillward.core.wire import SkillEntry
from skillward.terminal._render import (
    MARKS_NOTE,
    exact,
    file_table,
    origin_name,
    plural,
    relative,
    safe,
)
from skillward.trust.approvals import ActivationRequest, Change, Question

__all__ = ["describe_question"]


def describe_question(question: Question | ActivationRequest) -> Group:
    """Everything a careful person needs to decide on one skill."""
    if isinstance(question, ActivationRequest):
        question = Question(question)
    request = question.request
    record = request.record
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold")
    facts.add_row("skill", exact(record.name))
    origin = origin_name(record.origin.kind, record.origin.label)
    if request.identity:
        origin += f", reached by {exact(request.identity)}"
    facts.add_row("from", origin)
    if record.origin.is_mcp and record.origin.detail:
        facts.add_row("", f"reports its name as {safe(record.origin.detail, 200)} (unverified)")
    entry = record.entry
    if entry is not None:
        facts.add_row("uri", exact(entry.uri))
    else:
        facts.add_row("directory", exact(record.directory))
    facts.add_row("description", safe(record.description, 4096))
    fields = entry.frontmatter.as_dict() if entry else {}
    if "license" in fields:
        facts.add_row("license", safe(fields["license"], 2000))
    parts: list[RenderableType] = [facts]
    if record.origin.is_mcp:
        parts.append(
            "[yellow]Its text is written by the server and reaches the model as "
            "untrusted input.[/yellow]"
        )
    if entry is not None:
        parts.append(_files(entry))
    if question.change:
        parts.append(_change(question.change, entry.root if entry else None))
    requests = _not_granted(question)
    if requests:
        parts.append(requests)
    if request.nested_in:
        enclosing = ", ".join(exact(key.locator) for key in request.nested_in)
        parts.append(
            f"[yellow]It is nested inside {enclosing}; approving that skill did not "
            "approve this one.[/yellow]"
        )
    for collision in request.collisions:
        parts.append(f"[yellow]collision:[/yellow] {safe(collision, 1000)}")
    if question.remember_unavailable:
        parts.append(
            f"[dim]remember is not offered: {safe(question.remember_unavailable, 500)}[/dim]"
        )
    return Group(*parts)


def _files(entry: SkillEntry) -> RenderableType:
    if entry.is_dynamic:
        return "[red]Its content is dynamic and cannot be verified.[/red]"
    return file_table(entry, "file", compact=True)


def _change(change: Change, root: object) -> RenderableType:
    prefix = str(root) if root is not None else ""
    lines = ["[bold yellow]Changed since it was approved:[/bold yellow]"]
    for sign, files, what in (
        ("~", change.modified, "changed"),
        ("+", change.added, "added"),
        ("-", change.removed, "removed"),
    ):
        lines.extend(f"  {sign} {exact(relative(prefix, u))} ({what})" for u in files)
    if change.frontmatter:
        shown = ", ".join(exact(name) for name in change.frontmatter)
        lines.append(f"  frontmatter fields changed: {shown}")
    if change.server:
        before, after = change.server
        lines.append(
            f"  the label now reaches another server: was {exact(before)}, now {exact(after)}"
        )
    if change.dynamic is not None:
        lines.append("  now dynamic" if change.dynamic else "  no longer dynamic")
    if change.revoked:
        lines.append(f"  the approval was revoked: {safe(change.revoked, 500)}")
    return Text.from_markup("\n".join(lines), overflow="fold", emoji=False)


def _not_granted(question: Question) -> RenderableType | None:
    request = question.request
    limit = request.max_shown_tools
    lines = []
    tools = request.requested_tools
    refused = request.tools_refused
    if request.allowed_tools and not tools:
        lines.append(
            f"  allowed-tools: {_within(request.allowed_tools, limit)} (not a space-separated "
            "list of tools: nothing can be granted)"
        )
    elif tools and not request.record.origin.is_mcp:
        lines.append("  allowed-tools (a local skill: the host's own rules apply):")
    elif tools and refused is not None:
        lines.append(f"  allowed-tools (none can be granted: {safe(refused, 500)}):")
    elif tools and question.grant_tools:
        lines.append("  allowed-tools, [bold]granted with the approval (--grant-tools)[/bold]:")
    elif tools:
        lines.append("  allowed-tools (asked about separately after you approve):")
    if shown_length(tools) <= limit:
        lines.extend(f"    - {exact(tool)}" for tool in tools)
        if any(visible(tool) != tool for tool in tools):
            lines.append(f"    {MARKS_NOTE}")
    else:
        lines.append(f"    ({plural(len(tools), 'tool')}, too long to show whole here)")
    if request.hooks:
        lines.append(f"  hooks: {_within(request.hooks, limit)} (never run)")
    entry = request.record.entry
    for uri in request.nested_skill_files:
        where = relative(str(entry.root), uri) if entry else uri
        lines.append(f"  nested skill {exact(where)} (needs its own approval)")
    if not lines:
        return None
    head = "[yellow]It asks for more; approving it does not grant these:[/yellow]"
    return Text.from_markup("\n".join([head, *lines]), overflow="fold", emoji=False)


def _within(value: object, limit: int) -> str:
    """A value shown but never granted or run: whole, or, past ``limit``, its length."""
    text = visible(str(value))
    if len(text) > limit:
        return f"({len(text)} characters, too long to show here)"
    return escape(text)
