"""Gates on what acting on an MCP skill may lead to.

* Cross-origin reads. While the model acts on a skill served by server A, a
  ``read_resource`` against server B is the confused-deputy case of SEP-2640; it
  needs explicit approval naming both servers, per call, and the answer is never
  remembered. The default, :class:`DenyCrossOrigin`, refuses.
* Code execution. While the model acts on an MCP skill, a host code-execution
  tool call needs explicit approval for that skill, naming the skill and the
  command. The default, :class:`DenyExecution`, refuses. A gate may keep a "yes"
  with the skill's content-bound approval, through
  :attr:`ExecutionRequest.remember`, when the person chooses to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from skillward.core.origins import SkillKey
from skillward.core.visible import visible, visible_arguments
from skillward.trust.approvals import Decision

__all__ = [
    "CrossOriginGate",
    "CrossOriginRequest",
    "DenyCrossOrigin",
    "DenyExecution",
    "ExecutionGate",
    "ExecutionRequest",
]


@dataclass(frozen=True, slots=True)
class CrossOriginRequest:
    """A read against ``target`` while acting on skills from the ``acting`` servers."""

    acting: tuple[str, ...]
    target: str
    uri: str


class CrossOriginGate(Protocol):
    async def decide(self, request: CrossOriginRequest) -> Decision: ...


class DenyCrossOrigin:
    """The default: no cross-origin read is allowed."""

    async def decide(self, request: CrossOriginRequest) -> Decision:
        return Decision.DENY


@dataclass(frozen=True, slots=True)
class ExecutionRequest:
    """A host code-execution tool call made while acting on the ``acting`` MCP skills.

    Execution is approved per skill: ``skill`` is the one this request asks about
    (every acting MCP skill is asked about in turn, unless its approval already
    grants execution).
    """

    tool: str
    acting: tuple[SkillKey, ...]
    #: The command, as the model asked for it (the tool's arguments as JSON, when
    #: ``handle_tool_call`` asks): untrusted text.
    detail: str = ""
    #: The skill whose approval of execution is asked for.
    skill: SkillKey | None = None
    #: That skill's name, as its server wrote it (escape it before showing it).
    name: str = ""
    #: How that skill's server is reached (``ServerSpec.identity``).
    identity: str | None = None
    #: Keeps the approval with the skill's content-bound approval record, so later
    #: calls while acting on exactly this content are not asked about. Call it only
    #: when the person chose that; None when no record can hold it (an approval given
    #: once). Returns whether it was kept.
    remember: Callable[[], Awaitable[bool]] | None = field(default=None, compare=False, repr=False)
    #: The call's arguments, when the host has them (``handle_tool_call``): what
    #: :attr:`shown` shows, in place of ``detail``.
    arguments: Mapping[str, object] | None = field(default=None, compare=False)

    @property
    def shown(self) -> str:
        """What would run, as a person is shown it: the arguments, those that name a
        command or path first, or else ``detail``; whole, in their visible form
        (``core/visible.py``), each argument on a new line; escape it for your display.
        RecursionError for arguments nested past Python's recursion limit."""
        if self.arguments is not None:
            return visible_arguments(self.arguments)
        return visible(self.detail, lines=True)


class ExecutionGate(Protocol):
    async def decide(self, request: ExecutionRequest) -> Decision: ...


class DenyExecution:
    """The default: no code execution while acting on an MCP skill."""

    async def decide(self, request: ExecutionRequest) -> Decision:
        return Decision.DENY
