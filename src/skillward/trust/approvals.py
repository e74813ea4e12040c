"""Approvals: whether a skill may be activated, and what an approval binds to.

Every activation asks an :class:`Approver`. The default, :class:`DenyAll`, says
no, so a host that wires nothing up loads nothing. Approval is per skill:
approving an enclosing skill never approves a skill nested in it
(:attr:`ActivationRequest.nested_in` tells the approver so).

Approvals that outlive one activation are **content-bound** (SEP-2640). An
:class:`ApprovalRecord` is keyed by (host label, skill URI) and binds the server's
transport identity, the entry's whole sorted (uri, digest, size) set and its
frontmatter. :func:`assess` is the decision, a pure function of (entry, transport
identity, record): approved, changed (with the difference), or never approved.
Any difference revokes, and a revoked record is never honoured again.

:class:`~skillward.trust.book.ApprovalBook` is the :class:`Approver` that remembers:
``session`` approvals in memory, ``remember`` approvals in an :class:`ApprovalStorage`
(the keyring-authenticated file in ``_store.py``), and a :class:`Prompter` for the rest.
It does the waiting and the store's I/O; this module does neither.

Grants beyond activation (the ``allowed-tools`` a skill requests, host code
execution while acting on it) are given separately and explicitly, live in the
same content-bound record, and go with it when it is revoked. An approver that
holds grants is :class:`Granting`; one that is not grants nothing.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from skillward.core._fields import content_digest, frontmatter_digests
from skillward.core.config import Limits
from skillward.core.frontmatter import JsonValue
from skillward.core.origins import SkillKey
from skillward.core.registry import SkillRecord
from skillward.core.visible import shown_length
from skillward.core.wire import SkillEntry

__all__ = [
    "ActivationRequest",
    "Answer",
    "ApprovalRecord",
    "ApprovalRules",
    "ApprovalStorage",
    "ApproveOnce",
    "Approved",
    "Approver",
    "Change",
    "Changed",
    "CurrentStorage",
    "Decision",
    "DenyAll",
    "FileBinding",
    "Granting",
    "Grants",
    "NeverApproved",
    "Prompter",
    "Question",
    "Revocable",
    "Scope",
    "SkillMdViewer",
    "UnsafeApproveAll",
    "Verdict",
    "assess",
    "assess_any",
    "content_hash",
    "content_set",
    "describe_scope",
    "entry_content",
    "frontmatter_digests",
    "grantable",
    "record_for",
    "revoke_approval",
]

logger = logging.getLogger("skillward")


class Decision(enum.Enum):
    APPROVE = "approve"
    DENY = "deny"


class Scope(enum.Enum):
    """How long an approval lasts."""

    #: This activation only; nothing is recorded.
    ONCE = "once"
    #: Until the approver (and the ``SkillHost`` using it) is gone; kept in memory.
    SESSION = "session"
    #: Persisted in the approval store, until the content changes or it is revoked.
    REMEMBER = "remember"


_SCOPE_RANK = {Scope.ONCE: 0, Scope.SESSION: 1, Scope.REMEMBER: 2}


@dataclass(frozen=True, slots=True)
class ApprovalRules:
    """What a policy lets approvals be (``EffectivePolicy.approval_rules``).

    The default restricts nothing.
    """

    #: The longest scope an approval may be recorded for.
    max_scope: Scope = Scope.REMEMBER
    #: Why the scope is capped: the rule, its file and the contact.
    scope_reason: str = ""
    #: Seconds after which a recorded approval is no longer honoured (None: no limit).
    max_age: float | None = None
    #: Why nothing may be remembered, whatever the store says (None: it may).
    remember_refused: str | None = None
    #: Recorded with every approval (``ApprovalRecord.policy_version``).
    version: str = ""

    def allows(self, scope: Scope) -> bool:
        return _SCOPE_RANK[scope] <= _SCOPE_RANK[self.max_scope]


def entry_content(entry: SkillEntry) -> frozenset[tuple[str, str]] | None:
    """The full (uri, digest) set of an entry; None for a dynamic skill."""
    if entry.is_dynamic:
        return None
    return frozenset((item.uri, item.digest) for item in entry.manifest.values())


def content_set(record: SkillRecord) -> frozenset[tuple[str, str]] | None:
    """The (uri, digest) set an approval binds to; None for a dynamic or local skill."""
    return entry_content(record.entry) if record.entry is not None else None


class SkillMdViewer(Protocol):
    """Fetches a skill's SKILL.md and verifies it against the entry, for a person to read.

    The host supplies it; what it returns is shown to the person deciding and is
    never placed in the model's context.
    """

    async def __call__(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ActivationRequest:
    """What a person is asked to approve: one skill, as its entry describes it."""

    record: SkillRecord
    #: Skills (same origin) whose directory encloses this one: their approval does not count.
    nested_in: tuple[SkillKey, ...] = ()
    #: How the server is reached (``ServerSpec.identity``); None for a local skill.
    identity: str | None = None
    #: Collisions that involve this skill (same names elsewhere, look-alike paths or labels).
    collisions: tuple[str, ...] = ()
    #: False when the policy forbids granting the tools it requests
    #: (:attr:`tools_refused` says every reason none can be granted).
    tools_grantable: bool = True
    #: Shows SKILL.md to the person before they decide (never to the model).
    viewer: SkillMdViewer | None = field(default=None, compare=False, repr=False)
    #: Characters the requested tools may take to show whole (``Limits.max_shown_tools``).
    max_shown_tools: int = Limits().max_shown_tools
    #: The qualified reference (``label:name``) the host's catalog names it by, when known.
    ref: str | None = None
    #: The policy's rule that forbids granting its tools, when it does: its value, where
    #: it is set and whose it is (the user's own policy file, the administrator's, the
    #: host's code), as ``EffectivePolicy.why_refused`` says it.
    tools_rule: str | None = None

    @property
    def key(self) -> SkillKey:
        return self.record.key

    def _frontmatter(self) -> Mapping[str, JsonValue]:
        entry = self.record.entry
        return entry.frontmatter.as_dict() if entry is not None else {}

    @property
    def allowed_tools(self) -> JsonValue:
        """The ``allowed-tools`` the skill requests (a request, never a grant), as the
        listing's frontmatter carries it: a JSON value (``json.dumps`` takes it; a number
        JSON cannot hold, such as NaN, is None), None when there is none."""
        return self._frontmatter().get("allowed-tools")

    @property
    def requested_tools(self) -> tuple[str, ...]:
        """``allowed-tools`` parsed as the Agent Skills spec writes it (a request only)."""
        entry = self.record.entry
        return entry.requested_tools if entry is not None else ()

    @property
    def tools_refused(self) -> str | None:
        """Why none of the requested tools can be granted, in words for the person (the
        policy, naming its rule and whose it is, or tools too long to show whole: nothing
        is granted that a person was not shown); None when they can be asked about."""
        if not self.tools_grantable:
            rule = f": rule {self.tools_rule}" if self.tools_rule else ""
            return f"the policy forbids granting them{rule}"
        shown = shown_length(self.requested_tools)
        if shown > self.max_shown_tools:
            return (
                f"shown whole they take {shown} characters, more than the "
                f"{self.max_shown_tools} a prompt shows, and nothing is granted unseen"
            )
        return None

    @property
    def hooks(self) -> JsonValue:
        """The ``hooks`` the frontmatter declares (shown; never run, never granted), a
        JSON value as :attr:`allowed_tools` is; None when there are none."""
        return self._frontmatter().get("hooks")

    @property
    def nested_skill_files(self) -> tuple[str, ...]:
        """Other ``SKILL.md`` files inside this skill: plain files, not skills it approves."""
        entry = self.record.entry
        if entry is None:
            return ()
        return tuple(
            sorted(u for u in entry.manifest if u != entry.uri and u.endswith("/SKILL.md"))
        )

    @property
    def content(self) -> frozenset[tuple[str, str]] | None:
        return content_set(self.record)


class Approver(Protocol):
    """Decides whether one activation may go ahead."""

    async def decide(self, request: ActivationRequest) -> Decision: ...


@runtime_checkable
class Granting(Protocol):
    """An approver that holds grants beyond activation, bound to the approved content.

    The host uses it when it is there: ``consent`` for an activation (the decision
    and the grants given with it), ``held`` for what a recorded approval grants now
    without asking (None when no record approves exactly this content), and
    ``add_grant`` to remember a grant the person chose to keep with the skill's
    approval. An approver without these methods grants nothing.
    """

    async def consent(self, request: ActivationRequest) -> Answer: ...

    async def held(self, request: ActivationRequest) -> Grants | None: ...

    async def add_grant(self, request: ActivationRequest, grants: Grants) -> bool: ...


@runtime_checkable
class Revocable(Protocol):
    """An approver that holds approvals the host can revoke (after ``SkillChanged``)."""

    async def revoke(self, key: SkillKey, *, reason: str) -> None: ...


async def revoke_approval(approver: Approver, key: SkillKey, *, reason: str) -> None:
    """Revoke what ``approver`` holds for ``key``, if it holds anything."""
    if isinstance(approver, Revocable):
        await approver.revoke(key, reason=reason)


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


# --- the record and the decision ------------------------------------------------------------


class _Frozen(BaseModel):
    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


class FileBinding(_Frozen):
    """One file of the approved entry."""

    uri: str
    digest: str
    size: int


class Grants(_Frozen):
    """What an approval grants beyond activation; both need their own explicit consent."""

    #: ``allowed-tools`` the person granted, as written in the frontmatter.
    tools: tuple[str, ...] = ()
    #: Host code execution while acting on the skill.
    execution: bool = False


class ApprovalRecord(_Frozen):
    """An approval as recorded: bound to the server and the entry seen when it was given."""

    label: str
    uri: str
    #: Shown to people; not part of the binding (the frontmatter is).
    name: str
    identity: str
    #: The sorted (uri, digest, size) set; None for a dynamic skill (session scope only).
    files: tuple[FileBinding, ...] | None
    frontmatter_digest: str
    #: (field, digest of its value) for each top-level frontmatter field, sorted.
    frontmatter_fields: tuple[tuple[str, str], ...]
    grants: Grants = Field(default_factory=Grants)  # a factory: nothing built at import
    scope: Scope
    granted_at: float
    policy_version: str = ""
    #: Why it was revoked. A revoked record is never honoured again.
    revoked: str | None = None

    @property
    def key(self) -> SkillKey:
        return SkillKey(self.label, self.uri)

    @property
    def content_hash(self) -> str | None:
        """:func:`content_hash` of the entry this record binds (None for a dynamic skill)."""
        if self.files is None:
            return None
        return _content_hash(self.uri, self.files, self.frontmatter_digest)


def content_hash(entry: SkillEntry) -> str | None:
    """One digest for exactly this content: the sorted (uri, digest, size) set and the
    frontmatter. What ``skillward pin`` prints, policy pins match, and the audit trail
    records. None for a dynamic skill, whose content nothing binds. Computed once per
    entry (:attr:`SkillEntry.content_hash`)."""
    return entry.content_hash


def _content_hash(uri: str, bindings: Sequence[FileBinding], frontmatter: str) -> str:
    return content_digest(uri, ((b.uri, b.digest, b.size) for b in bindings), frontmatter)


def _bindings(entry: SkillEntry) -> tuple[FileBinding, ...] | None:
    if entry.files is None:
        return None
    return tuple(FileBinding(uri=u, digest=d, size=n) for u, d, n in entry.files)


def record_for(
    entry: SkillEntry,
    *,
    label: str,
    identity: str,
    scope: Scope,
    grants: Grants | None = None,
    granted_at: float,
    policy_version: str = "",
) -> ApprovalRecord:
    """The record of an approval of ``entry`` as served now by ``label`` at ``identity``."""
    digest, fields = entry.frontmatter_digests
    return ApprovalRecord(
        label=label,
        uri=entry.uri,
        name=entry.name,
        identity=identity,
        files=_bindings(entry),
        frontmatter_digest=digest,
        frontmatter_fields=fields,
        grants=grants or Grants(),
        scope=scope,
        granted_at=granted_at,
        policy_version=policy_version,
    )


#: A frontmatter field name shown as it is (see :meth:`Change.field_names`).
_PLAIN_FIELD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


@dataclass(frozen=True, slots=True)
class Change:
    """How the entry differs from the one approved."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    #: Same URI, different digest or size.
    modified: tuple[str, ...] = ()
    #: Top-level frontmatter fields added, removed or changed.
    frontmatter: tuple[str, ...] = ()
    #: (approved transport identity, current one) when the label now reaches another server.
    server: tuple[str, str] | None = None
    #: True when the skill became dynamic, False when it stopped being dynamic.
    dynamic: bool | None = None
    #: Why the approval was revoked, if it was.
    revoked: str | None = None

    def __bool__(self) -> bool:
        return any(
            (
                self.added,
                self.removed,
                self.modified,
                self.frontmatter,
                self.server,
                self.dynamic is not None,
                self.revoked,
            )
        )

    def field_names(self, most: int = 10) -> str:
        """The changed frontmatter fields, for a line in skillward's own words: each named
        plainly (letters, digits, ``-``, ``_``, ``.``; at most 64), at most ``most`` of
        them; any other is only counted, so no field name a server wrote reads as part
        of the sentence around it."""
        plain = [name for name in self.frontmatter if _PLAIN_FIELD.match(name)][:most]
        others = len(self.frontmatter) - len(plain)
        if not others:
            return ", ".join(plain)
        more = f"{others} other field{'' if others == 1 else 's'}"
        return f"{', '.join(plain)} and {more}" if plain else more

    def summary(self, *, names: bool = True) -> str:
        """One line for notes and logs; without ``names``, no server-written field names
        (for the audit trail, which holds no skill content)."""
        parts = [
            f"{len(files)} {what}"
            for files, what in (
                (self.modified, "files changed"),
                (self.added, "files added"),
                (self.removed, "files removed"),
            )
            if files
        ]
        if self.frontmatter and names:
            parts.append(f"frontmatter fields changed: {self.field_names()}")
        elif self.frontmatter:
            parts.append(f"{len(self.frontmatter)} frontmatter fields changed")
        if self.server:
            parts.append("the label now reaches another server")
        if self.dynamic is not None:
            parts.append("now dynamic" if self.dynamic else "no longer dynamic")
        if self.revoked:
            parts.append(f"revoked ({self.revoked})" if names else "revoked before")
        return "; ".join(parts) or "unchanged"


@dataclass(frozen=True, slots=True)
class Approved:
    """A :class:`Verdict`: a recorded approval covers exactly this content."""

    #: The record that approves it (None for a local skill approved this session).
    record: ApprovalRecord | None = None


@dataclass(frozen=True, slots=True)
class Changed:
    """A :class:`Verdict`: the skill was approved, and differs now from what was (or the
    approval was revoked): it is asked about again, showing the :class:`Change`."""

    record: ApprovalRecord
    change: Change


@dataclass(frozen=True, slots=True)
class NeverApproved:
    """A :class:`Verdict`: nothing recorded approves the skill."""


#: What the records say of a skill (:func:`assess`): approved, changed or never approved.
Verdict = Approved | Changed | NeverApproved


def _difference(
    entry: SkillEntry, identity: str, record: ApprovalRecord, fields: Sequence[tuple[str, str]]
) -> Change:
    then = None if record.files is None else {f.uri: (f.digest, f.size) for f in record.files}
    now = None if entry.is_dynamic else {i.uri: (i.digest, i.size) for i in entry.manifest.values()}
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    dynamic = None
    if then is not None and now is not None:
        added = tuple(sorted(now.keys() - then.keys()))
        removed = tuple(sorted(then.keys() - now.keys()))
        modified = tuple(sorted(u for u in now.keys() & then.keys() if now[u] != then[u]))
    elif (then is None) != (now is None):
        dynamic = now is None
    before, after = dict(record.frontmatter_fields), dict(fields)
    frontmatter = tuple(
        sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    )
    server = (record.identity, identity) if record.identity != identity else None
    return Change(added, removed, modified, frontmatter, server, dynamic, record.revoked)


def _unchanged(
    entry: SkillEntry, identity: str, record: ApprovalRecord, fields: Sequence[tuple[str, str]]
) -> bool:
    """Whether ``record`` binds exactly ``entry`` as served at ``identity``, unrevoked: the
    same identity, field digests and (uri, digest, size) sequence. Equal sequences make
    :func:`_difference` find no change; anything else is left to it to describe."""
    if record.revoked or record.identity != identity or record.frontmatter_fields != fields:
        return False
    files, bindings = entry.files, record.files
    if files is None or bindings is None:
        return files is None and bindings is None
    return len(files) == len(bindings) and all(
        (b.uri, b.digest, b.size) == f for b, f in zip(bindings, files, strict=True)
    )


def assess(entry: SkillEntry, identity: str, record: ApprovalRecord | None) -> Verdict:
    """Whether ``record`` approves ``entry`` as served now at ``identity``. Pure.

    Approved only when the record is for this URI, not revoked, and the server's
    identity, every (uri, digest, size) and every frontmatter field are exactly
    those approved. A remembered record never covers a dynamic skill.
    """
    return _assess(entry, identity, record, None)


def assess_any(entry: SkillEntry, identity: str, records: Sequence[ApprovalRecord]) -> Verdict:
    """:func:`assess` over the records held for one skill (the session's, the stored one):
    approved if any approves ``entry``, else changed as the first that differs says, else
    never approved. The frontmatter is digested once for them all. Pure."""
    if not records:
        return NeverApproved()
    _, fields = entry.frontmatter_digests
    verdicts = [_assess(entry, identity, record, fields) for record in records]
    approved = next((v for v in verdicts if isinstance(v, Approved)), None)
    if approved is not None:
        return approved
    return next((v for v in verdicts if isinstance(v, Changed)), NeverApproved())


def _assess(
    entry: SkillEntry,
    identity: str,
    record: ApprovalRecord | None,
    fields: Sequence[tuple[str, str]] | None,
) -> Verdict:
    """:func:`assess`, given the entry's frontmatter field digests if already computed."""
    if record is None or record.uri != entry.uri:
        return NeverApproved()
    if record.files is None and record.scope is not Scope.SESSION:
        return NeverApproved()  # nothing binds its content: it approves nothing
    if fields is None:
        _, fields = entry.frontmatter_digests
    if _unchanged(entry, identity, record, fields):
        return Approved(record)
    change = _difference(entry, identity, record, fields)
    if change:
        return Changed(record, change)
    return Approved(record)


# --- what an approver asks and is told -----------------------------------------------------


class ApprovalStorage(Protocol):
    """Where ``remember`` approvals are kept. Blocking calls; the book runs them in a thread."""

    def unavailable(self) -> str | None:
        """Why nothing can be remembered now (naming the keyring), or None when it can."""

    def get(self, key: SkillKey) -> ApprovalRecord | None:
        """The record for ``key``, if the store is trustworthy and holds one."""

    def put(self, record: ApprovalRecord, *, replaces: ApprovalRecord | None = None) -> None:
        """Record ``record`` in place of any record for its key; raise RememberUnavailable.

        With ``replaces``, only if the record stored for that key is still exactly
        ``replaces`` (checked under the store's lock); otherwise raise RememberUnavailable.
        """

    def revoke(self, key: SkillKey, *, reason: str) -> bool:
        """Mark the record for ``key`` revoked; True if there was one."""

    def records(self) -> list[ApprovalRecord]:
        """Every record, revoked ones included."""

    def reset(self) -> None:
        """Forget every record and start again with a new key."""


@runtime_checkable
class CurrentStorage(Protocol):
    """An approval store that can tell, without blocking, whether what it read last is
    still what is stored (``FileApprovalStore``: one ``stat`` of its file): the book then
    reads a record without a worker thread."""

    def current(self, key: SkillKey) -> tuple[bool, ApprovalRecord | None]:
        """(True, the record for ``key`` or None) when what the store read last is still
        the store; (False, None) when it must be read (``get``, which blocks)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One skill to ask about."""

    request: ActivationRequest
    #: What changed since the last approval, when there was one.
    change: Change | None = None
    #: Why ``remember`` cannot be offered, or None when it can.
    remember_unavailable: str | None = None
    #: The person already chose to grant the requested tools with the approval
    #: (``skillward approve --grant-tools``): show them as granted, do not ask again.
    grant_tools: bool = False


@dataclass(frozen=True, slots=True)
class Answer:
    decision: Decision
    scope: Scope = Scope.ONCE
    #: What is granted beyond activation; each grant is a separate, explicit choice.
    grants: Grants = field(default_factory=Grants)
    #: True when a recorded approval answered, without asking anyone.
    held: bool = False
    #: How it was given, for the audit trail (None: "approved when asked").
    how: str | None = None
    #: Where it came from when not from the approver's own prompt (the audit trail's
    #: ``via``: ``socket pid=PID uid=UID``, ``web``).
    via: str | None = None


def grantable(request: ActivationRequest, grants: Grants) -> Grants:
    """``grants`` cut down to what ``request`` can be granted: only the tools its
    frontmatter requests, and none when they are refused
    (:attr:`~ActivationRequest.tools_refused`)."""
    requested = request.requested_tools if request.tools_refused is None else ()
    tools = tuple(tool for tool in grants.tools if tool in requested)
    return Grants(tools=tools, execution=grants.execution)


class Prompter(Protocol):
    """Asks a person about one or more skills at once; one answer per question, in order."""

    async def ask(self, questions: Sequence[Question]) -> Sequence[Answer]: ...


def describe_scope(scope: Scope) -> str:
    """What an approval of ``scope`` means, for people."""
    return {
        Scope.ONCE: "approved for this activation only",
        Scope.SESSION: "approved for this session",
        Scope.REMEMBER: "approved and remembered until the skill changes",
    }[scope]
