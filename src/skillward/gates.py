"""Gates on what acting on an MCP skill may lead to.

Built so far: the cross-origin read gate. While the model acts on a skill
served by server A, a ``read_resource`` against server B is a cross-origin read
(the confused-deputy case of SEP-2640); it needs explicit approval naming both
servers, per call. The default, :class:`DenyCrossOrigin`, refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from skillward.approvals import Decision

__all__ = ["CrossOriginGate", "CrossOriginRequest", "DenyCrossOrigin"]


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
