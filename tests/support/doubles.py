"""Test doubles for the host's seams: each implements the real protocol and records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from skillward.trust.approvals import ActivationRequest, Decision
from skillward.trust.gates import CrossOriginRequest, ExecutionRequest


@dataclass
class Approving:
    """An approver that says yes (unless told otherwise), and remembers what it was asked."""

    asked: list[ActivationRequest] = field(default_factory=list)
    answer: Decision = Decision.APPROVE
    #: Called with each request as it is asked (to note what had happened by then).
    on_ask: Callable[[ActivationRequest], None] | None = None

    async def decide(self, request: ActivationRequest) -> Decision:
        self.asked.append(request)
        if self.on_ask is not None:
            self.on_ask(request)
        return self.answer


@dataclass
class CrossOrigin:
    """A cross-origin gate with a settable answer (deny unless told otherwise)."""

    answer: Decision = Decision.DENY
    asked: list[CrossOriginRequest] = field(default_factory=list)

    async def decide(self, request: CrossOriginRequest) -> Decision:
        self.asked.append(request)
        return self.answer


@dataclass
class Execution:
    """An execution gate with a settable answer (deny unless told otherwise)."""

    answer: Decision = Decision.DENY
    asked: list[ExecutionRequest] = field(default_factory=list)

    async def decide(self, request: ExecutionRequest) -> Decision:
        self.asked.append(request)
        return self.answer
