"""One pending decision on loading one skill, and the facts every presenter shows of it.

A host decides once per call (python-tuf's ``TrustedMetadataSet`` is the model: one
object holds the decision state). It builds a :class:`PendingApproval` for the skill it
is about to load: the request, the exact content hash, the pin that applies (a policy
refusal raises before the object exists), the verdict from the approver's records
(computed once), why ``remember`` cannot be offered, and the :class:`ApprovalFacts` a
person is shown. Only a pending approval that nothing settles is put to a person; the
answer is then taken for exactly that pending approval (that content), and nothing
computes the verdict, the policy or the pin again for the call.

:class:`ApprovalFacts` is the one fact model every presenter renders: the terminal
prompt (and ``skillward approve``), the gateway's elicitation text and its approval
page. It keeps what servers wrote as they wrote it; each presenter escapes for its
medium, and shows what is approved or granted in its visible form
(``core/visible.py``). It is JSON-safe (``model_dump(mode="json")``). Pure.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from skillward.core.frontmatter import JsonValue
from skillward.core.visible import shown_length
from skillward.core.wire import SkillEntry
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    Approved,
    Change,
    Changed,
    Decision,
    Grants,
    Question,
    Scope,
    Verdict,
    content_hash,
    grantable,
)

if TYPE_CHECKING:
    from skillward.trust.policy import Pin

__all__ = [
    "ApprovalFacts",
    "Deciding",
    "FileFact",
    "PendingApproval",
    "file_facts",
]


class _Facts(BaseModel):
    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


class FileFact(_Facts):
    """One file of a skill, as a person is shown it."""

    #: Its path from the skill root.
    path: str
    uri: str
    size: int
    digest: str


def file_facts(entry: SkillEntry) -> tuple[FileFact, ...]:
    """Every file of ``entry``, sorted by URI, with its path from the skill root (none
    for a dynamic skill)."""
    root = str(entry.root) + "/"
    return tuple(
        FileFact(path=uri.removeprefix(root), uri=uri, size=item.size, digest=item.digest)
        for uri, item in sorted(entry.manifest.items())
    )


class ApprovalFacts(_Facts):
    """Everything a person is shown about one pending approval, whatever shows it.

    Server-written values (the name, description, license, URIs, paths, tools, hooks,
    the reported name) are kept as written: a presenter escapes each for its medium,
    and shows what is approved or granted (the ref, the server's identity, every file,
    every tool, the skills it is nested in) whole in its visible form.
    """

    #: The qualified reference (``label:name``) the host's catalog names it by.
    ref: str
    #: The skill's name (from its frontmatter).
    name: str
    #: ``"mcp"`` or ``"local"``.
    origin_kind: str
    #: The host-assigned label of its server or local skill directory.
    origin_label: str
    #: How the server is reached (``ServerSpec.identity``); None for a local skill.
    identity: str | None
    #: The name the server reports for itself (``serverInfo.name``): unverified.
    reported_name: str | None
    #: The SKILL.md URI and the skill root; None for a local skill.
    uri: str | None
    root: str | None
    #: The directory of a local skill.
    directory: str | None
    description: str
    #: The frontmatter's ``license``, when it has one.
    license: str | None
    #: :func:`~skillward.trust.approvals.content_hash`: None for a dynamic or local skill.
    content_hash: str | None
    #: Its content is dynamic: nothing can be verified, and nothing binds it.
    dynamic: bool
    #: Every file, sorted (none for a dynamic or local skill).
    files: tuple[FileFact, ...]
    #: What changed since the last approval, when there was one.
    change: Change | None
    #: ``allowed-tools`` parsed as the spec writes it: requests, never grants.
    requested_tools: tuple[str, ...]
    #: ``allowed-tools`` as written, when it is not the spec's space-separated string
    #: (nothing can be granted then): a string itself, any other value as JSON text.
    unparsed_tools: str | None
    #: Why none of the requested tools can be granted, or None when they can be asked about.
    tools_refused: str | None
    #: The requested tools fit a prompt whole (``Limits.max_shown_tools``).
    tools_shown: bool
    #: The person already chose to grant the requested tools with the approval
    #: (``skillward approve --grant-tools``).
    grant_tools: bool
    #: The frontmatter's ``hooks`` as written (a string itself, any other value as JSON
    #: text): shown, never run or granted.
    hooks: str | None
    #: Other SKILL.md files inside it, by path from the root: plain files, not skills it
    #: approves.
    nested_skill_files: tuple[str, ...]
    #: The SKILL.md URIs of the skills it is nested in: their approval does not cover it.
    nested_in: tuple[str, ...]
    #: Collisions that involve it (same names elsewhere, look-alike paths or labels).
    collisions: tuple[str, ...]
    #: The scopes a decision may give, shortest first.
    scopes: tuple[Scope, ...]
    #: Why ``remember`` is not among them, when it is not.
    remember_unavailable: str | None
    #: Characters a value shown but never granted (hooks, an unparsed field) takes at
    #: most, whole; past it, only its length is shown.
    max_shown: int

    @property
    def is_mcp(self) -> bool:
        return self.origin_kind == "mcp"

    @property
    def changed_files(self) -> list[tuple[str, str, str]]:
        """Each file that changed since the last approval, as (``~``, ``+`` or ``-``, its
        path from the root, ``changed``, ``added`` or ``removed``)."""
        change = self.change
        if change is None:
            return []
        prefix = f"{self.root}/" if self.root else ""
        return [
            (sign, uri.removeprefix(prefix), what)
            for sign, uris, what in (
                ("~", change.modified, "changed"),
                ("+", change.added, "added"),
                ("-", change.removed, "removed"),
            )
            for uri in uris
        ]

    def change_lines(self, shown: Callable[[str], str], said: Callable[[str], str]) -> list[str]:
        """What changed since the last approval, a line each, for every presenter alike:
        ``shown`` renders a value the person approves (a path, a field name, a server),
        ``said`` a reason given by skillward or the server (the revocation's)."""
        change = self.change
        if change is None:
            return []
        lines = [f"  {sign} {shown(path)} ({what})" for sign, path, what in self.changed_files]
        if change.frontmatter:
            lines.append(f"  frontmatter fields changed: {change.field_names()}")
        if change.server:
            before, after = change.server
            lines.append(
                f"  the label now reaches another server: was {shown(before)}, now {shown(after)}"
            )
        if change.dynamic is not None:
            lines.append("  now dynamic" if change.dynamic else "  no longer dynamic")
        if change.revoked:
            lines.append(f"  the approval was revoked: {said(change.revoked)}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON (``json.dumps`` takes them), for a web page, a socket or a
        host's own UI: every field, ``scopes`` as their values, ``change`` and ``files``
        as objects; ``ApprovalFacts.model_validate_json`` reads them back."""
        return self.model_dump(mode="json")

    @classmethod
    def of(cls, question: Question | ActivationRequest) -> ApprovalFacts:
        """The facts of ``question``: its request, what changed, why remember is not
        offered. A bare request (what a host's own approver is given) is a question with
        no change, whose ``remember`` is offered."""
        if isinstance(question, ActivationRequest):
            question = Question(question)
        request = question.request
        record = request.record
        entry = record.entry
        fields = entry.frontmatter.as_dict() if entry is not None else {}
        tools = request.requested_tools
        raw_tools = request.allowed_tools
        root = str(entry.root) if entry is not None else None
        scopes: tuple[Scope, ...] = (Scope.ONCE, Scope.SESSION)
        if question.remember_unavailable is None:
            scopes += (Scope.REMEMBER,)
        return cls(
            ref=request.ref or f"{record.origin.label}:{record.name}",
            name=record.name,
            origin_kind=record.origin.kind,
            origin_label=record.origin.label,
            identity=request.identity,
            reported_name=record.origin.detail if record.origin.is_mcp else None,
            uri=entry.uri if entry is not None else None,
            root=root,
            directory=record.directory if entry is None else None,
            description=record.description,
            license=str(fields["license"]) if "license" in fields else None,
            content_hash=content_hash(entry) if entry is not None else None,
            dynamic=entry is not None and entry.is_dynamic,
            files=file_facts(entry) if entry is not None else (),
            change=question.change,
            requested_tools=tools,
            unparsed_tools=_written(raw_tools) if raw_tools and not tools else None,
            tools_refused=request.tools_refused if tools else None,
            tools_shown=shown_length(tools) <= request.max_shown_tools,
            grant_tools=question.grant_tools,
            hooks=_written(request.hooks) if request.hooks else None,
            nested_skill_files=tuple(
                uri.removeprefix(f"{root}/") for uri in request.nested_skill_files
            ),
            nested_in=tuple(key.locator for key in request.nested_in),
            collisions=request.collisions,
            scopes=scopes,
            remember_unavailable=question.remember_unavailable,
            max_shown=request.max_shown_tools,
        )


def _written(value: JsonValue) -> str:
    """A frontmatter value as written: a string itself, anything else as JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


class PendingApproval:
    """The decision on loading one skill, as one call holds it.

    Built once per call, by the host (``SkillHost.prepare``), after the policy allowed
    the skill: the :attr:`request`, its exact :attr:`content_hash`, the :attr:`pin`
    that approves it (when one applies, the records are not read), the :attr:`verdict`
    from the approver's records, and why ``remember`` cannot be offered. It is
    :attr:`settled` when a pin, a recorded approval of exactly this content, or an
    activation this context already holds of it decides; otherwise a person decides,
    shown its :attr:`facts`, and their answer counts for this content only.
    """

    def __init__(
        self,
        request: ActivationRequest,
        *,
        verdict: Verdict | None = None,
        pin: Pin | None = None,
        remember_unavailable: str | None = None,
        acting: bool = False,
    ) -> None:
        self.request = request
        #: The records' word (None when a pin or a held activation decides: no record is read).
        self.verdict = verdict
        #: The policy's pin of exactly this content, if one applies.
        self.pin = pin
        #: Why ``remember`` cannot be offered (when a person is to be asked), or None.
        self.remember_unavailable = remember_unavailable
        #: This context already acts on exactly this content: loading it again asks nobody.
        self.acting = acting

    def __repr__(self) -> str:
        key = self.request.key
        return f"PendingApproval({key.origin}:{key.locator}, settled={self.settled})"

    @functools.cached_property
    def content_hash(self) -> str | None:
        """The content hash an answer approves (None for a dynamic or local skill)."""
        entry = self.request.record.entry
        return content_hash(entry) if entry is not None else None

    @property
    def settled(self) -> bool:
        """Whether loading it asks nobody: pinned, approved by a record of exactly this
        content, or already held by this context."""
        return self.acting or self.pin is not None or isinstance(self.verdict, Approved)

    @property
    def change(self) -> Change | None:
        """What changed since the last approval, when there was one."""
        return self.verdict.change if isinstance(self.verdict, Changed) else None

    @property
    def question(self) -> Question:
        """What a :class:`~skillward.trust.approvals.Prompter` is asked about it."""
        return Question(self.request, self.change, self.remember_unavailable)

    @functools.cached_property
    def facts(self) -> ApprovalFacts:
        """What a person is shown about it."""
        return ApprovalFacts.of(self.question)

    def held(self) -> Answer:
        """The answer that settles it without asking: the pin's, or the recorded
        approval's (with the grants it holds). Raise ValueError when nothing settles it."""
        request = self.request
        if self.pin is not None:
            tools = request.requested_tools if self.pin.grant_tools else ()
            return Answer(
                Decision.APPROVE,
                grants=Grants(tools=tools),
                held=True,
                how=f"pinned in {self.pin.source}",
            )
        if isinstance(self.verdict, Approved):
            record = self.verdict.record
            if record is None:  # a local skill approved for this session
                return Answer(Decision.APPROVE, Scope.SESSION, held=True)
            grants = grantable(request, record.grants)
            return Answer(Decision.APPROVE, record.scope, grants, True, "a recorded approval")
        raise ValueError("nothing settles this approval: a person has to answer it")


@runtime_checkable
class Deciding(Protocol):
    """An approver that decides against a :class:`PendingApproval` (the
    :class:`~skillward.trust.book.ApprovalBook`): ``pending`` builds it from its records
    (the verdict, once), ``ask_about`` asks a person when nothing settles it, and
    ``settle`` records their answer for exactly its content. The host uses these when
    its approver has them; another approver is asked with ``consent`` or ``decide``."""

    async def pending(self, request: ActivationRequest) -> PendingApproval: ...

    async def ask_about(self, pending: PendingApproval) -> Answer: ...

    async def settle(self, pending: PendingApproval, answer: Answer) -> Answer: ...
