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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from skillward.check._audit import MAX_FINDINGS, METHOD_NOT_FOUND, Audit, Finding, Stop
from skillward.check._directories import directories
from skillward.check._frameworks import attribute
from skillward.check._gets import get_probes, gets, instructions
from skillward.check._listing import invalid_cursor, listing, listing_rules, second_walk
from skillward.check._locations import Locations
from skillward.check._reads import field_lines, read_probe, reads, resource_list
from skillward.check._rule import Severity
from skillward.core._results import capability_violations
from skillward.core.config import Limits
from skillward.core.errors import (
    DeadlineExceeded,
    OriginError,
    ServerRejected,
    SkillwardError,
    TransportError,
)
from skillward.edge._paging import Budget
from skillward.edge.client import SkillsClient
from skillward.edge.servers import ServerSpec

__all__ = ["MAX_FINDINGS", "Finding", "Locations", "ServerReport", "check_server"]


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
    #: Where its URIs are in the repository (``check DIR``, ``--map``).
    locations: Locations = field(default_factory=Locations)

    def count(self, severity: Severity) -> int:
        return sum(1 for finding in self.findings if finding.severity == severity)


async def _run(audit: Audit) -> None:
    """Every phase, in order."""
    client = audit.client
    setting, resources = client.declaration()
    for found in capability_violations(setting, resources=resources):
        audit.violation(found, skill=None)
    if setting is None:
        return  # nothing else applies to a server without the extension
    directory_read = isinstance(setting, Mapping) and setting.get("directoryRead") is True
    listed = await listing(audit)
    audit.skills = len(listed.uris)
    if listed.complete and listed.uris:
        await second_walk(audit, listed)
    await invalid_cursor(audit)
    accepted = list(listed.entries.values())
    listing_rules(audit, accepted)
    await gets(audit, listed)
    await get_probes(audit, accepted)
    if resources:
        await reads(audit, accepted)
        await read_probe(audit, accepted)
        await resource_list(audit, accepted)
    if directory_read:
        await directories(audit, accepted)
    await instructions(audit)
    if resources:
        await field_lines(audit)


async def check_server(
    spec: ServerSpec,
    *,
    limits: Limits | None = None,
    deadline: float | None = None,
    locations: Locations | None = None,
    found: Sequence[Finding] = (),
) -> ServerReport:
    """Check the server ``spec`` names against every rule; see the module's docstring.

    ``deadline``: seconds the whole check may take (by default ten times
    ``Limits.operation_timeout``); each request has ``Limits``' own deadlines.
    ``locations``: where its URIs are in the repository. ``found``: findings made before
    the server was checked (what a skills directory holds that it cannot serve), first.
    """
    limits = limits or Limits()
    deadline = deadline if deadline is not None else 10 * limits.operation_timeout
    findings: list[Finding] = []
    protocol: str | None = None
    audit: Audit | None = None
    error: SkillwardError | None = None
    modern = False
    with anyio.move_on_after(deadline) as scope:
        try:
            async with SkillsClient.connect(spec, limits=limits) as client:
                protocol = client.protocol_version
                modern = client.modern
                audit = Audit(client, limits)
                try:
                    await _run(audit)
                except Stop:
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
        if error is None and modern and not audit.stopped:
            await _legacy_era(spec, limits, audit)
        audit.locate()
        attribute(audit.findings, audit.frameworks)
        findings = audit.findings
    return ServerReport(
        label=spec.label,
        target=spec.describe(),
        protocol=protocol,
        findings=(*found, *findings),
        skills=audit.skills if audit is not None else 0,
        files=audit.files if audit is not None else 0,
        omitted=audit.omitted if audit is not None else 0,
        error=error,
        locations=locations or Locations(),
    )


async def _legacy_era(spec: ServerSpec, limits: Limits, audit: Audit) -> None:
    """The 2025-11-25 ``initialize`` era: whether the extension is declared there too
    (SW-CAP-006, a fact), and, where it is, that skills/list answers (SW-CAP-005).
    A server that does not speak that era at all is not judged on it."""
    legacy = spec.model_copy(update={"mode": "legacy"})
    era = "on protocol 2025-11-25 (initialize)"
    declared = False
    with anyio.move_on_after(limits.operation_timeout * 2):
        try:
            async with SkillsClient.connect(legacy, limits=limits) as client:
                setting, _ = client.declaration()
                if setting is None:
                    audit.add(
                        "SW-CAP-006",
                        f"{era} the server does not declare the skills extension, so hosts "
                        "on that protocol see no skills",
                    )
                    return
                declared = True
                await client.list_skills_raw(None, Budget())
        except ServerRejected as failure:
            if not declared:
                return  # the handshake itself: it does not speak that era
            rule_id = "SW-CAP-005" if failure.code == METHOD_NOT_FOUND else "SW-LIST-001"
            audit.add(
                rule_id,
                f"{era} the server declares the extension, but skills/list failed: "
                f"{failure.message}",
            )
        except SkillwardError:
            return  # it does not speak that era: only what it declares is checked
