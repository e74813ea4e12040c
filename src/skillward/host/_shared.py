"""What every session of a host shares: the connections, the registry of every origin's
skills (servers and local skill directories), the content cache, the policy, the
audit trail and the configuration.

A session (a model context: its acting window, its approver and gates) joins with
:meth:`Shared.join`; what the host does to an origin (disconnecting it, learning that
a skill changed) reaches every session that has joined. Nothing here holds a
session's state.
"""

from __future__ import annotations

import dataclasses
import logging
import weakref

import anyio.to_thread

from skillward.cache.seam import ContentCache, NoCache
from skillward.core._collector import collector_paused
from skillward.core.config import Limits
from skillward.core.errors import (
    CapabilityMissing,
    ConfigError,
    PolicyDenied,
    ServerRejected,
    SkillNotFound,
    SkillwardError,
    UnknownServer,
)
from skillward.core.labels import check_label
from skillward.core.origins import Origin, SkillKey
from skillward.core.registry import (
    Declined,
    Registry,
    SkillRecord,
    parse_reference,
    unknown_label,
)
from skillward.core.wire import SkillEntry
from skillward.edge._local import LocalSkillDir, discover
from skillward.edge.servers import ServerSpec
from skillward.host._connections import Connection, Connections
from skillward.host._fetch import Fetcher
from skillward.host._window import ActingWindow
from skillward.host.types import Activation, HostConfig
from skillward.trust.approvals import ActivationRequest, Approver, content_hash, revoke_approval
from skillward.trust.audit import AuditRules, AuditTrail, EventKind, GateKind, Outcome
from skillward.trust.policy import GrantKind, GrantMode, Policy, refusal

__all__ = ["Shared"]

logger = logging.getLogger("skillward")
#: Decisions whose subject is used once recorded: under a tamper-evident trail, only then.
_USED = frozenset({"approved", "granted", "allowed"})


class Shared:
    """The origins a host knows, their connections, and the seams they are used under."""

    def __init__(
        self,
        *,
        config: HostConfig,
        policy: Policy,
        cache: ContentCache,
        audit: AuditTrail | None,
    ) -> None:
        self.policy = policy
        # The policy's limits apply to the host's, and reach the cache below; a cache the
        # policy turns off keeps nothing.
        self.config = dataclasses.replace(config, limits=policy.limits(config.limits))
        #: Where every decision is recorded (the ``skillward.audit`` logger by default).
        self.audit = audit or AuditTrail(limits=self.config.limits)
        # A policy of the host's own may say nothing of the trail.
        rules = getattr(policy, "audit_rules", None)
        self.audit_rules: AuditRules = rules() if callable(rules) else AuditRules()
        refused = self.trail_refusal()
        if refused is not None:  # said at start-up, not first at a load
            logger.warning("%s", refused)
        if not policy.cache_allowed():
            cache = NoCache()
        cache.narrow(self.config.limits)
        self.cache = cache
        self.registry = Registry()
        self.notes: list[str] = []
        self.connections = Connections(self.config.limits)
        self.fetcher = Fetcher(self.connections, cache, self.config)
        # Each session's acting window, and the approver it asks. Weak: a session
        # dropped without being closed is not kept alive by the host.
        self._members: weakref.WeakKeyDictionary[ActingWindow, Approver] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def limits(self) -> Limits:
        return self.config.limits

    # --- sessions ---------------------------------------------------------------------

    def join(self, window: ActingWindow, approver: Approver) -> None:
        """A session over these origins: what happens to an origin reaches it."""
        self._members[window] = approver

    def leave(self, window: ActingWindow) -> None:
        self._members.pop(window, None)

    def close_sessions(self, keep: ActingWindow) -> None:
        """Shut every session's window but ``keep``'s: the host closed under them."""
        for window in self.windows():
            if window is not keep:
                window.shut()
                self.leave(window)

    def windows(self) -> list[ActingWindow]:
        return list(self._members)

    async def revoke(self, key: SkillKey, *, reason: str) -> None:
        """Revoke what every session's approver holds for ``key`` (the skill changed):
        every one, even when the caller is cancelled meanwhile (a deadline on the read
        that found the change must not leave the sessions after it approved)."""
        approvers = list({id(a): a for a in self._members.values()}.values())
        with anyio.CancelScope(shield=True):
            for approver in approvers:
                await revoke_approval(approver, key, reason=reason)

    # --- lifecycle --------------------------------------------------------------------

    async def open(self) -> None:
        """Start the connections' task group and discover the configured local skills."""
        await self.connections.open()
        try:
            for source in self.config.local_dirs:
                self.add_local_dir(source)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Disconnect every server (newest first), then wait for their processes."""
        for label in reversed(self.connections.labels()):
            await self.disconnect(label)
        await self.connections.aclose()

    # --- servers ----------------------------------------------------------------------

    async def connect(self, spec: ServerSpec) -> None:
        """Connect ``spec`` and list its skills; on failure nothing of it stays."""
        self.connections.require_open()
        label = check_label(spec.label)
        self.check_server(spec)
        if label in self.connections or self.registry.find_origin(label) is not None:
            raise ConfigError(f"label {label!r} is already in use; labels are unique per host")
        connection = await self.connections.add(spec)
        try:
            listed, declined = await self.relist(connection)
        except BaseException:
            self.connections.discard(connection)
            self.registry.remove_origin(label)
            raise
        logger.info(
            "connected %s (%s): %d skills, %d declined", label, spec.describe(), listed, declined
        )

    def check_server(self, spec: ServerSpec) -> None:
        """The policy's word on connecting ``spec``, every time it is connected."""
        try:
            self.policy.check_server(spec)
        except PolicyDenied as denied:
            self.audit.record(
                "policy_denial",
                "denied",
                label=spec.label,
                identity=spec.identity,
                reason=f"{denied.whose or 'the policy'} does not allow this server",
            )
            raise

    async def reconnect(self, label: str) -> None:
        """Connect ``label``'s server again and list it; acting windows stay as they are."""
        self.connections.require_open()
        old = self.connections.get(label)
        if old is None:
            raise UnknownServer(f"no server was connected as {label!r}")
        self.check_server(old.spec)
        connection = await self.connections.reopen(old)
        try:
            await self.relist(connection)
        except SkillwardError as error:
            self.connections.abandon(connection, error)
            raise
        logger.info("reconnected %s", label)

    async def relist(self, connection: Connection) -> tuple[int, int]:
        """List ``connection``'s skills into the registry (the catalog only); how many
        were registered, and how many declined."""
        assert connection.client is not None
        origin = Origin("mcp", connection.label, connection.reported_name)
        try:
            listing = await self.connections.call(connection, lambda c: c.list_skills())
        except CapabilityMissing as missing:
            connection.skills = False
            connection.note = missing.message
            self.registry.set_origin(origin, [])
            return 0, 0
        connection.listing_ttl_ms = listing.ttl_ms
        declined = [Declined(origin, error) for error in listing.rejected]
        for refused in declined:
            logger.info("declined an entry of %s: %s", connection.label, refused.error)
        with collector_paused():  # a record and a key for each entry (core/_collector.py)
            records = [SkillRecord.from_entry(origin, entry) for entry in listing.entries]
            self.registry.set_origin(origin, records, declined)
        # An entry listed twice is registered once (its key is its URI, under this label).
        return len({entry.uri for entry in listing.entries}), len(declined)

    async def disconnect(self, label: str) -> None:
        """Close the connection, forget its skills, and end their acting windows in
        every session."""
        self.registry.remove_origin(label)
        for window in self.windows():
            window.close_origin(label)
        await self.connections.remove(label)

    async def forget_server(self, label: str) -> None:
        """Disconnect ``label`` and purge what the cache keeps of it."""
        check_label(label)
        if (known := self.registry.find_origin(label)) is not None and not known.is_mcp:
            raise ConfigError(f"label {label!r} is a local skill directory, not a server")
        await self.disconnect(label)
        await anyio.to_thread.run_sync(self.cache.forget, label)

    def add_local_dir(self, source: LocalSkillDir) -> None:
        """Discover the skills under ``source`` as a local origin labelled ``source.label``."""
        check_label(source.label)
        if source.label in self.connections:
            raise ConfigError(f"label {source.label!r} is already used by a server")
        # A cache inside or around a discovery path turns itself off before anything is
        # kept; a key store there refuses to hold a key.
        self.cache.isolate_from(source.path)
        self.audit.isolate_from(source.path)
        for approver in self._members.values():
            store = getattr(approver, "store", None)  # an ApprovalBook's
            keys = getattr(store, "keys", None)  # a FileApprovalStore's
            isolate = getattr(keys, "isolate_from", None)  # the file key store's
            if callable(isolate):
                isolate(source.path)
        origin, records, declined, notes = discover(source, limits=self.limits)
        self.registry.set_origin(origin, records, declined)
        self.notes.extend(notes)

    def connection(self, label: str) -> Connection:
        """``label``'s connection, or an error saying why there is none."""
        connection = self.connections.get(label)
        if connection is None:
            known = self.registry.find_origin(label)
            if known is not None and not known.is_mcp:
                raise UnknownServer(
                    f"{label!r} is a local skill directory, not a server", local=True
                )
            raise unknown_label(
                label, self.connections.labels(), f"no connected server is labelled {label!r}"
            )
        return connection

    def identity(self, label: str) -> str | None:
        """How ``label``'s server is reached, if it is a server this host connected."""
        connection = self.connections.get(label)
        return connection.spec.identity if connection is not None else None

    # --- skills -----------------------------------------------------------------------

    async def lookup(self, reference: str) -> SkillRecord:
        """The skill ``reference`` names; a ``LABEL:URI`` no listing mentioned is confirmed
        with ``skills/get`` on that server (and only that server)."""
        ref = parse_reference(reference)
        try:
            return self.registry.resolve(ref)
        except SkillNotFound:
            if ref.kind != "uri":
                raise
            if ref.label is None:
                raise SkillNotFound(
                    f"no listed skill has the URI {ref.value!r}; qualify it with the label of "
                    "the server it came from (LABEL:URI)"
                ) from None
        connection = self.connection(ref.label)
        entry = await self.get_skill(connection, ref.value)
        record = SkillRecord.from_entry(self.registry.origin(ref.label), entry, listed=False)
        self.registry.put(record)
        return record

    async def get_skill(self, connection: Connection, uri: str) -> SkillEntry:
        try:
            return await self.connections.call(connection, lambda c: c.get_skill(uri), uri=uri)
        except ServerRejected as rejected:
            if rejected.code == -32602:  # SEP-2640: the URI identifies no skill it serves
                raise SkillNotFound(
                    "the server serves no skill at this URI", server=connection.label, uri=uri
                ) from None
            raise

    # --- the policy and the audit trail -------------------------------------------------

    def approval_request(self, record: SkillRecord) -> ActivationRequest:
        """What the approver is asked about ``record``. Fetches nothing."""
        identity = None
        if record.origin.is_mcp:
            identity = self.connection(record.origin.label).spec.identity
        qualified = self.registry.qualified_ref(record)
        collisions = tuple(
            c.message for c in self.registry.collisions_naming(qualified, record.origin.label)
        )

        async def view() -> str:
            return await self._skill_md(record)

        grantable = self.grant_mode("allowed_tools") == "prompt"
        return ActivationRequest(
            record,
            nested_in=self.registry.enclosing(record),
            identity=identity,
            collisions=collisions,
            tools_grantable=grantable,
            viewer=view,
            max_shown_tools=self.limits.max_shown_tools,
            ref=qualified,
            tools_rule=None if grantable else refusal(self.policy, "allowed_tools").rule,
        )

    async def view_skill_md(self, record: SkillRecord) -> str:
        """SKILL.md, verified, for the person deciding on an approval (never the model).
        Raises PolicyDenied, fetching nothing, if the policy refuses the skill."""
        self.allowed_request(record)
        return await self._skill_md(record)

    async def _skill_md(self, record: SkillRecord) -> str:
        connection = self.connection(record.origin.label) if record.origin.is_mcp else None
        return await self.fetcher.skill_md(record, connection)

    def allowed_request(self, record: SkillRecord) -> ActivationRequest:
        """The approval request for ``record``, once the policy allows loading, reviewing
        or reading from its skill: a refusal is recorded, then raised. Every path to a
        skill's content comes through here first."""
        request = self.approval_request(record)
        self.check_policy(request)
        return request

    def check_policy(self, request: ActivationRequest) -> None:
        """The policy's word on loading, reviewing or reading from ``request``'s skill: a
        refusal is recorded, then raised."""
        try:
            self.policy.check_activation(request)
        except PolicyDenied as denied:
            self.record(
                "policy_denial",
                "denied",
                request.record,
                reason=f"{denied.whose or 'the policy'} does not allow this skill",
                gate="activation",
            )
            raise
        why = self.trail_refusal()
        if why is not None:
            self.record(
                "policy_denial",
                "denied",
                request.record,
                reason="the policy requires a tamper-evident audit trail, and this one is not",
                gate="activation",
            )
            raise PolicyDenied(
                why,
                server=request.record.origin.label,
                uri=request.record.key.locator,
                hint="Make the key store work (`skillward doctor` says why it does not, and "
                "how to fix it); a host keeps the trail in a file: AuditTrail(path).",
            )

    def trail_refusal(self) -> str | None:
        """Why the policy refuses every load here: it requires a tamper-evident audit trail
        and this host's is not (``audit.require_tamper_evident``); None when it does not."""
        rule = self.audit_rules.tamper_evident
        if rule is None:
            return None
        why = self.audit.tamper_evidence()
        if why is None:
            return None
        return (
            f"refused by policy: skills load only with a tamper-evident audit trail, and this "
            f"host's is not: {why}; rule {rule}"
        )

    def grant_mode(self, kind: GrantKind) -> GrantMode:
        """The policy's mode for ``kind``; anything but ``"prompt"`` refuses."""
        return "prompt" if self.policy.grant_mode(kind) == "prompt" else "never"

    def record(
        self,
        event: EventKind,
        decision: Outcome,
        record: SkillRecord,
        *,
        reason: str,
        entry: SkillEntry | None = None,
        activation: Activation | None = None,
        gate: GateKind | None = None,
        tool: str | None = None,
        resource_uri: str | None = None,
        scope: str | None = None,
        via: str | None = None,
    ) -> None:
        """One audit event about ``record`` (``entry``: the pinned entry, if not its own;
        ``activation``: the activation whose pinned entry and hash to record; ``via``:
        where the answer came from)."""
        label = record.origin.label
        if activation is not None and activation.entry is not None:
            digest = activation.content_hash
        else:
            entry = entry or record.entry
            digest = content_hash(entry) if entry is not None else None
        self.audit.record(
            event,
            decision,
            label=label,
            identity=self.identity(label) if record.origin.is_mcp else None,
            skill_uri=record.key.locator,
            content_hash=digest,
            reason=reason,
            gate=gate,
            tool=tool,
            resource_uri=resource_uri,
            scope=scope,
            via=via,
        )
        unwritten = self.audit.unwritten
        if unwritten is not None and decision in _USED and self.audit_rules.tamper_evident:
            # What is approved or granted is used only once it is on record.
            raise PolicyDenied(
                f"refused by policy: skills load only with a tamper-evident audit trail, and "
                f"this {event} could not be written to it: {unwritten}; rule "
                f"{self.audit_rules.tamper_evident}",
                server=label,
                uri=record.key.locator,
                hint="Make the audit file writable again (its path is above): loads resume "
                "once a line can be written to it.",
            )
