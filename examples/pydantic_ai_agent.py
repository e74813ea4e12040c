"""A pydantic-ai agent with skillward's tools, that you can copy.

``SkillwardToolset`` gives the agent ``list_skills``, ``read_skill`` and
``read_skill_file``. Loading a skill the host's records do not settle pauses the run with
pydantic-ai's own deferred tool approvals: the run's output is ``DeferredToolRequests``,
the toolset says which of them are skills and what the person is shown
(``toolset.questions``), and their answers (``toolset.approve``, ``toolset.deny``) go back
with the next run as ``DeferredToolResults``. An approval loads exactly the content the
person was shown.

The model is pydantic-ai's ``FunctionModel``, scripted, so no API key is needed; put a
real model in its place (``Agent("openai:gpt-5", ...)``) and nothing else changes. It:

1. lists the skills;
2. asks to load two at once (the run pauses: the person approves one and refuses the
   other, both scripted by ``ScriptedPerson``);
3. reads a file the loaded skill lists;
4. asks for the loaded skill again, which it gets without anyone being asked.

The skills come from ``skillward serve`` of the example skills bundled with skillward,
over stdio. Run it from a checkout, with ``skillward[pydantic-ai]`` installed::

    python examples/pydantic_ai_agent.py
"""

from __future__ import annotations

import re
import sys
from typing import Any

import anyio
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from skillward import ServerSpec, SkillHost, StdioTransport
from skillward.integrations.pydantic_ai import SkillQuestion, SkillwardToolset

#: What the "model" asks for, one turn at a time: (tool name, arguments) calls.
TURNS: list[list[tuple[str, dict[str, Any]]]] = [
    [("list_skills", {})],
    [("read_skill", {"ref": "pdf-processing"}), ("read_skill", {"ref": "git-workflow"})],
    [("read_skill_file", {"ref": "pdf-processing", "path": "references/FORMS.md"})],
    [("read_skill", {"ref": "pdf-processing"})],
]


class ScriptedModel:
    """Stands in for the model: makes the calls in ``TURNS``, and prints what it is sent."""

    def __init__(self) -> None:
        self.turns = list(TURNS)
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                show(part.tool_name, str(part.content))
        if not self.turns:
            return ModelResponse(parts=[TextPart("done")])
        parts = []
        for name, arguments in self.turns.pop(0):
            self.calls += 1
            print(f"  model calls {name}({arguments})")
            parts.append(ToolCallPart(name, arguments, tool_call_id=f"call-{self.calls}"))
        return ModelResponse(parts=parts)


class ScriptedPerson:
    """Stands in for the person a real host would ask (a dialog, a web page): shown each
    question's facts, it approves one skill, once, and refuses the rest."""

    def __init__(self, approve: str) -> None:
        self.approve = approve

    def approves(self, question: SkillQuestion) -> bool:
        facts = question.facts  # server-written values are shown escaped (!r)
        answer = facts.name == self.approve
        print(
            f"  person: load skill {facts.ref!r} from server {facts.origin_label!r} "
            f"({len(facts.files)} files, content {str(facts.content_hash)[:19]}...)? "
            + ("approve once" if answer else "deny")
        )
        return answer


def show(tool: str, text: str) -> None:
    """What the model is sent, abridged: what the block's opening tag says."""
    tag = text.split("\n", 1)[0]
    kind = tag.removeprefix("<skillward:").split(" ", 1)[0]
    attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
    origin = attributes.get("server", "host")
    detail = f": {attributes['error']}" if "error" in attributes else ""
    article = "an" if kind[0] in "aeiou" else "a"
    print(f"  -> {tool}: {article} {kind} block from {origin}, trust={attributes['trust']}{detail}")


async def main() -> None:
    # `skillward serve` with no directory serves the example skills bundled with skillward.
    serve = StdioTransport(command=sys.executable, args=("-m", "skillward", "serve"))
    examples = ServerSpec(label="examples", transport=serve)
    person = ScriptedPerson(approve="pdf-processing")
    async with SkillHost() as host:
        await host.connect(examples)
        toolset = SkillwardToolset(host)
        agent = Agent(
            FunctionModel(ScriptedModel()),
            toolsets=[toolset],
            output_type=[str, DeferredToolRequests],
        )
        runs = 1
        print(f"run {runs}")
        result = await agent.run("Fill in the form in report.pdf.")
        while isinstance(result.output, DeferredToolRequests):
            questions = toolset.questions(result.output)
            print(f"  the run pauses: {len(questions)} skills wait for the person")
            answers = DeferredToolResults()
            for question in questions:
                if person.approves(question):
                    answers.approvals[question.tool_call_id] = toolset.approve(question)
                else:
                    answers.approvals[question.tool_call_id] = await toolset.deny(question)
            runs += 1
            print(f"run {runs}, with the person's answers")
            result = await agent.run(
                message_history=result.all_messages(), deferred_tool_results=answers
            )
        print(f"the model's answer: {result.output}")


if __name__ == "__main__":
    anyio.run(main)
