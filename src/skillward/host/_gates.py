"""The gates a session asks while it acts on MCP skills: the cross-origin read gate
(asked per call whenever another server's text is in context, never remembered) and
the execution gate (asked per skill before a host tool runs code, unless the skill's
approval already holds that grant). Both deny by default; the policy may refuse
either without asking anyone. And the checks every seam passes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import TypeVar

from skillward.core.errors import ConfigError, CrossOriginDenied, ExecutionDenied
from skillward.core.origins import SkillKey
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import Activation
from skillward.trust.approvals import Approver, Decision, Granting, Grants
from skillward.trust.audit import EventKind, Outcome
from skillward.trust.book import ApprovalBook
from skillward.trust.gates import (
    CrossOriginGate,
    CrossOriginRequest,
    ExecutionGate,
    ExecutionRequest,
)
from skillward.trust.policy import EffectivePolicy, Policy, refusal

__all__ = ["Gates", "as_decision", "async_seam", "check_rules"]

logger = logging.getLogger("skillward")

_Seam = TypeVar("_Seam")


def async_seam(seam: _Seam, name: str) -> _Seam:
    """Refuse, at construction, a seam whose ``decide`` is not a coroutine function."""
    decide = getattr(seam, "decide", None)
    if not inspect.iscoroutinefunction(decide):
        raise TypeError(
            f"SkillHost({name}=...) needs an object with `async def decide(request)`; "
            f"{type(seam).__name__}.decide is not a coroutine function"
        )
    return seam


def check_rules(policy: Policy, approver: Approver | None) -> None:
    """Refuse a book built without the policy's rules: it would remember longer, and
    honour older records, than the policy allows, without a word."""
    if not isinstance(policy, EffectivePolicy) or not isinstance(approver, ApprovalBook):
        return  # a host's own policy or approver applies its own rules
    if approver.rules.version != policy.version:
        raise ConfigError(
            "the ApprovalBook was not built with this policy's approval rules, so "
            "approvals.persist, approvals.max_age_days, keyring.require_recommended and "
            "lockdown would not apply to it; pass rules=policy.approval_rules(store)",
            hint="Build the book with ApprovalBook(prompter, store=store, "
            "rules=policy.approval_rules(store)) from the policy given to the host.",
        )


def as_decision(answer: object, who: object) -> Decision:
    """A seam's answer, which must be a Decision: anything else is a bug, not a denial."""
    if not isinstance(answer, Decision):
        raise TypeError(
            f"{type(who).__name__}.decide returned {type(answer).__name__}, not a Decision"
        )
    return answer


class Gates:
    """The cross-origin and execution gates, asked for one session's acting window."""

    def __init__(
        self,
        shared: Shared,
        window: ActingWindow,
        *,
        approver: Approver,
        cross_origin: CrossOriginGate,
        execution: ExecutionGate,
    ) -> None:
        self._shared = shared
        self._window = window
        self._approver = approver
        self._cross_origin = cross_origin
        self._execution = execution

    async def check_cross_origin(self, server: str, uri: str) -> None:
        """Ask, for this one call, whether ``server`` may be read while other servers'
        text is in context. The answer is never remembered."""
        others = tuple(sorted(self._window.context_origins() - {server}))
        if not others:
            return
        named = ", ".join(repr(a) for a in others)

        def record(event: EventKind, decision: Outcome, reason: str) -> None:
            # ``label`` lists the origins in context; ``target`` is the server read.
            self._shared.audit.record(
                event,
                decision,
                label=",".join(others),
                identity=self._shared.identity(server),
                gate="cross_origin",
                target=server,
                resource_uri=uri,
                reason=reason,
            )

        if self._shared.grant_mode("cross_origin") != "prompt":
            refused = refusal(self._shared.policy, "cross_origin")
            record("policy_denial", "denied", f"{refused.whose} forbids reads across servers")
            raise CrossOriginDenied(
                f"refused by policy: a read against server {server!r} while text from "
                f"{named} is in context; rule {refused.rule}",
                server=server,
                uri=uri,
                hint=refused.hint or None,
            ).by_rule_of(refused.whose)
        request = CrossOriginRequest(acting=others, target=server, uri=uri)
        answer = as_decision(await self._cross_origin.decide(request), self._cross_origin)
        if answer is not Decision.APPROVE:
            logger.info("cross-origin read of %s on %s refused", uri, server)
            record("gate", "denied", "not approved for this call")
            raise CrossOriginDenied(
                f"a read against server {server!r} while text from {named} is in context "
                "needs approval naming those servers",
                server=server,
                uri=uri,
            )
        record("gate", "allowed", "approved for this call only")

    async def authorize_execution(
        self, tool: str, *, detail: str = "", arguments: Mapping[str, object] | None = None
    ) -> None:
        """Ask about running ``tool`` for each MCP skill in the window (see
        :meth:`SkillHost.authorize_execution`); raises ExecutionDenied. ``arguments``, the
        call's (``handle_tool_call``), are what the person is shown of it."""
        acting = self._window.acting_mcp()
        keys = tuple(a.record.key for a in acting)
        for activation in acting:
            await self._authorize_for(activation, tool, detail, arguments, keys)

    async def _authorize_for(
        self,
        activation: Activation,
        tool: str,
        detail: str,
        arguments: Mapping[str, object] | None,
        acting: tuple[SkillKey, ...],
    ) -> None:
        record = activation.record
        key = record.key

        def audit(event: EventKind, decision: Outcome, reason: str) -> None:
            self._shared.record(
                event,
                decision,
                record,
                activation=activation,
                reason=reason,
                gate="execution",
                tool=tool,
            )

        def refused(message: str) -> ExecutionDenied:
            return ExecutionDenied(message, server=key.origin, uri=key.locator)

        if self._shared.grant_mode("execution") != "prompt":
            policy = refusal(self._shared.policy, "execution")
            audit("policy_denial", "denied", f"{policy.whose} forbids execution")
            raise ExecutionDenied(
                f"refused by policy: running {tool!r} while acting on skills from server "
                f"{key.origin!r}; rule {policy.rule}",
                server=key.origin,
                uri=key.locator,
                hint=policy.hint or None,
            ).by_rule_of(policy.whose)
        request = self._shared.approval_request(record)
        approver = self._approver
        held = None
        # A skill whose content ended is held to nothing it was granted.
        if isinstance(approver, Granting) and activation.ended is None:
            held = await approver.held(request)
        if held is not None and held.execution:
            audit("gate", "allowed", "execution is granted with the skill's approval")
            return
        remembered = False
        remember = None
        if held is not None and isinstance(approver, Granting):
            granting = approver

            async def remember() -> bool:
                nonlocal remembered
                remembered = await granting.add_grant(request, Grants(execution=True))
                return remembered

        question = ExecutionRequest(
            tool=tool,
            acting=acting,
            detail=detail,
            skill=key,
            name=record.name,
            identity=request.identity,
            remember=remember,
            arguments=arguments,
        )
        unseen = self._unshowable(question)
        if unseen is not None:
            audit("gate", "denied", "too long to show whole: nobody was asked")
            raise refused(
                f"running {tool!r} while acting on skills from server {key.origin!r} was "
                f"refused without asking: {unseen}, and nothing runs that a person was not "
                "shown whole"
            )
        answer = as_decision(await self._execution.decide(question), self._execution)
        if answer is not Decision.APPROVE:
            logger.info("execution of %s refused while acting on %s", tool, key.origin)
            audit("gate", "denied", "not approved")
            raise refused(
                f"running {tool!r} while acting on skills from server {key.origin!r} needs "
                "explicit approval of execution for that skill"
            )
        audit(
            "gate",
            "allowed",
            "approved, and kept with the skill's approval"
            if remembered
            else "approved for this call",
        )

    def _unshowable(self, question: ExecutionRequest) -> str | None:
        """Why ``question``'s call cannot be shown whole (None when it can)."""
        limit = self._shared.limits.max_shown_arguments
        try:
            length = len(question.shown)
        except RecursionError:
            return "the call's arguments are nested too deep to show"
        if length > limit:
            return f"the call takes {length} characters to show whole, more than {limit}"
        return None
