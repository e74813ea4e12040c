"""The host: :class:`SkillHost` (connections, activation, held entries, reads, model
tools) and :class:`SyncSkillHost`, its blocking twin.

The names below are imported from their module on first use (PEP 562), as the
``skillward`` facade does: importing one module of the host costs nothing for the other.

May import: ``core``, ``edge``, ``trust``, ``cache`` and ``host``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillward.host.skillhost import SkillHost
    from skillward.host.sync import SyncSkillHost
    from skillward.host.types import (
        TOOL_SCHEMAS,
        Activation,
        ContextSink,
        HostConfig,
        ServerStatus,
        ToolStyle,
    )

__all__ = [
    "TOOL_SCHEMAS",
    "Activation",
    "ContextSink",
    "HostConfig",
    "ServerStatus",
    "SkillHost",
    "SyncSkillHost",
    "ToolStyle",
]

_WHERE = {
    **dict.fromkeys(__all__, "skillward.host.types"),
    "SkillHost": "skillward.host.skillhost",
    "SyncSkillHost": "skillward.host.sync",
}


def _load(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'skillward.host' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if not TYPE_CHECKING:
    __getattr__ = _load
