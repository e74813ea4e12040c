"""The approval seam: who decides whether a skill may be activated.

Every activation asks an :class:`Approver`. The default, :class:`DenyAll`, says
no, so a host that wires nothing up loads nothing. Approval is per skill and
per activation: approving an enclosing skill never approves a skill nested in it
(:attr:`ActivationRequest.nested_in` tells the approver so).

A persisted, content-bound approval store plugs in behind this seam; until one
is configured, every activation asks.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from skillward.origins import SkillKey
from skillward.registry import SkillRecord
from skillward.wire import SkillEntry

__all__ = [
    "ActivationRequest",
    "ApproveOnce",
    "Approver",
    "Decision",
    "DenyAll",
    "UnsafeApproveAll",
    "content_set",
    "entry_content",
]

logger = logging.getLogger("skillward")


class Decision(enum.Enum):
    APPROVE = "approve"
    DENY = "deny"


def entry_content(entry: SkillEntry) -> frozenset[tuple[str, str]] | None:
    """The full (uri, digest) set of an entry; None for a dynamic skill."""
    if entry.is_dynamic:
        return None
    return frozenset((item.uri, item.digest) for item in entry.manifest.values())


def content_set(record: SkillRecord) -> frozenset[tuple[str, str]] | None:
    """The (uri, digest) set an approval binds to; None for a dynamic or local skill."""
    return entry_content(record.entry) if record.entry is not None else None


@dataclass(frozen=True, slots=True)
class ActivationRequest:
    """What a person is asked to approve: one skill, as its entry describes it."""

    record: SkillRecord
    #: Skills (same origin) whose directory encloses this one: their approval does not count.
    nested_in: tuple[SkillKey, ...] = ()

    @property
    def allowed_tools(self) -> object:
        """The ``allowed-tools`` the skill requests (a request, never a grant)."""
        entry = self.record.entry
        return entry.frontmatter.as_dict().get("allowed-tools") if entry else None

    @property
    def content(self) -> frozenset[tuple[str, str]] | None:
        return content_set(self.record)


class Approver(Protocol):
    """Decides whether one activation may go ahead."""

    async def decide(self, request: ActivationRequest) -> Decision: ...


class DenyAll:
    """The default: nothing is approved."""

    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.DENY


class ApproveOnce:
    """Approves the activations of the named skills (for example ``--approve-once``).

    The person chose these skills explicitly, after seeing them; anything else,
    nested skills included, is denied.
    """

    def __init__(self, keys: Collection[SkillKey]) -> None:
        self._keys = frozenset(keys)

    async def decide(self, request: ActivationRequest) -> Decision:
        return Decision.APPROVE if request.record.key in self._keys else Decision.DENY


class UnsafeApproveAll:
    """Approves everything without asking anyone. For tests and demos only; warns every time."""

    async def decide(self, request: ActivationRequest) -> Decision:
        logger.warning(
            "UnsafeApproveAll approved %s:%s without asking anyone",
            request.record.origin.label,
            request.record.key.locator,
        )
        return Decision.APPROVE
