"""Signed approval tokens: a question carried across requests (the gateway's
``request_state``, a web approver's deferred approval), accepted only for exactly its
question, unexpired, and once per nonce store."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillward.core.errors import AnswerRefused, ConfigError, InvalidApprovalToken, StaleAnswer
from skillward.trust.approvals import NeverApproved, Scope
from skillward.trust.pending import PendingApproval
from skillward.trust.tokens import ApprovalTokens, MemoryNonces, TokenClaims
from tests.support.approvals import make_entry, make_request

KEY = b"k" * 32
WAITER, REF, HASH = "alice", "acme:refunds", "sha256:0"


def sign(tokens: ApprovalTokens) -> str:
    return tokens.sign(waiter=WAITER, ref=REF, content_hash=HASH)


def verify(
    tokens: ApprovalTokens,
    token: object,
    *,
    waiter: str = WAITER,
    ref: str = REF,
    content_hash: str | None = HASH,
) -> TokenClaims:
    return tokens.verify(token, waiter=waiter, ref=ref, content_hash=content_hash)


@pytest.mark.threat("T61")
@given(token=st.text(max_size=200) | st.binary(max_size=50).map(repr))
def test_a_token_not_signed_with_the_key_is_refused(token: str) -> None:
    with pytest.raises(InvalidApprovalToken):
        verify(ApprovalTokens(KEY), token)


@pytest.mark.threat("T61")
def test_a_tampered_token_is_refused() -> None:
    tokens = ApprovalTokens(KEY)
    token = sign(tokens)
    payload, mac = token.split(".")
    forged = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1] + "." + mac
    with pytest.raises(InvalidApprovalToken, match="not signed with this key"):
        verify(tokens, forged)
    with pytest.raises(InvalidApprovalToken, match="not signed with this key"):
        verify(ApprovalTokens(b"o" * 32), token)


@pytest.mark.threat("T47")
@pytest.mark.threat("T61")
def test_a_token_is_accepted_once_for_exactly_its_question() -> None:
    tokens = ApprovalTokens(KEY)
    token = sign(tokens)
    with pytest.raises(InvalidApprovalToken, match="another session"):
        verify(tokens, token, waiter="mallory")
    with pytest.raises(InvalidApprovalToken, match="another skill"):
        verify(tokens, token, ref="acme:other")
    for changed in ("sha256:1", None):
        with pytest.raises(StaleAnswer, match="changed between the question and the answer"):
            verify(tokens, token, content_hash=changed)
    claims = verify(tokens, token)
    assert (claims.waiter, claims.ref, claims.content_hash) == (WAITER, REF, HASH)
    with pytest.raises(InvalidApprovalToken, match="already used"):
        verify(tokens, token)


@pytest.mark.threat("T61")
def test_a_token_past_its_expiry_is_refused() -> None:
    now = [1000.0]
    tokens = ApprovalTokens(KEY, lifetime=60, clock=lambda: now[0])
    token = sign(tokens)
    now[0] += 61
    with pytest.raises(InvalidApprovalToken, match="expired"):
        verify(tokens, token)


@pytest.mark.threat("T61")
def test_replicas_with_the_key_accept_a_token_once_each_unless_they_share_nonces() -> None:
    token = sign(ApprovalTokens(KEY))
    # Without a shared nonce store, each replica accepts it once: replayable until expiry.
    one, two = ApprovalTokens(KEY), ApprovalTokens(KEY)
    verify(one, token)
    verify(two, token)
    # With one, once across them.
    shared = MemoryNonces()
    three, four = ApprovalTokens(KEY, nonces=shared), ApprovalTokens(KEY, nonces=shared)
    verify(three, token)
    with pytest.raises(InvalidApprovalToken, match="already used"):
        verify(four, token)


def test_a_key_shorter_than_32_bytes_is_refused_and_a_key_provider_is_read_at_each_use() -> None:
    with pytest.raises(ConfigError):
        ApprovalTokens(b"short")
    keys = [KEY]
    tokens = ApprovalTokens(lambda: keys[0])
    token = sign(tokens)
    keys[0] = b"r" * 32  # rotated: what the old key signed no longer verifies
    with pytest.raises(InvalidApprovalToken):
        verify(tokens, token)


def test_a_token_issued_for_a_pending_approval_binds_its_ref_content_and_the_scopes_offered() -> (
    None
):
    request = make_request(make_entry({"notes.md": b"n\n"}))
    pending = PendingApproval(request, verdict=NeverApproved(), remember_unavailable="no keyring")
    tokens = ApprovalTokens(KEY)
    claims = tokens.verify(
        tokens.issue(pending, waiter="alice"),
        waiter="alice",
        ref=pending.facts.ref,
        content_hash=pending.content_hash,
    )
    assert claims.ref == "acme:refunds"
    assert claims.content_hash == pending.content_hash
    assert claims.scopes == (Scope.ONCE, Scope.SESSION)
    assert issubclass(InvalidApprovalToken, AnswerRefused)
