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

Errors are :class:`SkillwardError` subclasses, split by fault, naming the server
label and skill URI. The names below are the stable public API; modules whose
names start with an underscore are internal.
"""

from skillward._local import LocalSkillDir, default_local_dirs
from skillward._store import FileApprovalStore
from skillward.approvals import (
    ActivationRequest,
    Answer,
    ApprovalBook,
    ApprovalRecord,
    ApprovalStorage,
    ApproveOnce,
    Approver,
    Decision,
    DenyAll,
    Prompter,
    Question,
    Scope,
    assess,
)
from skillward.config import Limits
from skillward.context import CatalogItem, ContextBlock
from skillward.errors import (
    AmbiguousName,
    ApprovalDenied,
    ApprovalRequired,
    IntegrityError,
    NoTerminal,
    OriginError,
    PolicyDenied,
    RememberUnavailable,
    SkillChanged,
    SkillwardError,
    StoreTampered,
    TransportError,
    UsageError,
)
from skillward.frontmatter import SkillDocument, check_frontmatter, parse_skill_md
from skillward.gates import CrossOriginGate, CrossOriginRequest, DenyCrossOrigin
from skillward.host import TOOL_SCHEMAS, Activation, HostConfig, SkillHost
from skillward.origins import Origin, SkillKey
from skillward.registry import Collision, SkillRecord
from skillward.servers import (
    HttpTransport,
    InMemoryTransport,
    ServerSpec,
    StdioTransport,
    load_mcp_servers,
    parse_mcp_servers,
)
from skillward.uris import ResourceUri, SkillRoot, parse_uri, resolve_reference
from skillward.wire import SkillEntry, SkillsPage, parse_entry, parse_skills_page

__all__ = [
    "TOOL_SCHEMAS",
    "Activation",
    "ActivationRequest",
    "AmbiguousName",
    "Answer",
    "ApprovalBook",
    "ApprovalDenied",
    "ApprovalRecord",
    "ApprovalRequired",
    "ApprovalStorage",
    "ApproveOnce",
    "Approver",
    "CatalogItem",
    "Collision",
    "ContextBlock",
    "CrossOriginGate",
    "CrossOriginRequest",
    "Decision",
    "DenyAll",
    "DenyCrossOrigin",
    "FileApprovalStore",
    "HostConfig",
    "HttpTransport",
    "InMemoryTransport",
    "IntegrityError",
    "Limits",
    "LocalSkillDir",
    "NoTerminal",
    "Origin",
    "OriginError",
    "PolicyDenied",
    "Prompter",
    "Question",
    "RememberUnavailable",
    "ResourceUri",
    "Scope",
    "ServerSpec",
    "SkillChanged",
    "SkillDocument",
    "SkillEntry",
    "SkillHost",
    "SkillKey",
    "SkillRecord",
    "SkillRoot",
    "SkillsPage",
    "SkillwardError",
    "StdioTransport",
    "StoreTampered",
    "TransportError",
    "UsageError",
    "assess",
    "check_frontmatter",
    "default_local_dirs",
    "load_mcp_servers",
    "parse_entry",
    "parse_mcp_servers",
    "parse_skill_md",
    "parse_skills_page",
    "parse_uri",
    "resolve_reference",
]
