"""The get phase: ``skills/get`` of every listed skill against its listing entry, of URIs
that name no skill, and of the skill URIs the server's instructions name."""

from __future__ import annotations

import re
from functools import partial

import anyio

from skillward.check._audit import (
    INVALID_PARAMS,
    MAX_FAILURES_IN_A_ROW,
    MAX_PROBES,
    Audit,
)
from skillward.check._listing import Listed
from skillward.core._results import get_violations
from skillward.core.errors import (
    ServerRejected,
)
from skillward.core.frontmatter import json_equal
from skillward.core.uris import SKILL_FILE
from skillward.core.wire import SkillEntry, parse_entry

#: Characters of the instructions scanned for skill URIs.
MAX_INSTRUCTIONS = 64 * 1024
_INSTRUCTION_URI_RE = re.compile(r"[a-z][a-z0-9+.\-]*://[^\s\"'<>()\[\]`]+/SKILL\.md")


async def gets(audit: Audit, listed: Listed) -> None:
    modern = audit.client.modern
    failed = 0
    for index, uri in enumerate(listed.uris):
        await anyio.lowlevel.checkpoint()
        if failed >= MAX_FAILURES_IN_A_ROW:
            audit.gave_up("SW-GET-001", "skills/get", len(listed.uris) - index)
            return
        raw = await audit.call(
            partial(audit.client.get_skill_raw, uri),
            what="skills/get of a listed skill",
            rejected="SW-GET-001",
            skill=uri,
        )
        if raw is None:
            failed += 1
            continue
        failed = 0
        known = listed.broken.get(uri, set())
        found = get_violations(raw, uri, modern=modern, limits=audit.limits)
        for violation in found:
            if (violation.rule, violation.message, violation.uri) not in known:
                audit.violation(violation, skill=uri, prefix="skills/get: ")
        listed_entry = listed.entries.get(uri)
        if listed_entry is None or any(v.refused for v in found):
            continue
        got = parse_entry(raw["skill"], limits=audit.limits)
        differences = _differences(listed_entry, got)
        if differences:
            audit.add(
                "SW-GET-003",
                f"skills/get and skills/list disagree on {', '.join(differences)}",
                skill=uri,
            )


async def get_probes(audit: Audit, entries: list[SkillEntry]) -> None:
    probes = [(f"skill://skillward-check-{audit.token}/{SKILL_FILE}", "a made-up skill URI")]
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
            await audit.call(
                partial(audit.client.get_skill_raw, uri),
                what=f"skills/get of {what}",
                rejected=None,
            )
        except ServerRejected as error:
            if error.code != INVALID_PARAMS:
                audit.add(
                    "SW-GET-004",
                    f"skills/get of {what} got error {error.code}, not {INVALID_PARAMS}",
                    uri=uri,
                )
            continue
        audit.add("SW-GET-004", f"skills/get answered for {what}, which names no skill", uri=uri)


async def instructions(audit: Audit) -> None:
    text = (audit.client.instructions or "")[:MAX_INSTRUCTIONS]
    uris = list(dict.fromkeys(_INSTRUCTION_URI_RE.findall(text)))[:MAX_PROBES]
    modern = audit.client.modern
    for uri in uris:
        try:
            raw = await audit.call(
                partial(audit.client.get_skill_raw, uri),
                what="skills/get of a skill URI in the instructions",
                rejected=None,
            )
        except ServerRejected as error:
            audit.add(
                "SW-INSTR-001",
                f"the instructions name a skill URI that skills/get does not confirm: "
                f"{error.message}",
                uri=uri,
            )
            continue
        if raw is None:
            continue
        refused = [
            v for v in get_violations(raw, uri, modern=modern, limits=audit.limits) if v.refused
        ]
        if refused:
            audit.add(
                "SW-INSTR-001",
                f"the instructions name a skill URI whose skills/get entry a host "
                f"refuses ({refused[0].rule})",
                uri=uri,
            )


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
