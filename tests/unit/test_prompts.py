"""The terminal: approval prompts and catalog output, with hostile server strings."""

from __future__ import annotations

import io

import pytest

from skillward.approvals import ActivationRequest, Decision
from skillward.context import CatalogItem
from skillward.origins import Origin, SkillKey
from skillward.prompts import Terminal, TerminalApprover
from skillward.registry import SkillRecord
from skillward.wire import parse_entry

DIGEST = "sha256:" + "a" * 64
HOSTILE = "Refunds \x1b[2J\x1b[31m[bold red]APPROVED[/bold red]\u202e evil"


def record(description: str = "Refund policy", **frontmatter: object) -> SkillRecord:
    uri = "skill://acme/refunds/SKILL.md"
    fields: dict[str, object] = {"name": "refunds", "description": description, **frontmatter}
    entry = parse_entry(
        {
            "uri": uri,
            "frontmatter": fields,
            "resources": [{"uri": uri, "digest": DIGEST, "size": 1}],
        }
    )
    return SkillRecord.from_entry(Origin("mcp", "acme", "Acme \x1b[0m Corp"), entry)


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def terminal() -> tuple[Terminal, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Terminal(out=out, err=err), out, err


@pytest.mark.threat("T23")
def test_the_approval_prompt_cannot_be_driven_by_server_text() -> None:
    term, _, err = terminal()
    approver = TerminalApprover(term, stdin=FakeTty())
    text = approver.describe(ActivationRequest(record(HOSTILE)))
    term.err.print(text)
    shown = err.getvalue()
    assert "\x1b[2J" not in shown
    assert "\u202e" not in shown
    assert "[bold red]APPROVED[/bold red]" in shown  # printed literally, not as markup


def test_the_prompt_says_what_the_skill_asks_for_and_where_it_is_from() -> None:
    term, _, _ = terminal()
    approver = TerminalApprover(term, stdin=FakeTty())
    request = ActivationRequest(
        record(**{"allowed-tools": "Bash(rm:*)"}),
        nested_in=(SkillKey("acme", "skill://acme/SKILL.md"),),
    )
    text = approver.describe(request)
    assert "MCP server acme" in text
    assert "untrusted" in text
    assert "Bash(rm:*)" in text
    assert "requested, not granted" in text
    assert "did not" in text  # the enclosing skill's approval does not cover it


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "decision"),
    [("y\n", Decision.APPROVE), ("n\n", Decision.DENY), ("\n", Decision.DENY)],
)
async def test_the_person_at_the_terminal_decides_and_no_is_the_default(
    answer: str, decision: Decision
) -> None:
    term, _, _ = terminal()
    approver = TerminalApprover(term, stdin=FakeTty(answer))
    assert await approver.decide(ActivationRequest(record())) is decision


@pytest.mark.anyio
async def test_without_a_terminal_nothing_is_approved() -> None:
    term, _, err = terminal()
    approver = TerminalApprover(term, stdin=io.StringIO("y\n"))
    assert await approver.decide(ActivationRequest(record())) is Decision.DENY
    assert "no terminal" in err.getvalue()


@pytest.mark.threat("T23")
def test_catalog_output_escapes_server_text() -> None:
    term, out, _ = terminal()
    rec = record(HOSTILE)
    term.catalog(
        [CatalogItem("refunds", "refunds", rec.description, rec.origin)], ["acme:refunds"], [], []
    )
    shown = out.getvalue()
    assert "\x1b" not in shown
    assert "\u202e" not in shown


def test_narrow_terminals_wrap_references_instead_of_cutting_them() -> None:
    out = io.StringIO()
    term = Terminal(out=out)
    term.out.width = 50
    rec = record()
    long_ref = "a-server-label:acme/billing/refunds-and-more"
    term.catalog([CatalogItem(long_ref, "refunds", "d", rec.origin)], [long_ref], [], [])
    assert "…" not in out.getvalue()
