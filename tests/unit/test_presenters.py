"""Every prompt renders one fact model (``trust/pending.py``): the terminal's (which
``skillward approve`` shows too), the gateway's question and its approval page. The same
pending approval, put through each, shows every fact in each, so none can leave out
what another shows."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable

import pytest
from rich.console import Console

from skillward.core.origins import SkillKey
from skillward.gateway._approval import approval_message, read_in_a_terminal
from skillward.gateway._page import Page
from skillward.terminal.prompts import Terminal, TerminalApprover
from skillward.trust.approvals import ActivationRequest, Change, Changed, Scope, record_for
from skillward.trust.pending import ApprovalFacts, PendingApproval
from tests.support.approvals import HTTP, ROOT, make_entry, make_request

OUTER = "skill://acme/billing/SKILL.md"
TOOLS = ("Bash(git status:*)", "Read")


def pending_approval() -> PendingApproval:
    """A skill nested in another, that requests tools and changed since it was approved."""
    files = {"notes.md": b"notes\n", "scripts/run.sh": b"echo\n"}
    entry = make_entry(files, extra={"allowed-tools": " ".join(TOOLS)})
    before = make_entry({**files, "notes.md": b"old notes\n"})
    approved = record_for(before, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=0)
    request = ActivationRequest(
        make_request(entry).record,
        identity=HTTP,
        nested_in=(SkillKey("acme", OUTER),),
        ref="acme:refunds",
    )
    verdict = Changed(approved, Change(modified=(f"{ROOT}/notes.md",)))
    return PendingApproval(request, verdict=verdict, remember_unavailable="no usable keyring")


def terminal(pending: PendingApproval) -> str:
    console = Console(file=io.StringIO(), width=400, emoji=False, highlight=False)
    console.print(TerminalApprover(Terminal()).describe(pending.question))
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def gateway(pending: PendingApproval) -> str:
    return approval_message(pending.facts, read_at=read_in_a_terminal(pending.facts.ref))


def page(pending: PendingApproval) -> str:
    shown = Page(id="p", nonce="n", facts=pending.facts, skill_md="body", changes=None, expires=0)
    return html.unescape(shown.render().decode("utf-8"))


@pytest.mark.threat("T26")
@pytest.mark.threat("T15")
@pytest.mark.parametrize("present", [terminal, gateway, page])
def test_every_prompt_shows_every_fact_of_the_same_pending_approval(
    present: Callable[[PendingApproval], str],
) -> None:
    shown = present(pending_approval())
    assert "acme:refunds" in shown
    for path in ("SKILL.md", "notes.md", "scripts/run.sh"):
        assert path in shown
    for tool in TOOLS:
        assert tool in shown
    assert f"nested inside {OUTER}; approving that skill did not approve this one" in shown
    assert "~ notes.md (changed)" in shown
    assert "no usable keyring" in shown


def test_the_facts_are_json_for_a_web_or_socket_approval() -> None:
    facts = pending_approval().facts
    data = json.loads(json.dumps(facts.model_dump(mode="json")))
    assert data["ref"] == "acme:refunds"
    assert data["nested_in"] == [OUTER]
    assert data["change"]["modified"] == [f"{ROOT}/notes.md"]
    assert data["requested_tools"] == list(TOOLS)
    assert data["scopes"] == ["once", "session"]
    assert [f["path"] for f in data["files"]] == ["SKILL.md", "notes.md", "scripts/run.sh"]
    assert ApprovalFacts.model_validate(data, strict=False) == facts
