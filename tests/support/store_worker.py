"""Processes that write one approval store at once, for the store's multi-process tests.

Imports happen once here; the writers are forked from this process, so starting
hundreds of them costs milliseconds, not an interpreter start each::

    python -m tests.support.store_worker concurrent DIR PROCESSES APPROVALS
    python -m tests.support.store_worker churn DIR

``concurrent`` forks PROCESSES writers that each remember APPROVALS different
skills, waits for them, and prints their exit statuses. ``churn`` reads one line
per round from stdin (a number K), forks a writer that remembers skills without
end, lets it start K writes, kills it with SIGKILL, and prints ``killed N``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from skillward._store import FileApprovalStore
from skillward.approvals import Scope, record_for
from tests.support.approvals import make_entry
from tests.support.keys import FileKeys


def store(directory: Path) -> FileApprovalStore:
    return FileApprovalStore(directory / "approvals.json", keys=FileKeys(directory / "keys.json"))


def remember(target: FileApprovalStore, label: str, index: int) -> None:
    entry = make_entry(
        {"notes.md": f"{label} {index}\n".encode()}, root=f"skill://{label}/s{index}"
    )
    target.put(
        record_for(
            entry, label=label, identity="http:x", scope=Scope.REMEMBER, granted_at=float(index)
        )
    )


def writer(directory: Path, label: str, count: int | None, progress: int | None) -> None:
    """Remember ``count`` skills (forever when None), announcing each write on ``progress``."""
    target = store(directory)
    index = 0
    while count is None or index < count:
        if progress is not None:
            os.write(progress, b".")
        remember(target, label, index)
        index += 1


def concurrent(directory: Path, processes: int, approvals: int) -> None:
    children = []
    for number in range(processes):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                writer(directory, f"w{number}", approvals, None)
            except BaseException as exc:  # report, then exit without running the parent's code
                print(f"writer {number}: {exc!r}", file=sys.stderr, flush=True)
                code = 1
            os._exit(code)
        children.append(pid)
    statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    print(" ".join(map(str, statuses)), flush=True)


def churn(directory: Path) -> None:
    for number, line in enumerate(sys.stdin):
        writes = int(line)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            try:
                writer(directory, f"k{number}", None, write_end)
            finally:
                os._exit(1)
        os.close(write_end)
        seen = 0
        while seen < writes:
            chunk = os.read(read_end, 1)
            if not chunk:
                break
            seen += 1
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)
        print(f"killed {number}", flush=True)


def main() -> None:
    mode, directory = sys.argv[1], Path(sys.argv[2])
    if mode == "concurrent":
        concurrent(directory, int(sys.argv[3]), int(sys.argv[4]))
    else:
        churn(directory)


if __name__ == "__main__":
    main()
