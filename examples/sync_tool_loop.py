"""A synchronous host's tool loop with skillward, that you can copy.

Many hosts are synchronous: a script, a web handler, a framework whose tools are plain
functions. ``SyncSkillHost`` has ``SkillHost``'s methods as blocking calls; the async
host runs on a private event loop in a thread of its own, so the same host may serve
several threads at once, as a web server's handlers do.

Here the "model" speaks the OpenAI Responses API: skillward's tools are registered
in its flat function shape (``tool_definitions(style="openai-responses")``), each
``function_call`` item the model emits goes to ``handle_tool_call(name, arguments)``,
and the block's text goes back as a ``function_call_output`` item. Two requests arrive
at once, each handled in its own thread with the one host:

1. one loads a skill and reads a file the skill lists;
2. one asks for a skill the catalog does not show, and for a file of another.

The person approving is scripted (``ScriptedPerson``): seams stay ``async def decide``,
as for ``SkillHost``, and run on the host's event loop.

Run it from a checkout, with skillward installed::

    python examples/sync_tool_loop.py
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from skillward import (
    ActivationRequest,
    Decision,
    ServerSpec,
    StdioTransport,
    SyncSkillHost,
)

#: What the "model" emits for each request: Responses API ``function_call`` items.
REQUESTS: dict[str, list[dict[str, Any]]] = {
    "request 1": [
        {"name": "read_skill", "arguments": {"ref": "pdf-processing"}},
        {
            "name": "read_skill_file",
            "arguments": {"ref": "pdf-processing", "path": "references/FORMS.md"},
        },
    ],
    "request 2": [
        {"name": "read_skill", "arguments": {"ref": "no-such-skill"}},
        {"name": "read_skill_file", "arguments": {"ref": "nowhere:x", "path": "y.md"}},
    ],
}


class ScriptedPerson:
    """Stands in for the person a real host would ask; approves one skill, once."""

    def __init__(self, approve: str) -> None:
        self.approve = approve

    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.APPROVE if request.record.name == self.approve else Decision.DENY


def function_calls(request: str) -> list[dict[str, Any]]:
    """The items as a Responses API reply holds them: arguments are a JSON string."""
    return [
        {
            "type": "function_call",
            "call_id": f"{request[-1]}-{number}",
            "name": call["name"],
            "arguments": json.dumps(call["arguments"]),
        }
        for number, call in enumerate(REQUESTS[request], 1)
    ]


def handle(host: SyncSkillHost, request: str) -> list[tuple[dict[str, str], str]]:
    """One request's tool calls, as a synchronous handler makes them: the
    ``function_call_output`` items to send back to the model, each with a line for
    people to read."""
    answers = []
    for item in function_calls(request):
        block = host.handle_tool_call(item["name"], item["arguments"])
        assert block is not None  # skillward's own tools always answer
        output = {
            "type": "function_call_output",
            "call_id": item["call_id"],
            "output": block.text(),
        }
        origin = f"{block.origin.kind}:{block.origin.label}" if block.origin else "host"
        if block.kind == "error":
            shown = f"an error block from {origin}: {block.error_type}"
        else:
            shown = f"a {block.kind} block from {origin}: {block.content.splitlines()[0]}"
        answers.append((output, f"  {item['name']} -> {shown}"))
    return answers


def main() -> None:
    argv = (sys.executable, "-m", "skillward", "serve")
    examples = ServerSpec(
        label="examples", transport=StdioTransport(command=argv[0], args=argv[1:])
    )
    with SyncSkillHost(approver=ScriptedPerson(approve="pdf-processing")) as host:
        host.connect(examples)
        tools = host.tool_definitions(style="openai-responses")
        shapes = ", ".join(f"{t['name']} (strict={t['strict']})" for t in tools)
        print(f"tools for the Responses API: {shapes}")
        print(f"catalog: {', '.join(item.ref for item in host.catalog())}")
        # Two handlers at once, as a threaded web server would run them.
        with ThreadPoolExecutor(2) as pool:
            results = {request: pool.submit(handle, host, request) for request in REQUESTS}
            for request, result in results.items():
                print(request)
                for output, line in result.result(timeout=120):
                    print(f"{line} ({len(output['output'])} characters back to the model)")
    print("closed: the server is disconnected and the host's thread has ended")


if __name__ == "__main__":
    main()
