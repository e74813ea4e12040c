"""Tiny timing helpers shared by the benchmarks: best-of-N wall time, and ratios."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], *, repeat: int = 5) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def report(name: str, measured: float, baseline_name: str, baseline: float) -> None:
    print(
        f"{name}: {measured * 1000:.1f} ms; {baseline_name}: {baseline * 1000:.1f} ms; "
        f"ratio {measured / baseline:.1f}x"
    )
