"""Shared helpers for the benchmarks: best-of-N timing, and one line per result.

Every result line ends with its goal and whether it holds, so a reader sees at a glance
which goals hold::

    verified cold load: 812 ms; bare mcp.Client: 760 ms; ratio 1.07x (goal <= 1.15x: holds)

Importing this module makes the bench a user of its own: HOME and the XDG directories
point into a temporary directory, removed at exit, so that a bench never writes the
real user's server logs, audit trail, cache or approvals (nor reads their policy). It also
compiles skillward's modules to bytecode, as installing a wheel leaves them: a process a
bench starts (a server, the gateway, a command) then pays for no compiling, though
``PYTHONDONTWRITEBYTECODE`` is set (about a tenth of a second a start otherwise).
"""

from __future__ import annotations

import atexit
import compileall
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable


def _private_home() -> None:
    home = tempfile.mkdtemp(prefix="skillward-bench-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    runtime = os.path.join(home, "run")
    os.mkdir(runtime, 0o700)
    os.environ.update(
        {
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, "config"),
            "XDG_DATA_HOME": os.path.join(home, "data"),
            "XDG_STATE_HOME": os.path.join(home, "state"),
            "XDG_CACHE_HOME": os.path.join(home, "cache"),
            "XDG_RUNTIME_DIR": runtime,
        }
    )


def _compiled() -> None:
    import skillward  # noqa: PLC0415  (after the home: nothing here reads it)

    compileall.compile_dir(os.path.dirname(skillward.__file__), quiet=1)


_private_home()
_compiled()


class MemoryKeys:
    """A key provider (``trust/_store.KeyProvider``) in memory: a bench measures the store
    or the trail, not the keyring's D-Bus round trips (paid once per process)."""

    description = "keys in memory"

    def __init__(self) -> None:
        self.secret = os.urandom(32)
        self.stored: str | None = None

    def unavailable(self) -> str | None:
        return None

    def key(self, *, create: bool, fresh: bool = False) -> bytes | None:
        return self.secret

    def rotate(self) -> bytes:
        return self.secret

    def counter(self) -> str | None:
        return self.stored

    def set_counter(self, value: str) -> None:
        self.stored = value


def best_of(fn: Callable[[], object], *, repeat: int = 5) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


async def best_of_async(fn: Callable[[], Awaitable[object]], *, repeat: int = 5) -> float:
    """The fastest of ``repeat`` runs of the coroutine function ``fn``, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        await fn()
        best = min(best, time.perf_counter() - started)
    return best


async def side_by_side(
    measured: Callable[[], Awaitable[object]],
    baseline: Callable[[], Awaitable[object]],
    *,
    repeat: int = 3,
) -> tuple[float, float]:
    """Best times of ``measured`` and ``baseline``, run in alternation so that load on a
    shared machine falls on both alike."""
    best = await alternating(measured, baseline, repeat=repeat)
    return best[0], best[1]


async def alternating(*fns: Callable[[], Awaitable[object]], repeat: int = 3) -> list[float]:
    """Best times of each of ``fns``, run in turn ``repeat`` times over."""
    return [min(times) for times in await in_rounds(*fns, repeat=repeat)]


async def in_rounds(*fns: Callable[[], Awaitable[object]], repeat: int = 3) -> list[list[float]]:
    """Every run's seconds of each of ``fns``, run in turn ``repeat`` times over, the order
    rotated each round: what a run leaves behind (dirty pages being written back, a warm
    cache) falls on each of the others alike, not always on the one after it."""
    times: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for round_ in range(repeat):
        shift = round_ % len(fns)
        for index in order[shift:] + order[:shift]:
            started = time.perf_counter()
            await fns[index]()
            times[index].append(time.perf_counter() - started)
    return times


def _verdict(value: float, goal: float | None, unit: str) -> str:
    if goal is None:
        return "(no goal set)"
    holds = "holds" if value <= goal else "MISSED"
    return f"(goal <= {goal:g}{unit}: {holds})"


def report(
    name: str, measured: float, baseline_name: str, baseline: float, *, goal: float | None = None
) -> None:
    """A time against its baseline from the same process, as a ratio with its goal (every
    benchmark here gives one; a line without says so)."""
    ratio = measured / baseline
    print(
        f"{name}: {measured * 1000:.1f} ms; {baseline_name}: {baseline * 1000:.1f} ms; "
        f"ratio {ratio:.2f}x {_verdict(ratio, goal, 'x')}"
    )


def report_rounds(
    name: str,
    measured: list[float],
    baseline_name: str,
    baseline: list[float],
    *,
    goal: float | None = None,
) -> None:
    """Times taken in the same rounds (``in_rounds``), as the median of the per-round
    ratios with its goal: a ratio within a round is what drift between rounds spares."""
    ratio = statistics.median(m / b for m, b in zip(measured, baseline, strict=True))
    print(
        f"{name}: {statistics.median(measured) * 1000:.1f} ms; {baseline_name}: "
        f"{statistics.median(baseline) * 1000:.1f} ms; median per-round ratio {ratio:.2f}x "
        f"{_verdict(ratio, goal, 'x')}"
    )


def report_added(
    name: str,
    measured: float,
    baseline_name: str,
    baseline: float,
    *,
    goal_ms: float,
) -> None:
    """A time against its baseline, as a ratio, held to a goal of at most ``goal_ms`` more
    than the baseline (for start-up, where the baseline is a floor every run pays)."""
    added = (measured - baseline) * 1000
    print(
        f"{name}: {measured * 1000:.1f} ms; {baseline_name}: {baseline * 1000:.1f} ms; "
        f"ratio {measured / baseline:.2f}x; {added:+.1f} ms {_verdict(added, goal_ms, ' ms')}"
    )


def report_within(
    name: str, measured: float, baseline_name: str, baseline: float, *, goal_ms: float
) -> None:
    """A time against its baseline, as a ratio, held to an absolute goal in ms."""
    print(
        f"{name}: {measured * 1000:.1f} ms; {baseline_name}: {baseline * 1000:.1f} ms; "
        f"ratio {measured / baseline:.2f}x {_verdict(measured * 1000, goal_ms, ' ms')}"
    )


def report_bound(name: str, value: float, unit: str, *, goal: float) -> None:
    """A value held to an absolute goal (a time in ms, a size ratio, memory in MB)."""
    print(f"{name}: {value:.2f} {unit} {_verdict(value, goal, ' ' + unit)}")
