"""Approval through the MCP host: what the person is asked (a form with one enum field),
rendered from the pending approval's facts (``trust/pending.py``, which every prompt
renders); what their answer means, and why one approves nothing.

Nothing the model sends counts as consent: the decision comes only from the client's
elicitation answer, and at 2026-07-28 only with a ``request_state`` this process signed
(an approval token, ``trust/tokens.py``) for the same client session, skill and content,
unexpired and not used before.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from skillward.core.errors import printable
from skillward.core.visible import LEGEND, visible
from skillward.trust.approvals import Answer, Decision, Scope
from skillward.trust.pending import ApprovalFacts

__all__ = [
    "CANCELLED",
    "CHOICES",
    "CHOSE_DENY",
    "DECISION_FIELD",
    "DECLINED",
    "ELICITED",
    "NOT_A_CHOICE",
    "NO_ANSWER_IN_TIME",
    "ON_THE_PAGE",
    "SCHEMA",
    "answer_for",
    "approval_message",
    "not_approved",
    "read_in_a_terminal",
]

#: The one field of the form, and what it may say.
DECISION_FIELD = "decision"
CHOICES = ("once", "session", "remember", "deny")
SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        DECISION_FIELD: {
            "type": "string",
            "title": "Decision",
            "description": "once: this load only; session: until this client disconnects; "
            "remember: until the skill changes; deny: load nothing",
            "enum": list(CHOICES),
        }
    },
    "required": [DECISION_FIELD],
}
_SCOPES = {"once": Scope.ONCE, "session": Scope.SESSION, "remember": Scope.REMEMBER}
#: How much of each value the message shows that is only said, never approved or granted.
_SHOWN = 300

#: Why an answer approved nothing, as the error block and the audit trail say it.
DECLINED = "the person declined"
CANCELLED = "the question was cancelled (no answer)"
NO_ANSWER_IN_TIME = "no answer in time"
CHOSE_DENY = "the person chose deny"
NOT_A_CHOICE = "the answer was not one of the choices"
#: How an approval obtained through the client is audited: the host may have let a
#: hook of its own answer (docs/gateway.md), and the audit trail says which way it came.
ELICITED = "approved through the client's elicitation"
ON_THE_PAGE = "approved on the approval page, opened through the client's elicitation"


def read_in_a_terminal(ref: str) -> str:
    """Where to read the whole SKILL.md without the approval page: the command that shows
    it (its prompt's ``v``)."""
    return f"in a terminal: skillward approve {visible(ref)} (v shows it)"


def approval_message(facts: ApprovalFacts, *, read_at: str | None) -> str:
    """What the person is asked, in plain text, from the facts every prompt shows.

    The first lines carry what is approved (the ref and its origin, what changed since
    the last approval, the skills it is nested in, every tool it requests) and where to
    read the whole SKILL.md (``read_at``: the approval page's address, or
    :func:`read_in_a_terminal`; None on the page itself); a host that folds a long
    message shows these. The rest follows: the server's reported name, what changed file
    by file, the description, the content hash, every file, hooks and nested SKILL.md
    files, why ``remember`` is unavailable, collisions. What is approved is whole, one
    value a line, in its visible form (``core/visible.py``), never cut; so is each tool
    it requests, unless they are too long to show together (``Limits.max_shown_tools``:
    then their number).
    Every other server-written value is escaped and bounded. The gateway puts no
    question longer than ``Limits.max_shown_question`` in a form."""
    lines = _first_lines(facts, read_at) + _rest(facts)
    if any("\\" in line for line in lines):
        lines.append(f"Each value is shown whole; {LEGEND}.")
    return "\n".join(lines)


def _first_lines(facts: ApprovalFacts, read_at: str | None) -> list[str]:
    origin = (
        f"server {facts.origin_label}" if facts.is_mcp else f"the local skills {facts.origin_label}"
    )
    if facts.identity:
        origin += f", reached by {visible(facts.identity)}"
    lines = [f"Load the skill {visible(facts.ref)} from {origin}?"]
    if facts.change is not None:
        lines.append(
            f"CHANGED since it was approved: {printable(facts.change.summary(), limit=600)}."
        )
    if facts.nested_in:
        enclosing = ", ".join(visible(uri) for uri in facts.nested_in)
        lines.append(
            f"It is nested inside {enclosing}; approving that skill did not approve this one."
        )
    tools = facts.requested_tools
    if tools and facts.tools_shown:
        lines.append(
            "It requests these tools. The gateway grants none of them: it cannot run or "
            "stop your host's tools."
        )
        lines.extend(f"  - {visible(tool)}" for tool in tools)
    elif tools:
        lines.append(
            f"It requests {len(tools)} tools, too long to show whole here. The gateway "
            "grants none of them: it cannot run or stop your host's tools."
        )
    if read_at is not None:
        lines.append(f"Read the whole SKILL.md {read_at}.")
    return lines


def _rest(facts: ApprovalFacts) -> list[str]:
    lines = []
    if facts.is_mcp and facts.reported_name:
        lines.append(
            f"The server reports its name as {printable(facts.reported_name, limit=80)} "
            "(unverified)."
        )
    if facts.change is not None:
        lines.extend(_changed(facts))
    lines.append(f"Description: {printable(facts.description, limit=1100)}")
    if facts.uri is not None:
        lines.append(f"Content hash: {facts.content_hash or 'none (dynamic skill, unverifiable)'}.")
    if facts.dynamic:
        lines.append("Its content is dynamic: nothing can be verified.")
    elif facts.uri is not None:
        lines.append(f"Files ({len(facts.files)}, from {visible(facts.root or '')}/):")
        lines.extend(f"  - {visible(file.path)} ({file.size} bytes)" for file in facts.files)
    else:
        lines.append(f"Directory: {visible(facts.directory or '')}")
    if facts.unparsed_tools is not None:
        lines.append(
            f"allowed-tools is not a list of tools, so nothing can be granted: "
            f"{_said(facts.unparsed_tools, facts.max_shown)}"
        )
    if facts.hooks is not None:
        lines.append(f"hooks (never run): {_said(facts.hooks, facts.max_shown)}")
    for path in facts.nested_skill_files:
        lines.append(f"Nested skill {visible(path)}: a file here, it needs its own approval.")
    for collision in facts.collisions[:5]:
        lines.append(f"Note: {printable(collision, limit=_SHOWN)}")
    if facts.remember_unavailable:
        lines.append(
            f"'remember' is unavailable here ({printable(facts.remember_unavailable, limit=200)}); "
            "it would last this session."
        )
    if facts.is_mcp:
        lines.append("The skill's text is written by the server: it is data, not instructions.")
    return lines


def _changed(facts: ApprovalFacts) -> list[str]:
    """What changed since the last approval, a line for each file or field."""
    said = functools.partial(printable, limit=500)
    return ["What changed since it was approved:", *facts.change_lines(visible, said)]


def _said(value: str, limit: int) -> str:
    """A value shown but never granted or run: whole, or, past ``limit``, its length."""
    text = visible(value)
    return text if len(text) <= limit else f"({len(text)} characters, too long to show here)"


def answer_for(
    action: str, content: Mapping[str, object] | None, *, how: str = ELICITED
) -> Answer | None:
    """The approval an elicitation answer gives, or None (decline, cancel, ``deny``, or
    anything that is not exactly one of :data:`CHOICES`)."""
    if action != "accept" or not isinstance(content, Mapping):
        return None
    if set(content) != {DECISION_FIELD}:
        return None
    choice = content[DECISION_FIELD]
    if not isinstance(choice, str) or choice not in _SCOPES:
        return None
    return Answer(Decision.APPROVE, _SCOPES[choice], how=how)


def not_approved(action: str, content: Mapping[str, object] | None) -> str:
    """Why an answer :func:`answer_for` approves nothing, approved nothing."""
    if action == "decline":
        return DECLINED
    if action == "cancel":
        return CANCELLED
    if isinstance(content, Mapping) and content.get(DECISION_FIELD) == "deny":
        return CHOSE_DENY
    return NOT_A_CHOICE
