"""What the approval prompt shows of one skill: where it is from, its files, what changed
since it was approved, and what it asks for that approving it does not grant.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from skillward.core.wire import SkillEntry
from skillward.terminal._render import file_table, origin_name, relative, safe
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
    facts.add_row("skill", safe(record.name))
    origin = origin_name(record.origin.kind, record.origin.label)
    if request.identity:
        origin += f", reached by {safe(request.identity, 2000)}"
    facts.add_row("from", origin)
    if record.origin.is_mcp and record.origin.detail:
        facts.add_row("", f"reports its name as {safe(record.origin.detail, 200)} (unverified)")
    entry = record.entry
    if entry is not None:
        facts.add_row("uri", safe(entry.uri, 2000))
    else:
        facts.add_row("directory", safe(record.directory, 2000))
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
        enclosing = ", ".join(safe(key.locator) for key in request.nested_in)
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
        lines.extend(f"  {sign} {safe(relative(prefix, u), 2000)} ({what})" for u in files)
    if change.frontmatter:
        shown = ", ".join(safe(name, 100) for name in change.frontmatter)
        lines.append(f"  frontmatter fields changed: {shown}")
    if change.server:
        before, after = change.server
        lines.append(
            f"  the label now reaches another server: was {safe(before, 2000)}, "
            f"now {safe(after, 2000)}"
        )
    if change.dynamic is not None:
        lines.append("  now dynamic" if change.dynamic else "  no longer dynamic")
    if change.revoked:
        lines.append(f"  the approval was revoked: {safe(change.revoked, 500)}")
    return Text.from_markup("\n".join(lines), overflow="fold", emoji=False)


def _not_granted(question: Question) -> RenderableType | None:
    request = question.request
    lines = []
    tools = request.requested_tools
    if request.allowed_tools and not tools:
        lines.append(
            f"  allowed-tools: {safe(request.allowed_tools, 2000)} (not a space-separated "
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
    lines.extend(f"    - {safe(tool, 500)}" for tool in tools)
    if request.hooks:
        lines.append(f"  hooks: {safe(request.hooks, 2000)} (never run)")
    entry = request.record.entry
    for uri in request.nested_skill_files:
        where = relative(str(entry.root), uri) if entry else uri
        lines.append(f"  nested skill {safe(where, 2000)} (needs its own approval)")
    if not lines:
        return None
    head = "[yellow]It asks for more; approving it does not grant these:[/yellow]"
    return Text.from_markup("\n".join([head, *lines]), overflow="fold", emoji=False)
