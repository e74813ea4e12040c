"""An OpenAI Agents SDK agent with skillward's tools, that you can copy.

``SkillwardTools`` gives the agent ``list_skills``, ``read_skill`` and ``read_skill_file``
as function tools. ``read_skill``'s ``needs_approval`` is the skill's verdict: loading a
skill the host's records do not settle interrupts the run, the tools say which of the
interruptions are skills and what the person is shown (``skills.questions``), their
answers are applied to the run's state (``skills.approve``, ``skills.deny``), and the run
resumes from it. An approval loads exactly the content the person was shown.

The model is the SDK's ``ScriptedModel`` (``agents.testing``), so no API key is needed;
give the agent a real model (``model="gpt-5"``) and nothing else changes. It:

1. lists the skills;
2. asks to load two at once (the run is interrupted: the person approves one and
   refuses the other, both scripted by ``ScriptedPerson``);
3. reads a file the loaded skill lists;
4. asks for the loaded skill again, which it gets without interrupting the run.

The skills come from ``skillward serve`` of the example skills bundled with skillward,
over stdio. Run it from a checkout, with ``skillward[openai-agents]`` installed::

    python examples/openai_agents_agent.py
"""

from __future__ import annotations

import re
import sys
from typing import Any

import anyio
from agents import Agent, RunConfig, Runner, RunResult
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call

from skillward import ServerSpec, SkillHost, StdioTransport
from skillward.integrations.openai_agents import SkillQuestion, SkillwardTools

#: What the "model" asks for, one turn at a time: (tool name, arguments) calls.
TURNS: list[list[tuple[str, dict[str, Any]]]] = [
    [("list_skills", {})],
    [("read_skill", {"ref": "pdf-processing"}), ("read_skill", {"ref": "git-workflow"})],
    [("read_skill_file", {"ref": "pdf-processing", "path": "references/FORMS.md"})],
    [("read_skill", {"ref": "pdf-processing"})],
]

#: No traces are sent anywhere (the SDK would send them to OpenAI).
QUIET = RunConfig(tracing_disabled=True)


def scripted_model() -> ScriptedModel:
    """Stands in for the model: makes the calls in ``TURNS``, then answers ``done``."""
    steps: list[Any] = []
    number = 0
    for turn in TURNS:
        calls = []
        for name, arguments in turn:
            number += 1
            calls.append(function_call(name, arguments, call_id=f"call-{number}"))
        steps.append(calls)
    return ScriptedModel([*steps, [assistant_message("done")]])


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


def show(result: RunResult, shown: set[tuple[str, str]]) -> None:
    """What the run did, abridged: each call the model made, and what it was sent back
    (a resumed run's items start with the ones before it: those in ``shown`` are left out)."""
    for item in result.new_items:
        if not isinstance(item, ToolCallItem | ToolCallOutputItem):
            continue
        raw: Any = item.raw_item
        call_id = raw["call_id"] if isinstance(raw, dict) else raw.call_id
        if (item.type, call_id) in shown:
            continue
        shown.add((item.type, call_id))
        if isinstance(item, ToolCallItem):
            print(f"  model calls {raw.name}({raw.arguments})")
        else:
            tag = str(item.output).split("\n", 1)[0]
            kind = tag.removeprefix("<skillward:").split(" ", 1)[0]
            attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
            origin = attributes.get("server", "host")
            detail = f": {attributes['error']}" if "error" in attributes else ""
            article = "an" if kind[0] in "aeiou" else "a"
            print(f"  -> {article} {kind} block from {origin}, trust={attributes['trust']}{detail}")


async def main() -> None:
    # `skillward serve` with no directory serves the example skills bundled with skillward.
    serve = StdioTransport(command=sys.executable, args=("-m", "skillward", "serve"))
    examples = ServerSpec(label="examples", transport=serve)
    person = ScriptedPerson(approve="pdf-processing")
    async with SkillHost() as host:
        await host.connect(examples)
        skills = SkillwardTools(host)
        agent = Agent(name="assistant", model=scripted_model(), tools=skills.tools())
        runs = 1
        print(f"run {runs}")
        result = await Runner.run(agent, "Fill in the form in report.pdf.", run_config=QUIET)
        shown: set[tuple[str, str]] = set()
        show(result, shown)
        while result.interruptions:
            questions = skills.questions(result.interruptions)
            print(f"  the run is interrupted: {len(questions)} skills wait for the person")
            state = result.to_state()
            for question in questions:
                if person.approves(question):
                    skills.approve(state, question)
                else:
                    await skills.deny(state, question)
            runs += 1
            print(f"run {runs}, resumed from its state with the person's answers")
            result = await Runner.run(agent, state, run_config=QUIET)
            show(result, shown)
        print(f"the model's answer: {result.final_output}")


if __name__ == "__main__":
    anyio.run(main)
