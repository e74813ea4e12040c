"""The read phase: every listed file read (one at a time) and verified as a host verifies
it, SKILL.md against its entry, a resource no server serves, and ``resources/list``
against the skills' resources."""

from __future__ import annotations

from collections.abc import Mapping
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
from skillward.check._content import scan_text, unlisted_links
from skillward.check._frameworks import FASTMCP_MANIFEST, fastmcp_manifest
from skillward.check._hygiene import flags, meta_keys
from skillward.core._fields import DIRECTORY_MIME_TYPE
from skillward.core.context import file_block
from skillward.core.errors import (
    FrontmatterError,
    FrontmatterMismatch,
    IntegrityError,
    OriginError,
    ServerRejected,
    TransportError,
)
from skillward.core.frontmatter import key_lines
from skillward.core.origins import Origin
from skillward.core.verify import check_skill_md, verify_file, verify_skill_md
from skillward.core.wire import SkillEntry
from skillward.edge._paging import Budget

#: Lines a SKILL.md body stays under (Agent Skills).
MAX_BODY_LINES = 500
#: The most of a SKILL.md read only to find the lines of its frontmatter keys.
_LOCATE_BYTES = 1024 * 1024


async def reads(audit: Audit, entries: list[SkillEntry]) -> None:
    failed = 0
    uris = [(entry, uri) for entry in entries for uri in entry.manifest or (entry.uri,)]
    for index, (entry, uri) in enumerate(uris):
        await anyio.lowlevel.checkpoint()
        if failed >= MAX_FAILURES_IN_A_ROW:
            audit.gave_up("SW-READ-001", "resources/read", len(uris) - index)
            return
        done = await (
            _read_dynamic(audit, entry) if entry.is_dynamic else _read_file(audit, entry, uri)
        )
        failed = 0 if done else failed + 1


async def _read_file(audit: Audit, entry: SkillEntry, uri: str) -> bool:
    """Read and check one listed file; whether the server answered with content."""
    item = entry.manifest[uri]
    skill_md = uri == entry.uri
    content = await audit.call(
        lambda: audit.client.read_resource_content(uri, max_bytes=item.size),
        what="resources/read",
        rejected="SW-READ-001",
        skill=entry.uri,
        uri=uri,
    )
    if content is None:
        return False
    meta_keys(audit, content.meta, skill=entry.uri, uri=None, what="the read contents of its files")
    try:
        verify_file(item, content.data)
    except IntegrityError as error:
        audit.add(error.rule or "SW-READ-006", error.message, skill=entry.uri, uri=uri)
        return True
    audit.files += 1
    if _looks_executable(entry, uri, content.data):
        audit.add(
            "SW-INFO-001",
            "the skill ships a file that looks executable; hosts ask before running it",
            skill=entry.uri,
            uri=uri,
        )
    block = file_block(
        origin=Origin("mcp", "check"),
        uri=uri,
        digest=item.digest,
        data=content.data,
        verified=True,
    )
    flags(audit, block.flags, skill=entry.uri, uri=uri, what="the file")
    text = _text(content.data)
    if text is not None:
        for hit in scan_text(text):
            audit.add(hit.rule, hit.message, skill=entry.uri, uri=uri, line=hit.line)
    if not skill_md:
        return True
    if not content.text:
        audit.add("SW-READ-002", "SKILL.md was served as a blob, not as text", skill=entry.uri)
    if content.mime_type != "text/markdown":
        shown = quote(content.mime_type) if content.mime_type else "none"
        audit.add(
            "SW-META-001",
            f"SKILL.md was served with mimeType {shown}, not text/markdown",
            skill=entry.uri,
        )
    _skill_md(audit, entry, content.data)
    return True


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # binary: no text to read


def _skill_md(audit: Audit, entry: SkillEntry, data: bytes) -> None:
    audit.key_lines[entry.uri] = key_lines(data, limits=audit.limits)
    try:
        document = check_skill_md(entry, data, limits=audit.limits)
    except FrontmatterMismatch as error:
        audit.add(error.rule or "SW-FM-010", error.message, skill=entry.uri)
        return
    except FrontmatterError as error:
        audit.add(error.rule or "SW-FM-011", error.message, skill=entry.uri)
        return
    body = document.body
    # The body is SKILL.md's last part: its first line follows every line end before it.
    first_line = data.count(b"\n", 0, len(data) - len(body.encode("utf-8"))) + 1
    for hit in unlisted_links(body, first_line, entry.root, entry.manifest):
        audit.add(hit.rule, hit.message, skill=entry.uri, line=hit.line)
    lines = body.count("\n") + (0 if body.endswith("\n") else 1)
    if lines >= MAX_BODY_LINES:
        audit.add(
            "SW-FM-012",
            f"the SKILL.md body is {lines} lines; keep it under {MAX_BODY_LINES}",
            skill=entry.uri,
        )


async def _read_dynamic(audit: Audit, entry: SkillEntry) -> bool:
    content = await audit.call(
        lambda: audit.client.read_resource_content(
            entry.uri, max_bytes=audit.limits.max_skill_bytes
        ),
        what="resources/read",
        rejected="SW-READ-001",
        skill=entry.uri,
    )
    if content is None:
        return False
    try:
        verify_skill_md(entry, content.data, limits=audit.limits)
    except (FrontmatterError, IntegrityError) as error:
        audit.add(error.rule or "SW-FM-010", error.message, skill=entry.uri)
        return True
    audit.files += 1
    return True


async def field_lines(audit: Audit) -> None:
    """The lines of the frontmatter keys findings are about, for the skills whose
    SKILL.md was not read (an entry a host refuses): read once each, only for this."""
    wanted = {audit.findings[index].skill for index, _ in audit.fields}
    for skill in sorted(s for s in wanted if s is not None and s not in audit.key_lines)[
        :MAX_PROBES
    ]:
        try:
            data = await audit.client.read_resource(skill, max_bytes=_LOCATE_BYTES)
        except (ServerRejected, OriginError):
            continue
        except TransportError:
            return
        audit.key_lines[skill] = key_lines(data, limits=audit.limits)


async def read_probe(audit: Audit, entries: list[SkillEntry]) -> None:
    base = str(entries[0].root) if entries else f"skill://skillward-check-{audit.token}"
    uri = f"{base}/skillward-check-missing-{audit.token}.md"
    try:
        contents = await audit.call(
            lambda: audit.client.read_resource_contents(uri),
            what="resources/read of a resource the server does not serve",
            rejected=None,
        )
    except ServerRejected as error:
        if error.code != INVALID_PARAMS:
            audit.add(
                "SW-READ-008",
                f"a read of an unknown resource got error {error.code}, not {INVALID_PARAMS}",
                uri=uri,
            )
        return
    if contents is None:
        return
    if not contents:
        audit.add("SW-READ-007", "a read of an unknown resource got empty contents", uri=uri)
    else:
        audit.add("SW-READ-008", "a read of an unknown resource got content", uri=uri)


async def resource_list(audit: Audit, entries: list[SkillEntry]) -> None:
    by_md = {entry.uri: entry for entry in entries}
    roots = {str(entry.root): entry for entry in entries if not entry.is_dynamic}
    budget = Budget()
    cursor: str | None = None
    cursors: set[str] = set()
    while True:
        await anyio.lowlevel.checkpoint()
        try:
            raw = await audit.call(
                partial(audit.client.list_resources_raw, cursor, budget),
                what="resources/list",
                rejected=None,
            )
        except ServerRejected:
            return  # a server need not list its skill files
        if raw is None:
            return
        resources = raw.get("resources")
        for resource in resources if isinstance(resources, list) else ():
            if isinstance(resource, Mapping) and isinstance(resource.get("uri"), str):
                _listed_resource(audit, resource, by_md, roots)
        next_cursor = raw.get("nextCursor")
        if not isinstance(next_cursor, str) or not next_cursor or next_cursor in cursors:
            return
        cursors.add(next_cursor)
        cursor = next_cursor


def _listed_resource(
    audit: Audit,
    resource: Mapping[str, Any],
    by_md: Mapping[str, SkillEntry],
    roots: Mapping[str, SkillEntry],
) -> None:
    uri: str = resource["uri"]
    if resource.get("mimeType") == DIRECTORY_MIME_TYPE:
        return
    enclosing = _enclosing(uri, roots)
    meta = resource.get("_meta")
    if enclosing:
        # Once per skill: a server names its keys the same way for every file.
        meta_keys(
            audit,
            meta if isinstance(meta, Mapping) else None,
            skill=enclosing[-1].uri,
            uri=None,
            what="the resources/list entries of its files",
        )
    entry = by_md.get(uri)
    if entry is not None:
        if resource.get("name") != entry.name:
            audit.add(
                "SW-META-002",
                "SKILL.md's resources/list entry is not named by the frontmatter name",
                skill=entry.uri,
            )
        if resource.get("description") != entry.description:
            audit.add(
                "SW-META-003",
                "SKILL.md's resources/list description is not the frontmatter description",
                skill=entry.uri,
            )
        mime = resource.get("mimeType")
        if isinstance(mime, str) and mime != "text/markdown":
            audit.add(
                "SW-META-001",
                f"SKILL.md is listed with mimeType {quote(mime)}, not text/markdown",
                skill=entry.uri,
            )
    generated = next((o for o in enclosing if fastmcp_manifest(resource, str(o.root))), None)
    if generated is not None:
        if uri not in generated.manifest:
            audit.add(
                "SW-RES-008",
                "resources/list serves FastMCP's _manifest under this skill's root",
                skill=generated.uri,
                uri=uri,
                cause=FASTMCP_MANIFEST,
            )
        return
    for owner in enclosing:
        if uri not in owner.manifest:
            audit.add(
                "SW-RES-006",
                "resources/list serves a resource under this skill's root that its "
                "resources do not list",
                skill=owner.uri,
                uri=uri,
            )


def _enclosing(uri: str, roots: Mapping[str, SkillEntry]) -> list[SkillEntry]:
    """The entries whose root ``uri`` lies under, outermost first."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return []
    parts = rest.split("/")
    found = []
    for depth in range(1, len(parts)):
        entry = roots.get(f"{scheme}://" + "/".join(parts[:depth]))
        if entry is not None:
            found.append(entry)
    return found


def _looks_executable(entry: SkillEntry, uri: str, data: bytes) -> bool:
    path = uri[len(str(entry.root)) + 1 :]
    return path.startswith("scripts/") or data.startswith(b"#!")
