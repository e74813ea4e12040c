"""Activation: asking the approver (or finding a pin), fetching SKILL.md, verifying
it against the entry, and opening the acting window on what was verified; and what
follows a failed verification under an activation: its content ends (it stays in the
window, so its gates still apply), and a skill found changed is approved again from
scratch.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import NoReturn

import anyio

from skillward.cache.seam import CacheKey
from skillward.core.context import skill_block
from skillward.core.errors import (
    ApprovalDenied,
    ApprovalRequired,
    FrontmatterError,
    IntegrityError,
    ReactivationRequired,
    SkillChanged,
    SkillwardError,
)
from skillward.core.frontmatter import allowed_tools
from skillward.core.registry import SkillRecord
from skillward.core.uris import parse_uri
from skillward.core.verify import sha256_digest, verify_skill_md
from skillward.core.wire import SkillEntry
from skillward.edge._local import read_skill_md, skill_files
from skillward.host._fetch import off_loop
from skillward.host._gates import as_decision
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import Activation
from skillward.trust.approvals import (
    ActivationRequest,
    Answer,
    Approver,
    Decision,
    DenyAll,
    Granting,
    Grants,
    content_hash,
    entry_content,
    grantable,
)

__all__ = ["Activator"]

logger = logging.getLogger("skillward")

#: Why DenyAll, the approver of a host given none, refused; and what to give it instead.
_NO_APPROVER = (
    "The host's approver is DenyAll, the default, which approves nothing: build it with "
    "SkillHost(approver=...), for example TerminalApprover(Terminal()) to ask at the "
    "terminal (from skillward import Terminal, TerminalApprover; docs/host.md)."
)


def _describe_change(old: SkillEntry, new: SkillEntry) -> str:
    before, after = old.manifest, new.manifest
    rotated = sum(
        1 for uri in before.keys() & after.keys() if before[uri].digest != after[uri].digest
    )
    added = len(after.keys() - before.keys())
    removed = len(before.keys() - after.keys())
    parts = [
        f"{n} {what}"
        for n, what in ((rotated, "changed"), (added, "added"), (removed, "removed"))
        if n
    ]
    if old.is_dynamic != new.is_dynamic:
        parts.append("now dynamic" if new.is_dynamic else "no longer dynamic")
    if not parts and old.frontmatter != new.frontmatter:
        parts.append("frontmatter changed")
    return (
        "the skill changed since it was loaded ("
        + (", ".join(parts) or "entry changed")
        + " files)"
    )


class Activator:
    """Activations into one session's acting window, and the ends of their content."""

    def __init__(self, shared: Shared, window: ActingWindow, approver: Approver) -> None:
        self._shared = shared
        self._fetcher = shared.fetcher
        self._window = window
        self._approver = approver

    def lock(self, record: SkillRecord) -> anyio.Lock:
        """The lock to hold while acting on ``record`` (its origin's, in this session)."""
        if record.origin.is_mcp:
            self._shared.connection(record.origin.label)  # a server this host still knows
        return self._window.lock(record.origin.label)

    async def activate(self, record: SkillRecord) -> Activation:
        """Ask, fetch, verify and tag ``record``'s SKILL.md, and act on it (hold
        :meth:`lock`)."""
        self._window.check_open()  # a closed context asks nobody and fetches nothing
        self._fetcher.check_dynamic(record)
        # Policy first: no approval overrides what an administrator forbids.
        request = self._shared.allowed_request(record)
        pin = self._shared.policy.pin_for(request)
        if pin is not None:
            # An administrator reviewed exactly this content from this server: no prompt.
            logger.info(
                "%s:%s is pinned in %s", record.origin.label, record.key.locator, pin.source
            )
            tools = request.requested_tools if pin.grant_tools else ()
            answer = Answer(Decision.APPROVE, grants=Grants(tools=tools), held=True)
        else:
            try:
                answer = await self._consent(request)
            except ApprovalRequired as unanswered:  # nobody could be asked (no terminal)
                reason = f"not approved: {type(unanswered).__name__}"
                self._shared.record("denial", "denied", record, reason=reason, gate="activation")
                raise
        if answer.decision is not Decision.APPROVE:
            logger.info("activation of %s:%s declined", record.origin.label, record.key.locator)
            self._shared.record(
                "denial", "denied", record, reason="not approved", gate="activation"
            )
            raise ApprovalDenied(
                f"loading skill {self._shared.registry.qualified_ref(record)!r} was not approved",
                server=record.origin.label,
                uri=record.key.locator,
                local=not record.origin.is_mcp,
                hint=_NO_APPROVER if isinstance(self._approver, DenyAll) else None,
            )
        granted = self._granted_tools(request, answer, pinned=pin is not None)
        if record.origin.is_mcp:
            activation = await self._activate_mcp(record)
            requested = request.requested_tools
            activation = dataclasses.replace(
                activation,
                requested_tools=requested,
                granted_tools=granted,
                tools_refused=request.tools_refused if requested else None,
            )
        else:
            activation = self._activate_local(record)
        self._window.open(activation)
        self._window.emit(activation.block)
        logger.info("activated %s:%s", record.origin.label, record.key.locator)
        return activation

    async def _consent(self, request: ActivationRequest) -> Answer:
        """The approver's answer: with the grants it holds, if it is :class:`Granting`."""
        approver = self._approver
        if isinstance(approver, Granting):
            answer = await approver.consent(request)
            if not isinstance(answer, Answer):
                raise TypeError(
                    f"{type(approver).__name__}.consent returned {type(answer).__name__}, "
                    "not an Answer"
                )
        else:
            answer = Answer(as_decision(await approver.decide(request), approver))
        return answer

    def _granted_tools(
        self, request: ActivationRequest, answer: Answer, *, pinned: bool = False
    ) -> tuple[str, ...]:
        """Record the approval, and which of the requested tools it grants (MCP skills)."""
        record = request.record
        how = "a recorded approval" if answer.held else "approved when asked"
        if pinned:
            how = "pinned by the administrator's policy"
        self._shared.record(
            "approval", "approved", record, reason=how, gate="activation", scope=answer.scope.value
        )
        if not record.origin.is_mcp:
            return ()  # a local skill's tools are the host's own rules (see Activation)
        requested = request.requested_tools
        if requested and not request.tools_grantable:
            self._shared.record(
                "policy_denial",
                "denied",
                record,
                reason="the administrator's policy forbids granting requested tools",
                gate="allowed_tools",
            )
            return ()
        if requested and request.tools_refused is not None:
            self._shared.record(
                "denial",
                "denied",
                record,
                reason="the requested tools are too long to show whole: none can be granted",
                gate="allowed_tools",
            )
            return ()
        granted = grantable(request, answer.grants).tools
        if granted and not answer.held:
            self._shared.record(
                "grant",
                "granted",
                record,
                reason=f"{len(granted)} of {len(requested)} requested tools granted",
                gate="allowed_tools",
                scope=answer.scope.value,
            )
        return granted

    async def _activate_mcp(self, record: SkillRecord) -> Activation:
        entry = record.entry
        assert entry is not None
        label = record.origin.label
        connection = self._shared.connection(label)
        key: CacheKey | None = None
        try:
            if entry.is_dynamic:
                self._window.spend(record.key, 0, start=True)
                data = await self._fetcher.fetch_dynamic(
                    connection, record, entry.uri, self._window
                )
            else:
                key = self._fetcher.cache_key(connection, entry.uri, entry.manifest[entry.uri])
                data = await self._fetcher.fetch(connection, entry.uri, key)
            verified = verify_skill_md(entry, data, server=label, limits=self._shared.limits)
        except (IntegrityError, FrontmatterError) as error:
            await self.after_failure(record, entry, error)
        if key is not None and verified.file.verified:
            self._shared.cache.put(key, verified.file.data)
        root = entry.root
        files = sorted(root.file_path(parse_uri(uri)) for uri in entry.manifest)
        block = await off_loop(skill_block)(
            origin=record.origin,
            uri=entry.uri,
            digest=None if entry.is_dynamic else verified.file.digest,
            body=verified.body,
            # With the trailing slash, RFC 3986 resolution of a relative path lands inside.
            root=str(root) + "/",
            files=files,
            verified=not entry.is_dynamic,
            unverifiable=entry.is_dynamic,
        )
        return Activation(record, block, entry, content_hash=content_hash(entry))

    def _activate_local(self, record: SkillRecord) -> Activation:
        assert record.directory is not None
        directory = Path(record.directory)
        data, document = read_skill_md(record, limits=self._shared.limits)
        files = skill_files(record, limits=self._shared.limits)
        tools = allowed_tools(document.frontmatter)
        block = skill_block(
            origin=record.origin,
            uri=str(directory / "SKILL.md"),
            digest=sha256_digest(data),
            body=document.body,
            root=str(directory) + "/",
            files=files,
            verified=False,
        )
        # Local skills follow the host's own rules: their field is reported as granted.
        return Activation(record, block, requested_tools=tools, granted_tools=tools)

    async def after_failure(
        self, record: SkillRecord, pinned: SkillEntry, error: SkillwardError
    ) -> NoReturn:
        """The content is not used, and nothing more is served under this activation.

        The activation stays in the acting window, so its gates still apply. The entry
        is refreshed once; a changed skill is reported as such, and its new entry
        replaces the old one in the registry (loading it asks for approval again).
        """
        label = record.origin.label
        logger.info("verification failed for %s from %s: %s", error.uri, label, error.message)
        self._window.end(record.key, error)
        try:
            fresh = await self._shared.get_skill(self._shared.connection(label), pinned.uri)
        except SkillwardError:
            self._failed(record, pinned, error, changed=False)
            raise error from None
        moved = (
            entry_content(fresh) != entry_content(pinned) or fresh.frontmatter != pinned.frontmatter
        )
        self._failed(record, pinned, error, changed=moved)
        if moved:
            self._shared.registry.put(
                SkillRecord.from_entry(record.origin, fresh, listed=record.listed)
            )
            # A changed skill is approved again from scratch, even if v1 comes back.
            await self._shared.revoke(record.key, reason=_describe_change(pinned, fresh))
            changed = SkillChanged(
                _describe_change(pinned, fresh) + f"; {error.message}",
                server=label,
                uri=pinned.uri,
            )
            self._window.end(record.key, changed, replace=True)
            raise changed from error
        raise error

    def _failed(
        self, record: SkillRecord, pinned: SkillEntry, error: SkillwardError, *, changed: bool
    ) -> None:
        # The error's type, never its message: messages may quote what the server sent.
        reason = type(error).__name__ + ("; the skill changed" if changed else "")
        self._shared.record(
            "verification_failure",
            "failed",
            record,
            entry=pinned,
            reason=reason,
            resource_uri=error.uri,
        )

    def ended(self, activation: Activation, uri: str) -> ReactivationRequired:
        record = activation.record
        cause = activation.ended
        why = cause.message if cause is not None else "its content ended"
        ref = self._shared.registry.qualified_ref(record)
        return ReactivationRequired(
            f"nothing more is read under skill {ref!r}: {why}",
            server=record.origin.label,
            uri=uri,
        )
