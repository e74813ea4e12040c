"""Building a file block from 16 MiB of hostile or ordinary content.

For each input: the time to build the block (neutralising included), with the ratio to
hashlib.sha256 over the same bytes (the cost of verifying them) for scale; and the size
of the block's content against the input's. Goals: under 1 s, and at most 1.5x the size.

Run: .venv/bin/python bench/bench_neutralise.py
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_of, report_bound
from skillward.core.context import file_block
from skillward.core.origins import Origin

SIZE = 16 * 1024 * 1024
ORIGIN = Origin("mcp", "bench")


def repeat(piece: str | bytes) -> bytes:
    unit = piece.encode() if isinstance(piece, str) else piece
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


def utf8_prefix(data: bytes) -> bytes:
    """``data`` cut back to whole UTF-8 characters."""
    return data[: len(data.decode("utf-8", "ignore").encode())]


INPUTS = {
    "ordinary ASCII text": repeat("A line of text, with <b>markup</b> & more.\n"),
    "ordinary Unicode text": repeat("Grüße — “quotes”, 文字, emoji 😀\ufe0f and text.\n"),
    "random bytes (binary)": os.urandom(SIZE),
    "control characters only": repeat(b"\x01"),
    "one control per 32 bytes": repeat(b"\x01" + b"a" * 31),
    "zero-width spaces only": repeat("\u200b"),
    "a zero-width space per 32 bytes": repeat("\u200b" + "a" * 29),
    "a tag character per 32 bytes": repeat("\U000e0041" + "a" * 28),
    "selector runs": repeat("x\ufe0f\ufe0f" + "a" * 57),
    "marker look-alikes only": repeat("< skillward"),
    "a marker look-alike per 32 bytes": repeat("<skillward" + "a" * 22),
}


def main() -> None:
    print(f"file_block of {SIZE // (1024 * 1024)} MiB, best of 3")
    for name, raw in INPUTS.items():
        data = utf8_prefix(raw)
        block = file_block(origin=ORIGIN, uri="skill://b/f", digest=None, data=data, verified=False)
        took = best_of(
            partial(
                file_block, origin=ORIGIN, uri="skill://b/f", digest=None, data=data, verified=False
            ),
            repeat=3,
        )
        hashing = best_of(partial(hashlib.sha256, data), repeat=3)
        shown = f"{block.encoding}, {took / hashing:.1f}x sha256"
        report_bound(f"{name} ({shown}): time", took * 1000, "ms", goal=1000)
        growth = len(block.content.encode("utf-8", "surrogatepass")) / len(data)
        report_bound(f"{name}: content size", growth, "x the input", goal=1.5)


if __name__ == "__main__":
    main()
