"""The approval book: the approver that remembers approvals, bound to content, and asks.

:class:`ApprovalBook` keeps ``session`` approvals in memory and ``remember`` approvals
in an :class:`~skillward.trust.approvals.ApprovalStorage` (the keyring-authenticated
file in ``_store.py``), decides from what it holds with the pure
:func:`~skillward.trust.approvals.assess_any`, and asks a
:class:`~skillward.trust.approvals.Prompter` about the rest, joining questions that
arrive together into one prompt. What an approval binds to, and the decision itself,
live in :mod:`skillward.trust.approvals`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import anyio
import anyio.to_thread

from skillward.core.errors import PolicyDenied, RememberUnavailable
from skillward.core.origins import SkillKey
from skillward.core.wire import SkillEntry
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    ApprovalRecord,
    ApprovalRules,
    ApprovalStorage,
    Approved,
    Change,
    Changed,
    CurrentStorage,
    Decision,
    Grants,
    NeverApproved,
    Prompter,
    Question,
    Scope,
    Verdict,
    assess_any,
    content_hash,
    describe_scope,
    grantable,
    record_for,
)
from skillward.trust.audit import AuditTrail
from skillward.trust.pending import PendingApproval

__all__ = ["ApprovalBook"]

logger = logging.getLogger("skillward")

Clock = Callable[[], float]


def _denied() -> Answer:
    # A function, not a constant: nothing is built at import.
    return Answer(Decision.DENY)


@dataclass
class _Waiting:
    questions: list[Question]
    answers: list[Answer] | None = None


class _Asking:
    """One prompt at a time: questions that arrive while a prompt is open, or while other
    decisions are still looking at what is recorded, are asked together in the next."""

    def __init__(self) -> None:
        self._waiting: list[_Waiting] = []
        self._prompting: anyio.Lock | None = None
        # Decisions still looking at what is recorded; a prompt waits for them to join it.
        self._deciding = 0
        self._settled: anyio.Event | None = None

    @contextlib.contextmanager
    def deciding(self) -> Iterator[None]:
        """While held, a prompt about to open waits for this decision's questions."""
        self._deciding += 1
        try:
            yield
        finally:
            self._deciding -= 1
            if self._deciding == 0 and self._settled is not None:
                self._settled.set()

    async def ask(self, prompter: Prompter, questions: list[Question]) -> list[Answer]:
        """``prompter``'s answers to ``questions``, asked with every question waiting. A
        prompter that miscounts approves nothing; one that fails denies the questions
        that waited with these, and raises."""
        if not questions:
            return []
        if self._prompting is None:
            self._prompting = anyio.Lock()
        waiting = _Waiting(questions)
        self._waiting.append(waiting)
        async with self._prompting:
            if waiting.answers is not None:
                return waiting.answers
            # Requests that arrived together join this prompt.
            while self._deciding > 0:
                self._settled = anyio.Event()
                await self._settled.wait()
            batch, self._waiting = self._waiting, []
            flat = [q for w in batch for q in w.questions]
            try:
                answers = list(await prompter.ask(flat))
            except BaseException:
                for other in batch:
                    other.answers = [_denied()] * len(other.questions)
                raise
            if len(answers) != len(flat):
                answers = [_denied()] * len(flat)  # a prompter that miscounts approves nothing
            for other in batch:
                other.answers, answers = (
                    answers[: len(other.questions)],
                    answers[len(other.questions) :],
                )
        assert waiting.answers is not None
        return waiting.answers


class ApprovalBook:
    """An :class:`Approver` that remembers approvals, bound to content, and asks for the rest.

    ``session`` approvals live in this object; ``remember`` approvals in ``store``
    (``None``: nothing is remembered across processes). When remembering is not
    possible (no usable keyring, a dynamic or local skill) the approval is kept for
    the session instead, and ``notify`` is told once, with the reason. ``rules``
    (from a policy) cap the scope an approval is recorded for and how long a record
    is honoured.

    Questions that arrive while a prompt is open wait and are asked together.

    It is :class:`Granting`: the grants a person gives with an approval (the
    requested tools) or later (execution while acting on the skill) are kept in
    the approval's record, so a change to the skill revokes them with it.
    Approvals it records outside a host (:meth:`review`, :meth:`grant`) and
    revocations go to ``audit``; a host records the decisions it asks for itself.
    """

    def __init__(
        self,
        prompter: Prompter,
        *,
        store: ApprovalStorage | None = None,
        clock: Clock = time.time,
        policy_version: str = "",
        notify: Callable[[str], None] | None = None,
        audit: AuditTrail | None = None,
        rules: ApprovalRules | None = None,
        unrecorded: dict[SkillKey, str] | None = None,
    ) -> None:
        self.prompter = prompter
        self.store = store
        self.clock = clock
        self.rules = rules or ApprovalRules()
        self.policy_version = policy_version or self.rules.version
        self.audit = audit or AuditTrail(clock=clock)
        self._notify = notify or logger.warning
        self._said: set[str] = set()
        self._session: dict[SkillKey, ApprovalRecord] = {}
        self._local: set[SkillKey] = set()
        # Revoked in this process, whether or not the store could be written; shared by
        # every book over the same store when given (``unrecorded``: the gateway's client
        # sessions), so that a revocation the store could not record holds in them all.
        self._revoked: dict[SkillKey, str] = {} if unrecorded is None else unrecorded
        self._asking = _Asking()
        # Whether ``store`` is CurrentStorage, asked once per store object: a protocol's
        # isinstance costs microseconds a call. Held, so the object is never another's.
        self._current: tuple[object, CurrentStorage | None] = (None, None)

    # --- Approver and Granting ---------------------------------------------------------

    async def decide(self, request: ActivationRequest) -> Decision:
        return (await self.answers([request]))[0].decision

    async def decide_many(self, requests: Sequence[ActivationRequest]) -> list[Decision]:
        """Decide several activations, asking about every unapproved one in one prompt."""
        return [answer.decision for answer in await self.answers(requests)]

    async def consent(self, request: ActivationRequest) -> Answer:
        """The decision on one activation, with the grants given or held with it."""
        return (await self.answers([request]))[0]

    async def answers(self, requests: Sequence[ActivationRequest]) -> list[Answer]:
        """Like :meth:`decide_many`, with each answer's scope and grants.

        An approval already recorded answers without asking (``held``), with the
        grants its record holds; the rest are asked about together.
        """
        with self._asking.deciding():
            pendings = [await self.pending(request) for request in requests]
        asked = [pending for pending in pendings if not pending.settled]
        replies = await self._asking.ask(self.prompter, [pending.question for pending in asked])
        given = {id(pending): reply for pending, reply in zip(asked, replies, strict=True)}
        return [
            pending.held() if pending.settled else await self.settle(pending, given[id(pending)])
            for pending in pendings
        ]

    # --- a pending decision (Deciding) -------------------------------------------------------

    async def pending(self, request: ActivationRequest) -> PendingApproval:
        """The decision on ``request`` as the records hold it: the verdict, computed once
        (the store read once), and, when a person is to be asked, why ``remember``
        cannot be offered."""
        with self._asking.deciding():
            verdict = await self.verdict(request)
            why = None
            if not isinstance(verdict, Approved):
                why = await self.remember_unavailable(request)
        return PendingApproval(request, verdict=verdict, remember_unavailable=why)

    async def ask_about(self, pending: PendingApproval) -> Answer:
        """The prompter's answer about ``pending`` (asked together with the questions
        waiting), not yet recorded: :meth:`settle` records it."""
        (answer,) = await self._asking.ask(self.prompter, [pending.question])
        return answer

    async def settle(self, pending: PendingApproval, answer: Answer) -> Answer:
        """Record a person's ``answer`` to ``pending``: an approval of exactly its content
        (the entry it was prepared for), granting only what it can be granted, for the
        scope the rules and the store allow, which the answer returned names."""
        answer = self._granted(pending.request, answer)
        if answer.decision is Decision.APPROVE:
            # The scope it was recorded in: remember may have become session or once.
            scope = await self._record(pending.request, answer, strict=False)
            answer = dataclasses.replace(answer, scope=scope)
        return answer

    async def held(self, request: ActivationRequest) -> Grants | None:
        """The grants a recorded approval of exactly this content holds now (asks no
        one); None when no record approves it."""
        verdict = await self.verdict(request)
        if isinstance(verdict, Approved) and verdict.record is not None:
            return grantable(request, verdict.record.grants)
        return None

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool:
        """Add ``grants`` to the recorded approval of exactly this content, in its own
        scope. False when nothing records one (an approval given once, a local skill,
        or content that changed): the grant cannot be remembered then."""
        verdict = await self.verdict(request)
        record = verdict.record if isinstance(verdict, Approved) else None
        if record is None:
            return False
        given = grantable(request, grants)
        merged = Grants(
            tools=tuple(dict.fromkeys((*record.grants.tools, *given.tools))),
            execution=record.grants.execution or given.execution,
        )
        updated = record.model_copy(update={"grants": merged})
        if record.scope is Scope.REMEMBER:
            try:
                # Only over the record read above: never over a revocation written since.
                await self._put(updated, replaces=record)
            except RememberUnavailable as error:
                self.say(f"the grant is not remembered: {error.message}")
                return False
        else:
            self._session[request.key] = updated
        return True

    async def review(self, request: ActivationRequest, *, grant_tools: bool = False) -> Answer:
        """Ask about ``request`` whatever is recorded (``skillward approve``), and record it.

        ``grant_tools``: the person asked for the requested tools to be granted with
        the approval; the prompt shows them as granted instead of asking.
        """
        pending = await self.pending(request)
        question = pending.question
        if pending.settled:  # asked whatever is recorded
            question = await self.question(request, None)
        if grant_tools:
            question = dataclasses.replace(question, grant_tools=True)
        (answer,) = await self._asking.ask(self.prompter, [question])
        if grant_tools and answer.decision is Decision.APPROVE:
            tools = Grants(tools=request.requested_tools, execution=answer.grants.execution)
            answer = dataclasses.replace(answer, grants=tools)
        answer = self._granted(request, answer)
        if answer.decision is Decision.APPROVE:
            # The scope it was recorded in: remember may have become session.
            answer = dataclasses.replace(
                answer, scope=await self._record(request, answer, strict=False)
            )
        self._audit_answer(request, answer)
        return answer

    async def grant(self, request: ActivationRequest, answer: Answer) -> Scope:
        """Record an approval the person gave without a prompt (``approve --yes``).

        Unlike a prompt's answer, ``remember`` is not quietly narrowed to the
        session: it raises :class:`~skillward.core.errors.RememberUnavailable`.
        """
        answer = self._granted(request, answer)
        scope = await self._record(request, answer, strict=True)
        self._audit_answer(request, dataclasses.replace(answer, scope=scope))
        return scope

    async def revoke(self, key: SkillKey, *, reason: str, change: Change | None = None) -> None:
        """Revoke every approval of ``key``: the session's and the stored one."""
        self._revoked[key] = reason
        self._local.discard(key)
        held = self._session.get(key)
        if held is not None and held.revoked is None:
            self._session[key] = held.model_copy(update={"revoked": reason})
        stored: ApprovalRecord | None = None
        if self.store is not None:
            store = self.store
            try:
                stored = await self._stored(key)
                await anyio.to_thread.run_sync(lambda: store.revoke(key, reason=reason))
            except RememberUnavailable as error:
                logger.warning(
                    "could not record the revocation of %s:%s (%s); it holds in this process",
                    key.origin,
                    key.locator,
                    error.message,
                )
        record = held or stored
        self.audit.record(
            "revocation",
            "revoked",
            label=key.origin,
            identity=record.identity if record is not None else None,
            skill_uri=key.locator,
            content_hash=record.content_hash if record is not None else None,
            reason=change.summary(names=False) if change is not None else "revoked",
        )

    def _granted(self, request: ActivationRequest, answer: Answer) -> Answer:
        """A prompter's answer, granting only what the request can be granted."""
        if answer.decision is not Decision.APPROVE:
            return Answer(Decision.DENY, how=answer.how, via=answer.via)
        return dataclasses.replace(answer, grants=grantable(request, answer.grants), held=False)

    def _audit_answer(self, request: ActivationRequest, answer: Answer) -> None:
        """Record a person's answer given outside a host: the approval, then each grant."""
        entry = request.record.entry
        record = functools.partial(
            self.audit.record,
            label=request.key.origin,
            identity=request.identity,
            skill_uri=request.key.locator,
            content_hash=content_hash(entry) if entry is not None else None,
        )
        if answer.decision is not Decision.APPROVE:
            record("denial", "denied", reason="the person denied it", gate="activation")
            return
        scope = answer.scope.value
        record(
            "approval", "approved", reason="approved by the person", gate="activation", scope=scope
        )
        if answer.grants.tools:
            record(
                "grant",
                "granted",
                gate="allowed_tools",
                reason=f"{len(answer.grants.tools)} requested tools granted",
                scope=scope,
            )

    # --- what is recorded -----------------------------------------------------------------

    async def verdict(self, request: ActivationRequest) -> Verdict:
        """The decision from what is recorded, without asking anyone."""
        record, entry = request.record, request.record.entry
        if entry is None:
            held = record.key in self._local
            return Approved() if held else NeverApproved()
        if request.identity is None:
            return NeverApproved()
        session = self._honoured(self._session.get(record.key), Scope.SESSION)
        stored = None
        if self.rules.allows(Scope.REMEMBER):
            stored = self._honoured(await self._stored(record.key), Scope.REMEMBER)
        if stored is not None and record.key in self._revoked and stored.revoked is None:
            stored = stored.model_copy(update={"revoked": self._revoked[record.key]})
        records = [r for r in (session, stored) if r is not None]
        verdict = assess_any(entry, request.identity, records)
        if isinstance(verdict, Changed) and verdict.record.revoked is None:
            # Any difference revokes, whoever looks (a host, `skillward approve`, a grant).
            change = verdict.change
            await self.revoke(record.key, reason=change.summary(), change=change)
        return verdict

    def _honoured(self, record: ApprovalRecord | None, scope: Scope) -> ApprovalRecord | None:
        """``record``, unless the rules no longer allow its scope or it is too old, or
        (remembered) the policy refuses the store it is kept in."""
        if record is None or not self.rules.allows(scope):
            return None
        if scope is Scope.REMEMBER and self.rules.remember_refused is not None:
            return None
        max_age = self.rules.max_age
        if max_age is not None and self.clock() - record.granted_at > max_age:
            return None
        return record

    async def _stored(self, key: SkillKey) -> ApprovalRecord | None:
        store = self.store
        if store is None:
            return None
        asked, current_storage = self._current
        if asked is not store:
            current_storage = store if isinstance(store, CurrentStorage) else None
            self._current = (store, current_storage)
        if current_storage is not None:
            # What the store verified last, while it is still the file: no worker thread.
            current, record = current_storage.current(key)
            if current:
                return record
        return await anyio.to_thread.run_sync(lambda: store.get(key))

    async def question(self, request: ActivationRequest, change: Change | None) -> Question:
        return Question(request, change, await self.remember_unavailable(request))

    async def remember_unavailable(self, request: ActivationRequest) -> str | None:
        """Why an approval of ``request`` cannot be remembered, or None."""
        entry = request.record.entry
        if entry is None:
            return "local skills are approved for this session at most"
        if entry.is_dynamic:
            return "a dynamic skill cannot be bound to its content, so at most this session"
        if request.identity is None:
            return "the host did not say how the server is reached"
        if not self.rules.allows(Scope.REMEMBER):
            return self.rules.scope_reason
        if self.rules.remember_refused is not None:
            return self.rules.remember_refused
        if self.store is None:
            return "no approval store is configured"
        store = self.store
        return await anyio.to_thread.run_sync(store.unavailable)

    def check_scope(self, scope: Scope, key: SkillKey) -> None:
        """Raise PolicyDenied if the rules do not let an approval of ``key`` last ``scope``."""
        why = None
        if not self.rules.allows(scope):
            why = self.rules.scope_reason
        elif scope is Scope.REMEMBER and self.rules.remember_refused is not None:
            why = self.rules.remember_refused
        if why is not None:
            raise PolicyDenied(
                f"an approval for {scope.value!r} is not allowed: {why}",
                server=key.origin,
                uri=key.locator,
                hint="Approve for a shorter scope (the rule named says whose file sets it).",
            )

    async def _record(self, request: ActivationRequest, answer: Answer, *, strict: bool) -> Scope:
        scope = answer.scope
        if strict:
            self.check_scope(scope, request.key)
            if scope is Scope.REMEMBER:  # never narrowed quietly: a grant says why not
                why = await self.remember_unavailable(request)
                if why is not None:
                    raise RememberUnavailable(
                        f"not remembered: {why}", server=request.key.origin, uri=request.key.locator
                    )
        elif not self.rules.allows(scope):
            scope = self.rules.max_scope
            self.say(f"{describe_scope(scope)} only: {self.rules.scope_reason}")
        if scope is Scope.ONCE:
            return scope
        key = request.key
        entry = request.record.entry
        if entry is None:
            self._local.add(key)
            return Scope.SESSION
        if request.identity is None:
            return Scope.ONCE
        if scope is Scope.REMEMBER:
            why = await self._remember(request, entry, answer, strict=strict)
            if why is None:
                return Scope.REMEMBER
            self.say(f"not remembered, approved for this session only: {why}")
        self._session[key] = self._make(request, entry, Scope.SESSION, answer)
        return Scope.SESSION

    async def _remember(
        self, request: ActivationRequest, entry: SkillEntry, answer: Answer, *, strict: bool
    ) -> str | None:
        """Store ``answer`` as a remembered approval; why it could not be, or None.
        With ``strict``, raise RememberUnavailable instead of saying why."""
        key = request.key
        why = await self.remember_unavailable(request)
        if why is not None:
            if strict:
                raise RememberUnavailable(why, server=key.origin, uri=key.locator)
            return why
        try:
            await self._put(self._make(request, entry, Scope.REMEMBER, answer))
        except RememberUnavailable as error:
            if strict:
                raise
            return error.message
        # The stored record was replaced: the revocation held in memory is moot.
        self._revoked.pop(key, None)
        self._session.pop(key, None)
        return None

    def _make(
        self, request: ActivationRequest, entry: SkillEntry, scope: Scope, answer: Answer
    ) -> ApprovalRecord:
        assert request.identity is not None
        return record_for(
            entry,
            label=request.key.origin,
            identity=request.identity,
            scope=scope,
            grants=answer.grants,
            granted_at=self.clock(),
            policy_version=self.policy_version,
        )

    async def _put(self, record: ApprovalRecord, *, replaces: ApprovalRecord | None = None) -> None:
        store = self.store
        assert store is not None
        await anyio.to_thread.run_sync(lambda: store.put(record, replaces=replaces))

    def say(self, message: str) -> None:
        """Tell the person ``message``, once per approver."""
        if message not in self._said:
            self._said.add(message)
            self._notify(message)
