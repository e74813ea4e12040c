"""The directory phase: each skill's directories walked with
``resources/directory/read`` against its resources, prefix directories, and reads of
what is no directory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio

from skillward.check._audit import (
    INVALID_PARAMS,
    MAX_FAILURES_IN_A_ROW,
    MAX_PROBES,
    Audit,
    quote,
)
from skillward.core._fields import DIRECTORY_MIME_TYPE
from skillward.core._results import directory_violations
from skillward.core.errors import (
    ServerRejected,
)
from skillward.core.wire import SkillEntry
from skillward.edge._paging import Budget


@dataclass
class _Walk:
    """One skill's directory walk: the directories its manifest implies, what is left to
    read, and the files found."""

    entry: SkillEntry
    directories: set[str]
    queue: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.queue.append(str(self.entry.root))


async def directories(audit: Audit, entries: list[SkillEntry]) -> None:
    modern = audit.client.modern
    manifests = [entry for entry in entries if not entry.is_dynamic]
    failed = 0
    for index, entry in enumerate(manifests):
        if failed >= MAX_FAILURES_IN_A_ROW:
            audit.gave_up("SW-DIR-001", "resources/directory/read", len(manifests) - index)
            break
        failed = 0 if await _walk(audit, entry, modern) else failed + 1
    roots = {str(entry.root) for entry in entries}
    prefixes = sorted(
        {
            f"{entry.root.scheme}://" + "/".join(entry.root.segments[:depth])
            for entry in entries
            for depth in range(1, len(entry.root.segments))
        }
        - roots
    )
    for prefix in prefixes[:MAX_PROBES]:
        try:
            await audit.call(
                partial(audit.client.read_directory_raw, prefix, None, Budget(), 0),
                what="resources/directory/read of a prefix directory",
                rejected=None,
            )
        except ServerRejected as error:
            audit.add(
                "SW-DIR-002",
                f"resources/directory/read of a prefix directory failed: {error.message}",
                uri=prefix,
            )
    if manifests:
        sample = manifests[0]
        probes = [
            (sample.uri, "a file (SKILL.md)"),
            (f"{sample.root}/skillward-check-missing-{audit.token}", "an unknown URI"),
        ]
        for uri, what in probes:
            try:
                await audit.call(
                    partial(audit.client.read_directory_raw, uri, None, Budget(), 0),
                    what=f"resources/directory/read of {what}",
                    rejected=None,
                )
            except ServerRejected as error:
                if error.code != INVALID_PARAMS:
                    audit.add(
                        "SW-DIR-007",
                        f"a directory read of {what} got error {error.code}, not {INVALID_PARAMS}",
                        uri=uri,
                    )
                continue
            audit.add(
                "SW-DIR-007", f"a directory read of {what} was answered with a listing", uri=uri
            )


async def _walk(audit: Audit, entry: SkillEntry, modern: bool) -> bool:
    """Walk ``entry``'s directories from its root, against its manifest; whether the
    server answered the walk's reads."""
    root = str(entry.root)
    manifest = set(entry.manifest)
    directories: set[str] = set()
    for uri in manifest:  # each is <root>/<path>: the entry was accepted
        parts = uri[len(root) + 1 :].split("/")
        directories.update(root + "/" + "/".join(parts[:depth]) for depth in range(1, len(parts)))
    walk = _Walk(entry, directories)
    queue = walk.queue
    files = walk.files
    visited: set[str] = set()
    budget = Budget()
    children = 0
    while queue and len(visited) <= len(directories) + 1:
        directory = queue.pop()
        if directory in visited:
            continue
        visited.add(directory)
        cursor: str | None = None
        cursors: set[str] = set()
        listed: set[str] = set()
        while True:
            await anyio.lowlevel.checkpoint()
            raw = await audit.call(
                partial(audit.client.read_directory_raw, directory, cursor, budget, children),
                what="resources/directory/read",
                rejected="SW-DIR-001",
                skill=entry.uri,
                uri=directory,
            )
            if raw is None:
                return False
            for found in directory_violations(raw, modern=modern, limits=audit.limits):
                if found.rule == "SW-DIR-009":
                    audit.violation(found, skill=None)
                else:
                    audit.violation(found, skill=entry.uri)
            resources = raw.get("resources")
            for child in resources if isinstance(resources, list) else ():
                if not isinstance(child, Mapping) or not isinstance(child.get("uri"), str):
                    continue
                children += 1
                _child(audit, walk, directory, child, listed)
            next_cursor = raw.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                break
            if next_cursor in cursors:
                audit.add(
                    "SW-DIR-008",
                    "resources/directory/read repeated a cursor",
                    skill=entry.uri,
                    uri=directory,
                )
                break
            cursors.add(next_cursor)
            cursor = next_cursor
    for uri in sorted(manifest - files)[:20]:
        audit.add(
            "SW-DIR-006",
            "a file the skill's resources list was not found walking its directories",
            skill=entry.uri,
            uri=uri,
        )
    for uri in sorted(files - manifest)[:20]:
        audit.add(
            "SW-RES-006",
            "a directory read serves a file under this skill's root that its resources do not list",
            skill=entry.uri,
            uri=uri,
        )
    return True


def _child(
    audit: Audit, walk: _Walk, directory: str, child: Mapping[str, Any], listed: set[str]
) -> None:
    entry = walk.entry
    uri: str = child["uri"]
    name = uri[len(directory) + 1 :]
    if not uri.startswith(directory + "/") or not name or "/" in name:
        audit.add(
            "SW-DIR-004",
            f"the directory read of {quote(directory, 300)} lists a child that is not "
            "a direct child",
            skill=entry.uri,
            uri=uri,
        )
        return
    if uri in listed:
        audit.add(
            "SW-DIR-004",
            f"the directory read of {quote(directory, 300)} lists a child twice",
            skill=entry.uri,
            uri=uri,
        )
        return
    listed.add(uri)
    is_directory = child.get("mimeType") == DIRECTORY_MIME_TYPE
    if uri in walk.directories and not is_directory:
        audit.add(
            "SW-DIR-005",
            'a subdirectory is not listed with mimeType "inode/directory"',
            skill=entry.uri,
            uri=uri,
        )
    elif is_directory and uri in entry.manifest:
        audit.add(
            "SW-DIR-005",
            'a file is listed with mimeType "inode/directory"',
            skill=entry.uri,
            uri=uri,
        )
    if is_directory or uri in walk.directories:
        walk.queue.append(uri)
    else:
        walk.files.add(uri)
