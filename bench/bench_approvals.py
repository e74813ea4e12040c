"""Approval checks against a store of 10,000 remembered approvals.

Prints the time of an approval check (store lookup and the content-bound decision)
with 10,000 records against the same check with 10 (goal: under 1.5x, that is, a
lookup that does not grow with the store), and the time to load and verify the
store file (authentication code, counter, record index) against a plain
``json.loads`` of the same file.

Run: .venv/bin/python bench/bench_approvals.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import MemoryKeys, best_of, report
from skillward.core.origins import SkillKey
from skillward.core.wire import SkillEntry, parse_entry
from skillward.trust._store import FileApprovalStore, encode, record_line
from skillward.trust.approvals import Approved, Scope, assess, record_for

IDENTITY = "http:https://acme.example/mcp"
GOAL = 1.5
#: Not a goal of the issue: a guard that loading stays within a few json.loads of the file.
LOAD_GUARD = 3.0
CHECKS = 1000
GENERATION = 1


def entry(index: int) -> SkillEntry:
    uri = f"skill://team{index % 50}/skill-{index}/SKILL.md"
    notes = uri.replace("SKILL.md", "notes.md")
    return parse_entry(
        {
            "uri": uri,
            "frontmatter": {"name": f"skill-{index}", "description": "A skill"},
            "resources": [
                {"uri": uri, "digest": "sha256:" + f"{index:064x}", "size": 100},
                {"uri": notes, "digest": "sha256:" + "b" * 64, "size": 7},
            ],
        }
    )


def build(directory: Path, count: int, keys: MemoryKeys) -> tuple[Path, list[SkillEntry]]:
    """The store file of ``count`` approvals, vouched for by ``keys`` (one store's keys)."""
    path = directory / f"approvals-{count}.json"
    entries = [entry(i) for i in range(count)]
    lines = {}
    for item in entries:
        record = record_for(
            item, label="acme", identity=IDENTITY, scope=Scope.REMEMBER, granted_at=1.0
        )
        lines["acme", item.uri] = record_line(record)
    data = encode(lines, GENERATION, keys.secret)
    path.write_bytes(data)
    # The counter vouches for this copy: its generation and its code line, as a write sets it.
    keys.set_counter(f"{GENERATION} {data[:64].decode('ascii')}")
    return path, entries


def checks(store: FileApprovalStore, probes: list[SkillEntry]) -> None:
    for number in range(CHECKS):
        item = probes[number % len(probes)]
        verdict = assess(item, IDENTITY, store.get(SkillKey("acme", item.uri)))
        assert isinstance(verdict, Approved)


def main() -> None:
    keys, large_keys = MemoryKeys(), MemoryKeys()
    with tempfile.TemporaryDirectory() as scratch:
        small_path, small = build(Path(scratch), 10, keys)
        large_path, large = build(Path(scratch), 10_000, large_keys)
        small_store = FileApprovalStore(small_path, keys=keys)
        large_store = FileApprovalStore(large_path, keys=large_keys)
        probes_small, probes_large = small[:10], large[::1000]
        checks(small_store, probes_small)  # load once, as a host does on its first check
        checks(large_store, probes_large)
        baseline = best_of(lambda: checks(small_store, probes_small))
        measured = best_of(lambda: checks(large_store, probes_large))
        print(f"{CHECKS} approval checks (store lookup + content-bound decision)")
        report("with 10,000 records", measured, "with 10 records", baseline, goal=GOAL)

        body = large_path.read_bytes().partition(b"\n")[2]

        def load() -> None:
            fresh = FileApprovalStore(large_path, keys=large_keys)
            assert fresh.get(SkillKey("acme", large[0].uri)) is not None

        print(f"loading a store of 10,000 records ({len(body) / 1e6:.1f} MB)")
        report(
            "open, authenticate, index, read one",
            best_of(load),
            "plain json.loads",
            best_of(lambda: json.loads(body)),
            goal=LOAD_GUARD,
        )


if __name__ == "__main__":
    main()
