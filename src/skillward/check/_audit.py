"""The audit's state and its one way to record a finding and to make a request.

:class:`Audit` is what every phase of the check shares (``_listing``, ``_gets``,
``_reads``, ``_directories``, ``_hygiene``): the client, the limits, the findings kept and
counted, and :meth:`Audit.call`, which turns a server's refusal into a finding.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from skillward.check._rule import Severity
from skillward.check.rules import rule
from skillward.core.config import Limits
from skillward.core.errors import OriginError, ServerRejected, TransportError, printable
from skillward.core.rules import Violation
from skillward.edge.client import SkillsClient

#: Findings kept for one server; past it they are only counted.
MAX_FINDINGS = 2000
#: Skill URIs taken from the server's instructions, and prefix directories probed.
MAX_PROBES = 50
#: Requests of one step (skills/get of each skill, reads of each file) that fail in a row
#: before the step gives up: a server that serves none of them is not asked thousands
#: of times.
MAX_FAILURES_IN_A_ROW = 20
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule. ``skill`` is the skill's URI (None: the server as a whole),
    ``uri`` the file or other resource it is about when not the skill itself, ``line``
    the line of that file (1-based) where one is known. Strings are as the server sent
    them, bounded; ``message`` is escaped and quotes no content. ``cause``: what a known
    framework does to produce it, and what its author can do (never server text)."""

    rule: str
    severity: Severity
    skill: str | None
    uri: str | None
    message: str
    line: int | None = None
    cause: str | None = None


class Stop(Exception):
    """The connection ended after a refused message: nothing more can be asked."""


def _bounded(text: str | None, limit: int = 2048) -> str | None:
    return None if text is None else text[:limit]


def quote(text: str, limit: int = 120) -> str:
    """A server string for a message: bounded, escaped, quoted."""
    return "'" + printable(text, limit=limit) + "'"


class Audit:
    """One server's audit: the findings, and the requests that find them."""

    def __init__(self, client: SkillsClient, limits: Limits) -> None:
        self.client = client
        self.limits = limits
        self.findings: list[Finding] = []
        self.seen: set[tuple[str, str | None, str | None, str, int | None]] = set()
        self.omitted = 0
        self.files = 0
        self.skills = 0
        #: The connection ended after a message past the host's caps.
        self.stopped = False
        self.token = secrets.token_hex(6)
        #: Frameworks whose signature the server showed (``_frameworks.py``).
        self.frameworks: set[str] = set()
        #: By skill URI, the line of each top-level key of its SKILL.md, once read.
        self.key_lines: dict[str, Mapping[str, int]] = {}
        #: Findings about one frontmatter field, located once SKILL.md's lines are known.
        self.fields: list[tuple[int, str]] = []

    # --- recording ----------------------------------------------------------------------

    def add(
        self,
        rule_id: str,
        message: str,
        *,
        skill: str | None = None,
        uri: str | None = None,
        line: int | None = None,
        field: str | None = None,
        cause: str | None = None,
    ) -> None:
        """Record a finding. ``field``: the frontmatter key it is about, which locates it
        in SKILL.md (:meth:`locate`)."""
        text = printable(message, limit=600)
        key = (rule_id, skill, uri, text, line)
        if key in self.seen:
            return
        if len(self.findings) >= MAX_FINDINGS:
            self.omitted += 1
            return
        self.seen.add(key)
        severity = rule(rule_id).severity
        uri = None if uri == skill else uri
        if field is not None and skill is not None and uri is None:
            self.fields.append((len(self.findings), field))
        self.findings.append(
            Finding(rule_id, severity, _bounded(skill), _bounded(uri), text, line, cause)
        )

    def violation(self, found: Violation, *, skill: str | None, prefix: str = "") -> None:
        self.add(found.rule, prefix + found.message, skill=skill, uri=found.uri, field=found.field)

    def locate(self) -> None:
        """Give each finding about a frontmatter field the line of that key in SKILL.md."""
        for index, key in self.fields:
            finding = self.findings[index]
            line = self.key_lines.get(finding.skill or "", {}).get(key)
            if line is not None and finding.line is None:
                self.findings[index] = dataclasses.replace(finding, line=line)

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
                raise Stop from None
            return None
        except TransportError:
            if self.client.ended is not None:
                raise Stop from None
            raise

    def gave_up(self, rule_id: str, what: str, left: int) -> None:
        self.add(
            rule_id,
            f"{what} failed {MAX_FAILURES_IN_A_ROW} times in a row; the other {left} were "
            "not tried",
        )
