"""An approver for a web backend: the person answers in a browser, not where the host asks.

:class:`WebApprover` is the approver a ``SkillHost`` decides through (``pending``,
``ask_about``, ``settle``: the one approval flow), with two ways for the answer to come
back from a web request:

* **Parked.** When nothing settles a skill, :meth:`WebApprover.ask_about` parks the
  question in :class:`~skillward.trust.parking.ParkedApprovals` and waits for the
  answer. A web handler, on any thread or event loop, lists what waits
  (:meth:`WebApprover.waiting`: each question's JSON from the same facts the terminal
  shows) and answers one (:meth:`WebApprover.answer`) with the content hash it showed.
  Nobody answering before the question expires is
  :class:`~skillward.core.errors.ApprovalTimedOut`, never a refusal.
* **Deferred.** A backend that must answer its request at once hands the person the
  pending approval's facts and a signed token (:meth:`WebApprover.defer`), and in a later
  request, on this replica or another sharing the key, prepares the skill again and
  resumes with the token (:meth:`WebApprover.resume`): it approves only the content that
  was shown, once (see :mod:`skillward.trust.tokens` for what once means across replicas).

Approvals are recorded by its :class:`~skillward.trust.book.ApprovalBook`: ``session``
in memory, ``remember`` in ``store``, under the policy's ``rules``. Each answer is
audited as given through the web approver (``via="web"``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from skillward.core.errors import AnswerRefused
from skillward.core.origins import SkillKey
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalRules,
    ApprovalStorage,
    Decision,
    Grants,
    Question,
    Scope,
)
from skillward.trust.audit import AuditTrail
from skillward.trust.book import ApprovalBook
from skillward.trust.parking import ParkedApproval, ParkedApprovals
from skillward.trust.pending import PendingApproval
from skillward.trust.tokens import ApprovalTokens

__all__ = ["WebApprover"]

#: How an answer given through it is audited, and where it came from.
ANSWERED = "approved through the host's web approval"
RESUMED = "approved through the host's web approval, resumed with its signed token"
VIA = "web"


class _NoPrompt:
    """The book's prompter: a web approver asks through its parked questions, never here."""

    async def ask(self, questions: Sequence[Question]) -> list[Answer]:
        return [Answer(Decision.DENY) for _ in questions]


class WebApprover:
    """Asks the person through a web backend, one session's (``waiter``'s) questions.

    Share ``parked`` (the questions waiting) and ``tokens`` (the signing key) between
    the approvers of every session; give each session its own ``waiter`` key, so that a
    session answers only its own questions. ``store`` keeps ``remember`` approvals
    (``None``: nothing outlives the approver), ``rules`` are the policy's
    (``policy.approval_rules(store)``).
    """

    def __init__(
        self,
        *,
        waiter: str = "",
        parked: ParkedApprovals | None = None,
        tokens: ApprovalTokens | None = None,
        store: ApprovalStorage | None = None,
        rules: ApprovalRules | None = None,
        audit: AuditTrail | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.waiter = waiter
        self.parked = parked if parked is not None else ParkedApprovals(clock=clock)
        self.tokens = tokens if tokens is not None else ApprovalTokens(clock=clock)
        #: Where its approvals are recorded.
        self.book = ApprovalBook(_NoPrompt(), store=store, rules=rules, audit=audit, clock=clock)

    # --- the host's approval flow (Deciding) --------------------------------------------

    async def pending(self, request: ActivationRequest) -> PendingApproval:
        """The decision on ``request`` as the records hold it (the host's ``prepare``)."""
        return await self.book.pending(request)

    async def ask_about(self, pending: PendingApproval) -> Answer:
        """Park ``pending`` and wait for its answer (:meth:`answer`, from a web request).
        Raise ApprovalTimedOut when nobody answers before it expires."""
        parked = self.parked.park(pending, waiter=self.waiter)
        return await self.parked.wait(parked)

    async def settle(self, pending: PendingApproval, answer: Answer) -> Answer:
        """Record ``answer`` for exactly ``pending``'s content (the host's ``load``)."""
        return await self.book.settle(pending, answer)

    # --- an approver on its own, and the grants its records hold -----------------------

    async def consent(self, request: ActivationRequest) -> Answer:
        pending = await self.pending(request)
        if pending.settled:
            return pending.held()
        return await self.settle(pending, await self.ask_about(pending))

    async def decide(self, request: ActivationRequest) -> Decision:
        return (await self.consent(request)).decision

    async def held(self, request: ActivationRequest) -> Grants | None:
        return await self.book.held(request)

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool:
        return await self.book.add_grant(request, grants)

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        await self.book.revoke(key, reason=reason)

    # --- the web backend's side ---------------------------------------------------------

    def waiting(self) -> list[ParkedApproval]:
        """This session's questions waiting for an answer, oldest first (each one's
        ``to_json()`` for the page)."""
        return self.parked.pending(waiter=self.waiter)

    def answer(
        self,
        question: str,
        decision: Decision | str,
        scope: Scope | str = Scope.ONCE,
        *,
        content_hash: str | None,
    ) -> Answer:
        """Answer this session's question ``question`` (from any thread or event loop),
        for the content hash the page showed: see
        :meth:`~skillward.trust.parking.ParkedApprovals.answer`."""
        return self.parked.answer(
            question,
            decision,
            scope,
            content_hash=content_hash,
            waiter=self.waiter,
            how=ANSWERED,
            via=VIA,
        )

    def defer(self, pending: PendingApproval) -> str:
        """A signed token for the question ``pending`` puts, to resume in a later
        request (:meth:`resume`): show the person ``pending.facts`` with it."""
        return self.tokens.issue(pending, waiter=self.waiter)

    def resume(
        self,
        token: str,
        pending: PendingApproval,
        decision: Decision | str,
        scope: Scope | str = Scope.ONCE,
    ) -> Answer:
        """The person's answer to a deferred question, for the host's ``load``:
        ``pending`` is the skill prepared again in this request, and ``token`` the one
        :meth:`defer` gave for it. Raise InvalidApprovalToken (forged, tampered,
        expired, used, or for another session or skill), StaleAnswer (the content
        changed since it was shown) or AnswerRefused (a decision or scope that is not
        one, or was not offered)."""
        claims = self.tokens.verify(
            token, waiter=self.waiter, ref=pending.facts.ref, content_hash=pending.content_hash
        )
        try:
            chosen = Decision(decision)
            length = Scope(scope) if chosen is Decision.APPROVE else Scope.ONCE
        except ValueError:
            raise AnswerRefused(
                "a decision is approve or deny, a scope once, session or remember"
            ) from None
        if length not in claims.scopes or length not in pending.facts.scopes:
            raise AnswerRefused(f"{length.value!r} was not offered for this question")
        return Answer(chosen, length, how=RESUMED, via=VIA)
