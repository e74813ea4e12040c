"""Where a rule is explained: its row in ``docs/check.md``, as a code-scanning view links it.

The repository is the one ``pyproject.toml`` names (``[project.urls]``; a test keeps the
two equal); each rule's row carries an anchor of its own.
"""

from __future__ import annotations

__all__ = ["CHECK_DOCS", "REPOSITORY", "help_uri", "rule_anchor"]

REPOSITORY = "https://github.com/skillward/skillward"
#: docs/check.md as published: the rules of the current release line.
CHECK_DOCS = f"{REPOSITORY}/blob/main/docs/check.md"


def rule_anchor(rule_id: str) -> str:
    """The anchor of a rule's row in docs/check.md: ``sw-res-006``."""
    return rule_id.lower()


def help_uri(rule_id: str) -> str:
    """The address of a rule's row in docs/check.md."""
    return f"{CHECK_DOCS}#{rule_anchor(rule_id)}"
