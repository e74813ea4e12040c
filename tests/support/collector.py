"""Counting the garbage collector's collections, and raw listing entries to make them."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.listings import DIGEST


@contextmanager
def collections() -> Iterator[list[int]]:
    """The generation of each collection that starts inside the block."""
    started: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield started
    finally:
        gc.callbacks.remove(record)


def raw_entry(index: int) -> dict[str, Any]:
    """A listing entry as a server sends it: a skill of two files."""
    root = f"skill://acme/team-{index % 20}/skill-{index}"
    return {
        "uri": f"{root}/SKILL.md",
        "frontmatter": {"name": f"skill-{index}", "description": f"Skill {index}."},
        "resources": [
            {"uri": f"{root}/SKILL.md", "digest": DIGEST, "size": 10},
            {"uri": f"{root}/notes.md", "digest": DIGEST, "size": 10},
        ],
    }
