"""The host: :class:`SkillHost` (connections, activation, held entries, reads, model
tools) and :class:`SyncSkillHost`, its blocking twin.

May import: ``core``, ``edge``, ``trust``, ``cache`` and ``host``.
"""

from skillward.host.skillhost import (
    TOOL_SCHEMAS,
    Activation,
    ContextSink,
    HostConfig,
    ServerStatus,
    SkillHost,
    ToolStyle,
)
from skillward.host.sync import SyncSkillHost

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
