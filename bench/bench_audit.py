"""What one audit event costs, tamper-evident, against the plain line written before.

Prints the cost of an event over 10,000 events recorded to a trail file: chained (the
hash of the line before, a checkpoint every ``Limits.audit_checkpoint_events`` events
and at close, authenticated with the file key store's key and counter in real 0600
files, fsynced as that store writes them) against the plain writer this replaced (the
same event, one JSON line under the same lock; kept here as the baseline), run in
alternation in the same process. Goal: within 1.5x. Also printed, for reference: the
same with the key in memory (the OS keyring costs a D-Bus round trip a checkpoint), and
verifying the 10,000 events. And two writers of one file taking turns (a host and a
gateway of one user), where each event follows the other writer's, chained against plain
lines (goal: within 1.5x too).

Run: .venv/bin/python bench/bench_audit.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import MemoryKeys, report, report_bound
from skillward.trust._keyfile import FileKeyring
from skillward.trust.audit import AuditTrail, _is_current, _lock, _open_for_append, verify_trail

EVENTS = 10_000
GOAL = 1.5
REPEAT = 3


class PlainTrail(AuditTrail):
    """The writer before the chain: the same event, one plain JSON line per write."""

    def _write(self, path: Path, body: bytes | None) -> None:
        if body is None:
            return
        line = body + b"\n"
        for _ in range(9):
            fd = _open_for_append(path)
            try:
                if _lock(fd):
                    info = os.fstat(fd)
                    if not _is_current(info, path):
                        continue
                    size = info.st_size
                    if size and size + len(line) > self.max_bytes:
                        os.replace(path, path.with_name(path.name + ".1"))
                        continue
                os.write(fd, line)
                return
            finally:
                os.close(fd)


def record_all(trail: AuditTrail) -> None:
    for n in range(EVENTS):
        trail.record(
            "approval",
            "approved",
            reason="approved when asked",
            label="acme",
            identity="http:https://skills.acme.example/mcp",
            skill_uri=f"skill://acme/billing/skill-{n}/SKILL.md",
            content_hash="sha256:" + "ab" * 32,
            gate="activation",
            scope="session",
        )
    trail.close()


def record_in_turns(first: AuditTrail, second: AuditTrail) -> None:
    """The events shared between two writers of one file, each event following the other
    writer's (a host and a gateway of one user): each writer reads the line before."""
    for n in range(EVENTS):
        (first if n % 2 else second).record(
            "approval",
            "approved",
            reason="approved when asked",
            label="acme",
            skill_uri=f"skill://acme/billing/skill-{n}/SKILL.md",
            content_hash="sha256:" + "ab" * 32,
            gate="activation",
        )
    first.close()
    second.close()


def timed_in_turns(make: object, directory: Path, name: str) -> float:
    """Seconds for 10,000 events written in turns by two trails ``make(path)`` made."""
    path = directory / f"{name}-turns-{time.perf_counter_ns()}" / "audit.jsonl"
    first, second = make(path), make(path)  # type: ignore[operator]
    started = time.perf_counter()
    record_in_turns(first, second)
    return time.perf_counter() - started


def timed(make: object, directory: Path, name: str) -> float:
    """Seconds for 10,000 events to a fresh trail made by ``make(path)``."""
    path = directory / f"{name}-{time.perf_counter_ns()}" / "audit.jsonl"
    trail = make(path)  # type: ignore[operator]
    started = time.perf_counter()
    record_all(trail)
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        keys_dir = root / "keys"

        def chained_file(path: Path) -> AuditTrail:
            workspace = root / "workspace"
            keys = FileKeyring(
                str(path), keys_dir, discovery=(), workspace=workspace, prefix="audit"
            )
            return AuditTrail(path, keys=keys)

        def chained_memory(path: Path) -> AuditTrail:
            return AuditTrail(path, keys=MemoryKeys())

        def plain(path: Path) -> AuditTrail:
            return PlainTrail(path, keys=MemoryKeys())

        best = {"file": float("inf"), "memory": float("inf"), "plain": float("inf")}
        makers = {"file": chained_file, "memory": chained_memory, "plain": plain}
        timed(plain, root, "warm")
        for _ in range(REPEAT):  # in alternation: load on a shared machine falls on all alike
            for name, make in makers.items():
                best[name] = min(best[name], timed(make, root, name))
        per = {name: seconds / EVENTS * 1e6 for name, seconds in best.items()}
        print(f"one audit event, over {EVENTS:,} events to a trail file")
        print(
            f"  chained, file key store: {per['file']:.1f} us; in-memory key: "
            f"{per['memory']:.1f} us; plain line: {per['plain']:.1f} us"
        )
        report(
            f"{EVENTS:,} events, chained with the file key store",
            best["file"],
            "plain lines",
            best["plain"],
            goal=GOAL,
        )
        report(
            f"{EVENTS:,} events, chained with the key in memory",
            best["memory"],
            "plain lines",
            best["plain"],
            goal=GOAL,
        )
        turns = {"memory": float("inf"), "plain": float("inf")}
        for _ in range(REPEAT):
            for name, so_far in list(turns.items()):
                turns[name] = min(so_far, timed_in_turns(makers[name], root, name))
        report(
            f"{EVENTS:,} events, two writers in turns, chained (key in memory)",
            turns["memory"],
            "plain lines in turns",
            turns["plain"],
            goal=GOAL,
        )
        path = root / "verify" / "audit.jsonl"
        keys = MemoryKeys()
        record_all(AuditTrail(path, keys=keys))
        started = time.perf_counter()
        verdict = verify_trail(path, keys=keys)
        seconds = time.perf_counter() - started
        assert verdict.intact, verdict.broken
        report_bound(f"verifying {EVENTS:,} events", seconds * 1000, "ms", goal=1000)


if __name__ == "__main__":
    main()
