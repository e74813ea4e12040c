"""Building the model's catalog from 10,000 listed skills across three origins.

Prints the time of SkillHost-style catalog assembly (display references,
collisions) against a plain list of (name, description) pairs of the same
records (goal: at most 10x), and the scaling from 1,000 to 10,000 skills
(goal: at most 12x, that is about linear). And what one load asks of the registry (its
reference resolved, the skills that enclose it, the collisions naming it) at 10,000
skills against 1,000 (goal: at most 2x, that is flat).

Run: .venv/bin/python bench/bench_catalog.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, report, report_bound
from skillward.core.origins import Origin
from skillward.core.registry import Registry, SkillRecord
from skillward.core.wire import parse_entry

DIGEST = "sha256:" + "a" * 64


def registry(count: int) -> Registry:
    reg = Registry()
    for index, label in enumerate(("acme", "docs", "tools")):
        origin = Origin("mcp", label)
        records = []
        for i in range(index, count, 3):
            uri = f"skill://team{i % 40}/skill-{i % (count // 2)}/SKILL.md"
            entry = parse_entry(
                {
                    "uri": uri,
                    "frontmatter": {"name": f"skill-{i % (count // 2)}", "description": "d"},
                    "resources": [{"uri": uri, "digest": DIGEST, "size": 1}],
                }
            )
            records.append(SkillRecord.from_entry(origin, entry))
        reg.set_origin(origin, records)
    return reg


def catalog(reg: Registry) -> int:
    refs = [reg.display_ref(record) for record in reg.records()]
    return len(refs) + len(reg.collisions())


def main() -> None:
    small, large = registry(1_000), registry(10_000)
    baseline = best_of(lambda: [(r.name, r.description) for r in large.records()])
    measured = best_of(lambda: catalog(large))
    print("catalog of 10,000 skills in three origins, half the names shared")
    report(
        "display refs + collisions",
        measured,
        "plain (name, description) list",
        baseline,
        goal=10,
    )
    scaling = measured / best_of(lambda: catalog(small))
    report_bound("1,000 -> 10,000 skills (10x is linear)", scaling, "x the time", goal=12)
    # What each load asks of the registry: its reference resolved, and the skills that
    # enclose it and the collisions naming it (for the approver). Each should cost the
    # same at any catalog size.
    per_load = {reg: per_load_of(reg) for reg in (small, large)}
    print(
        "what one load asks of the registry (a name resolved, the skills enclosing it, the "
        "collisions naming it): "
        f"{per_load[large] * 1e6:.1f} us at 10,000 skills, {per_load[small] * 1e6:.1f} us "
        "at 1,000"
    )
    ratio = per_load[large] / per_load[small]
    report_bound("one load, 1,000 -> 10,000 skills (1x is flat)", ratio, "x the time", goal=2)


def per_load_of(reg: Registry) -> float:
    """Seconds per load for 200 of ``reg``'s skills, each resolved by its qualified
    reference, and the skills enclosing it and the collisions naming it asked for (the
    indexes built before timing)."""
    records = reg.records()[:: max(1, len(reg.records()) // 200)][:200]
    refs = [(reg.qualified_ref(record), record) for record in records]
    reg.enclosing(records[0])
    reg.collisions_naming()

    def loads() -> None:
        for ref, record in refs:
            reg.resolve(ref)
            reg.enclosing(record)
            reg.collisions_naming(ref, record.origin.label)

    return best_of(loads) / len(refs)


if __name__ == "__main__":
    main()
