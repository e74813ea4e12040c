"""The audit trail: one structured event for every decision about a skill.

Every approval, denial, revocation, grant, gate decision, verification failure and
policy denial becomes one :class:`AuditEvent`:

* a ``logging`` record on the ``skillward.audit`` logger (level INFO), whose
  ``audit`` attribute is the event and whose message is its one-line summary;
* optionally, one JSON line appended to a file (the command line uses
  ``audit.jsonl`` in the user state directory).

An event has fixed fields: when, what kind, the decision, the host label, the
server's transport identity, the skill URI, the hash of the skill's digest set
(:func:`skillward.trust.approvals.content_hash`) and skillward's own reason. It never
holds skill content: no description, body, file bytes or frontmatter values.

The file is a record for people, not a defence: anything that can write files as
the user can change it. It is opened without following symlinks, appended one
line per write, and rotated at ``Limits.max_audit_bytes`` (the previous file is
kept as ``audit.jsonl.1``). Writers, in threads or processes, take the file's
lock before they rotate or append (waiting a moment at most): so several rotating
at once rotate once, and no event is lost. A file that cannot be written never stops
a host: it is reported once, and the logging record is still made.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from skillward.core.config import Limits
from skillward.core.errors import UsageError, printable
from skillward.edge._tree import CLOEXEC, NOFOLLOW, NONBLOCK, read_regular_file

if sys.platform != "win32":
    import fcntl

__all__ = [
    "AuditEvent",
    "AuditLog",
    "AuditTrail",
    "EventKind",
    "GateKind",
    "Outcome",
    "as_client",
    "parse_duration",
    "read_events",
]

logger = logging.getLogger("skillward.audit")

EventKind = Literal[
    "approval",
    "denial",
    "revocation",
    "grant",
    "gate",
    "verification_failure",
    "policy_denial",
]
Outcome = Literal["approved", "denied", "revoked", "granted", "allowed", "failed"]
#: What a gate or grant event is about.
GateKind = Literal["activation", "allowed_tools", "execution", "cross_origin"]

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | NONBLOCK | CLOEXEC
# Seconds a writer waits for another to release the file's lock, polling; then it
# appends without rotating (a file someone holds locked must not hang a host).
_LOCK_WAIT = 1.0
_LOCK_POLL = 0.001
# Files a writer opens again when others rotated the one it had, before it writes anyway.
_REOPENS = 8
# Free-text fields are bounded: they hold labels, URIs and skillward's words only.
_TEXT_LIMIT = 2048


class AuditEvent(BaseModel):
    """One decision, as recorded. Every field is always present (``None`` when unknown)."""

    # Built on first use, not at import (see skillward.core.wire.WireModel).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)

    #: Seconds since the epoch.
    time: float
    event: EventKind
    decision: Outcome
    #: The host label of the server (or local skill directory) involved.
    label: str | None = None
    #: How that server is reached (``ServerSpec.identity``): its URL or command line.
    identity: str | None = None
    #: The skill's URI (its ``SKILL.md``), or a local skill's path.
    skill_uri: str | None = None
    #: ``content_hash`` of the skill's entry: the hash of its digest set and frontmatter.
    content_hash: str | None = None
    #: skillward's words: why, never the skill's.
    reason: str = ""
    #: For gate, grant and policy events: which gate.
    gate: GateKind | None = None
    #: The host tool asked about (execution gate).
    tool: str | None = None
    #: The server a cross-origin read was aimed at.
    target: str | None = None
    #: The resource read, or the file that failed verification.
    resource_uri: str | None = None
    #: How long an approval lasts (``once``, ``session``, ``remember``).
    scope: str | None = None
    #: The MCP client a gateway decided for, as it names itself: unverified.
    client_unverified: str | None = None
    #: Where a person's answer came from when it was not the prompt of the process that
    #: decided: ``socket pid=PID uid=UID`` (``skillward approve`` through a running
    #: gateway's approval socket, as the kernel names the answering process), ``web``
    #: (a host's web approver). None: asked where it was decided.
    via: str | None = None

    def summary(self) -> str:
        """One escaped line for logs and terminals."""
        parts: list[str] = [self.event, self.decision]
        if self.gate:
            parts.append(self.gate)
        if self.label:
            parts.append(self.label)
        if self.skill_uri:
            parts.append(self.skill_uri)
        if self.tool:
            parts.append(f"tool={self.tool}")
        if self.target:
            parts.append(f"target={self.target}")
        if self.client_unverified is not None:
            parts.append(f"client={self.client_unverified!r} (unverified)")
        if self.via is not None:
            parts.append(f"via={self.via}")
        line = " ".join(parts)
        if self.reason:
            line += f": {self.reason}"
        return printable(line, limit=_TEXT_LIMIT)


def _clean(value: str | None) -> str | None:
    return None if value is None else printable(value, limit=_TEXT_LIMIT)


# The client whose request is being decided (a gateway serves several over one trail).
_CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "skillward_audit_client", default=None
)


@contextlib.contextmanager
def as_client(name: str | None) -> Iterator[None]:
    """Record the events made inside it as decided for the client ``name`` (as the
    client names itself: unverified; ``""`` when it gave no name)."""
    token = _CLIENT.set(name if name is not None else "")
    try:
        yield
    finally:
        _CLIENT.reset(token)


class AuditTrail:
    """Records audit events: always to the ``skillward.audit`` logger, and to ``path``
    as JSON lines when one is given."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        limits: Limits | None = None,
    ) -> None:
        self.path = path
        self.clock = clock
        self.max_bytes = (limits or Limits()).max_audit_bytes
        self._lock = threading.Lock()
        self._failed: str | None = None

    def record(
        self,
        event: EventKind,
        decision: Outcome,
        *,
        reason: str,
        label: str | None = None,
        identity: str | None = None,
        skill_uri: str | None = None,
        content_hash: str | None = None,
        gate: GateKind | None = None,
        tool: str | None = None,
        target: str | None = None,
        resource_uri: str | None = None,
        scope: str | None = None,
        via: str | None = None,
    ) -> AuditEvent:
        """Record one decision, and return the event."""
        entry = AuditEvent(
            time=self.clock(),
            event=event,
            decision=decision,
            label=_clean(label),
            identity=_clean(identity),
            skill_uri=_clean(skill_uri),
            content_hash=_clean(content_hash),
            reason=printable(reason, limit=_TEXT_LIMIT),
            gate=gate,
            tool=_clean(tool),
            target=_clean(target),
            resource_uri=_clean(resource_uri),
            scope=scope,
            client_unverified=_clean(_CLIENT.get()),
            via=_clean(via),
        )
        logger.info("%s", entry.summary(), extra={"audit": entry})
        if self.path is not None:
            self._append(self.path, (entry.model_dump_json() + "\n").encode())
        return entry

    def _append(self, path: Path, line: bytes) -> None:
        with self._lock:
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._write(path, line)
            except OSError as error:
                reason = f"{path}: {error.strerror or error}"
                if self._failed != reason:
                    self._failed = reason
                    logging.getLogger("skillward").warning(
                        "the audit file cannot be written (%s); events still go to the "
                        "skillward.audit logger",
                        printable(reason, limit=500),
                    )

    def _write(self, path: Path, line: bytes) -> None:
        """Append ``line`` to the file at ``path``, rotating it first if it would pass
        the cap. Rotation and the write happen under the file's lock, and only if it is
        still the file at ``path``; one another writer rotated away is opened again. So
        a rotation never moves or replaces a file another writer is about to write."""
        for attempt in range(_REOPENS + 1):
            fd = _open_for_append(path)
            try:
                locked = _lock(fd)
                if locked and attempt < _REOPENS:
                    if not _is_current(fd, path):
                        continue  # rotated while we waited: write to the new file
                    size = os.fstat(fd).st_size
                    if size and size + len(line) > self.max_bytes:
                        os.replace(path, rotated(path))
                        continue
                # One write per line: with O_APPEND, concurrent hosts never interleave.
                os.write(fd, line)
                return
            finally:
                os.close(fd)  # releases the lock


def _lock(fd: int) -> bool:
    """Take the file's lock (held until ``fd`` is closed), waiting ``_LOCK_WAIT`` at most
    for another writer; False if it stays busy. Windows has no such lock: writers there
    rotate without it."""
    if sys.platform == "win32":
        return True
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_POLL)
        else:
            return True


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (no writer rotated it away)."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    ours = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)


def _open_for_append(path: Path) -> int:
    fd = os.open(path, _OPEN_FLAGS, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def rotated(path: Path) -> Path:
    """Where the previous audit file is kept."""
    return path.with_name(path.name + ".1")


@dataclass(frozen=True, slots=True)
class AuditLog:
    """Events read back from an audit file, oldest first."""

    events: tuple[AuditEvent, ...]
    #: Lines that were not events (a torn write, or a file changed by hand).
    skipped: int = 0


def _lines(path: Path, limit: int) -> Iterator[bytes]:
    for source in (rotated(path), path):
        try:
            data = read_regular_file(source, limit, cut=True)
        except FileNotFoundError:
            continue
        yield from data.split(b"\n")


def read_events(
    path: Path, *, since: float | None = None, limits: Limits | None = None
) -> AuditLog:
    """The events in ``path`` (and its rotated predecessor), at or after ``since``.

    Each line is parsed as an :class:`AuditEvent`; anything else is counted in
    ``skipped``, never shown as an event.
    """
    # A file may pass the rotation size by one line before it rotates.
    limit = (limits or Limits()).max_audit_bytes + 64 * 1024
    events: list[AuditEvent] = []
    skipped = 0
    for line in _lines(path, limit):
        if not line.strip():
            continue
        try:
            event = AuditEvent.model_validate_json(line)
        except ValidationError:
            skipped += 1
            continue
        if since is None or event.time >= since:
            events.append(event)
    return AuditLog(tuple(events), skipped)


_DURATION = re.compile(r"(\d{1,9})([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``30m``, ``12h``, ``7d`` or ``1h30m``."""
    stripped = text.strip()
    pos = 0
    total = 0
    for match in _DURATION.finditer(stripped):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not stripped or pos != len(stripped) or total <= 0:
        raise UsageError(
            f"expected a duration such as 30m, 12h, 7d or 1h30m, not {printable(text, limit=80)!r}"
        )
    return float(total)
