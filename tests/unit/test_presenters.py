"""Every prompt renders one fact model (``trust/pending.py``): the terminal's (which
``skillward approve`` shows too), the gateway's question and its approval page. The same
pending approval, put through each, shows every fact in each, so none can leave out
what another shows."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rich.console import Console

from skillward.core.errors import SkillwardError
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


#: Frontmatter values a server may write that JSON (or a UI) could trip on.
HOSTILE: dict[str, Any] = {
    "hooks": {
        "pre": [float("nan"), float("inf"), 10**40, "\x1b[2J\u202e", None, True, {"deep": [[]]}]
    },
    "allowed-tools": {"Bash": ["rm -rf /", 1.5e308]},
}


@pytest.mark.threat("T26")
def test_hostile_frontmatter_reaches_a_request_as_json_and_its_facts_round_trip() -> None:
    request = make_request(make_entry(extra=HOSTILE))
    for value in (request.allowed_tools, request.hooks):
        assert json.loads(json.dumps(value, allow_nan=False)) == value
    # NaN and infinity are no JSON: null, as the listing's frontmatter holds them.
    pre: list[object] = [None, None, 10**40, "\x1b[2J\u202e", None, True, {"deep": [[]]}]
    assert request.hooks == {"pre": pre}
    facts = ApprovalFacts.of(request)  # what a host's own approver sends its UI
    text = json.dumps(facts.to_json(), allow_nan=False)
    assert json.loads(text) == facts.to_json()
    assert ApprovalFacts.model_validate_json(text) == facts
    # Shown as written, in JSON: a UI can read the value back whole.
    assert facts.hooks is not None
    assert facts.unparsed_tools is not None
    assert json.loads(facts.hooks) == request.hooks
    assert json.loads(facts.unparsed_tools) == request.allowed_tools
    assert facts.requested_tools == ()  # nothing is granted from a field in another form


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(hooks=JSON, tools=JSON)
@settings(max_examples=60)
def test_any_frontmatter_value_a_listing_takes_is_json_in_the_request_and_its_facts(
    hooks: Any, tools: Any
) -> None:
    try:
        entry = make_entry(extra={"hooks": hooks, "allowed-tools": tools})
    except (ValueError, SkillwardError):
        assume(False)  # a value the listing refuses never reaches a request
        return
    request = make_request(entry)
    for value in (request.allowed_tools, request.hooks):
        assert json.loads(json.dumps(value, allow_nan=False)) == value
    facts = ApprovalFacts.of(request)
    assert ApprovalFacts.model_validate_json(json.dumps(facts.to_json(), allow_nan=False)) == facts
