"""SkillHost: what an agent host embeds to use skills from MCP servers safely.

A host connects servers under labels of its own choosing, adds local skill
directories, shows the model a catalog, and loads skills through
:meth:`SkillHost.activate` (the ``read_skill`` tool) and reads their files
through :meth:`SkillHost.read_resource` (the ``read_resource`` tool)::

    async with SkillHost(approver=my_approver) as host:
        await host.connect(ServerSpec(label="acme", transport=HttpTransport(url=...)))
        system_prompt += host.catalog_block().text()
        activation = await host.activate("refunds")        # verified, origin-tagged
        block = await host.read_resource("acme", "skill://acme/billing/refunds/templates/email.md")

What it guarantees:

* **Lazy**: connecting and listing read no resources; activation reads exactly the
  skill's SKILL.md; a supporting file is fetched when it is read.
* **Verified**: every read is checked against the entry (size, digest, and for
  SKILL.md the frontmatter). Activation pins the entry; while the host acts on
  the skill, reads resolve only to URIs that entry lists. On any failure the
  content is not used, the entry is refreshed once with ``skills/get``, and a
  changed skill is reported as :class:`~skillward.errors.SkillChanged`.
* **Origin-bound**: reads while acting on a server's skill go to that server;
  anything else passes the cross-origin gate (deny by default).
* **Asked**: every activation goes through the approver (deny by default).
* **Tagged**: everything returned for a model is a
  :class:`~skillward.context.ContextBlock` from the one exit point.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, Self

import anyio
import anyio.to_thread

from skillward._local import (
    LocalSkillDir,
    discover,
    read_local_file,
    read_skill_md,
)
from skillward._tree import TreeLimits, walk_files
from skillward.approvals import ActivationRequest, Approver, Decision, DenyAll, entry_content
from skillward.cache import CacheKey, ContentCache, NoCache
from skillward.client import SkillsClient
from skillward.config import Limits
from skillward.context import (
    CatalogItem,
    ContextBlock,
    catalog_block,
    directory_block,
    error_block,
    file_block,
    resource_block,
    skill_block,
)
from skillward.errors import (
    ApprovalDenied,
    CapabilityMissing,
    ConfigError,
    CrossOriginDenied,
    ExecutionDenied,
    FrontmatterError,
    IntegrityError,
    ResponseTooLarge,
    ServerRejected,
    SizeMismatch,
    SkillChanged,
    SkillNotFound,
    SkillTooLarge,
    SkillwardError,
    UnknownServer,
    UnlistedResource,
    UnverifiableSkill,
)
from skillward.gates import (
    CrossOriginGate,
    CrossOriginRequest,
    DenyCrossOrigin,
    DenyExecution,
    ExecutionGate,
    ExecutionRequest,
)
from skillward.origins import Origin, SkillKey
from skillward.policy import NoPolicy, Policy
from skillward.registry import Collision, Declined, Registry, SkillRecord, parse_reference
from skillward.servers import ServerSpec, check_label
from skillward.uris import ResourceUri, parse_uri, resolve_reference
from skillward.verify import (
    VerifiedFile,
    manifest_item,
    sha256_digest,
    verify_file,
    verify_skill_md,
)
from skillward.wire import ResourceItem, SkillEntry

__all__ = ["TOOL_SCHEMAS", "Activation", "ContextSink", "HostConfig", "SkillHost"]

logger = logging.getLogger("skillward")

#: Content from this many bytes is neutralised in a worker thread (see _off_loop).
_OFF_LOOP_BYTES = 256 * 1024


def _off_loop(build: Callable[..., ContextBlock]) -> Callable[..., Awaitable[ContextBlock]]:
    """``build``, run in a worker thread when the content is large: neutralising megabytes
    is CPU work that would otherwise stall every task on the event loop."""

    async def run(**fields: Any) -> ContextBlock:
        if len(fields.get("data", fields.get("body", b""))) < _OFF_LOOP_BYTES:
            return build(**fields)
        return await anyio.to_thread.run_sync(lambda: build(**fields))

    return run


ContextSink = Callable[[ContextBlock], None]

#: JSON schemas of the two tools a host registers with its model (SEP-2640's sketch).
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "read_skill": {
        "name": "read_skill",
        "description": "Load a skill's SKILL.md into context. Pass the skill reference "
        "exactly as the skill catalog shows it.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill reference"}},
            "required": ["name"],
        },
    },
    "read_resource": {
        "name": "read_resource",
        "description": "Read a file of a loaded skill, or another resource, from a connected "
        "MCP server. Use the server label the skill's block names.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The server label"},
                "uri": {"type": "string", "description": "The resource URI"},
            },
            "required": ["server", "uri"],
        },
    },
}


@dataclass(frozen=True, kw_only=True)
class HostConfig:
    """How a SkillHost behaves. Frozen: decide once, at construction."""

    limits: Limits = field(default_factory=Limits)
    #: Local skill directories to discover on entry (see ``default_local_dirs()``).
    local_dirs: tuple[LocalSkillDir, ...] = ()
    #: Load skills whose ``resources`` is "dynamic": their content cannot be verified.
    unsafe_allow_dynamic: bool = False


@dataclass(frozen=True, slots=True)
class Activation:
    """An activated skill: the entry it was verified against, held while acting on it."""

    record: SkillRecord
    block: ContextBlock
    #: The pinned entry (MCP skills); every later read is checked against it.
    entry: SkillEntry | None = None


@dataclass
class _Connection:
    spec: ServerSpec
    client: SkillsClient
    stack: AsyncExitStack
    skills: bool
    note: str | None = None


def _depth(entry: SkillEntry) -> int:
    return len(entry.root.segments)


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


class SkillHost:
    """The embeddable, async API. See the module docstring for the guarantees."""

    def __init__(
        self,
        *,
        config: HostConfig | None = None,
        approver: Approver | None = None,
        cross_origin: CrossOriginGate | None = None,
        execution: ExecutionGate | None = None,
        policy: Policy | None = None,
        cache: ContentCache | None = None,
        sink: ContextSink | None = None,
    ) -> None:
        self.config = config or HostConfig()
        self.approver: Approver = approver or DenyAll()
        self.cross_origin: CrossOriginGate = cross_origin or DenyCrossOrigin()
        self.execution: ExecutionGate = execution or DenyExecution()
        self.policy: Policy = policy or NoPolicy()
        self.cache: ContentCache = cache or NoCache()
        self.registry = Registry()
        self.notes: list[str] = []
        self._sink = sink
        self._connections: dict[str, _Connection] = {}
        self._active: dict[SkillKey, Activation] = {}
        # Bytes retrieved so far per dynamic skill: nothing else bounds them.
        self._dynamic_spent: dict[SkillKey, int] = {}

    @property
    def limits(self) -> Limits:
        return self.config.limits

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        for source in self.config.local_dirs:
            self.add_local_dir(source)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Disconnect every server (in reverse order of connection)."""
        for label in reversed(list(self._connections)):
            await self.disconnect(label)

    async def connect(self, spec: ServerSpec) -> None:
        """Connect ``spec`` and list its skills. Reads no resource."""
        label = check_label(spec.label)
        self.policy.check_server(spec)
        if label in self._connections or any(o.label == label for o in self.registry.origins()):
            raise ConfigError(f"label {label!r} is already in use; labels are unique per host")
        stack = AsyncExitStack()
        try:
            client = await stack.enter_async_context(SkillsClient.connect(spec, limits=self.limits))
            connection = _Connection(spec, client, stack, skills=True)
            self._connections[label] = connection
            await self._list(connection)
        except BaseException:
            self._connections.pop(label, None)
            self.registry.remove_origin(label)
            with anyio.CancelScope(shield=True):  # close the session even when cancelled
                await stack.aclose()
            raise

    async def _list(self, connection: _Connection) -> None:
        client = connection.client
        origin = Origin("mcp", client.label, client.server_name)
        try:
            listing = await client.list_skills()
        except CapabilityMissing as missing:
            connection.skills = False
            connection.note = missing.message
            self.registry.set_origin(origin, [])
            return
        records = [SkillRecord.from_entry(origin, entry) for entry in listing.entries]
        declined = [Declined(origin, error) for error in listing.rejected]
        self.registry.set_origin(origin, records, declined)

    async def refresh(self, label: str) -> None:
        """List ``label``'s skills again (the catalog only; reads nothing)."""
        await self._list(self._connection(label))

    async def disconnect(self, label: str) -> None:
        connection = self._connections.pop(label, None)
        self.registry.remove_origin(label)
        for key in [k for k in self._active if k.origin == label]:
            self._close(key)
        if connection is not None:
            await connection.stack.aclose()

    def add_local_dir(self, source: LocalSkillDir) -> None:
        """Discover the skills under ``source`` as a local origin labelled ``source.label``."""
        check_label(source.label)
        if source.label in self._connections:
            raise ConfigError(f"label {source.label!r} is already used by a server")
        origin, records, declined, notes = discover(source, limits=self.limits)
        self.registry.set_origin(origin, records, declined)
        self.notes.extend(notes)

    def _connection(self, label: str) -> _Connection:
        connection = self._connections.get(label)
        if connection is None:
            raise UnknownServer(f"no connected server is labelled {label!r}")
        return connection

    # --- what people and models see -----------------------------------------------------

    def catalog(self) -> list[CatalogItem]:
        return [
            CatalogItem(
                ref=self.registry.display_ref(record),
                name=record.name,
                description=record.description,
                origin=record.origin,
            )
            for record in self.registry.records()
            if record.listed
        ]

    def catalog_block(self) -> ContextBlock:
        """The catalog for the model's context (omit it when ``catalog()`` is empty)."""
        return self._emit(catalog_block(self.catalog()))

    def collisions(self) -> list[Collision]:
        return self.registry.collisions()

    def declined(self) -> list[Declined]:
        return self.registry.declined()

    def server_note(self, label: str) -> str | None:
        """Why a connected server offers no skills, if it does not."""
        return self._connection(label).note

    def active(self) -> list[Activation]:
        return list(self._active.values())

    def _emit(self, block: ContextBlock) -> ContextBlock:
        if self._sink is not None:
            self._sink(block)
        return block

    # --- resolution ------------------------------------------------------------------

    def resolve(self, reference: str) -> SkillRecord:
        """The skill a reference names, from what is already known. No network."""
        return self.registry.resolve(reference)

    async def lookup(self, reference: str) -> SkillRecord:
        """Like :meth:`resolve`, but a ``LABEL:URI`` no listing mentioned is confirmed with
        ``skills/get`` on that server (and only that server)."""
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
        connection = self._connection(ref.label)
        entry = await connection.client.get_skill(ref.value)
        record = SkillRecord.from_entry(self.registry.origin(ref.label), entry, listed=False)
        self.registry.put(record)
        return record

    def _enclosing(self, record: SkillRecord) -> tuple[SkillKey, ...]:
        entry = record.entry
        if entry is None:
            return ()
        enclosing = []
        for other in self.registry.records():
            if other.origin.label != record.origin.label or other.entry is None:
                continue
            root = other.entry.root
            if other.key != record.key and entry.skill_md.is_within(root):
                enclosing.append(other.key)
        return tuple(enclosing)

    # --- activation (read_skill) -----------------------------------------------------

    async def activate(self, reference: str) -> Activation:
        """Load a skill: ask the approver, fetch SKILL.md, verify it, and tag it."""
        record = await self.lookup(reference)
        self._check_dynamic(record)
        request = ActivationRequest(record, nested_in=self._enclosing(record))
        # Policy first: no approval overrides what an administrator forbids.
        self.policy.check_activation(request)
        decision = await self.approver.decide(request)
        if decision is not Decision.APPROVE:
            raise ApprovalDenied(
                f"loading skill {self.registry.qualified_ref(record)!r} was not approved",
                server=record.origin.label,
                uri=record.key.locator,
            )
        if record.origin.is_mcp:
            activation = await self._activate_mcp(record)
        else:
            activation = self._activate_local(record)
        self._active[record.key] = activation
        self._emit(activation.block)
        return activation

    async def _activate_mcp(self, record: SkillRecord) -> Activation:
        entry = record.entry
        assert entry is not None
        label = record.origin.label
        connection = self._connection(label)
        try:
            if entry.is_dynamic:
                self._dynamic_spent[record.key] = 0
                data = await self._fetch_dynamic(connection, record, entry.uri)
            else:
                data = await self._fetch(connection, entry.uri, entry.manifest.get(entry.uri))
            verified = verify_skill_md(entry, data, server=label, limits=self.limits)
        except (IntegrityError, FrontmatterError) as error:
            await self._after_failure(record, entry, error)
        if verified.file.verified:
            self.cache.put(CacheKey(label, entry.uri, verified.file.digest), verified.file.data)
        root = entry.root
        files = sorted(root.file_path(parse_uri(uri)) for uri in entry.manifest)
        block = await _off_loop(skill_block)(
            origin=record.origin,
            uri=entry.uri,
            digest=None if entry.is_dynamic else verified.file.digest,
            body=verified.body,
            root=str(root),
            files=files,
            verified=not entry.is_dynamic,
            unverifiable=entry.is_dynamic,
        )
        return Activation(record, block, entry)

    def _check_dynamic(self, record: SkillRecord) -> None:
        if record.entry is None or not record.entry.is_dynamic:
            return
        if not self.config.unsafe_allow_dynamic:
            raise UnverifiableSkill(
                "this skill's content is dynamic and cannot be verified; it is not loaded",
                server=record.origin.label,
                uri=record.key.locator,
            )
        logger.warning(
            "unsafe_allow_dynamic: using unverifiable skill %s from %s",
            record.key.locator,
            record.origin.label,
        )

    def _activate_local(self, record: SkillRecord) -> Activation:
        assert record.directory is not None
        directory = Path(record.directory)
        data, document = read_skill_md(directory, limits=self.limits, label=record.origin.label)
        paths, _ = walk_files(directory, limits=TreeLimits(max_entries=self.limits.max_skill_files))
        block = skill_block(
            origin=record.origin,
            uri=str(directory / "SKILL.md"),
            digest=sha256_digest(data),
            body=document.body,
            root=str(directory),
            files=["/".join(parts) for parts, _ in paths],
            verified=False,
        )
        return Activation(record, block)

    def deactivate(self, reference: str) -> None:
        """Close the acting window (for example when the SKILL.md leaves the context)."""
        self._close(self.registry.resolve(reference).key)

    def deactivate_all(self) -> None:
        """Close every acting window (for example when the model's context is reset)."""
        for key in list(self._active):
            self._close(key)

    def _close(self, key: SkillKey) -> None:
        """End the acting window of ``key``, and with it a dynamic skill's byte budget."""
        self._active.pop(key, None)
        self._dynamic_spent.pop(key, None)

    async def _fetch(self, connection: _Connection, uri: str, item: ResourceItem | None) -> bytes:
        """Bytes for ``uri``. For a listed file: from the cache if it has them (they are
        verified after either way), else from the server, cut off above the listed size."""
        if item is not None:
            cached = self.cache.get(CacheKey(connection.client.label, uri, item.digest))
            if cached is not None:
                return cached
            try:
                return await connection.client.read_resource(uri, max_bytes=item.size)
            except ResponseTooLarge:
                raise SizeMismatch(
                    f"the server sent more than the {item.size} bytes the listing promised",
                    server=connection.client.label,
                    uri=uri,
                ) from None
        return await connection.client.read_resource(uri)

    async def _verified(self, connection: _Connection, item: ResourceItem) -> VerifiedFile:
        """A listed file, fetched (or taken from the cache) and verified against ``item``."""
        label = connection.client.label
        data = await self._fetch(connection, item.uri, item)
        verified = verify_file(item, data, server=label)
        self.cache.put(CacheKey(label, item.uri, verified.digest), verified.data)
        return verified

    async def _fetch_dynamic(self, connection: _Connection, record: SkillRecord, uri: str) -> bytes:
        """A read of a dynamic skill, within what is left of its total-size budget."""
        spent = self._dynamic_spent.get(record.key, 0)
        left = self.limits.max_skill_bytes - spent
        spent_error = SkillTooLarge(
            f"the dynamic skill has reached {self.limits.max_skill_bytes} bytes; "
            "nothing more of it is read",
            server=record.origin.label,
            uri=uri,
        )
        if left <= 0:
            raise spent_error
        try:
            data = await connection.client.read_resource(uri, max_bytes=left)
        except ResponseTooLarge:
            raise spent_error from None
        self._dynamic_spent[record.key] = spent + len(data)
        return data

    async def _after_failure(
        self, record: SkillRecord, pinned: SkillEntry, error: SkillwardError
    ) -> NoReturn:
        """The content is not used. Refresh the entry once; report a changed skill as such."""
        label = record.origin.label
        try:
            fresh = await self._connection(label).client.get_skill(pinned.uri)
        except SkillwardError:
            raise error from None
        if entry_content(fresh) != entry_content(pinned) or fresh.frontmatter != pinned.frontmatter:
            self.registry.put(SkillRecord.from_entry(record.origin, fresh, listed=record.listed))
            self._close(record.key)
            raise SkillChanged(
                _describe_change(pinned, fresh) + f"; {error.message}",
                server=label,
                uri=pinned.uri,
            ) from error
        raise error

    # --- reads (read_resource) ---------------------------------------------------------

    async def read_file(self, reference: str, path: str) -> ContextBlock:
        """A file of a skill, by a path relative to the skill root.

        While the skill is active, the read is checked against the pinned entry;
        otherwise against the current listing entry.
        """
        record = await self.lookup(reference)
        if not record.origin.is_mcp:
            assert record.directory is not None
            shown, data = read_local_file(Path(record.directory), path, limits=self.limits)
            block = await _off_loop(file_block)(
                origin=record.origin,
                uri=shown,
                digest=sha256_digest(data),
                data=data,
                verified=False,
            )
            return self._emit(block)
        activation = self._active.get(record.key)
        entry = activation.entry if activation and activation.entry else record.entry
        assert entry is not None
        uri = str(resolve_reference(entry.root, path))
        # The same origin binding as read_resource: both public reads pass it.
        await self._check_cross_origin(record.origin.label, uri)
        return await self._read_skill_file(record, entry, uri)

    async def _read_skill_file(
        self, record: SkillRecord, entry: SkillEntry, uri: str
    ) -> ContextBlock:
        label = record.origin.label
        connection = self._connection(label)
        if entry.is_dynamic:
            self._check_dynamic(record)
            data = await self._fetch_dynamic(connection, record, uri)
            block = await _off_loop(file_block)(
                origin=record.origin, uri=uri, digest=sha256_digest(data), data=data, verified=False
            )
            return self._emit(block)
        try:
            verified = await self._verified(connection, manifest_item(entry, uri, server=label))
        except IntegrityError as error:
            await self._after_failure(record, entry, error)
        block = await _off_loop(file_block)(
            origin=record.origin, uri=uri, digest=verified.digest, data=verified.data, verified=True
        )
        return self._emit(block)

    async def read_resource(self, server: str, uri: str) -> ContextBlock:
        """The model's ``read_resource(server, uri)``: bound to the acting skills' servers."""
        connection = self._connection(server)
        await self._check_cross_origin(server, uri)
        parsed = parse_uri(uri, max_length=self.limits.max_uri_length)
        acting = sorted(
            (
                a
                for a in self._active.values()
                if a.entry is not None and a.record.origin.label == server
            ),
            key=lambda a: -_depth(a.entry),  # type: ignore[arg-type]
        )
        for activation in acting:
            entry = activation.entry
            assert entry is not None
            if not (parsed.is_within(entry.root) or uri == str(entry.root)):
                continue
            if entry.is_dynamic:
                # No manifest to hold it to: a live read, unverified and budgeted.
                return await self._dynamic_read(connection, activation, uri)
            if uri in entry.manifest:
                return await self._read_skill_file(activation.record, entry, uri)
            if uri == str(entry.root) or any(m.startswith(uri + "/") for m in entry.manifest):
                return await self._skill_directory(connection, activation, uri)
            error = UnlistedResource(
                f"the skill {entry.uri} does not list this file", server=server, uri=uri
            )
            await self._after_failure(activation.record, entry, error)
        return await self._ordinary_read(connection, parsed)

    async def _dynamic_read(
        self, connection: _Connection, activation: Activation, uri: str
    ) -> ContextBlock:
        entry = activation.entry
        assert entry is not None
        if uri != str(entry.root):
            try:
                return await self._read_skill_file(activation.record, entry, uri)
            except ServerRejected:
                if not self._has_directory_read(connection):
                    raise
        return await self._live_directory(connection, activation.record.origin, uri)

    def _has_directory_read(self, connection: _Connection) -> bool:
        return connection.skills and connection.client.capability().directory_read

    async def _live_directory(
        self, connection: _Connection, origin: Origin, uri: str
    ) -> ContextBlock:
        """A directory as the server lists it now: untrusted, direct children only."""
        prefix = uri + "/"
        children = [
            (child.uri.removeprefix(prefix), child.is_directory)
            for child in await connection.client.read_directory(uri)
            # Anything but a direct child is malformed, and not shown as one.
            if child.uri.startswith(prefix)
            and "/" not in child.uri.removeprefix(prefix)
            and child.uri != prefix
        ]
        return self._emit(directory_block(origin=origin, uri=uri, children=children))

    async def _check_cross_origin(self, server: str, uri: str) -> None:
        acting = tuple(
            sorted({a.record.origin.label for a in self._active.values() if a.record.origin.is_mcp})
        )
        if not acting or server in acting:
            return
        request = CrossOriginRequest(acting=acting, target=server, uri=uri)
        if await self.cross_origin.decide(request) is not Decision.APPROVE:
            raise CrossOriginDenied(
                f"a read against server {server!r} while acting on skills from "
                f"{', '.join(repr(a) for a in acting)} needs approval naming both servers",
                server=server,
                uri=uri,
            )

    async def _skill_directory(
        self, connection: _Connection, activation: Activation, uri: str
    ) -> ContextBlock:
        """A directory of an active skill, answered from the pinned entry.

        A live directory read may show children the entry does not list (the skill
        changed); those are never shown as the skill's, only counted.
        """
        entry = activation.entry
        assert entry is not None
        prefix = uri + "/"
        children: dict[str, bool] = {}
        for member in entry.manifest:
            if member.startswith(prefix):
                head, slash, _ = member[len(prefix) :].partition("/")
                children[head] = children.get(head, False) or bool(slash)
        hidden = 0
        if self._has_directory_read(connection):
            live = await connection.client.read_directory(uri)
            known = {prefix + name for name in children}
            hidden = sum(1 for child in live if child.uri not in known)
        block = directory_block(
            origin=activation.record.origin,
            uri=uri,
            children=sorted(children.items()),
            hidden=hidden,
        )
        return self._emit(block)

    async def _ordinary_read(self, connection: _Connection, uri: ResourceUri) -> ContextBlock:
        """A read that is not part of an active skill: content, never an activation."""
        label = connection.client.label
        origin = self.registry.origin(label)
        text = str(uri)
        item = next(
            (
                record.entry.manifest[text]
                for record in self.registry.records()
                if record.origin.label == label
                and record.entry is not None
                and text in record.entry.manifest
            ),
            None,
        )
        if item is not None:
            verified = await self._verified(connection, item)
            block = await _off_loop(resource_block)(
                origin=origin, uri=text, data=verified.data, verified=True, digest=verified.digest
            )
            return self._emit(block)
        try:
            data = await self._fetch(connection, text, None)
        except ServerRejected:
            # Perhaps a directory: SEP-2640 lets read_resource route those to a listing.
            if not self._has_directory_read(connection):
                raise
            return await self._live_directory(connection, origin, text)
        block = await _off_loop(resource_block)(
            origin=origin, uri=text, data=data, verified=False, digest=sha256_digest(data)
        )
        return self._emit(block)

    # --- gates on the host's own tools ------------------------------------------------------

    async def authorize_execution(self, tool: str, *, detail: str = "") -> None:
        """Call before running a host code-execution tool the model asked for.

        While any MCP skill is active, execution needs the execution gate's explicit
        approval (deny by default); raises :class:`~skillward.errors.ExecutionDenied`.
        With no MCP skill active, this returns without asking.
        """
        acting = tuple(sorted(k for k, a in self._active.items() if a.record.origin.is_mcp))
        if not acting:
            return
        request = ExecutionRequest(tool=tool, acting=acting, detail=detail)
        if await self.execution.decide(request) is not Decision.APPROVE:
            labels = sorted({key.origin for key in acting})
            raise ExecutionDenied(
                f"running {tool!r} while acting on skills from {', '.join(map(repr, labels))} "
                "needs explicit approval for those skills",
                server=labels[0],
                uri=acting[0].locator,
            )

    # --- tools for the model ---------------------------------------------------------------

    async def read_skill_tool(self, name: str) -> str:
        """``read_skill``: the activated skill's block, or an error block the model can read."""
        try:
            return (await self.activate(name)).block.text()
        except SkillwardError as error:
            return self._emit(error_block(error)).text()

    async def read_resource_tool(self, server: str, uri: str) -> str:
        """``read_resource``: a verified, origin-tagged read, or an error block."""
        try:
            return (await self.read_resource(server, uri)).text()
        except SkillwardError as error:
            origin = None
            with contextlib.suppress(UnknownServer):
                origin = self.registry.origin(server)
            return self._emit(error_block(error, origin=origin)).text()

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The tools to register with the model; ``read_skill`` takes only catalog refs."""
        read_skill = dict(TOOL_SCHEMAS["read_skill"])
        refs = [item.ref for item in self.catalog()]
        read_skill["inputSchema"] = {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": refs}},
            "required": ["name"],
        }
        return [read_skill, TOOL_SCHEMAS["read_resource"]]
