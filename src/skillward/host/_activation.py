"""Activation, decided once per call: the pending decision prepared (the policy, the pin,
the verdict from the approver's records), the approver asked only when nothing settles
it, then SKILL.md fetched, verified against the entry and the acting window opened on
what was verified; and what follows a failed verification under an activation: its
content ends (it stays in the window, so its gates still apply), and a skill found
changed is approved again from scratch.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NoReturn

import anyio

from skillward.cache.seam import CacheKey
from skillward.core.context import skill_block
from skillward.core.errors import (
    ApprovalDenied,
    ApprovalError,
    FrontmatterError,
    IntegrityError,
    ReactivationRequired,
    SkillChanged,
    SkillwardError,
    UsageError,
)
from skillward.core.frontmatter import allowed_tools
from skillward.core.registry import SkillRecord
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
    NeverApproved,
    content_hash,
    entry_content,
    grantable,
)
from skillward.trust.pending import Deciding, PendingApproval
from skillward.trust.policy import refusal

__all__ = ["HELD_AGAIN", "Activator"]

logger = logging.getLogger("skillward")

#: What the audit trail says of a skill given again, unchanged, to the context holding it.
HELD_AGAIN = "loaded again: already loaded in this context, its listed content unchanged"

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


def unchanged(activation: Activation, record: SkillRecord) -> bool:
    """Whether ``activation`` is of exactly the content ``record`` lists: approved for
    this context and verified, so loading it again asks nobody again. Content that
    ended, changed or is dynamic, and local skills (known only by reading them), are
    loaded anew."""
    entry = record.entry
    return (
        activation.ended is None
        and entry is not None
        and not entry.is_dynamic
        and activation.entry == entry
    )


def _check_answer(answer: object, approver: object, method: str) -> None:
    if not isinstance(answer, Answer):
        raise TypeError(
            f"{type(approver).__name__}.{method} returned {type(answer).__name__}, not an Answer"
        )


class _Recorded:
    """The record of an approval (and of the tools it grants), made once: when called,
    or at the latest when :meth:`granted` is asked. Calling it never raises (it may run
    inside the transport's send); a failure to record is raised by :meth:`granted`,
    before the content is used."""

    __slots__ = ("_error", "_granted", "_record")

    def __init__(self, record: Callable[[], tuple[str, ...]]) -> None:
        self._record: Callable[[], tuple[str, ...]] | None = record
        self._granted: tuple[str, ...] = ()
        self._error: Exception | None = None

    def __call__(self) -> None:
        record, self._record = self._record, None
        if record is None:
            return
        try:
            self._granted = record()
        except Exception as error:  # raised by granted(), in the loading task
            self._error = error

    def granted(self) -> tuple[str, ...]:
        """The tools granted, recorded (now, if not yet)."""
        self()
        if self._error is not None:
            raise self._error
        return self._granted

    def settled(self, failure: BaseException) -> None:
        """Recorded now, on a path that raises ``failure``: a failure to record that is
        not what is raised is logged, not lost."""
        self()
        error = self._error
        if error is not None and error is not failure:
            logger.error(
                "the approval of this load could not be recorded: %s",
                type(error).__name__,
                exc_info=error,
            )


class Activator:
    """Activations into one session's acting window, and the ends of their content."""

    def __init__(self, shared: Shared, window: ActingWindow, approver: Approver) -> None:
        self._shared = shared
        self._fetcher = shared.fetcher
        self._window = window
        self._approver = approver
        # Asked once: a protocol's isinstance costs microseconds a call.
        self._decider = approver if isinstance(approver, Deciding) else None
        # Prepared in this session and not loaded yet: each is loaded once, here only.
        self._prepared: weakref.WeakSet[PendingApproval] = weakref.WeakSet()

    def lock(self, record: SkillRecord) -> anyio.Lock:
        """The lock to hold while acting on ``record`` (its origin's, in this session)."""
        if record.origin.is_mcp:
            self._shared.connection(record.origin.label)  # a server this host still knows
        return self._window.lock(record.origin.label)

    async def activate(self, record: SkillRecord, *, reuse: bool = False) -> Activation:
        """Load ``record``: prepare, ask the approver only when nothing settles it, and
        load on its answer (hold :meth:`lock`)."""
        pending = await self.prepare(record, reuse=reuse)
        answer = None if pending.settled else await self.ask(pending)
        return await self.load(pending, answer)

    async def prepare(self, record: SkillRecord, *, reuse: bool = False) -> PendingApproval:
        """The decision on loading ``record``, made once for the call: the policy (a
        refusal is recorded and raised), the pin, the verdict from the approver's records.
        Fetches nothing. With ``reuse`` (the model's ``read_skill``), a skill this context
        already acts on, its content unchanged and its server connected, is settled without
        asking (the policy is still checked)."""
        self._window.check_open()  # a closed context asks nobody and fetches nothing
        self._fetcher.check_dynamic(record)
        request = self._shared.approval_request(record)
        # Policy first: no approval overrides what an administrator forbids.
        self._shared.check_policy(request)
        held = self._window.get(record.key) if reuse else None
        if held is not None and unchanged(held, record):
            if record.origin.is_mcp:
                # What a server served stands in for it only while it is connected.
                connection = self._shared.connection(record.origin.label)
                if not connection.alive:
                    raise self._shared.connections.disconnected(connection, record.key.locator)
            pending = PendingApproval(request, acting=True)
        else:
            pending = await self._pending(request)
        self._prepared.add(pending)
        return pending

    async def _pending(self, request: ActivationRequest) -> PendingApproval:
        record = request.record
        pin = self._shared.policy.pin_for(request)
        if pin is not None:
            # An administrator reviewed exactly this content from this server: no prompt.
            logger.info(
                "%s:%s is pinned in %s", record.origin.label, record.key.locator, pin.source
            )
            return PendingApproval(request, pin=pin)
        approver = self._decider
        if approver is None:
            return PendingApproval(request, verdict=NeverApproved())
        pending = await approver.pending(request)
        if not isinstance(pending, PendingApproval) or pending.request is not request:
            raise TypeError(
                f"{type(approver).__name__}.pending did not return the PendingApproval "
                "of the request it was given"
            )
        return pending

    async def ask(self, pending: PendingApproval) -> Answer:
        """The approver's answer about ``pending``, which nothing settles (not recorded
        yet: :meth:`load` has the approver record it)."""
        approver = self._decider
        try:
            if approver is not None:
                answer = await approver.ask_about(pending)
                _check_answer(answer, approver, "ask_about")
            else:
                answer = await self._consent(pending.request)
        except ApprovalError as unanswered:  # nobody could be asked, or answered in time
            reason = f"not approved: {type(unanswered).__name__}"
            record = pending.request.record
            self._shared.record("denial", "denied", record, reason=reason, gate="activation")
            raise
        return answer

    async def load(self, pending: PendingApproval, answer: Answer | None = None) -> Activation:
        """Act on the skill ``pending`` is about, on ``answer`` (None when it is settled):
        the approver records the answer for exactly that content, then SKILL.md is
        fetched, verified and tagged (hold :meth:`lock`). Nothing is decided again."""
        if pending not in self._prepared:
            raise UsageError(
                "that pending approval was not prepared in this session, or it was loaded "
                "already; each is loaded once",
                hint="Prepare the skill again: host.prepare(ref).",
            )
        self._prepared.discard(pending)
        self._window.check_open()
        request = pending.request
        record = request.record
        if pending.acting:
            held = self._window.get(record.key)
            if held is None or not unchanged(held, record):
                raise UsageError(
                    "the skill left this context after it was prepared; prepare it again",
                    server=record.origin.label,
                )
            # Given again from what was verified and is held: still a decision, recorded.
            self._shared.record(
                "approval",
                "approved",
                record,
                reason=HELD_AGAIN,
                gate="activation",
                activation=held,
            )
            self._window.emit(held.block)
            return held
        approver = self._approver
        if pending.settled:
            answer = pending.held()
        elif answer is not None and (decider := self._decider) is not None:
            answer = await decider.settle(pending, answer)
            _check_answer(answer, decider, "settle")
        if answer is None or answer.decision is not Decision.APPROVE:
            logger.info("activation of %s:%s declined", record.origin.label, record.key.locator)
            reason = "not approved" if answer is not None else "not approved: no answer"
            via = answer.via if answer is not None else None
            self._shared.record(
                "denial", "denied", record, reason=reason, gate="activation", via=via
            )
            raise ApprovalDenied(
                f"loading skill {self._shared.registry.qualified_ref(record)!r} was not approved",
                server=record.origin.label,
                uri=record.key.locator,
                local=not record.origin.is_mcp,
                hint=_NO_APPROVER if isinstance(approver, DenyAll) else None,
            )
        if record.origin.is_mcp:
            # Recorded while the server answers (once the read is sent), and always before
            # the content is used: the decision itself was made above.
            decided = _Recorded(partial(self._granted_tools, request, answer))
            activation = await self._activate_mcp(request, decided)
        else:
            self._granted_tools(request, answer)
            activation = self._activate_local(record)
        self._window.open(activation)
        activation = self._window.get(record.key) or activation  # as the window holds it
        self._window.emit(activation.block)
        logger.info("activated %s:%s", record.origin.label, record.key.locator)
        return activation

    async def _consent(self, request: ActivationRequest) -> Answer:
        """The approver's answer: with the grants it holds, if it is :class:`Granting`."""
        approver = self._approver
        if isinstance(approver, Granting):
            answer = await approver.consent(request)
            _check_answer(answer, approver, "consent")
        else:
            answer = Answer(as_decision(await approver.decide(request), approver))
        return answer

    def _granted_tools(self, request: ActivationRequest, answer: Answer) -> tuple[str, ...]:
        """Record the approval, and which of the requested tools it grants (MCP skills)."""
        record = request.record
        how = answer.how or ("a recorded approval" if answer.held else "approved when asked")
        self._shared.record(
            "approval",
            "approved",
            record,
            reason=how,
            gate="activation",
            scope=answer.scope.value,
            via=answer.via,
        )
        if not record.origin.is_mcp:
            return ()  # a local skill's tools are the host's own rules (see Activation)
        requested = request.requested_tools
        if requested and not request.tools_grantable:
            self._shared.record(
                "policy_denial",
                "denied",
                record,
                reason=f"{refusal(self._shared.policy, 'allowed_tools').whose} forbids "
                "granting requested tools",
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

    async def _activate_mcp(self, request: ActivationRequest, decided: _Recorded) -> Activation:
        record = request.record
        entry = record.entry
        assert entry is not None
        label = record.origin.label
        key: CacheKey | None = None
        try:
            connection = self._shared.connection(label)
            if entry.is_dynamic:
                decided()
                self._window.spend(record.key, 0, start=True)
                data = await self._fetcher.fetch_dynamic(
                    connection, record, entry.uri, self._window
                )
            else:
                key = self._fetcher.cache_key(connection, entry.uri, entry.manifest[entry.uri])
                data = await self._fetcher.fetch(connection, entry.uri, key, after_send=decided)
            granted = decided.granted()
            verified = verify_skill_md(entry, data, server=label, limits=self._shared.limits)
        except (IntegrityError, FrontmatterError) as error:
            decided.settled(error)
            await self.after_failure(record, entry, error)
        except BaseException as error:
            decided.settled(error)  # on record before whatever follows the failure
            raise
        if key is not None and verified.file.verified:
            self._shared.cache.put(key, verified.file.data)
        block = await off_loop(skill_block)(
            origin=record.origin,
            uri=entry.uri,
            digest=None if entry.is_dynamic else verified.file.digest,
            body=verified.body,
            # With the trailing slash, RFC 3986 resolution of a relative path lands inside.
            root=str(entry.root) + "/",
            files=entry.file_paths,
            verified=not entry.is_dynamic,
            unverifiable=entry.is_dynamic,
        )
        if self._shared.connections.get(label) is not connection or not connection.alive:
            # Disconnected while this load waited (the server, or the block's build): its
            # activations were ended in every session, and this one must not begin after.
            raise self._shared.connections.disconnected(connection, entry.uri)
        requested = request.requested_tools
        return Activation(
            record,
            block,
            entry,
            requested_tools=requested,
            granted_tools=granted,
            tools_refused=request.tools_refused if requested else None,
            content_hash=content_hash(entry),
        )

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
        except BaseException:  # cancelled before the refresh said whether it changed
            self._failed(record, pinned, error, changed=False)
            raise
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
