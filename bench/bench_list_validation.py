"""Validating a 10,000-entry skills/list result, against json.loads of the same bytes.

Goal (a guard against regressions): the listing bounds and every entry invariant for
at most 25 times the cost of decoding the JSON at all.

Run: .venv/bin/python bench/bench_list_validation.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, report
from skillward.core._fields import json_size
from skillward.core.config import Limits
from skillward.core.wire import parse_skills_page

ENTRIES = 10_000


def listing() -> bytes:
    skills = []
    for i in range(ENTRIES):
        root = f"skill://org{i % 50}/team{i % 7}/skill-{i}"
        files = ["SKILL.md", "references/GUIDE.md", "scripts/run.py"]
        skills.append(
            {
                "uri": f"{root}/SKILL.md",
                "frontmatter": {
                    "name": f"skill-{i}",
                    "description": f"Skill number {i}, for benchmarking the listing parser",
                    "metadata": {"version": "1.0"},
                },
                "resources": [
                    {
                        "uri": f"{root}/{name}",
                        "digest": "sha256:" + hashlib.sha256(f"{i}{name}".encode()).hexdigest(),
                        "size": 1000 + i,
                    }
                    for name in files
                ],
            }
        )
    result = {"skills": skills, "ttlMs": 60000, "cacheScope": "private", "resultType": "complete"}
    return json.dumps(result).encode()


def main() -> None:
    data = listing()
    baseline = best_of(lambda: json.loads(data))
    page = parse_skills_page(json.loads(data))
    assert len(page.entries) == ENTRIES
    assert not page.rejected
    limits = Limits(max_list_response_bytes=len(data) * 2)

    def validate() -> None:
        raw = json.loads(data)
        json_size(raw, limit=limits.max_list_response_bytes)
        parse_skills_page(raw, limits=limits)

    measured = best_of(validate)
    print(f"skills/list of {ENTRIES} entries, {len(data) / 1e6:.1f} MB")
    report(
        "json.loads + listing bounds + full validation",
        measured,
        "json.loads",
        baseline,
        goal=25,
    )


if __name__ == "__main__":
    main()
