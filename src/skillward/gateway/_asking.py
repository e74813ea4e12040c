"""Asking the person through the client: form-mode elicitation, or a one-time approval
page through URL-mode elicitation, in both protocol eras (an ``elicitation/create``
request on the call's own stream at 2025-11-25; an ``InputRequiredResult`` whose
authenticated ``request_state`` the client's retry must carry back at 2026-07-28)."""

from __future__ import annotations

import contextlib
import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext

from skillward.cache.seam import CacheKey, ContentCache
from skillward.core.errors import AnswerRefused
from skillward.core.verify import sha256_digest
from skillward.core.visible import visible
from skillward.gateway._approval import (
    CANCELLED,
    NO_ANSWER_IN_TIME,
    SCHEMA,
    approval_message,
    not_approved,
)
from skillward.gateway._page import ApprovalPages, Page
from skillward.gateway._sessions import ClientSession
from skillward.trust.approvals import Changed
from skillward.trust.pending import PendingApproval
from skillward.trust.tokens import ApprovalTokens

__all__ = [
    "COULD_NOT_ASK",
    "INPUT",
    "MODERN",
    "Asked",
    "Asker",
    "NotAnswered",
    "Question",
    "asks_forms",
    "asks_urls",
    "changes",
]

logger = logging.getLogger("skillward")

#: The key of the one input request a 2026-07-28 approval round carries.
INPUT = "approval"
#: Why nobody answered when the client failed to put the question.
COULD_NOT_ASK = "the client could not ask"
MODERN = frozenset({"2026-07-28"})


def asks_forms(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared form elicitation (an empty ``elicitation`` object
    means form mode; one that names only ``url`` cannot show the form)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


class NotAnswered(Exception):
    """The person's approval was not obtained: why, in skillward's words. ``unanswered``:
    nobody answered (the question was cancelled, timed out or could not be put), which
    is not a refusal; ``timed_out``: no answer came in time."""

    def __init__(self, why: str, *, unanswered: bool = False, timed_out: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.unanswered = unanswered or timed_out
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True)
class Question:
    """One pending approval, put to the person through the client of one session."""

    session: ClientSession
    pending: PendingApproval

    @property
    def ref(self) -> str:
        return self.pending.facts.ref

    @property
    def digest(self) -> str | None:
        return self.pending.content_hash


#: An answer obtained (action, content), or the round trip that will bring one.
Asked = tuple[str, Mapping[str, Any] | None] | types.InputRequiredResult
#: How much of the difference since the last approval a page shows, and of how many lines.
_MAX_DIFF = 200_000
_MAX_DIFF_LINES = 2000


async def changes(cache: ContentCache, pending: PendingApproval, now: str) -> str | None:
    """What changed since the last approval: the summary, and the difference between the
    SKILL.md approved (when the disk cache still holds it, verified against its digest)
    and ``now``, the verified SKILL.md the page shows."""
    verdict = pending.verdict
    if not isinstance(verdict, Changed):
        return None
    summary = verdict.change.summary()
    record = pending.request.record
    entry = record.entry
    approved = verdict.record
    binding = next(
        (f for f in approved.files or () if entry is not None and f.uri == entry.uri), None
    )
    if entry is None or binding is None:
        return summary
    key = CacheKey(
        origin=record.origin.label,
        identity=approved.identity,
        skill=entry.uri,
        uri=entry.uri,
        digest=binding.digest,
        size=binding.size,
    )
    before = await anyio.to_thread.run_sync(cache.get, key)
    if before is None or sha256_digest(before) != binding.digest:
        return summary + "\n\n(The SKILL.md approved before is not in the disk cache.)"
    diff = await anyio.to_thread.run_sync(_difference, before.decode("utf-8", "replace"), now)
    return f"{summary}\n\n{diff}"


def _difference(before: str, now: str) -> str:
    """The unified difference of the first lines of each (both written by the server, and
    difflib's cost grows faster than their length), bounded; off the event loop."""
    old, new = before.splitlines(), now.splitlines()
    diff = "\n".join(
        difflib.unified_diff(
            old[:_MAX_DIFF_LINES],
            new[:_MAX_DIFF_LINES],
            "SKILL.md as approved",
            "SKILL.md now",
            lineterm="",
        )
    )[:_MAX_DIFF]
    if max(len(old), len(new)) > _MAX_DIFF_LINES:
        diff += f"\n(The difference covers the first {_MAX_DIFF_LINES} lines.)"
    return diff


def asks_urls(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared URL-mode elicitation."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


class Asker:
    """Puts one question to the person through the client; the answer counts only for the
    session, skill and content hash it was asked about."""

    def __init__(self, tokens: ApprovalTokens, timeout: Callable[[], float]) -> None:
        #: Signs and checks each 2026-07-28 round's ``request_state``.
        self.tokens = tokens
        #: Seconds the person has to answer (read at each question).
        self.timeout = timeout

    async def ask_in_form(
        self,
        ctx: ServerRequestContext[Any, Any],
        question: Question,
        message: str,
        params: types.CallToolRequestParams,
    ) -> Asked:
        """Form-mode elicitation of ``message``: the person's answer as (action, content)."""
        if ctx.protocol_version in MODERN:
            if params.input_responses is None and params.request_state is None:
                form = types.ElicitRequestFormParams(message=message, requested_schema=SCHEMA)
                return types.InputRequiredResult(
                    input_requests={INPUT: types.ElicitRequest(params=form)},
                    request_state=self._sign(question),
                )
            self._check(question, params)
            response = (params.input_responses or {}).get(INPUT)
            if not isinstance(response, types.ElicitResult):
                raise NotAnswered("no answer came with the retry", unanswered=True)
            return response.action, response.content
        try:
            with anyio.fail_after(self.timeout()):
                result = await ctx.session.elicit_form(
                    message, SCHEMA, related_request_id=ctx.request_id
                )
        except TimeoutError:
            raise NotAnswered(NO_ANSWER_IN_TIME, timed_out=True) from None
        except Exception as error:  # the client failed to ask
            logger.info("elicitation failed: %s", type(error).__name__)
            raise NotAnswered(COULD_NOT_ASK, unanswered=True) from None
        return result.action, result.content

    async def ask_on_page(
        self,
        ctx: ServerRequestContext[Any, Any],
        pages: ApprovalPages,
        question: Question,
        params: types.CallToolRequestParams,
        *,
        limit: int,
    ) -> Asked:
        """URL-mode elicitation: the person decides on a one-time loopback page, which
        shows the question whole; the elicitation carries it too when it is at most
        ``limit`` characters."""
        modern = ctx.protocol_version in MODERN
        if modern and (params.input_responses is not None or params.request_state is not None):
            page = pages.get(self._check(question, params))
            response = (params.input_responses or {}).get(INPUT)
            if page is None:
                raise NotAnswered("the question expired", timed_out=True)
            if not isinstance(response, types.ElicitResult) or response.action != "accept":
                await pages.wait(page, 0)
                if not isinstance(response, types.ElicitResult):
                    raise NotAnswered("no answer came with the retry", unanswered=True)
                raise _refusal(response.action)
            return await self._decision(pages, page)
        pending = question.pending
        skill_md = await _skill_md(pending)  # fetched and verified once
        page = pages.open(
            facts=pending.facts,
            skill_md=skill_md,
            changes=await changes(question.session.host.cache, pending, skill_md),
        )
        message = approval_message(pending.facts, read_at=f"on the approval page: {page.url}")
        asking = f"Review the skill {visible(question.ref)} and decide on the page.\n" + (
            message
            if len(message) <= limit
            else "The question is too long to show here whole: the page shows all of it."
        )
        if modern:
            url = types.ElicitRequestURLParams(message=asking, url=page.url)
            return types.InputRequiredResult(
                input_requests={INPUT: types.ElicitRequest(params=url)},
                request_state=self._sign(question, page.id),
            )
        try:
            with anyio.fail_after(self.timeout()):
                result = await ctx.session.elicit_url(
                    asking, page.url, page.id, related_request_id=ctx.request_id
                )
        except Exception as error:  # no answer in time, or the client failed to ask
            logger.info("elicitation failed: %s", type(error).__name__)
            await pages.wait(page, 0)
            if isinstance(error, TimeoutError):
                raise NotAnswered(NO_ANSWER_IN_TIME, timed_out=True) from None
            raise NotAnswered(COULD_NOT_ASK, unanswered=True) from None
        if result.action != "accept":
            await pages.wait(page, 0)
            raise _refusal(result.action)
        decided = await self._decision(pages, page)
        with contextlib.suppress(Exception):  # a courtesy: the client may retry at once
            await ctx.session.send_elicit_complete(page.id, related_request_id=ctx.request_id)
        return decided

    async def _decision(self, pages: ApprovalPages, page: Page) -> Asked:
        decision = await pages.wait(page, self.timeout())
        if decision is None:
            raise NotAnswered("no decision on the page in time", timed_out=True)
        return "accept", {"decision": decision}

    def _sign(self, question: Question, extra: str = "") -> str:
        return self.tokens.sign(
            waiter=question.session.key,
            ref=question.ref,
            content_hash=question.digest,
            extra=extra,
        )

    def _check(self, question: Question, params: types.CallToolRequestParams) -> str:
        try:
            claims = self.tokens.verify(
                params.request_state,
                waiter=question.session.key,
                ref=question.ref,
                content_hash=question.digest,
            )
        except AnswerRefused as error:
            raise NotAnswered(error.message) from None
        return claims.extra


def _refusal(action: str) -> NotAnswered:
    """What a client's answer other than ``accept`` to the page's elicitation means."""
    why = not_approved(action, None)
    return NotAnswered(why, unanswered=why == CANCELLED)


async def _skill_md(pending: PendingApproval) -> str:
    """SKILL.md, fetched and verified, for the person on the page (never the model)."""
    viewer = pending.request.viewer
    if viewer is None:
        raise NotAnswered("the host cannot show this skill's SKILL.md", unanswered=True)
    return await viewer()
