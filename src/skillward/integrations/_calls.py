"""What the framework integrations share, with no framework imported: skillward's tools
over one :class:`~skillward.host.SkillHost`, each call answered with the library's
blocks, and ``read_skill`` split where the person answers.

The host decides whether to ask and the framework asks: ``read_skill`` prepares the skill
(the policy, the pin, the verdict: :meth:`SkillHost.prepare`) and loads it at once when
that settles it. Otherwise it puts a :class:`SkillQuestion` (the facts every prompt shows,
and the content hash they are of) to the framework's approval mechanism, kept here under
the tool call's id. The person's answer is taken by :meth:`SkillCalls.approve`; when the
framework runs that call again with its consent as well, the skill is prepared again, its
entry fetched from its server again (``skills/get``), and it loads only if its content
hash is still the one the person was shown. Consent counts only for a call this object
asked about and whose question was answered here, never for a tool's arguments nor for
an approval of every call of the tool.

Nothing here raises into the framework: a failure is an error block, tagged with the
origin whose text it may quote, as :meth:`SkillHost.handle_tool_call` answers.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from skillward.core.errors import (
    AnswerRefused,
    ApprovalError,
    SkillwardError,
    StaleAnswer,
    UsageError,
)
from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord
from skillward.core.tools import READ_SKILL, ToolSet, ToolStyle
from skillward.host import SkillHost
from skillward.trust.approvals import Answer, Decision, Scope
from skillward.trust.parking import MAX_PARKED
from skillward.trust.pending import ApprovalFacts, Deciding, PendingApproval

__all__ = ["SkillCalls", "SkillQuestion"]

logger = logging.getLogger("skillward")

#: Why an approval given through the framework loads nothing: the skill changed since.
CHANGED = "the skill changed between the question and the answer"
#: Why a call the framework approved loads nothing: its question was never answered.
NOT_ANSWERED = (
    "the framework approved the call, but the person's answer to its question was not "
    "given through skillward's approve (an approval of every call of the tool answers none)"
)
#: Why only ``once`` is offered when the host's approver records nothing.
UNRECORDED = "the host's approver records no approvals (give it an ApprovalBook)"


@dataclass(frozen=True, slots=True)
class SkillQuestion:
    """One skill's approval question, put to the person through a framework's approval
    mechanism: show them ``facts`` (escaping every value a server wrote, as
    ``ApprovalFacts`` says) and answer with one of ``scopes``.

    The answer approves the content ``facts`` describe (``content_hash``), no other: a
    skill that changed before the answer is applied loads nothing.
    """

    #: The framework's id of the tool call that asked.
    tool_call_id: str
    #: What every prompt shows of the skill.
    facts: ApprovalFacts

    @property
    def scopes(self) -> tuple[Scope, ...]:
        """The scopes an approval may have, shortest first (``facts.scopes``): ``session``
        and ``remember`` only when the host's approver records approvals (an
        ``ApprovalBook``)."""
        return self.facts.scopes

    @property
    def content_hash(self) -> str | None:
        """The content an approval approves (None for a dynamic or local skill)."""
        return self.facts.content_hash

    def to_json(self) -> dict[str, Any]:
        """The question as JSON, for a page or the framework's own metadata."""
        return {"tool_call_id": self.tool_call_id, "facts": self.facts.to_json()}


@dataclass(slots=True)
class _Asked:
    question: SkillQuestion
    #: The decision the question was put for: a denial is recorded through it.
    pending: PendingApproval
    #: The approval's scope, when the person approved through this object.
    scope: Scope = Scope.ONCE
    #: Whether the person's answer was taken here (:meth:`SkillCalls.approve`): the
    #: framework's approval of the call counts only then. The framework approves by tool
    #: name too (the Agents SDK's ``always_approve``), which answers no question.
    answered: bool = False


class SkillCalls:
    """skillward's tools for one framework over ``host``, and the questions they asked."""

    def __init__(self, host: SkillHost, *, via: str, how: str) -> None:
        self.host = host
        self._via = via
        self._how = how
        self._asked: OrderedDict[str, _Asked] = OrderedDict()

    @property
    def tools(self) -> ToolSet:
        """The tools in force: their names, under ``HostConfig.tool_prefix``."""
        return self.host.config.tools

    def definitions(self, style: ToolStyle) -> list[dict[str, Any]]:
        return self.host.tool_definitions(style)

    def is_read_skill(self, name: str) -> bool:
        return self.tools.tool(name) == READ_SKILL

    async def call(self, name: str, arguments: Any) -> str:
        """Any tool but ``read_skill``: its block's text (an error block when it failed)."""
        block = await self.host.handle_tool_call(name, arguments)
        if block is None:  # not one of skillward's tools: the framework routed it here
            error = UsageError("that is not one of skillward's tools")
            return self.host.error_block(error, host_words=True).text()
        return block.text()

    # --- read_skill ---------------------------------------------------------------------

    async def ask(self, call_id: str, arguments: Any) -> SkillQuestion | None:
        """Whether the call ``call_id`` of ``read_skill`` needs the person's approval: its
        question (kept for the call), or None when it can run (its skill is settled, or
        the call fails and answers an error block)."""
        try:
            prepared = await self._prepare(arguments)
        except Exception:
            logger.exception("read_skill failed")
            return None
        if isinstance(prepared, str) or prepared.settled:
            return None
        return self._ask(call_id, prepared)

    async def read_skill(
        self, call_id: str | None, arguments: Any, *, consented: bool, can_ask: bool
    ) -> str | SkillQuestion:
        """``read_skill`` as the framework runs it: the skill's block, an error block, or
        (``can_ask``) the question to put to the person. ``consented``: the framework
        says the person approved this call; that counts only for a call this object
        asked about, and only for the content they were shown."""
        try:
            return await self._read_skill(call_id, arguments, consented, can_ask)
        except Exception:
            logger.exception("read_skill failed")
            error = UsageError("skillward failed to load the skill")
            return self.host.error_block(error, host_words=True).text()

    async def _read_skill(
        self, call_id: str | None, arguments: Any, consented: bool, can_ask: bool
    ) -> str | SkillQuestion:
        asked = self._asked.pop(call_id, None) if consented and call_id is not None else None
        unanswered, asked = (
            (asked, None) if asked is not None and not asked.answered else (None, asked)
        )
        pending = await self._prepare(arguments, fresh=asked)
        if isinstance(pending, str):
            return pending
        if pending.settled:
            return await self._load(pending, None)
        if unanswered is not None and unanswered.pending.request.key == pending.request.key:
            return self._unanswered(pending, unanswered)
        if asked is None or asked.pending.request.key != pending.request.key:
            if can_ask and call_id is not None:
                return self._ask(call_id, pending)
            return self.not_asked()
        if pending.content_hash != asked.question.content_hash:
            return self._changed(pending, asked)
        answer = Answer(Decision.APPROVE, asked.scope, how=self._how, via=self._via)
        return await self._load(pending, answer)

    async def _prepare(
        self, arguments: Any, *, fresh: _Asked | None = None
    ) -> str | PendingApproval:
        """The pending approval of the skill the call's ref names, or an error block's
        text. ``fresh``: the question the person answered; the skill's entry is fetched
        again if it names it, so that what is compared is what the server serves now."""
        tools = self.tools
        try:
            call = tools.read_call(tools.read_skill, arguments, limits=self.host.limits)
        except UsageError as error:
            return self.host.error_block(error, host_words=True).text()
        assert call is not None
        ref = call[1]["ref"]
        record = await self._record(ref)
        if isinstance(record, str):
            return record
        again = fresh is not None and fresh.pending.request.key == record.key
        try:
            return await self.host.prepare(record, reuse=True, fresh=again)
        except SkillwardError as error:
            return self._error(error, record.origin)

    async def _record(self, ref: str) -> SkillRecord | str:
        """The skill ``ref`` names as the model's ``read_skill`` takes it, or an error block."""
        host = self.host
        if host.config.allow_uri_lookups:
            try:
                return await host.lookup(ref)
            except SkillwardError as error:
                return self._error(error, None)
        try:
            record: SkillRecord | None = host.resolve(ref)
        except SkillwardError:
            record = None
        if record is None or not record.listed:
            # The host's own read_skill refuses it too, in the words it always uses.
            return await self.call(self.tools.read_skill, {"ref": ref})
        return record

    def _ask(self, call_id: str, pending: PendingApproval) -> SkillQuestion:
        facts = pending.facts
        if not isinstance(self.host.approver, Deciding):
            # Nothing would record a longer approval: offer none.
            facts = facts.model_copy(
                update={"scopes": (Scope.ONCE,), "remember_unavailable": UNRECORDED}
            )
        question = SkillQuestion(call_id, facts)
        self._asked.pop(call_id, None)
        self._asked[call_id] = _Asked(question, pending)
        while len(self._asked) > MAX_PARKED:  # nobody answered the oldest
            self._asked.popitem(last=False)
        return question

    async def _load(self, pending: PendingApproval, answer: Answer | None) -> str:
        try:
            return (await self.host.load(pending, answer)).block.text()
        except SkillwardError as error:
            return self._error(error, pending.request.record.origin)

    def _changed(self, pending: PendingApproval, asked: _Asked) -> str:
        return self._not_loaded(
            pending,
            asked,
            CHANGED,
            StaleAnswer,
            f"call {self.tools.read_skill} again to ask about it as it is now",
        )

    def _unanswered(self, pending: PendingApproval, asked: _Asked) -> str:
        """The framework approved the call, but nobody answered its question here: the
        person was not shown this skill's facts, so nothing loads."""
        return self._not_loaded(
            pending,
            asked,
            NOT_ANSWERED,
            ApprovalError,
            f"call {self.tools.read_skill} again to ask the person",
        )

    def _not_loaded(
        self,
        pending: PendingApproval,
        asked: _Asked,
        why: str,
        kind: type[ApprovalError],
        then: str,
    ) -> str:
        """An approval from the framework that loads nothing (``why``): recorded as a
        denial of the content asked about, and told the model as a ``kind`` block."""
        request = pending.request
        key = request.key
        self.host.audit.record(
            "denial",
            "denied",
            reason=f"not approved: {why}",
            label=key.origin,
            identity=request.identity,
            skill_uri=key.locator,
            content_hash=asked.question.content_hash,
            gate="activation",
            via=self._via,
        )
        error = kind(
            f"loading skill {pending.facts.ref!r} was not approved: {why}, so nothing was "
            f"loaded; {then}",
            server=key.origin,
            uri=key.locator,
        )
        return self.host.error_block(error, request.record.origin).text()

    def not_asked(self) -> str:
        """The error block of a call that needs the person's approval and did not ask."""
        error = ApprovalError(
            "loading this skill needs the person's approval, and this call did not ask them "
            f"about it; nothing was loaded. Call {self.tools.read_skill} again to ask them"
        )
        return self.host.error_block(error, host_words=True).text()

    def _error(self, error: SkillwardError, origin: Origin | None) -> str:
        """An error block: tagged with the origin whose text it may quote; with none, only
        skillward's words (the model's and an unknown origin's are left out)."""
        return self.host.error_block(error, origin).text()

    # --- the person's answers, from the host's code ----------------------------------------

    def questions(self, call_ids: Iterable[str]) -> list[SkillQuestion]:
        """The questions asked for these tool calls (the framework's pending approvals),
        in their order; calls this object did not ask about are left out."""
        return [self._asked[i].question for i in call_ids if i in self._asked]

    def approve(self, question: SkillQuestion, scope: Scope | str) -> None:
        """Take the person's approval of ``question`` for ``scope``: the call it asked for,
        run again by the framework, loads the skill if its content is still the one shown.
        Raise AnswerRefused for a question that does not wait or a scope not offered."""
        asked = self._waiting(question)
        try:
            chosen = Scope(scope)
        except ValueError:
            raise AnswerRefused("a scope is once, session or remember") from None
        if chosen not in asked.question.scopes:
            raise AnswerRefused(f"{chosen.value!r} was not offered for this question")
        asked.scope = chosen
        asked.answered = True

    async def deny(self, question: SkillQuestion) -> str:
        """Take the person's denial of ``question``, record it, and return the error block
        the model is told. Raise AnswerRefused for a question that does not wait."""
        asked = self._waiting(question)
        del self._asked[question.tool_call_id]
        return await self._load(asked.pending, Answer(Decision.DENY, how=self._how, via=self._via))

    def _waiting(self, question: SkillQuestion) -> _Asked:
        asked = self._asked.get(question.tool_call_id)
        if asked is None:
            raise AnswerRefused("no question waits for that tool call")
        if asked.question.content_hash != question.content_hash:
            raise StaleAnswer("that question was asked again about other content")
        return asked
