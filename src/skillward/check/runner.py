"""The audit: one server, connected as a host connects it, checked against every rule.

:func:`check_server` drives the client edge's raw, bounded methods: the capability,
every ``skills/list`` page (twice, for a stable order), ``skills/get`` for every listed
skill, every listed file (one at a time), ``resources/list``, directory reads when
declared, and a few probes with URIs no server serves. What it finds is decided by the
verifier core's own checks (``entry_violations``, ``verify_file``, ``parse_skill_md``,
the context blocks' neutralisation): the code the host refuses with.

It approves nothing, caches nothing, and keeps no content: a finding names a rule, the
skill and file it is about, and what is wrong, never what a file says. Every request is
bounded by ``Limits`` (its deadline, its byte and count caps), the whole audit by one
deadline, and the findings kept by :data:`MAX_FINDINGS`.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import anyio

from skillward.check.rules import Severity, rule
from skillward.core.config import Limits
from skillward.core.context import CatalogItem, catalog_block, file_block
from skillward.core.errors import (
    DeadlineExceeded,
    FrontmatterError,
    FrontmatterMismatch,
    IntegrityError,
    OriginError,
    ServerRejected,
    SkillwardError,
    TransportError,
    printable,
)
from skillward.core.frontmatter import allowed_tools, check_frontmatter, json_equal, parse_skill_md
from skillward.core.origins import Origin
from skillward.core.rules import Violation
from skillward.core.uris import SKILL_FILE, fold_collisions
from skillward.core.verify import verify_file, verify_skill_md
from skillward.core.wire import (
    DIRECTORY_MIME_TYPE,
    SkillEntry,
    capability_violations,
    directory_violations,
    entry_violations,
    get_violations,
    page_violations,
    parse_entry,
)
from skillward.edge.client import Budget, SkillsClient
from skillward.edge.servers import ServerSpec

__all__ = ["MAX_FINDINGS", "Finding", "ServerReport", "check_server"]

#: Findings kept for one server; past it they are only counted.
MAX_FINDINGS = 2000
#: Pages the conformance suite follows (the Inspector follows 64).
PORTABLE_PAGES = 50
#: Lines a SKILL.md body stays under (Agent Skills).
MAX_BODY_LINES = 500
#: Skill URIs taken from the server's instructions, and prefix directories probed.
MAX_PROBES = 50
#: Characters of the instructions scanned for skill URIs.
MAX_INSTRUCTIONS = 64 * 1024
#: Requests of one step (skills/get of each skill, reads of each file) that fail in a row
#: before the step gives up: a server that serves none of them is not asked thousands
#: of times.
MAX_FAILURES_IN_A_ROW = 20
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

_INSTRUCTION_URI_RE = re.compile(r"[a-z][a-z0-9+.\-]*://[^\s\"'<>()\[\]`]+/SKILL\.md")
#: A _meta key with a reverse-domain prefix, as the conformance suite reads one.
_META_PREFIX_RE = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+/", re.IGNORECASE)
_INVISIBLE_FLAG = "invisible-characters"
_MARKER_FLAG = "markers-neutralised"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule. ``skill`` is the skill's URI (None: the server as a whole),
    ``uri`` the file or other resource it is about when not the skill itself. Strings
    are as the server sent them, bounded; ``message`` is escaped and quotes no content."""

    rule: str
    severity: Severity
    skill: str | None
    uri: str | None
    message: str


@dataclass(frozen=True, slots=True)
class ServerReport:
    """What checking one server found, and whether the check ran to its end."""

    label: str
    target: str
    protocol: str | None
    findings: tuple[Finding, ...]
    #: Skills listed, and files read and verified.
    skills: int = 0
    files: int = 0
    #: Findings past :data:`MAX_FINDINGS`, counted but not kept.
    omitted: int = 0
    #: Why the check stopped early: the server could not be reached, or stopped answering
    #: within the deadline. None when it ran to its end (or stopped only because the
    #: connection ended after a message past the host's caps, which is a finding).
    error: SkillwardError | None = None

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)


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


class _Stop(Exception):
    """The connection ended after a refused message: nothing more can be asked."""


@dataclass
class _Listed:
    """The listing, as the audit keeps it: URIs in order, and the entries a host accepts."""

    uris: list[str] = field(default_factory=list)
    entries: dict[str, SkillEntry] = field(default_factory=dict)
    #: (rule, message, uri) of each listed entry's violations, so that skills/get is
    #: blamed only for what its entry breaks beyond the listing's.
    broken: dict[str, set[tuple[str, str, str | None]]] = field(default_factory=dict)
    complete: bool = True


def _bounded(text: str | None, limit: int = 2048) -> str | None:
    return None if text is None else text[:limit]


def _quote(text: str, limit: int = 120) -> str:
    """A server string for a message: bounded, escaped, quoted."""
    return "'" + printable(text, limit=limit) + "'"


class _Audit:
    """One server's audit: the findings, and the steps that find them."""

    def __init__(self, client: SkillsClient, limits: Limits) -> None:
        self.client = client
        self.limits = limits
        self.findings: list[Finding] = []
        self.seen: set[tuple[str, str | None, str | None, str]] = set()
        self.omitted = 0
        self.files = 0
        self.skills = 0
        #: The connection ended after a message past the host's caps.
        self.stopped = False
        self.token = secrets.token_hex(6)

    # --- recording ----------------------------------------------------------------------

    def add(
        self, rule_id: str, message: str, *, skill: str | None = None, uri: str | None = None
    ) -> None:
        text = printable(message, limit=600)
        key = (rule_id, skill, uri, text)
        if key in self.seen:
            return
        if len(self.findings) >= MAX_FINDINGS:
            self.omitted += 1
            return
        self.seen.add(key)
        severity = rule(rule_id).severity
        uri = None if uri == skill else uri
        self.findings.append(Finding(rule_id, severity, _bounded(skill), _bounded(uri), text))

    def violation(self, found: Violation, *, skill: str | None, prefix: str = "") -> None:
        self.add(found.rule, prefix + found.message, skill=skill, uri=found.uri)

    async def call(
        self,
        operation: Callable[[], Awaitable[T]],
        *,
        what: str,
        rejected: str | None,
        skill: str | None = None,
        uri: str | None = None,
    ) -> T | None:
        """Run one request. A JSON-RPC error is a finding of ``rejected`` (or passed on
        when None); a result the edge refused is a finding of its own rule. Failures of
        the transport stop the audit."""
        try:
            return await operation()
        except ServerRejected as error:
            if rejected is None:
                raise
            # skills/list and skills/get not found: the extension's methods are missing.
            missing = error.code == METHOD_NOT_FOUND and what.startswith("skills/")
            rule_id = "SW-CAP-005" if missing else rejected
            self.add(rule_id, f"{what} failed: {error.message}", skill=skill, uri=uri)
            return None
        except OriginError as error:
            self.add(error.rule or "SW-WIRE-001", f"{what}: {error.message}", skill=skill, uri=uri)
            if self.client.ended is not None:
                raise _Stop from None
            return None
        except TransportError:
            if self.client.ended is not None:
                raise _Stop from None
            raise

    # --- the steps ----------------------------------------------------------------------

    async def run(self) -> None:
        """Every step, in order."""
        client = self.client
        setting, resources = client.declaration()
        for found in capability_violations(setting, resources=resources):
            self.violation(found, skill=None)
        if setting is None:
            return  # nothing else applies to a server without the extension
        directory_read = isinstance(setting, Mapping) and setting.get("directoryRead") is True
        listed = await self.listing()
        self.skills = len(listed.uris)
        if listed.complete and listed.uris:
            await self.second_walk(listed)
        await self.invalid_cursor()
        accepted = list(listed.entries.values())
        self.listing_rules(accepted)
        await self.gets(listed)
        await self.get_probes(accepted)
        if resources:
            await self.reads(accepted)
            await self.read_probe(accepted)
            await self.resource_list(accepted)
        if directory_read:
            await self.directories(accepted)
        await self.instructions()

    async def listing(self) -> _Listed:
        listed = _Listed()
        modern = self.client.modern
        budget = Budget()
        cursor: str | None = None
        cursors: set[str] = set()
        pages = 0
        while True:
            await anyio.lowlevel.checkpoint()
            raw = await self.call(
                partial(self.client.list_skills_raw, cursor, budget),
                what="skills/list",
                rejected="SW-LIST-001",
            )
            if raw is None:
                listed.complete = False
                break
            pages += 1
            for found in page_violations(raw, modern=modern):
                self.violation(found, skill=None)
            skills = raw.get("skills")
            if isinstance(skills, list):
                for item in skills:
                    self.entry(item, listed)
            next_cursor = raw.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                break
            if next_cursor in cursors:
                self.add("SW-LIST-002", "skills/list repeated a cursor")
                listed.complete = False
                break
            cursors.add(next_cursor)
            cursor = next_cursor
        if pages > PORTABLE_PAGES:
            self.add(
                "SW-LIST-004",
                f"the listing takes {pages} pages; the conformance suite follows "
                f"{PORTABLE_PAGES}, the Inspector 64",
            )
        return listed

    def entry(self, item: object, listed: _Listed) -> None:
        uri = item.get("uri") if isinstance(item, Mapping) else None
        skill = uri if isinstance(uri, str) else None
        found = entry_violations(item, limits=self.limits)
        for violation in found:
            self.violation(violation, skill=skill)
        if skill is None:
            return
        if skill in listed.broken or skill in listed.entries:
            self.add("SW-LIST-005", "the listing lists this skill more than once", skill=skill)
            return
        listed.uris.append(skill)
        listed.broken[skill] = {(v.rule, v.message, v.uri) for v in found}
        if not any(v.refused for v in found):
            listed.entries[skill] = parse_entry(item, limits=self.limits)

    async def second_walk(self, listed: _Listed) -> None:
        budget = Budget()
        uris: list[str] = []
        cursor: str | None = None
        cursors: set[str] = set()
        while True:
            await anyio.lowlevel.checkpoint()
            raw = await self.call(
                partial(self.client.list_skills_raw, cursor, budget),
                what="skills/list (walked again)",
                rejected="SW-LIST-010",
            )
            if raw is None:
                return
            skills = raw.get("skills")
            if isinstance(skills, list):
                uris += [
                    s["uri"]
                    for s in skills
                    if isinstance(s, Mapping) and isinstance(s.get("uri"), str)
                ]
            next_cursor = raw.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor or next_cursor in cursors:
                break
            cursors.add(next_cursor)
            cursor = next_cursor
        first = list(dict.fromkeys(listed.uris))
        again = list(dict.fromkeys(uris))
        if first != again:
            change = "other skills" if set(first) != set(again) else "another order"
            self.add(
                "SW-LIST-010",
                f"walking the listing again gave {change} ({len(again)} skills, "
                f"{len(first)} the first time)",
            )

    async def invalid_cursor(self) -> None:
        cursor = f"skillward-check-invalid-cursor-{self.token}"
        try:
            await self.call(
                lambda: self.client.list_skills_raw(cursor, Budget()),
                what="skills/list with an unknown cursor",
                rejected=None,
            )
        except ServerRejected as error:
            if error.code != INVALID_PARAMS:
                self.add(
                    "SW-LIST-011",
                    f"an unknown cursor got error {error.code}, not {INVALID_PARAMS}",
                )
            return
        self.add("SW-LIST-011", "skills/list answered a cursor it never issued with a page")

    def listing_rules(self, entries: list[SkillEntry]) -> None:
        names = Counter(entry.name for entry in entries)
        for entry in entries:
            if names[entry.name] > 1:
                self.add(
                    "SW-LIST-007",
                    f"{names[entry.name]} listed skills are named {_quote(entry.name)}",
                    skill=entry.uri,
                )
        roots = {str(entry.root): entry for entry in entries}
        for group in fold_collisions(roots):
            for member in group:
                others = ", ".join(_quote(other) for other in group if other != member)
                self.add(
                    "SW-LIST-008",
                    f"the skill path looks like {others} (case, Unicode form or percent-encoding)",
                    skill=roots[member].uri,
                )
        for entry in entries:
            self.frontmatter_hygiene(entry)
            for depth in range(1, len(entry.root.segments)):
                outer = roots.get(f"{entry.root.scheme}://" + "/".join(entry.root.segments[:depth]))
                if outer is not None:
                    self.nested(outer, entry)

    def frontmatter_hygiene(self, entry: SkillEntry) -> None:
        frontmatter = entry.frontmatter.as_dict()
        tools = allowed_tools(frontmatter)
        if tools:
            self.add(
                "SW-HYG-003",
                f"allowed-tools requests {len(tools)} tools; hosts grant none of them "
                "without a person's approval",
                skill=entry.uri,
            )
        if "hooks" in frontmatter:
            self.add(
                "SW-HYG-004",
                "the frontmatter declares hooks, which hosts never run from an MCP skill",
                skill=entry.uri,
            )
        item = CatalogItem(
            ref=entry.name,
            name=entry.name,
            description=entry.description,
            origin=Origin("mcp", "check"),
        )
        self.flags(catalog_block([item]).flags, skill=entry.uri, what="the frontmatter")

    def flags(self, flags: Iterable[str], *, skill: str, what: str, uri: str | None = None) -> None:
        for flag in flags:
            if flag.startswith(_INVISIBLE_FLAG):
                detail = flag.partition(": ")[2]
                self.add(
                    "SW-HYG-001",
                    f"{what} holds invisible or control characters ({detail}), which hosts "
                    "show to the model as [U+XXXX]",
                    skill=skill,
                    uri=uri,
                )
            elif flag.startswith(_MARKER_FLAG):
                self.add(
                    "SW-HYG-002",
                    f"{what} imitates a host's block markers (<skillward...), which hosts "
                    "neutralise",
                    skill=skill,
                    uri=uri,
                )

    def nested(self, outer: SkillEntry, inner: SkillEntry) -> None:
        self.add(
            "SW-INFO-002",
            f"nested under {_quote(outer.uri, 300)}: activating it takes its own consent",
            skill=inner.uri,
        )
        if outer.is_dynamic or inner.is_dynamic:
            return
        missing = [
            item.uri
            for item in inner.manifest.values()
            if (listed := outer.manifest.get(item.uri)) is None
            or (listed.digest, listed.size) != (item.digest, item.size)
        ]
        for uri in missing[:20]:
            self.add(
                "SW-RES-007",
                f"a file of this nested skill is not in the enclosing skill "
                f"{_quote(outer.uri, 300)}'s resources with the same digest and size",
                skill=inner.uri,
                uri=uri,
            )

    def gave_up(self, rule_id: str, what: str, left: int) -> None:
        self.add(
            rule_id,
            f"{what} failed {MAX_FAILURES_IN_A_ROW} times in a row; the other {left} were "
            "not tried",
        )

    async def gets(self, listed: _Listed) -> None:
        modern = self.client.modern
        failed = 0
        for index, uri in enumerate(listed.uris):
            await anyio.lowlevel.checkpoint()
            if failed >= MAX_FAILURES_IN_A_ROW:
                self.gave_up("SW-GET-001", "skills/get", len(listed.uris) - index)
                return
            raw = await self.call(
                partial(self.client.get_skill_raw, uri),
                what="skills/get of a listed skill",
                rejected="SW-GET-001",
                skill=uri,
            )
            if raw is None:
                failed += 1
                continue
            failed = 0
            known = listed.broken.get(uri, set())
            found = get_violations(raw, uri, modern=modern, limits=self.limits)
            for violation in found:
                if (violation.rule, violation.message, violation.uri) not in known:
                    self.violation(violation, skill=uri, prefix="skills/get: ")
            listed_entry = listed.entries.get(uri)
            if listed_entry is None or any(v.refused for v in found):
                continue
            got = parse_entry(raw["skill"], limits=self.limits)
            differences = _differences(listed_entry, got)
            if differences:
                self.add(
                    "SW-GET-003",
                    f"skills/get and skills/list disagree on {', '.join(differences)}",
                    skill=uri,
                )

    async def get_probes(self, entries: list[SkillEntry]) -> None:
        probes = [(f"skill://skillward-check-{self.token}/{SKILL_FILE}", "a made-up skill URI")]
        supporting = next(
            (
                item.uri
                for entry in entries
                for item in entry.manifest.values()
                if item.uri != entry.uri and not item.uri.endswith("/" + SKILL_FILE)
            ),
            None,
        )
        if supporting is not None:
            probes.append((supporting, "a supporting file's URI"))
        for uri, what in probes:
            try:
                await self.call(
                    partial(self.client.get_skill_raw, uri),
                    what=f"skills/get of {what}",
                    rejected=None,
                )
            except ServerRejected as error:
                if error.code != INVALID_PARAMS:
                    self.add(
                        "SW-GET-004",
                        f"skills/get of {what} got error {error.code}, not {INVALID_PARAMS}",
                        uri=uri,
                    )
                continue
            self.add("SW-GET-004", f"skills/get answered for {what}, which names no skill", uri=uri)

    async def reads(self, entries: list[SkillEntry]) -> None:
        failed = 0
        uris = [(entry, uri) for entry in entries for uri in entry.manifest or (entry.uri,)]
        for index, (entry, uri) in enumerate(uris):
            await anyio.lowlevel.checkpoint()
            if failed >= MAX_FAILURES_IN_A_ROW:
                self.gave_up("SW-READ-001", "resources/read", len(uris) - index)
                return
            done = await (
                self.read_dynamic(entry) if entry.is_dynamic else self.read_file(entry, uri)
            )
            failed = 0 if done else failed + 1

    async def read_file(self, entry: SkillEntry, uri: str) -> bool:
        """Read and check one listed file; whether the server answered with content."""
        item = entry.manifest[uri]
        skill_md = uri == entry.uri
        content = await self.call(
            lambda: self.client.read_resource_content(uri, max_bytes=item.size),
            what="resources/read",
            rejected="SW-READ-001",
            skill=entry.uri,
            uri=uri,
        )
        if content is None:
            return False
        self.meta_keys(
            content.meta, skill=entry.uri, uri=None, what="the read contents of its files"
        )
        try:
            verify_file(item, content.data)
        except IntegrityError as error:
            self.add(error.rule or "SW-READ-006", error.message, skill=entry.uri, uri=uri)
            return True
        self.files += 1
        if _looks_executable(entry, uri, content.data):
            self.add(
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
        self.flags(block.flags, skill=entry.uri, uri=uri, what="the file")
        if not skill_md:
            return True
        if not content.text:
            self.add("SW-READ-002", "SKILL.md was served as a blob, not as text", skill=entry.uri)
        if content.mime_type != "text/markdown":
            shown = _quote(content.mime_type) if content.mime_type else "none"
            self.add(
                "SW-META-001",
                f"SKILL.md was served with mimeType {shown}, not text/markdown",
                skill=entry.uri,
            )
        self.skill_md(entry, content.data)
        return True

    def skill_md(self, entry: SkillEntry, data: bytes) -> None:
        try:
            document = parse_skill_md(data, limits=self.limits)
            check_frontmatter(document.frontmatter, entry.frontmatter.as_dict())
        except FrontmatterMismatch as error:
            self.add(error.rule or "SW-FM-010", error.message, skill=entry.uri)
            return
        except FrontmatterError as error:
            self.add(error.rule or "SW-FM-011", error.message, skill=entry.uri)
            return
        lines = document.body.count("\n") + (0 if document.body.endswith("\n") else 1)
        if lines >= MAX_BODY_LINES:
            self.add(
                "SW-FM-012",
                f"the SKILL.md body is {lines} lines; keep it under {MAX_BODY_LINES}",
                skill=entry.uri,
            )

    async def read_dynamic(self, entry: SkillEntry) -> bool:
        content = await self.call(
            lambda: self.client.read_resource_content(
                entry.uri, max_bytes=self.limits.max_skill_bytes
            ),
            what="resources/read",
            rejected="SW-READ-001",
            skill=entry.uri,
        )
        if content is None:
            return False
        try:
            verify_skill_md(entry, content.data, limits=self.limits)
        except (FrontmatterError, IntegrityError) as error:
            self.add(error.rule or "SW-FM-010", error.message, skill=entry.uri)
            return True
        self.files += 1
        return True

    def meta_keys(
        self, meta: Mapping[str, Any] | None, *, skill: str | None, uri: str | None, what: str
    ) -> None:
        bare = sorted(str(key)[:80] for key in meta or {} if not _META_PREFIX_RE.match(str(key)))
        if bare:
            keys = ", ".join(_quote(key, 60) for key in bare[:5])
            self.add(
                "SW-META-004",
                f"{what}: _meta keys without a reverse-domain prefix: {keys}",
                skill=skill,
                uri=uri,
            )

    async def read_probe(self, entries: list[SkillEntry]) -> None:
        base = str(entries[0].root) if entries else f"skill://skillward-check-{self.token}"
        uri = f"{base}/skillward-check-missing-{self.token}.md"
        try:
            contents = await self.call(
                lambda: self.client.read_resource_contents(uri),
                what="resources/read of a resource the server does not serve",
                rejected=None,
            )
        except ServerRejected as error:
            if error.code != INVALID_PARAMS:
                self.add(
                    "SW-READ-008",
                    f"a read of an unknown resource got error {error.code}, not {INVALID_PARAMS}",
                    uri=uri,
                )
            return
        if contents is None:
            return
        if not contents:
            self.add("SW-READ-007", "a read of an unknown resource got empty contents", uri=uri)
        else:
            self.add("SW-READ-008", "a read of an unknown resource got content", uri=uri)

    async def resource_list(self, entries: list[SkillEntry]) -> None:
        by_md = {entry.uri: entry for entry in entries}
        roots = {str(entry.root): entry for entry in entries if not entry.is_dynamic}
        budget = Budget()
        cursor: str | None = None
        cursors: set[str] = set()
        while True:
            await anyio.lowlevel.checkpoint()
            try:
                raw = await self.call(
                    partial(self.client.list_resources_raw, cursor, budget),
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
                    self.listed_resource(resource, by_md, roots)
            next_cursor = raw.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor or next_cursor in cursors:
                return
            cursors.add(next_cursor)
            cursor = next_cursor

    def listed_resource(
        self,
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
            self.meta_keys(
                meta if isinstance(meta, Mapping) else None,
                skill=enclosing[-1].uri,
                uri=None,
                what="the resources/list entries of its files",
            )
        entry = by_md.get(uri)
        if entry is not None:
            if resource.get("name") != entry.name:
                self.add(
                    "SW-META-002",
                    "SKILL.md's resources/list entry is not named by the frontmatter name",
                    skill=entry.uri,
                )
            if resource.get("description") != entry.description:
                self.add(
                    "SW-META-003",
                    "SKILL.md's resources/list description is not the frontmatter description",
                    skill=entry.uri,
                )
            mime = resource.get("mimeType")
            if isinstance(mime, str) and mime != "text/markdown":
                self.add(
                    "SW-META-001",
                    f"SKILL.md is listed with mimeType {_quote(mime)}, not text/markdown",
                    skill=entry.uri,
                )
        for owner in enclosing:
            if uri not in owner.manifest:
                self.add(
                    "SW-RES-006",
                    "resources/list serves a resource under this skill's root that its "
                    "resources do not list",
                    skill=owner.uri,
                    uri=uri,
                )

    async def directories(self, entries: list[SkillEntry]) -> None:
        modern = self.client.modern
        manifests = [entry for entry in entries if not entry.is_dynamic]
        failed = 0
        for index, entry in enumerate(manifests):
            if failed >= MAX_FAILURES_IN_A_ROW:
                self.gave_up("SW-DIR-001", "resources/directory/read", len(manifests) - index)
                break
            failed = 0 if await self.walk(entry, modern) else failed + 1
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
                await self.call(
                    partial(self.client.read_directory_raw, prefix, None, Budget(), 0),
                    what="resources/directory/read of a prefix directory",
                    rejected=None,
                )
            except ServerRejected as error:
                self.add(
                    "SW-DIR-002",
                    f"resources/directory/read of a prefix directory failed: {error.message}",
                    uri=prefix,
                )
        if manifests:
            sample = manifests[0]
            probes = [
                (sample.uri, "a file (SKILL.md)"),
                (f"{sample.root}/skillward-check-missing-{self.token}", "an unknown URI"),
            ]
            for uri, what in probes:
                try:
                    await self.call(
                        partial(self.client.read_directory_raw, uri, None, Budget(), 0),
                        what=f"resources/directory/read of {what}",
                        rejected=None,
                    )
                except ServerRejected as error:
                    if error.code != INVALID_PARAMS:
                        self.add(
                            "SW-DIR-007",
                            f"a directory read of {what} got error {error.code}, "
                            f"not {INVALID_PARAMS}",
                            uri=uri,
                        )
                    continue
                self.add(
                    "SW-DIR-007", f"a directory read of {what} was answered with a listing", uri=uri
                )

    async def walk(self, entry: SkillEntry, modern: bool) -> bool:
        """Walk ``entry``'s directories from its root, against its manifest; whether the
        server answered the walk's reads."""
        root = str(entry.root)
        manifest = set(entry.manifest)
        directories: set[str] = set()
        for uri in manifest:  # each is <root>/<path>: the entry was accepted
            parts = uri[len(root) + 1 :].split("/")
            directories.update(
                root + "/" + "/".join(parts[:depth]) for depth in range(1, len(parts))
            )
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
                raw = await self.call(
                    partial(self.client.read_directory_raw, directory, cursor, budget, children),
                    what="resources/directory/read",
                    rejected="SW-DIR-001",
                    skill=entry.uri,
                    uri=directory,
                )
                if raw is None:
                    return False
                for found in directory_violations(raw, modern=modern, limits=self.limits):
                    if found.rule == "SW-DIR-009":
                        self.violation(found, skill=None)
                    else:
                        self.violation(found, skill=entry.uri)
                resources = raw.get("resources")
                for child in resources if isinstance(resources, list) else ():
                    if not isinstance(child, Mapping) or not isinstance(child.get("uri"), str):
                        continue
                    children += 1
                    self.child(walk, directory, child, listed)
                next_cursor = raw.get("nextCursor")
                if not isinstance(next_cursor, str) or not next_cursor:
                    break
                if next_cursor in cursors:
                    self.add(
                        "SW-DIR-008",
                        "resources/directory/read repeated a cursor",
                        skill=entry.uri,
                        uri=directory,
                    )
                    break
                cursors.add(next_cursor)
                cursor = next_cursor
        for uri in sorted(manifest - files)[:20]:
            self.add(
                "SW-DIR-006",
                "a file the skill's resources list was not found walking its directories",
                skill=entry.uri,
                uri=uri,
            )
        for uri in sorted(files - manifest)[:20]:
            self.add(
                "SW-RES-006",
                "a directory read serves a file under this skill's root that its resources "
                "do not list",
                skill=entry.uri,
                uri=uri,
            )
        return True

    def child(
        self, walk: _Walk, directory: str, child: Mapping[str, Any], listed: set[str]
    ) -> None:
        entry = walk.entry
        uri: str = child["uri"]
        name = uri[len(directory) + 1 :]
        if not uri.startswith(directory + "/") or not name or "/" in name:
            self.add(
                "SW-DIR-004",
                f"the directory read of {_quote(directory, 300)} lists a child that is not "
                "a direct child",
                skill=entry.uri,
                uri=uri,
            )
            return
        if uri in listed:
            self.add(
                "SW-DIR-004",
                f"the directory read of {_quote(directory, 300)} lists a child twice",
                skill=entry.uri,
                uri=uri,
            )
            return
        listed.add(uri)
        is_directory = child.get("mimeType") == DIRECTORY_MIME_TYPE
        if uri in walk.directories and not is_directory:
            self.add(
                "SW-DIR-005",
                'a subdirectory is not listed with mimeType "inode/directory"',
                skill=entry.uri,
                uri=uri,
            )
        elif is_directory and uri in entry.manifest:
            self.add(
                "SW-DIR-005",
                'a file is listed with mimeType "inode/directory"',
                skill=entry.uri,
                uri=uri,
            )
        if is_directory or uri in walk.directories:
            walk.queue.append(uri)
        else:
            walk.files.add(uri)

    async def instructions(self) -> None:
        text = (self.client.instructions or "")[:MAX_INSTRUCTIONS]
        uris = list(dict.fromkeys(_INSTRUCTION_URI_RE.findall(text)))[:MAX_PROBES]
        modern = self.client.modern
        for uri in uris:
            try:
                raw = await self.call(
                    partial(self.client.get_skill_raw, uri),
                    what="skills/get of a skill URI in the instructions",
                    rejected=None,
                )
            except ServerRejected as error:
                self.add(
                    "SW-INSTR-001",
                    f"the instructions name a skill URI that skills/get does not confirm: "
                    f"{error.message}",
                    uri=uri,
                )
                continue
            if raw is None:
                continue
            refused = [v for v in get_violations(raw, uri, modern=modern) if v.refused]
            if refused:
                self.add(
                    "SW-INSTR-001",
                    f"the instructions name a skill URI whose skills/get entry a host "
                    f"refuses ({refused[0].rule})",
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


def _differences(listed: SkillEntry, got: SkillEntry) -> list[str]:
    found = []
    if not json_equal(listed.frontmatter.as_dict(), got.frontmatter.as_dict()):
        found.append("the frontmatter")
    if listed.is_dynamic != got.is_dynamic:
        found.append('whether resources is "dynamic"')
    elif {(i.uri, i.digest, i.size) for i in listed.manifest.values()} != {
        (i.uri, i.digest, i.size) for i in got.manifest.values()
    }:
        found.append("the files, digests or sizes")
    return found


async def check_server(
    spec: ServerSpec, *, limits: Limits | None = None, deadline: float | None = None
) -> ServerReport:
    """Check the server ``spec`` names against every rule; see the module's docstring.

    ``deadline``: seconds the whole check may take (by default ten times
    ``Limits.operation_timeout``); each request has ``Limits``' own deadlines.
    """
    limits = limits or Limits()
    deadline = deadline if deadline is not None else 10 * limits.operation_timeout
    findings: list[Finding] = []
    protocol: str | None = None
    audit: _Audit | None = None
    error: SkillwardError | None = None
    modern = False
    with anyio.move_on_after(deadline) as scope:
        try:
            async with SkillsClient.connect(spec, limits=limits) as client:
                protocol = client.protocol_version
                modern = client.modern
                audit = _Audit(client, limits)
                try:
                    await audit.run()
                except _Stop:
                    audit.stopped = True
        except SkillwardError as failure:
            if isinstance(failure, OriginError | TransportError):
                error = failure
            else:
                raise
    if scope.cancelled_caught:
        error = DeadlineExceeded(
            f"the check did not finish within {deadline:g} s", server=spec.label
        )
    if audit is not None:
        findings = audit.findings
        if error is None and modern and not audit.stopped:
            await _legacy_era(spec, limits, audit)
            findings = audit.findings
    return ServerReport(
        label=spec.label,
        target=spec.describe(),
        protocol=protocol,
        findings=tuple(findings),
        skills=audit.skills if audit is not None else 0,
        files=audit.files if audit is not None else 0,
        omitted=audit.omitted if audit is not None else 0,
        error=error,
    )


async def _legacy_era(spec: ServerSpec, limits: Limits, audit: _Audit) -> None:
    """SW-CAP-006: the extension on the 2025-11-25 ``initialize`` handshake too."""
    legacy = spec.model_copy(update={"mode": "legacy"})
    with anyio.move_on_after(limits.operation_timeout * 2):
        try:
            async with SkillsClient.connect(legacy, limits=limits) as client:
                setting, _ = client.declaration()
                if setting is None:
                    audit.add(
                        "SW-CAP-006",
                        "on protocol 2025-11-25 (initialize) the server does not declare "
                        "the skills extension",
                    )
                    return
                await client.list_skills_raw(None, Budget())
        except ServerRejected as failure:
            audit.add("SW-CAP-006", f"on protocol 2025-11-25 skills/list failed: {failure.message}")
        except SkillwardError as failure:
            audit.add(
                "SW-CAP-006",
                f"on protocol 2025-11-25 the server could not be checked: {failure.message}",
            )
