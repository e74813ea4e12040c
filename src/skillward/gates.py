"""Gates on what acting on an MCP skill may lead to.

* Cross-origin reads. While the model acts on a skill served by server A, a
  ``read_resource`` against server B is the confused-deputy case of SEP-2640; it
  needs explicit approval naming both servers, per call. The default,
  :class:`DenyCrossOrigin`, refuses.
* Code execution. While the model acts on an MCP skill, a host code-execution
  tool call needs explicit approval for that skill. The default,
  :class:`DenyExecution`, refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from skillward.approvals import Decision
from skillward.origins import SkillKey

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
    """A host code-execution tool call made while acting on the ``acting`` MCP skills."""

    tool: str
    acting: tuple[SkillKey, ...]
    detail: str = ""


class ExecutionGate(Protocol):
    async def decide(self, request: ExecutionRequest) -> Decision: ...


class DenyExecution:
    """The default: no code execution while acting on an MCP skill."""

    async def decide(self, request: ExecutionRequest) -> Decision:
        return Decision.DENY
