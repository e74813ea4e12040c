"""The read paths of one session: a skill's file by path (``read_file``), the model's
``read_skill_file`` (a file a loaded skill lists, by its listed path) and its
``read_resource``. A read under an active skill is held to its pinned entry and
verified; a file of a skill that is not active is refused; any other resource is an
ordinary read, asked through the cross-origin gate whenever another server's text is in
context.
"""

from __future__ import annotations

import logging

from skillward.core.context import ContextBlock, directory_block, file_block, resource_block
from skillward.core.errors import (
    IntegrityError,
    ServerRejected,
    SkillNotActive,
    UnlistedResource,
    UsageError,
)
from skillward.core.origins import Origin
from skillward.core.registry import SkillRecord
from skillward.core.uris import ResourceUri, parse_uri, resolve_reference
from skillward.core.verify import manifest_item, sha256_digest
from skillward.core.wire import SkillEntry
from skillward.edge._local import read_local_file
from skillward.host._activation import Activator
from skillward.host._connections import Connection
from skillward.host._fetch import off_loop
from skillward.host._gates import Gates
from skillward.host._shared import Shared
from skillward.host._window import ActingWindow
from skillward.host.types import Activation

__all__ = ["Reads"]

logger = logging.getLogger("skillward")


class Reads:
    """What one session reads: skills' files and other resources."""

    def __init__(
        self, shared: Shared, window: ActingWindow, activator: Activator, gates: Gates
    ) -> None:
        self._shared = shared
        self._fetcher = shared.fetcher
        self._connections = shared.connections
        self._window = window
        self._activator = activator
        self._gates = gates

    async def read_file(self, reference: str, path: str) -> ContextBlock:
        """A file of a skill by a path relative to its root: held to the pinned entry
        while the skill is active, else to its listing entry (and the gates)."""
        self._window.check_open()
        record = await self._shared.lookup(reference)
        async with self._activator.lock(record):
            return await self._read_file(record, path)

    async def _read_file(self, record: SkillRecord, path: str) -> ContextBlock:
        if not record.origin.is_mcp:
            shown, data = read_local_file(record, path, limits=self._shared.limits)
            block = await off_loop(file_block)(
                origin=record.origin,
                uri=shown,
                digest=sha256_digest(data),
                data=data,
                verified=False,
            )
            return self._window.emit(block)
        activation = self._window.get(record.key)
        entry: SkillEntry | None = record.entry
        if activation is not None and activation.entry is not None:
            entry = activation.entry
            if activation.ended is not None:
                raise self._activator.ended(activation, str(resolve_reference(entry.root, path)))
        assert entry is not None
        uri = str(resolve_reference(entry.root, path))
        if not entry.is_dynamic and uri not in entry.manifest:
            raise self._unlisted(record, entry, uri)
        if activation is None:
            # What the policy refuses to load, it refuses to read from too.
            self._shared.allowed_request(record)
            # Not a file of an active skill: the same origin binding as read_resource.
            await self._gates.check_cross_origin(record.origin.label, uri)
        return await self._read_skill_file(record, entry, uri)

    async def read_listed_file(self, record: SkillRecord, path: str) -> ContextBlock:
        """The model's ``read_skill_file``: a file of a skill loaded in this session, found
        by ``path`` among the paths its held manifest lists, compared exactly (T49).

        ``path`` only selects a listed file: it never becomes a URI or a path itself, so
        ``..``, encoded separators, absolute paths and URIs read nothing. A skill not
        loaded here, or whose content ended, reads nothing either.
        """
        self._window.check_open()
        read_skill = self._window.tools.read_skill
        async with self._activator.lock(record):
            ref = self._shared.registry.qualified_ref(record)
            label, locator = record.origin.label, record.key.locator
            activation = self._window.get(record.key)
            if activation is None:
                raise SkillNotActive(
                    f"skill {ref!r} is not loaded in this session; call {read_skill} with its "
                    "ref first",
                    server=label,
                    uri=locator,
                    local=not record.origin.is_mcp,
                )
            if activation.ended is not None:
                raise self._activator.ended(activation, locator)
            entry = activation.entry
            if entry is None:  # a local skill: the files its block listed
                if path not in activation.block.files:
                    raise self._not_at_path(record, ref)
                return await self._read_file(record, path)
            uri = entry.uri_by_path.get(path)  # the held entry's map, made once
            if uri is None:
                raise self._not_at_path(record, ref)
            if uri == entry.uri:
                raise UsageError(
                    f"SKILL.md of skill {ref!r} is loaded with {read_skill}", server=label
                )
            return await self._read_skill_file(record, entry, uri)

    @staticmethod
    def _not_at_path(record: SkillRecord, ref: str) -> UnlistedResource:
        return UnlistedResource(
            f"skill {ref!r} lists no file at that path; pass a path exactly as its skill "
            "block lists it",
            server=record.origin.label,
            uri=record.key.locator,
            local=not record.origin.is_mcp,
        )

    def _unlisted(self, record: SkillRecord, entry: SkillEntry, uri: str) -> UnlistedResource:
        files = entry.file_paths
        shown = ", ".join(files[:20]) + (f", and {len(files) - 20} more" if len(files) > 20 else "")
        return UnlistedResource(
            f"skill {self._shared.registry.qualified_ref(record)!r} does not list this file; "
            f"it lists {shown}",
            server=record.origin.label,
            uri=uri,
        )

    async def _read_skill_file(
        self, record: SkillRecord, entry: SkillEntry, uri: str
    ) -> ContextBlock:
        label = record.origin.label
        connection = self._shared.connection(label)
        if entry.is_dynamic:
            self._fetcher.check_dynamic(record)
            data = await self._fetcher.fetch_dynamic(connection, record, uri, self._window)
            block = await off_loop(file_block)(
                origin=record.origin, uri=uri, digest=sha256_digest(data), data=data, verified=False
            )
            return self._window.emit(block)
        try:
            item = manifest_item(entry, uri, server=label)
            verified = await self._fetcher.verified(connection, item, entry.uri)
        except IntegrityError as error:
            await self._activator.after_failure(record, entry, error)
        block = await off_loop(file_block)(
            origin=record.origin, uri=uri, digest=verified.digest, data=verified.data, verified=True
        )
        return self._window.emit(block)

    async def read_resource(self, server: str, uri: str) -> ContextBlock:
        """The model's ``read_resource(server, uri)`` (see :meth:`SkillHost.read_resource`)."""
        self._window.check_open()
        connection = self._shared.connection(server)
        parsed = parse_uri(uri, max_length=self._shared.limits.max_uri_length)
        async with self._window.lock(server):
            return await self._read_resource(connection, parsed)

    async def _read_resource(self, connection: Connection, parsed: ResourceUri) -> ContextBlock:
        server = connection.label
        uri = str(parsed)
        acting = self._window.acting_on(server)
        for activation in acting:
            entry = activation.entry
            assert entry is not None
            if not (parsed.is_within(entry.root) or uri == str(entry.root)):
                continue
            if activation.ended is not None:
                raise self._activator.ended(activation, uri)
            if entry.is_dynamic:
                # No manifest to hold it to: a live read, unverified and budgeted.
                return await self._dynamic_read(connection, activation, uri)
            if uri in entry.manifest:
                return await self._read_skill_file(activation.record, entry, uri)
            if uri == str(entry.root) or any(m.startswith(uri + "/") for m in entry.manifest):
                return await self._skill_directory(connection, activation, uri)
            # Nothing was fetched: a URI the held entry does not list is never read.
            raise self._unlisted(activation.record, entry, uri)
        self._refuse_skill_files(server, parsed)
        await self._gates.check_cross_origin(server, uri)
        return await self._ordinary_read(connection, parsed)

    def _refuse_skill_files(self, server: str, parsed: ResourceUri) -> None:
        """Files of a skill that is not active are not read through the model's tool."""
        for record in self._shared.registry.records():
            entry = record.entry
            if entry is None or not (
                parsed.is_within(entry.root) or str(parsed) == str(entry.root)
            ):
                continue
            if record.origin.label == server:
                ref = self._shared.registry.qualified_ref(record)
                raise SkillNotActive(
                    f"this is a file of skill {ref!r}, which is not loaded; load it first",
                    server=server,
                    uri=str(parsed),
                )
            raise UnlistedResource(
                f"this URI belongs to a skill of server {record.origin.label!r}, not of "
                f"server {server!r}; nothing was read",
                server=server,
                uri=str(parsed),
                hint=f"Read it from server {record.origin.label!r} once that skill is loaded.",
            )

    async def _dynamic_read(
        self, connection: Connection, activation: Activation, uri: str
    ) -> ContextBlock:
        entry = activation.entry
        assert entry is not None
        if uri != str(entry.root):
            try:
                return await self._read_skill_file(activation.record, entry, uri)
            except ServerRejected:
                if not connection.directory_read:
                    raise
        return await self._live_directory(connection, activation.record.origin, uri)

    async def _live_directory(
        self, connection: Connection, origin: Origin, uri: str
    ) -> ContextBlock:
        """A directory as the server lists it now: untrusted, direct children only."""
        prefix = uri + "/"
        listed = await self._connections.call(connection, lambda c: c.read_directory(uri), uri=uri)
        children = [
            (child.uri.removeprefix(prefix), child.is_directory)
            for child in listed
            # Anything but a direct child is malformed, and not shown as one.
            if child.uri.startswith(prefix)
            and "/" not in child.uri.removeprefix(prefix)
            and child.uri != prefix
        ]
        return self._window.emit(directory_block(origin=origin, uri=uri, children=children))

    async def _skill_directory(
        self, connection: Connection, activation: Activation, uri: str
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
        if connection.directory_read:
            live = await self._connections.call(
                connection, lambda c: c.read_directory(uri), uri=uri
            )
            known = {prefix + name for name in children}
            hidden = sum(1 for child in live if child.uri not in known)
        block = directory_block(
            origin=activation.record.origin,
            uri=uri,
            children=sorted(children.items()),
            hidden=hidden,
        )
        return self._window.emit(block)

    async def _ordinary_read(self, connection: Connection, uri: ResourceUri) -> ContextBlock:
        """A read that is no skill's file: content, never an activation, never verified."""
        label = connection.label
        origin = self._shared.registry.origin(label)
        text = str(uri)
        try:
            data = await self._fetcher.fetch(connection, text, None)
        except ServerRejected:
            # Perhaps a directory: SEP-2640 lets read_resource route those to a listing.
            if not connection.directory_read:
                raise
            return await self._live_directory(connection, origin, text)
        block = await off_loop(resource_block)(
            origin=origin, uri=text, data=data, verified=False, digest=sha256_digest(data)
        )
        return self._window.emit(block)
