"""Processes that write one approval store at once, for the store's multi-process tests.

Imports happen once here; the writers are forked from this process, so starting
hundreds of them costs milliseconds, not an interpreter start each::

    python -m tests.support.store_worker concurrent DIR PROCESSES APPROVALS [keyring]
    python -m tests.support.store_worker churn DIR

``concurrent`` forks PROCESSES writers that each remember APPROVALS different
skills, reading each back through a second store of their own, waits for them,
and prints their exit statuses. With ``keyring`` the stores keep their key and
counter in the OS keyring (``keyring.get_keyring()``, as the command line does),
not in a file. ``churn`` reads one line per round from stdin (a number K), forks a
writer that remembers skills without end, lets it start K writes, kills it with
SIGKILL, and prints ``killed N``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from skillward.trust._store import FileApprovalStore
from skillward.trust.approvals import ApprovalRecord, Scope, record_for
from tests.support.approvals import make_entry
from tests.support.keys import FileKeys


def store(directory: Path, *, keyring: bool = False) -> FileApprovalStore:
    path = directory / "approvals.json"
    if keyring:
        return FileApprovalStore(path)
    return FileApprovalStore(path, keys=FileKeys(directory / "keys.json"))


def remember(target: FileApprovalStore, label: str, index: int) -> ApprovalRecord:
    entry = make_entry(
        {"notes.md": f"{label} {index}\n".encode()}, root=f"skill://{label}/s{index}"
    )
    record = record_for(
        entry, label=label, identity="http:x", scope=Scope.REMEMBER, granted_at=float(index)
    )
    target.put(record)
    return record


def writer(directory: Path, label: str, count: int | None, progress: int | None) -> None:
    """Remember ``count`` skills (forever when None), announcing each write on ``progress``."""
    target = store(directory)
    index = 0
    while count is None or index < count:
        if progress is not None:
            os.write(progress, b".")
        remember(target, label, index)
        index += 1


def checked_writer(directory: Path, label: str, count: int, *, keyring: bool) -> None:
    """Remember ``count`` skills, each read back by another store as another process would."""
    target = store(directory, keyring=keyring)
    reader = store(directory, keyring=keyring)
    for index in range(count):
        record = remember(target, label, index)
        if reader.get(record.key) != record:
            raise AssertionError(f"{label} {index}: not read back")
    problems = target.problems + reader.problems
    if problems:
        raise AssertionError(f"{label}: {problems}")


def concurrent(directory: Path, processes: int, approvals: int, *, keyring: bool) -> None:
    children = []
    for number in range(processes):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                checked_writer(directory, f"w{number}", approvals, keyring=keyring)
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
        keyring = sys.argv[5:] == ["keyring"]
        concurrent(directory, int(sys.argv[3]), int(sys.argv[4]), keyring=keyring)
    else:
        churn(directory)


if __name__ == "__main__":
    main()
