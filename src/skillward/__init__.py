"""skillward: a security-focused host-side loader for skills served over MCP (SEP-2640).

Everything a server sends is untrusted. skillward parses it once, at the boundary,
verifies every byte against the listing, and tags its origin on everything it
hands to a model::

    from skillward import ServerSpec, SkillHost, StdioTransport

    async with SkillHost(approver=approver) as host:
        await host.connect(ServerSpec(label="acme", transport=StdioTransport(command="acme-mcp")))
        prompt = host.catalog_block().text()
        activation = await host.activate("refunds")
        print(activation.block.text())

Synchronous code uses :class:`SyncSkillHost` (the same methods, blocking) the same way,
with ``with`` for ``async with`` and no ``await``.

Errors are :class:`SkillwardError` subclasses, split by fault, naming the server
label and skill URI. The names below are the stable public API; modules whose
names start with an underscore are internal.

Importing ``skillward`` is cheap: each name is imported from its module the first
time it is used (PEP 562), so a host, or a command, pays only for what it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillward._version import __version__
    from skillward.cache._disk import DiskCache
    from skillward.cache.seam import CacheKey, ContentCache, NoCache
    from skillward.core.config import Limits
    from skillward.core.context import CatalogItem, ContextBlock
    from skillward.core.errors import (
        AmbiguousName,
        AnswerRefused,
        ApprovalDenied,
        ApprovalError,
        ApprovalTimedOut,
        CapabilityMissing,
        ConfigError,
        CrossOriginDenied,
        DeadlineExceeded,
        DigestMismatch,
        ExecutionDenied,
        FrontmatterError,
        FrontmatterMismatch,
        IntegrityError,
        InvalidApprovalToken,
        InvalidEntry,
        InvalidResponse,
        InvalidUri,
        ListingRunaway,
        NoTerminal,
        OriginError,
        PolicyDenied,
        ReactivationRequired,
        RememberUnavailable,
        ResponseTooLarge,
        ServerDisconnected,
        ServerRejected,
        SizeMismatch,
        SkillChanged,
        SkillNotActive,
        SkillNotFound,
        SkillTooLarge,
        SkillwardError,
        StaleAnswer,
        StoreTampered,
        TransportError,
        UnknownServer,
        UnlistedResource,
        UnverifiableSkill,
        UsageError,
    )
    from skillward.core.frontmatter import (
        JsonValue,
        SkillDocument,
        check_frontmatter,
        parse_skill_md,
    )
    from skillward.core.labels import normalise_label
    from skillward.core.origins import Origin, SkillKey
    from skillward.core.registry import Collision, Declined, SkillRecord
    from skillward.core.tools import ToolSet
    from skillward.core.uris import ResourceUri, SkillRoot, parse_uri, resolve_reference
    from skillward.core.wire import SkillEntry, SkillsPage, parse_entry, parse_skills_page
    from skillward.edge._local import LocalSkillDir, default_local_dirs
    from skillward.edge.servers import (
        HttpTransport,
        InMemoryTransport,
        ServersConfig,
        ServerSpec,
        StdioTransport,
        load_mcp_servers,
        parse_mcp_servers,
    )
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
    from skillward.terminal.prompts import (
        Terminal,
        TerminalApprover,
        TerminalCrossOriginGate,
        TerminalExecutionGate,
    )
    from skillward.trust._policyfile import PolicyFile, PolicyProblem, policy_schema
    from skillward.trust._policyload import load_policy
    from skillward.trust._store import FileApprovalStore
    from skillward.trust.approvals import (
        ActivationRequest,
        Answer,
        ApprovalRecord,
        ApprovalRules,
        ApprovalStorage,
        Approved,
        ApproveOnce,
        Approver,
        Change,
        Changed,
        Decision,
        DenyAll,
        Granting,
        Grants,
        NeverApproved,
        Prompter,
        Question,
        Scope,
        UnsafeApproveAll,
        Verdict,
        assess,
        content_hash,
    )
    from skillward.trust.audit import (
        AuditEvent,
        AuditExport,
        AuditLog,
        AuditTrail,
        TrailVerdict,
        audit_export,
        read_events,
        verify_trail,
    )
    from skillward.trust.book import ApprovalBook
    from skillward.trust.gates import (
        CrossOriginGate,
        CrossOriginRequest,
        DenyCrossOrigin,
        DenyExecution,
        ExecutionGate,
        ExecutionRequest,
    )
    from skillward.trust.parking import ParkedApproval, ParkedApprovals
    from skillward.trust.pending import ApprovalFacts, PendingApproval
    from skillward.trust.policy import EffectivePolicy, Lockdown, NoPolicy, Pin, Policy, Refusal
    from skillward.trust.tokens import ApprovalTokens, MemoryNonces, NonceStore, TokenClaims
    from skillward.trust.web import WebApprover

__all__ = [
    "TOOL_SCHEMAS",
    "Activation",
    "ActivationRequest",
    "AmbiguousName",
    "Answer",
    "AnswerRefused",
    "ApprovalBook",
    "ApprovalDenied",
    "ApprovalError",
    "ApprovalFacts",
    "ApprovalRecord",
    "ApprovalRules",
    "ApprovalStorage",
    "ApprovalTimedOut",
    "ApprovalTokens",
    "ApproveOnce",
    "Approved",
    "Approver",
    "AuditEvent",
    "AuditExport",
    "AuditLog",
    "AuditTrail",
    "CacheKey",
    "CapabilityMissing",
    "CatalogItem",
    "Change",
    "Changed",
    "Collision",
    "ConfigError",
    "ContentCache",
    "ContextBlock",
    "ContextSink",
    "CrossOriginDenied",
    "CrossOriginGate",
    "CrossOriginRequest",
    "DeadlineExceeded",
    "Decision",
    "Declined",
    "DenyAll",
    "DenyCrossOrigin",
    "DenyExecution",
    "DigestMismatch",
    "DiskCache",
    "EffectivePolicy",
    "ExecutionDenied",
    "ExecutionGate",
    "ExecutionRequest",
    "FileApprovalStore",
    "FrontmatterError",
    "FrontmatterMismatch",
    "Granting",
    "Grants",
    "HostConfig",
    "HttpTransport",
    "InMemoryTransport",
    "IntegrityError",
    "InvalidApprovalToken",
    "InvalidEntry",
    "InvalidResponse",
    "InvalidUri",
    "JsonValue",
    "Limits",
    "ListingRunaway",
    "LocalSkillDir",
    "Lockdown",
    "MemoryNonces",
    "NeverApproved",
    "NoCache",
    "NoPolicy",
    "NoTerminal",
    "NonceStore",
    "Origin",
    "OriginError",
    "ParkedApproval",
    "ParkedApprovals",
    "PendingApproval",
    "Pin",
    "Policy",
    "PolicyDenied",
    "PolicyFile",
    "PolicyProblem",
    "Prompter",
    "Question",
    "ReactivationRequired",
    "Refusal",
    "RememberUnavailable",
    "ResourceUri",
    "ResponseTooLarge",
    "Scope",
    "ServerDisconnected",
    "ServerRejected",
    "ServerSpec",
    "ServerStatus",
    "ServersConfig",
    "SizeMismatch",
    "SkillChanged",
    "SkillDocument",
    "SkillEntry",
    "SkillHost",
    "SkillKey",
    "SkillNotActive",
    "SkillNotFound",
    "SkillRecord",
    "SkillRoot",
    "SkillTooLarge",
    "SkillsPage",
    "SkillwardError",
    "StaleAnswer",
    "StdioTransport",
    "StoreTampered",
    "SyncSkillHost",
    "Terminal",
    "TerminalApprover",
    "TerminalCrossOriginGate",
    "TerminalExecutionGate",
    "TokenClaims",
    "ToolSet",
    "ToolStyle",
    "TrailVerdict",
    "TransportError",
    "UnknownServer",
    "UnlistedResource",
    "UnsafeApproveAll",
    "UnverifiableSkill",
    "UsageError",
    "Verdict",
    "WebApprover",
    "__version__",
    "assess",
    "audit_export",
    "check_frontmatter",
    "content_hash",
    "default_local_dirs",
    "load_mcp_servers",
    "load_policy",
    "normalise_label",
    "parse_entry",
    "parse_mcp_servers",
    "parse_skill_md",
    "parse_skills_page",
    "parse_uri",
    "policy_schema",
    "read_events",
    "resolve_reference",
    "verify_trail",
]

#: The module that defines each public name (``tests/meta/test_architecture.py`` keeps
#: this, ``__all__`` and the imports above in step).
_MODULES: dict[str, tuple[str, ...]] = {
    "skillward._version": ("__version__",),
    "skillward.cache._disk": ("DiskCache",),
    "skillward.cache.seam": ("CacheKey", "ContentCache", "NoCache"),
    "skillward.core.config": ("Limits",),
    "skillward.core.context": ("CatalogItem", "ContextBlock"),
    "skillward.core.errors": (
        "AmbiguousName",
        "AnswerRefused",
        "ApprovalDenied",
        "ApprovalError",
        "ApprovalTimedOut",
        "CapabilityMissing",
        "ConfigError",
        "CrossOriginDenied",
        "DeadlineExceeded",
        "DigestMismatch",
        "ExecutionDenied",
        "FrontmatterError",
        "FrontmatterMismatch",
        "IntegrityError",
        "InvalidApprovalToken",
        "InvalidEntry",
        "InvalidResponse",
        "InvalidUri",
        "ListingRunaway",
        "NoTerminal",
        "OriginError",
        "PolicyDenied",
        "ReactivationRequired",
        "RememberUnavailable",
        "ResponseTooLarge",
        "ServerDisconnected",
        "ServerRejected",
        "SizeMismatch",
        "SkillChanged",
        "SkillNotActive",
        "SkillNotFound",
        "SkillTooLarge",
        "SkillwardError",
        "StaleAnswer",
        "StoreTampered",
        "TransportError",
        "UnknownServer",
        "UnlistedResource",
        "UnverifiableSkill",
        "UsageError",
    ),
    "skillward.core.frontmatter": (
        "JsonValue",
        "SkillDocument",
        "check_frontmatter",
        "parse_skill_md",
    ),
    "skillward.core.labels": ("normalise_label",),
    "skillward.core.origins": ("Origin", "SkillKey"),
    "skillward.core.registry": ("Collision", "Declined", "SkillRecord"),
    "skillward.core.tools": ("ToolSet",),
    "skillward.core.uris": ("ResourceUri", "SkillRoot", "parse_uri", "resolve_reference"),
    "skillward.core.wire": ("SkillEntry", "SkillsPage", "parse_entry", "parse_skills_page"),
    "skillward.edge._local": ("LocalSkillDir", "default_local_dirs"),
    "skillward.edge.servers": (
        "HttpTransport",
        "InMemoryTransport",
        "ServersConfig",
        "ServerSpec",
        "StdioTransport",
        "load_mcp_servers",
        "parse_mcp_servers",
    ),
    "skillward.host.skillhost": ("SkillHost",),
    "skillward.host.types": (
        "TOOL_SCHEMAS",
        "Activation",
        "ContextSink",
        "HostConfig",
        "ServerStatus",
        "ToolStyle",
    ),
    "skillward.host.sync": ("SyncSkillHost",),
    "skillward.terminal.prompts": (
        "Terminal",
        "TerminalApprover",
        "TerminalCrossOriginGate",
        "TerminalExecutionGate",
    ),
    "skillward.trust._policyfile": ("PolicyFile", "PolicyProblem", "policy_schema"),
    "skillward.trust._policyload": ("load_policy",),
    "skillward.trust._store": ("FileApprovalStore",),
    "skillward.trust.approvals": (
        "ActivationRequest",
        "Answer",
        "ApprovalRecord",
        "ApprovalRules",
        "ApprovalStorage",
        "Approved",
        "ApproveOnce",
        "Approver",
        "Change",
        "Changed",
        "Decision",
        "DenyAll",
        "Granting",
        "Grants",
        "NeverApproved",
        "Prompter",
        "Question",
        "Scope",
        "UnsafeApproveAll",
        "Verdict",
        "assess",
        "content_hash",
    ),
    "skillward.trust.audit": (
        "AuditEvent",
        "AuditExport",
        "AuditLog",
        "AuditTrail",
        "TrailVerdict",
        "audit_export",
        "read_events",
        "verify_trail",
    ),
    "skillward.trust.book": ("ApprovalBook",),
    "skillward.trust.gates": (
        "CrossOriginGate",
        "CrossOriginRequest",
        "DenyCrossOrigin",
        "DenyExecution",
        "ExecutionGate",
        "ExecutionRequest",
    ),
    "skillward.trust.parking": ("ParkedApproval", "ParkedApprovals"),
    "skillward.trust.pending": ("ApprovalFacts", "PendingApproval"),
    "skillward.trust.policy": (
        "EffectivePolicy",
        "Lockdown",
        "NoPolicy",
        "Pin",
        "Policy",
        "Refusal",
    ),
    "skillward.trust.tokens": ("ApprovalTokens", "MemoryNonces", "NonceStore", "TokenClaims"),
    "skillward.trust.web": ("WebApprover",),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


def _load(name: str) -> object:
    """Import public ``name`` from its module, once: later lookups find it here. An old
    name (``ApprovalRequired``) warns, every time it is used."""
    module = _WHERE.get(name)
    if module is None:
        from skillward.core.errors import deprecated_name  # noqa: PLC0415

        return deprecated_name("skillward", name)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if not TYPE_CHECKING:
    # Hidden from type checkers, which read the imports above: a misspelt name stays an
    # error for them.
    __getattr__ = _load
