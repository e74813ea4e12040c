"""What ``skillward check`` prints: text, JSON and SARIF 2.1.0; baselines; the exit code.

Every string a server sent (URIs, names, messages quoting them) is escaped for its
medium: text by :func:`~skillward.core.errors.printable` (no escape sequences, bidi
overrides or invisible characters reach a terminal), JSON and SARIF as ASCII with the
rest as ``\\uXXXX`` escapes, and SARIF messages with their brackets escaped too, so that a
server cannot plant a link in a code-scanning view. Nothing here reads the network or
the disk: a baseline comes in as text, and the renderers return strings.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from skillward._version import __version__
from skillward.check._docs import REPOSITORY, help_uri
from skillward.check._rule import Severity
from skillward.check.rules import RULES, rule
from skillward.check.runner import Finding, ServerReport
from skillward.core.errors import ConfigError, printable

__all__ = [
    "EXIT_ERRORS",
    "EXIT_OK",
    "EXIT_UNREACHABLE",
    "Baseline",
    "Outcome",
    "baseline_json",
    "outcome",
    "parse_baseline",
    "render_json",
    "render_sarif",
    "render_text",
]

EXIT_OK = 0
#: A finding of severity error (or, with ``--strict``, a warning); a stale baseline entry.
EXIT_ERRORS = 1
#: A server could not be reached, or stopped answering within the deadline.
EXIT_UNREACHABLE = 6

WIDTH = 80
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_BASELINE_KEY = "skillward-check-baseline"
_SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")

#: What identifies a finding across runs: server label, rule, skill and file (the
#: message may change wording between versions).
Key = tuple[str, str, str | None, str | None]


def _key(label: str, finding: Finding) -> Key:
    return (label, finding.rule, finding.skill, finding.uri)


@dataclass(frozen=True, slots=True)
class Baseline:
    """Known findings, accepted: they neither fail the check nor count."""

    entries: frozenset[Key]


def parse_baseline(text: str, *, name: str = "the baseline") -> Baseline:
    """A baseline from its JSON text (as :func:`baseline_json` writes it); raise
    :class:`~skillward.core.errors.ConfigError` naming what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{name} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get(_BASELINE_KEY) != 1:
        raise ConfigError(f'{name} is not a skillward check baseline ({{"{_BASELINE_KEY}": 1}})')
    findings = data.get("findings")
    if not isinstance(findings, list):
        raise ConfigError(f"{name}: findings must be an array")
    entries: set[Key] = set()
    for index, item in enumerate(findings):
        if not isinstance(item, dict):
            raise ConfigError(f"{name}: findings[{index}] must be an object")
        server, rule_id = item.get("server"), item.get("rule")
        skill, uri = item.get("skill"), item.get("uri")
        if not isinstance(server, str) or not isinstance(rule_id, str):
            raise ConfigError(f"{name}: findings[{index}] needs a string server and rule")
        if not all(value is None or isinstance(value, str) for value in (skill, uri)):
            raise ConfigError(f"{name}: findings[{index}]: skill and uri are strings or null")
        entries.add((server, rule_id, skill, uri))
    return Baseline(frozenset(entries))


def baseline_json(reports: Sequence[ServerReport]) -> str:
    """A baseline accepting every finding of ``reports``."""
    keys = sorted(
        {_key(report.label, finding) for report in reports for finding in report.findings},
        key=lambda key: tuple(part or "" for part in key),
    )
    findings = [
        {"server": label, "rule": rule_id, "skill": skill, "uri": uri}
        for label, rule_id, skill, uri in keys
    ]
    return json.dumps({_BASELINE_KEY: 1, "findings": findings}, indent=2, ensure_ascii=True)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The findings that count, after the baseline; the exit code they make."""

    reports: tuple[ServerReport, ...]
    #: Keys of findings the baseline accepts.
    accepted: frozenset[Key] = frozenset()
    #: Baseline entries for servers that were checked, which no finding matches.
    stale: tuple[Key, ...] = ()
    strict: bool = False
    counts: dict[Severity, int] = field(default_factory=dict)

    def counted(self, report: ServerReport) -> list[Finding]:
        """``report``'s findings the baseline does not accept."""
        return [f for f in report.findings if _key(report.label, f) not in self.accepted]

    @property
    def exit_code(self) -> int:
        if any(report.error is not None for report in self.reports):
            return EXIT_UNREACHABLE
        failing = self.counts.get("error", 0) + (
            self.counts.get("warning", 0) if self.strict else 0
        )
        if failing or self.stale:
            return EXIT_ERRORS
        return EXIT_OK


def outcome(
    reports: Sequence[ServerReport], *, baseline: Baseline | None = None, strict: bool = False
) -> Outcome:
    """Judge ``reports``: what the baseline accepts, what is stale, and what counts."""
    found = {_key(report.label, f) for report in reports for f in report.findings}
    entries = baseline.entries if baseline is not None else frozenset()
    checked = {report.label for report in reports if report.error is None}
    stale = tuple(
        sorted(
            (key for key in entries - found if key[0] in checked),
            key=lambda key: tuple(part or "" for part in key),
        )
    )
    accepted = frozenset(entries & found)
    counts: dict[Severity, int] = {}
    for report in reports:
        for finding in report.findings:
            if _key(report.label, finding) not in accepted:
                counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return Outcome(tuple(reports), accepted, stale, strict, counts)


# --- text ------------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _tally(counts: dict[Severity, int]) -> str:
    return ", ".join(_plural(counts.get(severity, 0), severity) for severity in _SEVERITIES)


def _wrap(text: str, first: int, rest: int) -> list[str]:
    """``text`` in lines of at most 80 columns, the first indented ``first`` spaces and the
    others ``rest``."""
    return textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=" " * first,
        subsequent_indent=" " * rest,
        break_long_words=True,
        break_on_hyphens=False,
    )


def render_text(result: Outcome) -> str:
    """A report for a person, at 80 columns: each server, its findings grouped by skill,
    one entry per finding with its rule, what is wrong and what to change."""
    lines: list[str] = []
    for report in result.reports:
        lines += _server_text(result, report)
    counts = result.counts
    accepted = sum(
        1 for r in result.reports for f in r.findings if _key(r.label, f) in result.accepted
    )
    for label, rule_id, skill, uri in result.stale:
        where = " ".join(printable(part, limit=300) for part in (skill, uri) if part)
        lines += _wrap(
            f"stale baseline entry: {rule_id} no longer occurs on server "
            f"{printable(label)!s}{(' at ' + where) if where else ''}; remove it",
            0,
            2,
        )
    summary = f"{_plural(len(result.reports), 'server')} checked: {_tally(counts)}"
    if accepted:
        summary += f" ({accepted} more accepted by the baseline)"
    if result.stale:
        summary += f"; {_plural(len(result.stale), 'stale baseline entry')}"
    unreachable = sum(1 for report in result.reports if report.error is not None)
    if unreachable:
        summary += f"; {unreachable} not checked to the end"
    lines += _wrap(summary, 0, 2)
    return "\n".join(lines)


def _server_text(result: Outcome, report: ServerReport) -> list[str]:
    label = printable(report.label)
    target = printable(report.target, limit=200)
    lines = _wrap(f"server {label} ({target})", 0, 2)
    counted = result.counted(report)
    counts: dict[Severity, int] = {}
    for finding in counted:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    protocol = f"protocol {printable(report.protocol)}, " if report.protocol else ""
    lines += _wrap(
        f"{protocol}{_plural(report.skills, 'skill')} listed, {_plural(report.files, 'file')} "
        f"read and verified: {_tally(counts)}",
        2,
        2,
    )
    if report.error is not None:
        lines += _wrap(f"not checked to the end: {report.error}", 2, 4)
    groups: dict[str | None, list[Finding]] = {}
    for finding in counted:
        groups.setdefault(finding.skill, []).append(finding)
    for skill in sorted(groups, key=lambda s: (s is not None, s or "")):
        lines.append("")
        lines += _wrap(printable(skill, limit=300) if skill else "(the server)", 2, 4)
        ordered = sorted(
            groups[skill], key=lambda f: (_SEVERITIES.index(f.severity), f.rule, f.line or 0)
        )
        for finding in ordered:
            lines += _finding_text(report, finding)
    if report.omitted:
        lines += _wrap(f"... and {report.omitted} more findings, not shown", 2, 4)
    lines.append("")
    return lines


def _where(report: ServerReport, finding: Finding) -> str:
    """The file a finding is about, for a person: its repository path where the report
    knows it, else its URI (none for the skill's own SKILL.md), with the line if any."""
    path = report.locations.path(finding.uri or finding.skill)
    line = f":{finding.line}" if finding.line is not None else ""
    if path is not None:
        return f"{printable(path, limit=300)}{line}: "
    if finding.uri:
        return f"{printable(finding.uri, limit=300)}{line}: "
    return f"line {finding.line}: " if finding.line is not None else ""


def _finding_text(report: ServerReport, finding: Finding) -> list[str]:
    described = rule(finding.rule)
    # A framework's cause says what its users can do, in place of the rule's own fix.
    fix = f"Cause: {finding.cause}" if finding.cause else f"Fix: {described.fix}"
    text = (
        f"{finding.severity} {finding.rule} {described.slug}: {_where(report, finding)}"
        f"{printable(finding.message, limit=600)}. {fix}"
    )
    return _wrap(text, 4, 6)


# --- JSON -------------------------------------------------------------------------------


def _finding_json(report: ServerReport, finding: Finding, accepted: bool) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "slug": rule(finding.rule).slug,
        "severity": finding.severity,
        "skill": finding.skill,
        "uri": finding.uri,
        "path": report.locations.path(finding.uri or finding.skill),
        "line": finding.line,
        "message": finding.message,
        "cause": finding.cause,
        "baselined": accepted,
    }


def render_json(result: Outcome) -> str:
    """One JSON object: every server with its findings, and a summary. ASCII only: every
    other character a server sent is a ``\\uXXXX`` escape."""
    servers = []
    for report in result.reports:
        counted = result.counted(report)
        counts = {s: sum(1 for f in counted if f.severity == s) for s in _SEVERITIES}
        servers.append(
            {
                "label": report.label,
                "target": report.target,
                "protocol": report.protocol,
                "checked": report.error is None,
                "error": None
                if report.error is None
                else {"type": type(report.error).__name__, "message": str(report.error)},
                "skills": report.skills,
                "files": report.files,
                "findings": [
                    _finding_json(report, f, _key(report.label, f) in result.accepted)
                    for f in report.findings
                ],
                "omitted": report.omitted,
                "summary": counts,
            }
        )
    summary: dict[str, int] = {s: result.counts.get(s, 0) for s in _SEVERITIES}
    summary["servers"] = len(result.reports)
    summary["not_checked"] = sum(1 for report in result.reports if report.error is not None)
    summary["exit_code"] = result.exit_code
    document = {
        "servers": servers,
        "stale_baseline": [
            {"server": label, "rule": rule_id, "skill": skill, "uri": uri}
            for label, rule_id, skill, uri in result.stale
        ],
        "summary": summary,
    }
    return json.dumps(document, indent=2, ensure_ascii=True)


# --- SARIF ------------------------------------------------------------------------------


def _sarif_text(text: str, limit: int = 1000) -> str:
    """Server text for a SARIF message: escaped, and with no embedded links (a SARIF
    viewer renders ``[text](target)`` as a link; literal brackets are ``\\[``, ``\\]``,
    and a literal backslash is ``\\\\``, so one the server wrote before a bracket cannot
    cancel its escape)."""
    shown = printable(text, limit=limit).replace("\\", "\\\\")
    return shown.replace("[", "\\[").replace("]", "\\]")


def _fingerprints(label: str, findings: Sequence[Finding]) -> list[str]:
    """A fingerprint for each finding that stays its own across commits: server label,
    rule, skill and file, and which of that file's findings of the rule it is (by line);
    never the line itself, which moves when lines above it change."""
    order = sorted(range(len(findings)), key=lambda i: findings[i].line or 0)
    nth: dict[tuple[str, str | None, str | None], int] = {}
    prints = [""] * len(findings)
    for index in order:
        finding = findings[index]
        key = (finding.rule, finding.skill, finding.uri)
        nth[key] = nth.get(key, -1) + 1
        parts = [label, finding.rule, finding.skill or "", finding.uri or "", str(nth[key])]
        digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass"))
        prints[index] = digest.hexdigest()
    return prints


def _sarif_rule(rule_id: str) -> dict[str, Any]:
    described = rule(rule_id)
    return {
        "id": described.id,
        "name": described.slug,
        "shortDescription": {"text": described.summary},
        "fullDescription": {
            "text": f"{described.summary} SEP-2640 §{described.section} "
            f"({described.says}): {described.source}."
        },
        "help": {"text": f"{described.fix} See {help_uri(rule_id)}"},
        "helpUri": help_uri(rule_id),
        "defaultConfiguration": {"level": described.severity},
        "properties": {
            "tags": ["sep-2640", described.id.split("-")[1].lower()],
            "sep-2640": {"section": described.section, "says": described.says},
            "conformance": list(described.conformance),
            "inspector": list(described.inspector),
        },
    }


def _sarif_location(report: ServerReport, finding: Finding) -> dict[str, Any]:
    """Where code scanning shows a finding: its repository file (and line) where the
    report knows it, else the URI the server serves it at."""
    target = finding.uri or finding.skill
    path = report.locations.path(target)
    physical: dict[str, Any]
    if path is not None:
        if path.startswith("/"):  # outside the repository: where it is on this machine
            artifact = {"uri": "file://" + _sarif_path(path)}
        else:
            artifact = {"uri": _sarif_path(path), "uriBaseId": "%SRCROOT%"}
        physical = {"artifactLocation": artifact}
        if finding.line is not None:
            physical["region"] = {"startLine": finding.line}
    else:
        # A server's string stands as the location only as a skill:// URI: a relative
        # one ("src/app.py") would be read against the repository, and the finding
        # shown on a file of the author's that it is not about; a viewer may open
        # another scheme's (https:, javascript:) as a link.
        where = target if target is not None and _served_at(target) else report.label
        physical = {"artifactLocation": {"uri": printable(where, limit=2048)}}
    return {
        "physicalLocation": physical,
        "logicalLocations": [{"name": printable(report.label), "kind": "module"}],
    }


def _served_at(target: str) -> bool:
    """Whether ``target`` is a ``skill://`` URI."""
    scheme, colon, rest = target.partition(":")
    return bool(colon) and scheme.lower() == "skill" and rest.startswith("//")


def _sarif_path(path: str) -> str:
    """A repository path as a relative URI reference (RFC 3986): each segment encoded."""
    return "/".join(quote(segment, safe="!$&'()*+,;=:@-._~") for segment in path.split("/"))


def render_sarif(result: Outcome) -> str:
    """A SARIF 2.1.0 log of one run, for code scanning: every rule of the catalog with its
    help, each counted finding as a result at its repository file and line where known
    (``%SRCROOT%``-relative), else at its URI, with a fingerprint that follows it across
    commits."""
    rules = [_sarif_rule(r.id) for r in RULES]
    index = {r.id: i for i, r in enumerate(RULES)}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for report in result.reports:
        counted = result.counted(report)
        for finding, fingerprint in zip(counted, _fingerprints(report.label, counted), strict=True):
            text = _sarif_text(finding.message)
            if finding.cause:
                text += f". {finding.cause}"
            results.append(
                {
                    "ruleId": finding.rule,
                    "ruleIndex": index[finding.rule],
                    "level": finding.severity,
                    "message": {"text": text},
                    "locations": [_sarif_location(report, finding)],
                    "partialFingerprints": {"skillwardFinding/v1": fingerprint},
                    "properties": {
                        "server": report.label,
                        "skill": finding.skill,
                        "uri": finding.uri,
                    },
                }
            )
        if report.error is not None:
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": _sarif_text(str(report.error))},
                    "descriptor": {"id": "skillward-check-not-checked"},
                }
            )
    for label, rule_id, skill, uri in result.stale:
        notifications.append(
            {
                "level": "error",
                "message": {
                    "text": _sarif_text(
                        f"stale baseline entry: {rule_id} no longer occurs on server {label} "
                        f"{skill or ''} {uri or ''}".strip()
                    )
                },
                "descriptor": {"id": "skillward-check-stale-baseline"},
            }
        )
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "skillward",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": REPOSITORY,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {
                    "%SRCROOT%": {"description": {"text": "The repository's root."}}
                },
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=True)
