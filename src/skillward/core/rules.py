"""Rule violations: what an origin broke, named by the ID of the rule it broke.

Every invariant the verifier core enforces has a stable rule ID (``SW-ENTRY-003``),
listed with its source, severity and fix in ``docs/check.md``. The checks that decide
whether the host refuses something also report it, by the same code: a check either
raises at the first problem (the host's path, which refuses) or collects every problem
as a :class:`Violation` (``skillward check``'s path, which reports them all).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RuleError", "Violation"]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule.

    ``refused``: the host refuses what breaks it (``parse_entry`` raises); otherwise it
    is accepted, and only reported. ``uri`` names the resource the violation is about
    when that is not the skill itself (a manifest item); ``field``, the frontmatter key
    it is about, if one. ``message`` may quote server strings, escaped by ``repr`` or
    bounded; renderers escape it again for their medium.
    """

    rule: str
    message: str
    refused: bool = True
    uri: str | None = None
    field: str | None = None


class RuleError(ValueError):
    """A broken rule, raised inside a model's validators.

    A ValueError, so pydantic reports it as a validation error with the message
    unchanged, and keeps the exception itself in the error's context: the rule ID
    survives validation.
    """

    def __init__(self, rule: str, message: str, *, uri: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.uri = uri

    def violation(self, *, refused: bool = True, field: str | None = None) -> Violation:
        return Violation(self.rule, self.message, refused=refused, uri=self.uri, field=field)
