"""Reading a large policy file: finding the line of every list entry must stay linear.

For deny lists of 1,000 and 16,000 entries (the larger near the 1 MiB cap), one entry a
line and all on one line: the time to read the text (``parse_policy``: TOML, checks and
the line of each entry), against checking the same data without its text
(``parse_policy_data``: no lines found), in the same process. The ratio must not grow
with the list: goal at most 2x at either size.

Run: .venv/bin/python bench/bench_policy_parse.py
"""

from __future__ import annotations

import functools
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, report
from skillward.trust._policyfile import parse_policy, parse_policy_data


def policy_text(entries: int, *, one_line: bool) -> str:
    names = [f'"npx -y @corp/server-{i}"' for i in range(entries)]
    listed = ", ".join(names) if one_line else "\n  " + ",\n  ".join(names) + ",\n"
    return f"version = 1\n[servers]\ndeny = [{listed}]\n"


def without_lines(text: str) -> None:
    parse_policy_data(tomllib.loads(text), "policy.toml")


def main() -> None:
    print("parse_policy against parse_policy_data on the same list, best of 3")
    for entries in (1_000, 16_000):
        for one_line in (False, True):
            text = policy_text(entries, one_line=one_line)
            measured = best_of(functools.partial(parse_policy, text, "policy.toml"), repeat=3)
            baseline = best_of(functools.partial(without_lines, text), repeat=3)
            layout = "on one line" if one_line else "one a line"
            report(
                f"{entries} deny entries {layout} ({len(text) // 1024} KiB)",
                measured,
                "without finding lines",
                baseline,
                goal=2.0,
            )


if __name__ == "__main__":
    main()
