"""The policy seam: what an administrator allows at all.

A policy is consulted before the approver: it can refuse a server or a skill
outright (raising :class:`~skillward.errors.PolicyDenied`), and a person's
approval never overrides it. Policy checks raise; they never return a bool.

It also says, per kind of grant, whether a person may be asked for it at all
(:meth:`Policy.grant_mode`): ``"prompt"`` lets the gates ask; ``"never"`` refuses
without asking. The host treats any other answer as ``"never"``.

The default, :class:`NoPolicy`, is the absence of an administrator policy: it
restricts nothing, and the approver and gates still apply. Policy files, which
fail closed when empty or broken, plug in behind this protocol.
"""

from __future__ import annotations

from typing import Literal, Protocol

from skillward.approvals import ActivationRequest
from skillward.servers import ServerSpec

__all__ = ["GRANT_KINDS", "GrantKind", "GrantMode", "NoPolicy", "Policy"]

#: Grants a person can give beyond activation: the tools an MCP skill's
#: ``allowed-tools`` requests, host code execution while acting on an MCP skill,
#: and a read of another server while acting on one.
GrantKind = Literal["allowed_tools", "execution", "cross_origin"]
GRANT_KINDS: tuple[GrantKind, ...] = ("allowed_tools", "execution", "cross_origin")
#: ``prompt``: the person may be asked; ``never``: refused without asking.
GrantMode = Literal["prompt", "never"]


class Policy(Protocol):
    def check_server(self, spec: ServerSpec) -> None:
        """Raise PolicyDenied if this server may not be connected."""

    def check_activation(self, request: ActivationRequest) -> None:
        """Raise PolicyDenied if this skill may not be loaded, whatever the approver says."""

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        """Whether a person may be asked for a grant of ``kind`` (``never``: refuse)."""


class NoPolicy:
    """No administrator policy: nothing is restricted beyond the approver and gates."""

    def check_server(self, spec: ServerSpec) -> None:
        return None

    def check_activation(self, request: ActivationRequest) -> None:
        return None

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        return "prompt"
