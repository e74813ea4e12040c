"""skillward's tools for an OpenAI Agents SDK agent, with its tool approvals as the way the
person is asked (``pip install 'skillward[openai-agents]'``).

A run that would load a skill nobody approved is interrupted, and resumes from its state
with the answers::

    skills = SkillwardTools(host)
    agent = Agent(name="assistant", model=model, tools=skills.tools())
    result = await Runner.run(agent, prompt)
    while result.interruptions:
        state = result.to_state()
        for question in skills.questions(result.interruptions):
            if person_approves(question.facts):          # escape what a server wrote
                skills.approve(state, question)
            else:
                await skills.deny(state, question)
        result = await Runner.run(agent, state)

:meth:`SkillwardTools.tools` gives ``list_skills``, ``read_skill`` and ``read_skill_file``
(and ``read_resource`` with ``HostConfig.allow_uri_lookups``) as function tools, named
as the host names them (``HostConfig.tool_prefix``), their schemas strict, ``ref``
limited to the catalog's refs as they are when they are built. Each returns the
library's block as text: a skill, a file, the catalog, or an error block; none raises
into the run. ``read_skill``'s ``needs_approval`` is the skill's verdict: a skill the
host's records settle (pinned, approved, or already loaded here) runs without
interrupting; the rest interrupt the run, and :meth:`SkillwardTools.questions` gives what
the person is shown. An approval loads exactly the content the person was shown: the
skill's entry is fetched again first, and a skill that changed meanwhile loads nothing
(an error block says so). Only an approval of a call these tools asked about, given
through :meth:`SkillwardTools.approve`, is consent: an approval in the run's state alone
(``always_approve`` included) approves no skill, and nothing a model passes in its
arguments approves anything.

Questions are kept in this object, so a run is resumed with the tools that asked (the
same process); a call resumed elsewhere asks again. The tools run on the event loop of
``host`` (a :class:`~skillward.host.SkillHost`): use ``await Runner.run``, not
``Runner.run_sync``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunState, Tool, ToolApprovalItem
from agents.tool_context import ToolContext

from skillward.core.errors import AnswerRefused
from skillward.host import SkillHost
from skillward.integrations._calls import SkillCalls, SkillQuestion
from skillward.trust.approvals import Scope

__all__ = ["SkillQuestion", "SkillwardTools"]

#: How an approval given through the SDK's tool approvals is audited.
VIA = "openai-agents"
HOW = "approved through the OpenAI Agents SDK's tool approval"


class SkillwardTools:
    """skillward's tools over ``host`` (a :class:`~skillward.host.SkillHost`, entered on
    the event loop the agent runs on), as the OpenAI Agents SDK's function tools, whose
    ``read_skill`` asks the person through the run's tool approvals."""

    def __init__(self, host: SkillHost) -> None:
        self._calls = SkillCalls(host, via=VIA, how=HOW)

    def tools(self) -> list[Tool]:
        """The tools as the host offers them now (``FunctionTool`` each): build them again
        when the catalog changes (for each run), so that ``ref`` lists its refs."""
        definitions = self._calls.definitions("openai-responses")
        return [self._tool(definition) for definition in definitions]

    def _tool(self, definition: dict[str, Any]) -> FunctionTool:
        calls = self._calls
        name: str = definition["name"]

        async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
            if not calls.is_read_skill(name):
                return await calls.call(name, arguments)
            approved = ctx.is_tool_approved(ctx.tool_name, ctx.tool_call_id) is True
            result = await calls.read_skill(
                ctx.tool_call_id, arguments, consented=approved, can_ask=False
            )
            return result if isinstance(result, str) else calls.not_asked()

        async def needs_approval(
            ctx: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
        ) -> bool:
            return await calls.ask(call_id, arguments) is not None

        return FunctionTool(
            name=name,
            description=definition["description"],
            params_json_schema=definition["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=True,
            needs_approval=needs_approval if calls.is_read_skill(name) else False,
        )

    # --- the bridge: the person's answers, applied to the run's state ---------------------

    def questions(self, interruptions: Iterable[ToolApprovalItem]) -> list[SkillQuestion]:
        """The skills waiting for the person among a run's ``interruptions`` (other
        tools' approvals are left to the host), in order: show each one's ``facts``."""
        return self._calls.questions(i.call_id for i in interruptions if i.call_id is not None)

    def approve(
        self, state: RunState[Any, Any], question: SkillQuestion, scope: Scope | str = Scope.ONCE
    ) -> None:
        """The person approved ``question`` for ``scope`` (one of ``question.scopes``):
        approve its call in ``state`` (never for later calls), to resume with
        ``Runner.run(agent, state)``. Raises AnswerRefused for a question that does not
        wait, a scope not offered, or a state without its call."""
        item = _interruption(state, question)
        self._calls.approve(question, scope)
        state.approve(item)

    async def deny(self, state: RunState[Any, Any], question: SkillQuestion) -> None:
        """The person refused ``question``: recorded (the audit trail's denial), and its
        call rejected in ``state``, the model told with the library's error block. Raises
        AnswerRefused for a question that does not wait or a state without its call."""
        item = _interruption(state, question)
        state.reject(item, rejection_message=await self._calls.deny(question))


def _interruption(state: RunState[Any, Any], question: SkillQuestion) -> ToolApprovalItem:
    for item in state.get_interruptions():
        if item.call_id == question.tool_call_id:
            return item
    raise AnswerRefused("the run's state has no approval waiting for that tool call")
