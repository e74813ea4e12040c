"""The policy file format: TOML (stdlib ``tomllib``) checked key by key against one
pydantic model, :class:`PolicyFile`, whose JSON Schema is ``skillward policy schema``.

Pure: text in, a document and the problems found out; no I/O. The key names are the
contract documented in ``docs/admin-guide.md``.

A policy is read leniently where that is safe and strictly where it is not:

* an unknown key is a warning naming the file and line, never silent;
* a bad entry in a list is dropped with a warning, and the rest of the file applies;
* a bad value on a restricting key resolves to that key's strictest setting, and the
  warning says so;
* a file that is not TOML, or of a version this code does not read, cannot be used at
  all: that problem is *fatal*, and whoever loads it fails closed.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import re
import tomllib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)

from skillward.core.config import SEP_MAX_SKILL_BYTES
from skillward.core.errors import ConfigError, InvalidUri, printable
from skillward.core.labels import normalise_label
from skillward.core.uris import skill_root_of
from skillward.core.urls import parse_http_url, split_url
from skillward.trust._patterns import NamePattern, ServerPattern, UrlPattern, parse_server_pattern
from skillward.trust._policylines import (
    TOML_ERROR_LINE,
    KeyPath,
    element_offsets,
    locate,
    nearest,
)

__all__ = [
    "UNUSABLE",
    "VERSION",
    "ParsedPolicy",
    "PinEntry",
    "PolicyFile",
    "PolicyProblem",
    "parse_policy",
    "parse_policy_data",
    "policy_keys",
    "policy_schema",
]

#: The format version this code reads.
VERSION = 1
#: How a fatal problem's message ends.
UNUSABLE = "; the file cannot be used"


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("contains control or invisible characters")
    return text


def _skill_uri(text: str) -> str:
    try:
        skill_root_of(text)
    except InvalidUri as error:
        raise ValueError(error.message) from None
    return text


_MAX_TEXT = 2048
_Text = Annotated[
    str, StringConstraints(min_length=1, max_length=_MAX_TEXT), AfterValidator(_printable)
]


def _server_pattern(value: object, *, exact: bool = False) -> ServerPattern:
    """A server pattern, parsed here, once (``trust/_patterns.py``)."""
    if isinstance(value, NamePattern | UrlPattern):
        return value
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_TEXT:
        raise ValueError(f"expected a string of 1 to {_MAX_TEXT} characters")
    return parse_server_pattern(_printable(value), exact=exact)


def _pattern_field(description: str, *, exact: bool = False) -> tuple[object, ...]:
    """What makes a server pattern a field: parsed from its text, written back as it."""
    return (
        PlainValidator(lambda value: _server_pattern(value, exact=exact)),
        PlainSerializer(lambda pattern: pattern.text, return_type=str),
        WithJsonSchema(
            {"type": "string", "minLength": 1, "maxLength": _MAX_TEXT, "description": description}
        ),
    )


ServerPatternField = Annotated[
    ServerPattern,
    *_pattern_field(
        "A URL (https://host/path: HTTP servers), a command line (stdio servers) or a label; "
        "* matches any characters."
    ),
]
PinServer = Annotated[
    ServerPattern,
    *_pattern_field("A server label or transport identity (exact).", exact=True),
]
SkillPattern = Annotated[
    _Text,
    Field(description="A skill URI glob: * matches within one path segment, ** across segments."),
]
_ANY_CASE_DIGEST = re.compile(r"(?:sha256:)?[0-9a-f]{64}", re.IGNORECASE | re.ASCII)


def _digest_spelling(value: object) -> object:
    """A digest as ``sha256sum`` or ``Get-FileHash`` prints it (bare, or upper case), in the
    form listings use: read as the administrator meant it, not dropped."""
    if isinstance(value, str) and _ANY_CASE_DIGEST.fullmatch(value):
        value = value.lower()
        return value if value.startswith("sha256:") else f"sha256:{value}"
    return value


Digest = Annotated[
    str,
    BeforeValidator(_digest_spelling),
    StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$"),
    Field(
        description="sha256: and 64 hex digits (upper case, or bare hex as sha256sum prints "
        "it, is read the same)."
    ),
]
SkillUri = Annotated[_Text, AfterValidator(_skill_uri)]

DynamicMode = Literal["deny", "prompt"]
PersistScope = Literal["remember", "session", "once"]
GrantMode = Literal["prompt", "never"]
CacheSwitch = Literal["on", "off"]


class _Table(BaseModel):
    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


class ServersTable(_Table):
    """Which servers may be connected."""

    allow: tuple[ServerPatternField, ...] | None = Field(
        None, description="URLs, command lines or labels (globs). Unset: any; []: none."
    )
    deny: tuple[ServerPatternField, ...] = Field((), description="Globs; deny beats allow.")


class SkillsTable(_Table):
    """Which skills served by MCP servers may be loaded."""

    allow: tuple[SkillPattern, ...] | None = Field(
        None, description="Skill URI globs. Unset: any; []: none."
    )
    deny: tuple[SkillPattern, ...] = Field((), description="Skill URI globs; deny beats allow.")
    deny_digests: tuple[Digest, ...] = Field(
        (), description="Any file with one of these digests blocks its skill."
    )
    dynamic: DynamicMode | None = Field(
        None, description='Skills whose resources are "dynamic": "deny" or "prompt".'
    )


class ApprovalsTable(_Table):
    """How long a person's approval may last."""

    persist: PersistScope | None = Field(
        None, description='The longest scope: "remember", "session" or "once".'
    )
    max_age_days: Annotated[int, Field(ge=0, le=36500)] | None = Field(
        None, description="Approvals older than this many days are asked again."
    )


class GrantsTable(_Table):
    """Whether a person may be asked for each grant at all."""

    allowed_tools: GrantMode | None = Field(None, description='"prompt" or "never".')
    execution: GrantMode | None = Field(None, description='"prompt" or "never".')
    cross_origin: GrantMode | None = Field(None, description='"prompt" or "never".')


class LimitsTable(_Table):
    """Bounds on what is fetched and kept."""

    max_skill_bytes: Annotated[int, Field(ge=SEP_MAX_SKILL_BYTES, le=2**40)] | None = Field(
        None, description="Total bytes of one skill (at least SEP-2640's 16 MiB)."
    )
    cache_budget_mib: Annotated[int, Field(ge=0, le=2**20)] | None = Field(
        None, description="MiB the disk cache keeps per server; 0 turns it off."
    )
    cache: CacheSwitch | None = Field(None, description='The disk cache: "on" or "off".')


class KeyringTable(_Table):
    """Where the approval store's key may live."""

    require_recommended: bool | None = Field(
        None,
        description="true: approvals are remembered only with the OS keyring (a recommended "
        "backend), never a key provider the host supplies.",
    )


def _endpoint(text: str) -> str:
    """A collector's URL: http(s), a host, no user-info, query or fragment (credentials go
    in ``OTEL_EXPORTER_OTLP_HEADERS``, never in a policy)."""
    try:
        parse_http_url(text)
    except ConfigError as error:
        raise ValueError(error.message.replace("the server URL", "the collector's URL")) from None
    parts = split_url(text)
    if parts is not None and (parts.query is not None or parts.fragment is not None):
        raise ValueError("the collector's URL carries a query or fragment")
    return text


Endpoint = Annotated[
    _Text,
    AfterValidator(_endpoint),
    Field(description="An OTLP/HTTP collector: https://host:4318 (events go to /v1/logs)."),
]


class AuditTable(_Table):
    """What the audit trail must be, and where its events go."""

    require_tamper_evident: bool | None = Field(
        None,
        description="true: skills load only while the audit trail is a file whose "
        "checkpoints the key store vouches for.",
    )
    require_export: bool | None = Field(
        None,
        description="true: every audit event is also sent to a collector (export_endpoint, "
        "or OTEL_EXPORTER_OTLP_ENDPOINT).",
    )
    export_endpoint: Endpoint | None = Field(
        None, description="The collector audit events are sent to; setting it requires export."
    )


class PinEntry(_Table):
    """An administrator's pre-approval of exactly one skill's content."""

    server: PinServer
    skill: SkillUri = Field(description="The skill's SKILL.md URI (exact).")
    content: Digest = Field(description="The digest-set hash `skillward pin` prints.")
    grant_tools: bool = Field(False, description="Also grant the allowed-tools it requests.")


class PolicyFile(_Table):
    """One policy file, as the schema defines it."""

    model_config = ConfigDict(
        title="skillward policy", frozen=True, extra="forbid", strict=True, defer_build=True
    )

    version: Literal[1] = Field(1, description="The format version: 1.")
    contact: str | None = Field(
        None, min_length=1, max_length=500, description="Who to ask; shown in every denial."
    )
    # Factories, so that no table is built at import.
    servers: ServersTable = Field(default_factory=ServersTable)
    skills: SkillsTable = Field(default_factory=SkillsTable)
    approvals: ApprovalsTable = Field(default_factory=ApprovalsTable)
    grants: GrantsTable = Field(default_factory=GrantsTable)
    limits: LimitsTable = Field(default_factory=LimitsTable)
    keyring: KeyringTable = Field(default_factory=KeyringTable)
    audit: AuditTable = Field(default_factory=AuditTable)
    pins: tuple[PinEntry, ...] = ()


#: The tables of a policy file, by key.
TABLES: dict[str, type[_Table]] = {
    "servers": ServersTable,
    "skills": SkillsTable,
    "approvals": ApprovalsTable,
    "grants": GrantsTable,
    "limits": LimitsTable,
    "keyring": KeyringTable,
    "audit": AuditTable,
}

# What a bad value of each restricting key resolves to, and how to say so. A bad value of
# ``skills.deny_digests`` cannot be a digest list, so it denies every skill instead.
_STRICTEST: dict[tuple[str, str], tuple[str, object, str]] = {
    ("servers", "allow"): ("allow", (), "no server is allowed"),
    ("servers", "deny"): ("deny", ("*",), "every server is denied"),
    ("skills", "allow"): ("allow", (), "no skill is allowed"),
    ("skills", "deny"): ("deny", ("**",), "every skill is denied"),
    ("skills", "deny_digests"): ("deny", ("**",), "every skill is denied"),
    ("skills", "dynamic"): ("dynamic", "deny", 'read as "deny"'),
    ("approvals", "persist"): ("persist", "once", 'read as "once"'),
    ("approvals", "max_age_days"): ("max_age_days", 0, "read as 0: no approval outlives its use"),
    ("grants", "allowed_tools"): ("allowed_tools", "never", 'read as "never"'),
    ("grants", "execution"): ("execution", "never", 'read as "never"'),
    ("grants", "cross_origin"): ("cross_origin", "never", 'read as "never"'),
    ("limits", "max_skill_bytes"): (
        "max_skill_bytes",
        SEP_MAX_SKILL_BYTES,
        f"read as {SEP_MAX_SKILL_BYTES} (SEP-2640's minimum)",
    ),
    ("limits", "cache_budget_mib"): ("cache_budget_mib", 0, "read as 0: the cache is off"),
    ("limits", "cache"): ("cache", "off", 'read as "off"'),
    ("keyring", "require_recommended"): ("require_recommended", True, "read as true"),
    ("audit", "require_tamper_evident"): ("require_tamper_evident", True, "read as true"),
    ("audit", "require_export"): ("require_export", True, "read as true"),
    # A collector that cannot be used still says export is wanted: it is required, to the
    # collector the standard variables name if any; else the machine says it cannot export.
    ("audit", "export_endpoint"): (
        "require_export",
        True,
        "export is still required (to OTEL_EXPORTER_OTLP_ENDPOINT, if set)",
    ),
}


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """Something wrong in a policy file: a warning, or ``fatal`` (the file cannot be used)."""

    source: str
    line: int | None
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ParsedPolicy:
    """A policy file as read: its document (None when a fatal problem makes it unusable),
    every problem found, and the line each key was set on."""

    source: str
    document: PolicyFile | None
    problems: tuple[PolicyProblem, ...]
    lines: Mapping[KeyPath, int]

    @property
    def fatal(self) -> PolicyProblem | None:
        return next((p for p in self.problems if p.fatal), None)

    def line(self, *path: str | int) -> int | None:
        """The line ``path`` was set on, or the nearest enclosing table's."""
        return nearest(self.lines, path)


def policy_keys() -> list[str]:
    """Every restricting key, as ``table.key``, in schema order."""
    return [f"{table}.{key}" for table, model in TABLES.items() for key in model.model_fields]


def policy_schema() -> dict[str, Any]:
    """The JSON Schema of a policy file (``skillward policy schema``).

    TOML has no null: an optional key is one that may be left out, so the schema says
    nothing of null.
    """

    def without_null(node: object) -> object:
        if isinstance(node, list):
            return [without_null(item) for item in node]
        if not isinstance(node, dict):
            return node
        # A table's default spells out its unset keys as null: leave it out too.
        out = {
            k: without_null(v)
            for k, v in node.items()
            if not (k == "default" and (v is None or isinstance(v, dict)))
        }
        options = out.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [o for o in options if o != {"type": "null"}]
            del out["anyOf"]
            if len(rest) == 1 and isinstance(rest[0], dict):
                out = {**rest[0], **out}
            else:
                out["anyOf"] = rest
        return out

    schema = without_null(PolicyFile.model_json_schema())
    assert isinstance(schema, dict)
    return schema


# --- reading --------------------------------------------------------------------------------


def _shown(value: object) -> str:
    return printable(repr(value), limit=80)


def _unpack(annotation: Any) -> tuple[bool, Any]:
    """(is a list, the element or value type) of a field's annotation, None removed."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is tuple:
        return True, get_args(annotation)[0]
    return False, annotation


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(annotation: Any) -> TypeAdapter[Any]:
    key = repr(annotation)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(annotation, config=ConfigDict(strict=True))
    return _ADAPTERS[key]


def _reason(error: ValidationError) -> str:
    """Why a value is bad, without quoting it (the caller quotes it, escaped)."""
    first = error.errors(include_url=False, include_input=False)[0]
    return str(first.get("msg", "invalid")).lower()


class _Reader:
    def __init__(self, source: str, text: str | None) -> None:
        self.source = source
        self.text = text
        self.lines = locate(text) if text is not None else {}
        self.problems: list[PolicyProblem] = []
        # The offset each line starts at (line 1 at index 0), counted as locate counts.
        self._starts: list[int] | None = None

    def entry_lines(self, path: KeyPath, count: int) -> list[int | None]:
        """The line of each of the ``count`` entries of the list at ``path``; the key's
        line for any that cannot be told apart."""
        start = self.lines.get(path)
        if start is None or self.text is None:
            return [self.line(*path)] * count
        if self._starts is None:
            lengths = (len(line) for line in self.text.splitlines(keepends=True))
            self._starts = list(itertools.accumulate(lengths, initial=0))
        offsets = element_offsets(self.text, self._starts[start - 1], str(path[-1]))
        if offsets is None or len(offsets) != count:
            return [start] * count
        return [bisect.bisect_right(self._starts, offset) for offset in offsets]

    def line(self, *path: str | int) -> int | None:
        return nearest(self.lines, path)

    def warn(
        self, path: KeyPath, message: str, *, line: int | None = None, fatal: bool = False
    ) -> None:
        where = line if line is not None else self.line(*path)
        self.problems.append(PolicyProblem(self.source, where, message, fatal))

    def unknown(
        self, path: KeyPath, known: Callable[[str], bool], value: Mapping[str, Any]
    ) -> None:
        for key in value:
            if not known(key):
                name = ".".join(str(p) for p in (*path, key))
                self.warn((*path, key), f"unknown key {printable(name, limit=80)!r} is ignored")

    def table(self, name: str, model: type[_Table], raw: object) -> dict[str, Any]:
        """A table's keys, each checked on its own."""
        if not isinstance(raw, dict):
            clean: dict[str, Any] = {}
            self.warn(
                (name,),
                f"[{name}] is not a table; each of its restricting keys is at its strictest",
            )
            for field_name in model.model_fields:
                strictest = _STRICTEST.get((name, field_name))
                if strictest is not None:
                    self._strictest(clean, name, strictest, self.line(name))
            return clean
        self.unknown((name,), lambda k: k in model.model_fields, raw)
        clean = {}
        for field_name, info in model.model_fields.items():
            if field_name in raw:
                self.field(clean, name, field_name, info.annotation, raw[field_name])
        return clean

    def _strictest(
        self, clean: dict[str, Any], table: str, rule: tuple[str, object, str], line: int | None
    ) -> None:
        target, value, _ = rule
        if not isinstance(value, tuple):
            clean[target] = value
            return
        held = clean.get(target, ())
        added = tuple(v for v in value if v not in held)
        for index in range(len(held), len(held) + len(added)):
            if line is not None:
                self.lines[(table, target, index)] = line
        clean[target] = (*held, *added)

    def field(
        self, clean: dict[str, Any], table: str, name: str, annotation: Any, raw: object
    ) -> None:
        is_list, item = _unpack(annotation)
        key = f"{table}.{name}"
        path: KeyPath = (table, name)
        strictest = _STRICTEST.get((table, name))
        if is_list:
            if not isinstance(raw, list):
                self._bad(
                    clean, path=path, key=key, raw=raw, why="is not a list", strictest=strictest
                )
                return
            kept: list[object] = []
            lines = self.entry_lines(path, len(raw))
            # A deny entry that cannot be read denied something: its list's strictest
            # setting stands in for it. Elsewhere a bad entry only narrows what it allows.
            denying = strictest if strictest is not None and strictest[1] else None
            unread: list[int | None] = []  # the lines of deny entries that could not be read
            for index, entry in enumerate(raw):
                line = lines[index]
                try:
                    kept.append(_adapter(item).validate_python(entry))
                except ValidationError as error:
                    shown = f"{key}: entry {index + 1} ({_shown(entry)})"
                    if denying is None:
                        self.warn(path, f"{shown} is dropped: {_reason(error)}", line=line)
                        continue
                    self.warn(
                        path, f"{shown} is not valid ({_reason(error)}); {denying[2]}", line=line
                    )
                    unread.append(line)
                    continue
                if line is not None:
                    self.lines[(*path, len(kept) - 1)] = line
                self._advise(path, f"{key}: entry {index + 1}", kept[-1], line)
            clean[name] = tuple(kept)
            if denying is not None and unread:
                self._strictest(clean, table, denying, unread[0])
            return
        try:
            clean[name] = _adapter(item).validate_python(raw)
        except ValidationError as error:
            self._bad(clean, path=path, key=key, raw=raw, why=_reason(error), strictest=strictest)

    def _advise(self, path: KeyPath, where: str, value: object, line: int | None) -> None:
        """Warn about a server pattern that is one word and no label (``brave_search``,
        ``evil.example``): it names only a command line of that word alone, which is
        seldom what was meant. ``stdio:`` in front says it is."""
        if not isinstance(value, NamePattern) or value.kind != "command":
            return
        text = value.text
        if text[:6].lower() == "stdio:" or len(text.split()) != 1:
            return
        meant: list[str] = []
        with contextlib.suppress(ConfigError):  # no name an mcpServers file could hold
            meant.append(f"the label {normalise_label(text)!r} for a server so named in mcpServers")
        if "." in text and split_url(f"https://{text}/") is not None:
            meant.append(f"'https://{text}' for a server on that host")
        meant += [f"'{text} *' for that command with arguments", f"'stdio:{text}' as it is"]
        self.warn(
            path,
            f"{where} ({_shown(text)}) names only a stdio server run as that one word with no "
            f"arguments; write {', '.join(meant[:-1])}, or {meant[-1]}",
            line=line,
        )

    def _bad(
        self,
        clean: dict[str, Any],
        *,
        path: KeyPath,
        key: str,
        raw: object,
        why: str,
        strictest: tuple[str, object, str] | None,
    ) -> None:
        if strictest is None:
            self.warn(path, f"{key} = {_shown(raw)} is ignored: {why}")
            return
        self._strictest(clean, str(path[0]), strictest, self.line(*path))
        self.warn(path, f"{key} = {_shown(raw)} is not valid ({why}); {strictest[2]}")

    def pins(self, raw: object) -> tuple[PinEntry, ...]:
        if not isinstance(raw, list):
            self.warn(("pins",), "pins is not a list of [[pins]] tables; no pin applies")
            return ()
        kept: list[PinEntry] = []
        for index, entry in enumerate(raw):
            path: KeyPath = ("pins", index)
            if not isinstance(entry, dict):
                self.warn(path, f"pin {index + 1} is not a table; it is dropped")
                continue
            self.unknown(path, lambda k: k in PinEntry.model_fields, entry)
            fields = {k: v for k, v in entry.items() if k in PinEntry.model_fields}
            try:
                kept.append(PinEntry.model_validate(fields))
            except ValidationError as error:
                problem = error.errors(include_url=False, include_input=False)[0]
                where = ".".join(str(p) for p in problem.get("loc", ()))
                self.warn(
                    path,
                    f"pin {index + 1} is dropped: {where or 'it'}: {_reason(error)}",
                )
        return tuple(kept)

    def document(self, data: Mapping[str, Any]) -> PolicyFile | None:
        self.unknown((), lambda k: k in PolicyFile.model_fields, data)
        version = data.get("version")
        if "version" not in data:
            self.warn((), f"version is not set; read as version {VERSION}", line=1)
        elif type(version) is not int or version != VERSION:
            self.warn(
                ("version",),
                f"version {_shown(version)} is not one this skillward reads ({VERSION})" + UNUSABLE,
                fatal=True,
            )
            return None
        clean: dict[str, Any] = {}
        contact = data.get("contact")
        if "contact" in data:
            if isinstance(contact, str) and 0 < len(contact) <= 500:
                clean["contact"] = contact
            else:
                self.warn(
                    ("contact",), "contact is ignored: it must be a string of 1 to 500 characters"
                )
        for name, model in TABLES.items():
            if name in data:
                clean[name] = model.model_validate(self.table(name, model, data[name]))
        if "pins" in data:
            clean["pins"] = self.pins(data["pins"])
        return PolicyFile.model_validate(clean)


def parse_policy_data(
    data: Mapping[str, Any], source: str, *, text: str | None = None
) -> ParsedPolicy:
    """Check already-decoded policy data (from TOML, or a host's mapping) key by key."""
    reader = _Reader(source, text)
    if not isinstance(data, Mapping):
        reader.warn((), "a policy must be a table of keys", fatal=True)
        return ParsedPolicy(source, None, tuple(reader.problems), reader.lines)
    document = reader.document(data)
    return ParsedPolicy(source, document, tuple(reader.problems), reader.lines)


def parse_policy(text: str, source: str) -> ParsedPolicy:
    """Read one policy file's text. Never raises for what the text holds: a file that is
    not TOML comes back with a fatal problem naming the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = TOML_ERROR_LINE.search(str(error))
        line = int(found.group(1)) if found else None
        if line is None and "end of document" in str(error):
            line = max(1, len(text.splitlines()))
        message = f"not valid TOML: {printable(str(error), limit=200)}{UNUSABLE}"
        return ParsedPolicy(source, None, (PolicyProblem(source, line, message, True),), {})
    except RecursionError:
        message = "nested too deeply to read" + UNUSABLE
        return ParsedPolicy(source, None, (PolicyProblem(source, None, message, True),), {})
    return parse_policy_data(data, source, text=text)
