"""The policy seam: what an administrator allows at all.

A policy is consulted before the approver: it can refuse a server or a skill
outright (raising :class:`~skillward.errors.PolicyDenied`), and a person's
approval never overrides it. Policy checks raise; they never return a bool.

The default, :class:`NoPolicy`, is the absence of an administrator policy: it
restricts nothing, and the approver and gates still apply. Policy files, which
fail closed when empty or broken, plug in behind this protocol.
"""

from __future__ import annotations

from typing import Protocol

from skillward.approvals import ActivationRequest
from skillward.servers import ServerSpec

__all__ = ["NoPolicy", "Policy"]


class Policy(Protocol):
    def check_server(self, spec: ServerSpec) -> None:
        """Raise PolicyDenied if this server may not be connected."""

    def check_activation(self, request: ActivationRequest) -> None:
        """Raise PolicyDenied if this skill may not be loaded, whatever the approver says."""


class NoPolicy:
    """No administrator policy: nothing is restricted beyond the approver and gates."""

    def check_server(self, spec: ServerSpec) -> None:
        return None

    def check_activation(self, request: ActivationRequest) -> None:
        return None
