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

from skillward.cache.seam import CacheKey
from skillward.core.registry import SkillRecord
from skillward.core.verify import sha256_digest
from skillward.gateway._approval import SCHEMA, StateCodec, StateError
from skillward.gateway._page import ApprovalPages, Page
from skillward.gateway._sessions import ClientSession
from skillward.host.skillhost import SkillHost
from skillward.trust.approvals import Changed, Verdict

__all__ = [
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
MODERN = frozenset({"2026-07-28"})


def asks_forms(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared form elicitation (an empty ``elicitation`` object
    means form mode; one that names only ``url`` cannot show the form)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


class NotAnswered(Exception):
    """The person's approval was not obtained: why, in skillward's words."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True, slots=True)
class Question:
    session: ClientSession
    record: SkillRecord
    qualified: str
    digest: str | None
    message: str
    #: Whether ``message`` fits an elicitation (``Limits.max_shown_question``); one that
    #: does not is shown on the approval page alone.
    fits: bool = True


#: An answer obtained (action, content), or the round trip that will bring one.
Asked = tuple[str, Mapping[str, Any] | None] | types.InputRequiredResult
#: How much of the difference since the last approval a page shows, and of how many lines.
_MAX_DIFF = 200_000
_MAX_DIFF_LINES = 2000


async def changes(host: SkillHost, record: SkillRecord, verdict: Verdict, now: str) -> str | None:
    """What changed since the last approval: the summary, and the difference between the
    SKILL.md approved (when the disk cache still holds it, verified against its digest)
    and ``now``, the verified SKILL.md the page shows."""
    if not isinstance(verdict, Changed):
        return None
    summary = verdict.change.summary()
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
    before = await anyio.to_thread.run_sync(host.cache.get, key)
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

    def __init__(self, codec: StateCodec, timeout: Callable[[], float]) -> None:
        self.codec = codec
        #: Seconds the person has to answer (read at each question).
        self.timeout = timeout

    async def ask_in_form(
        self,
        ctx: ServerRequestContext[Any, Any],
        question: Question,
        params: types.CallToolRequestParams,
    ) -> Asked:
        """Form-mode elicitation: the person's answer as (action, content)."""
        if ctx.protocol_version in MODERN:
            if params.input_responses is None and params.request_state is None:
                form = types.ElicitRequestFormParams(
                    message=question.message, requested_schema=SCHEMA
                )
                return types.InputRequiredResult(
                    input_requests={INPUT: types.ElicitRequest(params=form)},
                    request_state=self._sign(question),
                )
            self._check(question, params)
            response = (params.input_responses or {}).get(INPUT)
            if not isinstance(response, types.ElicitResult):
                raise NotAnswered("no answer")
            return response.action, response.content
        try:
            with anyio.fail_after(self.timeout()):
                result = await ctx.session.elicit_form(
                    question.message, SCHEMA, related_request_id=ctx.request_id
                )
        except TimeoutError:
            raise NotAnswered("no answer in time") from None
        except Exception as error:  # the client failed to ask
            logger.info("elicitation failed: %s", type(error).__name__)
            raise NotAnswered("the client could not ask") from None
        return result.action, result.content

    async def ask_on_page(
        self,
        ctx: ServerRequestContext[Any, Any],
        pages: ApprovalPages,
        question: Question,
        verdict: Verdict,
        params: types.CallToolRequestParams,
    ) -> Asked:
        """URL-mode elicitation: the person decides on a one-time loopback page."""
        modern = ctx.protocol_version in MODERN
        if modern and (params.input_responses is not None or params.request_state is not None):
            page = pages.get(self._check(question, params))
            response = (params.input_responses or {}).get(INPUT)
            if page is None:
                raise NotAnswered("the question expired")
            if not isinstance(response, types.ElicitResult) or response.action != "accept":
                await pages.wait(page, 0)
                raise NotAnswered("the person declined")
            return await self._decision(pages, page)
        host = question.session.host
        skill_md = await host.view_skill_md(question.record)  # fetched and verified once
        page = pages.open(
            title=f"Load the skill {question.qualified}?",
            message=question.message,
            skill_md=skill_md,
            changes=await changes(host, question.record, verdict, skill_md),
        )
        asking = f"Review the skill {question.qualified} and decide on the page.\n" + (
            question.message
            if question.fits
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
            raise NotAnswered("the client could not ask") from None
        if result.action != "accept":
            await pages.wait(page, 0)
            raise NotAnswered("the person declined")
        decided = await self._decision(pages, page)
        with contextlib.suppress(Exception):  # a courtesy: the client may retry at once
            await ctx.session.send_elicit_complete(page.id, related_request_id=ctx.request_id)
        return decided

    async def _decision(self, pages: ApprovalPages, page: Page) -> Asked:
        decision = await pages.wait(page, self.timeout())
        if decision is None:
            raise NotAnswered("no decision on the page in time")
        return "accept", {"decision": decision}

    def _sign(self, question: Question, extra: str = "") -> str:
        return self.codec.sign(question.session.key, question.qualified, question.digest, extra)

    def _check(self, question: Question, params: types.CallToolRequestParams) -> str:
        try:
            return self.codec.check(
                params.request_state,
                session=question.session.key,
                ref=question.qualified,
                digest=question.digest,
            )
        except StateError as error:
            raise NotAnswered(str(error)) from None
