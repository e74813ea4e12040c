"""``skillward serve`` that serves only once every one of a group of servers has started:
each marks its start in a directory, then waits (30 s at most) until the group's count
of marks is there. Servers connected one after another never all start: the first waits
for the others until the client's deadline.

Run as ``python barrier_server.py MARKS COUNT SKILLS_DIR``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve()


def argv(marks: Path, count: int, skills: Path) -> list[str]:
    return [sys.executable, str(SCRIPT), str(marks), str(count), str(skills)]


def main() -> int:
    marks, count, skills = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    (marks / str(os.getpid())).touch()
    deadline = time.monotonic() + 30
    while len(os.listdir(marks)) < count and time.monotonic() < deadline:
        time.sleep(0.01)  # a server's own start-up, not a test waiting
    from skillward.cli import main as skillward  # noqa: PLC0415

    return skillward(["serve", skills])


if __name__ == "__main__":
    sys.exit(main())
