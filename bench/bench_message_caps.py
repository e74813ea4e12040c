"""Counting a message's JSON values before it is parsed (the message caps, T43), on a
line of ordinary values and on hostile ones of the same size.

The count runs on the event loop, as each line arrives: it must stay linear whatever the
line holds. Each hostile line is timed against an ordinary line of as many bytes in the
same process; goal: within 5x. The worst line before this bench (a string that never
closes, holding escaped quotes) took 3.3 s for 16,000 of them, and grew with their square.

Run: .venv/bin/python bench/bench_message_caps.py
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, report
from skillward.core.config import Limits
from skillward.edge._transport import _nodes

ROOM = Limits().max_message_nodes
SIZE = 8 * 1024 * 1024
GOAL = 5.0


def line(prefix: bytes, unit: bytes) -> bytes:
    """``prefix`` (values enough to need the exact count), then ``unit`` to ``SIZE``."""
    return (prefix + unit * (SIZE // len(unit) + 1))[:SIZE]


VALUES = b"[" + b"0," * (ROOM + 1)
ORDINARY = line(VALUES, b'{"a":"text, [with] {brackets}"},')
HOSTILE = {
    "a string that never closes, of escaped quotes": line(VALUES + b'"', b'\\"'),
    "escaped backslashes before quotes": line(VALUES + b'"', b'\\\\\\"'),
    "empty strings": line(VALUES, b'""'),
    "one unclosed quote after many strings": line(VALUES, b'"x",') + b'"',
}


def main() -> None:
    baseline = best_of(partial(_nodes, ORDINARY, ROOM))
    for name, data in HOSTILE.items():
        report(
            f"count of {name} ({len(data) >> 20} MiB)",
            best_of(partial(_nodes, data, ROOM)),
            "an ordinary line of as many bytes",
            baseline,
            goal=GOAL,
        )


if __name__ == "__main__":
    main()
