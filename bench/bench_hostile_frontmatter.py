"""How fast hostile SKILL.md frontmatter is refused, against parsing a normal one.

Each hostile input (billion laughs, 2 MB blocks, 5,000-deep nesting, tags, ...)
must be refused with the typed error; this prints its time and the ratio to a
normal SKILL.md parsed in the same process. Goal: refusing any of them costs at
most 500 normal parses (about 40 ms).

Run: .venv/bin/python bench/bench_hostile_frontmatter.py
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from tests.support.hostile_yaml import HOSTILE, NORMAL

from _timing import best_of, report
from skillward.core.errors import FrontmatterError
from skillward.core.frontmatter import parse_skill_md


def refuse(data: bytes) -> None:
    try:
        parse_skill_md(data)
    except FrontmatterError:
        return
    raise AssertionError("hostile input was accepted")


def main() -> None:
    baseline = best_of(lambda: parse_skill_md(NORMAL), repeat=50)
    print(f"normal SKILL.md parsed in {baseline * 1e6:.0f} us")
    for name in sorted(HOSTILE):
        data, _ = HOSTILE[name]
        measured = best_of(partial(refuse, data))
        report(f"{name} refused", measured, "a normal parse", baseline, goal=500)


if __name__ == "__main__":
    main()
