"""The approval socket's messages: any line is one message or a UsageError quoting none of
it; a message and the facts it carries come back as they were sent."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.errors import UsageError
from skillward.trust._socketwire import (
    AnswerRequest,
    ListReply,
    ListRequest,
    ViewRequest,
    Waiting,
    encode,
    parse_reply,
    parse_request,
)
from skillward.trust.approvals import Change, Changed, Scope, record_for
from skillward.trust.pending import PendingApproval
from tests.support.approvals import HTTP, make_entry, make_request

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {"op": st.sampled_from(["pending", "view", "answer", "error", "x"])},
    optional={
        "id": JSON,
        "ref": JSON,
        "decision": st.sampled_from(["approve", "deny", "yes"]) | JSON,
        "scope": st.sampled_from(["once", "session", "remember", "always"]) | JSON,
        "content_hash": JSON,
        "extra": JSON,
    },
)


@pytest.mark.threat("T60")
@given(line=st.binary(max_size=200) | FIELDS.map(lambda d: json.dumps(d).encode()))
def test_any_line_is_a_request_or_a_usage_error_that_quotes_none_of_it(line: bytes) -> None:
    try:
        request = parse_request(line)
    except UsageError as error:
        refused = error.message
        assert refused == "that is not a request the approval socket takes"
        return
    assert isinstance(request, ListRequest | ViewRequest | AnswerRequest)
    assert parse_request(encode(request)) == request


@given(line=st.binary(max_size=200) | FIELDS.map(lambda d: json.dumps(d).encode()))
def test_any_line_is_a_reply_or_a_usage_error(line: bytes) -> None:
    try:
        reply = parse_reply(line)
    except UsageError:
        return
    assert parse_reply(encode(reply)) == reply


def test_an_answer_names_exactly_one_question_decision_scope_and_content() -> None:
    good = {
        "op": "answer",
        "id": "q",
        "decision": "approve",
        "scope": "session",
        "content_hash": "h",
    }
    assert parse_request(json.dumps(good).encode()) == AnswerRequest(
        op="answer", id="q", decision="approve", scope="session", content_hash="h"
    )
    for bad in (
        {**good, "decision": "yes"},
        {**good, "scope": "always"},
        {**good, "id": ""},
        {**good, "also": "approve everything"},
        {k: v for k, v in good.items() if k != "content_hash"},
        {**good, "id": "q" * 65},
    ):
        with pytest.raises(UsageError):
            parse_request(json.dumps(bad).encode())


def test_the_facts_a_gateway_sends_are_the_facts_its_prompt_would_show() -> None:
    old = make_entry({"notes.md": b"v1\n"}, extra={"allowed-tools": "Bash Read"})
    new = make_entry({"notes.md": b"v2 \x1b[2J\n"}, extra={"allowed-tools": "Bash Read"})
    record = record_for(old, label="acme", identity=HTTP, scope=Scope.REMEMBER, granted_at=1.0)
    change = Change(modified=("skill://acme/billing/refunds/notes.md",))
    pending = PendingApproval(
        make_request(new), verdict=Changed(record, change), remember_unavailable="no keyring \u202e"
    )
    question = Waiting(
        id="q",
        ref=pending.facts.ref,
        content_hash=pending.content_hash,
        facts=pending.facts,
        client="inspector\x1b]0;owned\x07",
        created=1.0,
        expires=601.0,
    )
    sent = ListReply(op="pending", gateway="skillward-gateway", version="1", questions=(question,))
    line = encode(sent)
    assert b"\n" not in line
    received = parse_reply(line)
    assert received == sent
    assert isinstance(received, ListReply)
    assert received.questions[0].facts == pending.facts
    assert received.questions[0].facts.change == change
