"""skillward's tools for a pydantic-ai agent, with its deferred tool approvals as the way the
person is asked (``pip install 'skillward[pydantic-ai]'``).

A run that would load a skill nobody approved pauses, and resumes with the answers::

    toolset = SkillwardToolset(host)
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    result = await agent.run(prompt)
    while isinstance(result.output, DeferredToolRequests):
        results = DeferredToolResults()
        for question in toolset.questions(result.output):
            if person_approves(question.facts):          # escape what a server wrote
                results.approvals[question.tool_call_id] = toolset.approve(question)
            else:
                results.approvals[question.tool_call_id] = await toolset.deny(question)
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=results
        )

:class:`SkillwardToolset` offers ``list_skills``, ``read_skill`` and ``read_skill_file`` (and
``read_resource`` with ``HostConfig.allow_uri_lookups``), named as the host names them
(``HostConfig.tool_prefix``: prefix them there, not with ``PrefixedToolset``, so that the
blocks name the tools the model has). Each returns the library's block as text: a skill,
a file, the catalog, or an error block; none raises into the agent. ``read_skill`` loads a
skill the host's records settle (pinned, approved, or already loaded here) at once, and
raises ``ApprovalRequired`` for the rest, its metadata the question's JSON: the run ends
with the call in ``DeferredToolRequests``, and the person's answer comes back with the
next run. An approval loads exactly the content the person was shown: the skill's server
is fetched again first, and a skill that changed meanwhile loads nothing (an error block
says so). Only ``ToolApproved`` for a call the toolset asked about is consent; nothing a
model passes in its arguments is.

Questions are kept in this object, so a run is resumed with the toolset that asked (the
same process); a call resumed elsewhere asks again.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import (
    AbstractToolset,
    ApprovalRequired,
    DeferredToolRequests,
    RunContext,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
    ToolsetTool,
)
from pydantic_core import SchemaValidator, core_schema

from skillward.host import SkillHost
from skillward.integrations._calls import SkillCalls, SkillQuestion
from skillward.trust.approvals import Scope

__all__ = ["SkillQuestion", "SkillwardToolset"]

#: How an approval given through the deferred tool approvals is audited.
VIA = "pydantic-ai"
HOW = "approved through pydantic-ai's deferred tool approval"

# Any JSON object: skillward reads the arguments itself, each held to its bound.
_ARGUMENTS = SchemaValidator(
    schema=core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)


class SkillwardToolset(AbstractToolset[Any]):
    """skillward's tools over ``host`` (a :class:`~skillward.host.SkillHost`, entered on
    the event loop the agent runs on), as a pydantic-ai toolset whose ``read_skill`` asks
    the person through deferred tool approvals. ``id``: the toolset's id, for durable
    execution."""

    def __init__(self, host: SkillHost, *, id: str | None = None) -> None:
        self._calls = SkillCalls(host, via=VIA, how=HOW)
        self._id = id

    @property
    def id(self) -> str | None:
        """The id it was given, if any."""
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The host's tools as they are now (``ref`` limited to the catalog's refs)."""
        return {
            tool["name"]: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool["name"],
                    parameters_json_schema=tool["inputSchema"],
                    description=tool["description"],
                ),
                max_retries=1,
                args_validator=_ARGUMENTS,
            )
            for tool in self._calls.definitions("mcp")
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> str:
        """The tool's block as text; ``read_skill`` raises ``ApprovalRequired`` when the
        person is to be asked, and nothing else is raised."""
        calls = self._calls
        if not calls.is_read_skill(name):
            return await calls.call(name, tool_args)
        approved = ctx.tool_call_approved
        result = await calls.read_skill(
            ctx.tool_call_id, tool_args, consented=approved, can_ask=not approved
        )
        if isinstance(result, SkillQuestion):
            raise ApprovalRequired(metadata={"skillward": result.to_json()})
        return result

    # --- the bridge: the person's answers -------------------------------------------------

    def questions(self, requests: DeferredToolRequests) -> list[SkillQuestion]:
        """The skills waiting for the person among ``requests.approvals`` (other tools'
        approvals are left to the host), in order: show each one's ``facts``."""
        return self._calls.questions(call.tool_call_id for call in requests.approvals)

    def approve(self, question: SkillQuestion, scope: Scope | str = Scope.ONCE) -> ToolApproved:
        """The person approved ``question`` for ``scope`` (one of ``question.scopes``): the
        result to put in ``DeferredToolResults.approvals[question.tool_call_id]``. Raises
        AnswerRefused for a question that does not wait or a scope not offered."""
        self._calls.approve(question, scope)
        return ToolApproved()

    async def deny(self, question: SkillQuestion) -> ToolDenied:
        """The person refused ``question``: recorded (the audit trail's denial), and the
        result to put in ``DeferredToolResults.approvals``, whose message is the error
        block the model is told. Raises AnswerRefused for a question that does not wait."""
        return ToolDenied(await self._calls.deny(question))
