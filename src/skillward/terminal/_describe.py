"""What the approval prompt shows of one skill, rendered from the facts every prompt shows
(``trust/pending.py``): where it is from, its files, what changed since it was approved,
the skills it is nested in, and what it asks for that approving it does not grant.
"""

from __future__ import annotations

import functools

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from skillward.core.visible import visible
from skillward.terminal._render import (
    MARKS_NOTE,
    exact,
    file_table,
    origin_name,
    plural,
    safe,
)
from skillward.trust.approvals import ActivationRequest, Question
from skillward.trust.pending import ApprovalFacts

__all__ = ["describe_facts", "describe_question"]


def describe_question(question: Question | ActivationRequest) -> Group:
    """Everything a careful person needs to decide on one skill."""
    if isinstance(question, ActivationRequest):
        question = Question(question)
    return describe_facts(ApprovalFacts.of(question))


def describe_facts(facts: ApprovalFacts) -> Group:
    """The prompt's view of ``facts``: server text escaped for rich markup, what is
    approved or granted whole in its visible form."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("skill", exact(facts.name))
    table.add_row("ref", exact(facts.ref))
    origin = origin_name(facts.origin_kind, facts.origin_label)
    if facts.identity:
        origin += f", reached by {exact(facts.identity)}"
    table.add_row("from", origin)
    if facts.reported_name:
        table.add_row("", f"reports its name as {safe(facts.reported_name, 200)} (unverified)")
    if facts.uri is not None:
        table.add_row("uri", exact(facts.uri))
    else:
        table.add_row("directory", exact(facts.directory))
    table.add_row("description", safe(facts.description, 4096))
    if facts.license is not None:
        table.add_row("license", safe(facts.license, 2000))
    parts: list[RenderableType] = [table]
    if facts.is_mcp:
        parts.append(
            "[yellow]Its text is written by the server and reaches the model as "
            "untrusted input.[/yellow]"
        )
    if facts.dynamic:
        parts.append("[red]Its content is dynamic and cannot be verified.[/red]")
    elif facts.uri is not None:
        parts.append(file_table(facts.files, "file", compact=True))
    if facts.change:
        parts.append(_change(facts))
    requests = _not_granted(facts)
    if requests:
        parts.append(requests)
    if facts.nested_in:
        enclosing = ", ".join(exact(uri) for uri in facts.nested_in)
        parts.append(
            f"[yellow]It is nested inside {enclosing}; approving that skill did not "
            "approve this one.[/yellow]"
        )
    for collision in facts.collisions:
        parts.append(f"[yellow]collision:[/yellow] {safe(collision, 1000)}")
    if facts.remember_unavailable:
        parts.append(f"[dim]remember is not offered: {safe(facts.remember_unavailable, 500)}[/dim]")
    return Group(*parts)


def _change(facts: ApprovalFacts) -> RenderableType:
    lines = [
        "[bold yellow]Changed since it was approved:[/bold yellow]",
        *facts.change_lines(exact, functools.partial(safe, limit=500)),
    ]
    return Text.from_markup("\n".join(lines), overflow="fold", emoji=False)


def _not_granted(facts: ApprovalFacts) -> RenderableType | None:
    limit = facts.max_shown
    lines = []
    tools = facts.requested_tools
    refused = facts.tools_refused
    if facts.unparsed_tools is not None:
        lines.append(
            f"  allowed-tools: {_within(facts.unparsed_tools, limit)} (not a space-separated "
            "list of tools: nothing can be granted)"
        )
    elif tools and not facts.is_mcp:
        lines.append("  allowed-tools (a local skill: the host's own rules apply):")
    elif tools and refused is not None:
        lines.append(f"  allowed-tools (none can be granted: {safe(refused, 500)}):")
    elif tools and facts.grant_tools:
        lines.append("  allowed-tools, [bold]granted with the approval (--grant-tools)[/bold]:")
    elif tools:
        lines.append("  allowed-tools (asked about separately after you approve):")
    if facts.tools_shown:
        lines.extend(f"    - {exact(tool)}" for tool in tools)
        if any(visible(tool) != tool for tool in tools):
            lines.append(f"    {MARKS_NOTE}")
    else:
        lines.append(f"    ({plural(len(tools), 'tool')}, too long to show whole here)")
    if facts.hooks is not None:
        lines.append(f"  hooks: {_within(facts.hooks, limit)} (never run)")
    for path in facts.nested_skill_files:
        lines.append(f"  nested skill {exact(path)} (needs its own approval)")
    if not lines:
        return None
    head = "[yellow]It asks for more; approving it does not grant these:[/yellow]"
    return Text.from_markup("\n".join([head, *lines]), overflow="fold", emoji=False)


def _within(value: str, limit: int) -> str:
    """A value shown but never granted or run: whole, or, past ``limit``, its length."""
    text = visible(value)
    if len(text) > limit:
        return f"({len(text)} characters, too long to show here)"
    return escape(text)
