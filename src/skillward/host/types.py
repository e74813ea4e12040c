"""The host's values: how a host is configured (:class:`HostConfig`), what it returns
(:class:`Activation`, :class:`ServerStatus`), the tools it may register with a model
(:data:`TOOL_SCHEMAS`; their shape in each API is a :data:`ToolStyle`), and where blocks
may be seen (:data:`ContextSink`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from skillward.core.config import Limits
from skillward.core.context import ContextBlock
from skillward.core.errors import ConfigError, SkillwardError
from skillward.core.registry import SkillRecord
from skillward.core.tools import ToolSet, ToolStyle
from skillward.core.wire import SkillEntry
from skillward.edge._local import LocalSkillDir

__all__ = [
    "TOOL_SCHEMAS",
    "Activation",
    "ContextSink",
    "HostConfig",
    "ServerStatus",
    "ToolStyle",
]

ContextSink = Callable[[ContextBlock], None]

#: Every tool skillward may offer a model, by its unprefixed name, in the MCP shape with
#: no ``enum`` (``read_resource`` only with ``HostConfig.allow_uri_lookups``). For
#: reference: register what :meth:`SkillHost.tool_definitions` returns.
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    tool["name"]: tool for tool in ToolSet(resource_reads=True).definitions(())
}


@dataclass(frozen=True, kw_only=True)
class HostConfig:
    """How a SkillHost behaves. Frozen: decide once, at construction."""

    limits: Limits = field(default_factory=Limits)
    #: Local skill directories to discover on entry (see ``default_local_dirs()``).
    local_dirs: tuple[LocalSkillDir, ...] = ()
    #: Load skills whose ``resources`` is "dynamic": their content cannot be verified.
    unsafe_allow_dynamic: bool = False
    #: Let the model name URIs: the ``read_skill`` tool takes ``LABEL:URI`` references the
    #: catalog does not show (confirmed with ``skills/get`` on that server), and the
    #: ``read_resource(server, uri)`` tool is offered (any resource of a connected server,
    #: asked through the cross-origin gate whenever another server's text is in context).
    #: Off: the model loads only catalog skills and reads only the files they list.
    allow_uri_lookups: bool = False
    #: Put before the name of every tool skillward offers the model (``skills_`` makes
    #: ``skills_read_skill``), and so in every block that names one: at most 48 characters
    #: of ``A-Z``, ``a-z``, ``0-9``, ``_`` and ``-``.
    tool_prefix: str = ""
    #: The names of the host's own tools that execute code (a shell, an interpreter):
    #: :meth:`SkillHost.handle_tool_call` gates them while an MCP skill is active.
    execution_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.limits, Limits):
            raise ConfigError("HostConfig.limits must be a Limits")
        object.__setattr__(self, "local_dirs", tuple(self.local_dirs))
        for source in self.local_dirs:
            if not isinstance(source, LocalSkillDir):
                raise ConfigError("HostConfig.local_dirs takes LocalSkillDir values")
        if isinstance(self.execution_tools, str):
            raise ConfigError("HostConfig.execution_tools is a list of tool names, not one string")
        object.__setattr__(self, "execution_tools", tuple(self.execution_tools))
        offered = self.tools.names()  # a bad prefix is refused here
        for tool in self.execution_tools:
            if not isinstance(tool, str) or not tool:
                raise ConfigError("HostConfig.execution_tools takes non-empty tool names")
            if tool in offered:
                raise ConfigError(f"{tool!r} is skillward's own tool, not a code-execution tool")

    @property
    def tools(self) -> ToolSet:
        """The model tools this host offers: their names, under ``tool_prefix``, and
        ``read_resource`` with ``allow_uri_lookups``."""
        return ToolSet(prefix=self.tool_prefix, resource_reads=self.allow_uri_lookups)


@dataclass(frozen=True, slots=True)
class Activation:
    """An activated skill: the entry it was verified against, held while acting on it.

    ``ended`` is set when the skill's content failed verification after it was loaded:
    the activation stays in the acting window (its gates apply) but nothing more is
    served under it until it is loaded again.
    """

    record: SkillRecord
    block: ContextBlock
    #: The pinned entry (MCP skills); every later read is checked against it.
    entry: SkillEntry | None = None
    #: Why nothing more is served under this activation, if that is so.
    ended: SkillwardError | None = None
    #: The tools the frontmatter's ``allowed-tools`` requests (a request, not a grant).
    requested_tools: tuple[str, ...] = ()
    #: The tools to give the model while it acts on this skill. For an MCP skill, only
    #: those the person granted for this skill under its current content (empty by
    #: default); for a local skill, its ``allowed-tools`` unchanged (the host's rules).
    granted_tools: tuple[str, ...] = ()
    #: Why none of the requested tools could be granted (an MCP skill's), if that is so:
    #: the policy (its rule, and whose it is), or tools too long to show whole.
    tools_refused: str | None = None
    #: ``approvals.content_hash`` of the pinned entry, computed once for the audit trail.
    content_hash: str | None = None


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A connected (or once connected) server, as a person or a UI should see it."""

    label: str
    #: How it is reached (URL or command line); never header values.
    target: str
    state: Literal["connected", "disconnected"]
    #: Why it is disconnected, when it is.
    error: SkillwardError | None
    #: Whether it declares the skills extension (a server without it offers no skills).
    skills: bool
    #: Why it offers no skills, when it does not.
    note: str | None
    #: ``serverInfo.name`` as the server reported it: unverified, never an identity.
    reported_name: str | None
    #: Seconds the server said its last listing may be kept (``ttlMs``), if it said.
    listing_ttl: float | None = None
